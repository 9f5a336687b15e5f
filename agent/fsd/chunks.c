/* chunks: file data, one file per chunk under <root>/data, named
 * "<data key in hex>.<chunk index>", and the per-node byte quota.
 *
 * The quota counts the bytes the chunk files hold. A write that would pass it
 * fails with ENOSPC before touching the chunk, so nothing already written is
 * lost. Reservation and the size check of one chunk happen under that
 * chunk's stripe lock so that concurrent writers do not count growth twice. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"

int chunks_init(struct server *srv, char *err, size_t errlen)
{
    snprintf(srv->data_dir, sizeof(srv->data_dir), "%s/data", srv->root);
    if (mkdir(srv->data_dir, 0700) < 0) {
        int rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", srv->data_dir, strerror(errno));
        return rc;
    }
    return 0;
}

static void chunk_path(const struct server *srv, uint64_t key, uint64_t index, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%016llx.%llu", srv->data_dir, (unsigned long long)key,
             (unsigned long long)index);
}

static pthread_mutex_t *chunk_lock(struct server *srv, uint64_t key, uint64_t index)
{
    return &srv->chunk_locks[(key * 0x9E3779B97F4A7C15ull + index) % SERVER_STRIPES];
}

/* Takes `bytes` from the quota, or fails with ENOSPC leaving it untouched. */
static int quota_take(struct server *srv, uint64_t bytes)
{
    uint64_t used = atomic_load(&srv->used);
    do {
        if (bytes > srv->quota || used > srv->quota - bytes)
            return -ENOSPC;
    } while (!atomic_compare_exchange_weak(&srv->used, &used, used + bytes));
    return 0;
}

static void quota_give(struct server *srv, uint64_t bytes)
{
    atomic_fetch_sub(&srv->used, bytes);
}

int chunks_write(struct server *srv, uint64_t key, uint64_t index, uint64_t offset,
                 const void *data, size_t len)
{
    if (offset + len > srv->chunk_size)
        return -EINVAL;
    if (hash_place_chunk(key, index, srv->nservers) != srv->index) {
        log_error("chunk %llu of %016llx sent to server %u, but it belongs elsewhere",
                  (unsigned long long)index, (unsigned long long)key, srv->index);
        return -EINVAL;
    }
    char path[4300];
    chunk_path(srv, key, index, path, sizeof(path));
    pthread_mutex_t *lock = chunk_lock(srv, key, index);
    pthread_mutex_lock(lock);
    int rc = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = -errno;
        log_error("cannot open chunk %s: %s", path, strerror(errno));
        goto out;
    }
    uint64_t growth = offset + len > (uint64_t)st.st_size ? offset + len - (uint64_t)st.st_size : 0;
    rc = quota_take(srv, growth);
    if (rc < 0)
        goto out;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)data + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            log_error("cannot write chunk %s: %s", path, strerror(-rc));
            break;
        }
        done += (size_t)n;
    }
    if (rc < 0) {
        /* Give back what the failed write did not use, and cut off a
         * partial tail so the chunk is as it was. */
        if (ftruncate(fd, st.st_size) < 0)
            log_error("cannot restore chunk %s: %s", path, strerror(errno));
        quota_give(srv, growth);
    }
out:
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(lock);
    return rc;
}

void chunks_truncate(struct server *srv, uint64_t key, uint64_t new_size, uint64_t old_size)
{
    if (old_size <= new_size)
        return;
    uint64_t cs = srv->chunk_size;
    uint64_t last = (old_size - 1) / cs;
    for (uint64_t i = new_size / cs; i <= last; i++) {
        if (hash_place_chunk(key, i, srv->nservers) != srv->index)
            continue;
        char path[4300];
        chunk_path(srv, key, i, path, sizeof(path));
        pthread_mutex_t *lock = chunk_lock(srv, key, i);
        pthread_mutex_lock(lock);
        struct stat st;
        uint64_t keep = i * cs >= new_size ? 0 : new_size - i * cs;
        if (stat(path, &st) == 0 && (uint64_t)st.st_size > keep) {
            int rc = keep == 0 ? unlink(path) : truncate(path, (off_t)keep);
            if (rc == 0)
                quota_give(srv, (uint64_t)st.st_size - keep);
            else
                log_error("cannot drop chunk %s: %s", path, strerror(errno));
        }
        pthread_mutex_unlock(lock);
    }
}

int op_write(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), index = rpc_get_u64(req);
    uint32_t offset = rpc_get_u32(req);
    const void *data;
    size_t len = rpc_get_bytes(req, &data);
    if (!rpc_reader_done(req))
        return -EBADMSG;
    return chunks_write(srv, key, index, offset, data, len);
}

int op_read(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), index = rpc_get_u64(req);
    uint32_t offset = rpc_get_u32(req), len = rpc_get_u32(req);
    if (!rpc_reader_done(req))
        return -EBADMSG;
    if ((uint64_t)offset + len > srv->chunk_size)
        return -EINVAL;
    char path[4300];
    chunk_path(srv, key, index, path, sizeof(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;   /* a hole: the client zero-fills */
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    uint64_t avail = (uint64_t)st.st_size > offset ? (uint64_t)st.st_size - offset : 0;
    rep->file_fd = fd;
    rep->file_off = offset;
    rep->file_len = avail < len ? (size_t)avail : len;
    return 0;
}

int op_trunc_data(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    uint64_t key = rpc_get_u64(req), new_size = rpc_get_u64(req), old_size = rpc_get_u64(req);
    if (!rpc_reader_done(req))
        return -EBADMSG;
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
