/* ctl: adafs-qosd's control cycle, without the network: what the agents
 * reported in, the limits of every job on every node out.
 *
 * Each cycle: take each agent's report (usage totals of each job on its
 * node) and turn the differences into rates and into how much of the
 * time the job's processes there were held back; estimate each job's
 * demand per node (what it used, with headroom; when it was held back,
 * or is not yet measured, as much as it can get, which max-min turns into
 * its fair share, since a demand above a limit cannot be seen); share each
 * class's capacity among jobs by the policy (policy.h); split each job's
 * share over its nodes by their demand, each node keeping a floor so a
 * node that starts doing I/O can be seen to; and write each agent's
 * message. A node whose agent has not reported for the agent timeout
 * leaves the sums (its jobs' usage there is no longer known), and keeps
 * the last limits it was sent.
 *
 * Jobs and nodes are given by the daemon (from Slurm) or by a simulation
 * (bench/qos): the controller only knows indices of nodes. */
#ifndef ADAFS_QOS_CTL_H
#define ADAFS_QOS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qos_conf.h"
#include "qos_proto.h"
#include "rpc.h"

/* Share of a job's rate every one of its nodes keeps, however idle. */
#define CTL_NODE_FLOOR 0.05
/* Held back more than this fraction of the time: wants more. */
#define CTL_HELD 0.01
/* Held back more than this fraction of the time: limited, whatever it
 * achieved. A node's processes lose the tokens of the time they are not
 * scheduled (past the bucket's burst), so a job held at its limit on a
 * busy node achieves a few percent to 10% less than it; taken for a job
 * that wants no more, its limit was cut to its usage each period, and a
 * job entitled to 99,467 stat/s got 85,172 (issue 24's three-job runs at
 * load 10-16). A job held in bursts (behind for a moment, then catching
 * up) is held for a small part of the period. */
#define CTL_HELD_MOSTLY 0.5
/* Held back (past CTL_HELD) and using more than its limit / this, a job
 * presses against its limit: it may want more. A steady job that wants no
 * more is given its rate and CTL_HEADROOM, so it runs a whole margin below
 * its limit, and is held now and then by its own bursts; the threshold sits
 * at half the margin. At the margin itself, a steady job's period-to-period
 * noise put it on either side: taken for one pressing against its limit
 * (and with its unhindered peak no higher than the limit it was given),
 * it was handed its whole fair share for a period and the other two jobs
 * fell to 0.889 of theirs (issue 24's three-job runs of 2026-11-26 22:20). */
#define CTL_AT_LIMIT 1.0247
/* A (job, node) pressing against its limit (above) wants more by an
 * amount nobody can see: it asks for its limit and a step, which starts
 * at this fraction of the limit and doubles each period it goes on
 * pressing (10%, 20%, 40%, ... 320%: a job that needs much more gets it in
 * a few periods), bounded by an equal share (policy.h); at the floor (below
 * half an equal share: back from idling, new) it takes an equal share at
 * once. Handing every pressing job its whole fair share, a job held at a
 * limit its unhindered rate did not exceed (its node busy a moment) took
 * it for a period and the others fell to 0.889 of theirs (issue 24's
 * three-job runs of 2026-11-26 23:00). */
#define CTL_STEP 0.1
/* The most a (job, node) used while not held back, which is what it wants
 * at least when it is held back later, fades by this fraction per second:
 * a job that really slows down is not given its old rate for long. */
#define CTL_PEAK_DECAY 0.02
/* A job not held back is given what it used and this margin, which only
 * has to cover how much a steady job's rate moves from period to period
 * (leases and report timing: well under 5%); growth beyond it is seen as
 * time held back. Under contention the margin of a job below its fair
 * share is taken from the jobs above it: 25% here held those at 0.92 of
 * their max-min share (issue 24's three-job run). Without contention PSFA
 * hands the spare capacity out on top, by usage. */
#define CTL_HEADROOM 1.05

struct ctl_job_spec {
    uint32_t id, uid;
    double weight;               /* priority: node count or Slurm priority */
    struct qos_limits asked;     /* directive or adafs-qos set; QOS_NOT_GIVEN: none */
    uint32_t nnodes;
    const uint32_t *nodes;       /* node indices, each once */
};

struct ctl_settings {
    int policy;                  /* enum qos_policy */
    struct qos_limits capacity;  /* not given or unlimited: no capacity for the class */
    struct qos_limits dflt;      /* per node: the static policy's when nothing asked */
    int64_t agent_timeout_ms;
};

struct ctl;

struct ctl *ctl_new(void);
void ctl_free(struct ctl *c);

/* The running jobs: replaces the set, keeping the measurements and limits
 * of each (job, node) still there. nnodes bounds the node indices. 0 or
 * -ENOMEM. */
int ctl_set_jobs(struct ctl *c, const struct ctl_job_spec *jobs, size_t njobs, size_t nnodes);

/* One agent's report, received at now_ms (CLOCK_MONOTONIC). Entries for
 * jobs the controller does not place on that node are ignored. */
void ctl_take_report(struct ctl *c, uint32_t node, const struct qos_report *rep, int64_t now_ms);

/* Starts fetching the memory node's next report will be taken into (the
 * (job, node) pairs of its last report): a caller taking many reports
 * calls it for the next node before taking one, so that their cache
 * misses overlap (at 1,000-10,000 nodes, taking the reports is waiting on
 * memory: the pairs do not stay in cache from one period to the next). */
void ctl_prefetch_report(const struct ctl *c, uint32_t node);

/* Restores a (job, node)'s limits saved before a restart, used until it
 * is measured again. */
void ctl_restore_limits(struct ctl *c, uint32_t job_id, uint32_t node, const struct qos_limits *l);

/* The allocations of this cycle. */
void ctl_compute(struct ctl *c, const struct ctl_settings *s, int64_t now_ms);

/* Whether node has jobs (then it gets a message each cycle). */
bool ctl_node_busy(const struct ctl *c, uint32_t node);
/* node's message (AGENT_QOS body) for this cycle into w, its report due
 * answer_in_ms after it arrives. */
void ctl_node_message(struct ctl *c, uint32_t node, uint64_t cycle, uint32_t answer_in_ms,
                      struct rpc_writer *w);

/* Whether node's agent reported within the timeout at the last compute. */
bool ctl_node_up(const struct ctl *c, uint32_t node);

/* Every job's state, as adafs-qos status shows it (jobs malloc'd). */
void ctl_status(const struct ctl *c, struct qos_status *s);

/* Walks every (job, node) limit: for saving. */
typedef void (*ctl_limit_fn)(void *arg, uint32_t job_id, uint32_t node, const struct qos_limits *l);
void ctl_each_limit(const struct ctl *c, ctl_limit_fn fn, void *arg);

#endif
