#include "features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const feature_names[NFEAT] = {
    "log_req", "log_procs", "log_mem", "hour", "weekday", "partition",
    "n_hist", "same_n", "same_last", "same_med3", "same_med5", "same_min5",
    "same_max5", "same_limit", "req_n", "req_med5", "exe_med3", "last1",
    "last2", "ratio_med5", "ratio_max5", "ratio_mean", "limit10", "fail5",
    "since_end", "req_rel", "same_wmed", "req_wmed", "ratio_wq75", "same_age",
};

int hit_limit(int64_t run, int64_t req)
{
    return run >= req - (req / 100 > 60 ? req / 100 : 60);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(float *v, int n)
{
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof(*v), cmp_float);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* Weighted q-quantile of v[0..n) with weights w (both permuted in place). */
static float weighted_quantile(float *v, float *w, int n, float q)
{
    if (n == 0)
        return -1;
    for (int i = 1; i < n; i++)         /* insertion sort: n <= HIST_LEN */
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            float tv = v[k], tw = w[k];
            v[k] = v[k - 1];
            w[k] = w[k - 1];
            v[k - 1] = tv;
            w[k - 1] = tw;
        }
    float total = 0, acc = 0;
    for (int i = 0; i < n; i++)
        total += w[i];
    for (int i = 0; i < n; i++) {
        acc += w[i];
        if (acc >= q * total)
            return v[i];
    }
    return v[n - 1];
}

static float log2_or_unknown(int64_t v)
{
    return v > 0 ? (float)log2((double)v) : -1;
}

/* Ratios of a previous run to this request can be large; the trees only
 * need to know "longer than this request". */
static float rel(int64_t run, int64_t req)
{
    double r = (double)run / (double)req;
    return (float)(r > 4 ? 4 : r);
}

int episodes(int64_t *submit, int n, int64_t gap)
{
    for (int i = 1; i < n; i++)         /* insertion sort: n <= HIST_LEN */
        for (int k = i; k > 0 && submit[k - 1] > submit[k]; k--) {
            int64_t t = submit[k];
            submit[k] = submit[k - 1];
            submit[k - 1] = t;
        }
    int e = n > 0;
    for (int i = 1; i < n; i++)
        e += submit[i] - submit[i - 1] > gap;
    return e;
}

/* The same request and size's jobs that were in flight at t: submitted by
 * then, finished later (so the features skip them). */
static void inflight_of(const struct user_hist *u, const struct walltime_job *job,
                        struct hist_view *v)
{
    v->inflight = v->running = 0;
    for (int k = 0; u && k < u->count; k++) {
        const struct hist_entry *e = user_hist_at(u, k);
        if (e->end <= job->submit_time || e->submit > job->submit_time ||
            e->req != job->req_time || e->procs != job->procs)
            continue;
        v->inflight++;
        int64_t start = e->end - e->run;
        if (start <= job->submit_time)
            v->elapsed[v->running++] = (float)((double)(job->submit_time - start) /
                                               (double)job->req_time);
    }
}

float features_compute(const struct user_hist *u, const struct walltime_job *job,
                       float f[NFEAT], struct hist_view *view)
{
    const int64_t req = job->req_time, t = job->submit_time;
    const struct hist_entry *h[HIST_LEN];
    int n = user_hist_as_of(u, t, h, HIST_LEN);

    f[F_LOG_REQ] = log2_or_unknown(req);
    f[F_LOG_PROCS] = log2_or_unknown(job->procs);
    f[F_LOG_MEM] = log2_or_unknown(job->req_mem_kb);
    f[F_HOUR] = t >= 0 ? (float)(t % 86400) / 3600.0f : -1;
    f[F_WDAY] = t >= 0 ? (float)((t / 86400 + 4) % 7) : -1;
    f[F_PARTITION] = job->partition ? (float)job->partition : -1;
    f[F_NHIST] = (float)n;

    float same[HIST_LEN], byreq[HIST_LEN], exe[HIST_LEN], own[HIST_LEN], tmp[HIST_LEN];
    float same_w[HIST_LEN], req_w[HIST_LEN], same_v[HIST_LEN], req_v[HIST_LEN];
    float own_w[HIST_LEN], own_v[HIST_LEN];
    int ns = 0, nr = 0, ne = 0, same_limit = 0, limit10 = 0, fail5 = 0;
    int64_t same_newest_submit = -1, same_submit[HIST_LEN], own_submit[HIST_LEN];
    double ratio_sum = 0, req_log_sum = 0;
    float weight = 1;                    /* RECENCY_DECAY ^ age among all jobs */
    for (int i = 0; i < n; i++, weight *= RECENCY_DECAY) {
        const struct hist_entry *e = h[i];
        own[i] = (float)e->run / (float)e->req;
        own_v[i] = own[i] > 1 ? 1 : own[i];
        own_w[i] = weight;
        own_submit[i] = e->submit;
        ratio_sum += own[i] > 1 ? 1 : own[i];
        req_log_sum += log2((double)e->req);
        if (i < 10)
            limit10 += hit_limit(e->run, e->req);
        if (i < 5)
            fail5 += e->status == 0;
        if (e->req == req) {
            req_w[nr] = weight;
            req_v[nr] = rel(e->run, req);
            byreq[nr++] = rel(e->run, req);
            if (e->procs == job->procs) {
                if (ns < 10)
                    same_limit += hit_limit(e->run, e->req);
                same_w[ns] = weight;
                same_v[ns] = rel(e->run, req);
                same_submit[ns] = e->submit;
                same[ns++] = rel(e->run, req);
                if (e->submit > same_newest_submit)
                    same_newest_submit = e->submit;
            }
        }
        if (job->exe && e->exe == job->exe)
            exe[ne++] = rel(e->run, req);
    }

    f[F_SAME_N] = (float)ns;
    f[F_SAME_LAST] = ns ? same[0] : -1;
    memcpy(tmp, same, sizeof(float) * (size_t)(ns < 3 ? ns : 3));
    f[F_SAME_MED3] = median(tmp, ns < 3 ? ns : 3);
    memcpy(tmp, same, sizeof(float) * (size_t)(ns < 5 ? ns : 5));
    f[F_SAME_MED5] = median(tmp, ns < 5 ? ns : 5);
    f[F_SAME_MIN5] = ns ? tmp[0] : -1;                 /* tmp is sorted */
    f[F_SAME_MAX5] = ns ? tmp[(ns < 5 ? ns : 5) - 1] : -1;
    f[F_SAME_LIMIT] = ns ? (float)same_limit / (float)(ns < 10 ? ns : 10) : -1;
    f[F_REQ_N] = (float)nr;
    f[F_REQ_MED5] = median(byreq, nr < 5 ? nr : 5);
    f[F_EXE_MED3] = median(exe, ne < 3 ? ne : 3);
    f[F_LAST1] = n ? rel(h[0]->run, req) : -1;
    f[F_LAST2] = n >= 2 ? rel((h[0]->run + h[1]->run) / 2, req) : f[F_LAST1];
    memcpy(tmp, own, sizeof(float) * (size_t)(n < 5 ? n : 5));
    f[F_RATIO_MED5] = median(tmp, n < 5 ? n : 5);
    f[F_RATIO_MAX5] = n ? tmp[(n < 5 ? n : 5) - 1] : -1;
    f[F_RATIO_MEAN] = n ? (float)(ratio_sum / n) : -1;
    f[F_LIMIT10] = n ? (float)limit10 / (float)(n < 10 ? n : 10) : -1;
    f[F_FAIL5] = n ? (float)fail5 / (float)(n < 5 ? n : 5) : -1;
    f[F_SINCE_END] = n ? (float)log2(1.0 + (double)(t - h[0]->end)) : -1;
    f[F_REQ_REL] = n ? (float)(log2((double)req) - req_log_sum / n) : 0;
    if (view) {
        view->n = ns;
        for (int i = 0; i < ns; i++) {
            view->ratio[i] = same_v[i] > 1 ? 1 : same_v[i];
            view->weight[i] = same_w[i];
        }
        memcpy(view->submit, same_submit, sizeof(int64_t) * (size_t)ns);
        view->un = n;
        memcpy(view->uratio, own_v, sizeof(float) * (size_t)n);
        memcpy(view->uweight, own_w, sizeof(float) * (size_t)n);
        memcpy(view->usubmit, own_submit, sizeof(int64_t) * (size_t)n);
        inflight_of(u, job, view);
    }
    f[F_SAME_WMED] = weighted_quantile(same_v, same_w, ns, 0.5f);  /* sorts them */
    f[F_REQ_WMED] = weighted_quantile(req_v, req_w, nr, 0.5f);
    f[F_RATIO_WQ75] = weighted_quantile(own_v, own_w, n, 0.75f);
    f[F_SAME_AGE] = ns ? (float)log2(1.0 + (double)(t - same_newest_submit)) : -1;

    return features_baseline(f);
}

float features_baseline(const float f[NFEAT])
{
    /* The recency-weighted median run of the user's jobs with the same
     * request and size, else the same request. A request the user has not
     * finished before gets the upper quartile of the user's recent
     * run/request ratios, not their median: a new request is more often a
     * long run (KTH-SP2: baseline MAE 1.081 -> 1.034 h; CEA 1.324 -> 1.333).
     * A request last submitted over a day ago is half new: users come back
     * to an old setup for a different campaign (KTH 1.034 -> 1.011 h, CEA
     * 1.333 -> 1.329 h). */
    if (f[F_SAME_WMED] >= 0) {
        float same = f[F_SAME_WMED] > 1 ? 1 : f[F_SAME_WMED];
        if (f[F_SAME_AGE] > SAME_STALE_LOG2 && f[F_RATIO_WQ75] >= 0)
            return 0.5f * same + 0.5f * f[F_RATIO_WQ75];
        return same;
    }
    float r = f[F_REQ_WMED] >= 0 ? f[F_REQ_WMED]
            : f[F_RATIO_WQ75] >= 0 ? f[F_RATIO_WQ75] : BASELINE_NEW_USER;
    return r > 1 ? 1 : r;
}
