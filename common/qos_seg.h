/* qos_seg: one job's I/O budget on one node, in memory shared by the node
 * agent and every process of the job on that node.
 *
 * The agent creates the segment (a sealed memfd: the job's processes may
 * write it but can neither shrink nor grow it, so the root agent's mapping
 * can never fault) and hands its descriptor to each process that asks over
 * its Unix socket (qos_proto.h). A process maps it and then:
 *   - takes tokens for each call from the class's shared bucket (one
 *     compare-and-swap on a "theoretical arrival time", GCRA), so the job's
 *     processes on the node share one rate and an idle process's share is
 *     used by the others, never wasted;
 *   - counts what it was granted in a slot of its own (no two processes
 *     write the same cache line on the fast path).
 * The agent writes the limits (and bumps gen, which processes watch), beats
 * a heartbeat so processes can tell a live agent from a dead one, frees
 * the slots of processes that died, and sums the slots into the job's
 * usage: monotonic totals, which the controller turns into rates.
 *
 * Nothing here trusts the segment's content: a job's processes can write
 * any value into it (enforcement by LD_PRELOAD is cooperative anyway); the
 * agent bounds what it reads, and only the job itself is affected. */
#ifndef ADAFS_QOS_SEG_H
#define ADAFS_QOS_SEG_H

#include "linknames.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "qos_limits.h"

#define QOS_SEG_MAGIC 0x534f5141u   /* "AQOS" read as little-endian */
#define QOS_SEG_VERSION 1
#define QOS_SEG_SLOTS 256           /* processes of one job on one node */
#define QOS_CACHELINE 64

struct qos_seg_head {
    uint32_t magic, version;
    uint32_t job_id, nslots;
    uint64_t size;                             /* bytes of the whole segment */
    _Atomic uint64_t gen;                      /* bumped after the limits change */
    /* This job on this node, per second: QOS_NOT_GIVEN (the process's own
     * default applies), QOS_UNLIMITED, or a rate. */
    _Atomic uint64_t limit[QOS_NCLASSES];
    _Atomic uint64_t heartbeat_ms;             /* CLOCK_MONOTONIC of the agent's last beat */
    /* CLOCK_MONOTONIC of the controller's last cycle on this agent; 0: no
     * controller has driven it since it started (QoS off, qosd not run),
     * so no limits are coming to wait for. */
    _Atomic uint64_t controlled_ms;
} __attribute__((aligned(QOS_CACHELINE)));

struct qos_seg_bucket {
    _Atomic int64_t next_ns;    /* GCRA: when the bucket is next empty (CLOCK_MONOTONIC) */
} __attribute__((aligned(QOS_CACHELINE)));

struct qos_seg_slot {
    _Atomic int32_t pid;                       /* 0: free */
    _Atomic uint64_t used[QOS_NCLASSES];       /* granted so far (ops or bytes) */
    _Atomic uint64_t waited_ns[QOS_NCLASSES];  /* time spent delayed */
} __attribute__((aligned(QOS_CACHELINE)));

struct qos_seg {
    struct qos_seg_head head;
    struct qos_seg_bucket bucket[QOS_NCLASSES];
    struct qos_seg_slot slot[];
};

static inline size_t qos_seg_size(unsigned nslots)
{
    return sizeof(struct qos_seg) + (size_t)nslots * sizeof(struct qos_seg_slot);
}

/* Fills a fresh segment of size bytes (memory zeroed by the caller). */
void qos_seg_init(struct qos_seg *s, uint32_t job_id, unsigned nslots);

/* --- agent side ------------------------------------------------------ */

/* A new segment in a sealed memfd: *fd (close-on-exec) and its mapping.
 * 0 or -errno. The agent keeps nslots itself and passes it below: the
 * job's processes can write the header's copy (a count past the segment
 * made the root agent read and unmap beyond it). */
int qos_seg_create(uint32_t job_id, unsigned nslots, int *fd, struct qos_seg **seg);
void qos_seg_unmap(struct qos_seg *s, unsigned nslots);

/* Writes limits and bumps gen if any class changed. A class whose rate
 * changed keeps what was reserved ahead of now, rescaled to the new rate
 * (so it takes less time under a higher one, more under a lower one, at
 * most QOS_CARRY_MAX_NS): those tokens were granted and are owed. Returns
 * whether it changed. */
#define QOS_CARRY_MAX_NS 1000000000LL
int qos_seg_set_limits(struct qos_seg *s, const struct qos_limits *l);
/* The agent's beat: alive at now_ms; its controller's last cycle at
 * controlled_ms (0: none yet). */
void qos_seg_beat(struct qos_seg *s, uint64_t now_ms, uint64_t controlled_ms);

/* The job's usage on this node: totals since the segment was made. */
struct qos_usage {
    uint64_t used[QOS_NCLASSES];
    uint64_t waited_ns[QOS_NCLASSES];
    uint32_t procs;                  /* slots in use */
};
/* Frees the slots of processes that no longer exist and sums the rest
 * (nslots: as made). */
void qos_seg_collect(struct qos_seg *s, unsigned nslots, struct qos_usage *u);

/* --- process side ---------------------------------------------------- */

/* Maps a segment received from the agent and checks it is one for job_id
 * whose size matches the descriptor's. 0 or -errno (-EPROTO: not one). */
int qos_seg_map(int fd, uint32_t job_id, struct qos_seg **seg);

/* A free slot for pid, or NULL when all are taken. */
struct qos_seg_slot *qos_seg_claim(struct qos_seg *s, int32_t pid);
void qos_seg_release(struct qos_seg_slot *slot, int32_t pid);

/* GCRA: reserves n tokens of class c at rate (per second) at time now_ns,
 * allowing burst_ns of tokens at once after idleness. Returns how long the
 * caller must wait before using them (0: at once). Lock-free. */
int64_t qos_seg_reserve(struct qos_seg *s, int c, uint64_t rate, uint64_t n, int64_t now_ns,
                        int64_t burst_ns);

#endif
