/* model: predictions at submit time and learning from finished jobs.
 *
 * The ratio run/request is what is predicted; the median ensemble gives the
 * likely ratio, the upper-quantile ensemble times the user's margin the
 * conservative one. The margin is an online quantile tracker: after each
 * finished job it grows by eta*(1-target) if the job ran longer than its
 * conservative estimate and shrinks by eta*target if not, so each user's
 * share of underestimates settles near target_miss. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN_ETA 0.3
#define MARGIN_MAX 3.0          /* log scale: at most x20 */
#define MIN_TRAIN 100           /* finished jobs before the first training */

void walltime_params_default(struct walltime_params *p)
{
    p->trees = 50;
    p->depth = 3;
    p->learning_rate = 0.05;
    p->min_leaf = 500;
    p->quantile = 0.97;
    p->target_miss = 0.02;
    p->max_train = 30000;
    p->retrain_every = 1000;
    p->auto_retrain = 0;
}

int model_alloc_ring(struct walltime_model *m)
{
    size_t n = (size_t)m->params.max_train;
    m->tx = malloc(n * NFEAT * sizeof(float));
    m->ty = malloc(n * sizeof(float));
    m->tw = malloc(n * sizeof(float));
    return m->tx && m->ty && m->tw ? 0 : -ENOMEM;
}

struct walltime_model *walltime_model_new(const struct walltime_params *params)
{
    struct walltime_model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    if (params)
        m->params = *params;
    else
        walltime_params_default(&m->params);
    if (m->params.max_train < 1)
        m->params.max_train = 1;
    history_init(&m->hist);
    gbdt_init(&m->median);
    gbdt_init(&m->upper);
    if (model_alloc_ring(m) < 0) {
        walltime_model_free(m);
        return NULL;
    }
    return m;
}

void walltime_model_free(struct walltime_model *m)
{
    if (!m)
        return;
    history_free(&m->hist);
    gbdt_free(&m->median);
    gbdt_free(&m->upper);
    free(m->tx);
    free(m->ty);
    free(m->tw);
    free(m);
}

long walltime_model_observed(const struct walltime_model *m)
{
    return m->observed;
}

long walltime_model_trainings(const struct walltime_model *m)
{
    return m->trainings;
}

static double clamp01(double r)
{
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

/* The user's conservative margin (log scale) after the newest job that had
 * finished by `t`: like the features, it is taken as of the submit time. */
static double margin_as_of(const struct user_hist *u, int64_t t)
{
    const struct hist_entry *newest;
    return user_hist_as_of(u, t, &newest, 1) ? newest->log_margin : 0;
}

/* Both ratios for a job from its features and its user's record. */
static void predict_ratio(const struct walltime_model *m, const struct user_hist *u,
                          int64_t submit, const float f[NFEAT], float fallback,
                          double *median, double *conservative)
{
    double margin = exp(margin_as_of(u, submit));
    if (m->median.ntrees == 0) {
        *median = clamp01(fallback);
        *conservative = 1;               /* nothing learned yet: the request */
        return;
    }
    *median = clamp01(fallback + gbdt_predict(&m->median, f));
    double up = fallback + gbdt_predict(&m->upper, f);
    up *= margin;
    *conservative = clamp01(up > *median ? up : *median);
}

int walltime_predict(const struct walltime_model *m, const struct walltime_job *job,
                     struct walltime_prediction *out, char *err, size_t errlen)
{
    if (job->req_time <= 0) {
        snprintf(err, errlen, "job %lld has no requested time (%lld)",
                 (long long)job->job_id, (long long)job->req_time);
        return -EINVAL;
    }
    const struct user_hist *u = history_find(&m->hist, job->uid);
    float f[NFEAT];
    float fallback = features_compute(u, job, f);
    double med, cons;
    predict_ratio(m, u, job->submit_time, f, fallback, &med, &cons);
    out->median_s = med * (double)job->req_time;
    out->conservative_s = cons * (double)job->req_time;
    return 0;
}

int walltime_observe_finished(struct walltime_model *m, const struct walltime_job *job,
                              char *err, size_t errlen)
{
    if (job->req_time <= 0 || job->run_time < 0 || job->submit_time < 0) {
        snprintf(err, errlen, "job %lld cannot be learned from: requested time %lld, "
                 "run time %lld, submit time %lld (all must be known)",
                 (long long)job->job_id, (long long)job->req_time,
                 (long long)job->run_time, (long long)job->submit_time);
        return -EINVAL;
    }
    struct user_hist *u = history_get(&m->hist, job->uid);
    if (!u && job->uid >= 0) {
        snprintf(err, errlen, "out of memory adding job %lld", (long long)job->job_id);
        return -ENOMEM;
    }
    /* The features as they were at submit: entries that ended later are
     * skipped by features_compute, so learning never sees the future. */
    float f[NFEAT];
    float fallback = features_compute(u, job, f);
    double med, cons;
    predict_ratio(m, u, job->submit_time, f, fallback, &med, &cons);
    double ratio = (double)job->run_time / (double)job->req_time;
    double margin = margin_as_of(u, INT64_MAX);
    if (u && cons < 1) {
        margin += ratio > cons ? MARGIN_ETA * (1 - m->params.target_miss)
                               : -MARGIN_ETA * m->params.target_miss;
        margin = margin > MARGIN_MAX ? MARGIN_MAX : margin < -MARGIN_MAX ? -MARGIN_MAX : margin;
    }

    size_t slot = m->thead;
    memcpy(&m->tx[slot * NFEAT], f, sizeof(f));
    m->ty[slot] = (float)clamp01(ratio);
    /* Weighting by the request makes the loss the error in seconds. */
    m->tw[slot] = (float)job->req_time;
    m->thead = (m->thead + 1) % (size_t)m->params.max_train;
    if (m->tn < (size_t)m->params.max_train)
        m->tn++;

    if (u) {
        struct hist_entry e = {
            .submit = job->submit_time, .end = job->submit_time +
                (job->wait_time > 0 ? job->wait_time : 0) + job->run_time,
            .req = job->req_time, .run = job->run_time, .procs = job->procs,
            .mem = job->req_mem_kb, .exe = job->exe, .partition = job->partition,
            .status = job->status, .log_margin = margin,
        };
        user_hist_add(u, &e);
    }
    m->observed++;
    m->since_train++;
    if (m->params.auto_retrain && m->tn >= MIN_TRAIN &&
        (m->trainings == 0 || m->since_train >= m->params.retrain_every))
        return walltime_train(m, err, errlen);
    return 0;
}

int walltime_train(struct walltime_model *m, char *err, size_t errlen)
{
    float *offset = malloc((m->tn + 1) * sizeof(float));
    if (!offset) {
        snprintf(err, errlen, "out of memory training on %zu jobs", m->tn);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->tn; i++)
        offset[i] = features_baseline(&m->tx[i * NFEAT]);
    struct gbdt_data d = { .x = m->tx, .y = m->ty, .w = m->tw, .offset = offset,
                           .n = m->tn, .nf = NFEAT };
    struct gbdt_config c = {
        .quantile = 0.5, .trees = m->params.trees, .depth = m->params.depth,
        .min_leaf = m->params.min_leaf, .learning_rate = m->params.learning_rate,
    };
    int rc = gbdt_fit(&m->median, &d, &c);
    if (rc == 0) {
        c.quantile = m->params.quantile;
        rc = gbdt_fit(&m->upper, &d, &c);
    }
    free(offset);
    if (rc < 0) {
        snprintf(err, errlen, "out of memory training on %zu jobs", m->tn);
        return rc;
    }
    m->trainings++;
    m->since_train = 0;
    return 0;
}
