/* ownfd: see ownfd.h. */
#include "preload.h"

#include <limits.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OWN_WINDOW = 1024, OWN_BASE_MAX = 1 << 16 };

static int own_base = INT_MAX;
static atomic_int own_top; /* 0: the library has no descriptor yet */
/* Which numbers in [own_base, own_base + OWN_WINDOW) were handed to the
 * library. A bit stays set after the library closes the descriptor (it
 * closes with a raw system call), so the socket/pipe test still applies. */
static atomic_ulong moved[OWN_WINDOW / (8 * sizeof(unsigned long))];

static bool was_moved(int fd)
{
    unsigned long i = (unsigned long)(fd - own_base), w = 8 * sizeof(unsigned long);
    return i < OWN_WINDOW &&
           (atomic_load_explicit(&moved[i / w], memory_order_relaxed) & (1UL << (i % w)));
}

void ownfd_init(void)
{
    struct rlimit rl;
    long limit = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        limit = (long)rl.rlim_cur;
    if (limit > OWN_BASE_MAX)
        limit = OWN_BASE_MAX;
    own_base = limit > 2 * OWN_WINDOW ? (int)(limit - OWN_WINDOW) : (int)(limit * 3 / 4);
}

int ownfd_base(void)
{
    return own_base;
}

int ownfd_top(void)
{
    return atomic_load_explicit(&own_top, memory_order_relaxed);
}

bool ownfd_is_library(int fd)
{
    if (fd < own_base || fd >= ownfd_top() || !was_moved(fd) || fdmap_get(fd) >= 0)
        return false;
    struct stat st;
    return real.fstat(fd, &st) == 0 && (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode));
}

/* Moves a descriptor libadafs just created to the high range; on failure
 * (no free number there) it stays where it is. Always close-on-exec: the
 * library never hands its descriptors to other programs. */
static int move_high(int fd)
{
    if (fd < 0 || fd >= own_base)
        return fd;
    int high = real.fcntl(fd, F_DUPFD_CLOEXEC, own_base);
    if (high < 0)
        return fd;
    real.close(fd);
    unsigned long i = (unsigned long)(high - own_base), w = 8 * sizeof(unsigned long);
    if (i < OWN_WINDOW)
        atomic_fetch_or(&moved[i / w], 1UL << (i % w));
    int top = atomic_load(&own_top);
    while (high + 1 > top && !atomic_compare_exchange_weak(&own_top, &top, high + 1))
        ;
    return high;
}

PL_EXPORT int socket(int domain, int type, int protocol)
{
    pl_ready();
    int fd = real.socket(domain, type, protocol);
    return route_depth > 0 ? move_high(fd) : fd;
}

PL_EXPORT int pipe(int fds[2])
{
    pl_ready();
    int rc = real.pipe(fds);
    if (rc == 0 && route_depth > 0) {
        fds[0] = move_high(fds[0]);
        fds[1] = move_high(fds[1]);
    }
    return rc;
}

PL_EXPORT int pipe2(int fds[2], int flags)
{
    pl_ready();
    int rc = real.pipe2(fds, flags);
    if (rc == 0 && route_depth > 0) {
        fds[0] = move_high(fds[0]);
        fds[1] = move_high(fds[1]);
    }
    return rc;
}
