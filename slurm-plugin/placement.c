#include "placement.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fit_cache.h"
#include "hostlist.h"
#include "log.h"
#include "place_table.h"
#include "size.h"
#include "sysmap.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sysmap_db *db;
/* Partitions' totals by sysmap, kept between submits (fit_cache.h). */
static struct fit_cache fits = { .max_age = FIT_CACHE_MAX_AGE };
/* Each submit may ask: a database that stops answering is said once a minute. */
static struct log_limit fit_failed = LOG_LIMIT_INIT(1, 60000);

/* Every node's place, read by the refresher thread from a handle of its
 * own every PLACE_REFRESH seconds (place_table.h): a job's placement looks
 * nodes up there instead of querying sysmap under slurmctld's job lock.
 * Used while younger than PLACE_MAX_AGE (a refresher that stalls or fails
 * leaves the queries); nodes it lacks are queried as before. */
#define PLACE_REFRESH 30          /* seconds */
#define PLACE_MAX_AGE 60
#define PLACE_TABLE_MAX 200000    /* hosts; a larger database is queried per job */
static struct place_table *table;
static uint64_t table_hits;
static pthread_t refresher;
static bool refresher_running, refresher_stop;
static pthread_cond_t refresher_wake;
static struct log_limit refresh_failed = LOG_LIMIT_INIT(1, 600000);

static int64_t monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

static int table_put(const struct sysmap_deploy_view *v, void *arg)
{
    struct place_table *t = arg;
    if (t->count >= PLACE_TABLE_MAX)
        return E2BIG;
    return place_table_put(t, v) < 0 ? ENOMEM : 0;
}

/* One refresh: the table rebuilt if the database changed since the last
 * (*version), else only marked current. Without placement's lock but for
 * the swap. */
static void refresh(struct sysmap_db *own, int64_t *version, bool *built)
{
    char err[512];
    int64_t now = monotonic_seconds(), v;
    int rc = sysmap_data_version(own, &v, err, sizeof(err));
    if (rc == 0 && *built && v == *version) {
        pthread_mutex_lock(&lock);
        if (table)
            table->built_at = now;
        pthread_mutex_unlock(&lock);
        return;
    }
    struct place_table *fresh = rc == 0 ? place_table_new() : NULL;
    if (rc == 0 && !fresh)
        snprintf(err, sizeof(err), "out of memory for the placement table");
    if (fresh && (rc = sysmap_deploy_views_all(own, 0, table_put, fresh, err, sizeof(err))) == 0)
        fresh->built_at = now;
    pthread_mutex_lock(&lock);
    struct place_table *old = table;
    table = rc == 0 ? fresh : NULL;
    pthread_mutex_unlock(&lock);
    place_table_free(old);
    if (rc != 0) {
        place_table_free(fresh);
        log_limited(&refresh_failed, LOG_LEVEL_ERROR, "placement table not refreshed, jobs' "
                    "nodes are queried from sysmap as they start: %s", err);
    }
    *built = rc == 0;
    *version = v;
}

static void *refresh_loop(void *arg)
{
    struct sysmap_db *own = arg;
    int64_t version = 0;
    bool built = false;
    pthread_mutex_lock(&lock);
    while (!refresher_stop) {
        pthread_mutex_unlock(&lock);
        refresh(own, &version, &built);
        pthread_mutex_lock(&lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += PLACE_REFRESH;
        while (!refresher_stop &&
               pthread_cond_timedwait(&refresher_wake, &lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&lock);
    sysmap_close(own);
    return NULL;
}

/* Stops the refresher (if any) and drops its table. Not under lock. */
static void stop_refresher(void)
{
    pthread_mutex_lock(&lock);
    refresher_stop = true;
    if (refresher_running)
        pthread_cond_signal(&refresher_wake);
    pthread_mutex_unlock(&lock);
    if (refresher_running) {
        pthread_join(refresher, NULL);
        pthread_cond_destroy(&refresher_wake);
        refresher_running = false;
    }
    pthread_mutex_lock(&lock);
    refresher_stop = false;
    place_table_free(table);
    table = NULL;
    pthread_mutex_unlock(&lock);
}

/* Starts the refresher on a handle of its own (a handle is one thread's).
 * Failing, placement queries sysmap per job as before: said, not fatal. */
static void start_refresher(const char *db_path)
{
    char err[512];
    struct sysmap_db *own;
    if (sysmap_open(db_path, SYSMAP_OPEN_READONLY, &own, err, sizeof(err)) < 0) {
        log_error("no placement table, jobs' nodes are queried from sysmap as they start: %s",
                  err);
        return;
    }
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&refresher_wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&refresher, NULL, refresh_loop, own);
    if (rc != 0) {
        log_error("no placement table, jobs' nodes are queried from sysmap as they start: "
                  "cannot start its thread: %s", strerror(rc));
        pthread_cond_destroy(&refresher_wake);
        sysmap_close(own);
        return;
    }
    refresher_running = true;
}

int placement_open(const char *db_path, char *err, size_t errlen)
{
    struct sysmap_db *opened;
    if (sysmap_open(db_path, SYSMAP_OPEN_READONLY, &opened, err, errlen) < 0)
        return -1;
    stop_refresher();
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = opened;
    fit_cache_clear(&fits);   /* another database: versions not comparable */
    pthread_mutex_unlock(&lock);
    start_refresher(db_path);
    return 0;
}

void placement_close(void)
{
    stop_refresher();
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = NULL;
    fit_cache_clear(&fits);
    pthread_mutex_unlock(&lock);
}

void placement_table_stats(size_t *hosts, uint64_t *hits)
{
    pthread_mutex_lock(&lock);
    *hosts = table ? table->count : 0;
    *hits = table_hits;
    pthread_mutex_unlock(&lock);
}

bool placement_enabled(void)
{
    return db != NULL;
}

/* What placement reads of a node's view, from a query or the table. */
struct seen {
    int found;                /* sysmap knows the node */
    const char *path;         /* NULL: no suitable local storage */
    int numa_node;
    uint64_t available;
};

static void place_from(const char *node, const char *default_storage, const struct seen *v,
                       const char *err, struct node_place *place, char *why, size_t whylen)
{
    *place = (struct node_place){ .numa_node = -1 };
    snprintf(place->storage, sizeof(place->storage), "%s", default_storage);
    if (why && whylen)
        why[0] = '\0';
    if (!v->found) {
        if (why)
            snprintf(why, whylen, "sysmap does not know node %s (%s): using %s", node, err,
                     default_storage);
        return;
    }
    if (!v->path || !v->path[0]) {
        if (why)
            snprintf(why, whylen, "sysmap has no local non-rotational storage on %s: using %s",
                     node, default_storage);
        return;
    }
    if ((size_t)snprintf(place->storage, sizeof(place->storage), "%s%sadafs", v->path,
                         v->path[strlen(v->path) - 1] == '/' ? "" : "/") >=
        sizeof(place->storage)) {
        snprintf(place->storage, sizeof(place->storage), "%s", default_storage);
        return;
    }
    place->numa_node = v->numa_node;
    place->available = v->available;
    place->from_sysmap = true;
}

void placement_node(const char *node, const char *default_storage, struct node_place *place,
                    char *why, size_t whylen)
{
    placement_nodes(&node, 1, default_storage, place, why, whylen);
}

/* The nodes the table lacks (or all, without a current table), queried
 * in one sysmap query into seen; views holds what seen points to for them
 * (*views, allocated here for those nodes only: 4 KiB a view). Under lock. */
static int query_missing(const char *const *nodes, size_t n, struct seen *seen,
                         struct sysmap_deploy_view **views, char *err, size_t errlen)
{
    const struct place_table *t =
        table && monotonic_seconds() - table->built_at < PLACE_MAX_AGE ? table : NULL;
    size_t missing = 0;
    for (size_t i = 0; i < n; i++) {
        const struct place_entry *e = t ? place_table_get(t, nodes[i]) : NULL;
        if (e) {
            seen[i] = (struct seen){ 1, e->storage_path, e->storage_numa_node,
                                     e->available_bytes };
            table_hits++;
        } else {
            seen[i] = (struct seen){ .found = -1 };   /* to query */
            missing++;
        }
    }
    if (!missing)
        return 0;
    const char **names = calloc(missing, sizeof(*names));
    size_t *at = calloc(missing, sizeof(*at));
    int *found = calloc(missing, sizeof(*found));
    *views = calloc(missing, sizeof(**views));
    int rc = -1;
    if (!names || !at || !found || !*views) {
        snprintf(err, errlen, "out of memory for %zu nodes' views", missing);
        for (size_t i = 0; i < n; i++)
            if (seen[i].found < 0)
                seen[i].found = 0;
    } else {
        for (size_t i = 0, k = 0; i < n; i++)
            if (seen[i].found < 0) {
                at[k] = i;
                names[k++] = nodes[i];
            }
        rc = sysmap_deploy_views(db, names, missing, 0, *views, found, err, errlen);
        for (size_t k = 0; k < missing; k++) {
            const struct sysmap_deploy_view *v = &(*views)[k];
            seen[at[k]] = (struct seen){ rc == 0 && found[k],
                                         v->has_storage ? v->storage_path : NULL,
                                         v->storage_numa_node, v->available_bytes };
        }
    }
    free(names);
    free(at);
    free(found);
    return rc;
}

void placement_nodes(const char *const *nodes, size_t n, const char *default_storage,
                     struct node_place *places, char *why, size_t whylen)
{
    struct seen *seen = calloc(n ? n : 1, sizeof(*seen));
    struct sysmap_deploy_view *views = NULL;
    char err[256] = "no sysmap database";
    int rc = -1;
    pthread_mutex_lock(&lock);
    bool enabled = db != NULL;
    if (!seen)
        snprintf(err, sizeof(err), "out of memory for %zu nodes", n);
    else if (enabled)
        rc = query_missing(nodes, n, seen, &views, err, sizeof(err));
    /* Under lock: seen points into the table. */
    for (size_t i = 0; i < n; i++) {
        char *w = why ? why + i * whylen : NULL;
        if (!enabled) {
            places[i] = (struct node_place){ .numa_node = -1 };
            snprintf(places[i].storage, sizeof(places[i].storage), "%s", default_storage);
            if (w && whylen)
                w[0] = '\0';
            continue;
        }
        struct seen none = { 0 };
        const struct seen *v = seen ? &seen[i] : &none;
        char said[256];
        snprintf(said, sizeof(said), "%s", err);
        if (rc == 0 && !v->found)
            snprintf(said, sizeof(said), "host %s is not in the database", nodes[i]);
        place_from(nodes[i], default_storage, v, said, &places[i], w, whylen);
    }
    pthread_mutex_unlock(&lock);
    free(seen);
    free(views);
}

/* A table's sums are as old as the table, not as the database's data
 * version: kept by the age bound alone (no version matches this). */
#define FROM_TABLE INT64_MIN

/* The totals of hostlist from the placement table, as sysmap_capacity
 * sums them (a node the table lacks has no storage): 10,000 lookups
 * instead of 10,000 hosts' views read. Under lock. */
static int table_totals(const struct place_table *t, const char *hostlist, struct fit_totals *sum,
                        char *err, size_t errlen)
{
    struct hostlist hl = { 0 };
    int rc = hostlist_expand(hostlist, &hl, err, errlen);
    if (rc < 0)
        return rc;
    *sum = (struct fit_totals){ .hosts = hl.count };
    for (size_t i = 0; i < hl.count; i++) {
        const struct place_entry *e = place_table_get(t, hl.names[i]);
        if (e && e->storage_path) {
            sum->hosts_with_storage++;
            sum->total_bytes += e->available_bytes;
        }
    }
    hostlist_free(&hl);
    return 0;
}

/* The totals of hostlist: kept ones if still valid (fit_cache.h), else
 * summed from the placement table if it is current, else by sysmap, and
 * kept. Under lock. */
static int partition_totals(const char *hostlist, struct fit_totals *t, char *err, size_t errlen)
{
    int64_t version;
    int rc = sysmap_data_version(db, &version, err, errlen);
    if (rc < 0)
        return rc;
    int64_t now = monotonic_seconds();
    if (fit_cache_get(&fits, hostlist, version, now, t))
        return 0;
    if (table && now - table->built_at < PLACE_MAX_AGE) {
        if ((rc = table_totals(table, hostlist, t, err, errlen)) < 0)
            return rc;
        /* Out of memory for the node list's copy: nothing kept, the next
         * submit sums again; this one has its answer. */
        fit_cache_put(&fits, hostlist, FROM_TABLE, table->built_at, t);
        return 0;
    }
    struct sysmap_capacity cap;
    if ((rc = sysmap_capacity(db, hostlist, 0, &cap, err, errlen)) < 0)
        return rc;
    *t = (struct fit_totals){ .hosts = cap.hosts, .hosts_with_storage = cap.hosts_with_storage,
                              .total_bytes = cap.total_bytes };
    free(cap.without_storage);
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
