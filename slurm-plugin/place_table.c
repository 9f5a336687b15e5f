#include "place_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

struct place_table *place_table_new(void)
{
    struct place_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->nslots = 64;
    if (!(t->slots = calloc(t->nslots, sizeof(*t->slots)))) {
        free(t);
        return NULL;
    }
    return t;
}

void place_table_free(struct place_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nslots; i++) {
        free(t->slots[i].name);
        free(t->slots[i].storage_path);
    }
    free(t->slots);
    free(t);
}

static struct place_entry *slot_of(struct place_entry *slots, size_t nslots, const char *name)
{
    size_t i = hash(name) & (nslots - 1);
    while (slots[i].name && strcmp(slots[i].name, name) != 0)
        i = (i + 1) & (nslots - 1);
    return &slots[i];
}

static int grow(struct place_table *t)
{
    size_t nslots = t->nslots * 2;
    struct place_entry *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->nslots; i++)
        if (t->slots[i].name)
            *slot_of(slots, nslots, t->slots[i].name) = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

int place_table_put(struct place_table *t, const struct sysmap_deploy_view *v)
{
    if ((t->count + 1) * 2 > t->nslots && grow(t) < 0)
        return -1;
    char *path = v->has_storage ? strdup(v->storage_path) : NULL;
    if (v->has_storage && !path)
        return -1;
    struct place_entry *e = slot_of(t->slots, t->nslots, v->host);
    if (!e->name) {
        if (!(e->name = strdup(v->host))) {
            free(path);
            return -1;
        }
        t->count++;
    }
    free(e->storage_path);
    e->storage_path = path;
    e->storage_numa_node = v->storage_numa_node;
    e->available_bytes = v->available_bytes;
    return 0;
}

const struct place_entry *place_table_get(const struct place_table *t, const char *name)
{
    const struct place_entry *e = slot_of(t->slots, t->nslots, name);
    return e->name ? e : NULL;
}
