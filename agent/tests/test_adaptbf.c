/* Unit tests of adaptbf: the node's bandwidth divided by weight, lent,
 * borrowed and paid back, period after period, on simulated jobs whose
 * demand the agent sees one period late (as it would from its counters). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptbf.h"
#include "tap.h"

#define C 1000.0   /* bytes per period */

static double balances(const struct adaptbf_job *j, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += j[i].balance;
    return s;
}

static void test_saturating(void)
{
    struct adaptbf_job j[2] = { { .id = 1, .weight = 3 }, { .id = 2, .weight = 1 } };
    double served[2] = { 0, 0 };
    for (int p = 0; p < 50; p++) {
        j[0].want = j[1].want = C;
        adaptbf_period(C, j, 2);
        served[0] += j[0].alloc;
        served[1] += j[1].alloc;
    }
    double ratio = served[0] / served[1];
    double norm[2] = { served[0] / 3, served[1] / 1 };
    tap_ok(fabs(ratio - 3) <= 0.3, "3:1 weights, both saturating: 3:1 bandwidth (%.3f)", ratio);
    tap_ok(adaptbf_jain(norm, 2) >= 0.98, "... Jain index per weight %.4f",
           adaptbf_jain(norm, 2));
}

/* Bursty weight-3 job (5 periods idle, 5 busy) against a continuous
 * weight-1 job. */
static void test_bursty(void)
{
    struct adaptbf_job j[2] = { { .id = 1, .weight = 3 }, { .id = 2, .weight = 1 } };
    double seen[2] = { 0, C };   /* demand of the last period, as counted */
    int gap_ok = 1, burst_ok = 1, zero_ok = 1;
    for (int p = 0; p < 100; p++) {
        int busy = (p / 5) % 2 == 1;
        double demand[2] = { busy ? C : 0, C };
        double served[2];
        adaptbf_simulate(C, j, 2, demand, seen, served);
        int phase = p % 5;   /* periods since the phase began */
        if (!busy && phase >= 1 && served[1] < 0.9 * C) {
            gap_ok = 0;
            printf("# period %d: idle gap, continuous job got %.0f\n", p, served[1]);
        }
        if (busy && phase >= 1 && served[0] < 0.75 * C - 1e-6) {
            burst_ok = 0;
            printf("# period %d: burst, bursty job got %.0f\n", p, served[0]);
        }
        if (fabs(balances(j, 2)) > 1e-6 * C || fabs(j[0].lent + j[1].lent) > 1e-6 * C)
            zero_ok = 0;
    }
    tap_ok(gap_ok, "bursty: the continuous job gets >= 90%% of the node in the other's gaps "
           "within 2 periods");
    tap_ok(burst_ok, "bursty: the bursty job gets its share within 2 periods of a burst");
    tap_ok(zero_ok, "bursty: lending and borrowing records sum to zero every period");
}

/* Repayment: a lender that comes back gets more than its due while it is
 * owed, and the debtor keeps at least half of its own. */
static void test_repayment(void)
{
    struct adaptbf_job j[2] = { { .id = 1, .weight = 1 }, { .id = 2, .weight = 1 } };
    for (int p = 0; p < 10; p++) {
        j[0].want = 0;
        j[1].want = C;
        adaptbf_period(C, j, 2);
    }
    tap_ok(j[0].balance > 0 && j[1].balance < 0, "a job that lent is owed (%.0f)", j[0].balance);
    j[0].want = j[1].want = C;
    adaptbf_period(C, j, 2);
    tap_ok(j[0].alloc > C / 2 && j[1].alloc >= C / 4 - 1e-9, "the lender is paid back (%.0f), "
           "the debtor keeps half its due (%.0f)", j[0].alloc, j[1].alloc);
    for (int p = 0; p < 200; p++)
        adaptbf_period(C, j, 2);
    tap_ok(fabs(j[0].alloc - C / 2) < C * 0.01, "once repaid, both get their due again (%.0f)",
           j[0].alloc);
}

static void test_random(void)
{
    enum { N = 200 };
    static struct adaptbf_job j[N];
    srand(7);
    for (int i = 0; i < N; i++)
        j[i] = (struct adaptbf_job){ .id = (uint64_t)i, .weight = 1 + rand() % 16 };
    int ok = 1;
    for (int p = 0; p < 500 && ok; p++) {
        for (int i = 0; i < N; i++)
            j[i].want = rand() % 3 == 0 ? 0 : (double)(rand() % 40);
        adaptbf_period(C, j, N);
        double total = 0, wanted = 0;
        for (int i = 0; i < N; i++) {
            total += j[i].alloc;
            wanted += fmin(j[i].want, j[i].alloc);
            ok &= j[i].alloc >= -1e-9;
        }
        ok &= fabs(total - C) < 1e-6 * C && fabs(balances(j, N)) < 1e-6 * C;
        if (!ok)
            printf("# period %d: total %.6f, balances %.9f\n", p, total, balances(j, N));
    }
    tap_ok(ok, "200 jobs, random demands: allocations >= 0 sum to the capacity, balances to 0");
}

int main(void)
{
    test_saturating();
    test_bursty();
    test_repayment();
    test_random();
    return tap_done();
}
