/* chunks: file data and the per-node byte quota.
 *
 * The chunks of one file that this server holds live in one sparse local
 * file, <root>/data/<data key in hex>, each at its place in the file (chunk
 * i at i * chunk size), the other servers' chunks being holes. One local
 * file per file, not per chunk: creating an inode per 512 KiB was the most
 * expensive part of a large write, and truncate becomes one ftruncate.
 *
 * The local files stay open across requests (datafile.c), and nothing a
 * request does costs time in proportion to the file's size or the offset:
 * a READ looks for holes (SEEK_HOLE, which on tmpfs walks the page cache
 * from the offset to the next hole) only when the client asks, and a write
 * only when its quota check needs to know.
 *
 * The quota counts the blocks the local files occupy. A write that might
 * pass it fails with ENOSPC before anything is written, so nothing already
 * written is lost; what it really allocated is settled afterwards. Writes to
 * one local file are serialised by its stripe lock so that the allocation
 * each one measures is its own.
 *
 * Small files are the exception: creating an inode on the local file system
 * was the largest part of the server's CPU time per 4 KiB file on ext4. So
 * chunk 0 of a file, as long as it
 * is no longer than inline_max and this server holds no local file for the
 * key, is kept inline: a RocksDB value under the data key (meta_blob_*),
 * holes as zeros. The first write that does not fit (past inline_max, a
 * streamed write, or any other chunk of the key on this server) creates the
 * local file and moves the inline bytes into it, under the key's lock. So a
 * key has inline data or a local file, never both outside that lock; a
 * reader looks for inline data first, and the move creates the file before
 * dropping the inline copy, so a read never sees neither. Inline bytes count
 * against the quota by their length. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"

/* Largest inline chunk 0 (below the chunk size when that is smaller). */
#define INLINE_MAX (64u << 10)

int chunks_init(struct server *srv, char *err, size_t errlen)
{
    srv->inline_max = srv->chunk_size < INLINE_MAX ? srv->chunk_size : INLINE_MAX;
    snprintf(srv->data_dir, sizeof(srv->data_dir), "%s/data", srv->root);
    if (mkdir(srv->data_dir, 0700) < 0 && !(errno == EEXIST && srv->keep_root)) {
        int rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", srv->data_dir, strerror(errno));
        return rc;
    }
    return datafile_init(srv, err, errlen);
}

static pthread_mutex_t *data_lock(struct server *srv, uint64_t key)
{
    return &srv->chunk_locks[(key * 0x9E3779B97F4A7C15ull >> 32) % SERVER_STRIPES];
}

static uint64_t allocated(const struct stat *st)
{
    return (uint64_t)st->st_blocks * 512;
}

/* [pos, pos + len) rounded out to blocks: the most writing it can
 * allocate. */
static uint64_t worst_case(uint64_t pos, size_t len)
{
    return ((pos + len + 4095) & ~4095ull) - (pos & ~4095ull);
}

/* Empties what a failed splice left in the pipe (the next user of the
 * connection's pipe must find it empty); -EPIPE if it cannot. */
static int drain(int pipe_rd, size_t n)
{
    char sink[4096];
    while (n > 0) {
        ssize_t k = read(pipe_rd, sink, n < sizeof(sink) ? n : sizeof(sink));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -EPIPE;
        n -= (size_t)k;
    }
    return 0;
}

/* Copies up to len bytes of file in from *in_off into file out at *out_off
 * (both advanced) without their passing through user space: with
 * copy_file_range, and where the kernel will not copy between the two
 * file systems (EXDEV: a client's file on the parallel file system) with
 * splice through pipe. Returns the count (short at the end of in) or
 * -errno. */
static ssize_t copy_range(int in, off_t *in_off, int out, off_t *out_off, size_t len,
                          const int pipe[2])
{
    size_t done = 0;
    bool by_splice = false;
    while (done < len) {
        size_t want = len - done;
        ssize_t n;
        if (!by_splice) {
            n = copy_file_range(in, in_off, out, out_off, want, 0);
            if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS) &&
                pipe[0] >= 0) {
                by_splice = true;
                continue;
            }
        } else {
            n = splice(in, in_off, pipe[1], NULL, want < STREAM_PIPE_SIZE ? want : STREAM_PIPE_SIZE,
                       SPLICE_F_MOVE);
            for (ssize_t left = n; left > 0;) {
                ssize_t put = splice(pipe[0], NULL, out, out_off, (size_t)left, SPLICE_F_MOVE);
                if (put < 0 && errno == EINTR)
                    continue;
                if (put <= 0) {
                    int rc = put < 0 ? -errno : -EIO;
                    return drain(pipe[0], (size_t)left) < 0 ? -EPIPE : rc;
                }
                left -= put;
            }
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* The data of an FS_BULK_FD request: rest->left bytes of the client's
 * file. */
static int copy_in(int fd, off_t *pos, struct stream *rest, const char *path)
{
    off_t from = (off_t)rest->src_off;
    ssize_t n = copy_range(rest->src_fd, &from, fd, pos, rest->left, rest->pipe);
    if (n >= 0 && (size_t)n < rest->left)
        return -ENODATA;   /* the client's file is shorter than it said */
    if (n < 0)
        log_error("cannot copy into %s from a client's file: %s", path, strerror((int)-n));
    rest->left = 0;
    return n < 0 ? (int)n : 0;
}

/* Moves n bytes from the socket of rest into fd at *pos through the
 * connection's pipe: the data goes from the socket buffers to the page
 * cache without a copy through user space. On a failure on the file side
 * the pipe is emptied, so the connection stays in step. */
static int splice_in(int fd, off_t *pos, struct stream *rest, const char *path)
{
    if (rest->sock < 0)
        return copy_in(fd, pos, rest, path);
    int rc = 0;
    while (rest->left > 0) {
        size_t want = rest->left < STREAM_PIPE_SIZE ? rest->left : STREAM_PIPE_SIZE;
        ssize_t got = splice(rest->sock, NULL, rest->pipe[1], NULL, want, SPLICE_F_MOVE | SPLICE_F_MORE);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? -errno : -ECONNRESET;   /* the connection is gone */
        rest->left -= (size_t)got;
        while (got > 0) {
            ssize_t put = rc == 0 ? splice(rest->pipe[0], NULL, fd, pos, (size_t)got,
                                           SPLICE_F_MOVE)
                                  : -1;
            if (put < 0 && rc == 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                if (rc == 0) {
                    rc = put < 0 ? -errno : -EIO;
                    log_error("cannot write %s: %s", path, strerror(-rc));
                }
                char sink[4096];
                ssize_t n = read(rest->pipe[0], sink, (size_t)got < sizeof(sink) ? (size_t)got : sizeof(sink));
                if (n <= 0)
                    return -EPIPE;
                put = n;
            }
            got -= put;
        }
        if (rc < 0)
            return rc;
    }
    return rc;
}

/* Writes len bytes at pos into the inline chunk 0 of key (pos + len <=
 * inline_max), within the quota. Under the key's lock. */
static int inline_write(struct server *srv, uint64_t key, uint64_t pos, const void *data,
                        size_t len)
{
    static _Thread_local uint8_t buf[INLINE_MAX];
    int had = meta_blob_get(srv, key, buf, sizeof(buf));
    if (had < 0 && had != -ENOENT)
        return had;
    size_t old = had < 0 ? 0 : (size_t)had, end = (size_t)pos + len;
    size_t now = end > old ? end : old;
    int rc = quota_take(srv, now - old);
    if (rc < 0)
        return rc;
    if (pos > old)
        memset(buf + old, 0, (size_t)pos - old);
    memcpy(buf + pos, data, len);
    rc = meta_blob_put(srv, key, buf, now);
    if (rc < 0)
        quota_give(srv, now - old);
    return rc;
}

/* The local file of key was just created (fd): moves the inline chunk 0,
 * if any, into it. Under the key's lock. */
static int inline_move_out(struct server *srv, uint64_t key, int fd, const char *path)
{
    static _Thread_local uint8_t buf[INLINE_MAX];
    int len = meta_blob_get(srv, key, buf, sizeof(buf));
    if (len == -ENOENT)
        return 0;
    if (len < 0)
        return len;
    for (size_t done = 0; done < (size_t)len;) {
        ssize_t n = pwrite(fd, buf + done, (size_t)len - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? -errno : -EIO;
            log_error("cannot move inline data into %s: %s", path, strerror(-rc));
            return rc;
        }
        done += (size_t)n;
    }
    int rc = meta_blob_del(srv, key);
    if (rc < 0)
        return rc;
    /* The blocks replace the inline bytes in the count (a little over the
     * quota at worst, as when a write's allocation is settled). */
    struct stat st;
    if (fstat(fd, &st) == 0)
        atomic_fetch_add(&srv->used, allocated(&st));
    quota_give(srv, (uint64_t)len);
    return 0;
}

/* For log lines: the local file of key. */
static void data_path(const struct server *srv, uint64_t key, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%016llx", srv->data_dir, (unsigned long long)key);
}

/* Takes from the quota what writing [pos, pos + len) of f (as st saw it)
 * may allocate; *took says how much. Nothing for a range that is data
 * already (an overwrite); else all of it, rounded out to blocks. Where
 * that does not fit, a sparse file's range is looked at more closely (a
 * hole search, which costs time in proportion to the data it passes:
 * only where the answer matters). */
static int quota_for_write(struct server *srv, struct datafile *f, const struct stat *st,
                           uint64_t pos, size_t len, uint64_t *took)
{
    *took = 0;
    uint64_t worst = worst_case(pos, len);
    bool dense = allocated(st) >= ((uint64_t)st->st_size + 4095) / 4096 * 4096;
    if (dense && pos + len <= (uint64_t)st->st_size)
        return 0;
    int rc = quota_take(srv, worst);
    if (rc == -ENOSPC && datafile_all_data(f, st, pos, len))
        return 0;
    if (rc == 0)
        *took = worst;
    return rc;
}

int chunks_write(struct server *srv, uint64_t key, uint64_t index, uint64_t offset,
                 const void *data, size_t have, struct stream *rest)
{
    size_t len = have + (rest ? rest->left : 0);
    if (offset + len > srv->chunk_size)
        return -EINVAL;
    if (hash_place_chunk(key, index, srv->nservers) != srv->index) {
        log_error("chunk %llu of %016llx sent to server %u, but it belongs elsewhere",
                  (unsigned long long)index, (unsigned long long)key, srv->index);
        return -EINVAL;
    }
    char path[4300];
    data_path(srv, key, path, sizeof(path));
    uint64_t pos = index * srv->chunk_size + offset;
    pthread_mutex_t *lock = data_lock(srv, key);
    pthread_mutex_lock(lock);
    int rc = 0;
    struct datafile *f = datafile_get(srv, key, 0);
    if (!f && errno == ENOENT) {
        if (index == 0 && !rest && pos + len <= srv->inline_max) {
            rc = inline_write(srv, key, pos, data, have);
            pthread_mutex_unlock(lock);
            return rc;
        }
        f = datafile_get(srv, key, 1);
        /* Only chunk 0's server can hold inline bytes of the key. */
        if (f && hash_place_chunk(key, 0, srv->nservers) == srv->index &&
            (rc = inline_move_out(srv, key, datafile_fd(f), path)) < 0) {
            datafile_remove(srv, key);
            datafile_put(f);
            pthread_mutex_unlock(lock);
            return rc;
        }
    }
    struct stat st;
    if (!f || fstat(datafile_fd(f), &st) < 0) {
        rc = -errno;
        log_error("cannot open %s: %s", path, strerror(errno));
        if (f)
            datafile_put(f);
        pthread_mutex_unlock(lock);
        return rc;
    }
    int fd = datafile_fd(f);
    uint64_t before = allocated(&st), took;
    rc = quota_for_write(srv, f, &st, pos, len, &took);
    int charged = rc == 0;
    size_t done = 0;
    while (rc == 0 && done < have) {
        ssize_t n = pwrite(fd, (const char *)data + done, have - done, (off_t)(pos + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            log_error("cannot write %s: %s", path, strerror(-rc));
        } else {
            done += (size_t)n;
        }
    }
    off_t at = (off_t)(pos + done);
    if (rc == 0 && rest && rest->left > 0)
        rc = splice_in(fd, &at, rest, path);
    if (charged) {
        /* Settle: keep what was really allocated, give back the rest. */
        uint64_t after = fstat(fd, &st) == 0 ? allocated(&st) : before + took;
        uint64_t grown = after > before ? after - before : 0;
        if (grown > took)
            atomic_fetch_add(&srv->used, grown - took);
        else
            quota_give(srv, took - grown);
    }
    datafile_put(f);
    pthread_mutex_unlock(lock);
    return rc;
}

void chunks_truncate(struct server *srv, uint64_t key, uint64_t new_size, uint64_t old_size)
{
    if (old_size <= new_size)
        return;
    pthread_mutex_t *lock = data_lock(srv, key);
    pthread_mutex_lock(lock);
    if (new_size < srv->inline_max) {
        static _Thread_local uint8_t buf[INLINE_MAX];
        int had = meta_blob_get(srv, key, buf, sizeof(buf));
        if (had > 0 && (uint64_t)had > new_size) {
            int rc = new_size == 0 ? meta_blob_del(srv, key)
                                   : meta_blob_put(srv, key, buf, (size_t)new_size);
            if (rc == 0)
                quota_give(srv, (uint64_t)had - new_size);
        }
    }
    struct datafile *f = datafile_get(srv, key, 0);
    struct stat st;
    if (f && fstat(datafile_fd(f), &st) == 0) {
        uint64_t had = allocated(&st);
        if (new_size == 0) {
            if (datafile_remove(srv, key) == 0)
                quota_give(srv, had);
        } else if ((uint64_t)st.st_size > new_size) {
            int fd = datafile_fd(f);
            datafile_truncated(f);
            if (ftruncate(fd, (off_t)new_size) == 0 && fstat(fd, &st) == 0) {
                quota_give(srv, had - allocated(&st));
            } else {
                char path[4300];
                data_path(srv, key, path, sizeof(path));
                log_error("cannot truncate %s: %s", path, strerror(errno));
            }
        }
    }
    if (f)
        datafile_put(f);
    pthread_mutex_unlock(lock);
}

int op_write(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), index = rpc_get_u64(req);
    uint32_t offset = rpc_get_u32(req), len = rpc_get_u32(req);
    struct fs_cap cap;
    fs_cap_get(req, &cap);
    /* The data: what is in memory, then (a large write) what is still in
     * the socket. */
    const void *data;
    size_t have = rpc_get_rest(req, &data);
    size_t rest = rep->rest ? rep->rest->left : 0;
    if (!rpc_reader_ok(req) || have + rest != len)
        return -EBADMSG;
    int rc = access_cap_check(srv, rep, key, &cap, FS_CAP_WRITE);
    if (rc < 0)
        return rc;
    return chunks_write(srv, key, index, offset, data, have, rep->rest);
}

/* Appends up to len bytes from offset of a file's inline chunk 0 to out;
 * returns how many, -ENOENT when the chunk is not inline, or -errno. */
static int read_inline(struct server *srv, uint64_t key, uint64_t offset, size_t len,
                       struct rpc_writer *out)
{
    static _Thread_local uint8_t buf[INLINE_MAX];
    int had = meta_blob_get(srv, key, buf, sizeof(buf));
    if (had < 0)
        return had;
    size_t avail = (size_t)had > offset ? (size_t)had - offset : 0;
    size_t n = avail < len ? avail : len;
    rpc_put_raw(out, buf + offset, n);
    return rpc_writer_ok(out) ? (int)n : -ENOMEM;
}

int op_read(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), index = rpc_get_u64(req);
    uint32_t offset = rpc_get_u32(req), len = rpc_get_u32(req), asked = rpc_get_u32(req);
    struct fs_cap cap;
    fs_cap_get(req, &cap);
    if (!rpc_reader_done(req))
        return -EBADMSG;
    int rc = access_cap_check(srv, rep, key, &cap, FS_CAP_READ);
    if (rc < 0)
        return rc;
    if ((uint64_t)offset + len > srv->chunk_size)
        return -EINVAL;
    size_t flags_at = rep->out.len;
    if (index == 0 && offset < srv->inline_max) {
        rpc_put_u32(&rep->out, FS_READ_HOLES);   /* inline bytes keep a gap as zeros */
        int n = read_inline(srv, key, offset, len, &rep->out);
        if (n != -ENOENT)
            return n < 0 ? n : 0;
        rep->out.len = flags_at;
    }
    struct datafile *f = datafile_get(srv, key, 0);
    if (!f && errno == ENOENT) {
        rpc_put_u32(&rep->out, 0);               /* nothing here: the client zero-fills */
        return 0;
    }
    struct stat st;
    if (!f || fstat(datafile_fd(f), &st) < 0) {
        rc = -errno;
        if (f)
            datafile_put(f);
        return rc;
    }
    uint64_t pos = index * srv->chunk_size + offset;
    uint64_t avail = (uint64_t)st.st_size > pos ? (uint64_t)st.st_size - pos : 0;
    rep->file = f;
    rep->file_off = pos;
    rep->file_len = avail < len ? (size_t)avail : len;
    /* Only a copier that keeps holes asks: it then need not scan for zeros. */
    bool holes = (asked & FS_READ_HOLES) && rep->file_len &&
                 !datafile_all_data(f, &st, pos, rep->file_len);
    rpc_put_u32(&rep->out, holes ? FS_READ_HOLES : 0);
    return 0;
}

int chunks_read_into(struct server *srv, uint64_t key, uint64_t index, size_t len,
                     struct rpc_writer *out)
{
    if (len > srv->chunk_size)
        return -EINVAL;
    if (index == 0 && len <= srv->inline_max) {
        int n = read_inline(srv, key, 0, len, out);
        if (n != -ENOENT)
            return n;
    }
    struct datafile *f = datafile_get(srv, key, 0);
    if (!f)
        return errno == ENOENT ? 0 : -errno;
    size_t at = out->len;
    uint8_t *dst = rpc_put_raw(out, NULL, len);
    if (!dst) {
        datafile_put(f);
        return -ENOMEM;
    }
    size_t done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t n = pread(datafile_fd(f), dst + done, len - done,
                          (off_t)(index * srv->chunk_size + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            char path[4300];
            data_path(srv, key, path, sizeof(path));
            log_error("cannot read %s: %s", path, strerror(errno));
        }
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    datafile_put(f);
    out->len = at + done;   /* what the file held; the client zero-fills the rest */
    return rc < 0 ? rc : (int)done;
}

int op_data_fd(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req);
    if (!rpc_reader_done(req))
        return -EBADMSG;
    if (!rep->fd_ok)
        return -EPERM;
    /* Under the key's lock: not between the creation of its file and the
     * move of its inline bytes into it (the file would read empty). */
    pthread_mutex_t *lock = data_lock(srv, key);
    pthread_mutex_lock(lock);
    int fd = datafile_open_read(srv, key);
    pthread_mutex_unlock(lock);
    if (fd < 0)
        return fd;
    rep->pass_fd = fd;
    return 0;
}

int op_trunc_data(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), new_size = rpc_get_u64(req), old_size = rpc_get_u64(req);
    struct fs_cap cap;
    fs_cap_get(req, &cap);
    if (!rpc_reader_done(req))
        return -EBADMSG;
    int rc = access_cap_check(srv, rep, key, &cap, FS_CAP_WRITE | FS_CAP_DROP);
    if (rc < 0)
        return rc;
    chunks_truncate(srv, key, new_size, old_size);
    return 0;
}

int op_statfs(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    if (!rpc_reader_done(req))
        return -EBADMSG;
    rpc_put_u64(&rep->out, srv->quota);
    rpc_put_u64(&rep->out, atomic_load(&srv->used));
    return 0;
}
