/* fit_cache: a partition's totals kept while the database is unchanged or
 * younger than the age bound, per node list, the least recently used
 * replaced when full; nothing kept survives a clear. */
#include "fit_cache.h"
#include "tap.h"

#include <stdio.h>

static struct fit_totals totals(uint64_t bytes)
{
    return (struct fit_totals){ .hosts = 10, .hosts_with_storage = 9, .total_bytes = bytes };
}

int main(void)
{
    struct fit_cache c;
    struct fit_totals t;
    fit_cache_init(&c, 60);
    tap_ok(!fit_cache_get(&c, "n[1-10]", 5, 1000, &t), "empty: a miss");
    struct fit_totals ten = totals(1000);
    tap_is_int(fit_cache_put(&c, "n[1-10]", 5, 1000, &ten), 0, "kept");
    tap_ok(fit_cache_get(&c, "n[1-10]", 5, 1000, &t) && t.total_bytes == 1000 && t.hosts == 10 &&
           t.hosts_with_storage == 9, "the same partition, database unchanged: its totals");
    tap_ok(fit_cache_get(&c, "n[1-10]", 5, 1000 + 86400, &t),
           "a day later, the database unchanged: still valid");
    tap_ok(fit_cache_get(&c, "n[1-10]", 6, 1059, &t) && t.total_bytes == 1000,
           "the database changed, 59 s later: kept (the age bound)");
    tap_ok(!fit_cache_get(&c, "n[1-10]", 6, 1060, &t),
           "the database changed, 60 s later: summed again");
    tap_ok(!fit_cache_get(&c, "n[1-10]", 6, 999, &t),
           "a clock before the sum with a changed database: summed again");
    tap_ok(!fit_cache_get(&c, "n[1-11]", 5, 1000, &t), "another node list (nodes added): a miss");
    struct fit_totals more = totals(2000);
    fit_cache_put(&c, "n[1-10]", 6, 1060, &more);
    tap_ok(fit_cache_get(&c, "n[1-10]", 6, 1061, &t) && t.total_bytes == 2000,
           "summed again: the new totals replace the old");
    tap_ok(c.hits == 4 && c.misses == 4, "every question counted (%llu hits, %llu misses)",
           (unsigned long long)c.hits, (unsigned long long)c.misses);

    /* Full: the least recently used partition goes, the one just used stays. */
    fit_cache_clear(&c);
    tap_ok(!fit_cache_get(&c, "n[1-10]", 6, 1061, &t), "cleared: nothing kept");
    char name[32];
    for (int i = 0; i < FIT_CACHE_ENTRIES; i++) {
        snprintf(name, sizeof(name), "p%d[1-100]", i);
        struct fit_totals each = totals((uint64_t)i);
        fit_cache_put(&c, name, 1, 0, &each);
    }
    int all = 0;
    for (int i = FIT_CACHE_ENTRIES - 1; i >= 0; i--) {
        snprintf(name, sizeof(name), "p%d[1-100]", i);
        all += fit_cache_get(&c, name, 1, 0, &t) && t.total_bytes == (uint64_t)i;
    }
    tap_ok(all == FIT_CACHE_ENTRIES, "%d partitions kept (%d)", FIT_CACHE_ENTRIES, all);
    /* p0 was asked last, p63 first: p63 is the least recently used. */
    struct fit_totals extra = totals(777);
    fit_cache_put(&c, "extra[1-2]", 1, 0, &extra);
    snprintf(name, sizeof(name), "p%d[1-100]", FIT_CACHE_ENTRIES - 1);
    tap_ok(!fit_cache_get(&c, name, 1, 0, &t), "the least recently used went");
    tap_ok(fit_cache_get(&c, "p0[1-100]", 1, 0, &t) && fit_cache_get(&c, "extra[1-2]", 1, 0, &t) &&
           t.total_bytes == 777, "the newest and the most recently used stay");
    fit_cache_clear(&c);
    return tap_done();
}
