/* placement: where each node's server keeps its data, from sysmap.
 *
 * With AdafsSysmapDB set, a node's storage is <best local file system>/adafs
 * (sysmap's deployment view: local, non-rotational, most available bytes,
 * writable) and its server runs on the NUMA node of that device; a request
 * larger than the partition's nodes can hold is refused at submit. Without
 * a database, or for a node sysmap does not know, the burst_buffer.conf
 * defaults apply and the log says so. Thread-safe (one handle, one mutex;
 * the placement table's refresher has a handle of its own). */
#ifndef ADAFS_PLACEMENT_H
#define ADAFS_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int placement_open(const char *db_path, char *err, size_t errlen);
void placement_close(void);
bool placement_enabled(void);

struct node_place {
    char storage[4096];       /* storage directory for the agent */
    int numa_node;            /* -1: unknown */
    uint64_t available;       /* bytes free there; 0: unknown */
    bool from_sysmap;
};

/* Fills place for node; falls back to default_storage (and says why in
 * why, if not NULL) when sysmap has nothing suitable. */
void placement_node(const char *node, const char *default_storage, struct node_place *place,
                    char *why, size_t whylen);

/* placement_node for n nodes: looked up in the placement table (every
 * node's place, read by a thread of placement's own every 30 s from a
 * handle of its own, outside slurmctld's locks; used while at most 60 s
 * old), the nodes it lacks in one sysmap query (a value the nodes share,
 * as a hardware profile's, is read once). A 4,096-node job's nodes took
 * 32-78 ms of queries under slurmctld's job lock. why: n strings of whylen
 * bytes (or NULL). */
void placement_nodes(const char *const *nodes, size_t n, const char *default_storage,
                     struct node_place *places, char *why, size_t whylen);

/* The placement table's hosts (0: none yet, or no refresher) and the
 * lookups it answered: for tests and benchmarks. */
void placement_table_stats(size_t *hosts, uint64_t *hits);

/* 0 if capacity bytes fit on the nodes of hostlist by sysmap's numbers (or
 * sysmap is off, knows none of them, or cannot answer: logged); -1 with the
 * reason in err. The partition's totals are kept between calls while the
 * database is unchanged, and at most FIT_CACHE_MAX_AGE seconds once it has
 * changed (fit_cache.h): a burst of submits sums the partition once; the
 * sum comes from the placement table while that is current (a few ms for
 * 10,000 nodes), else from sysmap (50-100 ms). */
int placement_check_fit(const char *hostlist, const char *partition, uint64_t capacity,
                        char *err, size_t errlen);

#endif
