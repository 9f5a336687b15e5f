/* predict: the model predictions use and the copy trained off their lock
 * see every job's life (submit, start, end) in the same order, so the model
 * swapped in is the one a single model trained at that point would be,
 * calibration included; a retraining never makes a prediction (a submit)
 * wait, and the model trained is the one predictions then read. */
#include "predict.h"
#include "tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static struct walltime_job job_of(int i, bool finished)
{
    struct walltime_job j;
    walltime_job_init(&j);
    j.job_id = i + 1;
    j.uid = 1000 + i % 7;
    j.gid = 100;
    j.req_time = 3600 * (1 + i % 4);
    j.procs = 4 * (1 + i % 3);
    j.nodes = 1 + i % 3;
    j.submit_time = 1000000 + (int64_t)i * 60;
    j.exe = walltime_key(i % 2 ? "sim" : "post");
    if (finished) {
        j.wait_time = 10;
        j.run_time = j.req_time / (2 + i % 5);
        j.status = 1;
    }
    return j;
}

static volatile int training;
static int64_t train_us;

static void *train(void *arg)
{
    (void)arg;
    int64_t t = now_us();
    predict_maintain(false);
    train_us = now_us() - t;
    __atomic_store_n(&training, 0, __ATOMIC_RELEASE);
    return NULL;
}

#define MISS 0.05

/* Job i's life, told to the plugin's model and to a reference model. */
static void live(int i, struct walltime_model *ref)
{
    char err[256];
    struct walltime_job sub = job_of(i, false), fin = job_of(i, true);
    struct walltime_prediction p, q;
    predict_job(&sub, &p, err, sizeof(err));
    walltime_submit(ref, &sub, &q, err, sizeof(err));
    if (i % 11 == 0) {
        predict_cancelled(&sub);
        walltime_observe_cancelled(ref, &sub);
        return;
    }
    predict_started(&fin);
    walltime_observe_started(ref, &fin, err, sizeof(err));
    if (i % 13 == 0)
        return;        /* still running */
    predict_observe(&fin);
    walltime_observe_finished(ref, &fin, err, sizeof(err));
}

static bool same(const struct walltime_prediction *a, const struct walltime_prediction *b)
{
    return a->median_s == b->median_s && a->conservative_s == b->conservative_s &&
           a->group == b->group && a->miss_probability == b->miss_probability;
}

int main(void)
{
    char dir[] = "/tmp/test_predict.XXXXXX", path[256], err[512] = "";
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/model", dir);
    tap_ok(predict_open(path, MISS, err, sizeof(err)) == 0,
           "an untrained model where none is saved (%s)", err);
    tap_ok(predict_enabled(), "predictions are on");

    /* The same lives told to one model trained at the same point. */
    struct walltime_params params;
    walltime_params_default(&params);
    struct walltime_model *ref = walltime_model_new(&params);
    walltime_model_set_target_miss(ref, PREDICT_AIM * MISS);
    for (int i = 0; i < 1500; i++) {
        live(i, ref);
        if (i == 299)
            predict_maintain(false);    /* the learner catches up */
    }
    predict_maintain(false);
    tap_is_int(predict_swaps(), 1, "enough finished jobs: the trained model was swapped in");
    tap_ok(walltime_train(ref, err, sizeof(err)) == 0, "the reference trains");
    for (int i = 1500; i < 1600; i++)
        live(i, ref);
    struct walltime_job probe = job_of(7000, false);
    probe.submit_time = 1000000 + 1600 * 60;
    struct walltime_prediction got, want;
    bool both = predict_job(&probe, &got, err, sizeof(err)) == 0 &&
                walltime_submit(ref, &probe, &want, err, sizeof(err)) == 0;
    tap_ok(both && same(&got, &want),
           "after the swap predictions are the single model's, calibration included (median %.0f s, "
           "conservative %.0f s, reference %.0f s)", got.median_s, got.conservative_s, want.conservative_s);
    predict_maintain(true);
    struct walltime_model *saved = walltime_model_load(path, err, sizeof(err));
    struct walltime_job probe2 = job_of(7001, false);
    probe2.submit_time = probe.submit_time;
    both = saved && walltime_predict(saved, &probe2, &got, err, sizeof(err)) == 0 &&
           walltime_predict(ref, &probe2, &want, err, sizeof(err)) == 0;
    tap_ok(both && same(&got, &want), "the saved file is the single model too (conservative %.0f s, "
           "reference %.0f s)", got.conservative_s, want.conservative_s);
    tap_ok(saved && walltime_model_last_end(saved) == walltime_model_last_end(ref),
           "the saved file knows the newest job learnt from");
    walltime_model_free(saved);
    walltime_model_free(ref);
    tap_is_int(predict_swaps(), 1, "a forced save swaps nothing");

    /* Enough finished jobs for another retraining (RETRAIN_EVERY). */
    for (int i = 2000; i < 3000; i++) {
        struct walltime_job j = job_of(i, true);
        predict_observe(&j);
    }
    struct walltime_job next = job_of(5000, false);
    next.submit_time = 1000000 + 4000 * 60;
    struct walltime_prediction before, p;
    tap_ok(predict_job(&next, &before, err, sizeof(err)) == 0, "a prediction before training");

    /* Submits go on while the model trains in another thread. */
    pthread_t t;
    __atomic_store_n(&training, 1, __ATOMIC_RELEASE);
    pthread_create(&t, NULL, train, NULL);
    int64_t longest = 0;
    long predictions = 0;
    while (__atomic_load_n(&training, __ATOMIC_ACQUIRE)) {
        int64_t s = now_us();
        predict_job(&next, &p, err, sizeof(err));
        int64_t took = now_us() - s;
        if (took > longest)
            longest = took;
        predictions++;
        usleep(100);
    }
    pthread_join(t, NULL);
    tap_is_int(predict_swaps(), 2, "the trained model was swapped in");
    /* Had a prediction waited for the training, at most one would have
     * ended while it ran. The longest is shown, not bounded: on a busy
     * machine it is the scheduler's. */
    tap_ok(predictions > 10, "%ld predictions ended during a %lld us training (the longest %lld us)",
           predictions, (long long)train_us, (long long)longest);

    /* What predictions read now is the model trained (and saved). */
    tap_ok(access(path, F_OK) == 0, "the trained model was saved");
    saved = walltime_model_load(path, err, sizeof(err));
    tap_ok(saved && walltime_predict(saved, &next, &want, err, sizeof(err)) == 0,
           "the saved model loads (%s)", err);
    tap_ok(predict_job(&next, &p, err, sizeof(err)) == 0 && p.median_s == want.median_s &&
               p.conservative_s == want.conservative_s,
           "predictions come from the trained model (%.0f s, saved %.0f s, untrained %.0f s)",
           p.median_s, want.median_s, before.median_s);
    walltime_model_free(saved);

    /* Learning goes on in the copy; a forced save does not swap. */
    for (int i = 3000; i < 3010; i++) {
        struct walltime_job j = job_of(i, true);
        predict_observe(&j);
    }
    predict_maintain(true);
    tap_is_int(predict_swaps(), 2, "a save without a training swaps nothing");
    saved = walltime_model_load(path, err, sizeof(err));
    long learnt = saved ? walltime_model_observed(saved) : -1L;
    tap_ok(learnt > 1000, "the saved copy learnt the jobs (%ld)",
           learnt);
    walltime_model_free(saved);

    predict_close();
    tap_ok(!predict_enabled(), "closed");
    unlink(path);
    rmdir(dir);
    return tap_done();
}
