#include "easy.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct run {
    size_t job;
    int64_t start, end, planned;
    long nodes;
    size_t first;               /* its node list in sim.pool */
};

struct sim {
    const struct walltime_trace *t;
    const double *est;
    long cpn;                   /* cores per node */
    long nnodes, free_nodes;
    int *owner;                 /* per node: the job on it, or -1 */
    int *pool;                  /* node lists of started jobs */
    size_t pool_used;
    struct run *running;
    size_t nrun;
    size_t *queue;
    size_t qhead, qlen;
    int64_t *start;             /* per job */
    struct run *sorted;         /* scratch for the reservation */
    /* Node allocation prediction (NULL when not asked for). */
    double *nap;
    uint64_t *plan;             /* per job: hash of its planned nodes, 0 none */
    int64_t *since;             /* per job: since when the plan is unchanged */
    int64_t *avail, *scratch;   /* per node, for planning */
    int *chosen;
};

static long nodes_of(const struct sim *s, const struct walltime_job *j)
{
    long procs = j->procs > 0 ? (long)j->procs : 1;
    return (procs + s->cpn - 1) / s->cpn;
}

static int64_t real_run(const struct walltime_job *j)
{
    return j->run_time < j->req_time ? j->run_time : j->req_time;
}

static int64_t estimate_of(const struct sim *s, size_t i)
{
    double e = s->est[i];
    int64_t v = (int64_t)ceil(e);
    return v < 1 ? 1 : v;
}

/* FNV-1a over a node list in increasing order: equal lists, equal hashes
 * (0 is kept for "no plan"). */
static uint64_t hash_nodes(const int *nodes, long n)
{
    uint64_t h = 1469598103934665603ull;
    for (long k = 0; k < n; k++) {
        h ^= (uint64_t)(uint32_t)nodes[k];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

/* When a running job's nodes are expected free: its planned end, or its
 * request if it outlived the estimate, and never before now + 1. */
static int64_t expected_end(const struct sim *s, const struct run *r, int64_t now)
{
    int64_t planned = r->planned;
    if (planned <= now)
        planned = r->start + s->t->jobs[r->job].req_time;
    return planned <= now ? now + 1 : planned;
}

static void start_job(struct sim *s, size_t i, int64_t now)
{
    const struct walltime_job *j = &s->t->jobs[i];
    long n = nodes_of(s, j);
    struct run r = { i, now, now + real_run(j), now + estimate_of(s, i), n, s->pool_used };
    for (long node = 0, got = 0; got < n; node++)
        if (s->owner[node] < 0) {
            s->owner[node] = (int)i;
            s->pool[s->pool_used + (size_t)got++] = (int)node;
        }
    s->pool_used += (size_t)n;
    s->running[s->nrun++] = r;
    s->free_nodes -= n;
    s->start[i] = now;
    if (s->nap) {
        uint64_t got = hash_nodes(&s->pool[r.first], n);
        s->nap[i] = s->plan[i] == got && s->since[i] >= 0 ? (double)(now - s->since[i]) : 0;
    }
}

static void finish_job(struct sim *s, size_t k)
{
    struct run *r = &s->running[k];
    for (long x = 0; x < r->nodes; x++)
        s->owner[s->pool[r->first + (size_t)x]] = -1;
    s->free_nodes += r->nodes;
    s->running[k] = s->running[--s->nrun];
}

static int cmp_planned(const void *a, const void *b)
{
    const struct run *x = a, *y = b;
    return (x->planned > y->planned) - (x->planned < y->planned);
}

static void schedule(struct sim *s, int64_t now)
{
    size_t *q = s->queue + s->qhead;
    /* First come, first served while the head fits. */
    while (s->qlen && nodes_of(s, &s->t->jobs[q[0]]) <= s->free_nodes) {
        start_job(s, q[0], now);
        q++;
        s->qhead++;
        s->qlen--;
    }
    if (!s->qlen)
        return;
    /* Reservation for the head: when do enough nodes free up? */
    long need = nodes_of(s, &s->t->jobs[q[0]]), avail = s->free_nodes;
    for (size_t k = 0; k < s->nrun; k++) {
        s->sorted[k] = s->running[k];
        s->sorted[k].planned = expected_end(s, &s->running[k], now);
    }
    qsort(s->sorted, s->nrun, sizeof(*s->sorted), cmp_planned);
    int64_t shadow = now;
    for (size_t k = 0; k < s->nrun && avail < need; k++) {
        avail += s->sorted[k].nodes;
        shadow = s->sorted[k].planned;
    }
    long extra = avail - need;
    /* Backfill: later jobs that do not delay the reservation. */
    size_t kept = 1;
    for (size_t k = 1; k < s->qlen; k++) {
        size_t i = q[k];
        long p = nodes_of(s, &s->t->jobs[i]);
        int ends_before = now + estimate_of(s, i) <= shadow;
        if (p <= s->free_nodes && (ends_before || p <= extra)) {
            start_job(s, i, now);
            if (!ends_before)
                extra -= p;
        } else {
            q[kept++] = i;
        }
    }
    s->qlen = kept;
}

/* The k-th smallest of v[0..n) (v is permuted). */
static int64_t kth_smallest(int64_t *v, long n, long k)
{
    long lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = v[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                int64_t t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* The plan after an event: the first EASY_PLAN_JOBS queued jobs, in order,
 * each on the lowest-numbered nodes among those expected free earliest. A
 * job whose planned node list changed (or that has no plan any more)
 * starts counting again. */
static void plan(struct sim *s, int64_t now)
{
    for (long node = 0; node < s->nnodes; node++)
        s->avail[node] = now;
    for (size_t k = 0; k < s->nrun; k++) {
        const struct run *r = &s->running[k];
        int64_t end = expected_end(s, r, now);
        for (long x = 0; x < r->nodes; x++)
            s->avail[s->pool[r->first + (size_t)x]] = end;
    }
    for (size_t k = 0; k < s->qlen; k++) {
        size_t i = s->queue[s->qhead + k];
        if (k >= EASY_PLAN_JOBS) {
            s->plan[i] = 0;
            continue;
        }
        long n = nodes_of(s, &s->t->jobs[i]);
        memcpy(s->scratch, s->avail, (size_t)s->nnodes * sizeof(int64_t));
        int64_t at = kth_smallest(s->scratch, s->nnodes, n - 1);
        long got = 0;
        for (long node = 0; node < s->nnodes && got < n; node++)
            if (s->avail[node] <= at)
                s->chosen[got++] = (int)node;
        for (long x = 0; x < got; x++)
            s->avail[s->chosen[x]] = at + estimate_of(s, i);
        uint64_t h = hash_nodes(s->chosen, got);
        if (h != s->plan[i]) {
            s->plan[i] = h;
            s->since[i] = now;
        }
    }
}

static void sim_free(struct sim *s)
{
    free(s->owner);
    free(s->pool);
    free(s->running);
    free(s->sorted);
    free(s->queue);
    free(s->start);
    free(s->plan);
    free(s->since);
    free(s->avail);
    free(s->scratch);
    free(s->chosen);
}

static int skipped(const struct sim *s, size_t i)
{
    const struct walltime_job *j = &s->t->jobs[i];
    return isnan(s->est[i]) || j->req_time <= 0 || j->run_time < 0;
}

int easy_simulate(const struct walltime_trace *t, const double *est, long machine,
                  long cores_per_node, struct easy_result *out, double *nap)
{
    memset(out, 0, sizeof(*out));
    struct sim s = { .t = t, .est = est, .cpn = cores_per_node > 0 ? cores_per_node : 1,
                     .nap = nap };
    long largest = 1;
    size_t pool = 1;
    for (size_t i = 0; i < t->n; i++) {
        long n = nodes_of(&s, &t->jobs[i]);
        largest = n > largest ? n : largest;
        pool += skipped(&s, i) ? 0 : (size_t)n;
    }
    long machine_nodes = machine > 0 ? (machine + s.cpn - 1) / s.cpn : 0;
    s.nnodes = s.free_nodes = machine_nodes > largest ? machine_nodes : largest;
    s.owner = malloc((size_t)s.nnodes * sizeof(*s.owner));
    s.pool = malloc(pool * sizeof(*s.pool));
    s.running = malloc((t->n + 1) * sizeof(*s.running));
    s.sorted = malloc((t->n + 1) * sizeof(*s.sorted));
    s.queue = malloc((t->n + 1) * sizeof(*s.queue));
    s.start = malloc((t->n + 1) * sizeof(*s.start));
    int ok = s.owner && s.pool && s.running && s.sorted && s.queue && s.start;
    if (nap) {
        s.plan = calloc(t->n + 1, sizeof(*s.plan));
        s.since = malloc((t->n + 1) * sizeof(*s.since));
        s.avail = malloc((size_t)s.nnodes * sizeof(*s.avail));
        s.scratch = malloc((size_t)s.nnodes * sizeof(*s.scratch));
        s.chosen = malloc((size_t)s.nnodes * sizeof(*s.chosen));
        ok = ok && s.plan && s.since && s.avail && s.scratch && s.chosen;
    }
    if (!ok) {
        sim_free(&s);
        return -ENOMEM;
    }
    for (long node = 0; node < s.nnodes; node++)
        s.owner[node] = -1;
    for (size_t i = 0; nap && i < t->n; i++) {
        s.since[i] = -1;
        nap[i] = NAN;
    }

    size_t next = 0;
    for (;;) {
        while (next < t->n && skipped(&s, next))
            next++;
        int64_t now = INT64_MAX;
        for (size_t k = 0; k < s.nrun; k++)
            if (s.running[k].end < now)
                now = s.running[k].end;
        if (next < t->n && t->jobs[next].submit_time < now)
            now = t->jobs[next].submit_time;
        if (now == INT64_MAX)
            break;
        for (size_t k = 0; k < s.nrun;) {
            if (s.running[k].end <= now)
                finish_job(&s, k);
            else
                k++;
        }
        while (next < t->n && t->jobs[next].submit_time <= now) {
            if (!skipped(&s, next))
                s.queue[s.qhead + s.qlen++] = next;
            next++;
        }
        schedule(&s, now);
        if (nap)
            plan(&s, now);
    }

    double wait = 0, bsld = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct walltime_job *j = &t->jobs[i];
        if (skipped(&s, i))
            continue;
        double w = (double)(s.start[i] - j->submit_time), r = (double)real_run(j);
        double sd = (w + r) / (r > 10 ? r : 10);
        wait += w;
        bsld += sd > 1 ? sd : 1;
        n++;
        if (!nap)
            continue;
        if (w <= 0)
            out->nap.at_once++;
        else if (nap[i] <= 1)
            out->nap.le_1s++;
        else if (nap[i] <= 600)
            out->nap.le_10min++;
        else
            out->nap.gt_10min++;
    }
    out->jobs = n;
    out->avg_wait_s = n ? wait / (double)n : NAN;
    out->avg_bounded_slowdown = n ? bsld / (double)n : NAN;
    sim_free(&s);
    return 0;
}
