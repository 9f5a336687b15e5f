/* libsysmap: storing reports, values stored once, history, malformed
 * reports, the deployment view and capacity sums. */
#include "sysmap.h"
#include "tap.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char db_path[] = "tests/test_store.db";

static long long count(const char *sql)
{
    sqlite3 *s;
    sqlite3_stmt *st;
    long long n = -1;
    if (sqlite3_open_v2(db_path, &s, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(s, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(s);
    return n;
}

/* A report with an NVMe /local of avail bytes (rotational as given) and a
 * tmpfs, plus an InfiniBand HCA on NUMA node 1. */
static char *report(const char *host, long long avail, int rotational, const char *model)
{
    json_t *r = json_pack(
        "{sss{s{s[{sssssssssssbsIsI}{sssssssssnsbsIsI}{sssssssssssbsIsI}]}"
        "s{s[{sssbsisI}{sssbsisI}]}s{s[{sssisss[{siss}]}]}s{ss}}}",
        "host", host, "extractors",
        "storage", "mounts",
        "mountpoint", "/local", "source", "/dev/nvme0n1p1", "fstype", "xfs", "kind", "local",
        "device", "nvme0n1", "read_only", 0, "size_bytes", (json_int_t)1 << 40,
        "available_bytes", (json_int_t)avail,
        "mountpoint", "/dev/shm", "source", "tmpfs", "fstype", "tmpfs", "kind", "memory",
        "device", "read_only", 0, "size_bytes", (json_int_t)1 << 41,
        "available_bytes", (json_int_t)1 << 41,
        "mountpoint", "/", "source", "/dev/sda1", "fstype", "ext4", "kind", "local",
        "device", "sda", "read_only", 0, "size_bytes", (json_int_t)1 << 42,
        "available_bytes", (json_int_t)1 << 42,
        "block", "devices",
        "name", "nvme0n1", "rotational", rotational, "numa_node", 0, "size_bytes", (json_int_t)1 << 40,
        "name", "sda", "rotational", 0, "numa_node", 0, "size_bytes", (json_int_t)1 << 42,
        "ib", "hcas", "name", "mlx5_0", "numa_node", 1, "node_guid", "0x1",
        "ports", "port", 1, "state", "ACTIVE",
        "cpu", "model", model);
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return text;
}

/* Follows a path such as "hosts/0/extractors" through objects and arrays. */
static json_t *at(json_t *v, const char *path)
{
    char buf[256], *save;
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *k = strtok_r(buf, "/", &save); v && k; k = strtok_r(NULL, "/", &save))
        v = json_is_array(v) ? json_array_get(v, strtoul(k, NULL, 10)) : json_object_get(v, k);
    return v;
}

static int store(struct sysmap_db *db, const char *text, long long now, const char *expect,
                 char *err)
{
    return sysmap_store(db, text, strlen(text), now, expect, err, 512);
}

struct walk {
    struct sysmap_db *db;
    int hosts, same, stop_after;
    char first[65];
};

static int walked(const struct sysmap_deploy_view *v, void *arg)
{
    struct walk *w = arg;
    struct sysmap_deploy_view one;
    char err[512];
    if (w->hosts++ == 0)
        snprintf(w->first, sizeof(w->first), "%s", v->host);
    w->same += sysmap_deploy_view(w->db, v->host, 0, &one, err, sizeof(err)) == 0 &&
               memcmp(&one, v, sizeof(one)) == 0;
    return w->stop_after && w->hosts >= w->stop_after ? 7 : 0;
}

static void malformed(struct sysmap_db *db, const char *text, int code, const char *msg)
{
    char err[512] = "";
    int rc = store(db, text, 50, NULL, err);
    char what[200];
    snprintf(what, sizeof(what), "rejects %.60s", text);
    tap_is_int(rc, code, what);
    tap_is_str(err, msg, what);
}

int main(void)
{
    char err[512];
    struct sysmap_db *db;
    unlink(db_path);
    tap_is_int(sysmap_open(db_path, SYSMAP_OPEN_READONLY, &db, err, sizeof(err)), -EIO,
               "read-only open of a missing database fails");
    tap_is_str(err, "tests/test_store.db: cannot open database: unable to open database file",
               "and says which file");
    tap_is_int(sysmap_open(db_path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)), 0, "create database");

    char *a = report("n1", 500, 0, "cpu A"), *b = report("n2", 500, 0, "cpu A");
    tap_is_int(store(db, a, 100, NULL, err), 0, "store n1");
    tap_is_int(store(db, b, 100, "n2", err), 0, "store n2 authenticated as n2");
    tap_is_int(count("SELECT count(*) FROM data"), 4, "two hosts, same values: 4 data rows");
    tap_is_int(count("SELECT count(*) FROM host_data"), 8, "8 links");
    tap_is_int(store(db, a, 150, NULL, err), 0, "store n1 unchanged");
    tap_is_int(count("SELECT count(*) FROM host_data"), 8, "unchanged report adds no link");
    tap_is_int(count("SELECT last_seen FROM host WHERE name='n1'"), 150, "last_seen moves on");

    char *a2 = report("n1", 900, 0, "cpu A");
    tap_is_int(store(db, a2, 200, NULL, err), 0, "store n1 with more space");
    tap_is_int(count("SELECT count(*) FROM data"), 5, "one new data row");
    tap_is_int(count("SELECT count(*) FROM host_data WHERE valid_to=200"), 1, "old value closed at 200");

    char *b2 = report("n2", 600, 0, "cpu A");
    tap_is_int(store(db, b2, 90, NULL, err), 0, "store n2 with a clock 10 s behind its last report");
    tap_is_int(count("SELECT count(*) FROM host_data WHERE valid_to < valid_from"), 0,
               "no interval ends before it began");
    tap_is_int(count("SELECT count(*) FROM host_data h JOIN host ON host.id=h.host_id"
                     " WHERE name='n2' AND valid_from=100 AND valid_to IS NULL"), 4,
               "the new value starts where the old one did");
    free(b2);

    struct sysmap_deploy_view v;
    tap_is_int(sysmap_deploy_view(db, "n1", 0, &v, err, sizeof(err)), 0, "deploy view n1");
    tap_is_str(v.storage_path, "/local", "path is /local, not / or tmpfs");
    tap_is_int(v.available_bytes, 900, "current available bytes");
    tap_is_int(v.storage_numa_node, 0, "storage NUMA node");
    tap_is_int(v.network_numa_node, 1, "HCA NUMA node");
    tap_is_str(v.network_adapter, "mlx5_0", "network adapter");
    tap_is_int(v.updated, 200, "updated when the storage value changed");
    tap_is_int(sysmap_deploy_view(db, "n1", 170, &v, err, sizeof(err)), 0, "deploy view as of 170");
    tap_is_int(v.available_bytes, 500, "history: 500 bytes at 170");
    tap_is_int(sysmap_deploy_view(db, "n9", 0, &v, err, sizeof(err)), -ENOENT, "unknown host");
    tap_is_str(err, "tests/test_store.db: host n9 is not in the database", "unknown host message");

    char *spin = report("n3", 700, 1, "cpu B");
    tap_is_int(store(db, spin, 100, NULL, err), 0, "store n3 with rotational nvme0n1");
    tap_is_int(sysmap_deploy_view(db, "n3", 0, &v, err, sizeof(err)), 0, "deploy view n3");
    tap_is_int(v.has_storage, 0, "no storage on a rotational disk");

    /* Several hosts in one query: each as its own view says. */
    const char *names[] = { "n3", "n9", "n1", "n2" };
    struct sysmap_deploy_view views[4], one;
    int found[4];
    tap_is_int(sysmap_deploy_views(db, names, 4, 0, views, found, err, sizeof(err)), 0,
               "deploy views of n3, n9, n1, n2");
    tap_ok(found[0] && !found[1] && found[2] && found[3], "n9 alone not found");
    tap_ok(!views[0].has_storage && !views[1].has_storage, "n3 and n9 without storage");
    bool same = true;
    for (int i = 2; i < 4; i++) {
        sysmap_deploy_view(db, names[i], 0, &one, err, sizeof(err));
        same = same && memcmp(&one, &views[i], sizeof(one)) == 0;
    }
    tap_ok(same && views[2].available_bytes == 900, "n1 and n2 as their single views");
    tap_is_int(sysmap_deploy_views(db, names + 2, 1, 170, views, found, err, sizeof(err)), 0,
               "deploy views as of 170");
    tap_is_int(views[0].available_bytes, 500, "history: n1's 500 bytes at 170");

    struct sysmap_capacity cap;
    tap_is_int(sysmap_capacity(db, "n[1-4]", 0, &cap, err, sizeof(err)), 0, "capacity n[1-4]");
    tap_is_int(cap.hosts, 4, "4 hosts");
    tap_is_int(cap.hosts_with_storage, 2, "2 with storage");
    tap_is_int(cap.total_bytes, 1500, "900 + 600 bytes");
    tap_is_int(cap.min_bytes, 600, "smallest 600");
    tap_is_str(cap.without_storage, "n[3-4]", "n3 (rotational) and n4 (unknown) listed");
    free(cap.without_storage);
    tap_is_int(sysmap_capacity(db, "n[1-", 0, &cap, err, sizeof(err)), -EINVAL, "bad hostlist");
    tap_is_str(err, "hostlist \"n[1-\": position 5: expected a digit, found the end",
               "bad hostlist message");

    /* Every host's view in one walk, as each single view. */
    struct walk w = { .db = db };
    tap_is_int(sysmap_deploy_views_all(db, 0, walked, &w, err, sizeof(err)), 0,
               "every host's view in one walk");
    tap_ok(w.hosts == 3 && w.same == 3 && strcmp(w.first, "n1") == 0,
           "n1, n2, n3 in name order, each as its single view (%d hosts, %d agree)", w.hosts,
           w.same);
    w = (struct walk){ .db = db, .stop_after = 1 };
    tap_is_int(sysmap_deploy_views_all(db, 0, walked, &w, err, sizeof(err)), 7,
               "a walk stopped by its callback returns what it said");
    tap_ok(strstr(err, "stopped at n1") != NULL, "and says where (%s)", err);

    /* A reader's data version moves when the writer commits, not otherwise. */
    struct sysmap_db *reader;
    int64_t v1 = 0, v2 = 0, v3 = 0;
    tap_is_int(sysmap_open(db_path, SYSMAP_OPEN_READONLY, &reader, err, sizeof(err)), 0,
               "a second, read-only handle");
    tap_is_int(sysmap_data_version(reader, &v1, err, sizeof(err)), 0, "its data version");
    sysmap_data_version(reader, &v2, err, sizeof(err));
    tap_ok(v1 == v2, "unchanged without a write (%lld)", (long long)v1);
    char *later = report("n2", 1, 1, "zen4");
    tap_is_int(store(db, later, 400, NULL, err), 0, "the writer stores a report");
    sysmap_data_version(reader, &v3, err, sizeof(err));
    tap_ok(v3 != v2, "the reader's version moved (%lld -> %lld)", (long long)v2, (long long)v3);
    free(later);
    sysmap_close(reader);

    /* SQL in a value is data: stored and returned verbatim. */
    char *evil = report("n5", 1, 0, "x'); DROP TABLE data; --\"");
    tap_is_int(store(db, evil, 100, NULL, err), 0, "store a value with SQL in it");
    const char *only_cpu[] = { "cpu" };
    struct sysmap_query q = { .hostlist = "n5", .extractors = only_cpu, .nextractors = 1,
                               };
    char *out = NULL;
    tap_is_int(sysmap_query_json(db, &q, &out, err, sizeof(err)), 0, "query n5 cpu");
    json_t *doc = out ? json_loads(out, 0, NULL) : NULL;
    const char *model = json_string_value(at(doc, "hosts/0/extractors/cpu/value/model"));
    tap_is_str(model, "x'); DROP TABLE data; --\"", "value comes back verbatim");
    tap_ok(count("SELECT count(*) FROM data") > 0, "data table still there");
    json_decref(doc);
    free(out);

    q = (struct sysmap_query){ .hostlist = "n[1,7]", .at = 120 };
    tap_is_int(sysmap_query_json(db, &q, &out, err, sizeof(err)), 0, "query n[1,7] at 120");
    doc = out ? json_loads(out, 0, NULL) : NULL;
    tap_is_int(json_array_size(json_object_get(doc, "hosts")), 1, "one host found");
    tap_is_str(json_string_value(json_array_get(json_object_get(doc, "missing"), 0)), "n7",
               "n7 missing");
    tap_is_int(json_integer_value(at(doc, "hosts/0/extractors/storage/value/mounts/0/available_bytes")),
               500, "as of 120: 500 bytes");
    json_decref(doc);
    free(out);

    malformed(db, "{\"host\":", -EINVAL,
              "report is not valid JSON: line 1 column 8: unexpected token near end of file");
    malformed(db, "[1]", -EINVAL, "report is not a JSON object");
    malformed(db, "{\"extractors\":{}}", -EINVAL, "report has no string \"host\"");
    malformed(db, "{\"host\":\"n1;DROP TABLE host\",\"extractors\":{\"a\":{}}}", -EINVAL,
              "report host \"n1;DROP TABLE host\" is not a valid host name");
    malformed(db, "{\"host\":\"n1\",\"extractors\":{}}", -EINVAL,
              "report for n1 has no non-empty object \"extractors\"");
    malformed(db, "{\"host\":\"n1\",\"extractors\":{\"a'b\":{}}}", -EINVAL,
              "report for n1: extractor name \"a'b\" is not [a-z0-9_]{1,32}");
    malformed(db, "{\"host\":\"n1\",\"extractors\":{\"cpu\":3}}", -EINVAL,
              "report for n1: extractor cpu: value is not an object");
    malformed(db, "{\"host\":\"n1\",\"host\":\"n2\",\"extractors\":{\"cpu\":{}}}", -EINVAL,
              "report is not valid JSON: line 1 column 19: duplicate object key near '\"host\"'");
    tap_is_int(store(db, a, 300, "n2", err), -EPERM, "report for n1 authenticated as n2");
    tap_is_str(err, "report is for host n1 but the upload is authenticated as n2",
               "wrong host message");
    tap_is_int(count("SELECT count(*) FROM host"), 4, "no host added by rejected reports");

    sysmap_close(db);
    free(a);
    free(b);
    free(a2);
    free(spin);
    free(evil);
    unlink(db_path);
    return tap_done();
}
