/* bench_walltime: training time and per-job prediction latency of the
 * walltime model on a trace (default: the CEA-Curie sample, 29,998 jobs).
 *
 *   bench_walltime [TRACE.swf]
 *
 * Training = observing every finished job (features as of its submit) plus
 * fitting both ensembles once. Latency is measured per walltime_predict()
 * call over every job of the trace, then per walltime_submit() call (the
 * prediction plus the record of the job in flight) with no job finishing,
 * so that the heavy users' jobs in flight - which every prediction of
 * theirs scans - pile up to the limit: the worst case. */
#include "walltime.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "../shared/traces/CEA-Curie-2011-sample.swf";
    char err[512];
    struct walltime_trace t;
    if (walltime_trace_read(path, WALLTIME_SWF, stderr, &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench_walltime: %s\n", err);
        return 1;
    }
    struct walltime_model *m = walltime_model_new(NULL);
    double t0 = now_s();
    /* Submit order is close enough to end order for timing purposes. */
    for (size_t i = 0; i < t.n; i++)
        if (walltime_observe_finished(m, &t.jobs[i], err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_walltime: %s\n", err);
            return 1;
        }
    double t1 = now_s();
    if (walltime_train(m, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench_walltime: %s\n", err);
        return 1;
    }
    double t2 = now_s();
    printf("%s: %zu jobs\n", path, t.n);
    printf("train: observe %.3f s + fit %.3f s = %.3f s (target < 60 s)\n",
           t1 - t0, t2 - t1, t2 - t0);

    double *lat = malloc(t.n * sizeof(double)), sink = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < t.n; i++) {
            struct walltime_prediction p;
            struct walltime_job j = t.jobs[i];
            j.job_id += 100000000;          /* not the jobs observed above */
            double a = now_s();
            if (pass == 0)
                walltime_predict(m, &j, &p, err, sizeof(err));
            else
                walltime_submit(m, &j, &p, err, sizeof(err));
            lat[i] = now_s() - a;
            sink += p.median_s;
        }
        qsort(lat, t.n, sizeof(double), cmp_double);
        double sum = 0;
        for (size_t i = 0; i < t.n; i++)
            sum += lat[i];
        printf("%s: mean %.2f us, p50 %.2f us, p99 %.2f us, p99.9 %.2f us, max %.2f us over "
               "%zu jobs (target < 10 us median)\n", pass ? "submit" : "predict",
               1e6 * sum / (double)t.n, 1e6 * lat[t.n / 2], 1e6 * lat[t.n * 99 / 100],
               1e6 * lat[t.n * 999 / 1000], 1e6 * lat[t.n - 1], t.n);
    }
    printf("jobs in flight at the end: %ld\n", walltime_model_pending(m));
    free(lat);
    walltime_model_free(m);
    walltime_trace_free(&t);
    return sink < 0;
}
