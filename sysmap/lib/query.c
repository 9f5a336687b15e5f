/* query: reading hosts and their values back, as JSON or as the deployment
 * view and capacity sums the plugin asks for.
 *
 * Speed comes from the data model: hosts share values, so a query reads each
 * distinct value's text once (cache by data id) and per host only walks the
 * small host_data index. Compact output copies the stored canonical JSON
 * text as it is; only --pretty and the deployment view parse values. */
#include "db.h"
#include "hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static const char sql_links_current[] =
    "SELECT e.name, hd.data_id, hd.valid_from FROM host_data hd"
    " JOIN extractor e ON e.id=hd.extractor_id"
    " WHERE hd.host_id=?1 AND hd.valid_to IS NULL ORDER BY e.name";
static const char sql_links_at[] =
    "SELECT e.name, hd.data_id, hd.valid_from FROM host_data hd"
    " JOIN extractor e ON e.id=hd.extractor_id"
    " WHERE hd.host_id=?1 AND hd.valid_from<=?2 AND (hd.valid_to IS NULL OR hd.valid_to>?2)"
    " ORDER BY e.name";

/* ---- output text ---- */

static void sb_add(struct strbuf *b, const char *s, size_t n)
{
    strbuf_append(b, s, n);
}

static void sb_str(struct strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_int(struct strbuf *b, long long v)
{
    char num[32];
    sb_add(b, num, (size_t)snprintf(num, sizeof(num), "%lld", v));
}

/* A JSON string literal. */
static void sb_quoted(struct strbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = { '\\', (char)c };
            sb_add(b, esc, 2);
        } else if (c < 0x20) {
            char esc[8];
            sb_add(b, esc, (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c));
        } else {
            sb_add(b, s, 1);
        }
    }
    sb_add(b, "\"", 1);
}

/* ---- values, each read and parsed at most once per query ---- */

struct cached {
    char *text;
    json_t *json;
};

struct query_run {
    struct sysmap_db *db;
    const struct sysmap_query *q;
    sqlite3_stmt *links, *fetch;
    struct cached *by_id;
    sqlite3_int64 size;
    struct strbuf out;                 /* compact output */
    int raw;                         /* 1: write out directly */
    size_t nhosts;                   /* hosts written to out */
    int own_txn;                     /* 1: the run's read transaction, ended by run_free */
};

static struct cached *cached(struct query_run *r, sqlite3_int64 id)
{
    if (id < 0)
        return NULL;
    if (id >= r->size) {             /* stored after the query started */
        sqlite3_int64 size = id * 2 + 1;
        struct cached *grown = realloc(r->by_id, (size_t)size * sizeof(*grown));
        if (!grown)
            return NULL;
        memset(grown + r->size, 0, (size_t)(size - r->size) * sizeof(*grown));
        r->by_id = grown;
        r->size = size;
    }
    struct cached *c = &r->by_id[id];
    if (!c->text) {
        sqlite3_bind_int64(r->fetch, 1, id);
        if (sqlite3_step(r->fetch) == SQLITE_ROW)
            c->text = strdup((const char *)sqlite3_column_text(r->fetch, 0));
        sqlite3_reset(r->fetch);
    }
    return c->text ? c : NULL;
}

static json_t *cached_json(struct cached *c)
{
    if (!c->json)                    /* the cache holds the reference */
        c->json = json_loads(c->text, JSON_DECODE_ANY, NULL);
    return c->json;
}

struct host_ctx {
    struct query_run *run;
    json_t *extractors;              /* name -> {"since", "value"} */
    int raw_count;                   /* values written to run->out */
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

static int collect_value(struct host_ctx *h, const char *extractor, sqlite3_int64 data_id,
                         sqlite3_int64 since)
{
    const struct sysmap_query *q = h->run->q;
    int deploy_input = !strcmp(extractor, "storage") || !strcmp(extractor, "block") ||
                       !strcmp(extractor, "net") || !strcmp(extractor, "ib");
    if (q->deploy ? !deploy_input : !wanted(q, extractor))
        return 0;
    struct cached *c = cached(h->run, data_id);
    if (!c)
        return -EIO;
    if (h->run->raw) {
        struct strbuf *b = &h->run->out;
        sb_str(b, h->raw_count++ ? ",\"" : "\"");
        sb_str(b, extractor);
        sb_str(b, "\":{\"since\":");
        sb_int(b, since);
        sb_str(b, ",\"value\":");
        sb_str(b, c->text);
        sb_str(b, "}");
        return 0;
    }
    json_t *v = cached_json(c);
    if (!v)
        return -EBADMSG;
    if (!strcmp(extractor, "storage")) {
        h->storage = v;
        h->storage_since = since;
    } else if (!strcmp(extractor, "block")) {
        h->block = v;
    } else if (!strcmp(extractor, "net")) {
        h->net = v;
    } else if (!strcmp(extractor, "ib")) {
        h->ib = v;
    }
    if (h->extractors)
        json_object_set_new(h->extractors, extractor,
                            json_pack("{sIsO}", "since", (json_int_t)since, "value", v));
    return 0;
}

/* Walks one host's links (current, or as of q->at). */
static int host_values(struct query_run *r, sqlite3_int64 host_id, struct host_ctx *h)
{
    sqlite3_bind_int64(r->links, 1, host_id);
    if (r->q->at)
        sqlite3_bind_int64(r->links, 2, r->q->at);
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(r->links)) == SQLITE_ROW)
        rc = collect_value(h, (const char *)sqlite3_column_text(r->links, 0),
                           sqlite3_column_int64(r->links, 1), sqlite3_column_int64(r->links, 2));
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_reset(r->links);
    return rc;
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

static int add_host(struct query_run *r, json_t *hosts, const char *name,
                    sqlite3_int64 id, sqlite3_int64 last_seen, char *err, size_t errlen)
{
    struct host_ctx h = { .run = r };
    if (r->raw) {
        sb_str(&r->out, r->nhosts++ ? ",{\"host\":" : "{\"host\":");
        sb_quoted(&r->out, name);
        sb_str(&r->out, ",\"last_seen\":");
        sb_int(&r->out, last_seen);
        sb_str(&r->out, ",\"extractors\":{");
    } else if (!r->q->deploy) {
        h.extractors = json_object();
    }
    int rc = host_values(r, id, &h);
    if (rc) {
        json_decref(h.extractors);
        return db_fail(r->db, rc, err, errlen, "cannot read the values of %s", name);
    }
    if (r->raw) {
        sb_str(&r->out, "}}");
        return 0;
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
    r->raw = !q->pretty && !q->deploy;
    /* One read transaction for the whole run: a consistent snapshot, and
     * the file locked once, not for every statement of every host (on
     * 10,000 hosts that locking, fcntl and stat calls, was most of the
     * time). Inside a caller's transaction, that one is used. */
    if (sqlite3_get_autocommit(db->sql)) {
        if (sqlite3_exec(db->sql, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
            return db_fail(db, -EIO, err, errlen, "cannot begin a read transaction");
        r->own_txn = 1;
    }
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT coalesce(max(id), 0) + 1 FROM data", &st, err, errlen);
    if (rc)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW)
        r->size = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    r->by_id = calloc((size_t)r->size, sizeof(*r->by_id));
    if (!r->by_id)
        return db_fail(db, -ENOMEM, err, errlen, "out of memory for %lld values",
                       (long long)r->size);
    if ((rc = db_prepare(db, "SELECT value FROM data WHERE id=?1", &r->fetch, err, errlen)))
        return rc;
    return db_prepare(db, q->at ? sql_links_at : sql_links_current, &r->links, err, errlen);
}

static void run_free(struct query_run *r)
{
    for (sqlite3_int64 i = 0; i < r->size; i++) {
        free(r->by_id[i].text);
        json_decref(r->by_id[i].json);
    }
    free(r->by_id);
    free(r->out.data);
    sqlite3_finalize(r->links);
    sqlite3_finalize(r->fetch);
    /* Only read: ending it cannot lose anything; a failure is sqlite's to log. */
    if (r->own_txn)
        sqlite3_exec(r->db->sql, "COMMIT", NULL, NULL, NULL);
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

/* The compact document, written around the host objects add_host wrote. */
static char *finish_raw(struct query_run *r, json_t *missing)
{
    sb_str(&r->out, "],\"missing\":[");
    size_t i;
    json_t *name;
    json_array_foreach(missing, i, name) {
        if (i)
            sb_str(&r->out, ",");
        sb_quoted(&r->out, json_string_value(name));
    }
    sb_str(&r->out, "],\"at\":");
    if (r->q->at)
        sb_int(&r->out, r->q->at);
    else
        sb_str(&r->out, "null");
    sb_str(&r->out, "}");
    return strbuf_take(&r->out);
}

/* A misspelt -e NAME would otherwise give hosts without values. */
static int check_extractor_names(struct sysmap_db *db, const struct sysmap_query *q,
                                 char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT 1 FROM extractor WHERE name=?1", &st, err, errlen);
    for (size_t i = 0; rc == 0 && i < q->nextractors; i++) {
        sqlite3_bind_text(st, 1, q->extractors[i], -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE)
            rc = db_fail(db, -ENOENT, err, errlen, "no host has reported extractor \"%s\"",
                         q->extractors[i]);
        else if (step != SQLITE_ROW)
            rc = db_fail(db, -EIO, err, errlen, "cannot look up extractor %s", q->extractors[i]);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int sysmap_query_json(struct sysmap_db *db, const struct sysmap_query *q,
                      char **out, char *err, size_t errlen)
{
    int rc = check_extractor_names(db, q, err, errlen);
    if (rc)
        return rc;
    struct query_run r;
    json_t *hosts = json_array(), *missing = json_array();
    rc = run_init(&r, db, q, err, errlen);
    if (rc == 0 && r.raw)
        sb_str(&r.out, "{\"hosts\":[");
    if (rc == 0)
        rc = visit_hosts(&r, hosts, missing, err, errlen);
    if (rc == 0 && r.raw) {
        if (!(*out = finish_raw(&r, missing)))
            rc = db_fail(db, -ENOMEM, err, errlen, "out of memory for the result");
    } else if (rc == 0) {
        json_t *doc = json_pack("{sOsO}", "hosts", hosts, "missing", missing);
        json_object_set_new(doc, "at", q->at ? json_integer(q->at) : json_null());
        *out = json_dumps(doc, q->pretty ? JSON_INDENT(2) : JSON_COMPACT);
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
    struct host_ctx h = { .run = r };
    int rc = host_values(r, id, &h);
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

/* A query run's host lookup, prepared once: a host list of 10,000 names
 * prepared it 10,000 times (db_host_id). 1 found, 0 unknown, or -errno. */
static int lookup_host(struct sysmap_db *db, sqlite3_stmt *st, const char *name,
                       sqlite3_int64 *id, char *err, size_t errlen)
{
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st), rc = 0;
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        rc = 1;
    } else if (step != SQLITE_DONE) {
        rc = db_fail(db, -EIO, err, errlen, "cannot look up host %s", name);
    }
    sqlite3_reset(st);
    return rc;
}

int sysmap_deploy_views(struct sysmap_db *db, const char *const *names, size_t n, int64_t at,
                        struct sysmap_deploy_view *views, int *found, char *err, size_t errlen)
{
    struct sysmap_query q = { .at = at, .deploy = 1 };
    struct query_run r;
    sqlite3_stmt *host = NULL;
    int rc = run_init(&r, db, &q, err, errlen);
    if (rc == 0)
        rc = db_prepare(db, "SELECT id FROM host WHERE name=?1", &host, err, errlen);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sqlite3_int64 id;
        int known = lookup_host(db, host, names[i], &id, err, errlen);
        if (known < 0) {
            rc = known;
            break;
        }
        found[i] = known;
        if (known)
            rc = view_of(db, &r, names[i], id, &views[i], err, errlen);
        else
            memset(&views[i], 0, sizeof(views[i]));
    }
    sqlite3_finalize(host);
    run_free(&r);
    return rc;
}

int sysmap_deploy_views_all(struct sysmap_db *db, int64_t at,
                            int (*each)(const struct sysmap_deploy_view *view, void *arg),
                            void *arg, char *err, size_t errlen)
{
    struct sysmap_query q = { .at = at, .deploy = 1 };
    struct query_run r;
    sqlite3_stmt *hosts = NULL;
    int rc = run_init(&r, db, &q, err, errlen), step = SQLITE_DONE;
    if (rc == 0)
        rc = db_prepare(db, "SELECT id, name FROM host WHERE (?1=0 OR first_seen<=?1) "
                        "ORDER BY name", &hosts, err, errlen);
    if (rc == 0)
        sqlite3_bind_int64(hosts, 1, at);
    struct sysmap_deploy_view *v = rc == 0 ? malloc(sizeof(*v)) : NULL;
    if (rc == 0 && !v)
        rc = db_fail(db, -ENOMEM, err, errlen, "out of memory for a view");
    while (rc == 0 && (step = sqlite3_step(hosts)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(hosts, 1);
        if ((rc = view_of(db, &r, name, sqlite3_column_int64(hosts, 0), v, err, errlen)) == 0 &&
            (rc = each(v, arg)) != 0 && err && errlen)
            snprintf(err, errlen, "%s: the walk of every host's view stopped at %s (%d)",
                     db->path, name, rc);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = db_fail(db, -EIO, err, errlen, "cannot list hosts");
    free(v);
    sqlite3_finalize(hosts);
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
    sqlite3_stmt *host = NULL;
    rc = run_init(&r, db, &q, err, errlen);
    if (rc == 0)
        rc = db_prepare(db, "SELECT id FROM host WHERE name=?1", &host, err, errlen);
    for (size_t i = 0; rc == 0 && i < hl.count; i++) {
        sqlite3_int64 id;
        struct sysmap_deploy_view v;
        int found = lookup_host(db, host, hl.names[i], &id, err, errlen);
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
    sqlite3_finalize(host);
    run_free(&r);
    hostlist_free(&hl);
    hostlist_free(&without);
    return rc;
}
