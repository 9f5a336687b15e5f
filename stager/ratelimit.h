/* ratelimit: token buckets that protect the parallel file system.
 *
 * One bucket limits metadata operations per second, another bytes per second.
 * The hot path is lock-free: a caller reserves its tokens with one
 * compare-and-swap on a "theoretical arrival time" (GCRA), then sleeps until
 * its reservation is due without holding anything, so other threads keep
 * reserving while it waits. The rate is an atomic and may be changed at any
 * time (a cluster-wide controller will move budgets between jobs); a change
 * applies to reservations made after it. */
#ifndef ADAFS_STAGE_RATELIMIT_H
#define ADAFS_STAGE_RATELIMIT_H

#include <stdatomic.h>
#include <stdint.h>

struct ratelimit {
    _Atomic uint64_t rate;        /* tokens per second; 0 = unlimited */
    _Atomic int64_t next_ns;      /* when the bucket is next empty (CLOCK_MONOTONIC) */
    _Atomic uint64_t burst_ms;    /* tokens that may be taken at once, in ms of rate */
    _Atomic uint64_t taken;       /* tokens granted so far (for reports and tests) */
    /* Also charged to the job's I/O budget toward the PFS (qos_client.h)
     * as this class, so the PFS sees one limit per job; -1: not. */
    int qos_class;
};

/* rate 0 means unlimited. burst_ms is how much idle credit may build up. */
void ratelimit_init(struct ratelimit *rl, uint64_t rate, uint64_t burst_ms);
void ratelimit_set_rate(struct ratelimit *rl, uint64_t rate);
uint64_t ratelimit_rate(const struct ratelimit *rl);

/* Takes n tokens, sleeping until they are due. Never fails; a NULL or
 * unlimited bucket returns at once. Returns the nanoseconds slept. */
int64_t ratelimit_take(struct ratelimit *rl, uint64_t n);
/* The same, charging the job's budget as class cls instead of the
 * bucket's own (if the bucket charges it at all). */
int64_t ratelimit_take_as(struct ratelimit *rl, uint64_t n, int cls);

#endif
