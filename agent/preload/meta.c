/* meta: the path family (its stat family is stat.c's, chmod, chown and
 * the utime family attr.c's): access, mkdir, rmdir, unlink, rename,
 * truncate, chdir/fchdir/getcwd, statfs/statvfs, realpath, remove, and the
 * operations adafs refuses (hard and symbolic links, device nodes). */
#include "preload.h"
#include "mapping.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The f_type statfs() reports for adafs ("ADAF5" in hex speak). */
#define ADAFS_SUPER_MAGIC 0xADAF5

int pl_fd_inner(int lfd, char *buf, size_t len)
{
    int rc = route_fd_path(lfd, buf, len);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return 0;
}

/* ---- access ---- */

static int access_inner(int m, const char *inner, int mode)
{
    adafs *fs = route_enter(ROUTE_STAT, m);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_access(fs, inner, mode));
}

PL_EXPORT int access(const char *path, int mode)
{
    struct pathres r;
    if (!pl_active())
        return real.access(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.access(r.kpath, mode));
    return access_inner(r.mount, r.inner, mode);
}

PL_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.faccessat(dirfd, path, mode, flags);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.faccessat(dirfd, r.kpath, mode, flags));
    return access_inner(r.mount, r.inner, mode);
}

PL_EXPORT int euidaccess(const char *path, int mode)
{
    struct pathres r;
    if (!pl_active())
        return real.euidaccess(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.euidaccess(r.kpath, mode));
    return access_inner(r.mount, r.inner, mode);
}

PL_EXPORT int eaccess(const char *path, int mode)
{
    return euidaccess(path, mode);
}

/* ---- namespace ---- */

static int mkdir_inner(int m, const char *inner, mode_t mode)
{
    adafs *fs = route_enter(ROUTE_NAMESPACE, m);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_mkdir(fs, inner, mode & ~pl_umask() & 07777));
}

PL_EXPORT int mkdir(const char *path, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.mkdir(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.mkdir(r.kpath, mode));
    return mkdir_inner(r.mount, r.inner, mode);
}

PL_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.mkdirat(dirfd, path, mode);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.mkdirat(dirfd, r.kpath, mode));
    return mkdir_inner(r.mount, r.inner, mode);
}

static int remove_inner(int m, const char *inner, bool dir)
{
    adafs *fs = route_enter(ROUTE_NAMESPACE, m);
    if (!fs)
        return -1;
    return (int)route_leave(dir ? adafs_rmdir(fs, inner) : adafs_unlink(fs, inner));
}

PL_EXPORT int rmdir(const char *path)
{
    struct pathres r;
    if (!pl_active())
        return real.rmdir(path);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.rmdir(r.kpath));
    return remove_inner(r.mount, r.inner, true);
}

PL_EXPORT int unlink(const char *path)
{
    struct pathres r;
    if (!pl_active())
        return real.unlink(path);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.unlink(r.kpath));
    return remove_inner(r.mount, r.inner, false);
}

PL_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.unlinkat(dirfd, path, flags);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.unlinkat(dirfd, r.kpath, flags));
    if (flags & ~AT_REMOVEDIR) {
        errno = EINVAL;
        return -1;
    }
    return remove_inner(r.mount, r.inner, flags & AT_REMOVEDIR);
}

/* remove(3) calls glibc's internal unlink/rmdir, so it needs its own entry. */
PL_EXPORT int remove(const char *path)
{
    struct pathres r;
    if (!pl_active())
        return real.remove(path);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.remove(r.kpath));
    struct stat st;
    if (pl_stat_inner(r.mount, r.inner, &st) < 0)
        return -1;
    return remove_inner(r.mount, r.inner, S_ISDIR(st.st_mode));
}

/* Renames: both names in one adafs mount go to the library, both outside go
 * to the kernel, and a mix (or two mounts) is EXDEV so that mv falls back
 * to copy and delete. */
static int rename_at(int olddirfd, const char *from, int newdirfd, const char *to,
                     unsigned int flags)
{
    struct pathres a, b;
    int rc = pathres_resolve(olddirfd, from, &a);
    if (rc == 0)
        rc = pathres_resolve(newdirfd, to, &b);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    if (!a.adafs && !b.adafs)
        return flags ? real.renameat2(olddirfd, a.kpath, newdirfd, b.kpath, flags)
                     : real.renameat(olddirfd, a.kpath, newdirfd, b.kpath);
    if (a.adafs != b.adafs || a.mount != b.mount) {
        errno = EXDEV;   /* as between two kernel file systems */
        return -1;
    }
    if (flags & ~RENAME_NOREPLACE) {
        errno = EINVAL; /* RENAME_EXCHANGE and RENAME_WHITEOUT: not in adafs */
        return -1;
    }
    struct stat st;
    if ((flags & RENAME_NOREPLACE) && pl_stat_inner(b.mount, b.inner, &st) == 0) {
        errno = EEXIST; /* checked, then renamed: not atomic (doc/preload.md) */
        return -1;
    }
    adafs *fs = route_enter(ROUTE_NAMESPACE, a.mount);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_rename(fs, a.inner, b.inner));
}

PL_EXPORT int rename(const char *from, const char *to)
{
    if (!pl_active())
        return real.rename(from, to);
    return rename_at(AT_FDCWD, from, AT_FDCWD, to, 0);
}

PL_EXPORT int renameat(int olddirfd, const char *from, int newdirfd, const char *to)
{
    if (!pl_active())
        return real.renameat(olddirfd, from, newdirfd, to);
    return rename_at(olddirfd, from, newdirfd, to, 0);
}

PL_EXPORT int renameat2(int olddirfd, const char *from, int newdirfd, const char *to,
                        unsigned int flags)
{
    if (!pl_active())
        return real.renameat2(olddirfd, from, newdirfd, to, flags);
    return rename_at(olddirfd, from, newdirfd, to, flags);
}

PL_EXPORT int truncate(const char *path, off_t length)
{
    struct pathres r;
    if (!pl_active())
        return real.truncate(path, length);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.truncate(r.kpath, length));
    adafs *fs = route_enter(ROUTE_ATTR, r.mount);
    if (!fs)
        return -1;
    int rc = adafs_truncate(fs, r.inner, length);
    struct stat st;
    /* This process's mappings of the file follow its new size. */
    bool mapped = rc == 0 && mapping_count() && adafs_stat(fs, r.inner, &st) == 0;
    route_leave_raw(0);
    if (mapped)
        mapping_resized(r.mount, (uint64_t)st.st_ino, (uint64_t)length);
    if (rc == 0)
        mapping_tell_kernel(r.mount, r.inner);
    return (int)pl_ret(rc);
}

PL_EXPORT int truncate64(const char *path, off_t length)
{
    return truncate(path, length);
}

/* ---- working directory ---- */

static int chdir_inner(int m, const char *inner)
{
    struct stat st;
    if (pl_stat_inner(m, inner, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    pathres_set_virtual_cwd(m, inner);
    return 0;
}

PL_EXPORT int chdir(const char *path)
{
    struct pathres r;
    if (!pl_active())
        return real.chdir(path);
    int rc = pathres_resolve(AT_FDCWD, path, &r);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    if (r.adafs)
        return chdir_inner(r.mount, r.inner);
    if (real.chdir(r.kpath) < 0)
        return -1;
    pathres_kernel_chdir_done();
    return 0;
}

PL_EXPORT int fchdir(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd)) {
        if (real.fchdir(fd) < 0)
            return -1;
        if (pl_active())
            pathres_kernel_chdir_done();
        return 0;
    }
    char inner[PATH_MAX];
    if (pl_fd_inner(lfd, inner, sizeof inner) < 0)
        return -1;
    return chdir_inner(route_fd_mount(lfd), inner);
}

PL_EXPORT char *getcwd(char *buf, size_t size)
{
    if (!pl_active())
        return real.getcwd(buf, size);
    char cwd[PATH_MAX];
    int n = pathres_virtual_cwd(cwd, sizeof cwd);
    if (n == 0)
        return real.getcwd(buf, size);
    if (n < 0) {
        errno = -n;
        return NULL;
    }
    if (!buf) {
        /* glibc extension: allocate, at least size bytes if size is given */
        size_t want = size ? size : (size_t)n + 1;
        if (want < (size_t)n + 1) {
            errno = ERANGE;
            return NULL;
        }
        buf = malloc(want);
        if (!buf) {
            errno = ENOMEM;
            return NULL;
        }
    } else if (size < (size_t)n + 1) {
        errno = size ? ERANGE : EINVAL;
        return NULL;
    }
    memcpy(buf, cwd, (size_t)n + 1);
    return buf;
}

PL_EXPORT char *get_current_dir_name(void)
{
    if (!pl_active())
        return real.get_current_dir_name();
    return getcwd(NULL, 0);
}

/* ---- file system statistics ---- */

static int statvfs_adafs(int m, struct statvfs *sv)
{
    adafs *fs = route_enter(ROUTE_STAT, m);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_statvfs(fs, sv));
}

static int statfs_adafs(int m, struct statfs *sf)
{
    struct statvfs sv;
    if (statvfs_adafs(m, &sv) < 0)
        return -1;
    memset(sf, 0, sizeof *sf);
    sf->f_type = ADAFS_SUPER_MAGIC;
    sf->f_bsize = (long)sv.f_bsize;
    sf->f_blocks = sv.f_blocks;
    sf->f_bfree = sv.f_bfree;
    sf->f_bavail = sv.f_bavail;
    sf->f_files = sv.f_files;
    sf->f_ffree = sv.f_ffree;
    memcpy(&sf->f_fsid, &sv.f_fsid, sizeof sf->f_fsid < sizeof sv.f_fsid
                                        ? sizeof sf->f_fsid : sizeof sv.f_fsid);
    sf->f_namelen = (long)sv.f_namemax;
    sf->f_frsize = (long)sv.f_frsize;
    sf->f_flags = (long)sv.f_flag;
    return 0;
}

/* statfs of a path must still fail for a missing path. */
static int exists_inner(int m, const char *inner)
{
    struct stat st;
    return pl_stat_inner(m, inner, &st);
}

PL_EXPORT int statfs(const char *path, struct statfs *sf)
{
    struct pathres r;
    if (!pl_active())
        return real.statfs(path, sf);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.statfs(r.kpath, sf));
    if (exists_inner(r.mount, r.inner) < 0)
        return -1;
    return statfs_adafs(r.mount, sf);
}

PL_EXPORT int statfs64(const char *path, struct statfs64 *sf)
{
    return statfs(path, (struct statfs *)sf);
}

PL_EXPORT int fstatfs(int fd, struct statfs *sf)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fstatfs(fd, sf);
    return statfs_adafs(route_fd_mount(lfd), sf);
}

PL_EXPORT int fstatfs64(int fd, struct statfs64 *sf)
{
    return fstatfs(fd, (struct statfs *)sf);
}

PL_EXPORT int statvfs(const char *path, struct statvfs *sv)
{
    struct pathres r;
    if (!pl_active())
        return real.statvfs(path, sv);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.statvfs(r.kpath, sv));
    if (exists_inner(r.mount, r.inner) < 0)
        return -1;
    return statvfs_adafs(r.mount, sv);
}

PL_EXPORT int statvfs64(const char *path, struct statvfs64 *sv)
{
    return statvfs(path, (struct statvfs *)sv);
}

PL_EXPORT int fstatvfs(int fd, struct statvfs *sv)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fstatvfs(fd, sv);
    return statvfs_adafs(route_fd_mount(lfd), sv);
}

PL_EXPORT int fstatvfs64(int fd, struct statvfs64 *sv)
{
    return fstatvfs(fd, (struct statvfs *)sv);
}

/* ---- what adafs refuses ---- */

/* Hard and symbolic links: EPERM, which link(2) and symlink(2) document for
 * "the file system does not support links" (coreutils prints "Operation not
 * permitted"). A hard link from adafs to outside, or between two adafs
 * mounts, is EXDEV, as across any two file systems. */
static int link_at(int olddirfd, const char *from, int newdirfd, const char *to, int flags)
{
    struct pathres a, b;
    int rc = pathres_resolve(olddirfd, from, &a);
    if (rc == 0)
        rc = pathres_resolve(newdirfd, to, &b);
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    if (!a.adafs && !b.adafs)
        return real.linkat(olddirfd, a.kpath, newdirfd, b.kpath, flags);
    errno = a.adafs && b.adafs && a.mount == b.mount ? EPERM : EXDEV;
    return -1;
}

PL_EXPORT int link(const char *from, const char *to)
{
    if (!pl_active())
        return real.link(from, to);
    return link_at(AT_FDCWD, from, AT_FDCWD, to, 0);
}

PL_EXPORT int linkat(int olddirfd, const char *from, int newdirfd, const char *to, int flags)
{
    if (!pl_active())
        return real.linkat(olddirfd, from, newdirfd, to, flags);
    return link_at(olddirfd, from, newdirfd, to, flags);
}

PL_EXPORT int symlink(const char *target, const char *linkpath)
{
    struct pathres r;
    if (!pl_active())
        return real.symlink(target, linkpath);
    PL_ROUTE_PATH(AT_FDCWD, linkpath, &r, -1, real.symlink(target, r.kpath));
    errno = EPERM;
    return -1;
}

PL_EXPORT int symlinkat(const char *target, int newdirfd, const char *linkpath)
{
    struct pathres r;
    if (!pl_active())
        return real.symlinkat(target, newdirfd, linkpath);
    PL_ROUTE_PATH(newdirfd, linkpath, &r, -1, real.symlinkat(target, newdirfd, r.kpath));
    errno = EPERM;
    return -1;
}

/* Nothing in adafs is a symbolic link: EINVAL for what exists. */
static ssize_t readlink_inner(int m, const char *inner)
{
    if (exists_inner(m, inner) < 0)
        return -1;
    errno = EINVAL;
    return -1;
}

/* A program run from adafs: its /proc/self/exe names its adafs path, not
 * the memfd it runs from. */
static ssize_t readlink_kernel(int dirfd, const char *kpath, char *buf, size_t size)
{
    const char *exe = pl_exec_self_exe(kpath);
    if (!exe)
        return real.readlinkat(dirfd, kpath, buf, size);
    size_t n = strlen(exe) < size ? strlen(exe) : size;
    memcpy(buf, exe, n);
    return (ssize_t)n;
}

PL_EXPORT ssize_t readlink(const char *path, char *buf, size_t size)
{
    struct pathres r;
    if (!pl_active())
        return real.readlink(path, buf, size);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, readlink_kernel(AT_FDCWD, r.kpath, buf, size));
    return readlink_inner(r.mount, r.inner);
}

PL_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
    struct pathres r;
    if (!pl_active())
        return real.readlinkat(dirfd, path, buf, size);
    PL_ROUTE_PATH(dirfd, path, &r, -1, readlink_kernel(dirfd, r.kpath, buf, size));
    return readlink_inner(r.mount, r.inner);
}

/* mknod of a regular file creates it (as POSIX allows); device nodes,
 * FIFOs and sockets do not exist in adafs: EPERM, as mknod(2) documents
 * for a file system that does not support the node type. */
static int mknod_inner(int m, const char *inner, mode_t mode)
{
    if ((mode & S_IFMT) != 0 && (mode & S_IFMT) != S_IFREG) {
        errno = EPERM;
        return -1;
    }
    int kfd = pl_open_adafs(m, inner, O_CREAT | O_EXCL | O_WRONLY, mode & 07777);
    if (kfd < 0)
        return -1;
    return close(kfd);
}

PL_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
    struct pathres r;
    if (!pl_active())
        return real.mknod(path, mode, dev);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.mknod(r.kpath, mode, dev));
    return mknod_inner(r.mount, r.inner, mode);
}

PL_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
    struct pathres r;
    if (!pl_active())
        return real.mknodat(dirfd, path, mode, dev);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.mknodat(dirfd, r.kpath, mode, dev));
    return mknod_inner(r.mount, r.inner, mode);
}

PL_EXPORT int mkfifo(const char *path, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.mkfifo(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.mkfifo(r.kpath, mode));
    errno = EPERM;
    return -1;
}

PL_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.mkfifoat(dirfd, path, mode);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.mkfifoat(dirfd, r.kpath, mode));
    errno = EPERM;
    return -1;
}

/* ---- realpath: glibc's uses internal readlink/stat, so answer here ---- */

static char *realpath_kernel(const char *kpath, char *resolved)
{
    const char *exe = pl_exec_self_exe(kpath);
    if (!exe)
        return real.realpath(kpath, resolved);
    return resolved ? strcpy(resolved, exe) : strdup(exe);
}

PL_EXPORT char *realpath(const char *path, char *resolved)
{
    struct pathres r;
    if (!pl_active())
        return real.realpath(path, resolved);
    if (pl_null(path)) {
        errno = EINVAL;
        return NULL;
    }
    PL_ROUTE_PATH(AT_FDCWD, path, &r, NULL, realpath_kernel(r.kpath, resolved));
    if (exists_inner(r.mount, r.inner) < 0)
        return NULL;
    char full[PATH_MAX];
    if (pathres_full_path(r.mount, r.inner, full, sizeof full) < 0) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (!resolved)
        return strdup(full);
    return strcpy(resolved, full);
}

PL_EXPORT char *canonicalize_file_name(const char *path)
{
    return realpath(path, NULL);
}
