/* tbfloop: the agent's AdapTBF loop (agent/agentd/tbf_loop.h) driving
 * real servers, for bench/fair/run.sh.
 *
 *   tbfloop BYTES_PER_SECOND SECONDS JOB:WEIGHT:DIR...
 *
 * Each DIR holds the rates file of one running adafsd (its
 * --bandwidth-file DIR/rates). Runs a period every 100 ms for SECONDS and
 * prints one line per period and job: "P JOB MOVED HELD ALLOC LENT
 * BALANCE" (bytes), then "cost US CPU_US" (the mean time of one period
 * per job, elapsed and on the CPU: reading the usage files, dividing,
 * writing the rates). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tbf_loop.h"

static double now_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: tbfloop BYTES_PER_SECOND SECONDS JOB:WEIGHT:DIR...\n");
        return 2;
    }
    struct tbf_loop *t = tbf_loop_new(atof(argv[1]));
    if (!t) {
        fprintf(stderr, "tbfloop: '%s' is not a bandwidth\n", argv[1]);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        uint64_t job;
        double weight;
        int at = 0;
        if (sscanf(argv[i], "%" SCNu64 ":%lf:%n", &job, &weight, &at) != 2 || !at ||
            tbf_loop_add(t, job, weight, argv[i] + at) < 0) {
            fprintf(stderr, "tbfloop: '%s' is not JOB:WEIGHT:DIR of a directory\n", argv[i]);
            return 2;
        }
    }
    int periods = (int)(atof(argv[2]) * 10);
    struct tbf_loop_job out[64];
    double spent = 0, cpu = 0, jobs = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int p = 0; p < periods; p++) {
        next.tv_nsec += TBF_PERIOD_MS * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        double t0 = now_us(CLOCK_MONOTONIC), c0 = now_us(CLOCK_THREAD_CPUTIME_ID);
        size_t n = tbf_loop_period(t, out, 64);
        spent += now_us(CLOCK_MONOTONIC) - t0;
        cpu += now_us(CLOCK_THREAD_CPUTIME_ID) - c0;
        jobs += (double)n;
        for (size_t i = 0; i < n && i < 64; i++)
            printf("%d %" PRIu64 " %.0f %d %.0f %.0f %.0f\n", p, out[i].job, out[i].moved,
                   out[i].held, out[i].alloc, out[i].lent, out[i].balance);
    }
    printf("cost %.2f %.2f\n", jobs > 0 ? spent / jobs : 0, jobs > 0 ? cpu / jobs : 0);
    tbf_loop_free(t);
    return 0;
}
