/* qos_proto: the messages of adafs' I/O quality of service control plane.
 *
 * adafs-qosd (the global controller) -> each node agent, one AGENT_QOS
 * request per control period in the agent session (agent_session.h: qosd
 * runs as slurmctld's user, proved by munge, every message sealed):
 *   u32 QOS_PROTO_VERSION, u64 cycle, u32 answer in ms, u32 njobs, then
 *   per job u32 job id, u32 uid, the class vector of limits (this job on
 *   this node, per second; QOS_UNLIMITED for none)
 * listing every job with processes of its own on the node. The agent
 * applies the limits at once (creating the budget of a job it did not
 * know) and answers when the given time has passed (at most
 * QOS_ANSWER_MAX_MS; 0: at once) with the usage of every job it holds a
 * budget for then:
 *   u32 QOS_PROTO_VERSION, u64 cycle, u32 njobs, then per job
 *   u32 job id, u32 processes, the class vectors of use (totals since the
 *   budget was made) and of nanoseconds delayed (totals)
 * qosd asks for the answer at the end of the period: the answer is that
 * period's report, there when qosd computes the next limits (a long poll).
 * So a node costs two messages per period, each sealed once: the limits
 * out, the usage in, and the limits follow the period just ended.
 * (AGENT_QOS_REPORT: u32 QOS_PROTO_VERSION, u64 cycle, answered at once
 * with the report, nothing changed: for tools; the AGENT_QOS answer of the
 * cycle it named lists no jobs.)
 *
 * adafs-qos (and the plugin) <- adafs-qosd over qosd's Unix socket (rpc.h
 * frames; the peer known by SO_PEERCRED: root or slurmctld's user):
 * QOSCTL_STATUS (empty) answered by a status; QOSCTL_SET (str what,
 * u32 job id, str value) answered by str message. qosd also writes the
 * status to a file each period for the plugin's bbstat: the same
 * encoding after u32 QOS_STATUS_MAGIC. A status:
 *   u32 version, u64 cycle, u64 unix time ms, u32 period ms, str policy,
 *   the class vector of capacity, u32 agents, u32 agents answering,
 *   u32 njobs, then per job: u32 job id, u32 uid, u32 nodes, u32 nodes
 *   reporting, u32 processes, u32 weight x 1000, then the class vectors
 *   of asked (directive; 0 none), demand, allocation and usage, all
 *   per second for the whole job.
 *
 * A class vector (QOS_NCLASSES values): u16 mask of the classes whose
 * value is not 0, then each of those, in class order, as a LEB128 varint
 * of value + 1 (QOS_UNLIMITED wraps to 0: one byte).
 *
 * Decoders bound every count (QOS_PROTO_MAX_JOBS) before allocating and
 * refuse trailing bytes; they return 0 or -EBADMSG. */
#ifndef ADAFS_QOS_PROTO_H
#define ADAFS_QOS_PROTO_H

#include "linknames.h"

#include <stdint.h>

#include "qos_limits.h"
#include "rpc.h"

#define QOS_PROTO_VERSION 3   /* 2: compact class vectors; 3: the limits' answer is a long poll */
#define QOS_ANSWER_MAX_MS 60000
#define QOS_PROTO_MAX_JOBS 100000
#define QOS_STATUS_MAGIC 0x53514441u   /* "ADQS" read as little-endian */

enum qosctl_op {
    QOSCTL_STATUS = 1,
    QOSCTL_SET = 2,
};

struct qos_job_limits {
    uint32_t job_id, uid;
    struct qos_limits limit;
};

struct qos_cycle {
    uint64_t cycle;
    uint32_t answer_in_ms;         /* the report is due this long after it arrives */
    uint32_t njobs;
    struct qos_job_limits *jobs;   /* decoded: malloc'd */
};

struct qos_job_usage {
    uint32_t job_id, procs;
    uint64_t used[QOS_NCLASSES];
    uint64_t waited_ns[QOS_NCLASSES];
};

struct qos_report {
    uint64_t cycle;
    uint32_t njobs;
    struct qos_job_usage *jobs;    /* decoded: malloc'd */
};

struct qos_job_status {
    uint32_t job_id, uid, nodes, nodes_reporting, procs;
    uint32_t weight_milli;
    uint64_t asked[QOS_NCLASSES];
    uint64_t demand[QOS_NCLASSES];
    uint64_t alloc[QOS_NCLASSES];
    uint64_t usage[QOS_NCLASSES];
};

struct qos_status {
    uint64_t cycle, time_ms;
    uint32_t period_ms;
    char policy[16];
    struct qos_limits capacity;
    uint32_t agents, agents_up;
    uint32_t njobs;
    struct qos_job_status *jobs;   /* decoded: malloc'd */
};

/* One class vector (QOS_NCLASSES values), as the messages carry them. */
void qos_classes_put(struct rpc_writer *w, const uint64_t *v);

void qos_cycle_put(struct rpc_writer *w, const struct qos_cycle *c);
int qos_cycle_get(struct rpc_reader *r, struct qos_cycle *c);
void qos_report_put(struct rpc_writer *w, const struct qos_report *rep);
int qos_report_get(struct rpc_reader *r, struct qos_report *rep);
/* qos_report_get into rep->jobs as it is (*cap entries, malloc'd or NULL),
 * grown when the report holds more: adafs-qosd decodes each agent's
 * report every period into the buffer it kept, with no allocation. On an
 * error rep->njobs is 0 and rep->jobs still the caller's (to free). */
int qos_report_get_into(struct rpc_reader *r, struct qos_report *rep, uint32_t *cap);
void qos_status_put(struct rpc_writer *w, const struct qos_status *s);
int qos_status_get(struct rpc_reader *r, struct qos_status *s);

#endif
