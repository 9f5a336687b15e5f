/* fit_cache: a partition's storage totals by sysmap, kept between submits.
 *
 * The submit-time fit (placement_check_fit) sums sysmap's view of every node
 * of the job's partition: 50-100 ms for 10,000 nodes, under slurmctld's job
 * write lock, for each #BB_ADAFS submit. The totals are kept per partition
 * (its node list, as the text Slurm gives) and reused while
 *   - the database has not changed since (its data version, equal), or
 *   - they are younger than the cache's age bound (FIT_CACHE_MAX_AGE),
 * so a burst of submits pays for one sum, and a database the collectors
 * keep writing is summed again at most once per age bound per partition.
 * (Placement sums from its table of every node when that is current,
 * milliseconds, and keeps those totals by the age bound alone, from the
 * table's time.)
 * A partition whose nodes change has another node list: a new entry.
 * sysmap's own data is up to 15 minutes old (the collectors' timer); the
 * bound adds at most its seconds to that (doc/burst_buffer.conf.md).
 * Bounded: FIT_CACHE_ENTRIES partitions, the least recently used replaced.
 * Plain data, no locking (placement holds its lock around it), time and
 * version passed in so the unit tests need neither clock nor database. */
#ifndef ADAFS_FIT_CACHE_H
#define ADAFS_FIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FIT_CACHE_MAX_AGE 60   /* seconds */
#define FIT_CACHE_ENTRIES 64

struct fit_totals {
    size_t hosts;
    size_t hosts_with_storage;
    uint64_t total_bytes;
};

struct fit_cache_entry {
    char *hostlist;           /* NULL: free */
    struct fit_totals totals;
    int64_t version;          /* the database's data version they were summed at */
    int64_t summed_at;        /* monotonic seconds */
    uint64_t used;            /* the cache's use counter at the last hit */
};

struct fit_cache {
    struct fit_cache_entry entries[FIT_CACHE_ENTRIES];
    int64_t max_age;
    uint64_t uses;
    uint64_t hits, misses;    /* for the log and the benchmarks */
};

void fit_cache_init(struct fit_cache *c, int64_t max_age);
void fit_cache_clear(struct fit_cache *c);

/* true with the totals of hostlist if kept and still valid at now for a
 * database at version; false otherwise (the caller sums and puts). */
bool fit_cache_get(struct fit_cache *c, const char *hostlist, int64_t version, int64_t now,
                   struct fit_totals *totals);

/* Keeps totals of hostlist summed at now from a database at version. -1
 * (errno ENOMEM) if the node list cannot be copied: nothing kept, the next
 * submit sums again. */
int fit_cache_put(struct fit_cache *c, const char *hostlist, int64_t version, int64_t now,
                  const struct fit_totals *totals);

#endif
