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

struct remembered {
    uint32_t job_id;
    struct walltime_prediction p;
};

/* Two copies of the model. Predictions read `model` under the read lock
 * (submits wait only for an observation or a pointer swap, microseconds);
 * `learner` (learn_lock, the walltime thread's) observes the same jobs and
 * is the one trained, which takes seconds, under no lock a submit waits
 * for. Once trained it is saved, becomes the model predictions read, and a
 * copy loaded from its file is the next learner. */
static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t learn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct walltime_model *model;
static struct walltime_model *learner;
static char *model_path;
static struct remembered table[REMEMBERED];
static long observed_since_training;
static long swaps;

static struct walltime_model *open_one(const char *path, bool exists, char *err, size_t errlen)
{
    if (exists)
        return walltime_model_load(path, err, errlen);
    struct walltime_params params;
    walltime_params_default(&params);
    struct walltime_model *m = walltime_model_new(&params);
    if (!m)
        snprintf(err, errlen, "out of memory creating a walltime model");
    return m;
}

int predict_open(const char *path, char *err, size_t errlen)
{
    bool exists = !(access(path, F_OK) < 0 && errno == ENOENT);
    struct walltime_model *m = open_one(path, exists, err, errlen);
    struct walltime_model *l = m ? open_one(path, exists, err, errlen) : NULL;
    if (!l) {
        walltime_model_free(m);
        return -1;
    }
    if (!exists)
        log_info("walltime model %s does not exist yet: starting an untrained one", path);
    predict_close();
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
    pthread_rwlock_unlock(&lock);
    pthread_mutex_unlock(&learn_lock);
}

bool predict_enabled(void)
{
    return model != NULL;
}

int predict_job(const struct walltime_job *job, struct walltime_prediction *out,
                char *err, size_t errlen)
{
    pthread_rwlock_rdlock(&lock);
    int rc = model ? walltime_predict(model, job, out, err, errlen) : -ENOENT;
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

void predict_observe(const struct walltime_job *job)
{
    char err[256];
    pthread_mutex_lock(&learn_lock);
    if (learner && walltime_observe_finished(learner, job, err, sizeof(err)) == 0) {
        observed_since_training++;
        /* The model predictions read learns the job's history too (a few
         * us): only the training waits for the next swap. */
        pthread_rwlock_wrlock(&lock);
        walltime_observe_finished(model, job, err, sizeof(err));
        pthread_rwlock_unlock(&lock);
    }
    pthread_mutex_unlock(&learn_lock);
}

void predict_maintain(bool force)
{
    char err[512];
    pthread_mutex_lock(&learn_lock);
    bool retrain = learner && observed_since_training >= RETRAIN_EVERY;
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
    if (!learner || !(retrain || force)) {
        pthread_mutex_unlock(&learn_lock);
        return;
    }
    if (walltime_model_save(learner, model_path, err, sizeof(err)) < 0) {
        /* Without its file there is no copy to learn on: predictions keep
         * the model they have until a save succeeds. */
        log_error("walltime model: cannot save %s: %s", model_path, err);
        pthread_mutex_unlock(&learn_lock);
        return;
    }
    struct walltime_model *copy = retrain ? walltime_model_load(model_path, err, sizeof(err)) : NULL;
    if (retrain && !copy)
        log_error("walltime model: cannot load %s back: %s (predictions keep the model "
                  "trained before)", model_path, err);
    struct walltime_model *old = NULL;
    if (copy) {
        pthread_rwlock_wrlock(&lock);
        old = model;
        model = learner;
        swaps++;
        pthread_rwlock_unlock(&lock);
        learner = copy;
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
