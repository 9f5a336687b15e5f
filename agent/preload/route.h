/* route: the one door from intercepted calls into libadafs.
 *
 * Every call the interposer sends to the file system passes route_enter()
 * before it reaches libadafs and route_leave() after: this is the place
 * where later I/O forwarding, QoS throttling or accounting hook in, since
 * the client sees every call it intercepts here and nowhere else.
 *
 * route_enter() also connects lazily, each mount on its first use (reading
 * the instance file pathres gives for it), and marks the thread as "inside
 * libadafs", so the library's own open/read/write/connect calls, which
 * come back through the wrappers, go straight to the C library.
 *
 * Descriptors: the interposer keeps one int per open adafs file (fdmap),
 * the mount it was opened in (high bits) and libadafs's descriptor in that
 * mount's handle (low bits). Mount 0's are libadafs's own numbers. */
#ifndef ADAFS_PRELOAD_ROUTE_H
#define ADAFS_PRELOAD_ROUTE_H

#include <errno.h>
#include <stddef.h>

#include "adafs.h"
#include "pathres.h"

enum route_op {
    ROUTE_OPEN, ROUTE_CLOSE, ROUTE_READ, ROUTE_WRITE, ROUTE_SEEK, ROUTE_STAT,
    ROUTE_DIR, ROUTE_NAMESPACE, ROUTE_ATTR, ROUTE_SYNC, ROUTE_FD,
    ROUTE_NOPS
};

/* An interposer descriptor: mount m's libadafs descriptor lfd. */
#define ROUTE_FD_BITS 24
_Static_assert(PATHRES_MOUNTS_MAX <= (1 << (31 - ROUTE_FD_BITS)), "mount numbers fit");
static inline int route_fd(int m, int lfd)
{
    return m << ROUTE_FD_BITS | lfd;
}
static inline int route_fd_mount(int rfd)
{
    return rfd >> ROUTE_FD_BITS;
}
static inline int route_fd_lib(int rfd)
{
    return rfd & ((1 << ROUTE_FD_BITS) - 1);
}
/* route_fd of a descriptor libadafs gave: -EMFILE beyond ROUTE_FD_BITS
 * (libadafs gives the lowest free number, so that takes 16 Mi open files). */
static inline int route_fd_of(int m, int lfd)
{
    return lfd < 0 ? lfd : lfd >= (1 << ROUTE_FD_BITS) ? -EMFILE : route_fd(m, lfd);
}

/* Depth of libadafs calls on this thread; > 0 means "pass through". */
extern __thread int route_depth __attribute__((tls_model("initial-exec")));

/* Returns mount m's connected file system, or NULL with errno = EIO when
 * its instance cannot be used (the reason is logged once). */
adafs *route_enter(enum route_op op, int m);

/* The same for a call on interposer descriptor rfd: its mount's file
 * system, and *lfd its libadafs descriptor there. */
adafs *route_enter_fd(enum route_op op, int rfd, int *lfd);

/* Enters for a call on an object that an earlier successful call made (a
 * directory listing): the connection exists, so this cannot fail. */
void route_enter_existing(enum route_op op);

/* Enters with a handle of the caller's own, connected to mount m's
 * instance file (as the process started) for this call alone, and leaves by
 * disconnecting it. For work that must leave no state behind in this
 * process: exec in the child of a vfork, whose memory is the parent's.
 * NULL with errno EIO if the instance cannot be used (logged). */
adafs *route_enter_private(enum route_op op, int m);
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

/* Connects mount 0 at initialisation when its mount point must come from
 * $ADAFS_INSTANCE's file. Returns the mount or NULL (logged). */
const char *route_connect_for_mount(void);

/* Copies the inner path of interposer descriptor rfd; 0 or -errno. */
int route_fd_path(int rfd, char *buf, size_t len);

/* Calls made per operation class. With $ADAFS_PRELOAD_STATS naming a
 * (kernel) file, each process appends one line of counts to it when it
 * exits: diagnostics for "did this program's I/O reach adafs at all?".
 * A file, not stderr: programs such as coreutils close stderr at exit. */
unsigned long route_count(enum route_op op);
void route_append_counts(const char *file);

void route_register_atfork(void);

#endif
