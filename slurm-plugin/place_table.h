/* place_table: every node's storage by sysmap, read outside slurmctld's
 * locks, looked up when a job starts.
 *
 * Placing a 4,096-node job's servers asked sysmap for each node's view at
 * bb_p_job_begin, under slurmctld's job lock: 32-78 ms of SQLite. A table
 * of what placement needs of each view (storage path, NUMA node, bytes
 * free), built by placement's refresher thread from its own handle, turns
 * that into one hash lookup a node. Plain data, no locking (placement
 * swaps whole tables under its lock); names are hashed (FNV-1a) into an
 * open-addressed array kept at most half full. */
#ifndef ADAFS_PLACE_TABLE_H
#define ADAFS_PLACE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "sysmap.h"

struct place_entry {
    char *name;               /* NULL: a free slot */
    char *storage_path;       /* NULL: no suitable local storage */
    int storage_numa_node;
    uint64_t available_bytes;
};

struct place_table {
    struct place_entry *slots;
    size_t nslots, count;
    int64_t built_at;         /* monotonic seconds, set by whoever built it */
};

struct place_table *place_table_new(void);
void place_table_free(struct place_table *t);

/* Adds (or replaces) the view's host. -1 with errno ENOMEM. */
int place_table_put(struct place_table *t, const struct sysmap_deploy_view *v);

/* The entry of name, or NULL if the table does not have it. */
const struct place_entry *place_table_get(const struct place_table *t, const char *name);

#endif
