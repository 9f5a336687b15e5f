/* qos_client: a process's side of its job's I/O budget on this node.
 *
 * Used by the LD_PRELOAD interposer (agent/preload/qos.c) for every call
 * toward the parallel file system, and by the stager for its copies. The
 * caller classifies a call and charges it: qos_charge(QOS_STAT, 1) before
 * a stat, qos_charge(QOS_WRITE, bytes) after a write. A call is delayed,
 * never failed.
 *
 * Fast path: each thread holds credit per class, granted in leases; a
 * charge that the credit covers is a subtraction and a compare. When it
 * runs out, the slow path takes a new lease from the job's shared budget
 * (qos_seg.h) at the class's limit, sleeping if the budget is spent, and
 * counts the lease in the process's slot. A lease adapts to the thread's
 * own pace (doubling while one lasts under 1 ms, halving when one lasts
 * over 10 ms, from one operation), at most 1 ms of the limit (so idle
 * threads hold back almost nothing of the job's rate) or, without a
 * limit, QOS_LEASE_OPS or QOS_LEASE_BYTES. So the slow path runs at most
 * about a thousand times a second per thread and class, and the counts
 * run ahead of what was done by at most one recent lease per thread.
 *
 * The budget: the job's segment, received from the node agent over its
 * Unix socket the first time a charge needs it. If the agent cannot be
 * reached, or does not know the job yet, the process runs on a private
 * budget at the site's static default and tries the agent again every
 * QOS_RETRY_MS; if the agent dies, the process keeps the last limits it
 * had (fail-static) until a new agent can give it a segment. No call ever
 * waits for the agent longer than QOS_ATTACH_TIMEOUT_MS, once per retry. */
#ifndef ADAFS_QOS_CLIENT_H
#define ADAFS_QOS_CLIENT_H

#include "linknames.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "qos_limits.h"

#define QOS_LEASE_OPS 4096
#define QOS_LEASE_BYTES (64u << 20)
#define QOS_LEASE_NS 1000000           /* a limited lease: 1 ms of the rate */
#define QOS_BURST_NS 20000000          /* what a budget may grant at once after idling */
#define QOS_RETRY_MS 1000
#define QOS_STALE_MS 5000              /* an agent silent this long is gone */
#define QOS_ATTACH_TIMEOUT_MS 200
#define QOS_WAIT_SLICE_NS 20000000     /* a delayed call rechecks its limit this often */

/* The environment of a job's processes (set by the plugin or TaskProlog). */
#define QOS_ENV_PATHS "ADAFS_QOS_PATHS"       /* PFS mount points, ':'/',' separated */
#define QOS_ENV_DEFAULT "ADAFS_QOS_DEFAULT"   /* the static default, qos_limits text */
#define QOS_ENV_SOCKET "ADAFS_QOS_SOCKET"     /* the agent's socket; %n: the node */

struct qos_client_conf {
    uint32_t job_id;             /* 0: no job, a private budget only */
    char socket[108];            /* the agent's attach socket; "" for none */
    struct qos_limits dflt;      /* per node, when no agent gives limits */
};

/* Reads SLURM_JOB_ID, SLURMD_NODENAME, ADAFS_QOS_SOCKET and
 * ADAFS_QOS_DEFAULT. 0, or -EINVAL with the variable named in err (the
 * caller then runs without QoS and says so). */
int qos_client_conf_from_env(struct qos_client_conf *c, char *err, size_t errlen);

/* Starts charging (once per process; later calls do nothing). */
void qos_client_init(const struct qos_client_conf *c);
/* Whether qos_client_init ran: charges count. */
bool qos_client_on(void);

/* Attaches now and waits up to timeout_ms for the controller's first
 * limits in a budget that has none yet: for a process whose first burst
 * would otherwise run unlimited (the stager, started moments after its
 * job). Returns 1 when limits are in force; 0 at once when none are
 * coming (not started, or no controller has driven the agent: QoS off);
 * -ENOTCONN when the agent gave no budget, -ETIMEDOUT when none came in
 * time. Never waits longer. */
int qos_client_await(int timeout_ms);

struct qos_tls {
    int64_t credit[QOS_NCLASSES];      /* the fast path's */
    uint64_t epoch;
    uint64_t lease[QOS_NCLASSES];      /* the slow path's, without a limit */
    int64_t lease_at[QOS_NCLASSES];
};
extern __thread struct qos_tls qos_tls __attribute__((tls_model("initial-exec")));
/* Moves when every thread's credit must be given up: new limits, a new
 * segment, a fork. */
extern _Atomic uint64_t qos_epoch;

void qos_charge_slow(int c, uint64_t n);

/* Charges n operations or bytes of class c, delaying the caller as the
 * budget demands. */
static inline void qos_charge(int c, uint64_t n)
{
    struct qos_tls *t = &qos_tls;
    if (n > INT64_MAX / 2)
        n = INT64_MAX / 2;
    t->credit[c] -= (int64_t)n;
    if (__builtin_expect(t->credit[c] >= 0 &&
                         t->epoch == atomic_load_explicit(&qos_epoch, memory_order_relaxed), 1))
        return;
    qos_charge_slow(c, n);
}

/* What the process runs under now (tests, diagnostics). */
struct qos_client_state {
    bool attached;               /* on the job's shared segment */
    uint64_t limit[QOS_NCLASSES];   /* effective: QOS_UNLIMITED for none */
    uint64_t used[QOS_NCLASSES];    /* this process's slot */
    uint64_t waited_ns[QOS_NCLASSES];
};
void qos_client_state(struct qos_client_state *st);

/* In a child after fork(): a slot of its own, inherited credit dropped. */
void qos_client_after_fork(void);

#endif
