/* files_open: the open family (adafs_open, adafs_open_known,
 * adafs_open_stat, adafs_open_read and _flags): the file's record looked up
 * or created on its metadata server, O_TRUNC, O_EXCL and another user's
 * mode bits applied, and a descriptor made (fd_alloc); adafs_open_read
 * brings the file's first bytes with its record in one request. Reads and
 * writes on the descriptor are files.c's. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first bytes of a file fetched with its record by adafs_open_read. */
struct prefetch {
    void *buf;
    size_t cap, got;
    unsigned flags;          /* ADAFS_PARENT_KNOWN: a missing file is ENOENT as is */
};

/* STAT_READ: the record of p and, if its metadata server also holds its
 * first min(size, cap) bytes, those (pf->got says how many, 0 if not). */
static int stat_read_record(adafs *fs, const char *p, struct fs_record *rec,
                            struct fs_cap *cap, struct prefetch *pf)
{
    struct call c;
    call_init(&c, meta_server(fs, p), FS_STAT_READ);
    rpc_put_str(&c.req, p);
    rpc_put_u32(&c.req, pf->cap < UINT32_MAX ? (uint32_t)pf->cap : UINT32_MAX);
    int rc = fs_call1(fs, &c);
    pf->got = 0;
    if (rc == 0) {
        struct rpc_reader r;
        call_reader(&c, &r);
        fs_record_get(&r, rec);
        fs_cap_get(&r, cap);
        uint32_t here = rpc_get_u32(&r);
        uint64_t want = rec->size < pf->cap ? rec->size : pf->cap;
        size_t n = rpc_reader_ok(&r) ? r.len - r.off : 0;
        if (!rpc_reader_ok(&r) || n > want || (!here && n > 0)) {
            rc = -EIO;
        } else if (here) {
            /* A chunk ending in a hole comes back short: zeros. */
            memcpy(pf->buf, r.data + r.off, n);
            memset((char *)pf->buf + n, 0, (size_t)want - n);
            pf->got = (size_t)want;
        }
    }
    call_free(&c);
    return rc;
}

/* A descriptor for the file of key at the normalized path p, of size
 * bytes when it was looked up. */
static int open_as(adafs *fs, const char *p, uint64_t key, const struct fs_cap *cap,
                   mode_t mode, int flags, uint64_t size)
{
    struct open_file *of = calloc(1, sizeof(*of));
    if (!of || !(of->path = strdup(p))) {
        free(of);
        return -ENOMEM;
    }
    pthread_mutex_init(&of->lock, NULL);
    of->key = key;
    if (cap)
        of->cap = *cap;
    of->mode = mode;
    of->known_size = size;
    of->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
    int fd = fd_alloc(fs, of);
    if (fd < 0) {
        pthread_mutex_destroy(&of->lock);
        free(of->path);
        free(of);
    }
    return fd;
}

/* Opens path; rec_out (if not NULL) gets the record the open saw; pf (if
 * not NULL, only without O_CREAT) the file's first bytes if they come with
 * it. */
/* Another user's file (a shared instance: the server says whose): may we
 * open it as flags asks, by its mode bits? The server enforces it (a
 * caller that may neither read nor write a file gets a stand-in data key,
 * and size updates need write); this gives programs the EACCES they
 * expect instead of what a stand-in key reads. Our own files as ever. */
static int record_permits(const adafs *fs, const struct fs_record *rec, int flags)
{
    if (rec->uid == (uint32_t)fs->uid || fs->uid == 0 || S_ISDIR(rec->mode))
        return 0;
    int acc = flags & O_ACCMODE;
    unsigned want = (acc != O_WRONLY ? 4u : 0u) | (acc != O_RDONLY ? 2u : 0u);
    int in_group = rec->gid == (uint32_t)fs->gid;
    gid_t groups[256];
    int n = in_group ? 0 : getgroups(256, groups);
    for (int i = 0; i < n && !in_group; i++)
        in_group = groups[i] == (gid_t)rec->gid;
    unsigned bits = (in_group ? rec->mode >> 3 : rec->mode) & 7;
    return (bits & want) == want ? 0 : -EACCES;
}

static int open_record_once(adafs *fs, const char *path, int flags, mode_t mode,
                            struct fs_record *rec_out, struct prefetch *pf);

/* A create in a directory whose capability this handle does not hold yet
 * (a server several users share: proto.h) learns it and tries again. */
static int open_record(adafs *fs, const char *path, int flags, mode_t mode,
                       struct fs_record *rec_out, struct prefetch *pf)
{
    int rc = open_record_once(fs, path, flags, mode, rec_out, pf);
    if (rc == -EKEYEXPIRED && (flags & O_CREAT) && (rc = parent_cap_learn(fs, path)) == 0)
        rc = open_record_once(fs, path, flags, mode, rec_out, pf);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

static int open_record_once(adafs *fs, const char *path, int flags, mode_t mode,
                            struct fs_record *rec_out, struct prefetch *pf)
{
    char p[FS_PATH_MAX];
    int rc = path_normalize(path, p);
    if (rc < 0)
        return rc;
    int writable = (flags & O_ACCMODE) != O_RDONLY;
    struct fs_record rec;
    struct fs_cap cap = { 0 };
    if ((flags & O_CREAT) && strcmp(p, "/") != 0) {
        int ms = meta_server(fs, p), used;
        uint64_t key = new_key(fs, ms);
        struct call calls[2];
        uint32_t cflags = parent_check(fs, p, &calls[1], &used);
        if (flags & O_EXCL)
            cflags |= FS_CREATE_EXCL;
        if ((flags & O_TRUNC) && writable)
            cflags |= FS_CREATE_TRUNC;
        struct fs_cap parent;
        parent_cap(fs, p, &parent);
        call_init(&calls[0], ms, FS_CREATE);
        rpc_put_str(&calls[0].req, p);
        rpc_put_u32(&calls[0].req, (uint32_t)mode);
        rpc_put_u32(&calls[0].req, cflags);
        rpc_put_u64(&calls[0].req, key);
        fs_cap_put(&calls[0].req, &parent);
        fs_call(fs, calls, 1 + used);
        uint64_t old_key = 0, old_size = 0;
        struct fs_cap drop;
        struct rpc_reader r;
        call_reader(&calls[0], &r);
        fs_record_get(&r, &rec);
        fs_cap_get(&r, &cap);
        old_key = rpc_get_u64(&r);
        old_size = rpc_get_u64(&r);
        fs_cap_get(&r, &drop);
        if (calls[0].status == 0 && !rpc_reader_ok(&r))
            calls[0].status = -EIO;
        /* The undo removes the record only if it is the one made here (a
         * server several users share chose its key: proto.h). */
        rc = parent_check_finish(fs, p, &calls[0], &calls[1], used,
                                 calls[0].status == 0 ? rec.key : key);
        call_free(&calls[0]);
        if (rc == 0 && old_size)
            drop_data(fs, old_key, &drop, 0, old_size, ms);
    } else {
        if ((flags & O_CREAT) && (flags & O_EXCL))
            return -EEXIST;   /* "/" */
        rc = pf && strcmp(p, "/") != 0 ? stat_read_record(fs, p, &rec, &cap, pf)
                                       : stat_record_cap(fs, p, &rec, &cap);
        if (rc == 0 && S_ISREG(rec.mode) && writable && (flags & O_TRUNC) && rec.size > 0) {
            rc = adafs_truncate(fs, p, 0);
            rec.size = 0;
        }
    }
    if (rc == -ENOENT && !(pf && (pf->flags & ADAFS_PARENT_KNOWN)))
        rc = refine_enoent(fs, p);
    if (rc == 0)
        rc = record_permits(fs, &rec, flags);
    if (rc < 0)
        return rc;
    if (S_ISDIR(rec.mode) && (writable || (flags & O_CREAT)))
        return -EISDIR;
    if ((flags & O_DIRECTORY) && !S_ISDIR(rec.mode))
        return -ENOTDIR;
    int fd = open_as(fs, p, rec.key, &cap, rec.mode, flags, rec.size);
    if (fd >= 0 && rec_out)
        *rec_out = rec;
    return fd;
}

int adafs_open(adafs *fs, const char *path, int flags, mode_t mode)
{
    return open_record(fs, path, flags, mode, NULL, NULL);
}

int adafs_open_known(adafs *fs, const char *path, const struct stat *st)
{
    char p[FS_PATH_MAX];
    int rc = path_normalize(path, p);
    if (rc < 0)
        return rc;
    if (st->st_dev != FS_DEV || !S_ISREG(st->st_mode))
        return -EINVAL;
    /* No capability yet: a server that wants one says so, and the first
     * read asks the record for it (cap_refresh). */
    return open_as(fs, p, (uint64_t)st->st_ino, NULL, st->st_mode, O_RDONLY,
                   (uint64_t)st->st_size);
}

int adafs_open_stat(adafs *fs, const char *path, int flags, mode_t mode, struct stat *st)
{
    struct fs_record rec;
    int fd = open_record(fs, path, flags, mode, &rec, NULL);
    if (fd >= 0)
        record_to_stat(fs, &rec, st);
    return fd;
}

int adafs_open_read(adafs *fs, const char *path, struct stat *st, void *buf, size_t cap,
                    size_t *got)
{
    return adafs_open_read_flags(fs, path, st, buf, cap, got, 0);
}

int adafs_open_read_flags(adafs *fs, const char *path, struct stat *st, void *buf, size_t cap,
                          size_t *got, unsigned flags)
{
    if (flags & ~ADAFS_PARENT_KNOWN)
        return -EINVAL;
    struct fs_record rec;
    struct prefetch pf = { buf, cap, 0, flags };
    int fd = open_record(fs, path, O_RDONLY, 0, &rec, &pf);
    *got = fd >= 0 ? pf.got : 0;
    if (fd >= 0)
        record_to_stat(fs, &rec, st);
    return fd;
}
