/* policy: see policy.h. */
#include "policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double cap_asked(const struct policy_job *j, double v)
{
    return j->asked > 0 && v > j->asked ? j->asked : v;
}

static void static_shares(struct policy_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        jobs[i].alloc = jobs[i].asked > 0 ? jobs[i].asked : jobs[i].dflt;
}

static void priority_shares(double capacity, struct policy_job *jobs, size_t n)
{
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += jobs[i].weight > 0 ? jobs[i].weight : 0;
    for (size_t i = 0; i < n; i++) {
        double w = jobs[i].weight > 0 ? jobs[i].weight : 0;
        jobs[i].alloc = cap_asked(&jobs[i], total > 0 ? capacity * w / total : capacity / (double)n);
    }
}

static const double *sort_key;

static int by_key(const void *a, const void *b)
{
    double x = sort_key[*(const uint32_t *)a], y = sort_key[*(const uint32_t *)b];
    return x < y ? -1 : x > y;
}

/* Max-min: each job in increasing order of want takes its want or an
 * equal share of what is left, whichever is less; returns what is left.
 * order holds the jobs' indices sorted by want. */
static double max_min(double left, struct policy_job *jobs, size_t n, const uint32_t *order,
                      const double *want)
{
    for (size_t k = 0; k < n; k++) {
        struct policy_job *j = &jobs[order[k]];
        double share = left / (double)(n - k);
        double w = want[order[k]];
        double take = w < share ? w : share;
        j->alloc += take;
        left -= take;
    }
    return left;
}

/* order: the jobs' indices by increasing want. (qosd is one thread.) */
static void sort_by(const double *want, size_t n, uint32_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    sort_key = want;
    qsort(order, n, sizeof(*order), by_key);
}

/* Reservations (what jobs asked, scaled down together if they overbook)
 * are kept whatever the demand; the rest goes max-min by the demand
 * beyond them, then evenly. No cap: what a job asked is its floor here. */
static void proportional_shares(double capacity, struct policy_job *jobs, size_t n,
                                uint32_t *order, double *want)
{
    double reserved = 0;
    for (size_t i = 0; i < n; i++)
        reserved += jobs[i].asked;
    double scale = reserved > capacity ? capacity / reserved : 1.0, left = capacity;
    for (size_t i = 0; i < n; i++) {
        jobs[i].alloc = jobs[i].asked * scale;
        left -= jobs[i].alloc;
        want[i] = jobs[i].demand > jobs[i].alloc ? jobs[i].demand - jobs[i].alloc : 0;
    }
    sort_by(want, n, order);
    left = max_min(left, jobs, n, order, want);
    for (size_t i = 0; left > 0 && i < n; i++)
        jobs[i].alloc += left / (double)n;
}

static void psfa_shares(double capacity, struct policy_job *jobs, size_t n, uint32_t *order,
                        double *want)
{
    for (size_t i = 0; i < n; i++) {
        jobs[i].alloc = 0;
        want[i] = cap_asked(&jobs[i], jobs[i].demand);
    }
    sort_by(want, n, order);
    double left = max_min(capacity, jobs, n, order, want);
    /* What no demand took: in proportion to usage (evenly if none), to
     * jobs that may take more. Repeated, as a cap may send some back. */
    for (int round = 0; round < 4 && left > capacity * 1e-9; round++) {
        double usage = 0;
        size_t open = 0;
        for (size_t i = 0; i < n; i++)
            if (!(jobs[i].asked > 0 && jobs[i].alloc >= jobs[i].asked)) {
                usage += jobs[i].usage;
                open++;
            }
        if (!open)
            return;
        double given = 0;
        for (size_t i = 0; i < n; i++) {
            struct policy_job *j = &jobs[i];
            if (j->asked > 0 && j->alloc >= j->asked)
                continue;
            double extra = usage > 0 ? left * j->usage / usage : left / (double)open;
            double before = j->alloc;
            j->alloc = cap_asked(j, j->alloc + extra);
            given += j->alloc - before;
        }
        left -= given;
    }
}

void policy_allocate(int policy, double capacity, struct policy_job *jobs, size_t n,
                     uint32_t *order, double *want)
{
    if (n == 0)
        return;
    if (policy == QOS_POLICY_STATIC) {
        static_shares(jobs, n);
        return;
    }
    if (isinf(capacity)) {
        /* No capacity for this class: nothing to share, only what jobs asked. */
        for (size_t i = 0; i < n; i++)
            jobs[i].alloc = jobs[i].asked > 0 ? jobs[i].asked : INFINITY;
        return;
    }
    switch (policy) {
    case QOS_POLICY_PRIORITY: priority_shares(capacity, jobs, n); break;
    case QOS_POLICY_PROPORTIONAL: proportional_shares(capacity, jobs, n, order, want); break;
    default: psfa_shares(capacity, jobs, n, order, want); break;
    }
}
