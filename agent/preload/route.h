/* route: the one door from intercepted calls into libadafs.
 *
 * Every call the interposer sends to the file system passes route_enter()
 * before it reaches libadafs and route_leave() after: this is the place
 * where later I/O forwarding, QoS throttling or accounting hook in, since
 * the client sees every call it intercepts here and nowhere else.
 *
 * route_enter() also connects lazily on first use (reading the instance
 * file named by $ADAFS_INSTANCE) and marks the thread as "inside libadafs",
 * so the library's own open/read/write/connect calls, which come back
 * through the wrappers, go straight to the C library. */
#ifndef ADAFS_PRELOAD_ROUTE_H
#define ADAFS_PRELOAD_ROUTE_H

#include <errno.h>
#include <stddef.h>

#include "adafs.h"

enum route_op {
    ROUTE_OPEN, ROUTE_CLOSE, ROUTE_READ, ROUTE_WRITE, ROUTE_SEEK, ROUTE_STAT,
    ROUTE_DIR, ROUTE_NAMESPACE, ROUTE_ATTR, ROUTE_SYNC, ROUTE_FD,
    ROUTE_NOPS
};

/* Depth of libadafs calls on this thread; > 0 means "pass through". */
extern __thread int route_depth __attribute__((tls_model("initial-exec")));

/* Returns the connected file system, or NULL with errno = EIO when the
 * instance cannot be used (the reason is logged once). */
adafs *route_enter(enum route_op op);

/* Enters for a call on an object that an earlier successful call made (a
 * directory listing): the connection exists, so this cannot fail. */
void route_enter_existing(enum route_op op);

/* Enters with a handle of the caller's own, connected to instance_file
 * (NULL: $ADAFS_INSTANCE) for this call alone, and leaves by
 * disconnecting it. For work that must leave no state behind in this
 * process: exec in the child of a vfork, whose memory is the parent's.
 * NULL with errno EIO if the instance cannot be used (logged). */
adafs *route_enter_private(enum route_op op, const char *instance_file);
void route_leave_private(adafs *fs);

/* Says once per process on stderr why a server could not be used
 * (adafs_last_error: "server 1 (n2:40021) did not prove it knows the
 * instance's secret..."), after a call failed with r; nothing if no
 * connection failed. */
void route_explain(long r);

/* Leaves the library; turns a negative result into errno and -1. */
static inline long route_leave(long r)
{
    route_depth--;
    if (r == -EACCES || r == -EPERM || r == -EIO)
        route_explain(r);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

/* Leaves the library and returns r unchanged (negative errno kept). */
static inline long route_leave_raw(long r)
{
    route_depth--;
    if (r == -EACCES || r == -EPERM || r == -EIO)
        route_explain(r);
    return r;
}

/* Connects at initialisation when the mount point must come from the
 * instance file. Returns the mount or NULL (logged). */
const char *route_connect_for_mount(void);

/* Copies the inner path of library descriptor lfd; 0 or -errno. */
int route_fd_path(int lfd, char *buf, size_t len);

/* Calls made per operation class. With $ADAFS_PRELOAD_STATS naming a
 * (kernel) file, each process appends one line of counts to it when it
 * exits: diagnostics for "did this program's I/O reach adafs at all?".
 * A file, not stderr: programs such as coreutils close stderr at exit. */
unsigned long route_count(enum route_op op);
void route_append_counts(const char *file);

void route_register_atfork(void);

#endif
