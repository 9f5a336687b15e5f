/* db: the sqlite side of libsysmap, shared by store.c, query.c and deploy.c.
 *
 * Schema (version 1):
 *   host(id, name UNIQUE, first_seen, last_seen)
 *   extractor(id, name UNIQUE)
 *   data(id, hash, value)          value = canonical JSON text, stored once;
 *                                  hash = XXH64 of value, indexed for lookup
 *   host_data(host_id, extractor_id, data_id, valid_from, valid_to)
 *                                  valid_to NULL = current; a partial unique
 *                                  index keeps one current row per pair */
#ifndef SYSMAP_DB_H
#define SYSMAP_DB_H

#include "sysmap.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>

#define DB_NSTORE 9

struct sysmap_db {
    sqlite3 *sql;
    int writable;
    sqlite3_stmt *store[DB_NSTORE];   /* prepared once, used by sysmap_store */
    char path[4096];
};

/* Formats "path: what: sqlite message" into err and returns code. */
int db_fail(struct sysmap_db *db, int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Prepares sql or fails with a message naming the statement. */
int db_prepare(struct sysmap_db *db, const char *sql, sqlite3_stmt **st,
               char *err, size_t errlen);

/* Finds a host id by name: 1 found, 0 unknown, <0 error. */
int db_host_id(struct sysmap_db *db, const char *name, sqlite3_int64 *id,
               char *err, size_t errlen);

/* The deployment view computed from one host's extractor values (any may be
 * NULL). Lives in deploy.c. */
void deploy_compute(json_t *storage, json_t *block, json_t *net, json_t *ib,
                    struct sysmap_deploy_view *view);

#endif
