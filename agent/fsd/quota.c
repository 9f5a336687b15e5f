/* quota: the node's byte budget for one instance, shared by chunk files
 * (chunks.c) and small files kept inline (batch.c, meta.c). Lock-free:
 * requests on many connections take from it at once. */
#include "server.h"

#include <errno.h>

int quota_take(struct server *srv, uint64_t bytes)
{
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
