/* Token buckets: rates hold, rates change while running, and a thread
 * waiting for its tokens holds nothing that blocks others. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "ratelimit.h"
#include "tap.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct taker {
    struct ratelimit *rl;
    int count;
    uint64_t n;
};

static void *take_loop(void *arg)
{
    struct taker *t = arg;
    for (int i = 0; i < t->count; i++)
        ratelimit_take(t->rl, t->n);
    return NULL;
}

static double run_threads(struct ratelimit *rl, int threads, int count, uint64_t n)
{
    pthread_t tid[8];
    struct taker t = { rl, count, n };
    double t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&tid[i], NULL, take_loop, &t);
    for (int i = 0; i < threads; i++)
        pthread_join(tid[i], NULL);
    return now() - t0;
}

struct waiter {
    struct ratelimit *rl;
    atomic_int done;
};

static void *big_take(void *arg)
{
    struct waiter *w = arg;
    ratelimit_take(w->rl, 1000);     /* 1 s of tokens at 1000/s */
    atomic_store(&w->done, 1);
    return NULL;
}

int main(void)
{
    struct ratelimit rl;
    tap_ok(atomic_is_lock_free(&rl.next_ns) && atomic_is_lock_free(&rl.rate),
           "bucket state is lock-free atomics");

    ratelimit_init(&rl, 0, 0);
    double t = run_threads(&rl, 4, 10000, 1 << 20);
    tap_ok(t < 0.5, "unlimited bucket never waits (%.3f s for 40000 takes)", t);
    tap_is_int(atomic_load(&rl.taken), 40000ull << 20, "unlimited bucket still counts tokens");
    tap_is_int(ratelimit_take(NULL, 5), 0, "NULL bucket is unlimited");

    /* Lower bounds are the limits and hold exactly. Upper bounds only show
     * the behaviour (no over-throttling, a raised rate takes effect, no
     * blocking): they leave room for a loaded 2-core CI machine, since the
     * limiter's accuracy is measured by bench/stage, not here. */

    /* 4 threads x 100 ops at 1000 ops/s with no burst: 0.4 s. */
    ratelimit_init(&rl, 1000, 0);
    t = run_threads(&rl, 4, 100, 1);
    tap_ok(t > 0.38 && t < 0.8, "1000 ops/s over 400 ops takes 0.4 s (%.3f s)", t);

    /* Bytes: 8 x 1 MiB at 20 MiB/s = 0.4 s. */
    ratelimit_init(&rl, 20 << 20, 0);
    t = run_threads(&rl, 2, 4, 1 << 20);
    tap_ok(t > 0.38 && t < 0.8, "20 MiB/s over 8 MiB takes 0.4 s (%.3f s)", t);

    /* Burst: idle credit lets 100 ms of tokens through at once, no more. */
    ratelimit_init(&rl, 1000, 100);
    struct timespec idle = { 0, 200 * 1000 * 1000 };
    nanosleep(&idle, NULL);
    t = run_threads(&rl, 1, 100, 1);
    tap_ok(t < 0.08, "100 ms of burst passes at once after idling (%.3f s)", t);
    t = run_threads(&rl, 1, 100, 1);
    tap_ok(t > 0.09 && t < 0.3, "after the burst the rate holds again (%.3f s)", t);

    /* Changing the rate while threads run. */
    ratelimit_init(&rl, 500, 0);
    t = run_threads(&rl, 2, 50, 1);
    tap_ok(t > 0.18 && t < 0.8, "500 ops/s: 100 ops in 0.2 s (%.3f s)", t);
    ratelimit_set_rate(&rl, 2000);
    tap_is_int(ratelimit_rate(&rl), 2000, "rate reads back after a change");
    t = run_threads(&rl, 2, 200, 1);
    /* At the old 500 ops/s these 400 ops would take 0.8 s. */
    tap_ok(t > 0.18 && t < 0.6, "raised to 2000 ops/s: 400 ops in 0.2 s, not 0.8 s (%.3f s)", t);

    /* A thread sleeping on a 1 s reservation blocks neither a rate change
     * nor a take after the bucket is made unlimited. (Upper bounds on times
     * leave room for a loaded machine; lower bounds are the limits.) */
    ratelimit_init(&rl, 1000, 0);
    struct waiter w = { &rl, 0 };
    pthread_t tid;
    pthread_create(&tid, NULL, big_take, &w);
    struct timespec shortwait = { 0, 50 * 1000 * 1000 };
    nanosleep(&shortwait, NULL);
    double t0 = now();
    ratelimit_set_rate(&rl, 0);
    ratelimit_take(&rl, 10);
    t = now() - t0;
    tap_ok(t < 0.5 && !atomic_load(&w.done),
           "while one thread waits 1 s, others change the rate and take at once (%.4f s)", t);
    pthread_join(tid, NULL);
    tap_ok(atomic_load(&w.done), "the waiting thread got its tokens");
    return tap_done();
}
