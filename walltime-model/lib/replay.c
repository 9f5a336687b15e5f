#include "replay.h"
#include "model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const replay_predictor_names[P_COUNT] = {
    "request", "last2", "alea", "model", "model_safe",
};

double baseline_last2(const struct user_hist *u, const struct walltime_job *job)
{
    const struct hist_entry *h[2];
    int n = user_hist_as_of(u, job->submit_time, h, 2);
    double v = n == 0 ? (double)job->req_time
             : n == 1 ? (double)h[0]->run : ((double)h[0]->run + (double)h[1]->run) / 2;
    return v < (double)job->req_time ? v : (double)job->req_time;
}

double baseline_alea(const struct user_hist *u, const struct walltime_job *job)
{
    const struct hist_entry *h[5];
    int n = user_hist_as_of(u, job->submit_time, h, 5);
    if (n == 0)
        return (double)job->req_time;
    double r = 0;
    for (int i = 0; i < n; i++) {
        double x = (double)h[i]->run / (double)h[i]->req;
        r = x > r ? x : r;
    }
    double v = r * (double)job->req_time;
    return v < (double)job->req_time ? v : (double)job->req_time;
}

/* Min-heap of running jobs by end time (ties: trace order). */
struct pending { int64_t end; size_t i; };

static int before(const struct pending *a, const struct pending *b)
{
    return a->end < b->end || (a->end == b->end && a->i < b->i);
}

static void heap_push(struct pending *h, size_t *n, struct pending p)
{
    size_t k = (*n)++;
    while (k && before(&p, &h[(k - 1) / 2])) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = p;
}

static struct pending heap_pop(struct pending *h, size_t *n)
{
    struct pending top = h[0], last = h[--*n];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &last))
            break;
        h[k] = h[c];
        k = c;
    }
    if (*n)
        h[k] = last;
    return top;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sorted_quantile(const double *v, size_t n, double q)
{
    return n ? v[(size_t)(q * (double)(n - 1) + 0.5)] : NAN;
}

static int cmp_user_then_err(const void *a, const void *b)
{
    const double *x = a, *y = b;    /* pairs (uid, error) */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

static int metrics(const struct walltime_trace *t, const double *pred,
                   struct replay_metrics *m)
{
    size_t n = 0, under = 0;
    double sum = 0;
    double *err = malloc(t->n * sizeof(double));
    double *pairs = malloc(t->n * 2 * sizeof(double));
    double *users = malloc(t->n * sizeof(double));
    double *window = malloc((t->n / REPLAY_WINDOW + 1) * sizeof(double));
    if (!err || !pairs || !users || !window) {
        free(err);
        free(pairs);
        free(users);
        free(window);
        return -ENOMEM;
    }
    memset(m, 0, sizeof(*m));
    size_t in_window = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (isnan(pred[i]))
            continue;
        double run = (double)t->jobs[i].run_time, e = fabs(pred[i] - run);
        under += pred[i] < run;
        in_window += pred[i] < run;
        if ((n + 1) % REPLAY_WINDOW == 0) {
            window[m->windows] = (double)in_window / REPLAY_WINDOW;
            if (window[m->windows] > window[m->worst_window])
                m->worst_window = m->windows;
            m->windows++;
            in_window = 0;
        }
        sum += e;
        pairs[2 * n] = (double)t->jobs[i].uid;
        pairs[2 * n + 1] = e;
        err[n++] = e;
    }
    qsort(err, n, sizeof(double), cmp_double);
    m->window_rate = window;
    m->n = n;
    m->mae_s = n ? sum / (double)n : NAN;
    m->medae_s = sorted_quantile(err, n, 0.5);
    m->underestimation_rate = n ? (double)under / (double)n : NAN;
    qsort(pairs, n, 2 * sizeof(double), cmp_user_then_err);
    size_t nu = 0;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && pairs[2 * b] == pairs[2 * a]; b++)
            ;
        users[nu++] = pairs[2 * (a + (b - a - 1) / 2) + 1];
    }
    qsort(users, nu, sizeof(double), cmp_double);
    m->users = nu;
    m->user_medae_p25 = sorted_quantile(users, nu, 0.25);
    m->user_medae_p50 = sorted_quantile(users, nu, 0.5);
    m->user_medae_p75 = sorted_quantile(users, nu, 0.75);
    m->user_medae_p90 = sorted_quantile(users, nu, 0.9);
    free(err);
    free(pairs);
    free(users);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void replay_free(struct replay_result *r)
{
    for (int p = 0; p < P_COUNT; p++) {
        free(r->pred[p]);
        free(r->metrics[p].window_rate);
    }
    memset(r, 0, sizeof(*r));
}

/* The replay itself: jobs in submit order, each submitted to the model
 * after the jobs that started and ended by its submit time were observed
 * (starts first, each kind in time order). Fills out (may be NULL) with
 * every predictor's estimates; hands the model to *keep if not NULL. */
static int replay(const struct walltime_trace *t, const struct walltime_params *params,
                  struct replay_result *out, struct walltime_model **keep,
                  char *err, size_t errlen)
{
    struct replay_result scratch;
    if (!out)
        out = &scratch;
    memset(out, 0, sizeof(*out));
    out->n = t->n;
    struct walltime_params p = *params;
    p.auto_retrain = 0;                  /* retraining is timed here instead */
    struct walltime_model *m = walltime_model_new(&p);
    struct pending *ends = malloc((t->n + 1) * sizeof(*ends));
    struct pending *starts = malloc((t->n + 1) * sizeof(*starts));
    int rc = -ENOMEM;
    for (int k = 0; k < P_COUNT; k++)
        if (!(out->pred[k] = malloc((t->n + 1) * sizeof(double))))
            goto fail;
    if (!m || !ends || !starts)
        goto fail;

    size_t nends = 0, nstarts = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct walltime_job *job = &t->jobs[i];
        while (nstarts && starts[0].end <= job->submit_time) {
            struct pending s = heap_pop(starts, &nstarts);
            if ((rc = walltime_observe_started(m, &t->jobs[s.i], err, errlen)) < 0)
                goto fail;
        }
        while (nends && ends[0].end <= job->submit_time) {
            struct pending done = heap_pop(ends, &nends);
            if ((rc = walltime_observe_finished(m, &t->jobs[done.i], err, errlen)) < 0)
                goto fail;
            if (m->tn >= 100 && (m->trainings == 0 ||
                                 m->since_train >= p.retrain_every)) {
                double t0 = now_s();
                if ((rc = walltime_train(m, err, errlen)) < 0)
                    goto fail;
                out->train_seconds += now_s() - t0;
            }
        }
        if (job->req_time <= 0 || job->run_time < 0 || job->submit_time < 0) {
            for (int k = 0; k < P_COUNT; k++)
                out->pred[k][i] = NAN;
            out->skipped++;
            continue;
        }
        const struct user_hist *u = history_find(&m->hist, job->uid);
        out->pred[P_REQUEST][i] = (double)job->req_time;
        out->pred[P_LAST2][i] = baseline_last2(u, job);
        out->pred[P_ALEA][i] = baseline_alea(u, job);
        struct walltime_prediction wp;
        if ((rc = walltime_submit(m, job, &wp, err, errlen)) < 0)
            goto fail;
        out->pred[P_MODEL][i] = wp.median_s;
        out->pred[P_MODEL_SAFE][i] = wp.conservative_s;
        out->group[wp.group]++;
        int64_t wait = job->wait_time > 0 ? job->wait_time : 0;
        heap_push(starts, &nstarts, (struct pending){ job->submit_time + wait, i });
        heap_push(ends, &nends, (struct pending){ job->submit_time + wait + job->run_time, i });
    }
    /* A model handed on learns the outcome of every job in flight at the
     * end, as it would have lived through them. */
    while (keep && (nstarts || nends)) {
        if (nstarts && (!nends || starts[0].end <= ends[0].end)) {
            struct pending s = heap_pop(starts, &nstarts);
            rc = walltime_observe_started(m, &t->jobs[s.i], err, errlen);
        } else {
            struct pending done = heap_pop(ends, &nends);
            rc = walltime_observe_finished(m, &t->jobs[done.i], err, errlen);
        }
        if (rc < 0)
            goto fail;
    }
    if (out != &scratch)
        for (int k = 0; k < P_COUNT; k++)
            if ((rc = metrics(t, out->pred[k], &out->metrics[k])) < 0)
                goto fail;
    out->trainings = m->trainings;
    if (keep)
        *keep = m;
    else
        walltime_model_free(m);
    free(ends);
    free(starts);
    if (out == &scratch)
        replay_free(out);
    return 0;
fail:
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory replaying %zu jobs", t->n);
    walltime_model_free(m);
    free(ends);
    free(starts);
    replay_free(out);
    return rc;
}

int replay_run(const struct walltime_trace *t, const struct walltime_params *params,
               struct replay_result *out, char *err, size_t errlen)
{
    return replay(t, params, out, NULL, err, errlen);
}

int replay_model(const struct walltime_trace *t, const struct walltime_params *params,
                 struct walltime_model **model, char *err, size_t errlen)
{
    return replay(t, params, NULL, model, err, errlen);
}
