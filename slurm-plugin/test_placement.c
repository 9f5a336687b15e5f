/* placement: each node's storage from a sysmap database written by
 * sysmap's own writer (synthetic reports of several hardware profiles):
 * the nodes of one query (placement_nodes) placed as each node's own view
 * says, nodes sysmap does not know on the site's default with the reason,
 * and the fit of a request against a host list. */
#include "placement.h"
#include "synth.h"
#include "sysmap.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { HOSTS = 40, PROFILES = 7 };

static char dir[] = "/tmp/test_placement.XXXXXX";
static char db_path[256];

static void make_db(void)
{
    char err[512];
    struct sysmap_db *db;
    if (sysmap_open(db_path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)) < 0) {
        printf("Bail out! %s\n", err);
        exit(1);
    }
    for (int i = 0; i < HOSTS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%02d", i + 1);
        char *r = synth_report(name, (size_t)(i % PROFILES));
        if (sysmap_store(db, r, strlen(r), 1700000000, NULL, err, sizeof(err)) < 0) {
            printf("Bail out! %s\n", err);
            exit(1);
        }
        free(r);
    }
    sysmap_close(db);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(db_path, sizeof(db_path), "%s/sysmap.db", dir);
    char err[512];
    /* Without a database: the site's default, nothing said. */
    const char *two[] = { "n01", "n02" };
    struct node_place p[2];
    char why[2][256];
    placement_nodes(two, 2, "/var/lib/adafs", p, why[0], sizeof(why[0]));
    tap_ok(!p[0].from_sysmap && strcmp(p[1].storage, "/var/lib/adafs") == 0 &&
           p[1].numa_node == -1 && !why[0][0] && !why[1][0], "no database: the default");

    make_db();
    tap_is_int(placement_open(db_path, err, sizeof(err)), 0, "the database opens");
    /* The refresher reads every node's place (its thread, its handle). */
    size_t table_hosts = 0;
    uint64_t hits = 0;
    for (int waited = 0; table_hosts == 0 && waited < 1000; waited++) {
        placement_table_stats(&table_hosts, &hits);
        usleep(10000);
    }
    tap_is_int(table_hosts, HOSTS, "the placement table has every host sysmap knows");
    /* Every host but n21, in its place x21 and at the end n41: unknown. */
    const char *names[HOSTS + 1];
    char buf[HOSTS + 1][16];
    for (int i = 0; i <= HOSTS; i++) {
        snprintf(buf[i], sizeof(buf[i]), i == HOSTS / 2 ? "x%02d" : "n%02d", i + 1);
        names[i] = buf[i];
    }
    struct node_place *places = calloc(HOSTS + 1, sizeof(*places));
    char (*whys)[256] = calloc(HOSTS + 1, sizeof(*whys));
    placement_nodes(names, HOSTS + 1, "/var/lib/adafs", places, whys[0], sizeof(whys[0]));
    struct sysmap_db *db;
    sysmap_open(db_path, SYSMAP_OPEN_READONLY, &db, err, sizeof(err));
    int agree = 0;
    for (int i = 0; i <= HOSTS; i++) {
        struct sysmap_deploy_view v;
        if (sysmap_deploy_view(db, names[i], 0, &v, err, sizeof(err)) < 0) {
            char said[64];
            snprintf(said, sizeof(said), "sysmap does not know node %s", names[i]);
            agree += !places[i].from_sysmap && strcmp(places[i].storage, "/var/lib/adafs") == 0 &&
                     strstr(whys[i], said) != NULL;
            continue;
        }
        char want[4200];
        snprintf(want, sizeof(want), "%s%sadafs", v.storage_path,
                 v.storage_path[strlen(v.storage_path) - 1] == '/' ? "" : "/");
        agree += v.has_storage && places[i].from_sysmap && strcmp(places[i].storage, want) == 0 &&
                 places[i].available == v.available_bytes &&
                 places[i].numa_node == v.storage_numa_node && !whys[i][0];
    }
    sysmap_close(db);
    uint64_t hits_after;
    placement_table_stats(&table_hosts, &hits_after);
    tap_ok(hits_after - hits == HOSTS - 1, "the %d known ones from the table (%llu lookups)", HOSTS - 1,
           (unsigned long long)(hits_after - hits));
    tap_ok(agree == HOSTS + 1, "%d nodes in one query placed as each one's view says, the "
           "unknown ones on the default with the reason (%d agree)", HOSTS + 1, agree);
    struct node_place one;
    char one_why[256];
    placement_node("n07", "/var/lib/adafs", &one, one_why, sizeof(one_why));
    tap_ok(strcmp(one.storage, places[6].storage) == 0 && one.available == places[6].available,
           "one node alone as in the many");

    long long all = 0;
    for (int i = 0; i < HOSTS; i++)
        all += synth_local_bytes((size_t)(i % PROFILES));
    tap_is_int(placement_check_fit("n[01-40]", "batch", (uint64_t)all, err, sizeof(err)), 0,
               "what the hosts hold together fits");
    tap_is_int(placement_check_fit("n[01-40]", "batch", (uint64_t)all + 1, err, sizeof(err)), -1,
               "a byte more does not");
    tap_ok(strstr(err, "partition batch") != NULL, "the reason names the partition (%s)", err);

    /* The partition's totals are kept (fit_cache.h), summed from the
     * placement table: n02 shrinking by 100 GiB is seen after the age
     * bound, by every node list after a reopen (a reconfigure). */
    struct sysmap_db *writer;
    tap_is_int(sysmap_open(db_path, SYSMAP_OPEN_WRITE, &writer, err, sizeof(err)), 0,
               "a writer opens");
    char *smaller = synth_report("n02", 0);
    tap_is_int(sysmap_store(writer, smaller, strlen(smaller), 1700000900, NULL, err, sizeof(err)),
               0, "n02 reports 100 GiB less");
    free(smaller);
    sysmap_close(writer);
    tap_is_int(placement_check_fit("n[01-40]", "batch", (uint64_t)all, err, sizeof(err)), 0,
               "the kept totals still answer for n[01-40]");
    tap_is_int(placement_check_fit("n[01-20],n[21-40]", "batch", (uint64_t)all, err,
                                   sizeof(err)), 0,
               "another node list is summed from the table, as old as it");
    placement_close();
    tap_is_int(placement_open(db_path, err, sizeof(err)), 0, "reopened");
    long long less = all - synth_local_bytes(1) + synth_local_bytes(0);
    tap_is_int(placement_check_fit("n[01-40]", "batch", (uint64_t)less + 1, err, sizeof(err)), -1,
               "after a reopen n[01-40] is summed anew");
    tap_is_int(placement_check_fit("n[01-40]", "batch", (uint64_t)less, err, sizeof(err)), 0,
               "to the byte");
    for (int waited = 0; waited < 1000; waited++) {
        placement_table_stats(&table_hosts, &hits);
        if (table_hosts)
            break;
        usleep(10000);
    }
    tap_is_int(placement_check_fit("n[01-20],n[21-40]", "batch", (uint64_t)less + 1, err,
                                   sizeof(err)), -1, "the new table sums as sysmap does");
    tap_is_int(placement_check_fit("n[01-20],n[21-40]", "batch", (uint64_t)less, err,
                                   sizeof(err)), 0, "to the byte");
    placement_close();
    free(places);
    free(whys);
    unlink(db_path);
    char wal[300];
    snprintf(wal, sizeof(wal), "%s-wal", db_path);
    unlink(wal);
    snprintf(wal, sizeof(wal), "%s-shm", db_path);
    unlink(wal);
    rmdir(dir);
    return tap_done();
}
