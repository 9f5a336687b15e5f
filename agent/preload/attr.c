/* attr: the attribute calls of the path family (meta.c): chmod, chown and
 * the utime family, by path and by descriptor. */
#include "preload.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int chmod_inner(int m, const char *inner, mode_t mode)
{
    adafs *fs = route_enter(ROUTE_ATTR, m);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_chmod(fs, inner, mode & 07777));
}

PL_EXPORT int chmod(const char *path, mode_t mode)
{
    struct pathres r;
    if (!pl_active())
        return real.chmod(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.chmod(r.kpath, mode));
    return chmod_inner(r.mount, r.inner, mode);
}

PL_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.fchmodat(dirfd, path, mode, flags);
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.fchmodat(dirfd, r.kpath, mode, flags));
    return chmod_inner(r.mount, r.inner, mode);
}

PL_EXPORT int fchmod(int fd, mode_t mode)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fchmod(fd, mode);
    char inner[PATH_MAX];
    if (pl_fd_inner(lfd, inner, sizeof inner) < 0)
        return -1;
    return chmod_inner(route_fd_mount(lfd), inner, mode);
}

/* adafs files belong to the job user: a chown that changes nothing (own
 * uid and group, or -1) succeeds so that tar and cp -p work; any real
 * change is EPERM, as for an unprivileged user on a kernel file system. */
static bool own_group(gid_t gid)
{
    if (gid == getegid())
        return true;
    gid_t groups[NGROUPS_MAX];
    int n = getgroups(NGROUPS_MAX, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return true;
    return false;
}

static int chown_check(uid_t uid, gid_t gid)
{
    if ((uid != (uid_t)-1 && uid != geteuid()) || (gid != (gid_t)-1 && !own_group(gid))) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

/* chown of a missing path must still fail. */
static int chown_inner(int m, const char *inner, uid_t uid, gid_t gid)
{
    struct stat st;
    if (pl_stat_inner(m, inner, &st) < 0)
        return -1;
    return chown_check(uid, gid);
}

PL_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
    struct pathres r;
    if (!pl_active())
        return real.chown(path, uid, gid);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.chown(r.kpath, uid, gid));
    return chown_inner(r.mount, r.inner, uid, gid);
}

PL_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
    struct pathres r;
    if (!pl_active())
        return real.lchown(path, uid, gid);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.lchown(r.kpath, uid, gid));
    return chown_inner(r.mount, r.inner, uid, gid);
}

PL_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fchown(fd, uid, gid);
    return chown_check(uid, gid);
}

PL_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.fchownat(dirfd, path, uid, gid, flags);
    if ((flags & AT_EMPTY_PATH) && !pl_null(path) && !*path) {
        int lfd = fdmap_get(dirfd);
        return lfd < 0 ? real.fchownat(dirfd, path, uid, gid, flags) : chown_check(uid, gid);
    }
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.fchownat(dirfd, r.kpath, uid, gid, flags));
    return chown_inner(r.mount, r.inner, uid, gid);
}

/* Sets times on inner; times NULL means now, UTIME_NOW and UTIME_OMIT are
 * resolved here so the library always gets two concrete times. */
static int utimens_inner(int m, const char *inner, const struct timespec *times)
{
    struct timespec t[2], now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (!times) {
        t[0] = t[1] = now;
    } else {
        struct stat st;
        bool need_stat = times[0].tv_nsec == UTIME_OMIT || times[1].tv_nsec == UTIME_OMIT;
        if (need_stat && pl_stat_inner(m, inner, &st) < 0)
            return -1;
        for (int i = 0; i < 2; i++) {
            if (times[i].tv_nsec == UTIME_NOW)
                t[i] = now;
            else if (times[i].tv_nsec == UTIME_OMIT)
                t[i] = i == 0 ? st.st_atim : st.st_mtim;
            else if (times[i].tv_nsec < 0 || times[i].tv_nsec >= 1000000000L) {
                errno = EINVAL;
                return -1;
            } else
                t[i] = times[i];
        }
    }
    adafs *fs = route_enter(ROUTE_ATTR, m);
    if (!fs)
        return -1;
    return (int)route_leave(adafs_utimens(fs, inner, t));
}

static int utimens_lfd(int lfd, const struct timespec *times)
{
    char inner[PATH_MAX];
    if (pl_fd_inner(lfd, inner, sizeof inner) < 0)
        return -1;
    return utimens_inner(route_fd_mount(lfd), inner, times);
}

static bool timeval_to_timespec(const struct timeval *tv, struct timespec ts[2])
{
    if (!tv)
        return false;
    for (int i = 0; i < 2; i++) {
        ts[i].tv_sec = tv[i].tv_sec;
        ts[i].tv_nsec = tv[i].tv_usec * 1000;
    }
    return true;
}

PL_EXPORT int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags)
{
    struct pathres r;
    if (!pl_active())
        return real.utimensat(dirfd, path, times, flags);
    if (pl_null(path) || ((flags & AT_EMPTY_PATH) && !*path)) {
        int lfd = fdmap_get(dirfd);
        return lfd < 0 ? real.utimensat(dirfd, path, times, flags) : utimens_lfd(lfd, times);
    }
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.utimensat(dirfd, r.kpath, times, flags));
    return utimens_inner(r.mount, r.inner, times);
}

PL_EXPORT int futimens(int fd, const struct timespec times[2])
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.futimens(fd, times);
    return utimens_lfd(lfd, times);
}

PL_EXPORT int utimes(const char *path, const struct timeval tv[2])
{
    struct pathres r;
    struct timespec ts[2];
    if (!pl_active())
        return real.utimes(path, tv);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.utimes(r.kpath, tv));
    return utimens_inner(r.mount, r.inner, timeval_to_timespec(tv, ts) ? ts : NULL);
}

PL_EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
    struct pathres r;
    struct timespec ts[2];
    if (!pl_active())
        return real.lutimes(path, tv);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.lutimes(r.kpath, tv));
    return utimens_inner(r.mount, r.inner, timeval_to_timespec(tv, ts) ? ts : NULL);
}

PL_EXPORT int futimes(int fd, const struct timeval tv[2])
{
    int lfd;
    struct timespec ts[2];
    if (!PL_ADAFS_FD(fd, lfd))
        return real.futimes(fd, tv);
    return utimens_lfd(lfd, timeval_to_timespec(tv, ts) ? ts : NULL);
}

PL_EXPORT int futimesat(int dirfd, const char *path, const struct timeval tv[2])
{
    struct pathres r;
    struct timespec ts[2];
    if (!pl_active())
        return real.futimesat(dirfd, path, tv);
    if (pl_null(path)) {
        int lfd = fdmap_get(dirfd);
        return lfd < 0 ? real.futimesat(dirfd, path, tv)
                       : utimens_lfd(lfd, timeval_to_timespec(tv, ts) ? ts : NULL);
    }
    PL_ROUTE_PATH(dirfd, path, &r, -1, real.futimesat(dirfd, r.kpath, tv));
    return utimens_inner(r.mount, r.inner, timeval_to_timespec(tv, ts) ? ts : NULL);
}

PL_EXPORT int utime(const char *path, const struct utimbuf *ut)
{
    struct pathres r;
    if (!pl_active())
        return real.utime(path, ut);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.utime(r.kpath, ut));
    if (!ut)
        return utimens_inner(r.mount, r.inner, NULL);
    struct timespec ts[2] = { { ut->actime, 0 }, { ut->modtime, 0 } };
    return utimens_inner(r.mount, r.inner, ts);
}
