/* ownfd: see ownfd.h. */
#include "preload.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OWN_WINDOW = 1024, OWN_BASE_MAX = 1 << 16 };

static int own_base = INT_MAX;
static atomic_int own_top; /* 0: the library has no descriptor yet */
/* Which numbers in [own_base, own_base + OWN_WINDOW) were handed to the
 * library; cleared when the library closes one (through close(), which
 * calls ownfd_closed): a pipe or socket the program puts there later is
 * the program's. */
static atomic_ulong moved[OWN_WINDOW / (8 * sizeof(unsigned long))];
/* Of those, the regular files received (SCM_RIGHTS) and not closed yet. */
static atomic_ulong received[OWN_WINDOW / (8 * sizeof(unsigned long))];
/* And what each number held when it was handed over (st_dev, st_ino): a
 * number the library lost without closing it (the program closed it with
 * a raw system call and put its own file there, which lib/direct.c then
 * leaves alone) holds another object, and is the program's whatever the
 * bits say. Written before the bit is set. */
static _Atomic uint64_t held_dev[OWN_WINDOW], held_ino[OWN_WINDOW];

static bool bit_of(atomic_ulong *set, int fd)
{
    unsigned long i = (unsigned long)(fd - own_base), w = 8 * sizeof(unsigned long);
    return i < OWN_WINDOW &&
           (atomic_load_explicit(&set[i / w], memory_order_relaxed) & (1UL << (i % w)));
}

static void bit_set(atomic_ulong *set, int fd, bool on)
{
    unsigned long i = (unsigned long)(fd - own_base), w = 8 * sizeof(unsigned long);
    if (i >= OWN_WINDOW)
        return;
    if (on)
        atomic_fetch_or(&set[i / w], 1UL << (i % w));
    else
        atomic_fetch_and(&set[i / w], ~(1UL << (i % w)));
}

static bool was_moved(int fd)
{
    return bit_of(moved, fd);
}

/* Records what fd holds now, then marks it as handed to the library (and,
 * for a received file, as received). */
static void hand_over(int fd, bool was_received)
{
    unsigned long i = (unsigned long)(fd - own_base);
    if (i >= OWN_WINDOW)
        return;
    struct stat st;
    bool known = real.fstat(fd, &st) == 0;
    atomic_store(&held_dev[i], known ? (uint64_t)st.st_dev : 0);
    atomic_store(&held_ino[i], known ? (uint64_t)st.st_ino : 0);
    bit_set(moved, fd, true);
    if (was_received)
        bit_set(received, fd, true);
}

static bool still_held(int fd, const struct stat *st)
{
    unsigned long i = (unsigned long)(fd - own_base);
    return i < OWN_WINDOW && atomic_load(&held_dev[i]) == (uint64_t)st->st_dev &&
           atomic_load(&held_ino[i]) == (uint64_t)st->st_ino;
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
    if (real.fstat(fd, &st) < 0 || !still_held(fd, &st))
        return false;
    return S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode) ||
           (S_ISREG(st.st_mode) && bit_of(received, fd));
}

/* Cleared before the library's close, never after: once closed, the
 * number may at once be another of the library's (move_high). */
void ownfd_closed(int fd)
{
    bit_set(received, fd, false);
    bit_set(moved, fd, false);
}

/* Moves a descriptor libadafs just created to the high range; on failure
 * (no free number there) it stays where it is. Always close-on-exec: the
 * library never hands its descriptors to other programs. */
static int move_high(int fd, bool was_received)
{
    if (fd < 0 || fd >= own_base) {
        if (fd >= 0 && was_received)
            hand_over(fd, true);
        return fd;
    }
    int high = real.fcntl(fd, F_DUPFD_CLOEXEC, own_base);
    if (high < 0)
        return fd;
    real.close(fd);
    hand_over(high, was_received);
    int top = atomic_load(&own_top);
    while (high + 1 > top && !atomic_compare_exchange_weak(&own_top, &top, high + 1))
        ;
    return high;
}

PL_EXPORT int socket(int domain, int type, int protocol)
{
    pl_ready();
    int fd = real.socket(domain, type, protocol);
    return route_depth > 0 ? move_high(fd, false) : fd;
}

/* The descriptors a message brings libadafs are moved like its sockets
 * (those the program receives are its own business). */
PL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    pl_ready();
    ssize_t n = real.recvmsg(fd, msg, flags);
    if (n < 0 || route_depth == 0 || msg->msg_controllen == 0)
        return n;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            got = move_high(got, true);
            memcpy(CMSG_DATA(cm) + i * sizeof(int), &got, sizeof(int));
        }
    }
    return n;
}

PL_EXPORT int pipe(int fds[2])
{
    pl_ready();
    int rc = real.pipe(fds);
    if (rc == 0 && route_depth > 0) {
        fds[0] = move_high(fds[0], false);
        fds[1] = move_high(fds[1], false);
    }
    return rc;
}

PL_EXPORT int pipe2(int fds[2], int flags)
{
    pl_ready();
    int rc = real.pipe2(fds, flags);
    if (rc == 0 && route_depth > 0) {
        fds[0] = move_high(fds[0], false);
        fds[1] = move_high(fds[1], false);
    }
    return rc;
}
