/* dispatch: see dispatch.h. The handlers only decode and encode: the work
 * is in jobs.h (a job's instance) and qos.h (I/O quality of service). */
#include "dispatch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jobs.h"
#include "log.h"
#include "qos.h"

static const char *node_name;
static uid_t trusted_uid;   /* slurmctld's user; root is always trusted */

void dispatch_init(const char *node, uid_t trusted)
{
    node_name = node;
    trusted_uid = trusted;
}

/* A refusal of the dispatcher's own: the request, not the node, is wrong. */
static int refuse(struct reply *out, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(struct reply *out, int rc, const char *fmt, ...)
{
    int n = snprintf(out->err.text, sizeof(out->err.text), "node %s: ", node_name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->err.text + n, sizeof(out->err.text) - (size_t)n, fmt, ap);
    va_end(ap);
    out->err.fault = AGENT_FAULT_JOB;
    return rc;
}

static int handle_ping(struct rpc_reader *r, struct reply *out)
{
    rpc_put_str(&out->body, node_name);
    return rpc_reader_done(r) ? 0 : -EBADMSG;
}

static int handle_start(struct rpc_reader *r, struct reply *out)
{
    struct agent_start m;
    if (agent_start_get(r, &m) < 0)
        return -EBADMSG;
    int port;
    pid_t pid;
    int rc = jobs_start(&m, &port, &pid, &out->err);
    if (rc == 0) {
        qos_agent_ensure(m.job_id, m.uid);   /* its I/O budget, before its processes ask */
        agent_started_put(&out->body, &(struct agent_started){ (uint32_t)port, (uint32_t)pid });
    }
    return rc;
}

static int handle_configure(struct rpc_reader *r, struct reply *out)
{
    struct agent_configure m;
    if (agent_configure_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_configure(&m, &out->err);
}

static int handle_stage(struct rpc_reader *r, struct reply *out)
{
    struct agent_stage m;
    if (agent_stage_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_stage(&m, &out->err);
}

/* STATUS and WATCH's answer; a persistent instance's says where its server is. */
static void put_status(struct reply *out, struct stage_status *st)
{
    agent_stage_status_put(&out->body, &(struct agent_stage_status){
        .state = (uint32_t)st->state, .exit_status = st->exit_status, .summary = st->summary,
        .errors = st->errors, .has_server = st->persistent, .port = (uint32_t)st->port,
        .pid = (uint32_t)st->pid, .used = st->used });
    stage_status_free(st);
}

static int handle_status(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    struct stage_status st;
    int rc = jobs_status(m.job_id, &st);
    if (rc == -ENOENT) {
        /* Not the job's fault nor the node's: an agent restarted since. */
        char note[128];
        refuse(out, rc, "job %u: not deployed here%s", m.job_id,
               jobs_unknown_note(m.job_id, note, sizeof(note)));
        out->err.fault = jobs_wiped_at_start(m.job_id) ? AGENT_FAULT_JOB : AGENT_FAULT_TRANSIENT;
        return rc;
    }
    if (rc < 0) {
        refuse(out, rc, "job %u: status: %s", m.job_id, strerror(-rc));
        out->err.fault = AGENT_FAULT_TRANSIENT;
        return rc;
    }
    put_status(out, &st);
    return 0;
}

static int handle_watch(struct rpc_reader *r, struct reply *out)
{
    struct agent_watch m;
    if (agent_watch_get(r, &m) < 0)
        return -EBADMSG;
    struct stage_status st;
    int rc = jobs_watch(m.job_id, (int)m.known, (int)m.hold_ms, out->cancel, &st);
    if (rc < 0) {
        /* Not the job's fault nor the node's: an agent restarted since. */
        char note[128];
        refuse(out, rc, "job %u: %s%s", m.job_id,
               rc == -ENOENT ? "not deployed here" : strerror(-rc),
               rc == -ENOENT ? jobs_unknown_note(m.job_id, note, sizeof(note)) : "");
        out->err.fault = rc == -ENOENT && jobs_wiped_at_start(m.job_id) ? AGENT_FAULT_JOB
                                                                        : AGENT_FAULT_TRANSIENT;
        return rc;
    }
    put_status(out, &st);
    return 0;
}

/* The persistent instances served here (adafs-ctl persistent list). */
static int handle_list(struct rpc_reader *r, struct reply *out)
{
    if (!rpc_reader_done(r))
        return -EBADMSG;
    return jobs_list_persistent(&out->body);
}

static int handle_teardown(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_teardown(m.job_id, m.arg != 0, &out->err);
}

static int handle_release(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    /* The Epilog's, for a job: an instance outlives every job. */
    if (agent_id_is_persistent(m.job_id))
        return refuse(out, -EINVAL, "release of %u: a persistent instance's id, not a job's",
                      m.job_id);
    return jobs_release(m.job_id, (int)m.arg, &out->err);
}

/* adafs-qosd's control cycle: limits in, usage out (qos.h). */
static int handle_qos(struct rpc_reader *r, struct reply *out)
{
    char why[512] = "";
    int rc = qos_agent_cycle(r, &out->body, out->cancel, why, sizeof(why));
    if (rc < 0 && why[0])
        refuse(out, rc, "%s", why);
    return rc;
}

/* adafs-qosd's control cycle for a group of nodes, this agent its relay
 * (qos.h; only from SlurmUser's session). */
static int handle_qos_group(struct rpc_reader *r, struct reply *out)
{
    char why[512] = "";
    int rc = qos_agent_group(r, &out->body, out->peer_uid, trusted_uid, out->cancel, why,
                             sizeof(why));
    if (rc < 0 && why[0])
        refuse(out, rc, "%s", why);
    if (rc == -EPERM)
        out->err.fault = AGENT_FAULT_JOB;   /* the asker's, not the node's */
    return rc;
}

static int handle_qos_report(struct rpc_reader *r, struct reply *out)
{
    char why[512] = "";
    int rc = qos_agent_report(r, &out->body, why, sizeof(why));
    if (rc < 0 && why[0])
        refuse(out, rc, "%s", why);
    return rc;
}

typedef int (*handler_fn)(struct rpc_reader *, struct reply *);

static const struct {
    handler_fn fn;
    bool remote;   /* may come over TCP */
    bool local;    /* may come over the Unix socket */
} handlers[] = {
    [AGENT_PING] = { handle_ping, true, true },
    [AGENT_START] = { handle_start, true, false },
    [AGENT_CONFIGURE] = { handle_configure, true, false },
    [AGENT_STAGE] = { handle_stage, true, false },
    [AGENT_STATUS] = { handle_status, true, true },
    [AGENT_TEARDOWN] = { handle_teardown, true, true },
    [AGENT_RELEASE] = { handle_release, false, true },
    [AGENT_QOS] = { handle_qos, true, false },
    [AGENT_WATCH] = { handle_watch, true, false },
    [AGENT_QOS_REPORT] = { handle_qos_report, true, false },
    [AGENT_LIST] = { handle_list, true, true },
    [AGENT_QOS_GROUP] = { handle_qos_group, true, false },
};

/* The one place every request passes. */
static int dispatch(const struct conn *c, uint16_t op, struct rpc_reader *r, struct reply *out)
{
    if (op >= sizeof(handlers) / sizeof(handlers[0]) || !handlers[op].fn)
        return refuse(out, -EOPNOTSUPP, "unknown request %u", op);
    if (c->local ? !handlers[op].local : !handlers[op].remote)
        return refuse(out, -EPERM, "%s is not allowed over %s", agent_op_name(op),
                      c->local ? "the local socket" : "the network");
    int rc = handlers[op].fn(r, out);
    if (rc == -EBADMSG && !out->err.text[0])
        refuse(out, rc, "malformed %s request", agent_op_name(op));
    return rc;
}

int dispatch_run(const struct conn *c, uint16_t op, const void *body, size_t len,
                 struct reply *out)
{
    rpc_writer_init(&out->body, NULL, 0);
    out->err = (struct agent_error){ .text = "", .fault = AGENT_FAULT_TRANSIENT };
    struct rpc_reader r;
    rpc_reader_init(&r, body, len);
    int rc = dispatch(c, op, &r, out);
    if (rc < 0) {
        if (!out->err.text[0])
            snprintf(out->err.text, sizeof(out->err.text), "node %s: %s: %s", node_name,
                     agent_op_name(op), strerror(-rc));
        log_warn("%s %s request refused (%s fault): %s", c->peer, agent_op_name(op),
                 agent_fault_name(out->err.fault), out->err.text);
        rpc_writer_free(&out->body);
        rpc_writer_init(&out->body, NULL, 0);
        agent_error_put(&out->body, &out->err);
    }
    if (!rpc_writer_ok(&out->body)) {
        rpc_writer_free(&out->body);
        rpc_writer_init(&out->body, NULL, 0);
        out->err = (struct agent_error){ .fault = AGENT_FAULT_TRANSIENT };
        snprintf(out->err.text, sizeof(out->err.text), "node %s: out of memory", node_name);
        agent_error_put(&out->body, &out->err);
        rc = -ENOMEM;
    }
    return rc;
}
