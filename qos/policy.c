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

/* Max-min: each job in increasing order of want takes its want or an
 * equal share of what is left, whichever is less (a job at the floor
 * that grows: the equal share, policy.h); returns what is left.
 * order holds the jobs' indices sorted by want. With capped (psfa), what
 * a job asked bounds the floor's equal share too: a job held at the
 * stat=200 it asked took its equal share of 500 on the mini-cluster. */
static double max_min(double left, struct policy_job *jobs, size_t n, const uint32_t *order,
                      const double *want, bool capped)
{
    for (size_t k = 0; k < n; k++) {
        struct policy_job *j = &jobs[order[k]];
        double share = left / (double)(n - k);
        double w = want[order[k]];
        double take = w < share && !(j->grows && w < share * POLICY_FLOOR) ? w : share;
        if (capped)
            take = cap_asked(j, j->alloc + take) - j->alloc;
        j->alloc += take;
        left -= take;
    }
    return left;
}

/* A double's bits as an unsigned key in the same order. */
static uint64_t order_key(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof(b));
    return b >> 63 ? ~b : b | (1ull << 63);
}

/* order[0..n): the jobs' indices by increasing want, ties by index; a
 * radix sort, a byte at a time (a comparison sort of 1,000 jobs per class
 * was most of a cycle's policy time). order[n..2n) is scratch. */
static void sort_by(const double *want, size_t n, uint32_t *order)
{
    uint32_t *from = order, *to = order + n;
    for (size_t i = 0; i < n; i++)
        from[i] = (uint32_t)i;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t at[257] = { 0 };
        for (size_t i = 0; i < n; i++)
            at[((order_key(want[from[i]]) >> shift) & 0xff) + 1]++;
        if (at[((order_key(want[from[0]]) >> shift) & 0xff) + 1] == n)
            continue;   /* every key has this byte: nothing to move */
        for (int d = 0; d < 256; d++)
            at[d + 1] += at[d];
        for (size_t i = 0; i < n; i++)
            to[at[(order_key(want[from[i]]) >> shift) & 0xff]++] = from[i];
        uint32_t *t = from;
        from = to;
        to = t;
    }
    if (from != order)
        memcpy(order, from, n * sizeof(*order));
}

/* What a job reserves: what it asked, at most the whole capacity. A user
 * may ask any rate (unless the site sets AdafsQosMax): uncapped, one job
 * asking 10^15 would scale every other reservation down to nothing. */
static double reservation(const struct policy_job *j, double capacity)
{
    return j->asked < capacity ? j->asked : capacity;
}

/* Reservations (what jobs asked, scaled down together if they overbook)
 * are kept whatever the demand; the rest goes max-min by the demand
 * beyond them, then evenly. No cap: what a job asked is its floor here. */
static void proportional_shares(double capacity, struct policy_job *jobs, size_t n,
                                uint32_t *order, double *want)
{
    double reserved = 0;
    for (size_t i = 0; i < n; i++)
        reserved += reservation(&jobs[i], capacity);
    double scale = reserved > capacity ? capacity / reserved : 1.0, left = capacity;
    for (size_t i = 0; i < n; i++) {
        jobs[i].alloc = reservation(&jobs[i], capacity) * scale;
        left -= jobs[i].alloc;
        want[i] = jobs[i].demand > jobs[i].alloc ? jobs[i].demand - jobs[i].alloc : 0;
    }
    sort_by(want, n, order);
    left = max_min(left, jobs, n, order, want, false);
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
    double left = max_min(capacity, jobs, n, order, want, true);
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
