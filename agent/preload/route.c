/* route: see route.h. */
#include "preload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__thread int route_depth __attribute__((tls_model("initial-exec")));

/* Each mount's handle, connected on its first use. */
struct route_mount {
    _Atomic(adafs *) fs;
    int connect_errno;        /* the connection failed: every call's errno */
    atomic_bool explained;    /* route_explain said why once */
};
static struct route_mount mounts[PATHRES_MOUNTS_MAX];
static pthread_mutex_t connect_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ulong counts[ROUTE_NOPS];

/* Says why mount m's instance cannot be used, naming the variable and file. */
static void log_unusable(int m, const char *err, int rc, const char *then)
{
    const char *inst = pathres_instance(m);
    pl_log("cannot use the adafs instance %s=%s (mount %s): %s (%s)%s",
           pathres_instance_var(m), inst ? inst : "(unset)", pathres_mount(m),
           err[0] ? err : "no detail", strerror(-rc), then);
}

static adafs *connect_locked(int m)
{
    struct route_mount *rm = &mounts[m];
    adafs *fs = atomic_load(&rm->fs);
    if (fs || rm->connect_errno)
        return fs;
    char err[512] = "";
    int rc = -EINVAL;
    route_depth++;
    if (pathres_instance(m))
        rc = adafs_connect(&fs, pathres_instance(m), err, sizeof err);
    else
        snprintf(err, sizeof err, "%s is not set", ADAFS_ENV_INSTANCE);
    route_depth--;
    if (rc < 0) {
        /* Settings adafs cannot take (a malformed instance file, a bad
         * $ADAFS_TRANSPORT) are the caller's to fix: EINVAL. An instance
         * that cannot be reached at all: EIO, as a dead server. */
        rm->connect_errno = rc == -EINVAL ? EINVAL : EIO;
        log_unusable(m, err, rc, rm->connect_errno == EINVAL
                                 ? "; calls under the mount fail with EINVAL"
                                 : "; calls under the mount fail with EIO");
        return NULL;
    }
    atomic_store(&rm->fs, fs);
    return fs;
}

void route_explain(long r)
{
    char why[512];
    for (int m = 0; m < pathres_nmounts(); m++) {
        adafs *fs = atomic_load(&mounts[m].fs);
        if (!fs || atomic_load(&mounts[m].explained) ||
            !adafs_last_error(fs, why, sizeof(why))[0] ||
            atomic_exchange(&mounts[m].explained, true))
            continue;
        pl_log("%s (mount %s; the call failed with %s)", why, pathres_mount(m),
               strerror((int)-r));
    }
}

adafs *route_enter(enum route_op op, int m)
{
    adafs *fs = atomic_load_explicit(&mounts[m].fs, memory_order_acquire);
    if (!fs) {
        pthread_mutex_lock(&connect_lock);
        fs = connect_locked(m);
        pthread_mutex_unlock(&connect_lock);
        if (!fs) {
            errno = mounts[m].connect_errno;
            return NULL;
        }
    }
    route_depth++;
    atomic_fetch_add_explicit(&counts[op], 1, memory_order_relaxed);
    return fs;
}

adafs *route_enter_fd(enum route_op op, int rfd, int *lfd)
{
    *lfd = route_fd_lib(rfd);
    return route_enter(op, route_fd_mount(rfd));
}

adafs *route_enter_private(enum route_op op, int m)
{
    route_depth++;
    atomic_fetch_add_explicit(&counts[op], 1, memory_order_relaxed);
    adafs *fs = NULL;
    char err[512] = "";
    int rc = -EINVAL;
    if (pathres_instance(m))
        rc = adafs_connect(&fs, pathres_instance(m), err, sizeof err);
    else
        snprintf(err, sizeof err, "%s is not set", ADAFS_ENV_INSTANCE);
    if (rc < 0) {
        route_depth--;
        log_unusable(m, err, rc, "");
        errno = EIO;
        return NULL;
    }
    return fs;
}

void route_leave_private(adafs *fs)
{
    adafs_disconnect(fs);
    route_depth--;
}

void route_enter_existing(enum route_op op)
{
    route_depth++;
    atomic_fetch_add_explicit(&counts[op], 1, memory_order_relaxed);
}

const char *route_connect_for_mount(void)
{
    /* Before pathres knows any mount: read and let go (mount 0 connects
     * again on its first use, as every mount does). */
    static char mount[PATH_MAX];
    route_depth++;
    adafs *fs = NULL;
    char err[512] = "";
    int rc = adafs_connect(&fs, NULL, err, sizeof err);
    route_depth--;
    if (rc < 0) {
        const char *inst = getenv(ADAFS_ENV_INSTANCE);
        pl_log("cannot use the adafs instance %s=%s: %s (%s); adafs is not mounted in this "
               "process", ADAFS_ENV_INSTANCE, inst ? inst : "(unset)", err[0] ? err : "no detail",
               strerror(-rc));
        return NULL;
    }
    snprintf(mount, sizeof mount, "%s", adafs_mount_point(fs));
    route_depth++;
    adafs_disconnect(fs);
    route_depth--;
    return mount;
}

int route_fd_path(int rfd, char *buf, size_t len)
{
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_FD, rfd, &lfd);
    if (!fs)
        return -EIO;
    const char *p = adafs_fd_path(fs, lfd);
    int rc = 0;
    if (!p)
        rc = -EBADF;
    else if (strlen(p) + 1 > len)
        rc = -ENAMETOOLONG;
    else
        strcpy(buf, p);
    route_leave_raw(0);
    return rc;
}

unsigned long route_count(enum route_op op)
{
    return atomic_load_explicit(&counts[op], memory_order_relaxed);
}

void route_append_counts(const char *file)
{
    static const char *const names[ROUTE_NOPS] = {
        "open", "close", "read", "write", "seek", "stat",
        "dir", "namespace", "attr", "sync", "fd",
    };
    char line[512];
    int n = snprintf(line, sizeof line, "pid=%d", (int)getpid());
    for (int op = 0; op < ROUTE_NOPS && n > 0 && (size_t)n < sizeof line - 1; op++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=%lu", names[op],
                      route_count((enum route_op)op));
    if (n <= 0 || (size_t)n >= sizeof line - 1)
        return;
    line[n++] = '\n';
    int fd = real.open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || real.write(fd, line, (size_t)n) != n)
        pl_log("cannot append call counts to ADAFS_PRELOAD_STATS=%s: %s", file, strerror(errno));
    if (fd >= 0)
        real.close(fd);
}

static void lock_for_fork(void)
{
    pthread_mutex_lock(&connect_lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&connect_lock);
}

void route_register_atfork(void)
{
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}
