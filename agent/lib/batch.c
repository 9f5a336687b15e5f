/* batch: many whole small files per request (CREATE_BATCH, READ_BATCH,
 * LIST_PLUS).
 *
 * The entries are grouped by the server that holds their records (a small
 * file's data sits with its record: its data key is chosen so), cut into
 * requests of at most FS_BATCH_MAX entries and BATCH_BYTES of payload, and
 * all requests go out in one batch of calls: one round trip for all the
 * files, however many servers they are spread over. Every entry gets its
 * own status. */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A request stops growing past this much payload (a create's data, a
 * read's answer). */
#define BATCH_BYTES (4u << 20)

/* One entry's place: its normalised path and the request it went in. */
struct slot {
    char *path;
    int server;
    int call;          /* index into the calls, -1: not sent */
    uint64_t key;
};

static void slots_free(struct slot *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        free(s[i].path);
    free(s);
}

/* Normalises every path into its slot; an entry whose path is bad gets
 * that error as its status and takes no further part. */
typedef const char *(*path_fn)(void *entries, size_t i);
typedef int *(*status_fn)(void *entries, size_t i);

static struct slot *slots_make(adafs *fs, size_t n, path_fn path_of, void *entries,
                               status_fn status_of, int root_err)
{
    struct slot *s = calloc(n ? n : 1, sizeof(*s));
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char p[FS_PATH_MAX];
        int rc = path_take(path_of(entries, i), p, root_err);
        s[i].call = -1;
        if (rc == 0 && !(s[i].path = strdup(p)))
            rc = -ENOMEM;
        *status_of(entries, i) = rc;
        if (rc == 0)
            s[i].server = meta_server(fs, p);
    }
    return s;
}

static const char *create_path(void *e, size_t i)
{
    return ((struct adafs_create_entry *)e)[i].path;
}

static int *create_status(void *e, size_t i)
{
    return &((struct adafs_create_entry *)e)[i].status;
}

static const char *read_path(void *e, size_t i)
{
    return ((struct adafs_read_entry *)e)[i].path;
}

static int *read_status(void *e, size_t i)
{
    return &((struct adafs_read_entry *)e)[i].status;
}

/* The entries of each request, in order: per call, its first entry's
 * position in idx and its count. */
struct plan {
    size_t *idx;
    size_t *first, *count;
    int ncalls;
    struct call *calls;     /* one per request, to be filled in */
};

static void plan_free(struct plan *p)
{
    free(p->idx);
    free(p->first);
    free(p->count);
    free(p->calls);
}

/* Groups the live entries (status 0) by server and cuts each group into
 * requests of at most FS_BATCH_MAX entries and `bytes` of payload, where
 * size_of(i) is entry i's share. */
static int plan_make(adafs *fs, struct slot *s, size_t n, status_fn status_of, void *entries,
                     size_t (*size_of)(void *, size_t), struct plan *p)
{
    int nservers = adafs_server_count(fs);
    memset(p, 0, sizeof(*p));
    p->idx = calloc(n ? n : 1, sizeof(*p->idx));
    /* At most one request per entry. */
    p->first = calloc(n ? n : 1, sizeof(*p->first));
    p->count = calloc(n ? n : 1, sizeof(*p->count));
    if (!p->idx || !p->first || !p->count) {
        plan_free(p);
        return -ENOMEM;
    }
    size_t k = 0;
    for (int srv = 0; srv < nservers; srv++) {
        int open = -1;
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++) {
            if (*status_of(entries, i) != 0 || s[i].server != srv)
                continue;
            size_t sz = size_of(entries, i);
            if (open < 0 || p->count[open] == FS_BATCH_MAX ||
                (p->count[open] > 0 && bytes + sz > BATCH_BYTES)) {
                open = p->ncalls++;
                p->first[open] = k;
                bytes = 0;
            }
            p->idx[k++] = i;
            p->count[open]++;
            bytes += sz;
            s[i].call = open;
        }
    }
    if (!(p->calls = calloc(p->ncalls ? (size_t)p->ncalls : 1, sizeof(*p->calls)))) {
        plan_free(p);
        return -ENOMEM;
    }
    return 0;
}

/* Bytes of one CREATE_BATCH entry on the wire (see proto.h). */
static size_t create_wire_size(const struct adafs_create_entry *e, const char *path)
{
    return 4 + strlen(path) + 1 + 4 + 4 + 8 + 8 + 4 + e->len;
}

static size_t create_size(void *e, size_t i)
{
    const struct adafs_create_entry *c = &((struct adafs_create_entry *)e)[i];
    return c->len + strlen(c->path) + 40 + FS_CAP_WIRE_SIZE;
}

/* Without ADAFS_PARENT_KNOWN: the parents that live on another server than
 * their entry are stat'ed first, each once (those on the same server are
 * checked by it: FS_CHECK_PARENT). An entry whose parent is not a
 * directory is not sent. */
static int check_parents(adafs *fs, struct adafs_create_entry *e, struct slot *s, size_t n,
                         uint32_t *flags)
{
    char **parents = calloc(n ? n : 1, sizeof(*parents));
    int *of = calloc(n ? n : 1, sizeof(*of));
    struct call *calls = calloc(n ? n : 1, sizeof(*calls));
    int np = 0, rc = 0;
    if (!parents || !of || !calls) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        of[i] = -1;
        if (e[i].status != 0)
            continue;
        char parent[FS_PATH_MAX];
        path_parent(s[i].path, parent);
        if (strcmp(parent, "/") == 0)
            continue;
        if (meta_server(fs, parent) == s[i].server) {
            flags[i] |= FS_CHECK_PARENT;
            continue;
        }
        /* Entries of one directory usually come together: look back first. */
        int found = -1;
        for (int j = np - 1; j >= 0 && found < 0; j--)
            if (strcmp(parents[j], parent) == 0)
                found = j;
        if (found < 0) {
            if (!(parents[np] = strdup(parent))) {
                rc = -ENOMEM;
                goto out;
            }
            call_init(&calls[np], meta_server(fs, parent), FS_STAT);
            rpc_put_str(&calls[np].req, parent);
            found = np++;
        }
        of[i] = found;
    }
    fs_call(fs, calls, np);
    for (size_t i = 0; i < n; i++) {
        if (of[i] < 0)
            continue;
        struct call *c = &calls[of[i]];
        struct fs_record rec;
        struct fs_cap cap;
        struct rpc_reader r;
        call_reader(c, &r);
        fs_record_get(&r, &rec);
        fs_cap_get(&r, &cap);
        int prc = c->status < 0 ? c->status : !rpc_reader_done(&r) ? -EIO
                                            : !S_ISDIR(rec.mode)   ? -ENOTDIR : 0;
        if (prc == 0)
            dir_cap_keep(fs, parents[of[i]], &cap);
        if (prc == -ENOENT)
            prc = refine_enoent(fs, s[i].path);
        e[i].status = prc;
    }
out:
    for (int j = 0; j < np; j++) {
        free(parents[j]);
        call_free(&calls[j]);
    }
    free(parents);
    free(of);
    free(calls);
    return rc;
}

static int count_failed(status_fn status_of, void *entries, size_t n)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += *status_of(entries, i) < 0;
    return failed;
}

static int create_batch_once(adafs *fs, struct adafs_create_entry *e, size_t n, unsigned flags);

/* Entries refused for want of their directory's capability (a server
 * several users share: proto.h) go again once it is learnt. */
int adafs_create_batch(adafs *fs, struct adafs_create_entry *e, size_t n, unsigned flags)
{
    if (flags & ~ADAFS_PARENT_KNOWN)
        return -EINVAL;
    int rc = create_batch_once(fs, e, n, flags);
    if (rc <= 0)
        return rc;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += e[i].status == -EKEYEXPIRED;
    struct adafs_create_entry *again = m ? calloc(m, sizeof(*again)) : NULL;
    size_t *from = m ? calloc(m, sizeof(*from)) : NULL;
    if (m && again && from) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (e[i].status != -EKEYEXPIRED)
                continue;
            /* Once per directory: a kept capability is not asked again. */
            struct fs_cap cap;
            char p[FS_PATH_MAX], parent[FS_PATH_MAX];
            if (path_normalize(e[i].path, p) == 0) {
                path_parent(p, parent);
                dir_cap(fs, parent, &cap);
                if (!cap.rights)
                    dir_cap_learn(fs, parent);
            }
            from[k] = i;
            again[k] = e[i];
            again[k++].status = 0;
        }
        create_batch_once(fs, again, m, flags);
        for (size_t k2 = 0; k2 < m; k2++)
            e[from[k2]].status = again[k2].status;
    }
    free(again);
    free(from);
    for (size_t i = 0; i < n; i++)
        if (e[i].status == -EKEYEXPIRED)
            e[i].status = -EACCES;
    return count_failed(create_status, e, n);
}

static int create_batch_once(adafs *fs, struct adafs_create_entry *e, size_t n, unsigned flags)
{
    struct slot *s = slots_make(fs, n, create_path, e, create_status, -EISDIR);
    uint32_t *cflags = calloc(n ? n : 1, sizeof(*cflags));
    if (!s || !cflags) {
        slots_free(s, n);
        free(cflags);
        return -ENOMEM;
    }
    uint64_t cs = adafs_chunk_size(fs);
    for (size_t i = 0; i < n; i++) {
        long ns = e[i].mtime.tv_nsec;
        if (e[i].status == 0 && ns != UTIME_NOW && ns != UTIME_OMIT && (ns < 0 || ns >= 1000000000))
            e[i].status = -EINVAL;
        if (e[i].status == 0 && e[i].len > cs)
            e[i].status = -EFBIG;
        if (e[i].status == 0 && ns != UTIME_NOW && ns != UTIME_OMIT)
            cflags[i] |= FS_CREATE_MTIME;
    }
    int rc = flags & ADAFS_PARENT_KNOWN ? 0 : check_parents(fs, e, s, n, cflags);
    struct plan p;
    if (rc == 0)
        rc = plan_make(fs, s, n, create_status, e, create_size, &p);
    if (rc < 0) {
        slots_free(s, n);
        free(cflags);
        return rc;
    }
    /* One buffer of the exact size for all requests: growing each from
     * the call's inline space doubled and copied it a dozen times. */
    size_t total = 4 * (size_t)p.ncalls;   /* the counts */
    for (size_t i = 0; i < n; i++)
        if (s[i].call >= 0 && e[i].status == 0)
            total += create_wire_size(&e[i], s[i].path);
    char *wire = malloc(total ? total : 1), *at = wire;
    for (int c = 0; c < p.ncalls; c++) {
        size_t i0 = p.idx[p.first[c]];
        call_init(&p.calls[c], s[i0].server, FS_CREATE_BATCH);
        size_t size = 4;
        for (size_t k = 0; k < p.count[c]; k++) {
            size_t i = p.idx[p.first[c] + k];
            size += create_wire_size(&e[i], s[i].path);
        }
        if (wire) {
            rpc_writer_init(&p.calls[c].req, at, size);
            at += size;
        }
        rpc_put_u32(&p.calls[c].req, (uint32_t)p.count[c]);
        for (size_t k = 0; k < p.count[c]; k++) {
            size_t i = p.idx[p.first[c] + k];
            s[i].key = new_key(fs, s[i].server);
            rpc_put_str(&p.calls[c].req, s[i].path);
            rpc_put_u32(&p.calls[c].req, (uint32_t)e[i].mode);
            rpc_put_u32(&p.calls[c].req, cflags[i]);
            rpc_put_u64(&p.calls[c].req, s[i].key);
            rpc_put_i64(&p.calls[c].req, (cflags[i] & FS_CREATE_MTIME)
                                           ? (int64_t)e[i].mtime.tv_sec * 1000000000 +
                                                 e[i].mtime.tv_nsec
                                           : 0);
            struct fs_cap parent;
            parent_cap(fs, s[i].path, &parent);
            fs_cap_put(&p.calls[c].req, &parent);
            rpc_put_bytes(&p.calls[c].req, e[i].data, e[i].len);
        }
    }
    fs_call(fs, p.calls, p.ncalls);
    for (int c = 0; c < p.ncalls; c++) {
        struct rpc_reader r;
        call_reader(&p.calls[c], &r);
        int crc = p.calls[c].status;
        if (crc == 0 && rpc_get_u32(&r) != p.count[c])
            crc = -EIO;
        for (size_t k = 0; k < p.count[c]; k++) {
            size_t i = p.idx[p.first[c] + k];
            int st = crc < 0 ? crc : (int)rpc_get_u32(&r);
            uint64_t old_key = crc < 0 ? 0 : rpc_get_u64(&r);
            uint64_t old_size = crc < 0 ? 0 : rpc_get_u64(&r);
            struct fs_cap drop = { 0 };
            if (crc == 0) {
                fs_cap_get(&r, &drop);
                (void)rpc_get_u64(&r);   /* the key the server chose: unused here */
            }
            if (crc == 0 && !rpc_reader_ok(&r))
                st = -EIO;
            if (st > 0)
                st = -EIO;
            e[i].status = st;
            if (st == 0 && old_key && old_size)
                drop_data(fs, old_key, &drop, 0, old_size, s[i].server);
        }
        call_free(&p.calls[c]);
    }
    for (size_t i = 0; i < n; i++)
        if (e[i].status == -ENOENT)
            e[i].status = refine_enoent(fs, s[i].path);
    free(wire);
    plan_free(&p);
    slots_free(s, n);
    free(cflags);
    return count_failed(create_status, e, n);
}

static size_t read_size(void *e, size_t i)
{
    const struct adafs_read_entry *r = &((struct adafs_read_entry *)e)[i];
    return r->cap + 64;
}

/* Reads the rest of one READ_BATCH / LIST_PLUS entry answer after its
 * status 0: the stat, and the data if the server sent it (*data NULL if
 * not: chunk 0 is elsewhere or the file is bigger than max). *len can be
 * below *size: a chunk ending in a hole comes back short (zeros). */
static int take_entry(adafs *fs, struct rpc_reader *r, uint32_t max, struct stat *st,
                      const void **data, size_t *len, uint64_t *size)
{
    struct fs_record rec;
    struct fs_cap cap;   /* not kept: a file opened from this stat asks again */
    fs_record_get(r, &rec);
    fs_cap_get(r, &cap);
    uint32_t here = rpc_get_u32(r);
    const void *bytes;
    size_t n = rpc_get_bytes(r, &bytes);
    if (!rpc_reader_ok(r) || n > rec.size || (here && rec.size > max) || (!here && n > 0))
        return -EIO;
    record_to_stat(fs, &rec, st);
    *data = here ? bytes : NULL;
    *len = n;
    *size = rec.size;
    return 0;
}

/* The largest cap of a request's entries: READ_BATCH has one for all. */
static uint32_t plan_cap(const struct plan *p, int c, const struct adafs_read_entry *e)
{
    size_t max = 0;
    for (size_t k = 0; k < p->count[c]; k++) {
        size_t cap = e[p->idx[p->first[c] + k]].cap;
        max = cap > max ? cap : max;
    }
    return (uint32_t)max;
}

int adafs_read_batch(adafs *fs, struct adafs_read_entry *e, size_t n)
{
    struct slot *s = slots_make(fs, n, read_path, e, read_status, 0);
    if (!s)
        return -ENOMEM;
    uint64_t cs = adafs_chunk_size(fs);
    for (size_t i = 0; i < n; i++) {
        e[i].got = 0;
        if (e[i].status == 0 && e[i].cap > cs)
            e[i].status = -EINVAL;
    }
    struct plan p;
    int rc = plan_make(fs, s, n, read_status, e, read_size, &p);
    if (rc < 0) {
        slots_free(s, n);
        return rc;
    }
    for (int c = 0; c < p.ncalls; c++) {
        call_init(&p.calls[c], s[p.idx[p.first[c]]].server, FS_READ_BATCH);
        rpc_put_u32(&p.calls[c].req, (uint32_t)p.count[c]);
        rpc_put_u32(&p.calls[c].req, plan_cap(&p, c, e));
        for (size_t k = 0; k < p.count[c]; k++)
            rpc_put_str(&p.calls[c].req, s[p.idx[p.first[c] + k]].path);
    }
    fs_call(fs, p.calls, p.ncalls);
    for (int c = 0; c < p.ncalls; c++) {
        struct rpc_reader r;
        call_reader(&p.calls[c], &r);
        int crc = p.calls[c].status;
        uint32_t max = plan_cap(&p, c, e);
        if (crc == 0 && rpc_get_u32(&r) != p.count[c])
            crc = -EIO;
        for (size_t k = 0; k < p.count[c]; k++) {
            struct adafs_read_entry *x = &e[p.idx[p.first[c] + k]];
            int st = crc < 0 ? crc : (int)rpc_get_u32(&r);
            if (st > 0 || (crc == 0 && !rpc_reader_ok(&r)))
                st = -EIO;
            const void *data = NULL;
            size_t len = 0;
            uint64_t size = 0;
            if (st == 0)
                st = take_entry(fs, &r, max, &x->st, &data, &len, &size);
            /* The request's cap is its largest entry's: a file may fit it
             * and not this entry's. */
            if (st == 0 && data && size <= x->cap) {
                memcpy(x->buf, data, len);
                memset((char *)x->buf + len, 0, (size_t)size - len);
                x->got = (size_t)size;
            }
            x->status = st;
        }
        call_free(&p.calls[c]);
    }
    for (size_t i = 0; i < n; i++)
        if (e[i].status == -ENOENT)
            e[i].status = refine_enoent(fs, s[i].path);
    plan_free(&p);
    slots_free(s, n);
    return count_failed(read_status, e, n);
}

/* adafs_list_plus: one page's entries handed to the caller's function. */
struct plus_walk {
    adafs *fs;
    uint32_t max;
    char *fill;          /* a file whose data came short is completed here */
    adafs_list_fn fn;
    void *arg;
    int stopped;         /* fn's nonzero answer */
};

static int take_plus_page(void *arg, const struct call *c, int *more, char *after)
{
    struct plus_walk *w = arg;
    struct rpc_reader r;
    call_reader(c, &r);
    uint32_t n = rpc_get_u32(&r);
    for (uint32_t i = 0; i < n; i++) {
        struct adafs_listed e = { .name = rpc_get_str(&r) };
        e.status = (int)rpc_get_u32(&r);
        if (!e.name || !rpc_reader_ok(&r) || e.status > 0)
            return -EIO;
        const void *data = NULL;
        size_t len = 0;
        uint64_t size = 0;
        if (e.status == 0 && take_entry(w->fs, &r, w->max, &e.st, &data, &len, &size) < 0)
            return -EIO;
        if (data && len < size) {
            memcpy(w->fill, data, len);
            memset(w->fill + len, 0, (size_t)size - len);
            data = w->fill;
        }
        e.data = data;
        snprintf(after, FS_PATH_MAX, "%s", e.name);
        int rc = w->fn(w->arg, &e);
        if (rc != 0) {
            w->stopped = rc;
            return 1;
        }
    }
    *more = (int)rpc_get_u32(&r);
    return rpc_reader_done(&r) ? 0 : -EIO;
}

int adafs_list_plus(adafs *fs, const char *dir, size_t max, adafs_list_fn fn, void *arg)
{
    char p[FS_PATH_MAX];
    struct fs_record rec;
    if (max > adafs_chunk_size(fs))
        return -EINVAL;
    int rc = lookup(fs, dir, p, &rec);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(rec.mode))
        return -ENOTDIR;
    struct plus_walk w = { fs, (uint32_t)max, malloc(max ? max : 1), fn, arg, 0 };
    if (!w.fill)
        return -ENOMEM;
    rc = list_pages(fs, p, FS_LIST_PLUS, (uint32_t)max, take_plus_page, &w);
    free(w.fill);
    return w.stopped ? w.stopped : rc;
}
