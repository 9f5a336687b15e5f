#include "easy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct run { size_t job; int64_t start, end, planned; long procs; };

struct sim {
    const struct walltime_trace *t;
    const double *est;
    long free_procs;
    struct run *running;
    size_t nrun;
    size_t *queue;
    size_t qhead, qlen;
    int64_t *start;             /* per job */
    struct run *sorted;         /* scratch for the reservation */
};

static long procs_of(const struct walltime_job *j)
{
    return j->procs > 0 ? (long)j->procs : 1;
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

static void start_job(struct sim *s, size_t i, int64_t now)
{
    const struct walltime_job *j = &s->t->jobs[i];
    s->running[s->nrun++] = (struct run){
        i, now, now + real_run(j), now + estimate_of(s, i), procs_of(j) };
    s->free_procs -= procs_of(j);
    s->start[i] = now;
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
    while (s->qlen && procs_of(&s->t->jobs[q[0]]) <= s->free_procs) {
        start_job(s, q[0], now);
        q++;
        s->qhead++;
        s->qlen--;
    }
    if (!s->qlen)
        return;
    /* Reservation for the head: when do enough processors free up? */
    long need = procs_of(&s->t->jobs[q[0]]), avail = s->free_procs;
    for (size_t k = 0; k < s->nrun; k++) {
        struct run r = s->running[k];
        if (r.planned <= now)   /* outlived its estimate: until the request */
            r.planned = r.start + s->t->jobs[r.job].req_time;
        if (r.planned <= now)
            r.planned = now + 1;
        s->sorted[k] = r;
    }
    qsort(s->sorted, s->nrun, sizeof(*s->sorted), cmp_planned);
    int64_t shadow = now;
    for (size_t k = 0; k < s->nrun && avail < need; k++) {
        avail += s->sorted[k].procs;
        shadow = s->sorted[k].planned;
    }
    long extra = avail - need;
    /* Backfill: later jobs that do not delay the reservation. */
    size_t kept = 1;
    for (size_t k = 1; k < s->qlen; k++) {
        size_t i = q[k];
        long p = procs_of(&s->t->jobs[i]);
        int ends_before = now + estimate_of(s, i) <= shadow;
        if (p <= s->free_procs && (ends_before || p <= extra)) {
            start_job(s, i, now);
            if (!ends_before)
                extra -= p;
        } else {
            q[kept++] = i;
        }
    }
    s->qlen = kept;
}

int easy_simulate(const struct walltime_trace *t, const double *est,
                  long machine, struct easy_result *out)
{
    memset(out, 0, sizeof(*out));
    struct sim s = { .t = t, .est = est };
    s.running = malloc((t->n + 1) * sizeof(*s.running));
    s.sorted = malloc((t->n + 1) * sizeof(*s.sorted));
    s.queue = malloc((t->n + 1) * sizeof(*s.queue));
    s.start = malloc((t->n + 1) * sizeof(*s.start));
    if (!s.running || !s.sorted || !s.queue || !s.start) {
        free(s.running);
        free(s.sorted);
        free(s.queue);
        free(s.start);
        return -ENOMEM;
    }
    long largest = 1;
    for (size_t i = 0; i < t->n; i++)
        if (procs_of(&t->jobs[i]) > largest)
            largest = procs_of(&t->jobs[i]);
    s.free_procs = machine > largest ? machine : largest;

    size_t next = 0;
    for (;;) {
        /* Skip jobs that cannot be simulated. */
        while (next < t->n && (isnan(est[next]) || t->jobs[next].req_time <= 0 ||
                               t->jobs[next].run_time < 0))
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
            if (s.running[k].end <= now) {
                s.free_procs += s.running[k].procs;
                s.running[k] = s.running[--s.nrun];
            } else {
                k++;
            }
        }
        while (next < t->n && t->jobs[next].submit_time <= now) {
            if (!isnan(est[next]) && t->jobs[next].req_time > 0 && t->jobs[next].run_time >= 0)
                s.queue[s.qhead + s.qlen++] = next;
            next++;
        }
        schedule(&s, now);
    }

    double wait = 0, bsld = 0;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct walltime_job *j = &t->jobs[i];
        if (isnan(est[i]) || j->req_time <= 0 || j->run_time < 0)
            continue;
        double w = (double)(s.start[i] - j->submit_time), r = (double)real_run(j);
        double sd = (w + r) / (r > 10 ? r : 10);
        wait += w;
        bsld += sd > 1 ? sd : 1;
        n++;
    }
    out->jobs = n;
    out->avg_wait_s = n ? wait / (double)n : NAN;
    out->avg_bounded_slowdown = n ? bsld / (double)n : NAN;
    free(s.running);
    free(s.sorted);
    free(s.queue);
    free(s.start);
    return 0;
}
