#include "predict.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define REMEMBERED 4096          /* predictions kept for bbstat */
#define RETRAIN_EVERY 500        /* new finished jobs between trainings */
#define CATCH_UP_LOCKED 8        /* events replayed under the lock at a swap */
#define CATCH_UP_ROUNDS 8        /* ... unless they keep coming faster */

struct remembered {
    uint32_t job_id;
    struct walltime_prediction p;
};

/* What happened to a job, in the order `model` saw it. */
enum event_kind { EV_SUBMIT, EV_STARTED, EV_FINISHED, EV_CANCELLED };
struct event {
    enum event_kind kind;
    struct walltime_job job;
};

/* Two copies of the model. Submits and the jobs' events change `model`
 * under the write lock (a few us each) and are logged in that order; the
 * walltime thread replays the log onto `learner`, which only it touches
 * (learn_lock), and trains the learner, which takes seconds, under no lock
 * a submit waits for. The trained learner, caught up with the log under
 * the write lock, becomes the model; a copy read back from its saved file,
 * caught up the same way, is the next learner. Both copies thus see every
 * job's life in the same order, calibration included. Jobs submitted while
 * a training runs are recorded in the new model with the estimates it
 * would have given them, not the old one's (a few jobs per training). */
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct walltime_model *model;
static struct walltime_model *learner;
static char *model_path;
static double target_miss;
static struct remembered table[REMEMBERED];
static long observed_since_training;
static long swaps;
/* The log (under `lock`): events model saw that learner has not. */
static struct event *pending;
static size_t npending, cap_pending;
static bool log_lost;            /* the log could not grow: learner diverged */

static struct walltime_model *open_one(const char *path, bool exists, char *err, size_t errlen)
{
    struct walltime_model *m;
    if (exists) {
        m = walltime_model_load(path, err, errlen);
    } else {
        struct walltime_params params;
        walltime_params_default(&params);
        m = walltime_model_new(&params);
        if (!m)
            snprintf(err, errlen, "out of memory creating a walltime model");
    }
    /* The calibration aims at 4/5 of the rate that must hold: misses come
     * in bursts of identical jobs, so a window of recent jobs can see 1.5
     * times the average (doc/walltime.md). */
    if (m)
        walltime_model_set_target_miss(m, target_miss);
    return m;
}

int predict_open(const char *path, double miss_rate, char *err, size_t errlen)
{
    bool exists = !(access(path, F_OK) < 0 && errno == ENOENT);
    predict_close();
    target_miss = PREDICT_AIM * miss_rate;
    struct walltime_model *m = open_one(path, exists, err, errlen);
    struct walltime_model *l = m ? open_one(path, exists, err, errlen) : NULL;
    if (!l) {
        walltime_model_free(m);
        return -1;
    }
    if (!exists)
        log_info("walltime model %s does not exist yet: starting an untrained one", path);
    pthread_mutex_lock(&learn_lock);
    pthread_rwlock_wrlock(&lock);
    model = m;
    learner = l;
    model_path = strdup(path);
    observed_since_training = 0;
    pthread_rwlock_unlock(&lock);
    pthread_mutex_unlock(&learn_lock);
    return 0;
}

void predict_close(void)
{
    pthread_mutex_lock(&learn_lock);
    pthread_rwlock_wrlock(&lock);
    walltime_model_free(model);
    walltime_model_free(learner);
    model = learner = NULL;
    free(model_path);
    model_path = NULL;
    free(pending);
    pending = NULL;
    npending = cap_pending = 0;
    log_lost = false;
    pthread_rwlock_unlock(&lock);
    pthread_mutex_unlock(&learn_lock);
}

time_t predict_last_end(void)
{
    pthread_rwlock_rdlock(&lock);
    time_t t = model ? (time_t)walltime_model_last_end(model) : 0;
    pthread_rwlock_unlock(&lock);
    return t > 0 ? t : 0;
}

bool predict_enabled(void)
{
    return model != NULL;
}

/* Under the write lock: remembers an event for the learner. */
static void log_event(enum event_kind kind, const struct walltime_job *job)
{
    if (npending == cap_pending) {
        size_t cap = cap_pending ? cap_pending * 2 : 256;
        struct event *grown = realloc(pending, cap * sizeof(*grown));
        if (!grown) {
            if (!log_lost)
                log_error("walltime model: out of memory logging job %lld's event: the "
                          "next training starts again from the model predictions use",
                          (long long)job->job_id);
            log_lost = true;
            return;
        }
        pending = grown;
        cap_pending = cap;
    }
    pending[npending++] = (struct event){ kind, *job };
}

/* Applies an event to m; 0 or -errno with err. */
static int apply(struct walltime_model *m, const struct event *e, char *err, size_t errlen)
{
    struct walltime_prediction unused;
    switch (e->kind) {
    case EV_SUBMIT: return walltime_submit(m, &e->job, &unused, err, errlen);
    case EV_STARTED: return walltime_observe_started(m, &e->job, err, errlen);
    case EV_FINISHED: return walltime_observe_finished(m, &e->job, err, errlen);
    case EV_CANCELLED: return walltime_observe_cancelled(m, &e->job);
    }
    return -EINVAL;
}

int predict_job(const struct walltime_job *job, struct walltime_prediction *out,
                char *err, size_t errlen)
{
    /* Submitting records the job with its estimates: a write. */
    pthread_rwlock_wrlock(&lock);
    int rc = model ? walltime_submit(model, job, out, err, errlen) : -ENOENT;
    if (rc == 0)
        log_event(EV_SUBMIT, job);
    pthread_rwlock_unlock(&lock);
    if (rc == 0 && job->job_id > 0) {
        pthread_mutex_lock(&table_lock);
        table[job->job_id % REMEMBERED] = (struct remembered){ (uint32_t)job->job_id, *out };
        pthread_mutex_unlock(&table_lock);
    }
    return rc;
}

bool predict_lookup(uint32_t job_id, struct walltime_prediction *out)
{
    pthread_mutex_lock(&table_lock);
    const struct remembered *r = &table[job_id % REMEMBERED];
    bool found = r->job_id == job_id && job_id != 0;
    if (found)
        *out = r->p;
    pthread_mutex_unlock(&table_lock);
    return found;
}

static void model_event(enum event_kind kind, const struct walltime_job *job)
{
    char err[256];
    struct event e = { kind, *job };
    pthread_rwlock_wrlock(&lock);
    if (model) {
        int rc = apply(model, &e, err, sizeof(err));
        if (rc == 0)
            log_event(kind, job);
        else if (kind == EV_FINISHED)
            log_error("walltime model: not learning from job %lld: %s", (long long)job->job_id, err);
        else
            log_error("walltime model: job %lld: %s", (long long)job->job_id, err);
    }
    pthread_rwlock_unlock(&lock);
}

void predict_started(const struct walltime_job *job)
{
    model_event(EV_STARTED, job);
}

void predict_observe(const struct walltime_job *job)
{
    model_event(EV_FINISHED, job);
}

void predict_cancelled(const struct walltime_job *job)
{
    model_event(EV_CANCELLED, job);
}

/* Takes the log and leaves it empty: under the write lock. */
static struct event *take_log(size_t *n, bool *lost)
{
    struct event *log = pending;
    *n = npending;
    *lost = log_lost;
    pending = NULL;
    npending = cap_pending = 0;
    log_lost = false;
    return log;
}

/* Replays events onto m (learn_lock held); count: new finished jobs
 * count towards the next training. */
static void replay(struct walltime_model *m, const struct event *log, size_t n, bool count)
{
    char err[256];
    for (size_t i = 0; i < n; i++)
        if (apply(m, &log[i], err, sizeof(err)) == 0 && count && log[i].kind == EV_FINISHED)
            observed_since_training++;
}

/* The learner lost events (out of memory): it starts again from a saved
 * copy of the model predictions use. learn_lock held; rare, so the save
 * holds the write lock (no event may fall between the save and the log). */
static void restart_learner(void)
{
    char err[512];
    size_t n;
    bool lost;
    pthread_rwlock_wrlock(&lock);
    int rc = walltime_model_save(model, model_path, err, sizeof(err));
    free(take_log(&n, &lost));
    pthread_rwlock_unlock(&lock);
    struct walltime_model *copy = rc == 0 ? walltime_model_load(model_path, err, sizeof(err)) : NULL;
    if (!copy) {
        log_error("walltime model: cannot restart the learner from %s: %s", model_path, err);
        return;
    }
    walltime_model_set_target_miss(copy, target_miss);
    walltime_model_free(learner);
    learner = copy;
}

void predict_maintain(bool force)
{
    char err[512];
    pthread_mutex_lock(&learn_lock);
    if (!learner) {
        pthread_mutex_unlock(&learn_lock);
        return;
    }
    /* Catch up with what predictions saw (a copy of the log taken under
     * the write lock, replayed off it). */
    pthread_rwlock_wrlock(&lock);
    size_t n;
    bool lost;
    struct event *log = take_log(&n, &lost);
    pthread_rwlock_unlock(&lock);
    replay(learner, log, n, true);
    free(log);
    if (lost)
        restart_learner();

    bool retrain = observed_since_training >= RETRAIN_EVERY;
    if (retrain) {
        observed_since_training = 0;
        if (walltime_train(learner, err, sizeof(err)) < 0) {
            log_error("walltime model: training failed: %s", err);
            retrain = false;
        } else {
            log_info("walltime model retrained on %ld finished jobs",
                     walltime_model_observed(learner));
        }
    }
    if (!(retrain || force)) {
        pthread_mutex_unlock(&learn_lock);
        return;
    }
    /* The learner, caught up, is what the file keeps (the calibration and
     * the jobs in flight with it). */
    pthread_rwlock_wrlock(&lock);
    log = take_log(&n, &lost);
    pthread_rwlock_unlock(&lock);
    replay(learner, log, n, true);
    if (walltime_model_save(learner, model_path, err, sizeof(err)) < 0) {
        /* Without its file there is no copy to learn on: predictions keep
         * the model they have until a save succeeds. */
        log_error("walltime model: cannot save %s: %s", model_path, err);
        free(log);
        pthread_mutex_unlock(&learn_lock);
        return;
    }
    free(log);
    struct walltime_model *copy = retrain ? walltime_model_load(model_path, err, sizeof(err)) : NULL;
    if (retrain && !copy)
        log_error("walltime model: cannot load %s back: %s (predictions keep the model "
                  "trained before)", model_path, err);
    struct walltime_model *old = NULL;
    if (copy) {
        walltime_model_set_target_miss(copy, target_miss);
        /* What predictions saw since the save goes to both copies, off
         * the lock while there is much of it; the rest under it, then the
         * trained one takes their place. */
        for (int round = 0;; round++) {
            pthread_rwlock_wrlock(&lock);
            bool lost_now;
            log = take_log(&n, &lost_now);
            lost |= lost_now;
            if (n <= CATCH_UP_LOCKED || round == CATCH_UP_ROUNDS)
                break;
            pthread_rwlock_unlock(&lock);
            replay(learner, log, n, false);
            replay(copy, log, n, true);
            free(log);
        }
        replay(learner, log, n, false);
        replay(copy, log, n, true);
        old = model;
        model = learner;
        swaps++;
        pthread_rwlock_unlock(&lock);
        free(log);
        learner = copy;
        if (lost)
            restart_learner();
    } else if (lost) {
        restart_learner();
    }
    pthread_mutex_unlock(&learn_lock);
    walltime_model_free(old);
}

long predict_swaps(void)
{
    pthread_rwlock_rdlock(&lock);
    long n = swaps;
    pthread_rwlock_unlock(&lock);
    return n;
}
