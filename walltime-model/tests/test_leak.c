/* The replay and the model never use a job that had not finished (submit +
 * wait + run) by the time the predicted job was submitted.
 *
 * A synthetic trace ends with a probe: user 99 submits B, then C. Varying
 * B's run time while B is still running at C's submit must not change any
 * prediction for C; the same variation with B finished must (else the test
 * would pass with the feature removed). */
#include "tap.h"
#include "walltime.h"
#include "lib/replay.h"
#include "synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BASE 400
#define T0 100000

static char err[256];

/* BASE background jobs, then A, B (run, wait given) and C of user 99. */
static void build(struct walltime_trace *t, int64_t b_run, int64_t b_wait)
{
    unsigned seed = 7;
    t->n = BASE + 3;
    t->malformed = 0;
    t->max_procs = -1;
    t->jobs = calloc(t->n, sizeof(*t->jobs));
    for (int i = 0; i < BASE; i++)
        t->jobs[i] = synth_job(i + 1, i * 200, 1 + i % 8, &seed);
    struct walltime_job *a = &t->jobs[BASE], *b = a + 1, *c = a + 2;
    walltime_job_init(a);
    a->job_id = 9001;
    a->uid = 99;
    a->procs = 4;
    a->req_time = 1000;
    a->submit_time = T0;
    a->wait_time = 0;
    a->run_time = 100;
    *b = *a;
    b->job_id = 9002;
    b->submit_time = T0 + 200;
    b->wait_time = b_wait;
    b->run_time = b_run;
    *c = *a;
    c->job_id = 9003;
    c->submit_time = T0 + 300;
    c->run_time = 500;
}

static void predict_c(int64_t b_run, int64_t b_wait, double out[P_COUNT])
{
    struct walltime_trace t;
    struct walltime_params p;
    struct replay_result r;
    walltime_params_default(&p);
    p.retrain_every = 25;          /* retrain often: a leak would show up */
    build(&t, b_run, b_wait);
    if (replay_run(&t, &p, &r, err, sizeof(err)) < 0) {
        tap_ok(0, "replay failed: %s", err);
        memset(out, 0, sizeof(double) * P_COUNT);
    } else {
        for (int k = 0; k < P_COUNT; k++)
            out[k] = r.pred[k][t.n - 1];
        replay_free(&r);
    }
    free(t.jobs);
}

static int same(const double *x, const double *y)
{
    return memcmp(x, y, sizeof(double) * P_COUNT) == 0;
}

static void replay_is_leak_free(void)
{
    double running_short[P_COUNT], running_long[P_COUNT], late_start[P_COUNT];
    double done_short[P_COUNT], done_at_submit[P_COUNT];
    predict_c(101, 0, running_short);  /* ends T0+301: one second too late */
    predict_c(900, 0, running_long);
    predict_c(50, 100, late_start);    /* short, but waited: ends T0+350 */
    predict_c(50, 0, done_short);      /* ends T0+250: finished */
    predict_c(100, 0, done_at_submit); /* ends exactly at C's submit */

    tap_ok(same(running_short, running_long),
           "replay: run time of a job still running at submit changes no prediction");
    tap_ok(same(late_start, running_long),
           "replay: a short job that waited in the queue and ends after submit is not used");
    for (int k = 0; k < P_COUNT; k++)
        tap_ok(!isnan(running_long[k]), "replay: %s predicts the probe job",
               replay_predictor_names[k]);
    tap_ok(done_short[P_LAST2] != running_long[P_LAST2] &&
           done_short[P_MODEL] != running_long[P_MODEL],
           "replay: the same job finished before submit does change last2 and the model");
    tap_ok(done_at_submit[P_LAST2] == 100,
           "replay: a job ending exactly at submit time counts as finished");
}

static void model_is_leak_free(void)
{
    unsigned seed = 3;
    struct walltime_model *with = walltime_model_new(NULL), *without = walltime_model_new(NULL);
    for (int i = 0; i < 300; i++) {
        struct walltime_job j = synth_job(i, i * 100, 1 + i % 5, &seed);
        j.wait_time = 0;
        walltime_observe_finished(with, &j, err, sizeof(err));
        walltime_observe_finished(without, &j, err, sizeof(err));
    }
    walltime_train(with, err, sizeof(err));
    walltime_train(without, err, sizeof(err));
    /* The probe's user has one long job in the past... */
    struct walltime_job probe;
    walltime_job_init(&probe);
    probe.job_id = 1000;
    probe.uid = 42;
    probe.procs = 8;
    probe.req_time = 3600;
    probe.submit_time = 40000;
    struct walltime_job old = probe;
    old.job_id = 997;
    old.submit_time = 1000;
    old.wait_time = 0;
    old.run_time = 1000;
    walltime_observe_finished(with, &old, err, sizeof(err));
    walltime_observe_finished(without, &old, err, sizeof(err));
    /* ...and a short one submitted just before the probe. */
    struct walltime_job late = probe;
    late.job_id = 999;
    late.submit_time = probe.submit_time - 10;
    late.wait_time = 0;
    late.run_time = 20;
    tap_is_int(walltime_observe_finished(with, &late, err, sizeof(err)), 0,
               "model: a job ending after the probe's submit is observed");
    struct walltime_prediction pw, po;
    walltime_predict(with, &probe, &pw, err, sizeof(err));
    walltime_predict(without, &probe, &po, err, sizeof(err));
    tap_ok(pw.median_s == po.median_s && pw.conservative_s == po.conservative_s,
           "model: predictions as of submit ignore jobs that ended later");
    late.run_time = 5;                     /* now ends before the probe's submit */
    late.job_id = 998;
    walltime_observe_finished(without, &late, err, sizeof(err));
    walltime_predict(without, &probe, &po, err, sizeof(err));
    tap_ok(pw.median_s != po.median_s, "model: the same job ending before submit is used");
    walltime_model_free(with);
    walltime_model_free(without);
}

int main(void)
{
    replay_is_leak_free();
    model_is_leak_free();
    return tap_done();
}
