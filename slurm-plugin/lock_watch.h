/* lock_watch: how long the plugin holds a lock other threads wait for,
 * measured from several threads: slurmctld's job lock, as the shim holds
 * it in each bb_p_* and in its own sections under it (bbstat shows the
 * figures, the benchmarks read them). The driver keeps its own lock's
 * figures under that lock (driver_lock_note). */
#ifndef ADAFS_LOCK_WATCH_H
#define ADAFS_LOCK_WATCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver.h"

struct lock_watch {
    pthread_mutex_t lock;        /* the figures' own, taken for a moment */
    struct bb_lock_stats stats;
};
#define LOCK_WATCH_INIT { PTHREAD_MUTEX_INITIALIZER, { 0 } }

/* CLOCK_MONOTONIC in microseconds: when a hold began, and ended. */
uint64_t lock_watch_now_us(void);
/* The calling thread's CPU time in microseconds: a hold's CPU against its
 * wall time tells work under the lock from a thread that waited (for a
 * CPU on a busy host, for I/O, for another lock) while holding it. */
uint64_t lock_watch_cpu_us(void);
/* Counts a hold of us microseconds in where (a string that outlives w);
 * true when it is the longest yet, for the caller to log. */
bool lock_watch_note(struct lock_watch *w, const char *where, uint64_t us);
/* The figures so far, copied. */
struct bb_lock_stats lock_watch_stats(struct lock_watch *w);

#endif
