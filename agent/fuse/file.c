/* file.c: open files: opening and creating (a handle per open file, on
 * one of the mount's connections), one I/O at a time under the handle's
 * lock, release, fsync, fallocate and lseek. Reads are in read.c, writes
 * in write.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuse/fuse_int.h"

/* Open flags libadafs understands; the rest are the kernel's business. */
#define LIB_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NONBLOCK)

static int open_with(const char *path, struct fuse_file_info *fi, int flags, mode_t mode,
                     bool created)
{
    struct handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->fs = spread_fs();
    h->lfd = adafs_open_stat(h->fs, path, flags & LIB_OPEN_FLAGS, mode, &h->st);
    if (h->lfd < 0) {
        int rc = h->lfd;
        free(h);
        return rc;
    }
    pthread_mutex_init(&h->io, NULL);
    h->append = flags & O_APPEND;
    atomic_init(&h->fresh, created);
    fi->fh = (uintptr_t)h;
    fi->direct_io = direct_io;
    fi->keep_cache = 0;   /* the page cache starts afresh at each open */
    return 0;
}

int x_open(const char *path, struct fuse_file_info *fi)
{
    int rc = open_with(path, fi, fi->flags, 0, false);
    if (rc == 0)
        open_forgets_lookup();
    return rc;
}

int x_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return open_with(path, fi, fi->flags | O_CREAT, mode, true);
}

/* Runs one I/O of h under its lock: after the first EIO of an open file,
 * its others fail at once (see struct handle). */
ssize_t handle_io(struct handle *h, ssize_t (*io)(struct handle *, void *), void *arg)
{
    pthread_mutex_lock(&h->io);
    ssize_t n = h->failed ? -EIO : io(h, arg);
    if (n == -EIO)
        h->failed = true;
    pthread_mutex_unlock(&h->io);
    return n;
}

int x_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct handle *h = handle_of(fi);
    int rc = adafs_close(h->fs, h->lfd);
    pthread_mutex_destroy(&h->io);
    free(h);
    return rc;
}

int x_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    struct handle *h = handle_of(fi);
    return adafs_fsync(h->fs, h->lfd);
}

/* Preallocation: mode 0 extends the size (no space is reserved, so a later
 * write can still fail with ENOSPC); KEEP_SIZE does nothing; other modes
 * (punch hole, zero range...) EOPNOTSUPP. As the interposer. */
int x_fallocate(const char *path, int mode, off_t off, off_t len,
                       struct fuse_file_info *fi)
{
    (void)path;
    if (off < 0 || len <= 0)
        return -EINVAL;
    if (mode == FALLOC_FL_KEEP_SIZE)
        return 0;
    if (mode != 0)
        return -EOPNOTSUPP;
    if (off > INT64_MAX - len)
        return -EFBIG;
    struct handle *h = handle_of(fi);
    struct stat st;
    int rc = adafs_fstat(h->fs, h->lfd, &st);
    if (rc == 0 && st.st_size < off + len)
        rc = adafs_ftruncate(h->fs, h->lfd, off + len);
    return rc;
}

/* SEEK_DATA and SEEK_HOLE (the kernel handles the others): the whole file
 * is data. */
off_t x_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    (void)path;
    struct handle *h = handle_of(fi);
    struct stat st;
    int rc = adafs_fstat(h->fs, h->lfd, &st);
    if (rc < 0)
        return rc;
    if (whence != SEEK_DATA && whence != SEEK_HOLE)
        return -EINVAL;
    if (off < 0 || off >= st.st_size)
        return -ENXIO;
    return whence == SEEK_DATA ? off : st.st_size;
}
