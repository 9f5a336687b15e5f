/* handoff.c: a LOOKUP's attributes handed to the GETATTR the kernel
 * sends right after it for the same caller and path, so that a stat
 * through the mount asks the servers once (see below). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuse/fuse_int.h"

/* A stat of a path through the mount is two requests: the kernel looks
 * the name up (LOOKUP, which libfuse answers with a getattr), then asks
 * for the attributes again (GETATTR), since none are cached. The second
 * is answered with what the first fetched when it comes from the same
 * caller thread as its very next request to the mount, for the same
 * path, within HANDOFF_NS: the stat then shows the file as it was during
 * the syscall, at its lookup, as one request to the servers would.
 * A thread's slot is emptied by any other request of that thread. Only a
 * syscall that ends with a lookup (open with O_PATH, chdir) followed by
 * an fstat of that file within HANDOFF_NS can see the lookup's
 * attributes instead of newer ones (doc/fuse.md). */
#define HANDOFF_SLOTS 64
#define HANDOFF_NS 10000000   /* 10 ms */
struct handoff {
    pthread_mutex_t lock;
    atomic_uint pid;   /* the caller thread whose lookup this is, or 0 */
    uint64_t when;     /* CLOCK_MONOTONIC ns */
    char *path;
    struct stat st;
};
static struct handoff handoffs[HANDOFF_SLOTS];
atomic_bool handoff_off;   /* some requests went unseen (spliced) */

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static struct handoff *handoff_of(uint32_t pid)
{
    return &handoffs[pid % HANDOFF_SLOTS];
}

void handoffs_init(void)
{
    for (int i = 0; i < HANDOFF_SLOTS; i++)
        pthread_mutex_init(&handoffs[i].lock, NULL);
}

/* Keeps path's attributes st as pid's lookup, or (path NULL) empties pid's slot. */
void handoff_set(uint32_t pid, const char *path, const struct stat *st)
{
    struct handoff *h = handoff_of(pid);
    if (!path && atomic_load_explicit(&h->pid, memory_order_relaxed) != pid)
        return;   /* nothing of this thread's there: no lock taken */
    char *copy = path ? strdup(path) : NULL;
    pthread_mutex_lock(&h->lock);
    if (path || atomic_load_explicit(&h->pid, memory_order_relaxed) == pid) {
        free(h->path);
        h->path = copy;
        copy = NULL;
        atomic_store_explicit(&h->pid, h->path ? pid : 0, memory_order_relaxed);
        if (h->path) {
            h->st = *st;
            h->when = now_ns();
        }
    }
    pthread_mutex_unlock(&h->lock);
    free(copy);
}

/* The attributes pid's lookup of path fetched, taken once. */
bool handoff_take(uint32_t pid, const char *path, struct stat *st)
{
    struct handoff *h = handoff_of(pid);
    if (atomic_load_explicit(&h->pid, memory_order_relaxed) != pid ||
        atomic_load_explicit(&handoff_off, memory_order_relaxed))
        return false;
    bool hit = false;
    pthread_mutex_lock(&h->lock);
    if (atomic_load_explicit(&h->pid, memory_order_relaxed) == pid && h->path &&
        strcmp(h->path, path) == 0 && now_ns() - h->when < HANDOFF_NS) {
        *st = h->st;
        hit = true;
    }
    free(h->path);
    h->path = NULL;
    atomic_store_explicit(&h->pid, 0, memory_order_relaxed);
    pthread_mutex_unlock(&h->lock);
    return hit;
}
