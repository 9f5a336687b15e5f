/* batch: many small files in one request, for the stager.
 *
 * CREATE_BATCH creates up to FS_BATCH_MAX whole small files whose records
 * live on this server, and writes all their records and inline data with
 * one RocksDB write batch: per file, one request and one write were the
 * largest costs left after small files went inline (TCP loopback, thread
 * wake-ups, RocksDB's write path). READ_BATCH is the way back: records and
 * data of many files in one answer. Each entry has its own status, so one
 * file's error (EEXIST, ENOSPC, a bad path) never fails the others.
 * LIST_PLUS is READ_BATCH by directory: a page of a directory's entries,
 * each answered as READ_BATCH answers it, found by the scan instead of
 * looked up (a copier listing a directory of small files needs nothing else).
 *
 * The data of a created file is chunk 0 under a data key the client just
 * made, so nothing else can know the key before the batch is written: the
 * inline data goes straight into the batch, with the record that names it,
 * and becomes visible at the same moment. A key that already holds data is
 * refused (EEXIST), so the "inline or a local file, never both" rule of
 * chunks.c holds. Data above the inline threshold (up to one chunk) takes
 * the ordinary chunks_write path into a local file before the batch. */
#include "server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

#include "hash.h"
#include "log.h"

/* A READ_BATCH answer carries at most this much file data. */
#define READ_BATCH_DATA_MAX (64u << 20)

struct centry {
    const char *path;
    uint32_t mode, flags;
    uint64_t key;
    int64_t mtime;
    struct fs_cap parent;      /* write on the parent (proto.h) */
    const void *data;
    size_t len;
    char *rkey;                /* the record's key, in the request's key arena */
    int klen;
    unsigned stripe;
    int status;
    int inline_data;           /* the data goes into the batch (quota taken) */
    size_t blob_at;            /* its data key's lookup (inline data), or SIZE_MAX */
    struct fs_record rec;      /* the record to write */
    uint64_t old_key, old_size;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Decodes the entries; a message that does not parse is refused whole,
 * with the reason in the log (the client sees EBADMSG). */
static int decode_creates(struct rpc_reader *req, struct centry **out, uint32_t *count,
                          char **keys)
{
    uint32_t n = rpc_get_u32(req);
    if (!rpc_reader_ok(req)) {
        log_warn("create_batch: no entry count");
        return -EBADMSG;
    }
    if (n > FS_BATCH_MAX) {
        log_warn("create_batch: %u entries, more than the %u allowed", n, FS_BATCH_MAX);
        return -EBADMSG;
    }
    struct centry *e = calloc(n ? n : 1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        e[i].path = rpc_get_str(req);
        e[i].mode = rpc_get_u32(req);
        e[i].flags = rpc_get_u32(req);
        e[i].key = rpc_get_u64(req);
        e[i].mtime = rpc_get_i64(req);
        fs_cap_get(req, &e[i].parent);
        e[i].len = rpc_get_bytes(req, &e[i].data);
        if (!rpc_reader_ok(req) || !e[i].path) {
            log_warn("create_batch: entry %u of %u is truncated or its path is not a string",
                     i + 1, n);
            free(e);
            return -EBADMSG;
        }
    }
    if (!rpc_reader_done(req)) {
        log_warn("create_batch: %zu bytes after the last of %u entries", req->len - req->off, n);
        free(e);
        return -EBADMSG;
    }
    /* A record key is at most its path's length + 2 (see meta.c): one
     * arena for all, not a key buffer of 4 KiB per entry. */
    size_t total = 1;
    for (uint32_t i = 0; i < n; i++)
        total += strlen(e[i].path) + 2;
    if (!(*keys = malloc(total))) {
        free(e);
        return -ENOMEM;
    }
    for (uint32_t i = 0, at = 0; i < n; i++) {
        e[i].rkey = *keys + at;
        at += (uint32_t)strlen(e[i].path) + 2;
    }
    *out = e;
    *count = n;
    return 0;
}

/* Checks what can be checked of an entry alone; 0 or its error. */
static int check_create(struct server *srv, struct centry *e)
{
    e->klen = meta_path_key(e->path, e->rkey);
    if (e->klen < 0)
        return e->klen;
    if (e->flags & ~(FS_CHECK_PARENT | FS_CREATE_MTIME))
        return -EINVAL;
    if (e->len > srv->chunk_size)
        return -EFBIG;
    if (e->len > 0 && hash_place_chunk(e->key, 0, srv->nservers) != srv->index) {
        log_error("create_batch: %s: chunk 0 of key %016llx belongs to another server",
                  e->path, (unsigned long long)e->key);
        return -EINVAL;
    }
    e->stripe = meta_record_stripe(srv, e->rkey, e->klen);
    return 0;
}

static int same_stripe_and_key(const struct centry *x, const struct centry *y)
{
    if (x->stripe != y->stripe)
        return x->stripe < y->stripe ? -1 : 1;
    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    return memcmp(x->rkey, y->rkey, (size_t)x->klen);
}

/* Lock order: ascending stripe; equal keys end up next to each other, the
 * first in the request first (a repeat is refused, not the original). */
static int by_stripe_then_key(const void *a, const void *b, void *arg)
{
    const struct centry *e = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int c = same_stripe_and_key(&e[i], &e[j]);
    return c ? c : (i > j) - (i < j);
}

static int by_data_key(const void *a, const void *b, void *arg)
{
    const struct centry *e = arg;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t x = e[i].key, y = e[j].key;
    return x != y ? (x > y) - (x < y) : (i > j) - (i < j);
}

/* Two entries with one data key would share their data: all but the first
 * are refused, like a key already in the store. */
static void refuse_shared_keys(struct centry *e, uint32_t *order, uint32_t m)
{
    qsort_r(order, m, sizeof(*order), by_data_key, e);
    for (uint32_t j = 1; j < m; j++) {
        struct centry *x = &e[order[j - 1]], *y = &e[order[j]];
        if (x->key == y->key)
            y->status = -EEXIST;      /* sorted: y came later in the request */
    }
}

/* The lookups of a batch's entries, made at once: the record each path
 * has now (lookup i of olds is entry i's, for those being staged) and the
 * inline data under each data key about to get some (a key the client
 * claims is fresh must hold nothing). */
struct create_lookups {
    struct meta_values *olds, *blobs;
};

static int look_up_creates(struct server *srv, struct centry *e, uint32_t n,
                           struct create_lookups *l)
{
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    size_t *klens = calloc(n ? n : 1, sizeof(*klens));
    uint64_t *data_keys = calloc(n ? n : 1, sizeof(*data_keys));
    int rc = -ENOMEM;
    if (!keys || !klens || !data_keys)
        goto out;
    size_t b = 0;
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = e[i].rkey;
        klens[i] = e[i].status == 0 ? (size_t)e[i].klen : 0;
        e[i].blob_at = SIZE_MAX;
        if (e[i].status == 0 && e[i].len > 0 && e[i].len <= srv->inline_max) {
            e[i].blob_at = b;
            data_keys[b++] = e[i].key;
        }
    }
    l->olds = meta_get_records(srv, n, keys, klens);
    l->blobs = meta_get_blobs(srv, b, data_keys);
    if (l->olds && l->blobs)
        rc = 0;
out:
    free(keys);
    free(klens);
    free(data_keys);
    return rc;
}

/* A data key the client claims is fresh must hold nothing on this server:
 * no inline data and no local file (datafile.c's name for it). */
static int key_is_fresh(struct server *srv, const struct centry *e,
                        const struct create_lookups *l)
{
    const void *data;
    size_t len;
    int rc = meta_values_blob(l->blobs, e->blob_at, &data, &len);
    if (rc != -ENOENT)
        return rc < 0 ? rc : -EEXIST;
    rc = datafile_exists(srv, e->key);
    return rc < 0 ? rc : rc ? -EEXIST : 0;
}

/* Entry i under its record lock: the checks of CREATE_WRITE, its quota,
 * and its record. */
static int stage_create(struct server *srv, const struct reply *rep, struct centry *e,
                        uint32_t i, const struct create_lookups *l)
{
    int rc = (e->flags & FS_CHECK_PARENT) ? meta_check_parent(srv, e->path) : 0;
    struct fs_record old;
    int had = 0;
    if (rc == 0) {
        rc = meta_values_record(l->olds, i, &old);
        had = rc == 0;
        if (rc == -ENOENT)
            rc = 0;
    }
    if (rc == 0 && !had)   /* a new entry: write on its directory */
        rc = access_parent_check(srv, rep, e->path, &e->parent);
    if (rc == 0 && had && S_ISDIR(old.mode))
        rc = -EISDIR;
    if (rc == 0 && had && old.key == e->key)
        rc = -EEXIST;            /* a key is never reused for a new file */
    if (rc == 0 && had)
        rc = access_may(rep, &old, W_OK);   /* replacing its content */
    if (rc == 0 && e->blob_at != SIZE_MAX) {
        rc = key_is_fresh(srv, e, l);
        if (rc == 0 && (rc = quota_take(srv, e->len)) == 0)
            e->inline_data = 1;
    } else if (rc == 0 && e->len > 0) {
        rc = chunks_write(srv, e->key, 0, 0, e->data, e->len, NULL);
    }
    if (rc < 0)
        return rc;
    int64_t now = now_ns();
    e->rec = (struct fs_record){ .mode = S_IFREG | (e->mode & 07777), .size = e->len,
                                 .key = e->key, .atime_ns = now,
                                 .mtime_ns = (e->flags & FS_CREATE_MTIME) ? e->mtime : now,
                                 .ctime_ns = now };
    access_stamp(srv, rep, &e->rec);
    if (had) {
        e->rec.uid = old.uid;   /* still its owner's */
        e->rec.gid = old.gid;
        e->old_key = old.key;
        e->old_size = old.size;
    }
    return 0;
}

static int by_path_key(const void *a, const void *b, void *arg)
{
    const struct centry *e = arg;
    const struct centry *x = &e[*(const uint32_t *)a], *y = &e[*(const uint32_t *)b];
    int n = memcmp(x->rkey, y->rkey, (size_t)(x->klen < y->klen ? x->klen : y->klen));
    return n ? n : (x->klen > y->klen) - (x->klen < y->klen);
}

/* Puts the staged entries into the write batch in key order: RocksDB
 * inserts a batch into its memtable (a skip list) one key after the other,
 * and a key just after the previous one is found from where that one went
 * instead of from the top (inserting was the largest server cost). */
static void fill_batch(struct centry *e, uint32_t n, uint32_t *order, struct meta_batch *b)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].status == 0)
            order[m++] = i;
    qsort_r(order, m, sizeof(*order), by_path_key, e);
    for (uint32_t j = 0; j < m; j++)
        meta_batch_put_record(b, e[order[j]].rkey, e[order[j]].klen, &e[order[j]].rec);
    uint32_t k = 0;
    for (uint32_t j = 0; j < m; j++)
        if (e[order[j]].inline_data)
            order[k++] = order[j];
    qsort_r(order, k, sizeof(*order), by_data_key, e);
    for (uint32_t j = 0; j < k; j++)
        meta_batch_put_blob(b, e[order[j]].key, e[order[j]].data, e[order[j]].len);
}

/* The batch could not be written: nothing of it exists. */
static void undo_creates(struct server *srv, struct centry *e, uint32_t n, int err)
{
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].status < 0)
            continue;
        if (e[i].inline_data)
            quota_give(srv, e[i].len);
        else if (e[i].len > 0)
            chunks_truncate(srv, e[i].key, 0, e[i].len);
        e[i].status = err;
        e[i].old_key = e[i].old_size = 0;
    }
}

int op_create_batch(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct centry *e;
    uint32_t n;
    char *keys;
    int rc = decode_creates(req, &e, &n, &keys);
    if (rc < 0)
        return rc;
    uint32_t *order = calloc(n ? n : 1, sizeof(*order));
    uint32_t *locked = calloc(n ? n : 1, sizeof(*locked));   /* stripes held */
    struct meta_batch *b = meta_batch_new();
    if (!order || !locked || !b) {
        free(order);
        free(locked);
        meta_batch_free(b);
        free(e);
        free(keys);
        return -ENOMEM;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        e[i].key = access_new_key(srv, rep, e[i].key);
        if ((e[i].status = check_create(srv, &e[i])) == 0)
            order[m++] = i;
    }
    refuse_shared_keys(e, order, m);
    uint32_t k = 0;
    for (uint32_t j = 0; j < m; j++)
        if (e[order[j]].status == 0)
            order[k++] = order[j];
    m = k;
    qsort_r(order, m, sizeof(*order), by_stripe_then_key, e);
    uint32_t nlocked = 0;
    for (uint32_t j = 0; j < m; j++) {
        struct centry *x = &e[order[j]];
        if (j > 0 && same_stripe_and_key(&e[order[j - 1]], x) == 0) {
            x->status = -EINVAL;     /* the same path twice in one batch */
            continue;
        }
        if (j == 0 || e[order[j - 1]].stripe != x->stripe) {
            pthread_mutex_lock(&srv->record_locks[x->stripe]);
            locked[nlocked++] = x->stripe;
        }
    }
    /* Looked up under the locks: nothing can change them before the
     * batch is written. */
    struct create_lookups looked = { NULL, NULL };
    int lrc = look_up_creates(srv, e, n, &looked);
    for (uint32_t i = 0; i < n; i++)
        if (e[i].status == 0)
            e[i].status = lrc < 0 ? lrc : stage_create(srv, rep, &e[i], i, &looked);
    meta_values_free(looked.olds);
    meta_values_free(looked.blobs);
    fill_batch(e, n, order, b);
    int staged = 0;
    for (uint32_t i = 0; i < n; i++)
        staged += e[i].status == 0;
    if (staged && (rc = meta_batch_commit(srv, b)) < 0)
        undo_creates(srv, e, n, rc);
    for (uint32_t j = 0; j < nlocked; j++)
        pthread_mutex_unlock(&srv->record_locks[locked[j]]);
    free(locked);
    meta_batch_free(b);
    free(order);
    rpc_put_u32(&rep->out, n);
    for (uint32_t i = 0; i < n; i++) {
        int replaced = e[i].status == 0 && e[i].old_size > 0 && e[i].old_key != e[i].key;
        if (replaced)
            chunks_truncate(srv, e[i].old_key, 0, e[i].old_size);
        struct fs_cap drop;
        access_cap_drop(srv, rep, replaced ? e[i].old_key : 0, &drop);
        rpc_put_u32(&rep->out, (uint32_t)e[i].status);
        rpc_put_u64(&rep->out, replaced ? e[i].old_key : 0);
        rpc_put_u64(&rep->out, replaced ? e[i].old_size : 0);
        fs_cap_put(&rep->out, &drop);
        rpc_put_u64(&rep->out, e[i].key);
    }
    free(e);
    free(keys);
    return 0;
}

/* One READ_BATCH entry as it is looked up: as STAT_READ, with the data
 * length-prefixed. */
struct rentry {
    const char *path;
    const char *key;           /* the record's key, in the batch's key arena */
    size_t klen;
    int status;
    struct fs_record rec;
    uint64_t want;             /* bytes of chunk 0 to send */
    int here;                  /* chunk 0 is on this server */
    size_t blob;               /* its inline data's lookup, or SIZE_MAX */
};

/* The keys of the entries' records, side by side in one arena. */
static char *record_keys(struct rentry *e, uint32_t n)
{
    size_t total = 1;
    for (uint32_t i = 0; i < n; i++)
        total += strlen(e[i].path) + 2;
    char *arena = malloc(total), *at = arena;
    for (uint32_t i = 0; arena && i < n; i++) {
        char key[META_KEY_MAX];
        int klen = meta_path_key(e[i].path, key);
        e[i].status = klen < 0 ? klen : 0;
        if (klen < 0)
            continue;
        memcpy(at, key, (size_t)klen);
        e[i].key = at;
        e[i].klen = (size_t)klen;
        at += klen;
    }
    return arena;
}

/* Looks up the records of the entries that have no status yet. */
static int look_up_records(struct server *srv, struct rentry *e, uint32_t n)
{
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    size_t *klens = calloc(n ? n : 1, sizeof(*klens));
    uint32_t *which = calloc(n ? n : 1, sizeof(*which));
    struct meta_values *recs = NULL;
    int rc = -ENOMEM;
    if (!keys || !klens || !which)
        goto out;
    size_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].status == 0) {
            keys[m] = e[i].key;
            klens[m] = e[i].klen;
            which[m++] = i;
        }
    if (!(recs = meta_get_records(srv, m, keys, klens)))
        goto out;
    for (size_t j = 0; j < m; j++)
        e[which[j]].status = meta_values_record(recs, j, &e[which[j]].rec);
    rc = 0;
out:
    meta_values_free(recs);
    free(keys);
    free(klens);
    free(which);
    return rc;
}

/* Decides whose data goes with the answer (whole regular files of at most
 * max bytes whose chunk 0 is here: the first bytes of a bigger one would be
 * read again with the rest) and looks up the inline data among them at
 * once. NULL: out of memory. */
static struct meta_values *plan_data(struct server *srv, const struct reply *rep,
                                     struct rentry *e, uint32_t n, uint32_t max)
{
    uint64_t *data_keys = calloc(n ? n : 1, sizeof(*data_keys));
    if (!data_keys)
        return NULL;
    size_t b = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct rentry *x = &e[i];
        x->blob = SIZE_MAX;
        if (x->status < 0)
            continue;
        x->want = x->rec.size;
        x->here = S_ISREG(x->rec.mode) && x->want <= max && x->want <= srv->chunk_size &&
                  hash_place_chunk(x->rec.key, 0, srv->nservers) == srv->index &&
                  access_may(rep, &x->rec, R_OK) == 0;
        if (x->here && x->want > 0 && x->want <= srv->inline_max) {
            x->blob = b;
            data_keys[b++] = x->rec.key;
        }
    }
    struct meta_values *blobs = meta_get_blobs(srv, b, data_keys);
    free(data_keys);
    return blobs;
}

/* Chunk 0 of an entry: its inline data found by the lookup, or what
 * chunks.c reads (a local file; or inline data written since). */
static int put_data(struct server *srv, const struct rentry *x, const struct meta_values *blobs,
                    struct rpc_writer *out)
{
    if (x->blob != SIZE_MAX) {
        const void *data;
        size_t len;
        int rc = meta_values_blob(blobs, x->blob, &data, &len);
        if (rc == 0) {
            size_t n = len < x->want ? len : (size_t)x->want;
            rpc_put_raw(out, data, n);
            return rpc_writer_ok(out) ? (int)n : -ENOMEM;
        }
        if (rc != -ENOENT)
            return rc;
    }
    return chunks_read_into(srv, x->rec.key, 0, (size_t)x->want, out);
}

static void put_entry(struct server *srv, const struct reply *rep, const struct rentry *x,
                      const struct meta_values *blobs, struct rpc_writer *out)
{
    size_t status_at = out->len;
    rpc_put_u32(out, (uint32_t)x->status);
    if (x->status < 0)
        return;
    struct fs_record shown = x->rec;
    struct fs_cap cap;
    access_cap_for(srv, rep, NULL, &x->rec, &cap);
    access_answer(srv, rep, &shown);
    fs_record_put(out, &shown);
    fs_cap_put(out, &cap);
    rpc_put_u32(out, (uint32_t)x->here);
    size_t len_at = out->len;
    rpc_put_u32(out, 0);
    if (!x->here || x->want == 0)
        return;
    int rc = put_data(srv, x, blobs, out);
    if (rc < 0) {
        /* Only this entry fails: its answer shrinks to the status. */
        out->len = status_at;
        rpc_put_u32(out, (uint32_t)rc);
        return;
    }
    rpc_patch_u32(out, len_at, (uint32_t)rc);
}

int op_read_batch(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint32_t n = rpc_get_u32(req), max = rpc_get_u32(req);
    if (!rpc_reader_ok(req)) {
        log_warn("read_batch: no entry count or size");
        return -EBADMSG;
    }
    if (n > FS_BATCH_MAX) {
        log_warn("read_batch: %u entries, more than the %u allowed", n, FS_BATCH_MAX);
        return -EBADMSG;
    }
    if ((uint64_t)n * max > READ_BATCH_DATA_MAX) {
        log_warn("read_batch: %u entries of up to %u bytes, more than %u bytes in all", n, max,
                 READ_BATCH_DATA_MAX);
        return -EBADMSG;
    }
    struct rentry *e = calloc(n ? n : 1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        e[i].path = rpc_get_str(req);
        if (!e[i].path) {
            log_warn("read_batch: entry %u of %u is truncated or not a string", i + 1, n);
            free(e);
            return -EBADMSG;
        }
    }
    if (!rpc_reader_done(req)) {
        log_warn("read_batch: %zu bytes after the last of %u entries", req->len - req->off, n);
        free(e);
        return -EBADMSG;
    }
    struct meta_values *blobs = NULL;
    char *keys = record_keys(e, n);
    int rc = keys ? look_up_records(srv, e, n) : -ENOMEM;
    if (rc == 0 && !(blobs = plan_data(srv, rep, e, n, max)))
        rc = -ENOMEM;
    if (rc == 0) {
        rpc_put_u32(&rep->out, n);
        for (uint32_t i = 0; i < n; i++)
            put_entry(srv, rep, &e[i], blobs, &rep->out);
    }
    meta_values_free(blobs);
    free(keys);
    free(e);
    return rc;
}

/* A LIST_PLUS answer stops growing past about this much payload. */
#define LIST_PLUS_BYTES (4u << 20)

/* The entries of one LIST_PLUS page as the scan finds them. */
struct plus_page {
    struct rentry *e;
    uint32_t n, cap, max, data_max;
    size_t bytes;
};

static int plus_one(void *arg, const char *name, const struct fs_record *rec)
{
    struct plus_page *p = arg;
    if (p->n == p->max || p->bytes > LIST_PLUS_BYTES)
        return 1;
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 256;
        struct rentry *e = realloc(p->e, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        p->e = e;
        p->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    p->e[p->n++] = (struct rentry){ .path = copy, .rec = *rec };
    p->bytes += strlen(name) + 64;
    if (S_ISREG(rec->mode) && rec->size <= p->data_max)
        p->bytes += rec->size;
    return 0;
}

int op_list_plus(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    const char *dir = rpc_get_str(req), *after = rpc_get_str(req);
    uint32_t max = rpc_get_u32(req), data_max = rpc_get_u32(req);
    struct fs_cap cap;
    fs_cap_get(req, &cap);
    if (!dir || !after || !rpc_reader_done(req)) {
        log_warn("list_plus: not a directory, a name, an entry count and a size, then a capability");
        return -EBADMSG;
    }
    int crc = access_dir_check(srv, rep, dir, strlen(dir), &cap, FS_CAP_READ);
    if (crc < 0)
        return crc;
    struct plus_page p = { .max = max, .data_max = data_max };
    struct meta_values *blobs = NULL;
    int rc = meta_scan_dir(srv, dir, after, plus_one, &p);
    if (rc >= 0 && !(blobs = plan_data(srv, rep, p.e, p.n, data_max)))
        rc = -ENOMEM;
    if (rc >= 0) {
        rpc_put_u32(&rep->out, p.n);
        for (uint32_t i = 0; i < p.n; i++) {
            rpc_put_str(&rep->out, p.e[i].path);
            put_entry(srv, rep, &p.e[i], blobs, &rep->out);
        }
        rpc_put_u32(&rep->out, rc == 1);
        rc = 0;
    }
    meta_values_free(blobs);
    for (uint32_t i = 0; i < p.n; i++)
        free((char *)p.e[i].path);
    free(p.e);
    return rc;
}
