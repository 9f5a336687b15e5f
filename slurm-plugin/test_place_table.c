/* place_table: a node's place found by name among 10,000 (the table grown
 * from its first 64 slots), replaced by a newer view, a node without
 * storage kept as such, an unknown name not found. */
#include "place_table.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static struct sysmap_deploy_view view(const char *host, int storage, uint64_t avail)
{
    struct sysmap_deploy_view v = { .has_storage = storage, .storage_numa_node = 1,
                                    .available_bytes = avail };
    snprintf(v.host, sizeof(v.host), "%s", host);
    snprintf(v.storage_path, sizeof(v.storage_path), "/local/%s", host);
    return v;
}

int main(void)
{
    struct place_table *t = place_table_new();
    char name[32];
    int put = 0;
    for (int i = 1; i <= 10000; i++) {
        snprintf(name, sizeof(name), "n%05d", i);
        struct sysmap_deploy_view v = view(name, i % 10 != 0, (uint64_t)i);
        put += place_table_put(t, &v) == 0;
    }
    tap_ok(put == 10000 && t->count == 10000 && t->nslots >= 20000,
           "10,000 nodes kept, at most half the slots used (%zu of %zu)", t->count, t->nslots);
    int right = 0;
    for (int i = 1; i <= 10000; i++) {
        snprintf(name, sizeof(name), "n%05d", i);
        const struct place_entry *e = place_table_get(t, name);
        char want[40];
        snprintf(want, sizeof(want), "/local/%s", name);
        right += e && strcmp(e->name, name) == 0 && e->available_bytes == (uint64_t)i &&
                 e->storage_numa_node == 1 &&
                 (i % 10 == 0 ? e->storage_path == NULL : strcmp(e->storage_path, want) == 0);
    }
    tap_ok(right == 10000, "each found by name, without storage as such (%d right)", right);
    tap_ok(place_table_get(t, "n10001") == NULL && place_table_get(t, "") == NULL,
           "an unknown name is not found");
    struct sysmap_deploy_view newer = view("n00007", 1, 99);
    place_table_put(t, &newer);
    const struct place_entry *e = place_table_get(t, "n00007");
    tap_ok(e && e->available_bytes == 99 && t->count == 10000, "a newer view replaces the old");
    place_table_free(t);
    return tap_done();
}
