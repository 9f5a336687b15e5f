/* fdmap: see fdmap.h. */
#include "preload.h"

#include <stdatomic.h>
#include <stdlib.h>

#define BLOCK_BITS 10
#define BLOCK_SIZE (1 << BLOCK_BITS)
#define NBLOCKS (FDMAP_MAX_FD / BLOCK_SIZE)

struct fdmap_entry {
    atomic_int lfd_plus_one;  /* 0: not an adafs descriptor */
    _Atomic(void *) dirstate;
};

static _Atomic(struct fdmap_entry *) blocks[NBLOCKS];

static struct fdmap_entry *entry(int kfd, bool create)
{
    if (kfd < 0 || kfd >= FDMAP_MAX_FD)
        return NULL;
    _Atomic(struct fdmap_entry *) *slot = &blocks[kfd >> BLOCK_BITS];
    struct fdmap_entry *block = atomic_load_explicit(slot, memory_order_acquire);
    if (!block && create) {
        struct fdmap_entry *fresh = calloc(BLOCK_SIZE, sizeof *fresh);
        if (!fresh)
            return NULL;
        if (atomic_compare_exchange_strong(slot, &block, fresh))
            block = fresh;
        else
            free(fresh); /* another thread won; block now holds its one */
    }
    return block ? &block[kfd & (BLOCK_SIZE - 1)] : NULL;
}

int fdmap_get(int kfd)
{
    struct fdmap_entry *e = entry(kfd, false);
    return e ? atomic_load_explicit(&e->lfd_plus_one, memory_order_acquire) - 1 : -1;
}

int fdmap_set(int kfd, int lfd)
{
    if (kfd < 0 || kfd >= FDMAP_MAX_FD)
        return -EMFILE;
    struct fdmap_entry *e = entry(kfd, true);
    if (!e)
        return -ENOMEM;
    atomic_store_explicit(&e->dirstate, NULL, memory_order_relaxed);
    atomic_store_explicit(&e->lfd_plus_one, lfd + 1, memory_order_release);
    return 0;
}

int fdmap_take(int kfd, void **dirstate)
{
    struct fdmap_entry *e = entry(kfd, false);
    *dirstate = NULL;
    if (!e)
        return -1;
    int lfd = atomic_exchange(&e->lfd_plus_one, 0) - 1;
    if (lfd >= 0)
        *dirstate = atomic_exchange(&e->dirstate, NULL);
    return lfd;
}

void *fdmap_get_dir(int kfd)
{
    struct fdmap_entry *e = entry(kfd, false);
    return e ? atomic_load_explicit(&e->dirstate, memory_order_acquire) : NULL;
}

int fdmap_set_dir(int kfd, void *dirstate)
{
    struct fdmap_entry *e = entry(kfd, false);
    void *expected = NULL;
    if (!e)
        return -EBADF;
    return atomic_compare_exchange_strong(&e->dirstate, &expected, dirstate) ? 0 : -EBUSY;
}

int fdmap_next(int from)
{
    if (from < 0)
        from = 0;
    for (int b = from >> BLOCK_BITS; b < NBLOCKS; b++) {
        struct fdmap_entry *block = atomic_load_explicit(&blocks[b], memory_order_acquire);
        if (!block)
            continue;
        int first = b == from >> BLOCK_BITS ? from & (BLOCK_SIZE - 1) : 0;
        for (int i = first; i < BLOCK_SIZE; i++)
            if (atomic_load_explicit(&block[i].lfd_plus_one, memory_order_acquire))
                return (b << BLOCK_BITS) | i;
    }
    return -1;
}
