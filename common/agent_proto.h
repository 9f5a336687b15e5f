/* agent_proto: the messages between slurmctld's burst_buffer/adafs plugin,
 * the Epilog, and the node agent adafs-agentd.
 *
 * Over TCP every request and reply is a message of an agent_session
 * (agent_session.h: both sides proved by munge, every message sealed), its
 * op one of agent_op and its body as below; over the agent's local Unix
 * socket they are rpc.h frames sent as is, the peer known from
 * SO_PEERCRED (root only, both ways). A reply carries status 0 or -errno,
 * and for errors a body of struct agent_error: what failed where, and
 * whose fault it is.
 *
 * The plugin drives each job's instance through: START on every node (each
 * agent starts its adafsd as the job user and answers with the port), then
 * CONFIGURE (the instance file, now that all ports are known), STAGE (start
 * a stage-in/out worker) and STATUS (poll it), and TEARDOWN (stop servers,
 * wipe data). The Epilog sends RELEASE and returns only when the node's part
 * of the job is torn down, so Slurm does not hand the node to another job
 * while stage-out still reads from it.
 *
 * A persistent instance (doc/lifecycle.md "Persistent instances") travels
 * on the same messages under an instance id in the job_id field:
 * AGENT_PERSIST_ID_BASE plus a number the plugin allocates. Slurm never
 * issues a job id that high (MAX_JOB_ID is 0x03ffffff), so the two spaces
 * are disjoint; an agent takes such an id only in a START that carries
 * AGENT_START_PERSISTENT, or for an instance it already serves. Its START
 * runs the server as the owner (adafsd --owner, --access-group) on storage
 * of its own, tied to no job; its TEARDOWN is the destroy (stop, wipe), and
 * no job's end touches it.
 *
 * Every START carries, beside the secret, the servers' key: the key the
 * instance's servers MAC their usage reports with (agent/fsd/exchange.h),
 * which no client may have (the secret every client has). The plugin makes
 * it with the secret; the agent writes it beside the secret file for the
 * server only (doc/fairshare.md).
 *
 * A persistent instance's START also names the fair-share policy of its
 * servers (create_persistent fair_share=, fair_policy.h), or none: then
 * the agent's own --fair-policy holds. A job's own instance names none: it
 * serves one job, and nothing is shared fairly there (doc/fairshare.md). */
#ifndef ADAFS_AGENT_PROTO_H
#define ADAFS_AGENT_PROTO_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

#include "rpc.h"
#include "stage_type.h"

enum agent_op {
    AGENT_PING = 1,
    AGENT_START = 2,
    AGENT_CONFIGURE = 3,
    AGENT_STAGE = 4,
    AGENT_STATUS = 5,
    AGENT_TEARDOWN = 6,
    AGENT_RELEASE = 7,     /* Epilog: wait for teardown (local socket only) */
    AGENT_QOS = 8,         /* adafs-qosd: limits in, usage out when due (qos_proto.h) */
    AGENT_WATCH = 9,       /* STATUS once it changes: the plugin's long poll */
    AGENT_QOS_REPORT = 10, /* usage out at once, nothing changed (qos_proto.h) */
    AGENT_LIST = 11,       /* the persistent instances this agent serves (adafs-ctl) */
    AGENT_QOS_GROUP = 12,  /* adafs-qosd to a relay: a group's limits in, its reports out (qos_proto.h) */
};

/* The agent's local socket: "%n" in the pattern is the node's name (the
 * Epilog and adafs-ctl find it from $SLURMD_NODENAME as the agent made it).
 * Returns 0, or -ENAMETOOLONG when it does not fit in len. */
#define AGENT_SOCKET_DEFAULT "/run/adafs/agent.%n.sock"
int agent_socket_path(const char *pattern, const char *node, char *out, size_t len);

#define AGENT_MAX_BODY (16u << 20)   /* a stager summary lists every failed file */

/* Instance ids, above every Slurm job id. */
#define AGENT_PERSIST_ID_BASE 0x80000000u
static inline int agent_id_is_persistent(uint32_t id)
{
    return id >= AGENT_PERSIST_ID_BASE;
}
/* A persistent instance's name: a letter, then letters, digits or '_', at
 * most AGENT_PERSIST_NAME_MAX characters (directive.h's rule: it becomes a
 * directory and part of an environment variable's name). 1 if valid. */
#define AGENT_PERSIST_NAME_MAX 32
int agent_persist_name_ok(const char *name);

/* agent_start.flags */
#define AGENT_START_PERSISTENT 0x1u

/* START: deploy this node's server of a job's instance, or of a persistent
 * instance (flags AGENT_START_PERSISTENT, job_id its instance id). */
struct agent_start {
    uint32_t job_id;
    uint32_t uid, gid;
    uint32_t index, nservers;       /* this server's place in the instance */
    uint64_t chunk_size;
    uint64_t quota;                 /* bytes this node may hold */
    const char *listen_host;        /* address the server binds (port chosen by it) */
    const char *storage;            /* storage directory on the node (admin's) */
    const char *secret_hex;         /* the instance's secret, as instance.h's hex (the
                                     * session seals it) */
    int32_t numa_node;              /* run the server on this NUMA node's CPUs; -1: anywhere */
    uint32_t flags;                 /* AGENT_START_PERSISTENT */
    const char *persist_name;       /* persistent: its name (storage <storage>/persistent/
                                     * <name>); NULL or "" for a job's instance */
    uint32_t access_gid;            /* persistent: members of this group may use it too
                                     * (adafsd --access-group); 0: the owner (uid) only */
    const char *server_key_hex;     /* the key the instance's servers share and no client
                                     * has (adafsd --server-key: their usage exchange), as
                                     * the secret's hex; "" or NULL: none (sealed too) */
    const char *fair_policy;        /* persistent: its servers' adafsd --fair-policy, a
                                     * name of fair_policy.h; "" or NULL: the agent's
                                     * --fair-policy. A job's instance: "" */
};
/* START's answer: where the server listens. */
struct agent_started {
    uint32_t port;                  /* 1..65535 */
    uint32_t pid;
};

/* How the job's processes reach its file system (the job's access=). */
enum agent_access {
    AGENT_ACCESS_PRELOAD = 0,       /* the LD_PRELOAD interposer only */
    AGENT_ACCESS_FUSE = 1,          /* a kernel mount at the mount point (adafs-fuse) */
    AGENT_ACCESS_BOTH = 2,          /* both: the interposer for what it can reach */
};

/* CONFIGURE: write the job's instance file (its text) on this node. A job
 * that uses a persistent instance and runs no server of its own gets only
 * this on its nodes (no START): uid and gid say whose files the agent makes
 * then; for a job started here they must be 0 or its own. A job that
 * mounts more than one file system (its own and instances, or several
 * instances) gets one CONFIGURE for each: the first without a name (its
 * mount PREFIX/ID, file PREFIX/.job.ID.instance), each other one naming
 * the persistent instance it mounts (PREFIX/ID.NAME and
 * PREFIX/.job.ID.NAME.instance: instance.h), through the interposer only.
 * A persistent instance's servers get one too (under the instance id, no
 * name): the file goes beside their secret, where they find each other for
 * the usage exchange; mount and access are not used then (no process
 * mounts it). */
struct agent_configure {
    uint32_t job_id;
    const char *instance_text;
    const char *mount;              /* made a real, empty directory of the user */
    uint32_t access;                /* enum agent_access: FUSE and BOTH mount it there */
    uint32_t uid, gid;              /* the job's user (0: as its START said) */
    const char *name;               /* NULL or "": the job's first mount; else the instance's */
};

enum agent_stage_dir { AGENT_STAGE_IN = 0, AGENT_STAGE_OUT = 1 };

/* After all workers of a directory stage: one pass that sets the modes and
 * times of directories, which workers leave open while they fill them. */
#define AGENT_STAGE_FINALIZE 0x1
/* The job's verify=yes: workers re-read every copy and compare checksums. */
#define AGENT_STAGE_VERIFY 0x2

/* STAGE: start worker `worker` of `nworkers` copying source to destination. */
struct agent_stage {
    uint32_t job_id;
    uint32_t direction;             /* enum agent_stage_dir */
    uint32_t type;                  /* enum stage_type */
    uint32_t worker, nworkers;
    uint32_t threads;
    uint32_t flags;                 /* AGENT_STAGE_FINALIZE, AGENT_STAGE_VERIFY */
    /* Copy threads per CPU: the agent runs no more than this many per CPU
     * its node has (its --cpus), so nodes that share a host's cores (the
     * mini-cluster) share its threads too; 0: threads as given. Last on
     * the wire. */
    uint32_t threads_per_cpu;
    uint64_t max_mdops, max_bandwidth;   /* 0: unlimited */
    const char *source, *destination;
    /* NULL or "": into or out of the job's first mount; else its further
     * mount of this persistent instance (agent_configure.name). */
    const char *name;
};

/* STATUS and WATCH answer with the job's stage on this node. For a
 * persistent instance they also say where its server is and what it holds
 * (has_server 1): those fields follow on the wire only then, so a reply
 * about a job's instance is as before. */
enum agent_op_state { AGENT_OP_NONE = 0, AGENT_OP_RUNNING = 1, AGENT_OP_DONE = 2 };
struct agent_stage_status {
    uint32_t state;                 /* enum agent_op_state */
    int32_t exit_status;            /* the stager's; -1 if it was killed */
    const char *summary;            /* its JSON report (stage_report.h), "" while running */
    const char *errors;             /* its messages */
    uint32_t has_server;            /* 1: the three below are set (persistent instances) */
    uint32_t port, pid;             /* its server now (port 1..65535) */
    uint64_t used;                  /* bytes its storage holds on this node */
};

/* WATCH: as STATUS, but answered only once the job's stage on this node is
 * no longer in state `known` (a stager that finished), or after hold_ms
 * (at most AGENT_WATCH_HOLD_MAX_MS) with the state as it is. The plugin
 * keeps one WATCH open per stage worker on its session with the agent,
 * instead of polling: messages go with what happens, not with a poll rate.
 * A job the agent does not know is answered at once (-ENOENT). */
#define AGENT_WATCH_HOLD_MAX_MS 60000
struct agent_watch {
    uint32_t job_id;
    uint32_t known;                 /* enum agent_op_state */
    uint32_t hold_ms;
};

/* LIST's answer: u32 count, then count of these, one per persistent
 * instance served here (agent_instance_put each; agent_instance_get reads
 * one and leaves the reader after it). */
struct agent_instance {
    uint32_t id;                    /* its instance id */
    const char *name;
    uint32_t uid, access_gid;       /* owner; group let in too (0: none) */
    uint32_t port, pid;             /* its server (pid 0: down) */
    uint64_t used, quota;           /* bytes its storage here holds, and may */
    const char *root;               /* its storage here */
};
void agent_instance_put(struct rpc_writer *w, const struct agent_instance *m);
int agent_instance_get(struct rpc_reader *r, struct agent_instance *m);

/* TEARDOWN: u32 job_id, u32 hurry (of a persistent id: the destroy).
 * RELEASE: u32 job_id, u32 timeout_s (jobs only). */
struct agent_job_ref {
    uint32_t job_id;
    uint32_t arg;
};

void agent_start_put(struct rpc_writer *w, const struct agent_start *m);
int agent_start_get(struct rpc_reader *r, struct agent_start *m);
void agent_configure_put(struct rpc_writer *w, const struct agent_configure *m);
int agent_configure_get(struct rpc_reader *r, struct agent_configure *m);
void agent_stage_put(struct rpc_writer *w, const struct agent_stage *m);
int agent_stage_get(struct rpc_reader *r, struct agent_stage *m);
void agent_job_ref_put(struct rpc_writer *w, const struct agent_job_ref *m);
int agent_job_ref_get(struct rpc_reader *r, struct agent_job_ref *m);
void agent_started_put(struct rpc_writer *w, const struct agent_started *m);
int agent_started_get(struct rpc_reader *r, struct agent_started *m);
void agent_stage_status_put(struct rpc_writer *w, const struct agent_stage_status *m);
int agent_stage_status_get(struct rpc_reader *r, struct agent_stage_status *m);
void agent_watch_put(struct rpc_writer *w, const struct agent_watch *m);
int agent_watch_get(struct rpc_reader *r, struct agent_watch *m);

/* The getters point strings into the reader's buffer and return 0, or
 * -EBADMSG when the body is truncated, too long or malformed. */

const char *agent_op_name(uint16_t op);

/* Whose fault a refused request is. The plugin drains a node only for
 * AGENT_FAULT_NODE, which an agent says only where it has proof: a job
 * must not be able to take nodes out of service, nor can anything said
 * outside an authenticated session (agent_session.h). */
enum agent_fault {
    AGENT_FAULT_TRANSIENT = 0,   /* may pass: retry, then hold the job */
    AGENT_FAULT_JOB = 1,         /* this job's request cannot be served: hold it */
    AGENT_FAULT_NODE = 2,        /* this node cannot serve any job: drain it */
};
const char *agent_fault_name(uint32_t fault);

/* An error reply's body: str text ("node N: what failed: why"), u32 fault. */
struct agent_error {
    char text[1024];
    uint32_t fault;   /* enum agent_fault */
};
void agent_error_put(struct rpc_writer *w, const struct agent_error *e);
/* Points *text into the reader's buffer. 0 or -EBADMSG (also for a fault
 * that is not one of enum agent_fault). */
int agent_error_get(struct rpc_reader *r, const char **text, uint32_t *fault);

#endif
