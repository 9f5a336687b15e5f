#include "fit_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void fit_cache_init(struct fit_cache *c, int64_t max_age)
{
    memset(c, 0, sizeof(*c));
    c->max_age = max_age;
}

void fit_cache_clear(struct fit_cache *c)
{
    for (size_t i = 0; i < FIT_CACHE_ENTRIES; i++)
        free(c->entries[i].hostlist);
    fit_cache_init(c, c->max_age);
}

static struct fit_cache_entry *find(struct fit_cache *c, const char *hostlist)
{
    for (size_t i = 0; i < FIT_CACHE_ENTRIES; i++)
        if (c->entries[i].hostlist && strcmp(c->entries[i].hostlist, hostlist) == 0)
            return &c->entries[i];
    return NULL;
}

/* A clock stepping back (it should not: monotonic) makes the entry stale
 * rather than valid for longer. */
static bool fresh(const struct fit_cache *c, const struct fit_cache_entry *e, int64_t version,
                  int64_t now)
{
    if (e->version == version)
        return true;
    return now >= e->summed_at && now - e->summed_at < c->max_age;
}

bool fit_cache_get(struct fit_cache *c, const char *hostlist, int64_t version, int64_t now,
                   struct fit_totals *totals)
{
    struct fit_cache_entry *e = find(c, hostlist);
    if (!e || !fresh(c, e, version, now)) {
        c->misses++;
        return false;
    }
    e->used = ++c->uses;
    *totals = e->totals;
    c->hits++;
    return true;
}

int fit_cache_put(struct fit_cache *c, const char *hostlist, int64_t version, int64_t now,
                  const struct fit_totals *totals)
{
    struct fit_cache_entry *e = find(c, hostlist);
    if (!e) {
        e = &c->entries[0];
        for (size_t i = 0; i < FIT_CACHE_ENTRIES && e->hostlist; i++)
            if (!c->entries[i].hostlist || c->entries[i].used < e->used)
                e = &c->entries[i];
        char *copy = strdup(hostlist);
        if (!copy)
            return -1;
        free(e->hostlist);
        e->hostlist = copy;
    }
    e->totals = *totals;
    e->version = version;
    e->summed_at = now;
    e->used = ++c->uses;
    return 0;
}
