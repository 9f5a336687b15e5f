/* route: see route.h. */
#include "preload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__thread int route_depth __attribute__((tls_model("initial-exec")));

static _Atomic(adafs *) route_fs;
static pthread_mutex_t connect_lock = PTHREAD_MUTEX_INITIALIZER;
static int connect_errno;     /* the connection failed: every call's errno */
static atomic_ulong counts[ROUTE_NOPS];

static adafs *connect_locked(void)
{
    adafs *fs = atomic_load(&route_fs);
    if (fs || connect_errno)
        return fs;
    char err[512] = "";
    route_depth++;
    int rc = adafs_connect(&fs, NULL, err, sizeof err);
    route_depth--;
    if (rc < 0) {
        /* Settings adafs cannot take (a malformed instance file, a bad
         * $ADAFS_TRANSPORT) are the caller's to fix: EINVAL. An instance
         * that cannot be reached at all: EIO, as a dead server. */
        connect_errno = rc == -EINVAL ? EINVAL : EIO;
        const char *inst = getenv(ADAFS_ENV_INSTANCE);
        pl_log("cannot use the adafs instance %s=%s: %s (%s); calls under the mount fail with %s",
               ADAFS_ENV_INSTANCE, inst ? inst : "(unset)", err[0] ? err : "no detail",
               strerror(-rc), connect_errno == EINVAL ? "EINVAL" : "EIO");
        return NULL;
    }
    atomic_store(&route_fs, fs);
    return fs;
}

void route_explain(long r)
{
    static atomic_bool said;
    adafs *fs = atomic_load(&route_fs);
    char why[512];
    if (!fs || atomic_load(&said) || !adafs_last_error(fs, why, sizeof(why))[0] ||
        atomic_exchange(&said, true))
        return;
    pl_log("%s (the call failed with %s)", why, strerror((int)-r));
}

adafs *route_enter(enum route_op op)
{
    adafs *fs = atomic_load_explicit(&route_fs, memory_order_acquire);
    if (!fs) {
        pthread_mutex_lock(&connect_lock);
        fs = connect_locked();
        pthread_mutex_unlock(&connect_lock);
        if (!fs) {
            errno = connect_errno;
            return NULL;
        }
    }
    route_depth++;
    atomic_fetch_add_explicit(&counts[op], 1, memory_order_relaxed);
    return fs;
}

adafs *route_enter_private(enum route_op op, const char *instance_file)
{
    route_depth++;
    atomic_fetch_add_explicit(&counts[op], 1, memory_order_relaxed);
    adafs *fs = NULL;
    char err[512] = "";
    int rc = adafs_connect(&fs, instance_file, err, sizeof err);
    if (rc < 0) {
        route_depth--;
        pl_log("cannot use the adafs instance %s: %s (%s)",
               instance_file ? instance_file : "$" ADAFS_ENV_INSTANCE, err[0] ? err : "no detail",
               strerror(-rc));
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
    pthread_mutex_lock(&connect_lock);
    adafs *fs = connect_locked();
    pthread_mutex_unlock(&connect_lock);
    return fs ? adafs_mount_point(fs) : NULL;
}

int route_fd_path(int lfd, char *buf, size_t len)
{
    adafs *fs = route_enter(ROUTE_FD);
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
