/* The database with many synthetic hosts: every distinct value is stored
 * once, and queries over all hosts and one host return what was stored.
 * (bench/sysmap times the same with 10,000 hosts.) */
#include "synth.h"
#include "sysmap.h"
#include "tap.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#define HOSTS 400
#define PROFILES 20

int main(void)
{
    const char *path = "tests/test_synth.db";
    char err[512], name[32];
    struct sysmap_db *db;
    unlink(path);
    tap_is_int(sysmap_open(path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)), 0, "create database");
    int failed = 0;
    sysmap_begin(db, err, sizeof(err));
    for (int i = 0; i < HOSTS; i++) {
        snprintf(name, sizeof(name), "n%04d", i + 1);
        char *r = synth_report(name, (size_t)i % PROFILES);
        failed += !r || sysmap_store(db, r, strlen(r), 1000, NULL, err, sizeof(err)) != 0;
        free(r);
    }
    sysmap_commit(db, err, sizeof(err));
    tap_is_int(failed, 0, "400 reports stored");

    sqlite3 *s;
    sqlite3_stmt *st;
    long long rows = -1, distinct = -1;
    sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL);
    if (sqlite3_prepare_v2(s, "SELECT count(*), count(DISTINCT value) FROM data", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        rows = sqlite3_column_int64(st, 0);
        distinct = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(s);
    tap_is_int(rows, PROFILES * SYNTH_EXTRACTORS, "data rows = profiles x extractors");
    tap_is_int(distinct, rows, "no value stored twice");

    struct sysmap_query q = { 0 };
    char *out = NULL;
    tap_is_int(sysmap_query_json(db, &q, &out, err, sizeof(err)), 0, "query all hosts");
    json_t *doc = out ? json_loads(out, 0, NULL) : NULL;
    tap_is_int(json_array_size(json_object_get(doc, "hosts")), HOSTS, "all 400 hosts returned");
    json_decref(doc);
    free(out);

    q.deploy = 1;
    q.hostlist = "n[0001-0400]";
    tap_is_int(sysmap_query_json(db, &q, &out, err, sizeof(err)), 0, "deploy view of n[0001-0400]");
    doc = out ? json_loads(out, 0, NULL) : NULL;
    json_t *last = json_object_get(json_array_get(json_object_get(doc, "hosts"), HOSTS - 1), "deploy");
    tap_is_int(json_integer_value(json_object_get(last, "available_bytes")),
               synth_local_bytes((HOSTS - 1) % PROFILES), "n0400 gets its profile's /local bytes");
    json_decref(doc);
    free(out);

    struct sysmap_capacity cap;
    tap_is_int(sysmap_capacity(db, "n[0001-0020]", 0, &cap, err, sizeof(err)), 0, "capacity of 20 hosts");
    long long want = 0;
    for (size_t p = 0; p < PROFILES; p++)
        want += synth_local_bytes(p);
    tap_is_int(cap.total_bytes, want, "sum over the 20 profiles");
    free(cap.without_storage);
    sysmap_close(db);
    unlink(path);
    return tap_done();
}
