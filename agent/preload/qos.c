/* qos: see qos.h. */
#include "preload.h"
#include "qos.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "qos_client.h"
#include "qos_paths.h"

/* The C library's functions, as the table held them before QoS. */
static struct real_functions orig;

/* ---- where the parallel file system is ---- */

static struct qos_paths pfs;

/* The kernel's working directory: inside the PFS, outside it, or above
 * one of its mount points (only then can a relative path without ".."
 * enter it). */
enum { CWD_OUTSIDE, CWD_INSIDE, CWD_ABOVE };
static atomic_int cwd_where;
static pthread_mutex_t cwd_lock = PTHREAD_MUTEX_INITIALIZER;
static char cwd_path[PATH_MAX];

/* Descriptors opened on the PFS, one bit each. Higher numbers are never
 * seen as on the PFS. */
#define TAG_FDS 65536
static _Atomic uint64_t tags[TAG_FDS / 64];

static inline bool fd_pfs(int fd)
{
    return (unsigned)fd < TAG_FDS &&
           (atomic_load_explicit(&tags[(unsigned)fd / 64], memory_order_relaxed) >> ((unsigned)fd % 64)) & 1;
}

static void fd_tag(int fd, bool on)
{
    if (fd < 0 || fd >= TAG_FDS)
        return;
    uint64_t bit = 1ull << ((unsigned)fd % 64);
    /* Most descriptors are not on the PFS and were not: no write at all. */
    if (on != fd_pfs(fd)) {
        if (on)
            atomic_fetch_or_explicit(&tags[(unsigned)fd / 64], bit, memory_order_relaxed);
        else
            atomic_fetch_and_explicit(&tags[(unsigned)fd / 64], ~bit, memory_order_relaxed);
    }
}

static bool cwd_pfs(const char *path)
{
    int where = atomic_load_explicit(&cwd_where, memory_order_relaxed);
    if (where != CWD_ABOVE && path[0] != '.' && qos_path_plain(path))
        return where == CWD_INSIDE;
    char joined[PATH_MAX], buf[PATH_MAX];
    pthread_mutex_lock(&cwd_lock);
    int n = snprintf(joined, sizeof(joined), "%s/%s", cwd_path, path);
    pthread_mutex_unlock(&cwd_lock);
    return n > 0 && (size_t)n < sizeof(joined) &&
           path_normalise(joined, buf, sizeof(buf)) >= 0 && qos_paths_under(&pfs, buf);
}

/* Whether (dirfd, path) names something on the PFS. A path relative to a
 * directory descriptor is where that directory is. */
static inline bool is_pfs(int dirfd, const char *path)
{
    if (pl_null(path))
        return false;
    if (path[0] == '/')
        return qos_paths_match(&pfs, path);
    if (dirfd == AT_FDCWD)
        return cwd_pfs(path);
    return fd_pfs(dirfd);
}

static void update_cwd(void)
{
    char buf[PATH_MAX];
    int where = CWD_OUTSIDE;
    pthread_mutex_lock(&cwd_lock);
    if (orig.getcwd && orig.getcwd(buf, sizeof(buf)) && buf[0] == '/') {
        snprintf(cwd_path, sizeof(cwd_path), "%s", buf);
        where = qos_paths_under(&pfs, buf) ? CWD_INSIDE : qos_paths_above(&pfs, buf) ? CWD_ABOVE
                                                                     : CWD_OUTSIDE;
    } else {
        cwd_path[0] = '\0';
        where = CWD_ABOVE;   /* unknown: look at every relative path */
    }
    atomic_store(&cwd_where, where);
    pthread_mutex_unlock(&cwd_lock);
}

/* Descriptors inherited over exec that are open on the PFS. */
static void tag_inherited(void)
{
    int dfd = orig.open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            char *end;
            long fd = strtol(d->d_name, &end, 10);
            char target[PATH_MAX];
            ssize_t len;
            if (*end || fd == dfd || fd < 0 ||
                (len = orig.readlinkat(dfd, d->d_name, target, sizeof(target) - 1)) <= 0)
                continue;
            target[len] = '\0';
            if (target[0] == '/' && qos_paths_match(&pfs, target))
                fd_tag((int)fd, true);
        }
    }
    orig.close(dfd);
}

/* ---- the wrappers ---- */

#define CHARGE_IF(cond, cls) do { if (cond) qos_charge((cls), 1); } while (0)

/* Metadata calls, charged before they run: by a path, a (dirfd, path)
 * pair, or a descriptor. */
#define PATH_CALL(ret, name, cls, params, args, path)                          \
    static ret qos_##name params                                               \
    {                                                                          \
        CHARGE_IF(is_pfs(AT_FDCWD, (path)), (cls));                            \
        return orig.name args;                                                 \
    }
#define AT_CALL(ret, name, cls, params, args, dirfd, path)                     \
    static ret qos_##name params                                               \
    {                                                                          \
        CHARGE_IF(pl_null(path) ? fd_pfs(dirfd) : is_pfs((dirfd), (path)), (cls)); \
        return orig.name args;                                                 \
    }
#define FD_CALL(ret, name, cls, params, args, fd)                              \
    static ret qos_##name params                                               \
    {                                                                          \
        CHARGE_IF(fd_pfs(fd), (cls));                                          \
        return orig.name args;                                                 \
    }

PATH_CALL(int, stat, QOS_STAT, (const char *p, struct stat *s), (p, s), p)
PATH_CALL(int, lstat, QOS_STAT, (const char *p, struct stat *s), (p, s), p)
FD_CALL(int, fstat, QOS_STAT, (int fd, struct stat *s), (fd, s), fd)
AT_CALL(int, fstatat, QOS_STAT, (int d, const char *p, struct stat *s, int f), (d, p, s, f), d, p)
AT_CALL(int, statx, QOS_STAT, (int d, const char *p, int f, unsigned m, struct statx *x),
        (d, p, f, m, x), d, p)
PATH_CALL(int, __xstat, QOS_STAT, (int v, const char *p, struct stat *s), (v, p, s), p)
PATH_CALL(int, __lxstat, QOS_STAT, (int v, const char *p, struct stat *s), (v, p, s), p)
FD_CALL(int, __fxstat, QOS_STAT, (int v, int fd, struct stat *s), (v, fd, s), fd)
AT_CALL(int, __fxstatat, QOS_STAT, (int v, int d, const char *p, struct stat *s, int f),
        (v, d, p, s, f), d, p)
PATH_CALL(int, access, QOS_STAT, (const char *p, int m), (p, m), p)
AT_CALL(int, faccessat, QOS_STAT, (int d, const char *p, int m, int f), (d, p, m, f), d, p)
PATH_CALL(int, euidaccess, QOS_STAT, (const char *p, int m), (p, m), p)
PATH_CALL(char *, realpath, QOS_STAT, (const char *p, char *out), (p, out), p)

PATH_CALL(int, mkdir, QOS_MKDIR, (const char *p, mode_t m), (p, m), p)
AT_CALL(int, mkdirat, QOS_MKDIR, (int d, const char *p, mode_t m), (d, p, m), d, p)
PATH_CALL(int, rmdir, QOS_MKDIR, (const char *p), (p), p)
PATH_CALL(char *, mkdtemp, QOS_MKDIR, (char *t), (t), t)
PATH_CALL(int, unlink, QOS_UNLINK, (const char *p), (p), p)
PATH_CALL(int, remove, QOS_UNLINK, (const char *p), (p), p)

static int qos_unlinkat(int d, const char *p, int f)
{
    CHARGE_IF(is_pfs(d, p), (f & AT_REMOVEDIR) ? QOS_MKDIR : QOS_UNLINK);
    return orig.unlinkat(d, p, f);
}

static int qos_rename(const char *a, const char *b)
{
    CHARGE_IF(is_pfs(AT_FDCWD, a) || is_pfs(AT_FDCWD, b), QOS_RENAME);
    return orig.rename(a, b);
}

static int qos_renameat(int da, const char *a, int db, const char *b)
{
    CHARGE_IF(is_pfs(da, a) || is_pfs(db, b), QOS_RENAME);
    return orig.renameat(da, a, db, b);
}

static int qos_renameat2(int da, const char *a, int db, const char *b, unsigned f)
{
    CHARGE_IF(is_pfs(da, a) || is_pfs(db, b), QOS_RENAME);
    return orig.renameat2(da, a, db, b, f);
}

PATH_CALL(int, truncate, QOS_OTHER, (const char *p, off_t n), (p, n), p)
FD_CALL(int, ftruncate, QOS_OTHER, (int fd, off_t n), (fd, n), fd)
FD_CALL(int, fsync, QOS_OTHER, (int fd), (fd), fd)
FD_CALL(int, fdatasync, QOS_OTHER, (int fd), (fd), fd)
FD_CALL(int, syncfs, QOS_OTHER, (int fd), (fd), fd)
PATH_CALL(int, statfs, QOS_OTHER, (const char *p, struct statfs *s), (p, s), p)
FD_CALL(int, fstatfs, QOS_OTHER, (int fd, struct statfs *s), (fd, s), fd)
PATH_CALL(int, statvfs, QOS_OTHER, (const char *p, struct statvfs *s), (p, s), p)
FD_CALL(int, fstatvfs, QOS_OTHER, (int fd, struct statvfs *s), (fd, s), fd)
PATH_CALL(int, chmod, QOS_OTHER, (const char *p, mode_t m), (p, m), p)
FD_CALL(int, fchmod, QOS_OTHER, (int fd, mode_t m), (fd, m), fd)
AT_CALL(int, fchmodat, QOS_OTHER, (int d, const char *p, mode_t m, int f), (d, p, m, f), d, p)
PATH_CALL(int, chown, QOS_OTHER, (const char *p, uid_t u, gid_t g), (p, u, g), p)
PATH_CALL(int, lchown, QOS_OTHER, (const char *p, uid_t u, gid_t g), (p, u, g), p)
FD_CALL(int, fchown, QOS_OTHER, (int fd, uid_t u, gid_t g), (fd, u, g), fd)
AT_CALL(int, fchownat, QOS_OTHER, (int d, const char *p, uid_t u, gid_t g, int f),
        (d, p, u, g, f), d, p)
AT_CALL(int, utimensat, QOS_OTHER, (int d, const char *p, const struct timespec *t, int f),
        (d, p, t, f), d, p)
FD_CALL(int, futimens, QOS_OTHER, (int fd, const struct timespec *t), (fd, t), fd)
PATH_CALL(int, utimes, QOS_OTHER, (const char *p, const struct timeval *t), (p, t), p)
PATH_CALL(int, lutimes, QOS_OTHER, (const char *p, const struct timeval *t), (p, t), p)
FD_CALL(int, futimes, QOS_OTHER, (int fd, const struct timeval *t), (fd, t), fd)
AT_CALL(int, futimesat, QOS_OTHER, (int d, const char *p, const struct timeval *t), (d, p, t), d, p)
PATH_CALL(int, utime, QOS_OTHER, (const char *p, const struct utimbuf *t), (p, t), p)
PATH_CALL(int, symlink, QOS_OTHER, (const char *t, const char *p), (t, p), p)
AT_CALL(int, symlinkat, QOS_OTHER, (const char *t, int d, const char *p), (t, d, p), d, p)
PATH_CALL(ssize_t, readlink, QOS_OTHER, (const char *p, char *b, size_t n), (p, b, n), p)
AT_CALL(ssize_t, readlinkat, QOS_OTHER, (int d, const char *p, char *b, size_t n), (d, p, b, n), d, p)
PATH_CALL(int, mknod, QOS_OTHER, (const char *p, mode_t m, dev_t v), (p, m, v), p)
AT_CALL(int, mknodat, QOS_OTHER, (int d, const char *p, mode_t m, dev_t v), (d, p, m, v), d, p)
PATH_CALL(int, mkfifo, QOS_OTHER, (const char *p, mode_t m), (p, m), p)
AT_CALL(int, mkfifoat, QOS_OTHER, (int d, const char *p, mode_t m), (d, p, m), d, p)
FD_CALL(int, posix_fallocate, QOS_OTHER, (int fd, off_t o, off_t n), (fd, o, n), fd)
FD_CALL(int, fallocate, QOS_OTHER, (int fd, int m, off_t o, off_t n), (fd, m, o, n), fd)
PATH_CALL(ssize_t, getxattr, QOS_OTHER, (const char *p, const char *k, void *v, size_t n),
          (p, k, v, n), p)
PATH_CALL(ssize_t, lgetxattr, QOS_OTHER, (const char *p, const char *k, void *v, size_t n),
          (p, k, v, n), p)
FD_CALL(ssize_t, fgetxattr, QOS_OTHER, (int fd, const char *k, void *v, size_t n), (fd, k, v, n), fd)
PATH_CALL(ssize_t, listxattr, QOS_OTHER, (const char *p, char *l, size_t n), (p, l, n), p)
PATH_CALL(ssize_t, llistxattr, QOS_OTHER, (const char *p, char *l, size_t n), (p, l, n), p)
FD_CALL(ssize_t, flistxattr, QOS_OTHER, (int fd, char *l, size_t n), (fd, l, n), fd)
PATH_CALL(int, setxattr, QOS_OTHER, (const char *p, const char *k, const void *v, size_t n, int f),
          (p, k, v, n, f), p)
PATH_CALL(int, lsetxattr, QOS_OTHER, (const char *p, const char *k, const void *v, size_t n, int f),
          (p, k, v, n, f), p)
FD_CALL(int, fsetxattr, QOS_OTHER, (int fd, const char *k, const void *v, size_t n, int f),
        (fd, k, v, n, f), fd)
PATH_CALL(int, removexattr, QOS_OTHER, (const char *p, const char *k), (p, k), p)
PATH_CALL(int, lremovexattr, QOS_OTHER, (const char *p, const char *k), (p, k), p)
FD_CALL(int, fremovexattr, QOS_OTHER, (int fd, const char *k), (fd, k), fd)

static int qos_link(const char *a, const char *b)
{
    CHARGE_IF(is_pfs(AT_FDCWD, a) || is_pfs(AT_FDCWD, b), QOS_OTHER);
    return orig.link(a, b);
}

static int qos_linkat(int da, const char *a, int db, const char *b, int f)
{
    CHARGE_IF(is_pfs(da, a) || is_pfs(db, b), QOS_OTHER);
    return orig.linkat(da, a, db, b, f);
}

/* ---- opening and closing: the descriptors' marks follow them ---- */

static int qos_openat(int d, const char *p, int flags, ...)
{
    mode_t mode = PL_OPEN_MODE(flags);
    bool on = is_pfs(d, p);
    CHARGE_IF(on, QOS_OPEN);
    int fd = orig.openat(d, p, flags, mode);
    fd_tag(fd, on);
    return fd;
}

static int qos_open(const char *p, int flags, ...)
{
    mode_t mode = PL_OPEN_MODE(flags);
    return qos_openat(AT_FDCWD, p, flags, mode);
}

static int qos_mkostemps(char *t, int suffix, int flags)
{
    bool on = is_pfs(AT_FDCWD, t);
    CHARGE_IF(on, QOS_OPEN);
    int fd = orig.mkostemps(t, suffix, flags);
    fd_tag(fd, on);
    return fd;
}

/* A stream's reads, writes and close go through glibc's internal calls,
 * out of reach: only its opening is counted, and its descriptor is not
 * marked (its close would never be seen). */
static FILE *qos_fopen(const char *p, const char *m)
{
    CHARGE_IF(is_pfs(AT_FDCWD, p), QOS_OPEN);
    return orig.fopen(p, m);
}

static FILE *qos_freopen(const char *p, const char *m, FILE *f)
{
    CHARGE_IF(is_pfs(AT_FDCWD, p), QOS_OPEN);
    return orig.freopen(p, m, f);
}

static FILE *qos_fdopen(int fd, const char *m)
{
    FILE *f = orig.fdopen(fd, m);
    if (f)
        fd_tag(fd, false);
    return f;
}

static int qos_close(int fd)
{
    if (fd_pfs(fd)) {
        qos_charge(QOS_CLOSE, 1);
        fd_tag(fd, false);
    }
    return orig.close(fd);
}

static void untag_range(unsigned first, unsigned last)
{
    for (unsigned fd = first; fd <= last && fd < TAG_FDS; fd++)
        fd_tag((int)fd, false);
}

static int qos_close_range(unsigned first, unsigned last, int flags)
{
    int rc = orig.close_range(first, last, flags);
    if (rc == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        untag_range(first, last);
    return rc;
}

static void qos_closefrom(int fd)
{
    orig.closefrom(fd);
    if (fd >= 0)
        untag_range((unsigned)fd, TAG_FDS - 1);
}

static int qos_dup(int fd)
{
    int r = orig.dup(fd);
    fd_tag(r, fd_pfs(fd));
    return r;
}

static int qos_dup2(int fd, int to)
{
    int r = orig.dup2(fd, to);
    if (r >= 0)
        fd_tag(r, fd_pfs(fd));
    return r;
}

static int qos_dup3(int fd, int to, int flags)
{
    int r = orig.dup3(fd, to, flags);
    if (r >= 0)
        fd_tag(r, fd_pfs(fd));
    return r;
}

static int qos_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int r = orig.fcntl(fd, cmd, arg);
    if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
        fd_tag(r, fd_pfs(fd));
    return r;
}

/* New descriptors that are never files: a number reused after a close we
 * could not see (a raw system call) must not stay marked. */
static int qos_socket(int dom, int type, int proto)
{
    int r = orig.socket(dom, type, proto);
    fd_tag(r, false);
    return r;
}

static int qos_pipe(int fds[2])
{
    int r = orig.pipe(fds);
    if (r == 0) {
        fd_tag(fds[0], false);
        fd_tag(fds[1], false);
    }
    return r;
}

static int qos_pipe2(int fds[2], int flags)
{
    int r = orig.pipe2(fds, flags);
    if (r == 0) {
        fd_tag(fds[0], false);
        fd_tag(fds[1], false);
    }
    return r;
}

/* ---- directories ---- */

static DIR *qos_opendir(const char *p)
{
    bool on = is_pfs(AT_FDCWD, p);
    CHARGE_IF(on, QOS_READDIR);
    DIR *d = orig.opendir(p);
    if (d)
        fd_tag(orig.dirfd(d), on);   /* for fstatat(dirfd(d), name) */
    return d;
}

static int qos_closedir(DIR *d)
{
    if (d)
        fd_tag(orig.dirfd(d), false);
    return orig.closedir(d);
}

FD_CALL(ssize_t, getdents64, QOS_READDIR, (int fd, void *b, size_t n), (fd, b, n), fd)

static int qos_scandir(const char *p, struct dirent ***list, int (*sel)(const struct dirent *),
                       int (*cmp)(const struct dirent **, const struct dirent **))
{
    CHARGE_IF(is_pfs(AT_FDCWD, p), QOS_READDIR);
    return orig.scandir(p, list, sel, cmp);
}

static int qos_chdir(const char *p)
{
    int r = orig.chdir(p);
    if (r == 0)
        update_cwd();
    return r;
}

static int qos_fchdir(int fd)
{
    int r = orig.fchdir(fd);
    if (r == 0)
        update_cwd();
    return r;
}

/* ---- data: charged after the call, with what it moved ---- */

#define DATA_CALL(name, cls, params, args, fd)                                 \
    static ssize_t qos_##name params                                           \
    {                                                                          \
        ssize_t r = orig.name args;                                            \
        if (r > 0 && fd_pfs(fd))                                               \
            qos_charge((cls), (uint64_t)r);                                    \
        return r;                                                              \
    }

DATA_CALL(read, QOS_READ, (int fd, void *b, size_t n), (fd, b, n), fd)
DATA_CALL(write, QOS_WRITE, (int fd, const void *b, size_t n), (fd, b, n), fd)
DATA_CALL(pread, QOS_READ, (int fd, void *b, size_t n, off_t o), (fd, b, n, o), fd)
DATA_CALL(pwrite, QOS_WRITE, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o), fd)
DATA_CALL(readv, QOS_READ, (int fd, const struct iovec *v, int n), (fd, v, n), fd)
DATA_CALL(writev, QOS_WRITE, (int fd, const struct iovec *v, int n), (fd, v, n), fd)
DATA_CALL(preadv, QOS_READ, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
DATA_CALL(pwritev, QOS_WRITE, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o), fd)
DATA_CALL(preadv2, QOS_READ, (int fd, const struct iovec *v, int n, off_t o, int f),
          (fd, v, n, o, f), fd)
DATA_CALL(pwritev2, QOS_WRITE, (int fd, const struct iovec *v, int n, off_t o, int f),
          (fd, v, n, o, f), fd)

/* Copies between two descriptors: the PFS side(s) pay. */
static ssize_t both_sides(ssize_t r, int in, int out)
{
    if (r > 0 && fd_pfs(in))
        qos_charge(QOS_READ, (uint64_t)r);
    if (r > 0 && fd_pfs(out))
        qos_charge(QOS_WRITE, (uint64_t)r);
    return r;
}

static ssize_t qos_copy_file_range(int in, off_t *ino, int out, off_t *outo, size_t n, unsigned f)
{
    return both_sides(orig.copy_file_range(in, ino, out, outo, n, f), in, out);
}

static ssize_t qos_sendfile(int out, int in, off_t *o, size_t n)
{
    return both_sides(orig.sendfile(out, in, o, n), in, out);
}

static ssize_t qos_splice(int in, off_t *ino, int out, off_t *outo, size_t n, unsigned f)
{
    return both_sides(orig.splice(in, ino, out, outo, n, f), in, out);
}

/* ---- set-up ---- */

#define QOS_WRAPPED(X) \
    X(open) X(openat) X(close) X(read) X(write) X(pread) X(pwrite) X(readv) X(writev) \
    X(preadv) X(pwritev) X(preadv2) X(pwritev2) X(stat) X(lstat) X(fstat) X(fstatat) \
    X(statx) X(__xstat) X(__lxstat) X(__fxstat) X(__fxstatat) X(access) X(faccessat) \
    X(euidaccess) X(realpath) X(mkdir) X(mkdirat) X(rmdir) X(mkdtemp) X(unlink) X(remove) \
    X(unlinkat) X(rename) X(renameat) X(renameat2) X(truncate) X(ftruncate) X(fsync) \
    X(fdatasync) X(syncfs) X(statfs) X(fstatfs) X(statvfs) X(fstatvfs) X(chmod) X(fchmod) \
    X(fchmodat) X(chown) X(lchown) X(fchown) X(fchownat) X(utimensat) X(futimens) X(utimes) \
    X(lutimes) X(futimes) X(futimesat) X(utime) X(symlink) X(symlinkat) X(readlink) \
    X(readlinkat) X(mknod) X(mknodat) X(mkfifo) X(mkfifoat) X(posix_fallocate) X(fallocate) \
    X(getxattr) X(lgetxattr) X(fgetxattr) X(listxattr) X(llistxattr) X(flistxattr) \
    X(setxattr) X(lsetxattr) X(fsetxattr) X(removexattr) X(lremovexattr) X(fremovexattr) \
    X(link) X(linkat) X(mkostemps) X(fopen) X(freopen) X(fdopen) X(close_range) X(closefrom) \
    X(dup) X(dup2) X(dup3) X(fcntl) X(socket) X(pipe) X(pipe2) X(opendir) X(closedir) \
    X(getdents64) X(scandir) X(chdir) X(fchdir) X(copy_file_range) X(sendfile) X(splice)

void pl_qos_init(struct real_functions *r)
{
    const char *paths = getenv(QOS_ENV_PATHS);
    if (!paths || !*paths)
        return;
    char err[512];
    struct qos_client_conf conf;
    if (qos_paths_parse(paths, &pfs, err, sizeof(err)) < 0) {
        pl_log("%s=%s: %s; I/O quality of service is off in this process", QOS_ENV_PATHS, paths, err);
        return;
    }
    if (qos_client_conf_from_env(&conf, err, sizeof(err)) < 0) {
        pl_log("%s; I/O quality of service is off in this process", err);
        return;
    }
    orig = *r;
    update_cwd();
    tag_inherited();
    qos_client_init(&conf);
#define QOS_HOOK(name) if (orig.name) r->name = qos_##name;
    QOS_WRAPPED(QOS_HOOK)
#undef QOS_HOOK
}
