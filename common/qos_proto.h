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
 * Relays (doc/qos.md, "Relays per group of nodes"): qosd sends one node
 * agent of a group of nodes, the relay, AGENT_QOS_GROUP in its session
 * (accepted only from SlurmUser's): 
 *   u32 QOS_PROTO_VERSION, u64 cycle, u32 answer in ms, u32 group epoch,
 *   u32 self (the relay's own index), u32 nmembers (0: the epoch's list,
 *   sent before in this session, stands), then per member str node,
 *   str host, u32 port; then u32 nparts, per busy member u32 index and
 *   bytes: its AGENT_QOS body (as above; its own answer time, a margin
 *   before the relay's).
 * The relay applies its own part, forwards each other member its body as
 * AGENT_QOS over a session of its own, and answers when its time has come
 * with the group report:
 *   u32 QOS_PROTO_VERSION, u64 cycle, u32 n, then per member asked u32
 *   index, u32 status (enum qos_member_status), str reason ("" when
 *   reported), bytes: its AGENT_QOS answer (a report, as above; empty
 *   unless reported).
 * A member's entries are what it would send or get directly plus an
 * index, so the bytes per cycle stay those of direct exchanges; the
 * nested bodies are checked by the direct decoders where they are used.
 *
 * Decoders bound every count (QOS_PROTO_MAX_JOBS, QOS_GROUP_MAX) before
 * allocating and refuse trailing bytes; they return 0 or -EBADMSG. */
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

#define QOS_GROUP_MAX 256           /* members of one relay's group */
#define QOS_GROUP_REASON_MAX 200    /* a member's status reason, bytes */

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

/* One member of a group, as the group message names it (pointing into the
 * message decoded). */
struct qos_group_member {
    const char *node, *host;
    uint32_t port;
};

/* One busy member's part: its AGENT_QOS body (pointing into the message). */
struct qos_group_part {
    uint32_t index;
    const uint8_t *body;
    uint32_t len;
};

/* AGENT_QOS_GROUP, decoded (no allocation: fixed tables, strings and
 * bodies inside the message). */
struct qos_group_request {
    uint64_t cycle;
    uint32_t answer_in_ms, epoch, self;
    uint32_t nmembers;             /* 0: the list of this epoch, sent before */
    struct qos_group_member members[QOS_GROUP_MAX];
    uint32_t nparts;
    struct qos_group_part parts[QOS_GROUP_MAX];
};

enum qos_member_status {
    QOS_MEMBER_REPORTED = 0,
    QOS_MEMBER_NO_ANSWER = 1,      /* not by the relay's deadline */
    QOS_MEMBER_UNREACHABLE = 2,    /* the relay has no session to it */
    QOS_MEMBER_REFUSED = 3,        /* it refused its limits (reason) */
    QOS_MEMBER_NSTATUS
};

struct qos_group_entry {
    uint32_t index, status;
    const char *reason;
    const uint8_t *report;         /* its qos_report encoding; len 0 unless reported */
    uint32_t len;
};

struct qos_group_report {
    uint64_t cycle;
    uint32_t n;
    struct qos_group_entry e[QOS_GROUP_MAX];
};

/* Writes a group message piece by piece, with no copy of the nested
 * bodies: start, then per part part_start, the body written into w,
 * part_end; then end (the part count patched in). */
struct qos_group_writer {
    struct rpc_writer *w;
    size_t count_at, part_at;
    uint32_t nparts;
};
/* members NULL (nmembers 0): the epoch's list stands. */
void qos_group_request_start(struct qos_group_writer *gw, struct rpc_writer *w, uint64_t cycle,
                             uint32_t answer_in_ms, uint32_t epoch, uint32_t self,
                             const struct qos_group_member *members, uint32_t nmembers);
void qos_group_part_start(struct qos_group_writer *gw, uint32_t index);
void qos_group_part_end(struct qos_group_writer *gw);
void qos_group_request_end(struct qos_group_writer *gw);
/* The whole message at once (tests, the fuzzer). */
void qos_group_request_put(struct rpc_writer *w, const struct qos_group_request *g);
/* Decodes g; known is the size of the epoch's list the receiver holds,
 * used when the message does not repeat it (nmembers 0). Checks: at
 * most QOS_GROUP_MAX members, names 1-64 bytes, hosts 1-255, ports
 * 1-65535, self and every index among the members, each index once. */
int qos_group_request_get(struct rpc_reader *r, struct qos_group_request *g, uint32_t known);

/* The group report, piece by piece like the request: entry_start, the
 * report written into w (only for QOS_MEMBER_REPORTED), entry_end. */
void qos_group_report_start(struct qos_group_writer *gw, struct rpc_writer *w, uint64_t cycle);
void qos_group_entry_start(struct qos_group_writer *gw, uint32_t index, uint32_t status,
                           const char *reason);
void qos_group_entry_end(struct qos_group_writer *gw);
void qos_group_report_end(struct qos_group_writer *gw);
void qos_group_report_put(struct rpc_writer *w, const struct qos_group_report *g);
/* Decodes g against a group of nmembers: each index below it and once, a
 * known status, a reason of at most QOS_GROUP_REASON_MAX bytes, a report
 * present exactly when reported. */
int qos_group_report_get(struct rpc_reader *r, struct qos_group_report *g, uint32_t nmembers);

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
