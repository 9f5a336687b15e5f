/* tbf_loop: the node agent's side of AdapTBF (adaptbf.h): each period
 * (100 ms) it reads what each local adafsd moved and how long its bucket
 * held requests back (the server's --bandwidth-file FILE.usage), divides
 * the node's storage bandwidth among those servers' jobs with
 * adaptbf_period, and writes each server its rate (FILE: one "* RATE"
 * line, which bounds every client of that server as one job).
 *
 * Demand, from the agent's own counters only: a job its bucket held back
 * wants the whole node (the allocator gives it its due, and whatever
 * others lend); one that was not held back wants what it moved.
 * A lender's bucket keeps its due (a debtor's does not: it pays back at
 * once): what a lender lends is what it does not use,
 * and a job waking from idle must not wait behind a rate cut to what it
 * used while idle. So it has its share at once; its borrowers lose the
 * loan at the next period (the allocator sees it held back or using its
 * due). The node is over-committed only for that one period, and only by
 * what the lender takes back.
 *
 * The files live in a directory the server's user owns (the server writes
 * the usage there); the loop holds that directory open and works through
 * the descriptor, never follows a link, reads a regular file of bounded
 * size and checks every line, so nothing the user puts there makes root
 * read or write anything else. Thread-safe. */
#ifndef ADAFS_TBF_LOOP_H
#define ADAFS_TBF_LOOP_H

#include <stddef.h>
#include <stdint.h>

#define TBF_PERIOD_MS 100
#define TBF_RATES_FILE "rates"

struct tbf_loop;
/* bandwidth: what the node's storage moves, bytes per second (> 0). NULL
 * when out of memory. */
struct tbf_loop *tbf_loop_new(double bandwidth);
/* Stops the thread (if started) and frees. */
void tbf_loop_free(struct tbf_loop *t);

/* A server of job with weight (its node count) whose rates file is
 * TBF_RATES_FILE in dir (its --bandwidth-file). 0, or -errno (dir cannot
 * be opened as a directory, or out of memory). Again for the same job:
 * replaces it. */
int tbf_loop_add(struct tbf_loop *t, uint64_t job, double weight, const char *dir);
void tbf_loop_remove(struct tbf_loop *t, uint64_t job);

/* One period now: read, divide, write. Fills up to max entries of out
 * with what each job did and got; returns the number of jobs. */
struct tbf_loop_job {
    uint64_t job;
    double weight;
    double moved;      /* bytes its server reported for the last period */
    int held;          /* its bucket held requests back then */
    double alloc;      /* bytes it gets this period */
    double lent;       /* this period's lending (< 0: borrowing) */
    double balance;    /* lent minus borrowed so far (decayed) */
};
size_t tbf_loop_period(struct tbf_loop *t, struct tbf_loop_job *out, size_t max);

/* Runs tbf_loop_period every TBF_PERIOD_MS on a thread of its own until
 * tbf_loop_free. 0 or -errno. */
int tbf_loop_start(struct tbf_loop *t);

#endif
