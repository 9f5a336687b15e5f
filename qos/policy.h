/* policy: how adafs-qosd shares a class's capacity among jobs.
 *
 * One call per class per control cycle, on whole jobs (the controller
 * splits each job's share over its nodes afterwards). Inputs per job:
 * its demand (what it would use unconstrained, estimated from its usage
 * and from whether it was held back), what it asked for (its directive or
 * an admin's limit; 0 = nothing asked), its weight (Slurm: node count or
 * priority) and its usage. Rates are per second; QOS_UNLIMITED is none.
 *
 *   static        a job gets what it asked, else the site default for its
 *                 nodes (dflt); the capacity plays no part.
 *   priority      the capacity in proportion to weight, whatever the
 *                 demand (what the PADLL paper calls static priority).
 *   proportional  each job its reservation (what it asked, at most the
 *                 capacity; all scaled down together if they overbook)
 *                 whatever its demand, the rest max-min by the demand
 *                 beyond it, then evenly.
 *   psfa          PADLL's proportional sharing without false allocation,
 *                 with its published faults fixed: max-min by demand with
 *                 the jobs taken in increasing order of demand (so a job
 *                 that needs less than an equal share gives the rest to
 *                 the others), and what no demand takes is shared in
 *                 proportion to usage. (The controller, not this module,
 *                 splits a job's rate over its nodes by their usage.)
 * What a job asked caps it (static, priority, psfa) or is its floor
 * (proportional).
 *
 * A job held at its limit (grows) wants more than it was given by an
 * amount nobody can see; its demand is the controller's step up from that
 * limit. Max-min gives it that step, or, when the step is below
 * POLICY_FLOOR of an equal share of what is left (a job at the floor: new
 * to a node, or back from idling), that equal share at once. */
#ifndef ADAFS_QOS_POLICY_H
#define ADAFS_QOS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qos_conf.h"   /* enum qos_policy */

/* A job held at a demand below this fraction of an equal share takes the
 * equal share (policy_job.grows). */
#define POLICY_FLOOR 0.5

struct policy_job {
    double demand, asked, weight, usage;   /* asked 0: nothing */
    bool grows;                            /* held at its limit: demand is a step up from it */
    double dflt;                           /* the static default for its nodes */
    double alloc;                          /* out */
};

/* Allocates capacity (none: INFINITY) among jobs[0..n) by policy. order
 * (2 n entries) and want (n) are scratch space. */
void policy_allocate(int policy, double capacity, struct policy_job *jobs, size_t n,
                     uint32_t *order, double *want);

#endif
