/* model: predictions at submit time and learning from finished jobs.
 *
 * The ratio run/request is what is predicted; the median ensemble gives the
 * likely ratio. The conservative estimate is chosen per job from a small
 * distribution of the ratio: the user's finished runs with the same request
 * and size (recency-weighted, total mass n/(n+1) for n runs) and the upper
 * estimate of the upper-quantile ensemble times the user's margin (mass
 * 1/(n+1), all of it when the job is new). It picks the candidate x that
 * minimises  request * E|x - ratio| + lambda * P(ratio > x):  jobs whose
 * runs are steady get a tight estimate, uncertain ones the upper estimate,
 * and the underestimates go where they save the most seconds. lambda, one
 * price for all users, is an online quantile tracker on the share of
 * underestimates (target_miss); the margin is another, per user, for the
 * upper estimate (MARGIN_TARGET): after each finished job it grows by
 * eta*(1-target) if the job ran longer than the estimate and shrinks by
 * eta*target if not. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN_ETA 0.3
#define MARGIN_MAX 3.0          /* log scale: at most x20 */
#define MARGIN_TARGET 0.02      /* share of jobs above the upper estimate */
#define MIN_TRAIN 100           /* finished jobs before the first training */
/* The price of an underestimate starts at 100,000 s (28 h of absolute
 * error), on the safe side, and moves by LAMBDA_ETA on the log scale. Both
 * and target_miss 0.035 were chosen on the whole KTH-SP2 and CEA-Curie
 * replays (doc/bench/walltime.md): misses come in bursts of identical jobs
 * predicted before any of them finished, so the share of underestimates
 * ends 0.3-1.1 points above the tracker's target. */
#define LAMBDA_START_LOG 11.513 /* log(100000) */
#define LAMBDA_ETA 0.02

void walltime_params_default(struct walltime_params *p)
{
    p->trees = 50;
    p->depth = 3;
    p->learning_rate = 0.05;
    p->min_leaf = 500;
    p->quantile = 0.97;
    p->target_miss = 0.035;
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
    m->log_lambda_base = LAMBDA_START_LOG;
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

/* The price of an underestimate after the newest observation of a job that
 * had ended by `t`. In the replay jobs are observed in end order, so this is
 * exactly the price learned from the jobs finished by t. */
static double log_lambda_as_of(const struct walltime_model *m, int64_t t)
{
    for (int k = 0; k < m->nsteps; k++) {
        const struct lambda_step *s =
            &m->steps[(m->step_head - 1 - k + LAMBDA_STEPS) % LAMBDA_STEPS];
        if (s->end <= t)
            return s->log_lambda;
    }
    return m->log_lambda_base;
}

static void lambda_push(struct walltime_model *m, int64_t end, double log_lambda)
{
    if (m->nsteps == LAMBDA_STEPS)
        m->log_lambda_base = m->steps[m->step_head].log_lambda;
    else
        m->nsteps++;
    m->steps[m->step_head] = (struct lambda_step){ end, log_lambda };
    m->step_head = (m->step_head + 1) % LAMBDA_STEPS;
}

/* The candidate ratio x minimising req * E|x - r| + lambda * P(r > x) when r
 * is one of the same runs (sorted, total mass n/(n+1)) or `upper` (mass
 * 1/(n+1)). One pass over the candidates in increasing order with running
 * sums of the mass and mass x ratio below them. */
static double choose_conservative(const struct same_runs *s, double upper,
                                  double req, double lambda)
{
    double v[HIST_LEN + 1], w[HIST_LEN + 1], total = 0;
    for (int i = 0; i < s->n; i++)
        total += s->weight[i];
    double p_upper = 1.0 / (s->n + 1), mass = 0, mass_v = 0;
    int n = 0, placed = 0;
    for (int i = 0; i <= s->n; i++) {
        if (!placed && (i == s->n || upper <= s->ratio[i])) {
            v[n] = upper;
            w[n++] = p_upper;
            placed = 1;
        }
        if (i < s->n) {
            v[n] = s->ratio[i];
            w[n++] = (1 - p_upper) * s->weight[i] / total;
        }
    }
    for (int i = 0; i < n; i++) {
        mass += w[i];
        mass_v += w[i] * v[i];
    }
    double below = 0, below_v = 0, best = upper, best_cost = INFINITY;
    for (int i = 0; i < n; i++) {
        below += w[i];
        below_v += w[i] * v[i];
        double above = mass - below, above_v = mass_v - below_v;
        if (above < 0)
            above = 0;
        double cost = req * (v[i] * below - below_v + above_v - v[i] * above) + lambda * above;
        if (cost < best_cost) {
            best_cost = cost;
            best = v[i];
        }
    }
    return best;
}

/* Both ratios for a job from its features and its user's record; *upper is
 * the upper estimate the margin is tracked on. */
static void predict_ratio(const struct walltime_model *m, const struct user_hist *u,
                          const struct walltime_job *job, const float f[NFEAT],
                          float fallback, const struct same_runs *same,
                          double *median, double *upper, double *conservative)
{
    if (m->median.ntrees == 0) {
        *median = clamp01(fallback);
        *upper = 1;                      /* nothing learned yet: the request */
    } else {
        *median = clamp01(fallback + gbdt_predict(&m->median, f));
        double up = (fallback + gbdt_predict(&m->upper, f)) * exp(margin_as_of(u, job->submit_time));
        *upper = clamp01(up > *median ? up : *median);
    }
    double lambda = exp(log_lambda_as_of(m, job->submit_time));
    double c = choose_conservative(same, *upper, (double)job->req_time, lambda);
    *conservative = clamp01(c > *median ? c : *median);
}

int walltime_predict(const struct walltime_model *m, const struct walltime_job *job,
                     struct walltime_prediction *out, char *err, size_t errlen)
{
    if (job->req_time <= 0) {
        snprintf(err, errlen, "job %lld has no requested time (%lld)",
                 (long long)job->job_id, (long long)job->req_time);
        return -EINVAL;
    }
    if (walltime_job_check(job, err, errlen) < 0)
        return -EINVAL;
    const struct user_hist *u = history_find(&m->hist, job->uid);
    float f[NFEAT];
    struct same_runs same;
    float fallback = features_compute(u, job, f, &same);
    double med, up, cons;
    predict_ratio(m, u, job, f, fallback, &same, &med, &up, &cons);
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
    if (walltime_job_check(job, err, errlen) < 0)
        return -EINVAL;
    struct user_hist *u = history_get(&m->hist, job->uid);
    if (!u && job->uid >= 0) {
        snprintf(err, errlen, "out of memory adding job %lld", (long long)job->job_id);
        return -ENOMEM;
    }
    /* The features as they were at submit: entries that ended later are
     * skipped by features_compute, so learning never sees the future. */
    float f[NFEAT];
    struct same_runs same;
    float fallback = features_compute(u, job, f, &same);
    double med, up, cons;
    predict_ratio(m, u, job, f, fallback, &same, &med, &up, &cons);
    double ratio = (double)job->run_time / (double)job->req_time;
    double margin = margin_as_of(u, INT64_MAX);
    if (u && up < 1) {
        margin += ratio > up ? MARGIN_ETA * (1 - MARGIN_TARGET) : -MARGIN_ETA * MARGIN_TARGET;
        margin = margin > MARGIN_MAX ? MARGIN_MAX : margin < -MARGIN_MAX ? -MARGIN_MAX : margin;
    }
    int64_t end = job->submit_time + (job->wait_time > 0 ? job->wait_time : 0) + job->run_time;
    /* Every job counts, those estimated at the request too: the target is
     * the share of all jobs. */
    double tau = m->params.target_miss;
    double l = log_lambda_as_of(m, INT64_MAX) +
               (ratio > cons ? LAMBDA_ETA * (1 - tau) : -LAMBDA_ETA * tau);
    lambda_push(m, end, l < 0 ? 0 : l > LAMBDA_MAX_LOG ? LAMBDA_MAX_LOG : l);

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
            .submit = job->submit_time, .end = end,
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
