#include "placement.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fit_cache.h"
#include "log.h"
#include "size.h"
#include "sysmap.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sysmap_db *db;
/* Partitions' totals by sysmap, kept between submits (fit_cache.h). */
static struct fit_cache fits = { .max_age = FIT_CACHE_MAX_AGE };
/* Each submit may ask: a database that stops answering is said once a minute. */
static struct log_limit fit_failed = LOG_LIMIT_INIT(1, 60000);

int placement_open(const char *db_path, char *err, size_t errlen)
{
    struct sysmap_db *opened;
    if (sysmap_open(db_path, SYSMAP_OPEN_READONLY, &opened, err, errlen) < 0)
        return -1;
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = opened;
    fit_cache_clear(&fits);   /* another database: versions not comparable */
    pthread_mutex_unlock(&lock);
    return 0;
}

void placement_close(void)
{
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = NULL;
    fit_cache_clear(&fits);
    pthread_mutex_unlock(&lock);
}

bool placement_enabled(void)
{
    return db != NULL;
}

/* place of node from its sysmap view (found: sysmap knows the node). */
static void place_from_view(const char *node, const char *default_storage, int found,
                            const struct sysmap_deploy_view *v, const char *err,
                            struct node_place *place, char *why, size_t whylen)
{
    *place = (struct node_place){ .numa_node = -1 };
    snprintf(place->storage, sizeof(place->storage), "%s", default_storage);
    if (why && whylen)
        why[0] = '\0';
    if (!found) {
        if (why)
            snprintf(why, whylen, "sysmap does not know node %s (%s): using %s", node, err,
                     default_storage);
        return;
    }
    if (!v->has_storage) {
        if (why)
            snprintf(why, whylen, "sysmap has no local non-rotational storage on %s: using %s",
                     node, default_storage);
        return;
    }
    if ((size_t)snprintf(place->storage, sizeof(place->storage), "%s%sadafs", v->storage_path,
                         v->storage_path[strlen(v->storage_path) - 1] == '/' ? "" : "/") >=
        sizeof(place->storage)) {
        snprintf(place->storage, sizeof(place->storage), "%s", default_storage);
        return;
    }
    place->numa_node = v->storage_numa_node;
    place->available = v->available_bytes;
    place->from_sysmap = true;
}

void placement_node(const char *node, const char *default_storage, struct node_place *place,
                    char *why, size_t whylen)
{
    placement_nodes(&node, 1, default_storage, place, why, whylen);
}

void placement_nodes(const char *const *nodes, size_t n, const char *default_storage,
                     struct node_place *places, char *why, size_t whylen)
{
    struct sysmap_deploy_view *views = calloc(n ? n : 1, sizeof(*views));
    int *found = calloc(n ? n : 1, sizeof(*found));
    char err[256] = "no sysmap database";
    int rc = -1;
    pthread_mutex_lock(&lock);
    bool enabled = db != NULL;
    if (!views || !found)
        snprintf(err, sizeof(err), "out of memory for %zu views", n);
    else if (enabled)
        rc = sysmap_deploy_views(db, nodes, n, 0, views, found, err, sizeof(err));
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) {
        char *w = why ? why + i * whylen : NULL;
        if (!enabled) {
            places[i] = (struct node_place){ .numa_node = -1 };
            snprintf(places[i].storage, sizeof(places[i].storage), "%s", default_storage);
            if (w && whylen)
                w[0] = '\0';
            continue;
        }
        if (rc == 0 && !found[i])
            snprintf(err, sizeof(err), "host %s is not in the database", nodes[i]);
        place_from_view(nodes[i], default_storage, rc == 0 && found[i], &views[i], err,
                        &places[i], w, whylen);
    }
    free(views);
    free(found);
}

static int64_t monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* The totals of hostlist: kept ones if still valid (fit_cache.h), else
 * summed by sysmap and kept. Under lock. */
static int partition_totals(const char *hostlist, struct fit_totals *t, char *err, size_t errlen)
{
    int64_t version;
    int rc = sysmap_data_version(db, &version, err, errlen);
    if (rc < 0)
        return rc;
    int64_t now = monotonic_seconds();
    if (fit_cache_get(&fits, hostlist, version, now, t))
        return 0;
    struct sysmap_capacity cap;
    if ((rc = sysmap_capacity(db, hostlist, 0, &cap, err, errlen)) < 0)
        return rc;
    *t = (struct fit_totals){ .hosts = cap.hosts, .hosts_with_storage = cap.hosts_with_storage,
                              .total_bytes = cap.total_bytes };
    free(cap.without_storage);
    /* Out of memory for the node list's copy: nothing kept, the next
     * submit sums again; this one has its answer. */
    fit_cache_put(&fits, hostlist, version, now, t);
    return 0;
}

int placement_check_fit(const char *hostlist, const char *partition, uint64_t capacity,
                        char *err, size_t errlen)
{
    pthread_mutex_lock(&lock);
    if (!db || !hostlist) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    struct fit_totals cap;
    char qerr[512];
    int rc = partition_totals(hostlist, &cap, qerr, sizeof(qerr));
    pthread_mutex_unlock(&lock);
    if (rc < 0) {
        /* Not the user's fault: the job is not refused for it. */
        log_limited(&fit_failed, LOG_LEVEL_ERROR, "sysmap cannot sum partition %s for the "
                    "capacity check at submit, so requests are not checked against it: %s",
                    partition ? partition : "?", qerr);
        return 0;
    }
    int fits_in = cap.hosts_with_storage == 0 || capacity <= cap.total_bytes;
    if (!fits_in) {
        char want[32], have[32];
        size_format(capacity, want, sizeof(want));
        size_format(cap.total_bytes, have, sizeof(have));
        snprintf(err, errlen,
                 "capacity=%s does not fit: the nodes of partition %s have %" PRIu64
                 " bytes (%s) of local storage available by sysmap", want,
                 partition ? partition : "?", cap.total_bytes, have);
    }
    return fits_in ? 0 : -1;
}
