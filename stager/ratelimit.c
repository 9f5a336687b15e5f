#include "ratelimit.h"

#include <errno.h>
#include <time.h>

#include "qos_client.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ratelimit_init(struct ratelimit *rl, uint64_t rate, uint64_t burst_ms)
{
    atomic_store(&rl->rate, rate);
    atomic_store(&rl->next_ns, now_ns());
    atomic_store(&rl->burst_ms, burst_ms);
    atomic_store(&rl->taken, 0);
    rl->qos_class = -1;
}

void ratelimit_set_rate(struct ratelimit *rl, uint64_t rate)
{
    atomic_store(&rl->rate, rate);
}

uint64_t ratelimit_rate(const struct ratelimit *rl)
{
    return atomic_load((_Atomic uint64_t *)&rl->rate);
}

int64_t ratelimit_take(struct ratelimit *rl, uint64_t n)
{
    return ratelimit_take_as(rl, n, rl ? rl->qos_class : -1);
}

int64_t ratelimit_take_as(struct ratelimit *rl, uint64_t n, int cls)
{
    if (!rl)
        return 0;
    if (rl->qos_class >= 0 && cls >= 0 && n)
        qos_charge(cls, n);
    atomic_fetch_add_explicit(&rl->taken, n, memory_order_relaxed);
    uint64_t rate = atomic_load_explicit(&rl->rate, memory_order_relaxed);
    if (rate == 0 || n == 0)
        return 0;

    /* cost in ns of n tokens; long double keeps 1-byte-per-second exact and
     * a multi-GiB request at GB/s from overflowing. */
    int64_t cost = (int64_t)((long double)n * 1e9L / (long double)rate);
    int64_t burst = (int64_t)atomic_load_explicit(&rl->burst_ms, memory_order_relaxed) * 1000000;
    int64_t now = now_ns();
    int64_t old = atomic_load_explicit(&rl->next_ns, memory_order_relaxed);
    int64_t start;
    do {
        start = old < now ? now : old;      /* idle time is not saved up... */
    } while (!atomic_compare_exchange_weak_explicit(&rl->next_ns, &old, start + cost,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));

    /* ...beyond the burst: tokens are due once the bucket's debt is at most
     * `burst` ahead of now. The reservation is ours; sleep lock-free. */
    int64_t due = start + cost - burst;
    int64_t wait = due - now;
    if (wait <= 0)
        return 0;
    struct timespec ts = { .tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
    return wait;
}
