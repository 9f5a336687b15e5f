/* quota: the node's byte budget for one instance, shared by chunk files
 * (chunks.c) and small files kept inline (batch.c, meta.c), and the floor
 * of free space kept for RocksDB in the file system under the root (see
 * instance_space()). Lock-free: requests on many connections take from it
 * at once. */
#include "server.h"

#include <errno.h>
#include <sys/statvfs.h>
#include <time.h>

/* Free space is looked at again after this long: a statvfs per request
 * would cost creates a few percent, and what can be written in between
 * (GB/s for 5 ms) is far below the headroom's 12 MiB or more. */
#define ROOM_RECHECK_MS 5

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t free_bytes(struct server *srv)
{
    int64_t now = mono_ms();
    int64_t last = atomic_load(&srv->room_checked_ms);
    if (last && now - last < ROOM_RECHECK_MS)
        return atomic_load(&srv->room_free);
    struct statvfs st;
    /* Unknown (an error): no floor rather than refusing everything. */
    uint64_t left = statvfs(srv->root, &st) == 0 ? (uint64_t)st.f_bavail * st.f_frsize : UINT64_MAX;
    atomic_store(&srv->room_free, left);
    atomic_store(&srv->room_checked_ms, now);
    return left;
}

int quota_room(struct server *srv, uint64_t bytes)
{
    if (!srv->headroom)
        return 0;
    uint64_t left = free_bytes(srv);
    return left >= srv->headroom && left - srv->headroom >= bytes ? 0 : -ENOSPC;
}

int quota_take(struct server *srv, uint64_t bytes)
{
    if (quota_room(srv, bytes) < 0)
        return -ENOSPC;
    uint64_t used = atomic_load(&srv->used);
    do {
        if (bytes > srv->quota || used > srv->quota - bytes)
            return -ENOSPC;
    } while (!atomic_compare_exchange_weak(&srv->used, &used, used + bytes));
    return 0;
}

/* Saturating: the file system may report a few more blocks for a file
 * when it is removed than were counted while it was written (extent blocks
 * allocated at writeback), and the count must not wrap below zero. */
void quota_give(struct server *srv, uint64_t bytes)
{
    uint64_t used = atomic_load(&srv->used);
    while (!atomic_compare_exchange_weak(&srv->used, &used, used > bytes ? used - bytes : 0))
        ;
}
