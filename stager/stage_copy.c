/* stage_copy: copying one file, or one piece of a big file.
 *
 * Only data is read and written: holes in the source (SEEK_DATA/SEEK_HOLE)
 * are neither read nor written, and all-zero blocks are not written into a
 * fresh destination either (for sources that cannot tell where holes are;
 * copied without our memory, they are made holes after the write).
 * The mode and mtime are set only after the data is complete, so a
 * destination with the source's size and mtime is a finished copy. On
 * failure a partial destination this process alone wrote is removed. */
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "log.h"
#include "stage_internal.h"

struct bigfile {
    struct stage_run *run;
    struct dnode *parent;
    struct bfile *src, *dst;
    struct stat st;
    char *sname, *dname;
    off_t stale_end;          /* the destination may hold old data below this */
    int keep_src;             /* src is the caller's (not closed here) */
    _Atomic long remaining;
    _Atomic int err;
    const char *_Atomic what;
};

struct piece_task {
    struct bigfile *bf;
    off_t off, end;
};

/* Is b's side limited in bytes per second (the limiter is always there,
 * unlimited at rate 0), or charged to the job's I/O budget (ratelimit.h)?
 * Then data moves in steps of STAGE_BUF_SIZE, each charged before it is
 * copied: a whole file in one charge would be copied at once whenever the
 * wait for it ends early (the budget's limits changed). */
static int bytes_limited(const struct backend *b)
{
    return b->bw && (ratelimit_rate(b->bw) != 0 || b->bw->qos_class >= 0);
}

static int all_zero(const char *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The next data extent [*data, *hole) at or after pos, clipped to end. */
static int next_extent(struct bfile *src, off_t pos, off_t end, off_t *data, off_t *hole)
{
    if (src && src->b->ops->seek) {
        off_t d = src->b->ops->seek(src, pos, SEEK_DATA);
        if (d == -ENXIO) {           /* only a hole up to the end of file */
            *data = *hole = end;
            return 0;
        }
        if (d >= 0) {
            off_t h = src->b->ops->seek(src, d, SEEK_HOLE);
            if (h < 0)
                return (int)h;
            *data = d < end ? d : end;
            *hole = h < end ? h : end;
            return 0;
        }
        if (d != -EINVAL && d != -EOPNOTSUPP && d != -ENOTSUP && d != -ENOSYS)
            return (int)d;
    }
    *data = pos;                      /* no sparse information: all data */
    *hole = end;
    return 0;
}

static int write_full(struct bfile *dst, const char *buf, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t w = dst->b->ops->pwrite(dst, buf, n, off);
        if (w < 0)
            return (int)w;
        if (w == 0)
            return -EIO;
        buf += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

/* Copies the data extent [o, hole) from a kernel file straight into dst
 * (pwrite_from): no pass through our memory, like cp's copy_file_range.
 * Without a hash to take, that is all a copy of a big file needs. */
static int copy_extent_direct(struct stage_run *run, struct bfile *src, struct bfile *dst,
                              off_t o, off_t hole, const char **what)
{
    size_t step = bytes_limited(src->b) ? STAGE_BUF_SIZE : STAGE_DIRECT_SIZE;
    while (o < hole) {
        size_t want = hole - o < (off_t)step ? (size_t)(hole - o) : step;
        ratelimit_take(src->b->bw, want);
        ssize_t r = dst->b->ops->pwrite_from(dst, src, o, want, o);
        if (r < 0) {
            *what = "copy source to destination";
            return (int)r;
        }
        if (r == 0)                   /* the source shrank: the rest reads as zeros */
            return 0;
        atomic_fetch_add(&run->bytes, (uint64_t)r);
        o += r;
    }
    return 0;
}

/* Copies the data extent [o, hole) of an adafs file straight into a kernel
 * file (pread_to: spliced from the servers' sockets, one copy). Over a
 * fresh region what no server holds is not written, and the zeros a server
 * sends for a hole in its own data become holes afterwards; over stale data
 * (below stale_end) zeros are written. Steps of a few MiB when the bytes
 * are limited, so the limiter stays smooth. */
static int copy_extent_to(struct stage_run *run, struct bfile *src, struct bfile *dst,
                          off_t o, off_t hole, off_t stale_end, const char **what)
{
    size_t step = bytes_limited(dst->b) ? STAGE_BUF_SIZE : STAGE_DIRECT_SIZE;
    while (o < hole) {
        int fresh = o >= stale_end;
        off_t lim = !fresh && stale_end < hole ? stale_end : hole;
        size_t want = lim - o < (off_t)step ? (size_t)(lim - o) : step;
        ratelimit_take(dst->b->bw, want);
        int zeros = 0;
        ssize_t r = src->b->ops->pread_to(src, dst, o, want, o, fresh, &zeros);
        if (r < 0) {
            *what = "copy source to destination";
            return (int)r;
        }
        if (r == 0)                   /* the source shrank: the rest reads as zeros */
            return 0;
        int rc = fresh && zeros ? dst->b->ops->zeros_to_holes(dst, o, r) : 0;
        if (rc < 0) {
            *what = "make holes of zeros in destination";
            return rc;
        }
        atomic_fetch_add(&run->bytes, (uint64_t)r);
        o += r;
    }
    return 0;
}

/* Whether data can go from src straight into a file of backend dops
 * (stage-out: spliced from the servers' sockets into the page cache)
 * instead of through our buffer; not when it must be hashed. */
static int direct_out_possible(const struct bfile *src, const struct backend_ops *dops,
                               int hashing)
{
    return !hashing && src->b->ops->pread_to && dops->kernel_fds && dops->zeros_to_holes;
}

/* Copies [off, end) of src to dst, hashing the data into h. */
static int copy_range(struct stage_run *run, struct bfile *src, struct bfile *dst, off_t off,
                      off_t end, off_t stale_end, char *buf, XXH3_state_t *h,
                      const char **what)
{
    off_t pos = off;
    int direct = !h && dst->b->ops->pwrite_from && src->b->ops->kernel_fds;
    int direct_out = direct_out_possible(src, dst->b->ops, h != NULL);
    while (pos < end) {
        off_t data, hole;
        int rc = next_extent(src, pos, end, &data, &hole);
        if (rc < 0) {
            *what = "find data in source (SEEK_DATA)";
            return rc;
        }
        if (data > pos && pos < stale_end &&
            (rc = dst->b->ops->punch(dst, pos, (data < stale_end ? data : stale_end) - pos)) < 0) {
            *what = "clear old data in destination";
            return rc;
        }
        if (direct) {
            if ((rc = copy_extent_direct(run, src, dst, data, hole, what)) < 0)
                return rc;
            pos = hole;
            continue;
        }
        if (direct_out) {
            if ((rc = copy_extent_to(run, src, dst, data, hole, stale_end, what)) < 0)
                return rc;
            pos = hole;
            continue;
        }
        for (off_t o = data; o < hole;) {
            size_t want = hole - o < STAGE_BUF_SIZE ? (size_t)(hole - o) : STAGE_BUF_SIZE;
            ssize_t r = src->b->ops->pread(src, buf, want, o);
            if (r < 0) {
                *what = "read source";
                return (int)r;
            }
            if (r == 0)               /* the source shrank: the rest reads as zeros */
                return 0;
            if (h)
                XXH3_64bits_update(h, buf, (size_t)r);
            /* All-zero blocks over a fresh region stay holes: some file
             * systems (adafs) answer SEEK_DATA with "all data". */
            if (o < stale_end || !all_zero(buf, (size_t)r)) {
                if ((rc = write_full(dst, buf, (size_t)r, o)) < 0) {
                    *what = "write destination";
                    return rc;
                }
            }
            atomic_fetch_add(&run->bytes, (uint64_t)r);
            o += r;
        }
        pos = hole;
    }
    return 0;
}

/* Re-reads the destination over the source's data extents (extents_of NULL:
 * all of [off, end)) and compares with the hash taken while copying. */
static int verify_range(struct bfile *extents_of, struct bfile *dst_read, off_t off, off_t end,
                        char *buf, XXH64_hash_t want, const char **what)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return -ENOMEM;
    XXH3_64bits_reset(h);
    int rc = 0;
    for (off_t pos = off; pos < end && rc == 0;) {
        off_t data, hole;
        if ((rc = next_extent(extents_of, pos, end, &data, &hole)) < 0)
            break;
        for (off_t o = data; o < hole;) {
            size_t n = hole - o < STAGE_BUF_SIZE ? (size_t)(hole - o) : STAGE_BUF_SIZE;
            ssize_t r = dst_read->b->ops->pread(dst_read, buf, n, o);
            if (r <= 0) {
                rc = r < 0 ? (int)r : -EIO;
                break;
            }
            XXH3_64bits_update(h, buf, (size_t)r);
            o += r;
        }
        pos = hole;
    }
    if (rc == 0 && XXH3_64bits_digest(h) != want)
        rc = -EIO;
    if (rc < 0)
        *what = rc == -EIO ? "verify: destination differs from source (XXH3)"
                           : "verify: re-read destination";
    XXH3_freeState(h);
    return rc;
}

static int verify_file(struct bdir *dir, const char *name, struct bfile *extents_of,
                       off_t off, off_t end, char *buf, XXH64_hash_t want, const char **what)
{
    struct bfile *f;
    struct stat st;
    int rc = dir->b->ops->open_read(dir, name, 0, &f, &st);
    if (rc < 0) {
        *what = "verify: open destination";
        return rc;
    }
    rc = verify_range(extents_of, f, off, end, buf, want, what);
    f->b->ops->close(f);
    return rc;
}

static void copy_small(struct pool_thread *self, struct dnode *parent, struct bfile *src,
                       const struct stat *sst, const char *dname)
{
    struct stage_run *run = parent->run;
    struct bdir *dd = parent->dst;
    char *buf = pool_scratch(self);
    const char *what = "read source";
    size_t len = 0;
    int rc = 0;
    while (len < (size_t)sst->st_size) {
        ssize_t r = src->b->ops->pread(src, buf + len, (size_t)sst->st_size - len, (off_t)len);
        if (r <= 0) {
            rc = (int)r;
            break;
        }
        len += (size_t)r;
    }
    if (rc == 0) {
        what = "create destination";
        rc = dd->b->ops->create_write(dd, dname, sst->st_mode, buf, len, &sst->st_mtim);
    }
    if (rc == 0 && run->opt.verify)
        rc = verify_file(dd, dname, NULL, 0, (off_t)len, buf, XXH3_64bits(buf, len), &what);
    if (rc < 0) {
        stage_fail_at(run, src->dir, src->name, -rc, what);
        if (strcmp(what, "read source") != 0)
            dd->b->ops->unlink_at(dd, dname);
    } else {
        atomic_fetch_add(&run->files, 1);
        atomic_fetch_add(&run->bytes, len);
    }
}

/* Whether src can become a new destination file in one request taken
 * straight from src's file: no holes to keep, no hash to take. Under a
 * byte limit only files of a few MiB, so the limiter stays smooth. */
static int whole_from_possible(const struct bfile *src, const struct backend *db,
                               const struct stat *sst, int hashing)
{
    uint64_t max = bytes_limited(src->b) && db->create_from_max > STAGE_BUF_SIZE
                       ? STAGE_BUF_SIZE : db->create_from_max;
    return !hashing && db->ops->create_write_from && src->b->ops->kernel_fds &&
           (uint64_t)sst->st_size <= max &&
           (uint64_t)sst->st_blocks * 512 >= (uint64_t)sst->st_size;
}

static void copy_whole_from(struct dnode *parent, struct bfile *src, const struct stat *sst,
                            const char *dname)
{
    struct stage_run *run = parent->run;
    struct bdir *dd = parent->dst;
    size_t len = (size_t)sst->st_size;
    ratelimit_take(src->b->bw, len);
    int rc = dd->b->ops->create_write_from(dd, dname, sst->st_mode, src, len, &sst->st_mtim);
    if (rc < 0) {
        stage_fail_at(run, src->dir, src->name, -rc,
                      rc == -ENODATA ? "source shrank during the copy" : "copy to destination");
        dd->b->ops->unlink_at(dd, dname);
    } else {
        atomic_fetch_add(&run->files, 1);
        atomic_fetch_add(&run->bytes, len);
    }
}

void small_batch_flush(struct small_batch *sb)
{
    if (sb->n == 0)
        return;
    struct stage_run *run = sb->parent->run;
    struct bdir *dd = sb->parent->dst;
    int rc = dd->b->ops->create_many(dd, sb->e, sb->n);
    for (size_t i = 0; i < sb->n; i++) {
        int err = rc < 0 ? rc : sb->e[i].status;
        if (err < 0) {
            stage_fail_at(run, sb->parent->src, sb->snames[i], -err, "create destination");
            dd->b->ops->unlink_at(dd, sb->e[i].name);
        } else {
            atomic_fetch_add(&run->files, 1);
            atomic_fetch_add(&run->bytes, sb->e[i].len);
        }
    }
    sb->n = sb->used = 0;
}

/* Reads a small file into the batch; it is created at the next flush. */
static void batch_small(struct small_batch *sb, struct bfile *src, const struct stat *sst,
                        const char *dname)
{
    size_t size = (size_t)sst->st_size;
    if (sb->n == SMALL_BATCH_FILES || sb->used + size > sb->cap)
        small_batch_flush(sb);
    char *buf = sb->buf + sb->used;
    size_t len = 0;
    int rc = 0;
    while (len < size) {
        ssize_t r = src->b->ops->pread(src, buf + len, size - len, (off_t)len);
        if (r <= 0) {
            rc = (int)r;
            break;
        }
        len += (size_t)r;
    }
    if (rc < 0) {
        stage_fail_at(sb->parent->run, src->dir, src->name, -rc, "read source");
        return;
    }
    /* In a files task the source and destination names are the same. */
    sb->snames[sb->n] = dname;
    sb->e[sb->n++] = (struct bcreate){ .name = dname, .mode = sst->st_mode, .data = buf,
                                       .len = len, .mtime = sst->st_mtim };
    sb->used += len;
}

void copy_file(struct pool_thread *self, struct dnode *parent, struct bfile *src,
               const struct stat *sst, const char *dname, struct small_batch *sb)
{
    struct stage_run *run = parent->run;
    struct bdir *dd = parent->dst;
    const struct backend_ops *dops = dd->b->ops;
    if (sb && sb->parent == parent && (uint64_t)sst->st_size <= dops->create_many_max) {
        batch_small(sb, src, sst, dname);
        src->b->ops->close(src);
        return;
    }
    /* This copy needs the scratch buffer that holds the batch's data. */
    if (sb)
        small_batch_flush(sb);
    off_t whole_max = direct_out_possible(src, dops, run->opt.verify) ? STAGE_DIRECT_OUT_MIN
                                                                     : STAGE_SMALL_MAX;
    if (whole_from_possible(src, dd->b, sst, run->opt.verify)) {
        copy_whole_from(parent, src, sst, dname);
        src->b->ops->close(src);
        return;
    }
    if (sst->st_size <= whole_max) {
        copy_small(self, parent, src, sst, dname);
        src->b->ops->close(src);
        return;
    }
    char *buf = pool_scratch(self);
    const char *what = "create destination";
    struct bfile *dst;
    int rc = dops->open_write(dd, dname, 1, S_IRUSR | S_IWUSR, &dst);
    if (rc == 0) {
        XXH3_state_t *h = run->opt.verify ? XXH3_createState() : NULL;
        if (h)
            XXH3_64bits_reset(h);
        rc = copy_range(run, src, dst, 0, sst->st_size, 0, buf, h, &what);
        if (rc == 0 && (rc = dops->truncate(dst, sst->st_size)) < 0)
            what = "set size of destination";
        if (rc == 0 && h)
            rc = verify_file(dd, dname, src, 0, sst->st_size, buf, XXH3_64bits_digest(h), &what);
        if (rc == 0 && (rc = dops->set_attrs(dst, sst->st_mode, &sst->st_mtim)) < 0)
            what = "set mode and mtime";
        int crc = dops->close(dst);
        if (rc == 0 && crc < 0) {
            rc = crc;
            what = "close destination";
        }
        XXH3_freeState(h);
        if (rc < 0)
            dops->unlink_at(dd, dname);
    }
    if (rc < 0)
        stage_fail_at(run, src->dir, src->name, -rc, what);
    else
        atomic_fetch_add(&run->files, 1);
    src->b->ops->close(src);
}

static void free_bigfile(struct bigfile *bf)
{
    free(bf->sname);
    free(bf->dname);
    free(bf);
}

static void bigfile_done(struct bigfile *bf)
{
    if (atomic_fetch_sub(&bf->remaining, 1) != 1)
        return;
    struct stage_run *run = bf->run;
    const struct backend_ops *dops = bf->dst->b->ops;
    /* Of several workers, the coordinator has the file finalized once all
     * its pieces are in (and it is never removed: others wrote it too). */
    int single = run->dist == NULL;
    int err = atomic_load(&bf->err);
    const char *what = atomic_load(&bf->what);
    if (!err && single) {
        int rc = dops->set_attrs(bf->dst, bf->st.st_mode, &bf->st.st_mtim);
        if (rc < 0) {
            err = -rc;
            what = "set mode and mtime";
        }
    }
    int crc = dops->close(bf->dst);
    if (!err && crc < 0) {
        err = -crc;
        what = "close destination";
    }
    if (err) {
        stage_fail_at(run, bf->parent->src, bf->sname, err, what);
        atomic_store(&bf->parent->failed, 1);
        if (single)
            dops->unlink_at(bf->parent->dst, bf->dname);
    } else if (single) {
        atomic_fetch_add(&run->files, 1);
    }
    if (!bf->keep_src)
        bf->src->b->ops->close(bf->src);
    dnode_release(bf->parent);
    free_bigfile(bf);
}

static void piece_task(struct pool_thread *self, void *arg)
{
    struct piece_task *t = arg;
    struct bigfile *bf = t->bf;
    struct stage_run *run = bf->run;
    char *buf = pool_scratch(self);
    const char *what = NULL;
    if (!atomic_load(&bf->err)) {
        XXH3_state_t *h = run->opt.verify ? XXH3_createState() : NULL;
        if (h)
            XXH3_64bits_reset(h);
        int rc = copy_range(run, bf->src, bf->dst, t->off, t->end, bf->stale_end, buf, h, &what);
        if (rc == 0 && h)
            rc = verify_file(bf->parent->dst, bf->dname, bf->src, t->off, t->end, buf,
                             XXH3_64bits_digest(h), &what);
        XXH3_freeState(h);
        int none = 0;
        if (rc < 0 && atomic_compare_exchange_strong(&bf->err, &none, -rc))
            atomic_store(&bf->what, what);
        if (rc == 0)
            atomic_fetch_add(&run->pieces, 1);
    }
    free(t);
    bigfile_done(bf);
}

/* Queues pieces [first, last) of bf: each its own task, so the threads
 * share a big file. Takes over the caller's hold on bf. */
static void queue_pieces(struct pool_thread *self, struct bigfile *bf, uint64_t ps,
                         uint64_t first, uint64_t last)
{
    uint64_t size = (uint64_t)bf->st.st_size;
    for (uint64_t i = first; i < last; i++) {
        struct piece_task *t = malloc(sizeof(*t));
        uint64_t end = (i + 1) * ps < size ? (i + 1) * ps : size;
        if (t)
            *t = (struct piece_task){ bf, (off_t)(i * ps), (off_t)end };
        atomic_fetch_add(&bf->remaining, 1);
        if (!t || pool_push(bf->run->pool, self, piece_task, t) < 0) {
            atomic_fetch_sub(&bf->remaining, 1);
            free(t);
            int none = 0;
            if (atomic_compare_exchange_strong(&bf->err, &none, ENOMEM))
                atomic_store(&bf->what, "queue pieces");
            break;
        }
    }
    bigfile_done(bf);
}

static struct bigfile *new_bigfile(struct stage_run *run, struct dnode *parent,
                                   const char *sname, const char *dname)
{
    struct bigfile *bf = calloc(1, sizeof(*bf));
    if (!bf || !(bf->sname = strdup(sname)) || !(bf->dname = strdup(dname))) {
        if (bf)
            free(bf->sname);
        free(bf);
        stage_fail_at(run, parent->src, sname, ENOMEM, "copy");
        return NULL;
    }
    bf->run = run;
    bf->parent = parent;
    return bf;
}

void copy_split(struct pool_thread *self, struct dnode *parent, const char *sname,
                const char *dname, const char *rel, const struct stat *sst, int follow)
{
    struct stage_run *run = parent->run;
    uint64_t ps = run->piece_size, size = (uint64_t)sst->st_size;
    struct bdir *sd = parent->src, *dd = parent->dst;
    struct stat dst;
    (void)rel;
    if (!parent->fresh && dd->b->ops->stat_at(dd, dname, 0, &dst) == 0 &&
        S_ISREG(dst.st_mode) && dst.st_size == sst->st_size &&
        dst.st_mtim.tv_sec == sst->st_mtim.tv_sec && dst.st_mtim.tv_nsec == sst->st_mtim.tv_nsec) {
        atomic_fetch_add(&run->unchanged, 1);
        return;
    }
    struct bigfile *bf = new_bigfile(run, parent, sname, dname);
    if (!bf)
        return;
    const char *what = "open source";
    int rc = sd->b->ops->open_read(sd, sname, follow, &bf->src, &bf->st);
    if (rc == 0 && bf->st.st_size != sst->st_size) {
        rc = -EBUSY;
        what = "source changed size during the copy";
    }
    if (rc == 0) {
        what = "open destination";
        rc = dd->b->ops->open_write(dd, dname, 1, S_IRUSR | S_IWUSR, &bf->dst);
        if (rc == 0 && (rc = dd->b->ops->truncate(bf->dst, sst->st_size)) < 0) {
            what = "set size of destination";
            dd->b->ops->close(bf->dst);
        }
    }
    if (rc < 0) {
        if (bf->src)
            sd->b->ops->close(bf->src);
        stage_fail_at(run, sd, sname, -rc, what);
        free_bigfile(bf);
        return;
    }
    dnode_hold(parent);
    atomic_store(&bf->remaining, 1);     /* ours, until all pieces are queued */
    queue_pieces(self, bf, ps, 0, (size + ps - 1) / ps);
}

void copy_pieces(struct pool_thread *self, struct dnode *parent, struct bfile *src,
                 const char *sname, const char *dname, const struct stat *sst,
                 uint64_t piece_size, uint64_t first, uint64_t last, int follow)
{
    struct stage_run *run = parent->run;
    struct bdir *sd = parent->src, *dd = parent->dst;
    struct bigfile *bf = new_bigfile(run, parent, sname, dname);
    if (!bf) {
        atomic_store(&parent->failed, 1);
        return;
    }
    /* The worker that found the file sized the destination; it is only
     * written here, over nothing stale (it was emptied first). */
    const char *what = "open source";
    int rc = 0;
    if (src) {
        bf->src = src;
        bf->keep_src = 1;            /* checked against sst when it was opened */
        bf->st = *sst;
    } else {
        rc = sd->b->ops->open_read(sd, sname, follow, &bf->src, &bf->st);
    }
    if (rc == 0 && (bf->st.st_size != sst->st_size ||
                    bf->st.st_mtim.tv_sec != sst->st_mtim.tv_sec ||
                    bf->st.st_mtim.tv_nsec != sst->st_mtim.tv_nsec)) {
        rc = -EBUSY;
        what = "source changed during the copy";
    }
    if (rc == 0) {
        what = "open destination";
        rc = dd->b->ops->open_write(dd, dname, 0, S_IRUSR | S_IWUSR, &bf->dst);
    }
    if (rc < 0) {
        if (bf->src && !bf->keep_src)
            sd->b->ops->close(bf->src);
        stage_fail_at(run, sd, sname, -rc, what);
        atomic_store(&parent->failed, 1);
        free_bigfile(bf);
        return;
    }
    dnode_hold(parent);
    atomic_store(&bf->remaining, 1);
    queue_pieces(self, bf, piece_size, first, last);
}
