/* meta_store: the metadata records of the paths this server owns, and the
 * inline data of small files, in RocksDB (meta.c answers the requests on
 * them; batch.c writes and reads many at once through server.h's meta_*).
 *
 * The key of "/a/b" is "/a" NUL "b": its parent, a NUL, its name. So the
 * entries of one directory are exactly the keys starting with "dir" NUL, and
 * listing a directory is one prefix scan without touching grandchildren. The
 * write-ahead log is off: the file system dies with the job anyway. */
#include "meta_store.h"

#include <errno.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "log.h"

/* Directories known to exist, for the parent check of creates: most
 * creates go to a directory checked a moment ago. An entry holds the hash
 * of the directory's key and the epoch it was seen in; removing any
 * directory starts a new epoch, which forgets them all at once (a record
 * stops being a directory only by being removed). */
#define DIR_CACHE_SIZE 4096

struct dir_cache_entry {
    _Atomic uint64_t hash, epoch;
};

struct meta_store {
    _Atomic uint64_t dir_epoch;
    struct dir_cache_entry dirs[DIR_CACHE_SIZE];
    rocksdb_t *db;
    rocksdb_column_family_handle_t *cf;   /* the default one, for batched lookups */
    rocksdb_options_t *options;
    rocksdb_writeoptions_t *wopts;
    rocksdb_readoptions_t *ropts;
    rocksdb_readoptions_t *ropts_once;   /* data a copier reads once: not cached */
};

int meta_open(struct server *srv, const char *dir, char *err, size_t errlen)
{
    struct meta_store *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->options = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(m->options, 1);
    /* A fresh root's database must be new; a kept root's is reopened. */
    rocksdb_options_set_error_if_exists(m->options, !srv->keep_root);
    rocksdb_options_set_info_log_level(m->options, 4 /* HEADER_LEVEL: quiet */);
    rocksdb_options_set_keep_log_file_num(m->options, 1);
    rocksdb_options_set_max_background_jobs(m->options, 1);
    if (srv->write_buffer) {
        /* Sized to the server's storage (instance_space()): a flush writes
         * one buffer, a compaction at most 8 before it frees its inputs,
         * which the headroom kept free covers. */
        uint64_t wb = srv->write_buffer;
        rocksdb_options_set_write_buffer_size(m->options, wb);
        rocksdb_options_set_target_file_size_base(m->options, wb);
        rocksdb_options_set_max_bytes_for_level_base(m->options, 4 * wb);
        rocksdb_options_set_max_compaction_bytes(m->options, 8 * wb);
    }
    /* A bloom filter over whole keys in the memtable: a lookup of a path
     * that does not exist (every create checks) skips the skip list. */
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(m->options, 0.05);
    rocksdb_options_set_memtable_whole_key_filtering(m->options, 1);
    /* Bloom filters in the table files too: once memtables are flushed
     * (inline data of many small files fills them fast), every create's
     * lookup of a path or data key that does not exist yet would otherwise
     * search each level-0 file. */
    rocksdb_block_based_table_options_t *table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom_full(10));
    rocksdb_options_set_block_based_table_factory(m->options, table);
    rocksdb_block_based_options_destroy(table);
    m->wopts = rocksdb_writeoptions_create();
    /* A job's metadata dies with its server, so it needs no log; a kept
     * root's must survive the server's crash (the page cache has it). */
    rocksdb_writeoptions_disable_WAL(m->wopts, !srv->keep_root);
    m->ropts = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(m->ropts, 0);   /* ephemeral data */
    m->ropts_once = rocksdb_readoptions_create();
    rocksdb_readoptions_set_verify_checksums(m->ropts_once, 0);
    rocksdb_readoptions_set_fill_cache(m->ropts_once, 0);
    char *rerr = NULL;
    /* Opened by column family only to hold the default family's handle,
     * which the batched lookups need. */
    const char *cf_name = "default";
    const rocksdb_options_t *cf_options = m->options;
    m->db = rocksdb_open_column_families(m->options, dir, 1, &cf_name, &cf_options, &m->cf,
                                         &rerr);
    if (rerr) {
        snprintf(err, errlen, "cannot open RocksDB in %s: %s", dir, rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    srv->meta = m;
    return 0;
}

void meta_close(struct server *srv)
{
    struct meta_store *m = srv->meta;
    if (!m)
        return;
    rocksdb_column_family_handle_destroy(m->cf);
    rocksdb_close(m->db);
    srv->meta = NULL;
}

/* Checks a path as clients send it (normalised, absolute, not "/") and
 * writes its key. Returns the key length or -EINVAL. */
int path_key(const char *path, char key[KEY_MAX])
{
    size_t len = strlen(path);
    if (path[0] != '/' || len < 2 || len >= FS_PATH_MAX || path[len - 1] == '/')
        return -EINVAL;
    for (const char *c = path; *c; c++) {
        if (*c != '/')
            continue;
        const char *n = c + 1;
        if (*n == '/' || (n[0] == '.' && (n[1] == '/' || n[1] == '\0')) ||
            (n[0] == '.' && n[1] == '.' && (n[2] == '/' || n[2] == '\0')))
            return -EINVAL;
    }
    const char *slash = strrchr(path, '/');
    size_t plen = slash == path ? 1 : (size_t)(slash - path);
    memcpy(key, path, plen);
    key[plen] = '\0';
    memcpy(key + plen + 1, slash + 1, len - (size_t)(slash - path));
    return (int)(plen + 1 + len - (size_t)(slash - path) - 1);
}

pthread_mutex_t *key_lock(struct server *srv, const char *key, int klen)
{
    return &srv->record_locks[hash_bytes(key, (size_t)klen) % SERVER_STRIPES];
}

/* A stored record's value decoded into rec; false if it is not one. */
static bool record_decode(const char *val, size_t vlen, struct fs_record *rec)
{
    struct rpc_reader r;
    rpc_reader_init(&r, val, vlen);
    fs_record_get(&r, rec);
    return rpc_reader_done(&r);
}

int get_record(struct server *srv, const char *key, int klen, struct fs_record *rec)
{
    char *rerr = NULL;
    /* Pinned: the value is read in place, without a copy into a malloc'd
     * buffer. */
    rocksdb_pinnableslice_t *v =
        rocksdb_get_pinned(srv->meta->db, srv->meta->ropts, key, (size_t)klen, &rerr);
    if (rerr) {
        log_error("rocksdb get: %s", rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    if (!v)
        return -ENOENT;
    size_t vlen;
    const char *val = rocksdb_pinnableslice_value(v, &vlen);
    bool ok = record_decode(val, vlen, rec);
    rocksdb_pinnableslice_destroy(v);
    if (!ok) {
        log_error("corrupt record of %zu bytes under key '%s'", vlen, key);
        return -EIO;
    }
    return 0;
}

int put_record(struct server *srv, const char *key, int klen, const struct fs_record *rec)
{
    if (quota_room(srv, (uint64_t)klen + sizeof(*rec)) < 0)
        return -ENOSPC;
    uint8_t buf[FS_RECORD_SIZE];
    struct rpc_writer w;
    rpc_writer_init(&w, buf, sizeof(buf));
    fs_record_put(&w, rec);
    char *rerr = NULL;
    rocksdb_put(srv->meta->db, srv->meta->wopts, key, (size_t)klen, (const char *)w.data,
                w.len, &rerr);
    rpc_writer_free(&w);
    if (rerr) {
        log_error("rocksdb put: %s", rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return 0;
}

int del_record(struct server *srv, const char *key, int klen)
{
    char *rerr = NULL;
    rocksdb_delete(srv->meta->db, srv->meta->wopts, key, (size_t)klen, &rerr);
    if (rerr) {
        log_error("rocksdb delete: %s", rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return 0;
}

/* Inline data (see chunks.c) lives under '#' and the 8 bytes of the data
 * key. Path keys all start with '/', so the two never meet and a LIST scan
 * never sees inline data. */
#define BLOB_KEY_LEN 9

static void blob_key(uint64_t data_key, char key[BLOB_KEY_LEN])
{
    key[0] = '#';
    for (int i = 0; i < 8; i++)
        key[1 + i] = (char)(data_key >> (56 - 8 * i));
}

int meta_blob_get(struct server *srv, uint64_t data_key, void *buf, size_t cap)
{
    char key[BLOB_KEY_LEN], *rerr = NULL;
    blob_key(data_key, key);
    rocksdb_pinnableslice_t *v =
        rocksdb_get_pinned(srv->meta->db, srv->meta->ropts, key, sizeof(key), &rerr);
    if (rerr) {
        log_error("rocksdb get of inline data %016llx: %s", (unsigned long long)data_key, rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    if (!v)
        return -ENOENT;
    size_t vlen;
    const char *val = rocksdb_pinnableslice_value(v, &vlen);
    int rc = (int)vlen;
    if (vlen > cap) {
        log_error("inline data %016llx of %zu bytes, more than the %zu allowed",
                  (unsigned long long)data_key, vlen, cap);
        rc = -EIO;
    } else {
        memcpy(buf, val, vlen);
    }
    rocksdb_pinnableslice_destroy(v);
    return rc;
}

int meta_blob_put(struct server *srv, uint64_t data_key, const void *data, size_t len)
{
    if (quota_room(srv, len + 16) < 0)
        return -ENOSPC;
    char key[BLOB_KEY_LEN], *rerr = NULL;
    blob_key(data_key, key);
    rocksdb_put(srv->meta->db, srv->meta->wopts, key, sizeof(key), data, len, &rerr);
    if (rerr) {
        log_error("rocksdb put of inline data %016llx: %s", (unsigned long long)data_key, rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return 0;
}

int meta_blob_del(struct server *srv, uint64_t data_key)
{
    char key[BLOB_KEY_LEN], *rerr = NULL;
    blob_key(data_key, key);
    rocksdb_delete(srv->meta->db, srv->meta->wopts, key, sizeof(key), &rerr);
    if (rerr) {
        log_error("rocksdb delete of inline data %016llx: %s", (unsigned long long)data_key,
                  rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return 0;
}

/* The parent of path must be a directory: its record is on this server
 * (the client said so with FS_CHECK_PARENT) unless it is "/". */
int check_parent(struct server *srv, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == path)
        return 0;
    char parent[FS_PATH_MAX], key[KEY_MAX];
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    int klen = path_key(parent, key);
    if (klen < 0)
        return klen;
    struct meta_store *m = srv->meta;
    uint64_t h = hash_bytes(key, (size_t)klen) | 1;   /* 0 marks an empty entry */
    struct dir_cache_entry *e = &m->dirs[h % DIR_CACHE_SIZE];
    uint64_t epoch = atomic_load(&m->dir_epoch);
    if (atomic_load(&e->hash) == h && atomic_load(&e->epoch) == epoch)
        return 0;
    struct fs_record rec;
    int rc = get_record(srv, key, klen, &rec);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(rec.mode))
        return -ENOTDIR;
    /* The epoch read before the lookup: a removal since makes it stale. */
    atomic_store(&e->hash, h);
    atomic_store(&e->epoch, epoch);
    return 0;
}

/* A directory record was removed: forget every cached directory. */
void dirs_forget(struct server *srv)
{
    atomic_fetch_add(&srv->meta->dir_epoch, 1);
}

int meta_scan_dir(struct server *srv, const char *dir, const char *after, meta_scan_fn fn,
                  void *arg)
{
    char key[KEY_MAX];
    if (strcmp(dir, "/") != 0 && path_key(dir, key) < 0)
        return -EINVAL;
    size_t dlen = strlen(dir), alen = strlen(after);
    char prefix[KEY_MAX + FS_PATH_MAX];
    if (dlen + 1 + alen >= sizeof(prefix))
        return -EINVAL;
    memcpy(prefix, dir, dlen + 1);      /* the NUL is the separator */
    memcpy(prefix + dlen + 1, after, alen);
    rocksdb_iterator_t *it = rocksdb_create_iterator(srv->meta->db, srv->meta->ropts);
    rocksdb_iter_seek(it, prefix, dlen + 1 + alen);
    int rc = 0;
    for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t klen, vlen;
        const char *k = rocksdb_iter_key(it, &klen);
        if (klen <= dlen + 1 || memcmp(k, prefix, dlen + 1) != 0)
            break;
        const char *name = k + dlen + 1;
        size_t nlen = klen - dlen - 1;
        if (alen && nlen == alen && memcmp(name, after, alen) == 0)
            continue;
        const char *v = rocksdb_iter_value(it, &vlen);
        struct fs_record rec;
        if (!record_decode(v, vlen, &rec) || nlen >= FS_PATH_MAX)
            continue;
        char nbuf[FS_PATH_MAX];
        memcpy(nbuf, name, nlen);
        nbuf[nlen] = '\0';
        if ((rc = fn(arg, nbuf, &rec)) != 0)
            break;
    }
    char *rerr = NULL;
    rocksdb_iter_get_error(it, &rerr);
    rocksdb_iter_destroy(it);
    if (rerr) {
        log_error("rocksdb list %s: %s", dir, rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return rc;
}

/* ---- For batch.c: many records (and their inline data) in one RocksDB
 * write batch. The lock and key rules are the ones above. ---- */

_Static_assert(KEY_MAX == META_KEY_MAX, "META_KEY_MAX must match meta_store.h's key length");

int meta_path_key(const char *path, char key[META_KEY_MAX])
{
    return path_key(path, key);
}

unsigned meta_record_stripe(struct server *srv, const char *key, int klen)
{
    return (unsigned)(key_lock(srv, key, klen) - srv->record_locks);
}

int meta_check_parent(struct server *srv, const char *path)
{
    return check_parent(srv, path);
}

struct meta_batch *meta_batch_new(void)
{
    return (struct meta_batch *)rocksdb_writebatch_create();
}

void meta_batch_put_record(struct meta_batch *b, const char *key, int klen,
                           const struct fs_record *rec)
{
    uint8_t buf[FS_RECORD_SIZE];
    struct rpc_writer w;
    rpc_writer_init(&w, buf, sizeof(buf));
    fs_record_put(&w, rec);
    rocksdb_writebatch_put((rocksdb_writebatch_t *)b, key, (size_t)klen, (const char *)w.data,
                           w.len);
    rpc_writer_free(&w);
}

void meta_batch_put_blob(struct meta_batch *b, uint64_t data_key, const void *data, size_t len)
{
    char key[BLOB_KEY_LEN];
    blob_key(data_key, key);
    rocksdb_writebatch_put((rocksdb_writebatch_t *)b, key, sizeof(key), data, len);
}

int meta_batch_commit(struct server *srv, struct meta_batch *b)
{
    size_t size = 0;
    rocksdb_writebatch_data((rocksdb_writebatch_t *)b, &size);
    if (quota_room(srv, size) < 0)
        return -ENOSPC;
    char *rerr = NULL;
    rocksdb_write(srv->meta->db, srv->meta->wopts, (rocksdb_writebatch_t *)b, &rerr);
    if (rerr) {
        log_error("rocksdb write of a batch: %s", rerr);
        rocksdb_free(rerr);
        return -EIO;
    }
    return 0;
}

void meta_batch_free(struct meta_batch *b)
{
    if (b)
        rocksdb_writebatch_destroy((rocksdb_writebatch_t *)b);
}

/* ---- Many lookups at once, for READ_BATCH. RocksDB's batched MultiGet
 * sorts the keys and finds all the keys of one table block with one block
 * lookup: the records of one directory's files sit side by side, and so do
 * the inline data of files one client created in a row. ---- */

struct meta_values {
    size_t n;
    rocksdb_pinnableslice_t **vals;
    char **errs;
    char (*blob_keys)[BLOB_KEY_LEN];
};

static struct meta_values *get_many(struct server *srv, const rocksdb_readoptions_t *ropts,
                                    size_t n, const char *const *keys, const size_t *klens,
                                    struct meta_values *v)
{
    v->n = n;
    v->vals = calloc(n ? n : 1, sizeof(*v->vals));
    v->errs = calloc(n ? n : 1, sizeof(*v->errs));
    if (!v->vals || !v->errs) {
        meta_values_free(v);
        return NULL;
    }
    if (n)
        rocksdb_batched_multi_get_cf(srv->meta->db, ropts, srv->meta->cf, n, keys,
                                     klens, v->vals, v->errs, 0);
    return v;
}

struct meta_values *meta_get_records(struct server *srv, size_t n, const char *const *keys,
                                     const size_t *klens)
{
    struct meta_values *v = calloc(1, sizeof(*v));
    return v ? get_many(srv, srv->meta->ropts, n, keys, klens, v) : NULL;
}

struct meta_values *meta_get_blobs(struct server *srv, size_t n, const uint64_t *data_keys)
{
    struct meta_values *v = calloc(1, sizeof(*v));
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    size_t *klens = calloc(n ? n : 1, sizeof(*klens));
    if (v)
        v->blob_keys = calloc(n ? n : 1, sizeof(*v->blob_keys));
    if (!v || !v->blob_keys || !keys || !klens) {
        meta_values_free(v);
        free(keys);
        free(klens);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        blob_key(data_keys[i], v->blob_keys[i]);
        keys[i] = v->blob_keys[i];
        klens[i] = BLOB_KEY_LEN;
    }
    /* A batch's inline data is a copier's, read once: filling the block
     * cache with it would only push out the records. */
    v = get_many(srv, srv->meta->ropts_once, n, keys, klens, v);
    free(keys);
    free(klens);
    return v;
}

/* The value of lookup i: 0, -ENOENT or -EIO (logged). */
static int value_at(const struct meta_values *v, size_t i, const char **val, size_t *len)
{
    if (v->errs[i]) {
        log_error("rocksdb multi-get: %s", v->errs[i]);
        return -EIO;
    }
    if (!v->vals[i])
        return -ENOENT;
    *val = rocksdb_pinnableslice_value(v->vals[i], len);
    return 0;
}

int meta_values_record(const struct meta_values *v, size_t i, struct fs_record *rec)
{
    const char *val;
    size_t vlen;
    int rc = value_at(v, i, &val, &vlen);
    if (rc < 0)
        return rc;
    if (!record_decode(val, vlen, rec)) {
        log_error("corrupt record of %zu bytes found by a multi-get", vlen);
        return -EIO;
    }
    return 0;
}

int meta_values_blob(const struct meta_values *v, size_t i, const void **data, size_t *len)
{
    const char *val;
    int rc = value_at(v, i, &val, len);
    if (rc == 0)
        *data = val;
    return rc;
}

void meta_values_free(struct meta_values *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        if (v->vals && v->vals[i])
            rocksdb_pinnableslice_destroy(v->vals[i]);
        if (v->errs && v->errs[i])
            rocksdb_free(v->errs[i]);
    }
    free(v->vals);
    free(v->errs);
    free(v->blob_keys);
    free(v);
}
