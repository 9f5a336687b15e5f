/* create: a whole small file made in one round trip where the file
 * system allows (adafs_create_write and its _attr and _fd forms, for the
 * stager's many small files): its record, its data and the check of its
 * parent in one batch of requests, undone whole if any part fails. Many
 * files at once: batch.c. */
#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The data comes from src (memory, or the caller's file from fd_off).
 * mtime: NULL (or UTIME_NOW, UTIME_OMIT) for the time of creation. */
static int create_write_once(adafs *fs, const char *path, mode_t mode,
                             const struct span *src, size_t len, const struct timespec *mtime,
                             unsigned flags);

static int create_write(adafs *fs, const char *path, mode_t mode, const struct span *src,
                        size_t len, const struct timespec *mtime, unsigned flags)
{
    int rc = create_write_once(fs, path, mode, src, len, mtime, flags);
    if (rc == -EKEYEXPIRED && (rc = parent_cap_learn(fs, path)) == 0)
        rc = create_write_once(fs, path, mode, src, len, mtime, flags);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

static int create_write_once(adafs *fs, const char *path, mode_t mode,
                             const struct span *src, size_t len, const struct timespec *mtime,
                             unsigned flags)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EISDIR);
    if (rc < 0)
        return rc;
    if (mtime && (mtime->tv_nsec == UTIME_NOW || mtime->tv_nsec == UTIME_OMIT))
        mtime = NULL;
    if (mtime && (mtime->tv_nsec < 0 || mtime->tv_nsec >= 1000000000))
        return -EINVAL;
    uint64_t cs = fs->inst.chunk_size, nchunks = len ? (len + cs - 1) / cs : 1;
    int ms = meta_server(fs, p), used;
    uint64_t key = new_key(fs, ms);
    struct call *calls = calloc(nchunks + 1, sizeof(*calls));
    if (!calls)
        return -ENOMEM;
    /* Chunks 1.. first, then the record with chunk 0: the record never
     * names data that was not sent (but on a server several users share,
     * which chooses the key itself, they go again after it: proto.h). */
    struct fs_cap cap = { 0 }, drop = { 0 };
    int n = 0;
    for (uint64_t i = 1; i < nchunks; i++, n++) {
        size_t clen = i == nchunks - 1 ? len - i * cs : cs;
        write_call(&calls[n], fs, key, &cap, i, 0, src, i * cs, clen);
    }
    int cw = n++;
    uint32_t cflags = 0;
    used = 0;
    if (!(flags & ADAFS_PARENT_KNOWN))
        cflags = parent_check(fs, p, &calls[n], &used);
    size_t len0 = len < cs ? len : cs;
    call_init(&calls[cw], ms, FS_CREATE_WRITE);
    rpc_put_str(&calls[cw].req, p);
    rpc_put_u32(&calls[cw].req, (uint32_t)mode);
    rpc_put_u32(&calls[cw].req, cflags | (mtime ? FS_CREATE_MTIME : 0));
    rpc_put_u64(&calls[cw].req, key);
    rpc_put_u64(&calls[cw].req, len);
    if (mtime)
        rpc_put_i64(&calls[cw].req, (int64_t)mtime->tv_sec * 1000000000 + mtime->tv_nsec);
    struct fs_cap parent;
    parent_cap(fs, p, &parent);
    fs_cap_put(&calls[cw].req, &parent);
    rpc_put_u32(&calls[cw].req, (uint32_t)len0);
    span_bulk(&calls[cw], src, 0, len0);
    fs_call(fs, calls, n + used);
    int data_rc = 0;
    for (int i = 0; i < cw; i++)
        if (calls[i].status < 0 && data_rc == 0)
            data_rc = calls[i].status;
    rc = calls[cw].status;
    uint64_t old_key = 0, old_size = 0, made = key;
    if (rc == 0) {
        struct rpc_reader r;
        call_reader(&calls[cw], &r);
        old_key = rpc_get_u64(&r);
        old_size = rpc_get_u64(&r);
        fs_cap_get(&r, &drop);
        made = rpc_get_u64(&r);
        fs_cap_get(&r, &cap);
        if (!rpc_reader_ok(&r))
            rc = calls[cw].status = -EIO;
    }
    int prc = parent_check_finish(fs, p, &calls[cw], &calls[n], used, rc == 0 ? made : key);
    for (int i = 0; i < n; i++)
        call_free(&calls[i]);
    if (rc == 0 && prc == 0 && made != key) {
        key = made;
        data_rc = 0;
        for (int i = 0; i < cw; i++) {
            uint64_t ci = (uint64_t)i + 1;
            write_call(&calls[i], fs, key, &cap, ci, 0, src, ci * cs,
                       ci == nchunks - 1 ? len - ci * cs : cs);
        }
        fs_call(fs, calls, cw);
        for (int i = 0; i < cw; i++) {
            if (calls[i].status < 0 && data_rc == 0)
                data_rc = calls[i].status;
            call_free(&calls[i]);
        }
    }
    free(calls);
    if (rc == 0 && (prc < 0 || data_rc < 0)) {
        /* Half a file is worse than none (a failed parent check has
         * already removed the record). */
        if (prc == 0)
            undo_create(fs, p, key);
        drop_data(fs, key, &cap, 0, len, -1);
        rc = prc < 0 ? prc : data_rc;
    } else if (rc < 0) {
        drop_data(fs, key, &cap, 0, len, ms);
    }
    if (rc == -ENOENT)
        return refine_enoent(fs, p);
    if (rc == 0 && old_key)
        drop_data(fs, old_key, &drop, 0, old_size, ms);
    return rc;
}

int adafs_create_write(adafs *fs, const char *path, mode_t mode, const void *data, size_t len)
{
    struct span src = { .buf = (char *)data, .fd = -1 };
    return create_write(fs, path, mode, &src, len, NULL, 0);
}

int adafs_create_write_attr(adafs *fs, const char *path, mode_t mode, const void *data,
                            size_t len, const struct timespec *mtime, unsigned flags)
{
    if (flags & ~ADAFS_PARENT_KNOWN)
        return -EINVAL;
    struct span src = { .buf = (char *)data, .fd = -1 };
    return create_write(fs, path, mode, &src, len, mtime, flags);
}

int adafs_create_write_fd(adafs *fs, const char *path, mode_t mode, int src_fd, off_t src_off,
                          size_t len, const struct timespec *mtime, unsigned flags)
{
    if ((flags & ~ADAFS_PARENT_KNOWN) || src_off < 0)
        return -EINVAL;
    if (len > ADAFS_CREATE_FD_CHUNKS * fs->inst.chunk_size)
        return -EFBIG;
    uint64_t size;
    int rc = check_caller_file(src_fd, 1, &size);
    if (rc < 0)
        return rc;
    /* The lengths go out before the data: the source must hold it now. */
    if ((uint64_t)src_off > size || len > size - (uint64_t)src_off)
        return -ENODATA;
    struct span src = { .fd = src_fd, .fd_off = (uint64_t)src_off };
    return create_write(fs, path, mode, &src, len, mtime, flags);
}
