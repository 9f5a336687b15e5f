/* libFuzzer target for adafsd's batch requests (CREATE_BATCH, READ_BATCH,
 * LIST_PLUS): the first input byte picks the request, the rest is its
 * payload, handled by the real batch.c against a store that holds nothing
 * but a few directory entries (the meta and chunks functions below). Nothing a client sends may crash the handler,
 * leak, or give an answer that does not decode: a refused message is
 * EBADMSG (or ENOMEM), an accepted one is answered with one status per
 * entry, each 0 or a negative errno. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "log.h"
#include "server.h"

/* ---- a store with nothing in it ---- */
int meta_path_key(const char *path, char key[META_KEY_MAX])
{
    size_t len = strlen(path);
    if (path[0] != '/' || len < 2 || len >= FS_PATH_MAX)
        return -EINVAL;
    memcpy(key, path, len + 1);   /* at most len + 2 bytes, as meta.c's */
    return (int)len;
}

unsigned meta_record_stripe(struct server *srv, const char *key, int klen)
{
    return (unsigned)(hash_bytes(key, (size_t)klen) % SERVER_STRIPES);
}

/* Every directory holds the same five entries: files of several sizes
 * (with data keys this server does or does not hold chunk 0 of) and a
 * directory. */
int meta_scan_dir(struct server *srv, const char *dir, const char *after, meta_scan_fn fn,
                  void *arg)
{
    static const char *names[] = { "a", "b", "c", "d", "e" };
    static const uint64_t sizes[] = { 0, 100, 70000, 1u << 20, 0 };
    for (int i = 0; i < 5; i++) {
        if (strcmp(names[i], after) <= 0)
            continue;
        struct fs_record rec = { .mode = (i == 4 ? S_IFDIR : S_IFREG) | 0644,
                                 .size = sizes[i], .key = 0x1234567890abcdefull * (i + 1) };
        int rc = fn(arg, names[i], &rec);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int meta_check_parent(struct server *srv, const char *path)
{
    return 0;
}

int meta_blob_get(struct server *srv, uint64_t data_key, void *buf, size_t cap)
{
    return -ENOENT;
}

struct meta_values {
    size_t n;
};

struct meta_values *meta_get_records(struct server *srv, size_t n, const char *const *keys,
                                     const size_t *klens)
{
    struct meta_values *v = malloc(sizeof(*v));
    if (v)
        v->n = n;
    return v;
}

struct meta_values *meta_get_blobs(struct server *srv, size_t n, const uint64_t *data_keys)
{
    return meta_get_records(srv, n, NULL, NULL);
}

int meta_values_record(const struct meta_values *v, size_t i, struct fs_record *rec)
{
    if (i >= v->n)
        abort();
    return -ENOENT;
}

int meta_values_blob(const struct meta_values *v, size_t i, const void **data, size_t *len)
{
    if (i >= v->n)
        abort();
    return -ENOENT;
}

void meta_values_free(struct meta_values *v)
{
    free(v);
}

struct meta_batch {
    size_t puts;
};

struct meta_batch *meta_batch_new(void)
{
    return calloc(1, sizeof(struct meta_batch));
}

void meta_batch_put_record(struct meta_batch *b, const char *key, int klen,
                           const struct fs_record *rec)
{
    b->puts++;
}

void meta_batch_put_blob(struct meta_batch *b, uint64_t data_key, const void *data, size_t len)
{
    b->puts++;
}

int meta_batch_commit(struct server *srv, struct meta_batch *b)
{
    return 0;
}

void meta_batch_free(struct meta_batch *b)
{
    free(b);
}

int chunks_write(struct server *srv, uint64_t key, uint64_t index, uint64_t offset,
                 const void *data, size_t have, struct stream *rest)
{
    return 0;
}

int datafile_exists(struct server *srv, uint64_t key)
{
    return 0;
}

void chunks_truncate(struct server *srv, uint64_t key, uint64_t new_size, uint64_t old_size)
{
}

int chunks_read_into(struct server *srv, uint64_t key, uint64_t index, size_t len,
                     struct rpc_writer *out)
{
    return 0;   /* nothing stored: the client zero-fills */
}

void log_msg(enum log_level level, const char *fmt, ...)
{
}

/* ---- the target ---- */
static struct server srv;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    srv.index = 0;
    srv.nservers = 1;
    srv.chunk_size = 512 * 1024;
    srv.inline_max = 64 * 1024;
    srv.quota = 1u << 20;
    strcpy(srv.data_dir, "/");
    for (int i = 0; i < SERVER_STRIPES; i++)
        pthread_mutex_init(&srv.record_locks[i], NULL);
    return 0;
}

/* Every status is 0 or a negative errno. */
static int32_t take_status(struct rpc_reader *r)
{
    int32_t st = (int32_t)rpc_get_u32(r);
    if (st > 0 || st < -4095)
        abort();
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int op = data[0] % 3, create = op == 1;
    struct rpc_reader req;
    rpc_reader_init(&req, data + 1, size - 1);
    struct reply rep = { .file = NULL };
    rpc_writer_init(&rep.out, NULL, 0);
    int rc = op == 0 ? op_read_batch(&srv, &req, &rep)
           : op == 1 ? op_create_batch(&srv, &req, &rep)
                     : op_list_plus(&srv, &req, &rep);
    if (rc != 0 && rc != -EBADMSG && rc != -ENOMEM)
        abort();
    if (rc == 0 && rpc_writer_ok(&rep.out)) {
        struct rpc_reader ans;
        rpc_reader_init(&ans, rep.out.data, rep.out.len);
        uint32_t n = rpc_get_u32(&ans);
        uint32_t asked = size >= 5 ? (uint32_t)data[1] | (uint32_t)data[2] << 8 |
                                         (uint32_t)data[3] << 16 | (uint32_t)data[4] << 24
                                   : 0;
        if (op != 2 && (n != asked || n > FS_BATCH_MAX))
            abort();
        for (uint32_t i = 0; i < n; i++) {
            if (op == 2 && !rpc_get_str(&ans))
                abort();
            int32_t st = take_status(&ans);
            struct fs_cap cap;
            if (create) {
                rpc_get_u64(&ans);
                rpc_get_u64(&ans);
                fs_cap_get(&ans, &cap);
                rpc_get_u64(&ans);
            } else if (st == 0) {
                struct fs_record rec;
                fs_record_get(&ans, &rec);
                fs_cap_get(&ans, &cap);
                rpc_get_u32(&ans);
                const void *p;
                rpc_get_bytes(&ans, &p);
            }
        }
        if (op == 2 && rpc_get_u32(&ans) > 1)
            abort();
        if (!rpc_reader_done(&ans))
            abort();
    }
    rpc_writer_free(&rep.out);
    return 0;
}
