#include "predict.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define REMEMBERED 4096          /* predictions kept for bbstat */
#define RETRAIN_EVERY 500        /* new finished jobs between trainings */

struct remembered {
    uint32_t job_id;
    struct walltime_prediction p;
};

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct walltime_model *model;
static char *model_path;
static struct remembered table[REMEMBERED];
static long observed_since_training;

int predict_open(const char *path, double miss_rate, char *err, size_t errlen)
{
    struct walltime_model *m;
    if (access(path, F_OK) < 0 && errno == ENOENT) {
        struct walltime_params params;
        walltime_params_default(&params);
        m = walltime_model_new(&params);
        if (!m) {
            snprintf(err, errlen, "out of memory creating a walltime model");
            return -1;
        }
        log_info("walltime model %s does not exist yet: starting an untrained one", path);
    } else if (!(m = walltime_model_load(path, err, errlen))) {
        return -1;
    }
    /* The calibration aims at 4/5 of the rate that must hold: misses come
     * in bursts of identical jobs, so a window of recent jobs can see 1.5
     * times the average (doc/walltime.md). */
    walltime_model_set_target_miss(m, PREDICT_AIM * miss_rate);
    pthread_rwlock_wrlock(&lock);
    walltime_model_free(model);
    model = m;
    free(model_path);
    model_path = strdup(path);
    pthread_rwlock_unlock(&lock);
    return 0;
}

void predict_close(void)
{
    pthread_rwlock_wrlock(&lock);
    walltime_model_free(model);
    model = NULL;
    free(model_path);
    model_path = NULL;
    pthread_rwlock_unlock(&lock);
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

int predict_job(const struct walltime_job *job, struct walltime_prediction *out,
                char *err, size_t errlen)
{
    /* Submitting records the job with its estimates: a write. */
    pthread_rwlock_wrlock(&lock);
    int rc = model ? walltime_submit(model, job, out, err, errlen) : -ENOENT;
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

void predict_started(const struct walltime_job *job)
{
    char err[256];
    pthread_rwlock_wrlock(&lock);
    if (model && walltime_observe_started(model, job, err, sizeof(err)) < 0)
        log_error("walltime model: job %lld: %s", (long long)job->job_id, err);
    pthread_rwlock_unlock(&lock);
}

void predict_observe(const struct walltime_job *job)
{
    char err[256];
    pthread_rwlock_wrlock(&lock);
    if (model) {
        if (walltime_observe_finished(model, job, err, sizeof(err)) == 0)
            observed_since_training++;
        else
            log_error("walltime model: not learning from job %lld: %s",
                      (long long)job->job_id, err);
    }
    pthread_rwlock_unlock(&lock);
}

void predict_cancelled(const struct walltime_job *job)
{
    pthread_rwlock_wrlock(&lock);
    if (model)
        walltime_observe_cancelled(model, job);
    pthread_rwlock_unlock(&lock);
}

void predict_maintain(bool force)
{
    char err[512];
    pthread_rwlock_wrlock(&lock);
    bool retrain = model && observed_since_training >= RETRAIN_EVERY;
    if (retrain) {
        if (walltime_train(model, err, sizeof(err)) < 0)
            log_error("walltime model: training failed: %s", err);
        else
            log_info("walltime model retrained on %ld finished jobs",
                     walltime_model_observed(model));
        observed_since_training = 0;
    }
    if (model && (retrain || force) &&
        walltime_model_save(model, model_path, err, sizeof(err)) < 0)
        log_error("walltime model: cannot save %s: %s", model_path, err);
    pthread_rwlock_unlock(&lock);
}
