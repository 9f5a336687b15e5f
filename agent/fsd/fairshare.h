/* fairshare: who gets adafsd's next free service slot when several jobs,
 * users or groups share one server (ThemisIO's statistical tokens, with
 * three corrections).
 *
 * A request that finds every slot taken waits in its entity's queue (the
 * entity is its job, user or group, from what the server authenticated of
 * its connection: fair_who). When a slot frees, an entity is drawn at
 * random among those with requests waiting, in proportion to its weight,
 * and its oldest waiter gets the slot. Only waiting entities take part, so
 * a share nobody uses goes to whoever is busy (ThemisIO's "opportunity
 * fairness").
 *
 * The corrections:
 *  - cost, not count: each request is charged what it cost (its service
 *    time, which is what its op class and bytes cost this server), and an
 *    entity's weight is its share divided by its mean cost per request
 *    (lottery scheduling's compensation tickets). So entities get service
 *    time in proportion to their shares: a stat does not weigh what a
 *    1 MiB write weighs.
 *  - identity: the entity comes from the connection, never from a request.
 *  - across servers: fair_usage_take reports what each entity used here in
 *    the last period (lambda), fair_usage_apply takes every server's
 *    reports and gives each entity here a weight from its due: its share
 *    of what all servers served, less what it got on the others. So
 *    fairness holds across servers, not only within one, and it settles
 *    in one period (it does not creep from earlier corrections).
 *
 * Shares by policy (among entities with requests waiting):
 *   job-fair       every job 1
 *   user-fair      every user 1 (entity: the user)
 *   group-fair     every group 1 (entity: the group)
 *   size-fair      every job its node count
 *   user-then-size users equal; a user's share divided among its jobs by
 *                  their node counts
 *
 * Fast path: a request that finds a slot free and nobody waiting goes at
 * once, and while one entity alone waits its oldest request takes the
 * next slot without a draw: alone, an entity pays one uncontended lock on
 * the way in and one on the way out. It is still held to the slots: an
 * entity that had every slot to itself while alone would keep a newcomer
 * waiting behind all of them.
 *
 * Thread-safe; fair_enter blocks. The draw and the arithmetic are also
 * usable without threads (fair_try_enter, fair_leave) for simulations and
 * tests. */
#ifndef ADAFSD_FAIRSHARE_H
#define ADAFSD_FAIRSHARE_H

#include <stddef.h>
#include <stdint.h>

#include "fair_policy.h"

/* enum fair_policy, fair_policy_parse and fair_policy_name: the names are
 * common to the agent and the plugin (common/fair_policy.h). */

/* What the server knows of a connection's client. job 0: not known (the
 * connection counts as the instance's own job); nodes 0 counts as 1. */
struct fair_who {
    uint64_t job;
    uint32_t uid, gid;
    uint32_t nodes;
};

struct fair;
/* slots: requests served at once (>= 1); seed: of the draws (0: from the
 * clock). NULL when out of memory. */
struct fair *fair_new(enum fair_policy policy, unsigned slots, uint64_t seed);
void fair_free(struct fair *f);
enum fair_policy fair_get_policy(const struct fair *f);

/* A request's place: filled by fair_enter or fair_try_enter, given back to
 * fair_leave. */
struct fair_waiter;
struct fair_pass {
    struct fair_entity *entity;
    struct fair_waiter *waiter;   /* fair_try_enter: queued, not yet served */
};

/* Waits for a slot for a request of who. Returns 0 (then call fair_leave
 * once the request is served), or -ENOMEM (serve it anyway: no pass). */
int fair_enter(struct fair *f, const struct fair_who *who, struct fair_pass *pass);
/* Charges cost (any unit, the same for all requests: nanoseconds of
 * service in adafsd) and frees the slot, handing it to a drawn waiter. */
void fair_leave(struct fair *f, struct fair_pass *pass, uint64_t cost);

/* Without blocking, for simulations: 1 if the request got a slot now, 0 if
 * it was queued (fair_granted tells when it is served), -ENOMEM. */
int fair_try_enter(struct fair *f, const struct fair_who *who, struct fair_pass *pass);
int fair_granted(struct fair *f, const struct fair_pass *pass);

/* Cross-server exchange. take: up to max entries of this server's use
 * since the last take (entity key, share, cost charged), returns how many.
 * apply: the sum of every server's entries for the same period (this
 * server's included); entities are matched by key. */
struct fair_usage {
    uint64_t key;
    double share;
    uint64_t used;
};
size_t fair_usage_take(struct fair *f, struct fair_usage *out, size_t max);
void fair_usage_apply(struct fair *f, const struct fair_usage *all, size_t n);

/* The deployer's word on jobs' node counts (size-fair, user-then-size):
 * reads path, "JOB NODES" lines written by the node agent (root) from what
 * it deployed, and replaces the table by them; a client's connection never
 * says it. Jobs not listed count 1 node. Cheap when the file did not
 * change (its mtime). 0, -EPERM (not a regular file of root's that only
 * root may write), -EINVAL (a bad line: the table is kept), -errno. */
int fair_jobs_load(struct fair *f, const char *path);

/* The Slurm job of a cgroup path (one line of /proc/PID/cgroup after its
 * second colon) of a process of uid, or 0: cgroup v1
 * /slurm[_NODE]/uid_UID/job_ID/..., whose UID must be uid, or v2
 * /system.slice/[NODE_]slurmstepd.scope/job_ID/... Only these roots
 * count: a user may own cgroups elsewhere and name them job_ID. */
uint64_t fair_job_of_cgroup(const char *path, uint32_t uid);

/* For tests: the entity key of who under f's policy, and its current
 * correction factor (1 when none). */
uint64_t fair_key(const struct fair *f, const struct fair_who *who);
double fair_correction(struct fair *f, uint64_t key);

#endif
