/* stat: the stat family of the path family (meta.c): stat, lstat, fstat,
 * fstatat and their 64-bit names, the old __xstat entry points that
 * binaries built before glibc 2.33 call, and statx. Each mount is a device
 * of its own. */
#include "preload.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* Each mount is a device of its own, as for the kernel: programs that
 * compare st_dev (cp, find -xdev, du) tell two mounts apart. Mount 0's is
 * libadafs's. */
static int mount_dev(int m, int rc, struct stat *st)
{
    if (rc == 0)
        st->st_dev += (dev_t)m;
    return rc;
}

int pl_stat_inner(int m, const char *inner, struct stat *st)
{
    adafs *fs = route_enter(ROUTE_STAT, m);
    if (!fs)
        return -1;
    return (int)route_leave(mount_dev(m, adafs_stat(fs, inner, st), st));
}

static int fstat_lfd(int rfd, struct stat *st)
{
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_STAT, rfd, &lfd);
    if (!fs)
        return -1;
    return (int)route_leave(mount_dev(route_fd_mount(rfd), adafs_fstat(fs, lfd, st), st));
}

/* ---- stat family ---- */

static int stat_at(int dirfd, const char *path, struct stat *st, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.fstatat(dirfd, path, st, flags);
    if ((flags & AT_EMPTY_PATH) && !pl_null(path) && !*path) {
        int lfd = fdmap_get(dirfd);
        return lfd < 0 ? real.fstatat(dirfd, path, st, flags) : fstat_lfd(lfd, st);
    }
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.fstatat(dirfd, r.kpath, st, flags));
    return pl_stat_inner(r.mount, r.inner, st);
}

PL_EXPORT int stat(const char *path, struct stat *st)
{
    struct pathres r;
    if (!pl_active())
        return real.stat(path, st);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.stat(r.kpath, st));
    return pl_stat_inner(r.mount, r.inner, st);
}

PL_EXPORT int stat64(const char *path, struct stat64 *st)
{
    return stat(path, (struct stat *)st);
}

PL_EXPORT int lstat(const char *path, struct stat *st)
{
    struct pathres r;
    if (!pl_active())
        return real.lstat(path, st);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.lstat(r.kpath, st));
    return pl_stat_inner(r.mount, r.inner, st); /* no symbolic links in adafs */
}

PL_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    return lstat(path, (struct stat *)st);
}

PL_EXPORT int fstat(int fd, struct stat *st)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fstat(fd, st);
    return fstat_lfd(lfd, st);
}

PL_EXPORT int fstat64(int fd, struct stat64 *st)
{
    return fstat(fd, (struct stat *)st);
}

PL_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    return stat_at(dirfd, path, st, flags);
}

PL_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    return stat_at(dirfd, path, (struct stat *)st, flags);
}

/* Binaries linked against glibc < 2.33 call these instead of stat(). */
int __xstat(int ver, const char *path, struct stat *st);
int __xstat64(int ver, const char *path, struct stat64 *st);
int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat64(int ver, const char *path, struct stat64 *st);
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);
int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags);

PL_EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
    struct pathres r;
    if (!pl_active())
        return real.__xstat(ver, path, st);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.__xstat(ver, r.kpath, st));
    return pl_stat_inner(r.mount, r.inner, st);
}

PL_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
    return __xstat(ver, path, (struct stat *)st);
}

PL_EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
    struct pathres r;
    if (!pl_active())
        return real.__lxstat(ver, path, st);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.__lxstat(ver, r.kpath, st));
    return pl_stat_inner(r.mount, r.inner, st);
}

PL_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
    return __lxstat(ver, path, (struct stat *)st);
}

PL_EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.__fxstat(ver, fd, st);
    return fstat_lfd(lfd, st);
}

PL_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
    return __fxstat(ver, fd, (struct stat *)st);
}

PL_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.__fxstatat(ver, dirfd, path, st, flags);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.__fxstatat(ver, dirfd, r.kpath, st, flags));
    return pl_stat_inner(r.mount, r.inner, st);
}

PL_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags)
{
    return __fxstatat(ver, dirfd, path, (struct stat *)st, flags);
}

static void stat_to_statx(const struct stat *st, struct statx *sx)
{
    memset(sx, 0, sizeof *sx);
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = (uint32_t)st->st_blksize;
    sx->stx_nlink = (uint32_t)st->st_nlink;
    sx->stx_uid = st->st_uid;
    sx->stx_gid = st->st_gid;
    sx->stx_mode = (uint16_t)st->st_mode;
    sx->stx_ino = st->st_ino;
    sx->stx_size = (uint64_t)st->st_size;
    sx->stx_blocks = (uint64_t)st->st_blocks;
    sx->stx_atime.tv_sec = st->st_atim.tv_sec;
    sx->stx_atime.tv_nsec = (uint32_t)st->st_atim.tv_nsec;
    sx->stx_mtime.tv_sec = st->st_mtim.tv_sec;
    sx->stx_mtime.tv_nsec = (uint32_t)st->st_mtim.tv_nsec;
    sx->stx_ctime.tv_sec = st->st_ctim.tv_sec;
    sx->stx_ctime.tv_nsec = (uint32_t)st->st_ctim.tv_nsec;
    sx->stx_rdev_major = major(st->st_rdev);
    sx->stx_rdev_minor = minor(st->st_rdev);
    sx->stx_dev_major = major(st->st_dev);
    sx->stx_dev_minor = minor(st->st_dev);
}

PL_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *sx)
{
    struct pathres r;
    struct stat st;
    if (!pl_active())
        return real.statx(dirfd, path, flags, mask, sx);
    if ((flags & AT_EMPTY_PATH) && !pl_null(path) && !*path) {
        int lfd = fdmap_get(dirfd);
        if (lfd < 0)
            return real.statx(dirfd, path, flags, mask, sx);
        if (fstat_lfd(lfd, &st) < 0)
            return -1;
    } else {
        PL_ROUTE_PATH(dirfd, path, &r, -1, real.statx(dirfd, r.kpath, flags, mask, sx));
        if (pl_stat_inner(r.mount, r.inner, &st) < 0)
            return -1;
    }
    if (pl_null(sx)) {
        errno = EFAULT;
        return -1;
    }
    stat_to_statx(&st, sx);
    return 0;
}
