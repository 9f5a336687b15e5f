#include "placement.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"
#include "sysmap.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sysmap_db *db;

int placement_open(const char *db_path, char *err, size_t errlen)
{
    struct sysmap_db *opened;
    if (sysmap_open(db_path, SYSMAP_OPEN_READONLY, &opened, err, errlen) < 0)
        return -1;
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = opened;
    pthread_mutex_unlock(&lock);
    return 0;
}

void placement_close(void)
{
    pthread_mutex_lock(&lock);
    if (db)
        sysmap_close(db);
    db = NULL;
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

int placement_check_fit(const char *hostlist, const char *partition, uint64_t capacity,
                        char *err, size_t errlen)
{
    pthread_mutex_lock(&lock);
    if (!db || !hostlist) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    struct sysmap_capacity cap;
    char qerr[256];
    int rc = sysmap_capacity(db, hostlist, 0, &cap, qerr, sizeof(qerr));
    pthread_mutex_unlock(&lock);
    if (rc < 0)
        return 0;   /* the plugin logs that sysmap could not answer */
    int fits = cap.hosts_with_storage == 0 || capacity <= cap.total_bytes;
    if (!fits) {
        char want[32], have[32];
        size_format(capacity, want, sizeof(want));
        size_format(cap.total_bytes, have, sizeof(have));
        snprintf(err, errlen,
                 "capacity=%s does not fit: the nodes of partition %s have %" PRIu64
                 " bytes (%s) of local storage available by sysmap", want,
                 partition ? partition : "?", cap.total_bytes, have);
    }
    free(cap.without_storage);
    return fits ? 0 : -1;
}
