/* libsysmap: the resource database of the compute nodes.
 *
 * Each node's collector (sysmap) reports one JSON document per run:
 *   {"host": "n001", "time": 1700000000,
 *    "extractors": {"cpu": {...}, "storage": {...}, ...}}
 * The database keeps hosts, extractors and data values, each distinct value
 * stored once however many hosts report it, and links host+extractor to a
 * value for the interval [valid_from, valid_to) so both the current state and
 * the history of every host are known (valid_to NULL = current).
 *
 * The Slurm plugin links this library for two questions: where on a node a
 * burst buffer should live (sysmap_deploy_view) and how much the nodes of a
 * host list can hold together (sysmap_capacity). sysquery is a thin command
 * line over sysmap_query_json. Functions return 0 or a negative errno and
 * write a one-line message into err. A handle is used by one thread at a
 * time (opened without sqlite's mutexes): give each thread its own, or
 * serialise the calls. */
#ifndef ADAFS_SYSMAP_H
#define ADAFS_SYSMAP_H

#include <stddef.h>
#include <stdint.h>

struct sysmap_db;

#define SYSMAP_OPEN_READONLY 0
#define SYSMAP_OPEN_WRITE    1   /* creates the file and the schema if needed */

int sysmap_open(const char *path, int mode, struct sysmap_db **out,
                char *err, size_t errlen);
void sysmap_close(struct sysmap_db *db);

/* Stores one report (JSON text of len bytes) as seen at time now (seconds
 * since the epoch). expect_host non-NULL: the report must be for that host
 * (the identity the upload was authenticated as), else -EPERM. Malformed
 * reports give -EINVAL naming what is wrong. Values are stored as canonical
 * JSON text through bound parameters, never interpreted as SQL. */
int sysmap_store(struct sysmap_db *db, const char *json, size_t len, int64_t now,
                 const char *expect_host, char *err, size_t errlen);

/* Batches many sysmap_store calls into one transaction (bulk loads). */
int sysmap_begin(struct sysmap_db *db, char *err, size_t errlen);
int sysmap_commit(struct sysmap_db *db, char *err, size_t errlen);

struct sysmap_query {
    const char *hostlist;              /* Slurm expression; NULL = every host */
    const char *const *extractors;     /* names; NULL/0 = all */
    size_t nextractors;
    int64_t at;                        /* 0 = current values, else as of this time */
    int deploy;                        /* 1 = deployment view instead of values */
    int pretty;                        /* 1 = indented; 0 = one line, values as stored */
};

/* Runs q and returns the JSON document described in doc/sysquery.schema.json
 * in *out (malloc'd, caller frees). Hosts named in q->hostlist but unknown to
 * the database are listed under "missing". */
int sysmap_query_json(struct sysmap_db *db, const struct sysmap_query *q,
                      char **out, char *err, size_t errlen);

/* Where a burst buffer goes on one node: the writable local file system on a
 * non-rotational device with the most available bytes. NUMA nodes are -1
 * when unknown. */
struct sysmap_deploy_view {
    char host[65];
    int has_storage;                 /* 0: no suitable local file system */
    char storage_path[4096];
    char device[64];                 /* block device, e.g. "nvme0n1" */
    char fstype[32];
    uint64_t available_bytes;
    uint64_t size_bytes;
    int storage_numa_node;
    char network_adapter[64];        /* HCA or interface nearest the fabric */
    int network_numa_node;
    int64_t updated;                 /* when the storage data was reported */
};

/* Fills view for hostname, current (at 0) or as of at. -ENOENT when the
 * host is unknown; a known host without suitable storage returns 0 with
 * has_storage 0 so callers can fall back and say why. */
int sysmap_deploy_view(struct sysmap_db *db, const char *hostname, int64_t at,
                       struct sysmap_deploy_view *view, char *err, size_t errlen);

/* The views of n hosts in one query: a value hosts share (a hardware
 * profile's) is read and parsed once, not once per host. views[i] of
 * names[i]; found[i] 0 (its view zeroed) for a host the database does not
 * know. 0, or -errno with err. */
int sysmap_deploy_views(struct sysmap_db *db, const char *const *names, size_t n, int64_t at,
                        struct sysmap_deploy_view *views, int *found, char *err, size_t errlen);

/* The view of every host the database knows (at 0: current, else as of
 * at), one read transaction, each passed to each(view, arg) in name order;
 * a nonzero return from each stops the walk and is returned. For a reader
 * that keeps all views (the plugin's placement table, refreshed outside
 * slurmctld's locks). 0, or -errno with err. */
int sysmap_deploy_views_all(struct sysmap_db *db, int64_t at,
                            int (*each)(const struct sysmap_deploy_view *view, void *arg),
                            void *arg, char *err, size_t errlen);

/* A number that changes whenever another connection (the server storing a
 * report, a bulk load) commits to the database this handle reads: SQLite's
 * PRAGMA data_version, a few microseconds. Lets a reader keep what it
 * computed from the database until the data changes. 0, or -errno with err. */
int sysmap_data_version(struct sysmap_db *db, int64_t *version, char *err, size_t errlen);

struct sysmap_capacity {
    size_t hosts;                    /* hosts in the list */
    size_t hosts_with_storage;
    uint64_t total_bytes;            /* sum of available bytes */
    uint64_t min_bytes;              /* smallest per-node available bytes */
    char *without_storage;           /* hostlist of unknown hosts or hosts
                                        without storage, or NULL; malloc'd */
};

/* Sums the deployment views over a host list. The caller frees
 * cap->without_storage with free(). */
int sysmap_capacity(struct sysmap_db *db, const char *hostlist, int64_t at,
                    struct sysmap_capacity *cap, char *err, size_t errlen);

#endif
