/* tbfbench: AdapTBF's allocator (agent/agentd/adaptbf.h) on simulated
 * jobs, and its cost per job (bench/fair/run.sh prints both).
 *
 *   tbfbench
 *
 * Scenarios with a capacity of 1000 per 100 ms period, demands seen one
 * period late (as the agent counts them): two saturating jobs of weights
 * 3 and 1; a bursty weight-3 job (10 periods idle, 10 busy) against a
 * continuous weight-1 one. Then the time of one period for 1 to 10,000
 * jobs, per job. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "adaptbf.h"

#define C 1000.0

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void)
{
    struct adaptbf_job j[2] = { { .id = 1, .weight = 3 }, { .id = 2, .weight = 1 } };
    double got[2] = { 0, 0 };
    for (int p = 0; p < 1000; p++) {
        j[0].want = j[1].want = C;
        adaptbf_period(C, j, 2);
        got[0] += j[0].alloc;
        got[1] += j[1].alloc;
    }
    double norm[2] = { got[0] / 3, got[1] };
    printf("saturating 3:1: ratio %.4f, Jain %.4f\n", got[0] / got[1], adaptbf_jain(norm, 2));

    struct adaptbf_job b[2] = { { .id = 1, .weight = 3 }, { .id = 2, .weight = 1 } };
    double seen[2] = { 0, C }, worst_gap = 1, worst_burst = 1, worst_sum = 0;
    int gap_periods[2] = { 0, 0 }, burst_periods[2] = { 0, 0 };
    for (int p = 0; p < 1000; p++) {
        int busy = (p / 10) % 2 == 1, phase = p % 10;
        double demand[2] = { busy ? C : 0, C };
        double served[2];
        adaptbf_simulate(C, b, 2, demand, seen, served);
        if (!busy && phase >= 2 && served[1] / C < worst_gap)
            worst_gap = served[1] / C;
        if (busy && phase >= 2 && served[0] / (0.75 * C) < worst_burst)
            worst_burst = served[0] / (0.75 * C);
        if (!busy && served[1] >= 0.9 * C && phase < 2)
            gap_periods[phase]++;
        if (busy && served[0] >= 0.75 * C - 1e-6 && phase < 2)
            burst_periods[phase]++;
        double sum = fabs(b[0].balance + b[1].balance);
        if (sum > worst_sum)
            worst_sum = sum;
    }
    printf("bursty 3 vs continuous 1: continuous job's least part of the node in gaps (from "
           "the 2nd period) %.4f; bursty job's least part of its share in bursts (from the 2nd "
           "period) %.4f; gaps at >= 90%% in their 1st/2nd period %d/%d of 50; bursts at "
           "share in 1st/2nd %d/%d of 50; largest |sum of balances| %.3g\n",
           worst_gap, worst_burst, gap_periods[0], gap_periods[1], burst_periods[0],
           burst_periods[1], worst_sum);

    static const int sizes[] = { 1, 10, 100, 1000, 10000 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int n = sizes[s];
        struct adaptbf_job *jobs = calloc((size_t)n, sizeof(*jobs));
        srand(1);
        for (int i = 0; i < n; i++)
            jobs[i].weight = 1 + rand() % 16;
        int rounds = 2000000 / n + 10;
        double t = 0;
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < n; i++)
                jobs[i].want = rand() % 3 == 0 ? 0 : (double)(rand() % (int)(3 * C / n + 2));
            double t0 = now_us();
            adaptbf_period(C, jobs, (size_t)n);
            t += now_us() - t0;
        }
        printf("jobs %d: %.3f us per period, %.4f us per job\n", n, t / rounds,
               t / rounds / n);
        free(jobs);
    }
    return 0;
}
