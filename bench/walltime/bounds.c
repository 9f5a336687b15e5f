/* walltime_bounds: how low the MAE of a run-time predictor can go on a
 * trace, measured with hindsight oracles (they know every job's real run
 * time), for the two accuracy targets of issue 7.
 *
 *   walltime_bounds TRACE.swf [UNDER_RATE]      (default 0.05)
 *
 * Jobs are split into classes (same user and request; same user, request
 * and size; ...). For each class the oracle picks, after the fact, the
 * estimate that is best for the whole class:
 *   - median: the class's median run time (the MAE-optimal constant);
 *   - conservative: per class an estimate >= all but k_c of its run times,
 *     with sum k_c <= UNDER_RATE x jobs, minimising the total absolute
 *     error. Solved by Lagrangian relaxation: the dual value is a proven
 *     lower bound of the optimum, and the choice at the final multiplier is
 *     a feasible solution, printed too (their closeness shows the bound is
 *     tight).
 * An oracle is a lower bound for every predictor that gives all jobs of a
 * class the same estimate. The "finished" classes also split a group each
 * time a job finishes (one of the user's, or any job), so they bound every
 * predictor whose inputs are the job's user, request and size plus the
 * user's (or all) jobs finished by its submit time, adaptive ones included;
 * not predictors that also use the submit time itself (hour, gaps).
 *
 * A second table lets the oracle choose, per class, the best of a family of
 * 81 online rules that only use the user's finished jobs (a recency-weighted
 * quantile of the run times of the same request and size, else of the same
 * request, else of all run/request ratios, times a multiplier; or the
 * request): a bound for "the right history rule for each user or group".
 *
 * Same job set and the same "finished by its submit" order as the replay of
 * `adafs-walltime evaluate`: jobs without a request or run time are skipped
 * and never become history. */
#include "walltime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST 64                 /* finished jobs per user the rules look at */
#define KEYS 5                  /* uid, req, procs, user finished, all finished */
enum { K_UID, K_REQ, K_PROCS, K_FIN_USER, K_FIN_ALL };

struct row {
    int64_t key[KEYS];
    double run, req;
};

struct option { double cost; long under; };

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "walltime_bounds: out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

/* ---- the replay's order: which jobs had finished when each was submitted */

struct ended { int64_t end; size_t i; };

static int ended_before(const struct ended *a, const struct ended *b)
{
    return a->end < b->end || (a->end == b->end && a->i < b->i);
}

static void heap_push(struct ended *h, size_t *n, struct ended x)
{
    size_t k = (*n)++;
    for (; k && ended_before(&x, &h[(k - 1) / 2]); k = (k - 1) / 2)
        h[k] = h[(k - 1) / 2];
    h[k] = x;
}

static struct ended heap_pop(struct ended *h, size_t *n)
{
    struct ended top = h[0], last = h[--*n];
    size_t k = 0;
    for (size_t c; (c = 2 * k + 1) < *n; k = c) {
        if (c + 1 < *n && ended_before(&h[c + 1], &h[c]))
            c++;
        if (!ended_before(&h[c], &last))
            break;
        h[k] = h[c];
    }
    if (*n)
        h[k] = last;
    return top;
}

static int eligible(const struct walltime_job *j)
{
    return j->req_time > 0 && j->run_time >= 0 && j->submit_time >= 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Numbers the trace's users 0..N-1 (user[i] for job i); returns N. */
static size_t number_users(const struct walltime_trace *t, size_t *user)
{
    int64_t *uids = xcalloc(t->n, sizeof(*uids));
    size_t nu = 0;
    for (size_t i = 0; i < t->n; i++)
        uids[i] = t->jobs[i].uid;
    qsort(uids, t->n, sizeof(*uids), cmp_i64);
    for (size_t i = 0; i < t->n; i++)
        if (nu == 0 || uids[nu - 1] != uids[i])
            uids[nu++] = uids[i];
    for (size_t i = 0; i < t->n; i++)
        user[i] = (size_t)((int64_t *)bsearch(&t->jobs[i].uid, uids, nu, sizeof(*uids),
                                              cmp_i64) - uids);
    free(uids);
    return nu;
}

/* ---- the family of history rules ----------------------------------------- */

static const double decays[] = { 0.5, 0.8, 0.92, 1.0 };
static const double quantiles[] = { 0.5, 0.75, 0.9, 1.0 };
static const double multipliers[] = { 1, 1.25, 1.5, 2, 3 };
#define ND (sizeof(decays) / sizeof(decays[0]))
#define NQ (sizeof(quantiles) / sizeof(quantiles[0]))
#define NM (sizeof(multipliers) / sizeof(multipliers[0]))
#define NRULES (ND * NQ * NM + 1)          /* + the request itself */

struct weighted { double v, w; };

static int cmp_weighted(const void *a, const void *b)
{
    double x = ((const struct weighted *)a)->v, y = ((const struct weighted *)b)->v;
    return (x > y) - (x < y);
}

static double weighted_quantile(struct weighted *s, int n, double q)
{
    qsort(s, (size_t)n, sizeof(*s), cmp_weighted);
    double total = 0, acc = 0;
    for (int i = 0; i < n; i++)
        total += s[i].w;
    for (int i = 0; i < n; i++)
        if ((acc += s[i].w) >= q * total)
            return s[i].v;
    return s[n - 1].v;
}

/* Every rule's estimate for job j from the user's finished jobs h[0..n),
 * newest first. */
static void rule_estimates(const struct walltime_job *j, const struct walltime_job *const *h,
                           int n, double *out)
{
    struct weighted same[HIST], byreq[HIST], all[HIST];
    size_t r = 0;
    for (size_t d = 0; d < ND; d++) {
        int ns = 0, nr = 0, na = 0;
        double w = 1;
        for (int k = 0; k < n; k++, w *= decays[d]) {
            double rel = fmin((double)h[k]->run_time / (double)j->req_time, 4);
            if (h[k]->req_time == j->req_time) {
                byreq[nr++] = (struct weighted){ rel, w };
                if (h[k]->procs == j->procs)
                    same[ns++] = (struct weighted){ rel, w };
            }
            all[na++] = (struct weighted){
                fmin((double)h[k]->run_time / (double)h[k]->req_time, 1), w };
        }
        for (size_t q = 0; q < NQ; q++) {
            double ratio = ns ? weighted_quantile(same, ns, quantiles[q])
                         : nr ? weighted_quantile(byreq, nr, quantiles[q])
                         : na ? weighted_quantile(all, na, quantiles[q]) : 1;
            for (size_t m = 0; m < NM; m++)
                out[r++] = fmin(ratio * multipliers[m], 1) * (double)j->req_time;
        }
    }
    out[r] = (double)j->req_time;
}

/* ---- classes ---------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b, void *mask_p)
{
    const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
    unsigned mask = *(const unsigned *)mask_p;
    for (int k = 0; k < KEYS; k++)
        if ((mask >> k) & 1 && x->key[k] != y->key[k])
            return x->key[k] < y->key[k] ? -1 : 1;
    return (x->run > y->run) - (x->run < y->run);
}

/* End of the class that starts at order[a] (order sorted by cmp_rows). */
static size_t class_end(struct row *const *order, size_t n, size_t a, unsigned mask)
{
    size_t b = a + 1;
    for (; b < n; b++)
        for (int k = 0; k < KEYS; k++)
            if ((mask >> k) & 1 && order[a]->key[k] != order[b]->key[k])
                return b;
    return b;
}

/* Options of one class whose run times v[0..n) are sorted and whose jobs
 * share one request: each run time as the estimate (capped at the request),
 * with the number of runs above it and the total absolute error. An option
 * is dropped when one with fewer runs above costs no more. Returns how many
 * were written; *median_cost is the lowest error of any estimate. */
static size_t class_options(struct row *const *v, size_t n, struct option *out,
                            double *median_cost)
{
    double total = 0, below_sum = 0, req = v[0]->req;
    for (size_t i = 0; i < n; i++)
        total += v[i]->run;
    size_t nout = 0, below = 0;
    *median_cost = INFINITY;
    for (size_t i = 0; i < n; i++) {
        double e = fmin(v[i]->run, req);
        if (i > 0 && e == fmin(v[i - 1]->run, req))
            continue;                   /* same estimate as the previous */
        while (below < n && v[below]->run <= e)
            below_sum += v[below++]->run;
        double cost = e * (double)below - below_sum + (total - below_sum) -
                      e * (double)(n - below);
        *median_cost = fmin(*median_cost, cost);
        /* out is in increasing estimate, so decreasing "above", order */
        while (nout && out[nout - 1].cost >= cost)
            nout--;
        out[nout++] = (struct option){ cost, (long)(n - below) };
    }
    return nout;
}

/* Lagrangian relaxation of "min total cost with sum(under) <= budget" over
 * classes, each picking one of its options (opts[start[c]..start[c+1])).
 * *bound is the best dual value (a lower bound), *feasible the cost of the
 * choice at the final multiplier and *under its number of jobs above. */
static void constrained_min(const struct option *opts, const size_t *start, size_t nclass,
                            long budget, double *bound, double *feasible, long *under)
{
    double lo = 0, hi = 1e12;
    *bound = -INFINITY;
    for (int iter = 0; iter < 200; iter++) {
        double lambda = iter == 199 ? hi : (lo + hi) / 2, value = 0, cost = 0;
        long taken = 0;
        for (size_t c = 0; c < nclass; c++) {
            size_t best = start[c];
            for (size_t o = start[c]; o < start[c + 1]; o++)
                if (opts[o].cost + lambda * (double)opts[o].under <
                    opts[best].cost + lambda * (double)opts[best].under)
                    best = o;
            value += opts[best].cost + lambda * (double)opts[best].under;
            cost += opts[best].cost;
            taken += opts[best].under;
        }
        *bound = fmax(*bound, value - lambda * (double)budget);
        if (iter == 199) {
            *feasible = cost;
            *under = taken;
        } else if (taken > budget)
            lo = lambda;
        else
            hi = lambda;
    }
}

/* One table line: the class count, the median oracle's MAE and the
 * conservative oracle's bound and feasible choice, in hours. */
static void print_line(const char *name, size_t nclass, size_t n, double median,
                       const struct option *opts, const size_t *start, long budget)
{
    double bound, feasible;
    long under;
    constrained_min(opts, start, nclass, budget, &bound, &feasible, &under);
    printf("| %-34s | %6zu | %6.3f | %6.3f | %6.3f, %4.1f%% |\n", name, nclass,
           median / (double)n / 3600, bound / (double)n / 3600,
           feasible / (double)n / 3600, 100.0 * (double)under / (double)n);
}

static void hindsight_constants(struct row **order, size_t n, unsigned mask,
                                const char *name, long budget)
{
    qsort_r(order, n, sizeof(*order), cmp_rows, &mask);
    struct option *opts = xcalloc(n, sizeof(*opts));
    size_t *start = xcalloc(n + 1, sizeof(*start));
    size_t nclass = 0, nopt = 0;
    double median = 0;
    for (size_t a = 0, b; a < n; a = b) {
        b = class_end(order, n, a, mask);
        double mc;
        start[nclass++] = nopt;
        nopt += class_options(&order[a], b - a, &opts[nopt], &mc);
        median += mc;
    }
    start[nclass] = nopt;
    print_line(name, nclass, n, median, opts, start, budget);
    free(opts);
    free(start);
}

/* cost[] and under[] hold every rule's error for rows[i] at i * NRULES. */
static void hindsight_rules(struct row *rows, struct row **order, size_t n,
                            const double *cost, const unsigned char *under,
                            unsigned mask, const char *name, long budget)
{
    qsort_r(order, n, sizeof(*order), cmp_rows, &mask);
    size_t nclass = 0;
    for (size_t a = 0; a < n; a = class_end(order, n, a, mask))
        nclass++;
    struct option *opts = xcalloc(nclass * NRULES, sizeof(*opts));
    size_t *start = xcalloc(nclass + 1, sizeof(*start));
    double median = 0;
    size_t c = 0;
    for (size_t a = 0, b; a < n; a = b, c++) {
        b = class_end(order, n, a, mask);
        start[c] = c * NRULES;
        for (size_t r = 0; r < NRULES; r++) {
            struct option *o = &opts[c * NRULES + r];
            for (size_t k = a; k < b; k++) {
                size_t i = (size_t)(order[k] - rows);
                o->cost += cost[i * NRULES + r];
                o->under += under[i * NRULES + r];
            }
        }
        double best = INFINITY;
        for (size_t r = 0; r < NRULES; r++)
            best = fmin(best, opts[c * NRULES + r].cost);
        median += best;
    }
    start[nclass] = nclass * NRULES;
    print_line(name, nclass, n, median, opts, start, budget);
    free(opts);
    free(start);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: walltime_bounds TRACE.swf [UNDER_RATE]\n");
        return 2;
    }
    char *end;
    double rate = argc > 2 ? strtod(argv[2], &end) : 0.05;
    if (argc > 2 && (*end || !(rate >= 0 && rate < 1))) {
        fprintf(stderr, "walltime_bounds: UNDER_RATE must be a number in [0, 1): '%s'\n",
                argv[2]);
        return 2;
    }
    char err[512];
    struct walltime_trace t;
    if (walltime_trace_read(argv[1], WALLTIME_SWF, stderr, &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "walltime_bounds: %s\n", err);
        return 1;
    }

    /* Replay in submit order: pop the jobs that finished by each submit
     * (into their user's history, newest last), then record the job. */
    struct row *rows = xcalloc(t.n, sizeof(*rows));
    struct ended *heap = xcalloc(t.n, sizeof(*heap));
    size_t *user = xcalloc(t.n, sizeof(*user));     /* job -> dense user number */
    size_t nusers = number_users(&t, user);
    /* Each user's finished jobs in end order: list of user u at first[u]. */
    size_t *first = xcalloc(nusers + 1, sizeof(*first));
    size_t *nfin = xcalloc(nusers, sizeof(*nfin));
    const struct walltime_job **fin = xcalloc(t.n, sizeof(*fin));
    for (size_t i = 0; i < t.n; i++)
        first[user[i] + 1]++;
    for (size_t u = 0; u < nusers; u++)
        first[u + 1] += first[u];
    double *cost = xcalloc(t.n * NRULES, sizeof(*cost));
    unsigned char *under = xcalloc(t.n * NRULES, sizeof(*under));
    double est[NRULES], request_err = 0;
    size_t n = 0, nheap = 0, ndone = 0;
    for (size_t i = 0; i < t.n; i++) {
        const struct walltime_job *j = &t.jobs[i];
        while (nheap && heap[0].end <= j->submit_time) {
            size_t d = heap_pop(heap, &nheap).i;
            fin[first[user[d]] + nfin[user[d]]++] = &t.jobs[d];
            ndone++;
        }
        if (!eligible(j))
            continue;
        size_t u = user[i];
        struct row *r = &rows[n];
        r->key[K_UID] = j->uid;
        r->key[K_REQ] = j->req_time;
        r->key[K_PROCS] = j->procs;
        r->key[K_FIN_USER] = (int64_t)nfin[u];
        r->key[K_FIN_ALL] = (int64_t)ndone;
        r->run = (double)j->run_time;
        r->req = (double)j->req_time;
        const struct walltime_job *h[HIST];
        int nh = 0;
        for (size_t k = nfin[u]; k-- > 0 && nh < HIST;)
            h[nh++] = fin[first[u] + k];
        rule_estimates(j, h, nh, est);
        for (size_t q = 0; q < NRULES; q++) {
            cost[n * NRULES + q] = fabs(est[q] - r->run);
            under[n * NRULES + q] = est[q] < r->run;
        }
        request_err += fabs(r->req - r->run);
        n++;
        heap_push(heap, &nheap, (struct ended){
            j->submit_time + (j->wait_time > 0 ? j->wait_time : 0) + j->run_time, i });
    }
    if (n == 0) {
        fprintf(stderr, "walltime_bounds: %s: no job with a requested time and a run time\n",
                argv[1]);
        return 1;
    }
    long budget = (long)(rate * (double)n);
    printf("%s: %zu jobs, request MAE %.3f h, conservative estimates may be below "
           "the run time for %ld jobs (%.1f%%)\n\n", argv[1], n,
           request_err / (double)n / 3600, budget, 100 * rate);

    struct row **order = xcalloc(n, sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = &rows[i];
    const unsigned U = 1u << K_UID, R = 1u << K_REQ, P = 1u << K_PROCS;
    printf("Hindsight: the best constant per class (MAE h; conservative: dual lower "
           "bound, feasible choice and its share below the run time)\n\n"
           "| class | classes | median | conservative bound | conservative feasible |\n"
           "|---|---|---|---|---|\n");
    hindsight_constants(order, n, U | R, "user, request", budget);
    hindsight_constants(order, n, U | R | P, "user, request, procs", budget);
    hindsight_constants(order, n, U | R | P | 1u << K_FIN_USER,
                        "... + the user's jobs finished", budget);
    hindsight_constants(order, n, U | R | P | 1u << K_FIN_ALL,
                        "... + all jobs finished", budget);

    printf("\nHindsight: the best of %zu online history rules per class\n\n"
           "| class | classes | median | conservative bound | conservative feasible |\n"
           "|---|---|---|---|---|\n", (size_t)NRULES);
    hindsight_rules(rows, order, n, cost, under, 0, "one rule for all jobs", budget);
    hindsight_rules(rows, order, n, cost, under, U, "user", budget);
    hindsight_rules(rows, order, n, cost, under, U | R | P, "user, request, procs", budget);

    free(order);
    free(rows);
    free(heap);
    free(user);
    free(first);
    free(nfin);
    free(fin);
    free(cost);
    free(under);
    walltime_trace_free(&t);
    return 0;
}
