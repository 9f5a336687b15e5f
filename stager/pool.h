/* pool: threads that share work by stealing.
 *
 * Each thread owns a deque: it pushes and pops its own tasks at the back
 * (depth first, so a tree walk keeps few directories open) and, when empty,
 * steals from the front of another thread's deque (the oldest, biggest
 * pieces of work). The pool is done when no task is queued or running; a
 * running task may push more. Deques have a mutex each, held only for the
 * push or pop itself. */
#ifndef ADAFS_STAGE_POOL_H
#define ADAFS_STAGE_POOL_H

#include <stddef.h>

struct pool;
struct pool_thread;

typedef void (*pool_fn)(struct pool_thread *self, void *arg);

/* scratch_size bytes of per-thread scratch (e.g. a copy buffer). */
struct pool *pool_create(unsigned threads, size_t scratch_size);
/* From a task (self != NULL): at the back of its own deque, run next by
 * its thread. From outside (self == NULL: before pool_run, or a
 * distributed run's items as they come): at the front of a deque, round
 * robin, taken first by a thread that steals and last by its owner, so
 * a thread's own depth-first walk (a deep chain of directories) is not
 * held behind work handed in meanwhile. Returns -ENOMEM. */
int pool_push(struct pool *p, struct pool_thread *self, pool_fn fn, void *arg);
/* Takes back tasks of function fn that no thread has started, as a
 * thief of another process would: from the fronts of the deques (the
 * oldest, in a tree walk the biggest pieces of work), at most half of
 * those queued (rounded up) and at most max. Their args go to out[];
 * returns how many (a distributed run gives them to an idle worker). */
unsigned pool_take_back(struct pool *p, pool_fn fn, void **out, unsigned max);
/* A hold keeps pool_run from returning while no task is queued: for a
 * thread outside that will push more (a distributed run's items). */
void pool_hold(struct pool *p);
void pool_release(struct pool *p);
/* Runs until every task is done and every hold released. Returns 0 or
 * -errno if threads failed. */
int pool_run(struct pool *p);
void pool_destroy(struct pool *p);

void *pool_scratch(struct pool_thread *self);
unsigned pool_thread_index(const struct pool_thread *self);
/* Threads' time spent waiting for a task, summed (s): a distributed
 * worker starved of items shows here. */
double pool_idle_seconds(const struct pool *p);
/* Of that, the time before each thread's first task: a run's start (a
 * distributed worker waiting for its first items), told from the waits
 * between items. */
double pool_idle_start_seconds(const struct pool *p);
/* Tasks stolen so far, for tests that check stealing happens. */
unsigned long pool_steals(const struct pool *p);

#endif
