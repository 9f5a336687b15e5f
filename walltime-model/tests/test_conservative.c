/* The conservative estimate is chosen per job from the user's runs of the
 * same request and size: steady runs give a tight estimate, runs that often
 * hit the limit give the request. */
#include "tap.h"
#include "walltime.h"
#include "synth.h"

#include <string.h>

#define REQ 36000

static char err[256];

/* 30 finished jobs of `uid`, one an hour: every other one killed at its
 * limit if `mixed`, else all ending after a tenth of the request. */
static void observe_user(struct walltime_model *m, int64_t uid, int mixed, int64_t t0)
{
    for (int i = 0; i < 30; i++) {
        struct walltime_job j;
        walltime_job_init(&j);
        j.job_id = uid * 1000 + i;
        j.uid = uid;
        j.procs = 16;
        j.req_time = REQ;
        j.submit_time = t0 + i * 40000;
        j.wait_time = 0;
        j.run_time = mixed && i % 2 ? REQ : REQ / 10;
        j.status = 1;
        walltime_observe_finished(m, &j, err, sizeof(err));
    }
}

int main(void)
{
    unsigned seed = 11;
    struct walltime_model *m = walltime_model_new(NULL);
    for (int i = 0; i < 300; i++) {
        struct walltime_job j = synth_job(i, i * 100, 1 + i % 5, &seed);
        walltime_observe_finished(m, &j, err, sizeof(err));
    }
    observe_user(m, 70, 0, 100000);
    observe_user(m, 71, 1, 100000);
    tap_is_int(walltime_train(m, err, sizeof(err)), 0, "model trains");

    struct walltime_job probe;
    walltime_job_init(&probe);
    probe.job_id = 1;
    probe.uid = 70;
    probe.procs = 16;
    probe.req_time = REQ;
    probe.submit_time = 100000 + 31 * 40000;
    struct walltime_prediction steady, mixed;
    walltime_predict(m, &probe, &steady, err, sizeof(err));
    probe.uid = 71;
    walltime_predict(m, &probe, &mixed, err, sizeof(err));
    tap_ok(steady.conservative_s <= 1.5 * REQ / 10,
           "steady runs of a tenth of the request: conservative %.0f s <= 1.5 x %d s",
           steady.conservative_s, REQ / 10);
    tap_ok(steady.conservative_s >= steady.median_s, "conservative >= median (%.0f s)",
           steady.median_s);
    tap_ok(mixed.conservative_s == REQ,
           "half the runs killed at the limit: conservative %.0f s is the request",
           mixed.conservative_s);
    walltime_model_free(m);
    return tap_done();
}
