/* model: predictions at submit time and learning from finished jobs.
 *
 * The ratio run/request is what is predicted.
 *
 * Median: an online mixture of two experts, the history baseline alone and
 * the baseline corrected by the median ensemble, weighted by their past
 * absolute errors (exponential weights): the trees help where their
 * patterns carry forward in time and are faded out where they do not.
 *
 * Conservative: chosen per job from a predictive distribution of the ratio
 * built like a hierarchy of Chinese restaurants, each level counting its
 * evidence in episodes (submissions sent together count once, features.h):
 * the user's finished runs of the same request and size (mass E/(E+1+m)
 * for E episodes), the jobs of that kind still running, each at least as
 * long as it has run so far and the upper estimate (1/(E+1+m) each), and a
 * new episode (1/(E+1+m)): like one of the user's runs of any request
 * (U/(U+1) of it for U episodes) or, at the site level (1/(U+1)), like the
 * model's upper estimate or anything up to the request (half each).
 * The estimate is the candidate x minimising
 *      request * E|x - ratio| + price * P(ratio > x)
 * and at least the median: steady runs give tight estimates, uncertain
 * jobs the request, and misses go where they save the most seconds. The
 * price is exp(theta) times the recent mean request, times (1 + k/K0) for
 * k jobs of the same kind already in flight: a burst of identical jobs
 * predicted before any finished is one bet, and its later members should
 * not all be staked on it. theta is the online calibration, adaptive
 * conformal inference on the miss indicator, in two parts: the site's and
 * the job's user's offset to it. After each finished job the step is
 * eta*(1 - target) if the job ran longer than the estimate it was given,
 * -eta*target if not. The user's offset takes the whole step: whatever the
 * user's jobs, the share of them that miss converges to the target (the
 * sum of the steps is the change of the offset, which stays bounded since
 * a high enough price gives every job its request). The site's price, the
 * start of new and occasional users, takes it weighted so that no user has
 * more than SITE_SHARE of its steps: one user's many jobs cannot move the
 * others' estimates more than that share.
 *
 * The upper estimate, the upper-quantile ensemble times the user's margin
 * (a per-user quantile tracker, MARGIN_TARGET), is the floor for running
 * jobs of the same kind. */
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN_ETA 0.3
#define MARGIN_TARGET 0.02      /* share of jobs above the upper estimate */
#define MIN_TRAIN 100           /* finished jobs before the first training */
/* Jobs over which the mean request is averaged (the price's unit). */
#define SCALE_JOBS 1000.0
/* Step of the median mixture per job, in units of a mean request's error. */
#define MIX_ETA 0.03
/* Distinct running jobs the conservative estimate looks at (the longest). */
#define RUNNING_MAX 16
/* The most any one user's jobs weigh in the site's price of a miss, as a
 * share of the finished jobs of the last RECENT_S (decayed), and that time.
 * A user whose jobs never miss can then hold the others' misses at no more
 * than target / (1 - SITE_SHARE): 5% for the plugin's set-point of 4%,
 * the site's AdafsWalltimeMissRate (the set-point is 4/5 of it). */
#define SITE_SHARE 0.2
#define RECENT_S 86400.0

void walltime_params_default(struct walltime_params *p)
{
    p->trees = 50;
    p->depth = 3;
    p->learning_rate = 0.05;
    p->min_leaf = 500;
    p->quantile = 0.97;
    p->target_miss = 0.04;
    /* A miss raises the price by about 5%: large enough to converge within
     * a few thousand jobs from any start, small enough that one burst of
     * misses does not swing the price for long. */
    p->calib_eta = 0.05;
    p->inflight_k0 = 5;
    p->episode_gap_s = 600;
    p->max_train = 30000;
    p->retrain_every = 1000;
    p->auto_retrain = 0;
}

const char *walltime_group_name(enum walltime_group g)
{
    return g == WALLTIME_GROUP_REQUEST ? "user+request" : g == WALLTIME_GROUP_USER ? "user" : "site";
}

/* A price of a miss worth 1/target mean requests: far on the safe side
 * (most jobs get their request), so the calibration starts from safety and
 * comes down as jobs finish. */
struct calib_state calib_initial(double target_miss)
{
    double t = target_miss > 0 && target_miss < 1 ? target_miss : 0.04;
    return (struct calib_state){ .theta = log(1 / t) };
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
    m->base = calib_initial(m->params.target_miss);
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

void walltime_model_set_target_miss(struct walltime_model *m, double miss)
{
    if (miss > 0 && miss < 1)
        m->params.target_miss = miss;
}

long walltime_model_observed(const struct walltime_model *m)
{
    return m->observed;
}

long walltime_model_trainings(const struct walltime_model *m)
{
    return m->trainings;
}

long walltime_model_pending(const struct walltime_model *m)
{
    long n = 0;
    for (size_t s = 0; s < m->hist.cap; s++)
        if (m->hist.slots[s].uid != -1)
            n += m->hist.slots[s].npending;
    return n;
}

int64_t walltime_model_last_end(const struct walltime_model *m)
{
    int64_t last = -1;
    for (int k = 0; k < m->nsteps; k++)
        last = m->steps[k].end > last ? m->steps[k].end : last;
    return last;
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

/* The user's offset to the site's price of a miss (log) after the newest
 * of their jobs that had finished by `t`; 0 for a user without one. */
static double offset_as_of(const struct user_hist *u, int64_t t)
{
    const struct hist_entry *newest;
    return user_hist_as_of(u, t, &newest, 1) ? newest->price_offset : 0;
}

/* The site-wide state after the newest observation of a job that had ended
 * by `t`. Jobs are observed in end order, so this is exactly the state
 * learned from the jobs finished by t. */
static struct calib_state calib_as_of(const struct walltime_model *m, int64_t t)
{
    for (int k = 0; k < m->nsteps; k++) {
        const struct calib_step *s =
            &m->steps[(m->step_head - 1 - k + CALIB_STEPS) % CALIB_STEPS];
        if (s->end <= t)
            return s->s;
    }
    return m->base;
}

static void calib_push(struct walltime_model *m, int64_t end, struct calib_state s)
{
    if (m->nsteps == CALIB_STEPS)
        m->base = m->steps[m->step_head].s;
    else
        m->nsteps++;
    m->steps[m->step_head] = (struct calib_step){ end, s };
    m->step_head = (m->step_head + 1) % CALIB_STEPS;
}

/* ---- the conservative choice ------------------------------------------ */

#define NCAND (2 * HIST_LEN + RUNNING_MAX + 3)

struct candidates {
    int n;
    double v[NCAND], w[NCAND];
    enum walltime_group g[NCAND];
};

static void cand_add(struct candidates *c, double v, double w, enum walltime_group g)
{
    if (w > 0 && c->n < NCAND) {
        c->v[c->n] = v;
        c->w[c->n] = w;
        c->g[c->n++] = g;
    }
}

/* Keeps the RUNNING_MAX longest elapsed times in elapsed[0..*kept). */
static void keep_longest(float *elapsed, int *kept, float e)
{
    if (*kept < RUNNING_MAX) {
        elapsed[(*kept)++] = e;
        return;
    }
    int low = 0;
    for (int j = 1; j < RUNNING_MAX; j++)
        low = elapsed[j] < elapsed[low] ? j : low;
    if (e > elapsed[low])
        elapsed[low] = e;
}

/* Jobs of the job's kind in flight at its submit time, from the history
 * (finished since) and the pending records: returns how many, with how
 * many of them were running and the longest RUNNING_MAX of their elapsed
 * times (ratios of the request). */
static int in_flight(const struct user_hist *u, const struct walltime_job *job,
                     const struct hist_view *v, float *elapsed, int *kept, int *running)
{
    int k = v->inflight;
    *kept = 0;
    *running = v->running;
    for (int i = 0; i < v->running; i++)
        keep_longest(elapsed, kept, v->elapsed[i]);
    for (int i = 0; u && i < u->npending; i++) {
        const struct pending_job *p = &u->pending[i];
        if (p->job_id == job->job_id || p->submit > job->submit_time ||
            p->req != job->req_time || p->procs != job->procs)
            continue;
        k++;
        if (p->start >= 0 && p->start <= job->submit_time) {
            (*running)++;
            keep_longest(elapsed, kept, (float)((double)(job->submit_time - p->start) /
                                                (double)job->req_time));
        }
    }
    return k;
}

static void sort_candidates(struct candidates *c)
{
    for (int i = 1; i < c->n; i++)      /* insertion sort: nearly sorted runs */
        for (int k = i; k > 0 && c->v[k - 1] > c->v[k]; k--) {
            double tv = c->v[k], tw = c->w[k];
            enum walltime_group tg = c->g[k];
            c->v[k] = c->v[k - 1];
            c->w[k] = c->w[k - 1];
            c->g[k] = c->g[k - 1];
            c->v[k - 1] = tv;
            c->w[k - 1] = tw;
            c->g[k - 1] = tg;
        }
}

/* The cost of each candidate is req * E|x - r| + price * P(r > x). */
struct costs {
    int n;
    double v[NCAND], a[NCAND], b[NCAND];   /* value, req * E|x - r|, P(r > x) */
    enum walltime_group g[NCAND];
};

/* Sorts the candidates and sums, in one pass in increasing order, the mass
 * and mass x ratio below each distinct value. */
static void costs_of(struct candidates *c, double req, struct costs *k)
{
    sort_candidates(c);
    double mass = 0, mass_v = 0;
    for (int i = 0; i < c->n; i++) {
        mass += c->w[i];
        mass_v += c->w[i] * c->v[i];
    }
    double below = 0, below_v = 0;
    enum walltime_group tie = WALLTIME_GROUP_SITE;
    k->n = 0;
    for (int i = 0; i < c->n; i++) {
        below += c->w[i];
        below_v += c->w[i] * c->v[i];
        /* Equal values are one candidate, named after the most specific
         * history that holds it. */
        tie = c->g[i] > tie ? c->g[i] : tie;
        if (i + 1 < c->n && c->v[i + 1] == c->v[i])
            continue;
        double above = mass - below, above_v = mass_v - below_v;
        if (above < 0)
            above = 0;
        k->v[k->n] = c->v[i];
        k->a[k->n] = req * (c->v[i] * below - below_v + above_v - c->v[i] * above) / mass;
        k->b[k->n] = above / mass;
        k->g[k->n++] = tie;
        tie = WALLTIME_GROUP_SITE;
    }
}

/* The candidate of least cost at this price. */
static int choose(const struct costs *k, double price)
{
    int best = k->n - 1;
    double best_cost = INFINITY;
    for (int i = 0; i < k->n; i++) {
        double cost = k->a[i] + price * k->b[i];
        if (cost < best_cost) {
            best_cost = cost;
            best = i;
        }
    }
    return best;
}

/* Everything a prediction gives, as ratios of the request. */
struct ratios {
    double base, trees, median, upper, conservative, p_miss;
    enum walltime_group group;
};

/* The estimates of a job as of its submit time; the price's unit from the
 * site-wide state st. */
static void predict_ratios(const struct walltime_model *m, const struct user_hist *u,
                           const struct walltime_job *job, const float f[NFEAT],
                           float fallback, const struct hist_view *v,
                           const struct calib_state *st, struct ratios *out)
{
    out->base = clamp01(fallback);
    if (m->median.ntrees == 0) {
        out->trees = out->base;
        out->upper = 1;                  /* nothing learned yet: the request */
    } else {
        out->trees = clamp01(fallback + gbdt_predict(&m->median, f));
        double up = (fallback + gbdt_predict(&m->upper, f)) *
                    exp(margin_as_of(u, job->submit_time));
        out->upper = up;
    }
    double w_trees = 1 / (1 + exp(st->mix));
    out->median = clamp01((1 - w_trees) * out->base + w_trees * out->trees);
    out->upper = clamp01(out->upper > out->median ? out->upper : out->median);

    /* The predictive distribution of the ratio (see the top of the file). */
    struct candidates c = { 0 };
    float elapsed[RUNNING_MAX];
    int kept, running, k = in_flight(u, job, v, elapsed, &kept, &running);
    int64_t submits[HIST_LEN];
    memcpy(submits, v->submit, sizeof(int64_t) * (size_t)v->n);
    int ep = episodes(submits, v->n, m->params.episode_gap_s);
    memcpy(submits, v->usubmit, sizeof(int64_t) * (size_t)v->un);
    double ue = episodes(submits, v->un, m->params.episode_gap_s);
    double d = ep + 1 + running;
    double total = 0;
    for (int i = 0; i < v->n; i++)
        total += v->weight[i];
    for (int i = 0; i < v->n; i++)
        cand_add(&c, v->ratio[i], ep / d * v->weight[i] / total, WALLTIME_GROUP_REQUEST);
    double fresh = 1 / d, utotal = 0;
    for (int i = 0; i < v->un; i++)
        utotal += v->uweight[i];
    if (v->un > 0) {
        for (int i = 0; i < v->un; i++)
            cand_add(&c, v->uratio[i], fresh * ue / (ue + 1) * v->uweight[i] / utotal,
                     WALLTIME_GROUP_USER);
        fresh /= ue + 1;
    }
    /* The site level: what the model trained on every job expects at most,
     * or anything up to the request. */
    cand_add(&c, out->upper, fresh / 2, WALLTIME_GROUP_SITE);
    cand_add(&c, 1, fresh / 2, WALLTIME_GROUP_SITE);
    /* Running jobs beyond the longest RUNNING_MAX count at the floor. */
    double floor_mass = (running - kept) / d;
    for (int i = 0; i < kept; i++) {
        if (elapsed[i] <= out->upper)
            floor_mass += 1 / d;
        else
            cand_add(&c, clamp01(elapsed[i]), 1 / d, WALLTIME_GROUP_REQUEST);
    }
    cand_add(&c, out->upper, floor_mass, WALLTIME_GROUP_REQUEST);
    struct costs cost;
    costs_of(&c, (double)job->req_time, &cost);

    double scale = st->scale > 0 ? st->scale : (double)job->req_time;
    double theta = st->theta + offset_as_of(u, job->submit_time);
    theta = theta < THETA_MIN ? THETA_MIN : theta > THETA_MAX ? THETA_MAX : theta;
    int i = choose(&cost, exp(theta) * scale * (1 + k / m->params.inflight_k0));
    double x = cost.v[i];
    out->group = cost.g[i];
    out->p_miss = cost.b[i];
    if (x < out->median) {
        /* The median's own history: what the baseline was drawn from. */
        x = out->median;
        out->group = f[F_SAME_WMED] >= 0 ? WALLTIME_GROUP_REQUEST
                   : f[F_REQ_WMED] >= 0 || f[F_RATIO_WQ75] >= 0 ? WALLTIME_GROUP_USER
                   : WALLTIME_GROUP_SITE;
        for (int j = i; j < cost.n && cost.v[j] <= x; j++)
            out->p_miss = cost.b[j];
    }
    out->conservative = clamp01(x);
}

/* A decayed count of finished jobs, last updated at `then`, at `now` (no
 * decay for a job observed out of end order). */
static double decayed(double count, int64_t then, int64_t now)
{
    return now > then ? count * exp(-(double)(now - then) / RECENT_S) : count;
}

static int check_job(const struct walltime_job *job, char *err, size_t errlen)
{
    if (job->req_time <= 0) {
        snprintf(err, errlen, "job %lld has no requested time (%lld)",
                 (long long)job->job_id, (long long)job->req_time);
        return -EINVAL;
    }
    return walltime_job_check(job, err, errlen) < 0 ? -EINVAL : 0;
}

static void ratios_of(const struct walltime_model *m, const struct user_hist *u,
                      const struct walltime_job *job, const struct calib_state *st,
                      float f[NFEAT], struct ratios *r)
{
    struct hist_view v;
    float fallback = features_compute(u, job, f, &v);
    predict_ratios(m, u, job, f, fallback, &v, st, r);
}

static void fill(const struct walltime_job *job, const struct ratios *r,
                 struct walltime_prediction *out)
{
    out->median_s = r->median * (double)job->req_time;
    out->conservative_s = r->conservative * (double)job->req_time;
    out->group = r->group;
    out->miss_probability = r->p_miss;
}

int walltime_predict(const struct walltime_model *m, const struct walltime_job *job,
                     struct walltime_prediction *out, char *err, size_t errlen)
{
    if (check_job(job, err, errlen) < 0)
        return -EINVAL;
    float f[NFEAT];
    struct ratios r;
    struct calib_state st = calib_as_of(m, job->submit_time);
    ratios_of(m, history_find(&m->hist, job->uid), job, &st, f, &r);
    fill(job, &r, out);
    return 0;
}

int walltime_submit(struct walltime_model *m, const struct walltime_job *job,
                    struct walltime_prediction *out, char *err, size_t errlen)
{
    if (check_job(job, err, errlen) < 0)
        return -EINVAL;
    struct user_hist *u = history_get(&m->hist, job->uid);
    if (!u && job->uid >= 0) {
        snprintf(err, errlen, "out of memory adding job %lld", (long long)job->job_id);
        return -ENOMEM;
    }
    float f[NFEAT];
    struct ratios r;
    struct calib_state st = calib_as_of(m, job->submit_time);
    ratios_of(m, u, job, &st, f, &r);
    fill(job, &r, out);
    if (!u || job->job_id < 0 || job->submit_time < 0)
        return 0;                        /* nothing to match it with later */
    struct pending_job p = {
        .job_id = job->job_id, .submit = job->submit_time, .start = -1,
        .req = job->req_time, .procs = job->procs,
        .conservative = r.conservative, .base = r.base, .trees = r.trees,
    };
    if (user_pending_add(u, &p) < 0) {
        snprintf(err, errlen, "out of memory adding job %lld", (long long)job->job_id);
        return -ENOMEM;
    }
    return 0;
}

int walltime_observe_started(struct walltime_model *m, const struct walltime_job *job,
                             char *err, size_t errlen)
{
    if (walltime_job_check(job, err, errlen) < 0)
        return -EINVAL;
    struct pending_job *p = user_pending_find(history_find_mut(&m->hist, job->uid), job->job_id);
    if (p && job->submit_time >= 0 && job->wait_time >= 0)
        p->start = job->submit_time + job->wait_time;
    return 0;
}

int walltime_observe_cancelled(struct walltime_model *m, const struct walltime_job *job)
{
    struct user_hist *u = history_find_mut(&m->hist, job->uid);
    struct pending_job *p = user_pending_find(u, job->job_id);
    if (p)
        user_pending_remove(u, p);
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
    /* The features as they were at submit: entries that ended later are
     * skipped by features_compute, so learning never sees the future. */
    struct calib_state then = calib_as_of(m, job->submit_time);
    float f[NFEAT];
    struct ratios r;
    ratios_of(m, u, job, &then, f, &r);
    /* What the job was really told, if it was submitted here: the
     * calibration learns whether the estimates it gave held. */
    struct pending_job *p = user_pending_find(u, job->job_id);
    if (p && p->submit == job->submit_time && p->req == job->req_time) {
        r.conservative = p->conservative;
        r.base = p->base;
        r.trees = p->trees;
    }
    if (p)
        user_pending_remove(u, p);

    double req = (double)job->req_time, run = (double)job->run_time, ratio = run / req;
    double margin = margin_as_of(u, INT64_MAX);
    if (u && r.upper < 1) {
        margin += ratio > r.upper ? MARGIN_ETA * (1 - MARGIN_TARGET) : -MARGIN_ETA * MARGIN_TARGET;
        margin = margin > MARGIN_MAX ? MARGIN_MAX : margin < -MARGIN_MAX ? -MARGIN_MAX : margin;
    }
    int64_t end = job->submit_time + (job->wait_time > 0 ? job->wait_time : 0) + job->run_time;

    /* Every job counts, those estimated at the request too. The user's
     * offset takes the whole step: each user's own jobs hold their misses
     * at the target. The site's price takes it weighted so that no user
     * has more than SITE_SHARE of its steps over the last RECENT_S: a user
     * whose many jobs never miss cannot pull the others' estimates down
     * (their misses stay under target / (1 - SITE_SHARE) even if their
     * offsets did not answer). */
    struct calib_state s = calib_as_of(m, INT64_MAX);
    double tau = m->params.target_miss, eta = m->params.calib_eta;
    double step = run > r.conservative * req ? eta * (1 - tau) : -eta * tau;
    const struct hist_entry *prev = u && u->count > 0 ? user_hist_at(u, 0) : NULL;
    double offset = (prev ? prev->price_offset : 0) + step;
    offset = offset < THETA_MIN ? THETA_MIN : offset > THETA_MAX ? THETA_MAX : offset;
    double recent = 1 + (prev ? decayed(prev->recent, prev->end, end) : 0);
    const struct calib_step *last =
        m->nsteps ? &m->steps[(m->step_head - 1 + CALIB_STEPS) % CALIB_STEPS] : NULL;
    s.recent = 1 + (last ? decayed(s.recent, last->end, end) : s.recent);
    double others = s.recent > recent ? s.recent - recent : 0;
    double weight = SITE_SHARE / (1 - SITE_SHARE) * others / recent;
    s.theta += step * (weight < 1 ? weight : 1);
    s.theta = s.theta < THETA_MIN ? THETA_MIN : s.theta > THETA_MAX ? THETA_MAX : s.theta;
    double unit = s.scale > 0 ? s.scale : req;
    s.mix += MIX_ETA * (fabs(r.trees - ratio) - fabs(r.base - ratio)) * req / unit;
    s.mix = s.mix < -MIX_MAX ? -MIX_MAX : s.mix > MIX_MAX ? MIX_MAX : s.mix;
    s.scale = s.scale > 0 ? s.scale + (req - s.scale) / SCALE_JOBS : req;

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
            .status = job->status, .log_margin = margin, .price_offset = offset,
            .recent = recent,
        };
        user_hist_add(u, &e);
    }
    calib_push(m, end, s);
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
