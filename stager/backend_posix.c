/* backend_posix: the parallel file system side, with ordinary system calls.
 *
 * All opens below the root use openat() on the parent's descriptor with
 * O_NOFOLLOW unless following was asked for, and every decision about a file
 * is taken from fstat() of the descriptor actually opened. */
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "qos_limits.h"

/* Metadata operations toward the PFS: counted, charged to the stager's own
 * limit (if any) and to the job's I/O budget as their class (ratelimit.h). */
#define MDN(b, n, cls) (BACKEND_COUNT((b), (n)), ratelimit_take_as((b)->mdops, (n), (cls)))
#define MD(b, cls) MDN((b), 1, (cls))

static int new_dir(struct backend *b, int fd, char *path, struct bdir **out)
{
    struct bdir *d = malloc(sizeof(*d));
    if (!d || !path) {
        free(d);
        free(path);
        close(fd);
        return -ENOMEM;
    }
    *d = (struct bdir){ b, fd, path };
    *out = d;
    return 0;
}

static int posix_root_open(struct backend *b, const char *path, int create,
                           struct bdir **out, struct stat *st)
{
    MD(b, QOS_OPEN);
    if (create) {
        int rc = backend_make_path(b, path);
        if (rc < 0)
            return rc;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, st) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return new_dir(b, fd, strdup(path), out);
}

static int posix_dir_open(struct bdir *parent, const char *name, int follow,
                          struct bdir **out, struct stat *st)
{
    MD(parent->b, QOS_OPEN);
    int fd = openat(parent->fd, name,
                    O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0)
        return -errno;
    if (fstat(fd, st) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return new_dir(parent->b, fd, backend_join(parent->path, name), out);
}

/* openat of a path of several components, none of them a symlink unless
 * follow: openat2 with RESOLVE_NO_SYMLINKS, or, on a kernel without it
 * (before 5.6), one O_NOFOLLOW openat per component. */
static int open_rel(struct backend *b, int root_fd, const char *rel, int follow)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    if (!*rel)
        rel = ".";
    MD(b, QOS_OPEN);
    if (follow) {
        int fd = openat(root_fd, rel, flags);
        return fd < 0 ? -errno : fd;
    }
    struct open_how how = { .flags = flags, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    long fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
    if (fd >= 0)
        return (int)fd;
    if (errno != ENOSYS)
        return -errno;
    char *p = strdup(rel), *save = NULL;
    if (!p)
        return -ENOMEM;
    int cur = -1, rc = 0;
    for (char *c = strtok_r(p, "/", &save); c && rc == 0; c = strtok_r(NULL, "/", &save)) {
        if (cur >= 0)
            MD(b, QOS_OPEN);
        int next = openat(cur >= 0 ? cur : root_fd, c, flags | O_NOFOLLOW);
        if (next < 0)
            rc = -errno;
        if (cur >= 0)
            close(cur);
        cur = next;
    }
    free(p);
    return rc < 0 ? rc : cur;
}

static int posix_dir_open_rel(struct bdir *root, const char *rel, int follow,
                              struct bdir **out, struct stat *st)
{
    int fd = open_rel(root->b, root->fd, rel, follow);
    if (fd < 0)
        return fd;
    if (fstat(fd, st) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return new_dir(root->b, fd, *rel ? backend_join(root->path, rel) : strdup(root->path), out);
}

static int posix_dir_make(struct bdir *parent, const char *name, mode_t mode)
{
    MD(parent->b, QOS_MKDIR);
    return mkdirat(parent->fd, name, mode) < 0 ? -errno : 0;
}

static int posix_dir_list(struct bdir *d, int open_files, bdir_list_cb cb, void *arg)
{
    MD(d->b, QOS_READDIR);
    /* fdopendir takes over the fd it gets, so list through a duplicate. */
    int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int err = errno;
        close(fd);
        return -err;
    }
    int rc = 0;
    unsigned n = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(dir);
        if (!e) {
            rc = errno ? -errno : 0;
            break;
        }
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        if (++n % BACKEND_LIST_PAGE == 0)      /* about one getdents per 1024 entries */
            MD(d->b, QOS_READDIR);
        rc = cb(arg, e->d_name, e->d_type, NULL);
        if (rc < 0)
            break;
    }
    closedir(dir);
    return rc;
}

static int set_fd_mtime(int fd, const struct timespec *mtime)
{
    if (!mtime)
        return 0;
    struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, *mtime };
    return futimens(fd, t) < 0 ? -errno : 0;
}

static int set_fd_attrs(int fd, mode_t mode, const struct timespec *mtime)
{
    if (fchmod(fd, mode & 07777) < 0)
        return -errno;
    return set_fd_mtime(fd, mtime);
}

static int posix_dir_set_attrs(struct bdir *d, mode_t mode, const struct timespec *mtime)
{
    MDN(d->b, mtime ? 2 : 1, QOS_OTHER);
    return set_fd_attrs(d->fd, mode, mtime);
}

static void posix_dir_close(struct bdir *d)
{
    if (!d)
        return;
    close(d->fd);
    free(d->path);
    free(d);
}

static int posix_stat_at(struct bdir *d, const char *name, int follow, struct stat *st)
{
    MD(d->b, QOS_STAT);
    return fstatat(d->fd, name, st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int new_file(struct bdir *d, const char *name, int fd, struct bfile **out)
{
    struct bfile *f = malloc(sizeof(*f));
    char *n = strdup(name);
    if (!f || !n) {
        free(f);
        free(n);
        close(fd);
        return -ENOMEM;
    }
    *f = (struct bfile){ d->b, fd, d, n };
    *out = f;
    return 0;
}

static int posix_open_read(struct bdir *d, const char *name, int follow,
                           struct bfile **out, struct stat *st)
{
    MD(d->b, QOS_OPEN);
    /* O_NONBLOCK: a FIFO planted in the tree must not hang the copy; it is
     * refused below once fstat shows what was opened. */
    int fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
                                 (follow ? 0 : O_NOFOLLOW));
    if (fd < 0)
        return -errno;
    int err = fstat(fd, st) < 0 ? errno : 0;
    if (!err && !S_ISREG(st->st_mode))
        err = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
    if (err) {
        close(fd);
        return -err;
    }
    return new_file(d, name, fd, out);
}

static int posix_open_write(struct bdir *d, const char *name, int truncate, mode_t mode,
                            struct bfile **out)
{
    MD(d->b, QOS_OPEN);
    /* Read too: zeros_to_holes maps what was written. */
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | (truncate ? O_TRUNC : 0);
    int fd = openat(d->fd, name, flags, mode & 07777);
    if (fd < 0 && errno == EACCES) {
        struct stat st;
        MDN(d->b, 3, QOS_OPEN);   /* fstatat, fchmodat, openat again */
        if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid() && fchmodat(d->fd, name, st.st_mode | S_IRUSR | S_IWUSR, 0) == 0)
            fd = openat(d->fd, name, flags, mode & 07777);
        else
            errno = EACCES;
    }
    if (fd < 0)
        return -errno;
    return new_file(d, name, fd, out);
}

static ssize_t posix_pread(struct bfile *f, void *buf, size_t n, off_t off)
{
    ratelimit_take(f->b->bw, n);
    ssize_t r;
    do
        r = pread(f->fd, buf, n, off);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : r;
}

static ssize_t posix_pwrite(struct bfile *f, const void *buf, size_t n, off_t off)
{
    ratelimit_take(f->b->bw, n);
    ssize_t r;
    do
        r = pwrite(f->fd, buf, n, off);
    while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : r;
}

static off_t posix_seek(struct bfile *f, off_t off, int whence)
{
    off_t r = lseek(f->fd, off, whence);
    return r < 0 ? -errno : r;
}

/* Said once per run: the copies are right, only not sparse. */
static void holes_unsupported(void)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        log_warn("the destination file system cannot punch holes (fallocate: %s): "
                 "sparse files are written in full", strerror(EOPNOTSUPP));
}

/* 0, -EOPNOTSUPP (said once) where the file system has no holes, or
 * -errno. */
static int punch_hole(int fd, off_t off, off_t len)
{
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len) == 0)
        return 0;
    int rc = -errno;
    if (rc == -EOPNOTSUPP)
        holes_unsupported();
    return rc;
}

static int posix_punch(struct bfile *f, off_t off, off_t len)
{
    int rc = punch_hole(f->fd, off, len);
    return rc == -EOPNOTSUPP ? backend_write_zeros(f, off, len) : rc;
}

/* Block by block through a read-only mapping of what was just written (in
 * the page cache: no read, no copy); a data block is told by its first
 * bytes, so only zero blocks are read whole. */
static int posix_zeros_to_holes(struct bfile *f, off_t off, off_t len)
{
    const off_t bs = 4096;
    struct stat st;
    if (fstat(f->fd, &st) < 0)
        return -errno;
    off_t from = (off + bs - 1) / bs * bs;
    off_t to = off + len < st.st_size ? off + len : st.st_size;
    to -= to % bs;
    if (to <= from)
        return 0;
    const unsigned char *map = mmap(NULL, (size_t)(to - from), PROT_READ, MAP_SHARED, f->fd, from);
    if (map == MAP_FAILED)
        return -errno;
    int rc = 0;
    off_t run = -1;                  /* start of the zero blocks so far */
    for (off_t b = from; b <= to && rc == 0; b += bs) {
        const unsigned char *p = map + (b - from);
        int zero = b < to && p[0] == 0 && memcmp(p, p + 1, (size_t)bs - 1) == 0;
        if (zero && run < 0)
            run = b;
        if (!zero && run >= 0) {
            rc = punch_hole(f->fd, run, b - run);
            run = -1;
        }
    }
    munmap((void *)map, (size_t)(to - from));
    return rc == -EOPNOTSUPP ? 0 : rc;   /* holes not possible: the zeros stay */
}

static int posix_truncate(struct bfile *f, off_t len)
{
    MD(f->b, QOS_OTHER);
    return ftruncate(f->fd, len) < 0 ? -errno : 0;
}

static int posix_set_attrs(struct bfile *f, mode_t mode, const struct timespec *mtime)
{
    MDN(f->b, mtime ? 2 : 1, QOS_OTHER);
    return set_fd_attrs(f->fd, mode, mtime);
}

static int posix_close(struct bfile *f)
{
    int rc = close(f->fd) < 0 ? -errno : 0;
    free(f->name);
    free(f);
    return rc;
}

static int posix_create_write(struct bdir *d, const char *name, mode_t mode,
                              const void *data, size_t len, const struct timespec *mtime)
{
    struct bfile *f;
    int rc = -EEXIST, mode_ok = 0;
    if (!(mode & 07000)) {
        /* A new file made with its mode needs no fchmod (one inode update
         * less per small file) unless the umask or a default ACL took bits
         * away: fstat tells, at the cost of no write. */
        MD(d->b, QOS_OPEN);
        int fd = openat(d->fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY,
                        mode & 0777);
        struct stat st;
        mode_ok = fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == (mode & 07777);
        rc = fd < 0 ? -errno : new_file(d, name, fd, &f);
    }
    /* Over an existing file (or with special bits): written private, then
     * given its mode. */
    if (rc == -EEXIST)
        rc = posix_open_write(d, name, 1, S_IRUSR | S_IWUSR, &f);
    if (rc < 0)
        return rc;
    size_t done = 0;
    while (done < len && rc >= 0) {
        ssize_t w = posix_pwrite(f, (const char *)data + done, len - done, (off_t)done);
        if (w < 0)
            rc = (int)w;
        done += w > 0 ? (size_t)w : 0;
    }
    if (rc >= 0 && mode_ok && mtime)
        MD(d->b, QOS_OTHER);
    if (rc >= 0)
        rc = mode_ok ? set_fd_mtime(f->fd, mtime) : posix_set_attrs(f, mode, mtime);
    int crc = posix_close(f);
    return rc < 0 ? rc : crc;
}

static int posix_unlink_at(struct bdir *d, const char *name)
{
    MD(d->b, QOS_UNLINK);
    return unlinkat(d->fd, name, 0) < 0 ? -errno : 0;
}

static int posix_rmdir_at(struct bdir *d, const char *name)
{
    MD(d->b, QOS_MKDIR);
    return unlinkat(d->fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int posix_set_attrs_at(struct bdir *d, const char *name, mode_t mode,
                              const struct timespec *mtime)
{
    MDN(d->b, 3, QOS_OTHER);             /* fstatat, fchmodat, utimensat */
    /* fchmodat cannot refuse a symlink; this runs as the user on the user's
     * own destination, so the check only keeps a planted link from being
     * "finalized". */
    struct stat st;
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (S_ISLNK(st.st_mode))
        return -ELOOP;
    if (fchmodat(d->fd, name, mode & 07777, 0) < 0)
        return -errno;
    struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, *mtime };
    return utimensat(d->fd, name, t, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int posix_mkdir_path(struct backend *b, const char *path, mode_t mode)
{
    MD(b, QOS_MKDIR);
    return mkdir(path, mode) < 0 ? -errno : 0;
}

static const struct backend_ops posix_ops = {
    .name = "posix",
    .root_open = posix_root_open,
    .dir_open = posix_dir_open,
    .dir_open_rel = posix_dir_open_rel,
    .dir_make = posix_dir_make,
    .dir_list = posix_dir_list,
    .dir_set_attrs = posix_dir_set_attrs,
    .dir_close = posix_dir_close,
    .stat_at = posix_stat_at,
    .open_read = posix_open_read,
    .open_write = posix_open_write,
    .pread = posix_pread,
    .pwrite = posix_pwrite,
    .seek = posix_seek,
    .punch = posix_punch,
    .zeros_to_holes = posix_zeros_to_holes,
    .truncate = posix_truncate,
    .set_attrs = posix_set_attrs,
    .close = posix_close,
    .create_write = posix_create_write,
    .unlink_at = posix_unlink_at,
    .rmdir_at = posix_rmdir_at,
    .set_attrs_at = posix_set_attrs_at,
    .mkdir_path = posix_mkdir_path,
    .kernel_fds = 1,
};

void backend_posix_init(struct backend *b, struct ratelimit *mdops, struct ratelimit *bw)
{
    *b = (struct backend){ .ops = &posix_ops, .mdops = mdops, .bw = bw,
                           .chunk_size = 512 * 1024 };
}
