/* bucket: per-job token buckets that bound the bytes a job moves through
 * this server (AdapTBF's enforcement; the node agent decides the rates,
 * agent/agentd/adaptbf.h).
 *
 * A job's bucket fills at its rate up to one period's worth (the burst) and
 * each request takes its bytes from it; a request that finds too few waits
 * until its bytes would have come in (the bucket may go below zero: the
 * next request of that job waits out the debt). Jobs without a rate are not
 * bounded. The rates come from a file the agent rewrites each period, one
 * "JOB BYTES_PER_SECOND" a line (job 0: the instance's own job; "*": the
 * jobs without a line of their own, all in one bucket, which is how the
 * agent bounds a server that serves one job whatever its clients are
 * counted as: job 0 over TCP, the Slurm job on the node); what each
 * job moved and how long it was held back, in total so far, go to
 * FILE.usage in the same form plus the wait ("JOB BYTES WAITED_NS",
 * rewritten every half period while requests come), so the agent can tell demand
 * from use.
 *
 * Thread-safe; times are CLOCK_MONOTONIC nanoseconds passed in, so the
 * arithmetic is tested without a clock. */
#ifndef ADAFSD_BUCKET_H
#define ADAFSD_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#define BUCKET_PERIOD_NS 100000000   /* 100 ms: AdapTBF's period */

struct buckets;
struct buckets *buckets_new(void);
void buckets_free(struct buckets *b);

#define BUCKETS_ALL UINT64_MAX   /* the "*" line's bucket */

/* Sets job's rate in bytes per second (0: unbounded). 0 or -ENOMEM. */
int buckets_set(struct buckets *b, uint64_t job, double rate, int64_t now_ns);
/* Takes bytes of job's bucket at now_ns; returns how long the request
 * must wait first (0: none), which is counted as the job's wait. */
int64_t buckets_charge(struct buckets *b, uint64_t job, uint64_t bytes, int64_t now_ns);

struct bucket_usage {
    uint64_t job;
    uint64_t bytes;
    int64_t waited_ns;
};
/* Up to max jobs' use so far (totals since the server started, so a
 * reader that looks at other moments than the writer loses nothing: it
 * takes differences); returns how many. */
size_t buckets_usage(struct buckets *b, struct bucket_usage *out, size_t max);

/* Reads the rates file at path: jobs listed get their rates, the others
 * none. 0, or -errno (-EINVAL for a line that is not "JOB RATE"). */
int buckets_load(struct buckets *b, const char *path, int64_t now_ns);

#endif
