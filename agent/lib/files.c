/* files: reads and writes on descriptors (files_open.c makes them) and
 * the other descriptor calls. A read is one batch: the size from the metadata
 * server together with every chunk read; holes below the size read as
 * zeros. A write sends each chunk to its server in one batch, then merges
 * the new end into the size (servers keep the maximum, so writers of one
 * shared file never shrink it). O_APPEND reserves its offset on the
 * metadata server first, which makes concurrent appends land apart. The
 * *_fd calls (files_fd.c) do the same with a file of the caller; the
 * calls on a descriptor's state (seek, stat, flags) are in files_desc.c. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Chunk pieces of the byte range [off, off + count). */
struct piece {
    uint64_t index;
    uint32_t chunk_off;
    size_t len;
    size_t buf_off;
};

static size_t split(const adafs *fs, uint64_t off, size_t count, struct piece **out)
{
    uint64_t cs = fs->inst.chunk_size;
    size_t n = count ? (size_t)((off + count - 1) / cs - off / cs + 1) : 0;
    struct piece *pc = calloc(n ? n : 1, sizeof(*pc));
    if (!pc)
        return (size_t)-1;
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t pos = off + done;
        pc[i].index = pos / cs;
        pc[i].chunk_off = (uint32_t)(pos % cs);
        pc[i].len = (size_t)(cs - pos % cs) < count - done ? (size_t)(cs - pos % cs) : count - done;
        pc[i].buf_off = done;
        done += pc[i].len;
    }
    *out = pc;
    return n;
}

void span_bulk(struct call *c, const struct span *src, uint64_t off, size_t len)
{
    c->bulk_len = len;
    if (src->buf) {
        c->bulk = src->buf + off;
    } else {
        c->bulk_fd = src->fd;
        c->bulk_fd_off = src->fd_off + off;
    }
}

void write_call(struct call *c, adafs *fs, uint64_t key, const struct fs_cap *cap,
                uint64_t index, uint32_t chunk_off, const struct span *src, uint64_t src_off,
                size_t len)
{
    call_init(c, chunk_server(fs, key, index), FS_WRITE);
    rpc_put_u64(&c->req, key);
    rpc_put_u64(&c->req, index);
    rpc_put_u32(&c->req, chunk_off);
    rpc_put_u32(&c->req, (uint32_t)len);
    fs_cap_put(&c->req, cap);
    span_bulk(c, src, src_off, len);
}

/* Zeros for the holes of a read into a file. */
static int zero_fill_fd(int fd, uint64_t off, size_t len)
{
    static const char zeros[65536];
    while (len > 0) {
        ssize_t n = syscall(SYS_pwrite64, fd, zeros, len < sizeof(zeros) ? len : sizeof(zeros),
                            (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

/* The size of an open file from a STAT answer (frees the call): its
 * record must still be the descriptor's, else another process replaced
 * the file (ESTALE) or removed it (ENOENT, adafs.h). */
static int stat_size(struct call *c, struct open_file *of, uint64_t *size)
{
    struct fs_record rec;
    struct fs_cap cap;
    struct rpc_reader r;
    call_reader(c, &r);
    fs_record_get(&r, &rec);
    fs_cap_get(&r, &cap);
    int rc = c->status < 0 ? c->status : !rpc_reader_ok(&r) ? -EIO : 0;
    call_free(c);
    if (rc == 0 && rec.key != of->key)
        rc = -ESTALE;
    if (rc == 0 && cap.rights)
        of->cap = cap;   /* fresher */
    *size = rec.size;
    return rc;
}

static void stat_call(struct call *c, adafs *fs, const struct open_file *of)
{
    call_init(c, meta_server(fs, of->path), FS_STAT);
    rpc_put_str(&c->req, of->path);
}

/* The pieces of a read that direct.c may read: those whose call
 * (calls[at[i]]) is at first or above, READ calls not sent. Each gets the
 * answer a READ would have had, or status -ESTALE (send it after all).
 * With ext (adafs_pread_pieces) they are not read: ext[i] gets where
 * their bytes are, and the count as the answer's length. */
struct extent {
    int fd;       /* -1: the piece's bytes are in the caller's buffer */
    off_t pos;
};
struct direct_pieces {
    adafs *fs;
    struct open_file *of;
    const struct piece *pc;
    size_t n;
    struct call *calls;
    const size_t *at;
    size_t first;
    struct extent *ext;
};

static void read_direct_pieces(void *arg)
{
    struct direct_pieces *dp = arg;
    for (size_t i = 0; i < dp->n; i++) {
        if (dp->at[i] < dp->first)
            continue;
        struct call *c = &dp->calls[dp->at[i]];
        ssize_t got = dp->ext ? direct_extent(dp->fs, dp->of, dp->pc[i].index,
                                              dp->pc[i].chunk_off, c->dest_cap,
                                              &dp->ext[i].fd, &dp->ext[i].pos)
                              : direct_read(dp->fs, dp->of, dp->pc[i].index,
                                            dp->pc[i].chunk_off, c->dest_cap, c->dest);
        if (got < 0 && dp->ext)
            dp->ext[i].fd = -1;
        c->status = got >= 0 ? 0 : -ESTALE;
        c->resp_len = got >= 0 ? (size_t)got : 0;
    }
}

/* Appends len bytes at fd's pos (fd >= 0) or at mem to the pieces,
 * joined to the last one where they follow it. */
static void piece_add(struct adafs_piece *p, size_t *n, int fd, off_t pos, const char *mem,
                      size_t len)
{
    if (len == 0)
        return;
    struct adafs_piece *last = *n ? &p[*n - 1] : NULL;
    if (last && fd >= 0 && last->fd == fd && last->off + (off_t)last->len == pos) {
        last->len += len;
        return;
    }
    if (last && fd < 0 && last->fd < 0 && (const char *)last->mem + last->len == mem) {
        last->len += len;
        return;
    }
    p[(*n)++] = (struct adafs_piece){ .fd = fd, .off = fd >= 0 ? pos : 0,
                                      .mem = fd >= 0 ? NULL : mem, .len = len };
}

/* Gives the read's pieces to the caller's take, then checks that every
 * data file it was given is still the file's (direct.c). */
static ssize_t give_pieces(adafs *fs, struct open_file *of, const struct span *dst,
                           const struct adafs_piece *p, size_t n)
{
    int rc = dst->take(dst->take_arg, p, n);
    if (rc < 0)
        return rc;
    int fresh = 1;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = p[j].fd == p[i].fd;
        if (p[i].fd >= 0 && !seen && !direct_still(fs, of, p[i].fd))
            fresh = 0;
    }
    return fresh ? 0 : -EAGAIN;
}

/* A read is one READ per chunk piece. The size of the file is asked in
 * the same batch only when the read may end at it: past the size this
 * descriptor knows, or after a read that came back short (a sparse
 * file's holes: the size tells zeros from the end of the file). If every
 * piece comes back whole, the file holds all of the range, whatever its
 * size is now (truncate drops the data beyond the new size before it
 * returns); if one comes back short without the size, a second round trip
 * asks for it. So reading a file this process knows is one request per
 * piece, and another process's appends (past the known size) and
 * truncates (short pieces) are seen by the next read, as before. */
static ssize_t pread_once(adafs *fs, struct open_file *of, const struct span *dst, size_t count,
                          uint64_t off)
{
    if (S_ISDIR(of->mode))
        return -EISDIR;
    if ((of->flags & O_ACCMODE) == O_WRONLY)
        return -EBADF;
    if (count == 0)
        return 0;
    if (count > SSIZE_MAX)
        count = SSIZE_MAX;
    struct piece *pc;
    size_t n = split(fs, off, count, &pc);
    struct call *calls = n == (size_t)-1 ? NULL : calloc(n + 1, sizeof(*calls));
    if (!calls) {
        if (n != (size_t)-1)
            free(pc);
        return -ENOMEM;
    }
    int c0 = !of->orphan && (of->ask_size || off + count > of->known_size);
    if (c0)
        stat_call(&calls[0], fs, of);
    /* Pieces this node's servers hold are read from their data files
     * (direct.c) while the servers answer the READs of the others: READs
     * fill calls from c0 up, direct pieces from the top down; at[i]: piece
     * i's call. A direct piece whose descriptor turned out stale is then
     * sent as a READ (its call is one already). With take, they are
     * described in ext instead, and out gets the pieces for take (each
     * chunk piece and the zeros after its bytes). */
    size_t *at = malloc(n * sizeof(*at) + 1);
    struct extent *ext = dst->take ? calloc(n ? n : 1, sizeof(*ext)) : NULL;
    struct adafs_piece *out = dst->take ? calloc(2 * n + 1, sizeof(*out)) : NULL;
    if (!at || (dst->take && (!ext || !out))) {
        if (c0)
            call_free(&calls[0]);
        free(calls);
        free(pc);
        free(at);
        free(ext);
        free(out);
        return -ENOMEM;
    }
    int direct = dst->buf && !dst->zeros;
    if (direct) {
        /* adafs_pread_pieces asks every server of the node that holds a
         * piece; adafs_pread the first piece's (direct.c) */
        direct_count(of);
        for (size_t i = 0; i < (dst->take ? n : n > 0); i++) {
            int s = chunk_server(fs, of->key, pc[i].index), asked = 0;
            for (size_t j = i > 8 ? i - 8 : 0; j < i && !asked; j++)
                asked = chunk_server(fs, of->key, pc[j].index) == s;
            if (!asked)
                direct_consider(fs, of, s, dst->take != NULL);
        }
    }
    size_t nread = 0, ndirect = 0;
    for (size_t i = 0; i < n; i++) {
        int local = direct && direct_holds(of, chunk_server(fs, of->key, pc[i].index));
        at[i] = local ? c0 + n - 1 - ndirect++ : c0 + nread++;
        if (ext)
            ext[i].fd = -1;
        struct call *c = &calls[at[i]];
        call_init(c, chunk_server(fs, of->key, pc[i].index), FS_READ);
        rpc_put_u64(&c->req, of->key);
        rpc_put_u64(&c->req, pc[i].index);
        rpc_put_u32(&c->req, pc[i].chunk_off);
        rpc_put_u32(&c->req, (uint32_t)pc[i].len);
        rpc_put_u32(&c->req, dst->zeros ? FS_READ_HOLES : 0);
        fs_cap_put(&c->req, &of->cap);
        c->dest_flags = 1;
        if (dst->buf) {
            c->dest = dst->buf + pc[i].buf_off;
        } else {
            c->dest_fd = dst->fd;
            c->dest_off = dst->fd_off + pc[i].buf_off;
        }
        c->dest_cap = pc[i].len;
    }
    struct direct_pieces dp = { fs, of, pc, n, calls, at, c0 + nread, ext };
    if (nread + c0 > 0)
        fs_call_meanwhile(fs, calls, (int)nread + c0, read_direct_pieces, &dp);
    else
        read_direct_pieces(&dp);
    for (size_t i = c0 + nread; i < c0 + n; i++)
        if (calls[i].status == -ESTALE)
            fs_call1(fs, &calls[i]);
    int whole = 1;
    for (size_t i = 0; i < n && whole; i++) {
        const struct call *c = &calls[at[i]];
        whole = c->status == 0 && c->dest_err == 0 && c->resp_len == pc[i].len;
    }
    uint64_t size = of->orphan ? of->orphan_size : off + count;
    ssize_t rc = 0;
    if (c0) {
        rc = stat_size(&calls[0], of, &size);
    } else if (!whole && !of->orphan) {
        struct call st;
        stat_call(&st, fs, of);
        fs_call1(fs, &st);
        rc = stat_size(&st, of, &size);
    }
    if (rc == 0 && !of->orphan) {
        of->known_size = c0 || !whole ? size : size > of->known_size ? size : of->known_size;
        of->ask_size = !whole;
    }
    uint64_t end = off + count < size ? off + count : size;
    size_t want = rc == 0 && end > off ? (size_t)(end - off) : 0;
    size_t done = 0, nout = 0;
    for (size_t i = 0; i < n; i++) {
        struct call *c = &calls[at[i]];
        if (rc == 0 && done < want && done == pc[i].buf_off) {
            if (c->status < 0 || c->dest_err < 0) {
                rc = c->status < 0 ? c->status : c->dest_err;
            } else {
                /* Short: a hole or a chunk not written yet. Zeros up to the
                 * end of the file, not beyond: the caller's buffer past
                 * what read returns is not ours to write. */
                size_t got_end = pc[i].buf_off + c->resp_len;
                size_t fill_end = pc[i].buf_off + pc[i].len < want ? pc[i].buf_off + pc[i].len : want;
                if (got_end < fill_end && dst->buf)
                    memset(dst->buf + got_end, 0, fill_end - got_end);
                else if (got_end < fill_end && !dst->keep_holes)
                    rc = zero_fill_fd(dst->fd, dst->fd_off + got_end, fill_end - got_end);
                if (rc == 0 && dst->zeros && (c->flags & FS_READ_HOLES) && c->resp_len > 0)
                    *dst->zeros = 1;
                if (rc == 0 && out) {
                    /* The data file's bytes, then the zeros after them. */
                    size_t from_fd = ext[i].fd >= 0 ? (got_end < fill_end ? got_end : fill_end) -
                                                      pc[i].buf_off : 0;
                    piece_add(out, &nout, ext[i].fd, ext[i].pos, NULL, from_fd);
                    piece_add(out, &nout, -1, 0, dst->buf + pc[i].buf_off + from_fd,
                              fill_end - pc[i].buf_off - from_fd);
                }
                if (rc == 0)
                    done += pc[i].len;
            }
        }
        call_free(c);
    }
    free(calls);
    free(at);
    free(pc);
    free(ext);
    if (done > want)
        done = want;
    if (out && done > 0)
        rc = give_pieces(fs, of, dst, out, nout);
    free(out);
    if (out && rc < 0)
        return rc;
    return done > 0 ? (ssize_t)done : rc;
}

/* A SIZE, APPEND or SIZE_UNDO request for an open file. */
static void size_call(struct call *c, adafs *fs, struct open_file *of, uint16_t op,
                      uint64_t value, uint64_t to)
{
    call_init(c, meta_server(fs, of->path), op);
    rpc_put_str(&c->req, of->path);
    rpc_put_u64(&c->req, of->key);
    rpc_put_u64(&c->req, value);
    if (op == FS_SIZE_UNDO)
        rpc_put_u64(&c->req, to);
}

/* Its answer: the size before and after; frees the call. */
static int size_answer(struct call *c, uint64_t *before, uint64_t *after)
{
    struct rpc_reader r;
    call_reader(c, &r);
    *before = rpc_get_u64(&r);
    *after = rpc_get_u64(&r);
    int rc = c->status < 0 ? c->status : rpc_reader_done(&r) ? 0 : -EIO;
    call_free(c);
    return rc;
}

/* After a write failed part way (ENOSPC on one server), chunks after the
 * failed one may still have been written. Beyond the file's end those bytes
 * must go: they would count against the quota, and show through if the file
 * later grew over them. */
static void take_back_tail(adafs *fs, struct open_file *of, uint64_t done_end, uint64_t end)
{
    uint64_t size = of->orphan_size;
    if (!of->orphan) {
        struct fs_record rec;
        if (stat_record(fs, of->path, &rec) < 0 || rec.key != of->key)
            return;
        size = rec.size;
    }
    uint64_t keep = size > done_end ? size : done_end;
    drop_data(fs, of->key, &of->cap, keep, end, -1);
}

static ssize_t pwrite_once(adafs *fs, struct open_file *of, const struct span *src, size_t count,
                           uint64_t off, int size_reserved)
{
    if (S_ISDIR(of->mode))
        return -EISDIR;
    if ((of->flags & O_ACCMODE) == O_RDONLY)
        return -EBADF;
    if (count == 0)
        return 0;
    if (count > SSIZE_MAX)
        count = SSIZE_MAX;
    if (off + count < off || off + count > (uint64_t)INT64_MAX)
        return -EFBIG;
    struct piece *pc;
    size_t n = split(fs, off, count, &pc);
    /* The size update rides in the same batch as the data (one round trip
     * per write); should a chunk fail, it is undone below. */
    int with_size = !of->orphan && !size_reserved;
    struct call *calls = n == (size_t)-1 ? NULL : calloc(n + 1, sizeof(*calls));
    if (!calls) {
        if (n != (size_t)-1)
            free(pc);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        write_call(&calls[i], fs, of->key, &of->cap, pc[i].index, pc[i].chunk_off, src,
                   pc[i].buf_off,
                   pc[i].len);
    if (with_size)
        size_call(&calls[n], fs, of, FS_SIZE, off + count, 0);
    fs_call(fs, calls, (int)n + with_size);
    /* What counts is the leading run of chunks that made it. */
    size_t done = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && calls[i].status < 0)
            rc = calls[i].status;
        else if (rc == 0)
            done += pc[i].len;
        call_free(&calls[i]);
    }
    uint64_t before = 0, after = 0;
    int size_rc = with_size ? size_answer(&calls[n], &before, &after) : 0;
    free(calls);
    free(pc);
    if (rc < 0) {
        uint64_t fair = before > off + done ? before : off + done;
        if (with_size && size_rc == 0 && after == off + count && fair < after) {
            struct call undo;
            size_call(&undo, fs, of, FS_SIZE_UNDO, after, fair);
            fs_call1(fs, &undo);
            call_free(&undo);
        }
        take_back_tail(fs, of, off + done, off + count);
    }
    if (done == 0)
        return rc;
    if (of->orphan && off + done > of->orphan_size)
        of->orphan_size = off + done;
    if (with_size && size_rc == 0 && rc == 0)
        of->known_size = after;
    else if (off + done > of->known_size)
        of->known_size = off + done;
    if (size_rc < 0)
        return size_rc == -ENOENT ? -ESTALE : size_rc;
    return (ssize_t)done;
}

/* A capability about to expire is renewed before the I/O (one STAT);
 * one a chunk server found expired (or none: adafs_open_known) after it,
 * and the I/O sent again. Only a server several users share makes them. */
static int cap_due(struct open_file *of)
{
    if (!of->cap.rights)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    return of->cap.expires_ms < now_ms + FS_CAP_LIFETIME_MS / 4;
}

ssize_t do_pread(adafs *fs, struct open_file *of, const struct span *dst, size_t count,
                 uint64_t off)
{
    if (!of->orphan && cap_due(of))
        cap_refresh(fs, of);
    ssize_t rc = pread_once(fs, of, dst, count, off);
    if (rc == -EKEYEXPIRED && !of->orphan && (rc = cap_refresh(fs, of)) == 0)
        rc = pread_once(fs, of, dst, count, off);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

ssize_t do_pwrite(adafs *fs, struct open_file *of, const struct span *src, size_t count,
                  uint64_t off, int size_reserved)
{
    if (!of->orphan && cap_due(of))
        cap_refresh(fs, of);
    ssize_t rc = pwrite_once(fs, of, src, count, off, size_reserved);
    if (rc == -EKEYEXPIRED && !of->orphan && (rc = cap_refresh(fs, of)) == 0)
        rc = pwrite_once(fs, of, src, count, off, size_reserved);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

ssize_t adafs_pread(adafs *fs, int fd, void *buf, size_t count, off_t offset)
{
    if (offset < 0)
        return -EINVAL;
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    struct span dst = { .buf = buf, .fd = -1 };
    ssize_t n = do_pread(fs, of, &dst, count, (uint64_t)offset);
    fd_put(fs, of);
    return n;
}

ssize_t adafs_pread_pieces(adafs *fs, int fd, void *buf, size_t count, off_t offset,
                           adafs_pieces_fn take, void *arg)
{
    if (offset < 0 || !buf || !take)
        return -EINVAL;
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    struct span dst = { .buf = buf, .fd = -1, .take = take, .take_arg = arg };
    ssize_t n = do_pread(fs, of, &dst, count, (uint64_t)offset);
    fd_put(fs, of);
    return n;
}

ssize_t adafs_pwrite(adafs *fs, int fd, const void *buf, size_t count, off_t offset)
{
    if (offset < 0)
        return -EINVAL;
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    struct span src = { .buf = (char *)buf, .fd = -1 };
    ssize_t n = do_pwrite(fs, of, &src, count, (uint64_t)offset, 0);
    fd_put(fs, of);
    return n;
}


ssize_t adafs_read(adafs *fs, int fd, void *buf, size_t count)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    struct span dst = { .buf = buf, .fd = -1 };
    ssize_t n = do_pread(fs, of, &dst, count, of->offset);
    if (n > 0)
        of->offset += (uint64_t)n;
    fd_put(fs, of);
    return n;
}

/* Reserves [offset, offset + len) at the end of the file. */
static int64_t reserve_append(adafs *fs, struct open_file *of, size_t len)
{
    if (of->orphan)
        return (int64_t)of->orphan_size;
    struct call c;
    size_call(&c, fs, of, FS_APPEND, len, 0);
    fs_call1(fs, &c);
    uint64_t at, after;
    int rc = size_answer(&c, &at, &after);
    return rc < 0 ? (rc == -ENOENT ? -ESTALE : rc) : (int64_t)at;
}

ssize_t adafs_write(adafs *fs, int fd, const void *buf, size_t count)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    ssize_t n;
    struct span src = { .buf = (char *)buf, .fd = -1 };
    if ((of->flags & O_APPEND) && count > 0 && S_ISREG(of->mode) &&
        (of->flags & O_ACCMODE) != O_RDONLY) {
        int64_t at = reserve_append(fs, of, count);
        n = at < 0 ? at : do_pwrite(fs, of, &src, count, (uint64_t)at, 1);
        if (n > 0)
            of->offset = (uint64_t)at + (uint64_t)n;
    } else {
        n = do_pwrite(fs, of, &src, count, of->offset, 0);
        if (n > 0)
            of->offset += (uint64_t)n;
    }
    fd_put(fs, of);
    return n;
}
