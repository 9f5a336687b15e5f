/* qos: the node agent as the local controller of I/O quality of service
 * (doc/qos.md).
 *
 * For each job adafs-qosd names, the agent keeps the job's budget on this
 * node (qos_seg.h: a sealed memfd) and gives it to the job's processes
 * that ask over the attach socket (qos_attach.h; only the job's uid, by
 * SO_PEERCRED). Each control period qosd sends the limits (AGENT_QOS,
 * qos_proto.h); the agent writes them into the budgets at once and
 * answers with every job's usage when qosd asked for it: at the end of
 * the period (a long poll). A job qosd stops naming is dropped after
 * QOS_AGENT_GRACE cycles. Between cycles a thread beats each budget's
 * heartbeat, so processes can tell a live agent from a dead one; with
 * qosd gone nothing changes: every budget keeps its last limits. */
#ifndef ADAFS_AGENT_QOS_H
#define ADAFS_AGENT_QOS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rpc.h"

#define QOS_AGENT_GRACE 3
#define QOS_AGENT_MAX_JOBS 4096

/* Binds the attach socket at path (mode 0666: any job's process may ask;
 * the directory must be root's) and starts the beat thread. 0, or -errno
 * with err filled. */
int qos_agent_start(const char *path, char *err, size_t errlen);

/* AGENT_QOS: applies a cycle's limits, waits until its report is due (or
 * *cancel is set: the session is over) and writes the report into out
 * (with no jobs when qos_agent_report just sent this cycle's). 0 or
 * -EBADMSG / -ENOMEM / -ENOSPC (too many jobs; the message says which). */
int qos_agent_cycle(struct rpc_reader *r, struct rpc_writer *out, const atomic_bool *cancel,
                    char *err, size_t errlen);

/* Whether qos_agent_start ran (--qos-socket). */
bool qos_agent_enabled(void);

/* The two halves of AGENT_QOS, for a relay's own node (qos_relay.h):
 * applies an AGENT_QOS body's limits (*cycle and *answer_in_ms its), then
 * puts this node's report of cycle into out. Limits of a cycle older
 * than the last applied are ignored (a member may hear its relay and
 * qosd at once during a fail-over). 0 or -errno with err. */
int qos_agent_apply(const uint8_t *body, size_t len, uint64_t *cycle, uint32_t *answer_in_ms,
                    char *err, size_t errlen);
int qos_agent_put_report(uint64_t cycle, struct rpc_writer *out, char *err, size_t errlen);

/* AGENT_QOS_GROUP from adafs-qosd (peer: the session's proved uid, only
 * slurm_uid's taken): this agent as its group's relay (qos_relay.h). */
int qos_agent_group(struct rpc_reader *r, struct rpc_writer *out, uid_t peer, uid_t slurm_uid,
                    const atomic_bool *cancel, char *err, size_t errlen);
/* The relay's identity toward the members' agents (root's munge): set
 * before the first AGENT_QOS_GROUP. */
struct session_auth;
void qos_agent_relay_init(const struct session_auth *auth);

/* AGENT_QOS_REPORT: the report alone, nothing changed. 0 or -EBADMSG /
 * -ENOMEM. */
int qos_agent_report(struct rpc_reader *r, struct rpc_writer *out, char *err, size_t errlen);

/* Makes job_id's budget (uid's) if there is none yet, with no limits of
 * its own: for a job the agent starts itself, so its processes and its
 * stager find their budget before qosd first names the job. */
void qos_agent_ensure(uint32_t job_id, uid_t uid);

/* Closes the socket (its file is removed) and frees every budget. */
void qos_agent_stop(void);

#endif
