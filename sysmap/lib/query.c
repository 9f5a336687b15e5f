/* query: reading hosts and their values back, as JSON or as the deployment
 * view and capacity sums the plugin asks for. */
#include "db.h"
#include "hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const db_sql_values_current =
    "SELECT e.name, d.id, d.value, hd.valid_from FROM host_data hd"
    " JOIN extractor e ON e.id=hd.extractor_id JOIN data d ON d.id=hd.data_id"
    " WHERE hd.host_id=?1 AND hd.valid_to IS NULL ORDER BY e.name";
const char *const db_sql_values_at =
    "SELECT e.name, d.id, d.value, hd.valid_from FROM host_data hd"
    " JOIN extractor e ON e.id=hd.extractor_id JOIN data d ON d.id=hd.data_id"
    " WHERE hd.host_id=?1 AND hd.valid_from<=?2 AND (hd.valid_to IS NULL OR hd.valid_to>?2)"
    " ORDER BY e.name";

int db_host_values(struct sysmap_db *db, sqlite3_stmt *st, sqlite3_int64 host_id,
                   int64_t at, db_value_fn fn, void *ctx)
{
    sqlite3_bind_int64(st, 1, host_id);
    if (at)
        sqlite3_bind_int64(st, 2, at);
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
                (const char *)sqlite3_column_text(st, 2), sqlite3_column_int64(st, 3));
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(st);
    return rc;
}

/* Values are shared between hosts, so each distinct one is parsed once per
 * query and referenced from every host that has it. */
struct value_cache {
    json_t **by_id;
    sqlite3_int64 size;
};

static json_t *cached_value(struct value_cache *c, sqlite3_int64 id, const char *text)
{
    if (id < 0)
        return NULL;
    if (id >= c->size) {             /* stored after the query started */
        sqlite3_int64 size = id * 2 + 1;
        json_t **grown = realloc(c->by_id, (size_t)size * sizeof(*grown));
        if (!grown)
            return NULL;
        memset(grown + c->size, 0, (size_t)(size - c->size) * sizeof(*grown));
        c->by_id = grown;
        c->size = size;
    }
    if (!c->by_id[id])               /* the cache holds the reference */
        c->by_id[id] = json_loads(text, JSON_DECODE_ANY, NULL);
    return c->by_id[id];
}

struct host_ctx {
    struct value_cache *cache;
    const struct sysmap_query *q;
    json_t *extractors;              /* name -> {"since", "value"} */
    json_t *storage, *block, *net, *ib;
    sqlite3_int64 storage_since;
};

static int wanted(const struct sysmap_query *q, const char *name)
{
    if (!q || !q->nextractors)
        return 1;
    for (size_t i = 0; i < q->nextractors; i++)
        if (strcmp(q->extractors[i], name) == 0)
            return 1;
    return 0;
}

static int collect_value(void *ctx, const char *extractor, sqlite3_int64 data_id,
                         const char *text, sqlite3_int64 since)
{
    struct host_ctx *h = ctx;
    int deploy_input = !strcmp(extractor, "storage") || !strcmp(extractor, "block") ||
                       !strcmp(extractor, "net") || !strcmp(extractor, "ib");
    if (!wanted(h->q, extractor) && !(h->q && h->q->deploy && deploy_input))
        return 0;
    json_t *v = cached_value(h->cache, data_id, text);
    if (!v)
        return -EBADMSG;
    if (!strcmp(extractor, "storage")) {
        h->storage = v;
        h->storage_since = since;
    }
    else if (!strcmp(extractor, "block"))
        h->block = v;
    else if (!strcmp(extractor, "net"))
        h->net = v;
    else if (!strcmp(extractor, "ib"))
        h->ib = v;
    if (h->extractors)
        json_object_set_new(h->extractors, extractor,
                            json_pack("{sIsO}", "since", (json_int_t)since, "value", v));
    return 0;
}

static json_t *deploy_json(const struct sysmap_deploy_view *v)
{
    json_t *o = json_object();
    if (v->has_storage) {
        json_object_set_new(o, "storage_path", json_string(v->storage_path));
        json_object_set_new(o, "device", json_string(v->device));
        json_object_set_new(o, "fstype", json_string(v->fstype));
        json_object_set_new(o, "available_bytes", json_integer((json_int_t)v->available_bytes));
        json_object_set_new(o, "size_bytes", json_integer((json_int_t)v->size_bytes));
        json_object_set_new(o, "storage_numa_node", v->storage_numa_node >= 0
                            ? json_integer(v->storage_numa_node) : json_null());
        json_object_set_new(o, "updated", json_integer(v->updated));
    } else {
        json_object_set_new(o, "storage_path", json_null());
    }
    json_object_set_new(o, "network_adapter",
                        v->network_adapter[0] ? json_string(v->network_adapter) : json_null());
    json_object_set_new(o, "network_numa_node", v->network_numa_node >= 0
                        ? json_integer(v->network_numa_node) : json_null());
    return o;
}

struct query_run {
    struct sysmap_db *db;
    const struct sysmap_query *q;
    sqlite3_stmt *values;
    struct value_cache cache;
};

static int add_host(struct query_run *r, json_t *hosts, const char *name,
                    sqlite3_int64 id, sqlite3_int64 last_seen, char *err, size_t errlen)
{
    struct host_ctx h = { .cache = &r->cache, .q = r->q };
    if (!r->q->deploy)
        h.extractors = json_object();
    int rc = db_host_values(r->db, r->values, id, r->q->at, collect_value, &h);
    if (rc) {
        json_decref(h.extractors);
        return db_fail(r->db, rc, err, errlen, "cannot read the values of %s", name);
    }
    json_t *o = json_pack("{sssI}", "host", name, "last_seen", (json_int_t)last_seen);
    if (r->q->deploy) {
        struct sysmap_deploy_view v = { 0 };
        snprintf(v.host, sizeof(v.host), "%s", name);
        deploy_compute(h.storage, h.block, h.net, h.ib, &v);
        v.updated = h.storage_since;
        json_object_set_new(o, "deploy", deploy_json(&v));
    } else {
        json_object_set_new(o, "extractors", h.extractors);
    }
    json_array_append_new(hosts, o);
    return 0;
}

static int run_init(struct query_run *r, struct sysmap_db *db, const struct sysmap_query *q,
                    char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->db = db;
    r->q = q;
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT coalesce(max(id), 0) + 1 FROM data", &st, err, errlen);
    if (rc)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW)
        r->cache.size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    r->cache.by_id = calloc((size_t)r->cache.size, sizeof(json_t *));
    if (!r->cache.by_id)
        return db_fail(db, -ENOMEM, err, errlen, "out of memory for %lld values",
                       (long long)r->cache.size);
    return db_prepare(db, q->at ? db_sql_values_at : db_sql_values_current, &r->values,
                      err, errlen);
}

static void run_free(struct query_run *r)
{
    for (sqlite3_int64 i = 0; i < r->cache.size; i++)
        json_decref(r->cache.by_id[i]);
    free(r->cache.by_id);
    sqlite3_finalize(r->values);
}

/* Calls add_host for every host the query names, in the order named (or by
 * name for all hosts); unknown names go to missing. */
static int visit_hosts(struct query_run *r, json_t *hosts, json_t *missing,
                       char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc, step;
    const char *sql = r->q->hostlist
        ? "SELECT id, name, last_seen FROM host WHERE name=?1 AND (?2=0 OR first_seen<=?2)"
        : "SELECT id, name, last_seen FROM host WHERE (?2=0 OR first_seen<=?2) ORDER BY name";
    if ((rc = db_prepare(r->db, sql, &st, err, errlen)))
        return rc;
    sqlite3_bind_int64(st, 2, r->q->at);
    if (!r->q->hostlist) {
        while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW)
            rc = add_host(r, hosts, (const char *)sqlite3_column_text(st, 1),
                          sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
                          err, errlen);
        if (rc == 0 && step != SQLITE_DONE)
            rc = db_fail(r->db, -EIO, err, errlen, "cannot list hosts");
        sqlite3_finalize(st);
        return rc;
    }
    struct hostlist hl = { 0 };
    if ((rc = hostlist_expand(r->q->hostlist, &hl, err, errlen))) {
        sqlite3_finalize(st);
        return rc;
    }
    for (size_t i = 0; rc == 0 && i < hl.count; i++) {
        sqlite3_bind_text(st, 1, hl.names[i], -1, SQLITE_STATIC);
        step = sqlite3_step(st);
        if (step == SQLITE_ROW)
            rc = add_host(r, hosts, hl.names[i], sqlite3_column_int64(st, 0),
                          sqlite3_column_int64(st, 2), err, errlen);
        else if (step == SQLITE_DONE)
            json_array_append_new(missing, json_string(hl.names[i]));
        else
            rc = db_fail(r->db, -EIO, err, errlen, "cannot look up host %s", hl.names[i]);
        sqlite3_reset(st);
    }
    hostlist_free(&hl);
    sqlite3_finalize(st);
    return rc;
}

int sysmap_query_json(struct sysmap_db *db, const struct sysmap_query *q,
                      char **out, char *err, size_t errlen)
{
    struct query_run r;
    json_t *hosts = json_array(), *missing = json_array();
    int rc = run_init(&r, db, q, err, errlen);
    if (rc == 0)
        rc = visit_hosts(&r, hosts, missing, err, errlen);
    if (rc == 0) {
        json_t *doc = json_pack("{soso}", "hosts", hosts, "missing", missing);
        json_object_set_new(doc, "at", q->at ? json_integer(q->at) : json_null());
        hosts = missing = NULL;
        *out = json_dumps(doc, q->compact ? JSON_COMPACT : JSON_INDENT(2));
        json_decref(doc);
        if (!*out)
            rc = db_fail(db, -ENOMEM, err, errlen, "cannot encode the result");
    }
    json_decref(hosts);
    json_decref(missing);
    run_free(&r);
    return rc;
}

/* Keeps the first view of a single-host query run. */
static int view_of(struct sysmap_db *db, struct query_run *r, const char *name,
                   sqlite3_int64 id, struct sysmap_deploy_view *view, char *err, size_t errlen)
{
    struct host_ctx h = { .cache = &r->cache, .q = r->q };
    int rc = db_host_values(db, r->values, id, r->q->at, collect_value, &h);
    if (rc)
        return db_fail(db, rc, err, errlen, "cannot read the values of %s", name);
    memset(view, 0, sizeof(*view));
    snprintf(view->host, sizeof(view->host), "%s", name);
    deploy_compute(h.storage, h.block, h.net, h.ib, view);
    view->updated = h.storage_since;
    return 0;
}

int sysmap_deploy_view(struct sysmap_db *db, const char *hostname, int64_t at,
                       struct sysmap_deploy_view *view, char *err, size_t errlen)
{
    struct sysmap_query q = { .at = at, .deploy = 1 };
    struct query_run r;
    sqlite3_int64 id;
    int rc = run_init(&r, db, &q, err, errlen);
    if (rc == 0) {
        rc = db_host_id(db, hostname, &id, err, errlen);
        if (rc == 0)
            rc = db_fail(db, -ENOENT, err, errlen, "host %s is not in the database", hostname);
        else if (rc == 1)
            rc = view_of(db, &r, hostname, id, view, err, errlen);
    }
    run_free(&r);
    return rc;
}

int sysmap_capacity(struct sysmap_db *db, const char *hostlist, int64_t at,
                    struct sysmap_capacity *cap, char *err, size_t errlen)
{
    memset(cap, 0, sizeof(*cap));
    struct hostlist hl = { 0 }, without = { 0 };
    int rc = hostlist_expand(hostlist, &hl, err, errlen);
    if (rc)
        return rc;
    struct sysmap_query q = { .at = at, .deploy = 1 };
    struct query_run r;
    rc = run_init(&r, db, &q, err, errlen);
    for (size_t i = 0; rc == 0 && i < hl.count; i++) {
        sqlite3_int64 id;
        struct sysmap_deploy_view v;
        int found = db_host_id(db, hl.names[i], &id, err, errlen);
        if (found < 0) {
            rc = found;
            break;
        }
        if (found && (rc = view_of(db, &r, hl.names[i], id, &v, err, errlen)))
            break;
        cap->hosts++;
        if (!found || !v.has_storage) {
            rc = hostlist_push(&without, hl.names[i]);
            continue;
        }
        if (cap->hosts_with_storage == 0 || v.available_bytes < cap->min_bytes)
            cap->min_bytes = v.available_bytes;
        cap->hosts_with_storage++;
        cap->total_bytes += v.available_bytes;
    }
    if (rc == 0 && without.count &&
        !(cap->without_storage = hostlist_compress((const char *const *)without.names,
                                                   without.count)))
        rc = -ENOMEM;
    run_free(&r);
    hostlist_free(&hl);
    hostlist_free(&without);
    return rc;
}
