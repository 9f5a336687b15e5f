/* lock_watch.c: holds of a lock counted from several threads
 * (lock_watch.h). */
#include "lock_watch.h"

#include <time.h>

uint64_t lock_watch_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t lock_watch_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

bool lock_watch_note(struct lock_watch *w, const char *where, uint64_t us)
{
    pthread_mutex_lock(&w->lock);
    uint64_t before = w->stats.max_us;
    driver_lock_note(&w->stats, where, us);
    pthread_mutex_unlock(&w->lock);
    return us > before;
}

struct bb_lock_stats lock_watch_stats(struct lock_watch *w)
{
    pthread_mutex_lock(&w->lock);
    struct bb_lock_stats copy = w->stats;
    pthread_mutex_unlock(&w->lock);
    return copy;
}
