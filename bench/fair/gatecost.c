/* gatecost: what adafsd's fair-share gate costs a request when one entity
 * alone uses the server: fair_enter and fair_leave without contention,
 * with the two clock readings dispatch adds, against the clock readings
 * alone (bench/fair/run.sh). */
#include <stdio.h>
#include <time.h>

#include "fairshare.h"

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
    enum { N = 2000000 };
    struct fair *f = fair_new(FAIR_JOB, 8, 1);
    struct fair_who who = { .job = 1, .uid = 1000, .nodes = 1 };
    double best_gate = 1e9, best_clock = 1e9;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ns(), sink = 0;
        for (int i = 0; i < N; i++) {
            struct fair_pass p;
            fair_enter(f, &who, &p);
            double a = now_ns();
            fair_leave(f, &p, (uint64_t)(now_ns() - a) + 1);
        }
        double t1 = now_ns();
        for (int i = 0; i < N; i++) {
            double a = now_ns();
            sink += now_ns() - a;
        }
        double t2 = now_ns();
        if ((t1 - t0) / N < best_gate)
            best_gate = (t1 - t0) / N;
        if ((t2 - t1) / N < best_clock)
            best_clock = (t2 - t1) / N;
        if (sink < 0)
            return 1;
    }
    printf("gate, one entity: %.1f ns per request (clock readings alone %.1f ns)\n", best_gate,
           best_clock);
    fair_free(f);
    return 0;
}
