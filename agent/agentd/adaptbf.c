/* adaptbf: the per-period division of a node's storage bandwidth (see
 * adaptbf.h). Every phase moves tokens from some jobs' dues to others'
 * and records the same total on both sides (lent), so the balances keep
 * summing to zero. */
#include "adaptbf.h"

static double min2(double a, double b)
{
    return a < b ? a : b;
}

static double pos(double a)
{
    return a > 0 ? a : 0;
}

void adaptbf_period(double capacity, struct adaptbf_job *jobs, size_t n)
{
    double weights = 0;
    for (size_t i = 0; i < n; i++)
        weights += pos(jobs[i].weight);
    if (n == 0 || weights <= 0)
        return;
    /* Dues, and what each can spare or needs beyond its due. */
    double claims = 0, can_total = 0;
    for (size_t i = 0; i < n; i++) {
        struct adaptbf_job *j = &jobs[i];
        double want = pos(j->want);
        j->due = capacity * pos(j->weight) / weights;
        j->spare = pos(j->due - want);
        j->need = pos(want - j->due);
        j->lent = 0;
        j->balance *= ADAPTBF_DECAY;
        if (j->balance > 0)
            claims += min2(j->need, j->balance);
        else if (j->balance < 0)   /* a debtor keeps at least half its due */
            can_total += min2(-j->balance, j->due - min2(want, j->due / 2));
    }
    /* Repayment: lenders that need more than their due take back what is
     * owed them, from the debtors in proportion to what each can give. */
    double repaid = min2(claims, can_total);
    for (size_t i = 0; i < n && repaid > 0; i++) {
        struct adaptbf_job *j = &jobs[i];
        if (j->balance > 0 && j->need > 0) {
            double got = repaid * min2(j->need, j->balance) / claims;
            j->need -= got;
            j->lent -= got;
        } else if (j->balance < 0) {
            double can = min2(-j->balance, j->due - min2(pos(j->want), j->due / 2));
            double gave = repaid * can / can_total;
            j->spare = pos(j->spare - gave);
            j->lent += gave;
        }
    }
    /* Lending: what jobs spare goes to those that need more, by weight,
     * none beyond its need (water-filling: a few rounds settle it). */
    double pool = 0;
    for (size_t i = 0; i < n; i++)
        pool += jobs[i].spare;
    double left = pool;
    for (int round = 0; round < 16 && left > pool * 1e-9; round++) {
        double w_needy = 0;
        for (size_t i = 0; i < n; i++)
            if (jobs[i].need > 0)
                w_needy += pos(jobs[i].weight);
        if (w_needy <= 0)
            break;
        double given = 0;
        for (size_t i = 0; i < n; i++) {
            struct adaptbf_job *j = &jobs[i];
            if (j->need <= 0)
                continue;
            double b = min2(j->need, left * pos(j->weight) / w_needy);
            j->need -= b;
            j->lent -= b;
            given += b;
        }
        left -= given;
        if (given <= 0)
            break;
    }
    double borrowed = pool - left;
    for (size_t i = 0; i < n; i++) {
        struct adaptbf_job *j = &jobs[i];
        if (pool > 0)
            j->lent += borrowed * j->spare / pool;
        j->balance += j->lent;
        j->alloc = j->due - j->lent;
    }
}

void adaptbf_simulate(double capacity, struct adaptbf_job *jobs, size_t n, const double *demand,
                      double *seen, double *served)
{
    for (size_t i = 0; i < n; i++)
        jobs[i].want = seen[i];
    adaptbf_period(capacity, jobs, n);
    for (size_t i = 0; i < n; i++) {
        served[i] = min2(demand[i], jobs[i].alloc);
        seen[i] = demand[i] > jobs[i].alloc ? demand[i] : served[i];
    }
}

double adaptbf_jain(const double *x, size_t n)
{
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        s2 += x[i] * x[i];
    }
    return s2 > 0 ? s * s / ((double)n * s2) : 1;
}
