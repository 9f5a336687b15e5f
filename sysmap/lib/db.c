/* db: opening the database, its schema, and storing reports. */
#include "db.h"
#include "hostlist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SCHEMA_VERSION "1"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS host("
    "  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS extractor(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE IF NOT EXISTS data(id INTEGER PRIMARY KEY, hash INTEGER NOT NULL,"
    "  value TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS data_by_hash ON data(hash);"
    "CREATE TABLE IF NOT EXISTS host_data("
    "  host_id INTEGER NOT NULL REFERENCES host(id),"
    "  extractor_id INTEGER NOT NULL REFERENCES extractor(id),"
    "  data_id INTEGER NOT NULL REFERENCES data(id),"
    "  valid_from INTEGER NOT NULL, valid_to INTEGER);"
    "CREATE UNIQUE INDEX IF NOT EXISTS host_data_current"
    "  ON host_data(host_id, extractor_id) WHERE valid_to IS NULL;"
    "CREATE INDEX IF NOT EXISTS host_data_history"
    "  ON host_data(host_id, extractor_id, valid_from);"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '" SCHEMA_VERSION "');";

int db_fail(struct sysmap_db *db, int code, char *err, size_t errlen, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* sqlite's own message only when its last call failed. */
    int sql = db->sql ? sqlite3_errcode(db->sql) : SQLITE_OK;
    int failed = sql != SQLITE_OK && sql != SQLITE_ROW && sql != SQLITE_DONE;
    if (err && errlen)
        snprintf(err, errlen, "%s: %s%s%s", db->path, what, failed ? ": " : "",
                 failed ? sqlite3_errmsg(db->sql) : "");
    return code;
}

int db_prepare(struct sysmap_db *db, const char *sql, sqlite3_stmt **st,
               char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(db->sql, sql, -1, st, NULL) != SQLITE_OK)
        return db_fail(db, -EIO, err, errlen, "cannot prepare \"%.60s\"", sql);
    return 0;
}

int sysmap_data_version(struct sysmap_db *db, int64_t *version, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "PRAGMA data_version", &st, err, errlen);
    if (rc)
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW)
        *version = sqlite3_column_int64(st, 0);
    else
        rc = db_fail(db, -EIO, err, errlen, "cannot read the data version");
    sqlite3_finalize(st);
    return rc;
}

int sysmap_open(const char *path, int mode, struct sysmap_db **out, char *err, size_t errlen)
{
    struct sysmap_db *db = calloc(1, sizeof(*db));
    if (!db) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    snprintf(db->path, sizeof(db->path), "%s", path);
    int flags = mode == SYSMAP_OPEN_WRITE ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                                          : SQLITE_OPEN_READONLY;
    int rc;
    if (sqlite3_open_v2(path, &db->sql, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        rc = db_fail(db, -EIO, err, errlen, "cannot open database");
        goto fail;
    }
    sqlite3_busy_timeout(db->sql, 10000);
    db->writable = mode == SYSMAP_OPEN_WRITE;
    if (db->writable) {
        /* WAL lets sysquery and the plugin read while the server writes;
         * NORMAL sync is durable across application crashes, which is what
         * a database rebuilt by the next collector run needs. */
        if (sqlite3_exec(db->sql, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                         "PRAGMA foreign_keys=ON;", NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(db->sql, schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
            rc = db_fail(db, -EIO, err, errlen, "cannot create the schema");
            goto fail;
        }
    }
    sqlite3_stmt *st;
    if ((rc = db_prepare(db, "SELECT value FROM meta WHERE key='schema_version'", &st, err, errlen)))
        goto fail;
    int step = sqlite3_step(st);
    const char *version = step == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (!version || strcmp(version, SCHEMA_VERSION) != 0) {
        rc = db_fail(db, -EPROTO, err, errlen, "not a sysmap database of schema version "
                     SCHEMA_VERSION " (found %s)", version ? version : "none");
        sqlite3_finalize(st);
        goto fail;
    }
    sqlite3_finalize(st);
    *out = db;
    return 0;
fail:
    sysmap_close(db);
    return rc;
}

void sysmap_close(struct sysmap_db *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < DB_NSTORE; i++)
        sqlite3_finalize(db->store[i]);
    /* A WAL database can be read by a user without write access to its
     * directory only while the writer keeps the -shm file. The last writer
     * out turns it back into a plain file so the plugin (running as the
     * Slurm user) can read it between runs; this fails harmlessly while
     * another connection is open. */
    if (db->writable)
        sqlite3_exec(db->sql, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    sqlite3_close_v2(db->sql);
    free(db);
}

int sysmap_begin(struct sysmap_db *db, char *err, size_t errlen)
{
    if (sqlite3_exec(db->sql, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(db, -EIO, err, errlen, "cannot begin a transaction");
    return 0;
}

int sysmap_commit(struct sysmap_db *db, char *err, size_t errlen)
{
    if (sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(db, -EIO, err, errlen, "cannot commit");
    return 0;
}

int db_host_id(struct sysmap_db *db, const char *name, sqlite3_int64 *id,
               char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = db_prepare(db, "SELECT id FROM host WHERE name=?1", &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        rc = 1;
    } else if (step == SQLITE_DONE) {
        rc = 0;
    } else {
        rc = db_fail(db, -EIO, err, errlen, "cannot look up host %s", name);
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- storing ---- */

/* Runs st (already bound) to completion; returns the first column of the
 * first row in *id if wanted. 1 = a row, 0 = none, <0 = error. */
static int step_id(sqlite3_stmt *st, sqlite3_int64 *id)
{
    int step = sqlite3_step(st);
    int rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -EIO;
    if (rc == 1 && id)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

enum { HOST_UPSERT, HOST_GET, EXT_INSERT, EXT_GET, DATA_FIND, DATA_INSERT,
       LINK_CURRENT, LINK_CLOSE, LINK_INSERT };

static const char *const store_sql[DB_NSTORE] = {
    "INSERT INTO host(name, first_seen, last_seen) VALUES(?1, ?2, ?2)"
    " ON CONFLICT(name) DO UPDATE SET last_seen=max(last_seen, ?2)",
    "SELECT id FROM host WHERE name=?1",
    "INSERT OR IGNORE INTO extractor(name) VALUES(?1)",
    "SELECT id FROM extractor WHERE name=?1",
    "SELECT id FROM data WHERE hash=?1 AND value=?2",
    "INSERT INTO data(hash, value) VALUES(?1, ?2)",
    "SELECT data_id, valid_from FROM host_data"
    " WHERE host_id=?1 AND extractor_id=?2 AND valid_to IS NULL",
    "UPDATE host_data SET valid_to=?3 WHERE host_id=?1 AND extractor_id=?2 AND valid_to IS NULL",
    "INSERT INTO host_data(host_id, extractor_id, data_id, valid_from) VALUES(?1, ?2, ?3, ?4)",
};


/* Extractor names are plain identifiers so that -e NAME, logs and the JSON
 * keys never need quoting. */
static int valid_extractor_name(const char *name)
{
    size_t n = 0;
    for (; name[n]; n++)
        if (!((name[n] >= 'a' && name[n] <= 'z') || (name[n] >= '0' && name[n] <= '9') ||
              name[n] == '_'))
            return 0;
    return n > 0 && n <= 32;
}

static int store_value(struct sysmap_db *db, sqlite3_stmt **st, sqlite3_int64 host_id,
                       const char *ext, json_t *value, int64_t now, char *err, size_t errlen)
{
    char *text = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!text)
        return db_fail(db, -ENOMEM, err, errlen, "cannot encode the value of %s", ext);
    size_t len = strlen(text);
    sqlite3_int64 hash = (sqlite3_int64)XXH64(text, len, 0);
    sqlite3_int64 ext_id, data_id, current;
    int rc;

    sqlite3_bind_text(st[EXT_INSERT], 1, ext, -1, SQLITE_STATIC);
    if (step_id(st[EXT_INSERT], NULL) < 0)
        goto sql_error;
    sqlite3_bind_text(st[EXT_GET], 1, ext, -1, SQLITE_STATIC);
    if (step_id(st[EXT_GET], &ext_id) != 1)
        goto sql_error;

    sqlite3_bind_int64(st[DATA_FIND], 1, hash);
    sqlite3_bind_text(st[DATA_FIND], 2, text, (int)len, SQLITE_STATIC);
    if ((rc = step_id(st[DATA_FIND], &data_id)) < 0)
        goto sql_error;
    if (rc == 0) {
        sqlite3_bind_int64(st[DATA_INSERT], 1, hash);
        sqlite3_bind_text(st[DATA_INSERT], 2, text, (int)len, SQLITE_STATIC);
        if (step_id(st[DATA_INSERT], NULL) < 0)
            goto sql_error;
        data_id = sqlite3_last_insert_rowid(db->sql);
    }

    sqlite3_bind_int64(st[LINK_CURRENT], 1, host_id);
    sqlite3_bind_int64(st[LINK_CURRENT], 2, ext_id);
    int step = sqlite3_step(st[LINK_CURRENT]);
    sqlite3_int64 since = 0;
    if (step == SQLITE_ROW) {
        current = sqlite3_column_int64(st[LINK_CURRENT], 0);
        since = sqlite3_column_int64(st[LINK_CURRENT], 1);
    }
    sqlite3_reset(st[LINK_CURRENT]);
    sqlite3_clear_bindings(st[LINK_CURRENT]);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        goto sql_error;
    if (step == SQLITE_ROW && current == data_id) {
        free(text);
        return 0;                  /* unchanged: the open interval goes on */
    }
    /* A clock stepped back (or --time in the past) must not end an
     * interval before it began: the new value starts when the old did. */
    if (now < since)
        now = since;
    if (step == SQLITE_ROW) {
        sqlite3_bind_int64(st[LINK_CLOSE], 1, host_id);
        sqlite3_bind_int64(st[LINK_CLOSE], 2, ext_id);
        sqlite3_bind_int64(st[LINK_CLOSE], 3, now);
        if (step_id(st[LINK_CLOSE], NULL) < 0)
            goto sql_error;
    }
    sqlite3_bind_int64(st[LINK_INSERT], 1, host_id);
    sqlite3_bind_int64(st[LINK_INSERT], 2, ext_id);
    sqlite3_bind_int64(st[LINK_INSERT], 3, data_id);
    sqlite3_bind_int64(st[LINK_INSERT], 4, now);
    if (step_id(st[LINK_INSERT], NULL) < 0)
        goto sql_error;
    free(text);
    return 0;
sql_error:
    free(text);
    return db_fail(db, -EIO, err, errlen, "cannot store %s", ext);
}

/* Checks the shape of a report; returns its host name and extractor object. */
static int check_report(json_t *root, const char **host, json_t **extractors,
                        char *err, size_t errlen)
{
    if (!json_is_object(root)) {
        snprintf(err, errlen, "report is not a JSON object");
        return -EINVAL;
    }
    json_t *h = json_object_get(root, "host");
    if (!json_is_string(h)) {
        snprintf(err, errlen, "report has no string \"host\"");
        return -EINVAL;
    }
    if (!hostlist_valid_name(json_string_value(h))) {
        snprintf(err, errlen, "report host \"%.80s\" is not a valid host name",
                 json_string_value(h));
        return -EINVAL;
    }
    json_t *ex = json_object_get(root, "extractors");
    if (!json_is_object(ex) || json_object_size(ex) == 0) {
        snprintf(err, errlen, "report for %s has no non-empty object \"extractors\"",
                 json_string_value(h));
        return -EINVAL;
    }
    const char *name;
    json_t *value;
    json_object_foreach(ex, name, value) {
        if (!valid_extractor_name(name)) {
            snprintf(err, errlen, "report for %s: extractor name \"%.40s\" is not"
                     " [a-z0-9_]{1,32}", json_string_value(h), name);
            return -EINVAL;
        }
        if (!json_is_object(value)) {
            snprintf(err, errlen, "report for %s: extractor %s: value is not an object",
                     json_string_value(h), name);
            return -EINVAL;
        }
    }
    *host = json_string_value(h);
    *extractors = ex;
    return 0;
}

int sysmap_store(struct sysmap_db *db, const char *json, size_t len, int64_t now,
                 const char *expect_host, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "report is not valid JSON: line %d column %d: %s",
                 jerr.line, jerr.column, jerr.text);
        return -EINVAL;
    }
    const char *host;
    json_t *extractors;
    int rc = check_report(root, &host, &extractors, err, errlen);
    if (rc)
        goto out;
    if (expect_host && strcmp(host, expect_host) != 0) {
        snprintf(err, errlen, "report is for host %s but the upload is authenticated as %s",
                 host, expect_host);
        rc = -EPERM;
        goto out;
    }

    sqlite3_stmt **st = db->store;
    for (size_t i = 0; i < DB_NSTORE; i++)
        if (!st[i] && (rc = db_prepare(db, store_sql[i], &st[i], err, errlen)))
            goto out;
    /* A savepoint nests inside sysmap_begin() and is a transaction alone. */
    if (sqlite3_exec(db->sql, "SAVEPOINT store", NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_fail(db, -EIO, err, errlen, "cannot start storing %s", host);
        goto out;
    }
    sqlite3_int64 host_id = 0;
    sqlite3_bind_text(st[HOST_UPSERT], 1, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st[HOST_UPSERT], 2, now);
    sqlite3_bind_text(st[HOST_GET], 1, host, -1, SQLITE_STATIC);
    if (step_id(st[HOST_UPSERT], NULL) < 0 || step_id(st[HOST_GET], &host_id) != 1)
        rc = db_fail(db, -EIO, err, errlen, "cannot store host %s", host);
    const char *name;
    json_t *value;
    json_object_foreach(extractors, name, value) {
        if (rc)
            break;
        rc = store_value(db, st, host_id, name, value, now, err, errlen);
    }
    if (rc) {
        sqlite3_exec(db->sql, "ROLLBACK TO store; RELEASE store", NULL, NULL, NULL);
    } else if (sqlite3_exec(db->sql, "RELEASE store", NULL, NULL, NULL) != SQLITE_OK) {
        rc = db_fail(db, -EIO, err, errlen, "cannot commit the report of %s", host);
        sqlite3_exec(db->sql, "ROLLBACK TO store; RELEASE store", NULL, NULL, NULL);
    }
out:
    json_decref(root);
    return rc;
}
