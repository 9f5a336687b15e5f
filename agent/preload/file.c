/* file: the descriptor family. open/openat/creat (and their 64-bit and
 * fortified variants), close, lseek, dup/dup2/dup3, fcntl, flock/lockf,
 * fsync/fdatasync/syncfs, ftruncate and close_range/closefrom; read/write
 * and their positioned and vectored forms are file_io.c's. */
#include "preload.h"
#include "mapping.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Flags libadafs understands; the rest (O_CLOEXEC, O_NOCTTY, O_LARGEFILE,
 * O_NOFOLLOW, O_NOATIME, O_DIRECT, O_SYNC...) either belong to the kernel
 * descriptor or have no meaning in adafs. */
#define LIB_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | \
                        O_DIRECTORY | O_NONBLOCK)

/* A kernel descriptor that stands for an adafs file: O_PATH, so any read,
 * write or mmap that bypasses the interposer (a static binary, a raw
 * syscall) fails with EBADF instead of silently touching another file. */
static int reserve_kernel_fd(int cloexec)
{
    return real.open("/dev/null", O_PATH | (cloexec ? O_CLOEXEC : 0));
}

int pl_release(int rfd, void *dirstate)
{
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_CLOSE, rfd, &lfd);
    if (!fs)
        return -EIO;
    if (dirstate)
        pl_dirstate_free(dirstate);
    return (int)route_leave_raw(adafs_close(fs, lfd));
}

/* Maps the fresh kernel descriptor kfd to lfd, undoing both on failure. */
static int install(int kfd, int lfd)
{
    int rc = fdmap_set(kfd, lfd);
    if (rc < 0) {
        pl_release(lfd, NULL);
        real.close(kfd);
        errno = -rc;
        return -1;
    }
    pl_std_attach(kfd); /* only acts on 0, 1 and 2 */
    return kfd;
}

/* Takes an adafs descriptor out of the map (its standard stream flushed
 * first) and releases the library side; 0, -errno, or 1 if fd was not an
 * adafs descriptor. */
static int forget(int fd)
{
    if (fdmap_get(fd) < 0)
        return 1;
    pl_std_detach(fd);
    void *dirstate;
    /* Out of the map before the kernel number is freed for reuse. */
    int lfd = fdmap_take(fd, &dirstate);
    return lfd < 0 ? 1 : pl_release(lfd, dirstate);
}

int pl_open_adafs(int m, const char *inner, int flags, mode_t mode)
{
    if ((flags & O_TMPFILE) == O_TMPFILE) {
        errno = EOPNOTSUPP; /* what open(2) says for a file system without it */
        return -1;
    }
    if (flags & O_CREAT)
        mode &= ~pl_umask();
    adafs *fs = route_enter(ROUTE_OPEN, m);
    if (!fs)
        return -1;
    int lfd = adafs_open(fs, inner, flags & LIB_OPEN_FLAGS, mode);
    struct stat st;
    /* O_TRUNC cuts what this process has mapped of the file. */
    bool cut = lfd >= 0 && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY &&
               mapping_count() && adafs_fstat(fs, lfd, &st) == 0;
    int rfd = route_fd_of(m, lfd);
    if (rfd < 0 && lfd >= 0)
        adafs_close(fs, lfd);
    if (route_leave(rfd) < 0)
        return -1;
    if (cut)
        mapping_resized(m, (uint64_t)st.st_ino, 0);
    int kfd = reserve_kernel_fd(flags & O_CLOEXEC);
    if (kfd < 0) {
        int saved = errno;
        pl_release(rfd, NULL);
        errno = saved;
        return -1;
    }
    return install(kfd, rfd);
}

/* A kernel open of a directory is noted: it may be an ancestor of the
 * mount point that later openat() calls walk down from. */
static int open_kernel(int dirfd, const char *path, int flags, mode_t mode)
{
    int fd = real.openat(dirfd, path, flags, mode);
    if (fd >= 0 && (flags & (O_DIRECTORY | O_PATH)))
        pathres_note_kernel_open(dirfd, path, fd);
    return fd;
}

static int open_at(int dirfd, const char *path, int flags, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.openat(dirfd, path, flags, mode);
    PL_ROUTE_PATH(dirfd, path, &r, -1, open_kernel(dirfd, r.kpath, flags, mode));
    return pl_open_adafs(r.mount, r.inner, flags, mode);
}

PL_EXPORT int open(const char *path, int flags, ...)
{
    return open_at(AT_FDCWD, path, flags, PL_OPEN_MODE(flags));
}

PL_EXPORT int open64(const char *path, int flags, ...)
{
    return open_at(AT_FDCWD, path, flags, PL_OPEN_MODE(flags));
}

PL_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    return open_at(dirfd, path, flags, PL_OPEN_MODE(flags));
}

PL_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    return open_at(dirfd, path, flags, PL_OPEN_MODE(flags));
}

PL_EXPORT int creat(const char *path, mode_t mode)
{
    return open_at(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

PL_EXPORT int creat64(const char *path, mode_t mode)
{
    return open_at(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

/* The _FORTIFY_SOURCE entry points: open() without a mode argument. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

PL_EXPORT int __open_2(const char *path, int flags)
{
    return open_at(AT_FDCWD, path, flags, 0);
}

PL_EXPORT int __open64_2(const char *path, int flags)
{
    return open_at(AT_FDCWD, path, flags, 0);
}

PL_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return open_at(dirfd, path, flags, 0);
}

PL_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return open_at(dirfd, path, flags, 0);
}

/* A program call that would close or replace one of libadafs's own
 * descriptors (ownfd.h): refused with EBADF, as for a number the program
 * never opened, and named once on stderr. */
static bool touches_library_fd(const char *call, int fd)
{
    if (!ownfd_is_library(fd))
        return false;
    static atomic_bool logged;
    if (!atomic_exchange(&logged, true))
        pl_log("%s(%d) refused: descriptor %d is a libadafs server connection", call, fd, fd);
    errno = EBADF;
    return true;
}

PL_EXPORT int close(int fd)
{
    if (!pl_active()) {
        if (route_depth > 0)
            ownfd_closed(fd);
        return real.close(fd);
    }
    if (touches_library_fd("close", fd))
        return -1;
    int rc = forget(fd);
    if (rc == 1) {
        pathres_note_kernel_close(fd);
        return real.close(fd);
    }
    real.close(fd);
    return (int)pl_ret(rc);
}

/* close_range over [first, last]: adafs files are released first, and
 * libadafs's own descriptors are stepped around (ownfd.h). */
static int close_range_around(unsigned int first, unsigned int last, int flags)
{
    if (!(flags & CLOSE_RANGE_CLOEXEC))
        for (int fd = fdmap_next((int)first); fd >= 0 && (unsigned int)fd <= last;
             fd = fdmap_next(fd + 1))
            forget(fd);
    unsigned int base = (unsigned int)ownfd_base(), top = (unsigned int)ownfd_top();
    if (top == 0 || last < base || first >= top)
        return real.close_range(first, last, flags);
    int rc = 0;
    if (first < base)
        rc = real.close_range(first, base - 1, flags);
    for (unsigned int fd = first > base ? first : base; fd < top && fd <= last; fd++)
        if (!ownfd_is_library((int)fd)) {
            if (flags & CLOSE_RANGE_CLOEXEC)
                real.fcntl((int)fd, F_SETFD, FD_CLOEXEC);
            else
                real.close((int)fd);
        }
    if (last >= top && rc == 0)
        rc = real.close_range(top, last, flags);
    return rc;
}

PL_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
    if (!pl_active() || first > last)
        return real.close_range(first, last, flags);
    return close_range_around(first, last, flags);
}

PL_EXPORT void closefrom(int lowfd)
{
    if (!pl_active() || lowfd < 0) {
        real.closefrom(lowfd);
        return;
    }
    close_range_around((unsigned int)lowfd, UINT_MAX, 0);
}

PL_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.lseek(fd, off, whence);
    void *dirstate = fdmap_get_dir(fd);
    if (dirstate) {
        /* A directory being read with getdents64: positions are d_off. */
        if (whence != SEEK_SET || off < 0) {
            errno = EINVAL;
            return -1;
        }
        return pl_dirstate_seek(dirstate, off);
    }
    adafs *fs = route_enter_fd(ROUTE_SEEK, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(adafs_lseek(fs, lfd, off, whence));
}

PL_EXPORT off_t lseek64(int fd, off_t off, int whence)
{
    return lseek(fd, off, whence);
}

/* dup of an adafs descriptor: a library dup (shared offset and flags) plus
 * a kernel dup of the reserved descriptor made by kernel_dup(kfd, arg). */
enum dup_kind { DUP_ANY, DUP_TO, DUP_TO_FLAGS, DUP_MIN, DUP_MIN_CLOEXEC };

static int kernel_dup(enum dup_kind kind, int kfd, int arg, int flags)
{
    switch (kind) {
    case DUP_ANY:         return real.dup(kfd);
    case DUP_TO:          return real.dup2(kfd, arg);
    case DUP_TO_FLAGS:    return real.dup3(kfd, arg, flags);
    case DUP_MIN:         return real.fcntl(kfd, F_DUPFD, arg);
    case DUP_MIN_CLOEXEC: return real.fcntl(kfd, F_DUPFD_CLOEXEC, arg);
    }
    errno = EINVAL;
    return -1;
}


static int dup_adafs(enum dup_kind kind, int kfd, int rfd, int arg, int flags)
{
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_FD, rfd, &lfd);
    if (!fs)
        return -1;
    int dup = adafs_dup(fs, lfd);
    int nlfd = route_fd_of(route_fd_mount(rfd), dup);
    if (nlfd < 0 && dup >= 0)
        adafs_close(fs, dup);
    if (route_leave(nlfd) < 0)
        return -1;
    if (kind == DUP_TO || kind == DUP_TO_FLAGS)
        forget(arg);
    int nkfd = kernel_dup(kind, kfd, arg, flags);
    if (nkfd < 0) {
        int saved = errno;
        pl_release(nlfd, NULL);
        errno = saved;
        return -1;
    }
    return install(nkfd, nlfd);
}

PL_EXPORT int dup(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.dup(fd);
    return dup_adafs(DUP_ANY, fd, lfd, 0, 0);
}

PL_EXPORT int dup2(int fd, int newfd)
{
    int lfd;
    if (pl_active() && fd != newfd && touches_library_fd("dup2", newfd))
        return -1;
    if (!PL_ADAFS_FD(fd, lfd)) {
        if (pl_active() && fd != newfd && real.fcntl(fd, F_GETFD) >= 0)
            forget(newfd);
        return real.dup2(fd, newfd);
    }
    if (fd == newfd)
        return newfd;
    return dup_adafs(DUP_TO, fd, lfd, newfd, 0);
}

PL_EXPORT int dup3(int fd, int newfd, int flags)
{
    int lfd;
    if (pl_active() && fd != newfd && touches_library_fd("dup3", newfd))
        return -1;
    if (!PL_ADAFS_FD(fd, lfd)) {
        if (pl_active() && fd != newfd && real.fcntl(fd, F_GETFD) >= 0)
            forget(newfd);
        return real.dup3(fd, newfd, flags);
    }
    if (fd == newfd || (flags & ~O_CLOEXEC)) {
        errno = EINVAL;
        return -1;
    }
    return dup_adafs(DUP_TO_FLAGS, fd, lfd, newfd, flags);
}

/* fcntl on an adafs descriptor. Record locks are accepted and do nothing:
 * adafs has no distributed locks (doc/preload.md), and programs such as
 * sqlite3 only need them to succeed when they are the only writer. */
static int fcntl_adafs(int fd, int lfd, int cmd, void *arg)
{
    adafs *fs;
    switch (cmd) {
    case F_DUPFD:
        return dup_adafs(DUP_MIN, fd, lfd, (int)(intptr_t)arg, 0);
    case F_DUPFD_CLOEXEC:
        return dup_adafs(DUP_MIN_CLOEXEC, fd, lfd, (int)(intptr_t)arg, 0);
    case F_GETFD:
    case F_SETFD:
        return real.fcntl(fd, cmd, arg); /* close-on-exec lives on the kernel fd */
    case F_GETFL:
        if (!(fs = route_enter_fd(ROUTE_FD, lfd, &lfd)))
            return -1;
        return (int)route_leave(adafs_get_flags(fs, lfd));
    case F_SETFL:
        if (!(fs = route_enter_fd(ROUTE_FD, lfd, &lfd)))
            return -1;
        return (int)route_leave(adafs_set_flags(fs, lfd, (int)(intptr_t)arg));
    case F_GETLK:
    case F_OFD_GETLK:
        if (!arg) {
            errno = EFAULT;
            return -1;
        }
        ((struct flock *)arg)->l_type = F_UNLCK;
        return 0;
    case F_SETLK:
    case F_SETLKW:
    case F_OFD_SETLK:
    case F_OFD_SETLKW:
        if (!arg) {
            errno = EFAULT;
            return -1;
        }
        return 0;
    default:
        errno = EINVAL; /* leases, notify, pipe sizes, seals, owners */
        return -1;
    }
}

/* The third argument is an int or a pointer depending on cmd; like glibc,
 * read it as a pointer-sized value and hand it on unchanged. */
#define FCNTL_ARG(cmd) __extension__ ({                                       \
        va_list ap_;                                                           \
        va_start(ap_, cmd);                                                    \
        void *arg_ = va_arg(ap_, void *);                                      \
        va_end(ap_);                                                           \
        arg_; })

static int fcntl_common(int fd, int cmd, void *arg)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fcntl(fd, cmd, arg);
    return fcntl_adafs(fd, lfd, cmd, arg);
}

PL_EXPORT int fcntl(int fd, int cmd, ...)
{
    return fcntl_common(fd, cmd, FCNTL_ARG(cmd));
}

PL_EXPORT int fcntl64(int fd, int cmd, ...)
{
    return fcntl_common(fd, cmd, FCNTL_ARG(cmd));
}

PL_EXPORT int flock(int fd, int op)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.flock(fd, op);
    return 0; /* advisory, and adafs has no locks: see fcntl_adafs */
}

PL_EXPORT int lockf(int fd, int cmd, off_t len)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.lockf(fd, cmd, len);
    return 0;
}

PL_EXPORT int lockf64(int fd, int cmd, off_t len)
{
    return lockf(fd, cmd, len);
}

static int fsync_adafs(int lfd)
{
    adafs *fs = route_enter_fd(ROUTE_SYNC, lfd, &lfd);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_fsync(fs, lfd));
}

PL_EXPORT int fsync(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fsync(fd);
    return fsync_adafs(lfd);
}

PL_EXPORT int fdatasync(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fdatasync(fd);
    return fsync_adafs(lfd);
}

PL_EXPORT int syncfs(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.syncfs(fd);
    return fsync_adafs(lfd);
}

PL_EXPORT int ftruncate(int fd, off_t length)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.ftruncate(fd, length);
    int rfd = lfd, m = route_fd_mount(rfd);
    adafs *fs = route_enter_fd(ROUTE_ATTR, rfd, &lfd);
    if (!fs)
        return -1;
    int rc = adafs_ftruncate(fs, lfd, length);
    struct stat st;
    /* This process's mappings of the file follow its new size. */
    bool mapped = rc == 0 && mapping_count() && adafs_fstat(fs, lfd, &st) == 0;
    route_leave_raw(0);
    if (mapped)
        mapping_resized(m, (uint64_t)st.st_ino, (uint64_t)length);
    char inner[PATH_MAX];
    if (rc == 0 && pathres_kernel_mount(m) && route_fd_path(rfd, inner, sizeof inner) == 0)
        mapping_tell_kernel(m, inner);
    return (int)pl_ret(rc);
}

PL_EXPORT int ftruncate64(int fd, off_t length)
{
    return ftruncate(fd, length);
}
