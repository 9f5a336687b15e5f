/* lifecycle: drives one job's instance through deploy, stage-in, stage-out
 * and teardown, as sets of requests to the agents on its nodes.
 *
 * Plain C behind a small transport (struct lc_transport: common/agent_link
 * on a cluster, a stand-in in the unit tests). lifecycle_step() never
 * waits: it hands a set of requests (one per node) to the transport and
 * returns; when the last answer of the set is in, the set calls
 * lc_env.ready, and the caller steps the job again to act on the answers.
 * So a job's slow or dead node delays that job only. A stage is watched,
 * not polled: each worker's WATCH is answered when its stager ends (or
 * after a hold, and is then sent again by the set itself, without a step).
 *
 * All progress is in struct bb_job, which the caller saves when a step
 * says LC_CHANGED; the set in flight is not saved: after a slurmctld
 * restart the step is taken again (every request may be repeated: a START
 * again answers as the first, a STAGE of a stage running is watched).
 *
 * The caller serialises everything done to one job (its table lock):
 * steps, ends, cancels, freeing. Answers arrive on the transport's thread
 * and touch only their set. */
#ifndef ADAFS_LIFECYCLE_H
#define ADAFS_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "agent_link.h"
#include "bb_config.h"
#include "bb_job.h"

/* What the shim must do to the Slurm job after a step (a bit mask). */
#define LC_CHANGED  0x1   /* the record changed: save it */
#define LC_RELEASE  0x2   /* stage-in done: let the job start */
#define LC_FINISHED 0x4   /* torn down: after a failure, hold or requeue the job */
#define LC_KEPT     0x8   /* a failed stage-out kept (stageout_keep.h): show the job why */

/* Where requests go. send() hands one over and returns; the call's done
 * is called once it is answered or has failed, from any thread but never
 * from inside send(). */
struct lc_transport {
    void (*send)(void *ctx, struct agent_call *call);
    void *ctx;
    /* Optional: hands over n calls at once (one wake of the link for a
     * set of thousands). NULL: send, one by one. */
    void (*send_many)(void *ctx, struct agent_call **calls, size_t n);
};

/* The sets of requests steps have made, to be built and sent by the
 * caller once it has let go of its lock, and the sets they are done with,
 * to be freed then. A step takes under the lock only a copy of what its
 * set needs of the job (node names, hosts, the job's fields); making a
 * 4,096-node set's calls and bodies, sending them (which wakes the link
 * and contends for its lock) and freeing thousands of answers hold no
 * lock of the caller's. A set's answers come only after it is sent, and a
 * set dropped meanwhile (lifecycle_job_ended) lives on until its last
 * answer: flushing never touches a freed set. */
struct lc_set;
struct lc_outbox {
    struct lc_set **sets;
    size_t n, cap;
    struct lc_set **spent;
    size_t nspent, spentcap;
};
/* Frees the spent sets, builds and sends through t the others, and
 * empties box (keeps its memory). A set that cannot be built is failed
 * as a whole (out of memory: its job tries again later, no node blamed). */
void lc_outbox_flush(struct lc_outbox *box, const struct lc_transport *t);
void lc_outbox_free(struct lc_outbox *box);

/* What a step needs besides the job. */
struct lc_env {
    const struct bb_config *cfg;
    const struct lc_transport *transport;
    void (*ready)(void *arg);     /* a set is answered (any thread): step its job again */
    void *ready_arg;
    time_t now;
    int call_ms;                  /* a request's deadline (LC_CALL_MS) */
    int hold_ms;                  /* how long an agent holds a WATCH (LC_HOLD_MS) */
    /* NULL: a step builds and sends its set itself; else the set goes
     * here, and the caller flushes it after its lock (re-sent WATCHes, from
     * the transport's thread, are sent at once all the same). */
    struct lc_outbox *outbox;
    /* Where a finished lifecycle_poll() puts the bytes the servers hold
     * (NULL: dropped). */
    uint64_t *used;
};
#define LC_CALL_MS 30000
#define LC_HOLD_MS 20000

/* Does the next piece of work for the job, or checks on the set in
 * flight; returns LC_* events. Never blocks. */
int lifecycle_step(struct bb_job *job, const struct lc_env *env);

/* A running instance: asks each of its agents (STATUS) what its server
 * holds; the sum lands in *env->used once all have answered (an agent
 * that does not say leaves it as it was). Sends nothing while a set is in
 * flight or the instance is not running. Returns 0. */
int lifecycle_poll(struct bb_job *job, const struct lc_env *env);

/* A set of requests of the job is in flight (no step will send another
 * until it is answered). */
bool lifecycle_waiting(const struct bb_job *job);

/* The job ended: a running instance goes to stage-out (straight to
 * teardown with hurry); one still deploying or staging in is torn down; a
 * stage-out under way goes on unless hurry. Requests in flight for the
 * phase left are abandoned (their answers are dropped). */
void lifecycle_job_ended(struct bb_job *job, bool hurry);

/* scancel: as lifecycle_job_ended, and an instance cancelled before its job
 * ran records why. */
void lifecycle_cancel(struct bb_job *job, bool hurry);

/* What a failed call to an agent means for the job (rc and status as
 * agent_call's, fault the agent's): FAIL_NODE only for a fault the agent
 * proved in an authenticated answer; FAIL_USER for the job's own; every
 * other failure (no authenticated answer: refused, reset, timed out, a
 * handshake refused or not the agent's; an agent at its limit; a server
 * that did not start) is FAIL_TRANSIENT. FAIL_NONE for a success. */
enum bb_failure lifecycle_classify(int rc, int status, uint32_t fault);

/* A step whose calls failed for a reason that may pass is tried again:
 * LC_ATTEMPTS attempts in all, LC_RETRY_S seconds after the first failure
 * and twice as long after each next (5, 10, 20 s), counted while no call
 * set of the job succeeds. Records the next attempt (true) or, at the
 * last, the failure (FAIL_TRANSIENT, why and the count: false). */
#define LC_ATTEMPTS 4
#define LC_RETRY_S 5
bool lifecycle_retry(struct bb_job *job, const char *why, time_t now);

/* What the shim does to the Slurm job once an instance that failed before
 * its release is torn down: drain the node named (only for a node fault
 * an agent proved), and hold the job (priority 0) or requeue it. A job
 * already requeued once is held: it would drain node after node. */
struct lc_verdict {
    bool drain;
    bool hold;
};
struct lc_verdict lifecycle_verdict(enum bb_failure failure, unsigned restarts);

/* Which node a FAIL_NODE message names ("node nX: ..."): malloc'd or NULL. */
char *lifecycle_failed_node(const char *error);

/* The instance file text the agents write on every node. malloc'd. */
char *lifecycle_instance_text(const struct bb_job *job, const struct bb_config *cfg);
/* The instance text of a persistent instance's servers (their record) as
 * a job that uses it mounts it at mount. malloc'd. */
char *lifecycle_persist_text(const struct bb_job *servers, const char *mount,
                             const struct bb_config *cfg);

#endif
