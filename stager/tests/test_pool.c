/* The pool: every task runs once, tasks pushed by tasks run too, idle
 * threads steal, a hold keeps it running for work pushed from outside
 * later (a distributed run's items), and tasks not started can be taken
 * back (for an idle worker elsewhere). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "pool.h"
#include "stage.h"
#include "tap.h"

static atomic_int ran;
static atomic_int per_thread[4];

static void leaf(struct pool_thread *self, void *arg)
{
    struct timespec ts = { 0, 200 * 1000 };
    nanosleep(&ts, NULL);
    atomic_fetch_add(&ran, 1);
    atomic_fetch_add(&per_thread[pool_thread_index(self)], 1);
}

static void spawner(struct pool_thread *self, void *arg)
{
    struct pool *p = arg;
    for (int i = 0; i < 400; i++)
        pool_push(p, self, leaf, NULL);   /* all on this thread's own deque */
}

/* Pushes a task now and then from outside, then releases its hold. */
static void *feeder(void *arg)
{
    struct pool *p = arg;
    for (int i = 0; i < 3; i++) {
        struct timespec ts = { 0, 30 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        pool_push(p, NULL, leaf, NULL);
    }
    pool_release(p);
    return NULL;
}

static void other(struct pool_thread *self, void *arg)
{
    (void)self;
    (void)arg;
    atomic_fetch_add(&ran, 100);
}

int main(void)
{
    struct pool *p = pool_create(4, 64);
    tap_ok(p != NULL, "pool created");
    tap_is_int(pool_push(p, NULL, spawner, p), 0, "task queued from outside");
    tap_is_int(pool_run(p), 0, "pool ran");
    tap_is_int(atomic_load(&ran), 400, "all 400 tasks pushed by a task ran once");
    tap_ok(pool_steals(p) > 0, "idle threads stole work (%lu steals)", pool_steals(p));
    int busy = 0;
    for (int i = 0; i < 4; i++)
        busy += atomic_load(&per_thread[i]) > 0;
    tap_is_int(busy, 4, "every thread ran some of one thread's tasks");
    pool_destroy(p);

    p = pool_create(2, 0);
    tap_is_int(pool_run(p), 0, "an empty pool finishes at once");
    pool_destroy(p);

    /* A hold: the pool waits, idle, for what a thread outside pushes. */
    atomic_store(&ran, 0);
    p = pool_create(2, 0);
    pool_hold(p);
    pthread_t t;
    pthread_create(&t, NULL, feeder, p);
    tap_is_int(pool_run(p), 0, "a held pool ran");
    pthread_join(t, NULL);
    tap_is_int(atomic_load(&ran), 3, "it returned only after the feeder's 3 late tasks and release");
    pool_destroy(p);

    /* Taking back: half of the queued tasks of one function, oldest
     * first, never another function's; the rest still run. */
    atomic_store(&ran, 0);
    p = pool_create(2, 0);
    static int tag[7];
    for (int i = 0; i < 7; i++)
        pool_push(p, NULL, leaf, &tag[i]);
    pool_push(p, NULL, other, NULL);
    void *back[8];
    unsigned n = pool_take_back(p, leaf, back, 8);
    tap_is_int((int)n, 4, "half of 7 queued tasks (rounded up) taken back");
    int mine = 1;
    for (unsigned i = 0; i < n; i++)
        mine &= back[i] >= (void *)&tag[0] && back[i] <= (void *)&tag[6];
    tap_ok(mine, "each is one of the tasks of that function");
    tap_is_int((int)pool_take_back(p, leaf, back, 1), 1, "at most max are taken");
    tap_is_int(pool_run(p), 0, "the pool ran the rest");
    tap_is_int(atomic_load(&ran), 102, "the 2 left and the other function's task ran, once");
    pool_destroy(p);
    return tap_done();
}
