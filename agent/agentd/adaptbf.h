/* adaptbf: how a node agent divides its node's storage bandwidth among the
 * jobs whose servers share it, each period (AdapTBF: decentralised token
 * borrowing). Plain arithmetic, no I/O: the agent feeds it the counters of
 * its own node and hands the results to each job's adafsd bucket.
 *
 * Each period (100 ms) the node's capacity C (bytes per period) is split
 * by weight (a job's node count): job i's due is C x w_i / sum w. Then:
 *  - lending: a job that wants less than its due lends the rest; jobs that
 *    want more borrow it, by weight, up to what they want;
 *  - repayment: a job that lent earlier and now wants more than its due
 *    takes back up to what it is owed, from the jobs that owe (in
 *    proportion to their debts; a debtor keeps at least half its due);
 *  - what a job does not want and nobody borrows stays in its bucket.
 * So a job's allocation is its due less what it lent (or plus what it
 * borrowed) this period.
 * Every transfer moves the same amount between a lender's and a borrower's
 * balance (lent minus borrowed), so the balances always sum to zero; they
 * decay by a fixed factor each period (which keeps the sum at zero), so an
 * old debt does not weigh on a job for ever.
 *
 * Cost: O(n) per period with a few passes, no allocation (well under the
 * paper's 30 us per job). */
#ifndef ADAFS_ADAPTBF_H
#define ADAFS_ADAPTBF_H

#include <stddef.h>
#include <stdint.h>

struct adaptbf_job {
    uint64_t id;
    double weight;    /* in: its node count (> 0) */
    double want;      /* in: bytes it would move this period if let */
    double due;       /* out: its weighted part of the capacity */
    double alloc;     /* out: bytes its bucket gets this period */
    double lent;      /* out: this period's lending (< 0: borrowing) */
    double balance;   /* kept: lent minus borrowed so far, decayed */
    double spare, need;   /* the allocator's scratch */
};

/* The balance kept of the last period's, each period. */
#define ADAPTBF_DECAY 0.98

/* One period: fills due, alloc and lent of the n jobs and updates their
 * balances. capacity: bytes the node's storage moves in a period. */
void adaptbf_period(double capacity, struct adaptbf_job *jobs, size_t n);

/* One period of a simulation (tests, benchmarks): jobs whose demand this
 * period is demand[i], which the allocator sees one period late, as the
 * agent does from its counters: their want is seen[i] (what they were
 * seen to want last period), then seen[i] becomes what they show now (a
 * job held back shows its whole demand, one that was not what it moved)
 * and served[i] what they moved. */
void adaptbf_simulate(double capacity, struct adaptbf_job *jobs, size_t n, const double *demand,
                      double *seen, double *served);

/* Jain's fairness index of x[0..n) (1: all equal). */
double adaptbf_jain(const double *x, size_t n);

#endif
