#include "lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_client.h"
#include "agent_proto.h"
#include "instance.h"
#include "log.h"
#include "stage_report.h"

#define CALL_TIMEOUT_MS 30000

static void (*call_all)(struct agent_request *, size_t, int) = agent_call_all;

void lifecycle_set_transport(void (*fn)(struct agent_request *, size_t, int))
{
    call_all = fn ? fn : agent_call_all;
}

static struct agent_target target_of(const struct bb_node *n)
{
    return (struct agent_target){ n->name, n->agent_host, n->agent_port };
}

enum bb_failure lifecycle_classify(int rc, int status, uint32_t fault)
{
    if (rc < 0)
        return FAIL_TRANSIENT;   /* no authenticated answer: it proves nothing */
    if (status >= 0)
        return FAIL_NONE;
    switch (fault) {
    case AGENT_FAULT_NODE: return FAIL_NODE;
    case AGENT_FAULT_JOB: return FAIL_USER;
    default: return FAIL_TRANSIENT;
    }
}

/* How bad a failure is for the job: a proven node fault first (the node
 * must be drained), then the job's own, then what may pass. */
static int severity(enum bb_failure f)
{
    return f == FAIL_NODE ? 3 : f == FAIL_USER ? 2 : f == FAIL_TRANSIENT ? 1 : 0;
}

bool lifecycle_retry(struct bb_job *j, const char *why, time_t now)
{
    if (++j->attempts < LC_ATTEMPTS) {
        time_t wait = (time_t)LC_RETRY_S << (j->attempts - 1);
        j->retry_at = now + wait;
        log_warn("job %u: %s: trying again in %ld s (attempt %u of %d failed; no node is blamed)",
                 j->job_id, why, (long)wait, j->attempts, LC_ATTEMPTS);
        return true;
    }
    bb_job_set_error(j, FAIL_TRANSIENT, "%s (held after %d attempts; no node drained)", why,
                     LC_ATTEMPTS);
    j->attempts = 0;
    j->retry_at = 0;
    return false;
}

/* One request to each of a set of a job's nodes, sent side by side. */
struct node_calls {
    struct bb_job *job;
    size_t n;
    size_t *node;                  /* index in job->nodes of each request */
    struct rpc_writer *body;
    struct agent_request *req;
    enum bb_failure worst;         /* of the failed requests */
    char *why;                     /* the first message of the worst kind */
    /* An agent's refusal that is no failure of this step (0: none): the
     * caller finds it in req[k].reply.status. */
    int tolerate;
};

static int calls_init(struct node_calls *c, struct bb_job *j)
{
    *c = (struct node_calls){ .job = j };
    c->node = calloc(j->nnodes, sizeof(*c->node));
    c->body = calloc(j->nnodes, sizeof(*c->body));
    c->req = calloc(j->nnodes, sizeof(*c->req));
    if (!c->node || !c->body || !c->req) {
        free(c->node);
        free(c->body);
        free(c->req);
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return -1;
    }
    return 0;
}

/* The body to fill for a request to node i. */
static struct rpc_writer *calls_add(struct node_calls *c, size_t i, uint16_t op)
{
    struct bb_node *n = &c->job->nodes[i];
    size_t k = c->n++;
    c->node[k] = i;
    rpc_writer_init(&c->body[k], NULL, 0);
    c->req[k].target = target_of(n);
    c->req[k].op = op;
    return &c->body[k];
}

static void note_failure(struct node_calls *c, enum bb_failure f, const char *why)
{
    if (severity(f) <= severity(c->worst))
        return;
    c->worst = f;
    free(c->why);
    c->why = strdup(why);
}

/* Sends every request and notes, of those that failed, the worst kind of
 * failure (lifecycle_classify) and its first message, in node order; the
 * caller decides (fail_or_retry). Returns how many failed; their replies
 * are freed, the others' stay for the caller (c->req[k].reply). */
static size_t calls_run(struct node_calls *c)
{
    for (size_t k = 0; k < c->n; k++) {
        if (!rpc_writer_ok(&c->body[k])) {
            note_failure(c, FAIL_TRANSIENT, "out of memory encoding a request");
            for (size_t m = 0; m < c->n; m++)
                c->req[m].rc = -ENOMEM;
            return c->n;
        }
        c->req[k].body = c->body[k].data;
        c->req[k].len = c->body[k].len;
    }
    call_all(c->req, c->n, CALL_TIMEOUT_MS);
    size_t failed = 0;
    for (size_t k = 0; k < c->n; k++) {
        struct agent_request *q = &c->req[k];
        /* A stage already running there: our earlier STAGE arrived, its
         * answer did not (a timeout, or a slurmctld restart that lost the
         * acknowledgement; the record moves to the next line only once every
         * worker is done). It is polled like the others. */
        if (q->rc == 0 && q->op == AGENT_STAGE && q->reply.status == -EBUSY) {
            log_info("job %u: node %s: stage already running (started before a lost answer): "
                     "polling it", c->job->job_id, q->target.node);
            q->reply.status = 0;
        }
        if (q->rc == 0 && c->tolerate && q->reply.status == c->tolerate)
            continue;
        enum bb_failure f = lifecycle_classify(q->rc, q->reply.status, q->reply.fault);
        if (f == FAIL_NONE)
            continue;
        note_failure(c, f, q->rc < 0 ? q->err : q->reply.message);
        if (q->rc == 0) {
            int status = q->reply.status;
            agent_reply_free(&q->reply);
            q->rc = status;
        }
        failed++;
    }
    if (failed == 0 && c->n > 0)
        c->job->attempts = 0;   /* progress: a later failure counts from one */
    return failed;
}

static void to_teardown(struct bb_job *j);

/* After calls that failed: a node's or the job's fault ends the instance
 * (teardown, then the shim drains or holds); one that may pass is tried
 * again later, up to LC_ATTEMPTS times. Returns the step's events. */
static int fail_or_retry(struct bb_job *j, struct node_calls *c)
{
    const char *why = c->why ? c->why : "a request failed";
    if (c->worst == FAIL_TRANSIENT && lifecycle_retry(j, why, time(NULL)))
        return LC_CHANGED;
    if (c->worst != FAIL_TRANSIENT)
        bb_job_set_error(j, c->worst, "%s", why);
    to_teardown(j);
    return LC_CHANGED;
}

static void calls_free(struct node_calls *c)
{
    for (size_t k = 0; k < c->n; k++) {
        rpc_writer_free(&c->body[k]);
        if (c->req[k].rc == 0)
            agent_reply_free(&c->req[k].reply);
    }
    free(c->node);
    free(c->body);
    free(c->req);
    free(c->why);
    c->why = NULL;
    c->n = 0;
}

char *lifecycle_instance_text(const struct bb_job *j, const struct bb_config *cfg)
{
    struct instance in = { .chunk_size = j->chunk_size, .timeout_ms = (int)cfg->server_timeout_ms,
                           .nservers = (int)j->nnodes };
    if (!j->mount || strlen(j->mount) >= sizeof(in.mount) ||
        secret_from_hex(j->secret_hex, in.secret) < 0)
        return NULL;
    strcpy(in.mount, j->mount);
    in.servers = calloc(j->nnodes ? j->nnodes : 1, sizeof(*in.servers));
    if (!in.servers)
        return NULL;
    for (size_t i = 0; i < j->nnodes; i++) {
        snprintf(in.servers[i].host, sizeof(in.servers[i].host), "%s", j->nodes[i].agent_host);
        in.servers[i].port = j->nodes[i].server_port;
    }
    char *text = instance_format(&in, j->job_id);
    instance_free(&in);
    return text;
}

static void to_teardown(struct bb_job *j)
{
    j->phase = PHASE_TEARDOWN;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].stage_sent = false;
}

/* Tears down, on the nodes marked in leftover, what an instance of this job
 * whose record was lost left there (a START they refused as "already
 * deployed": after a slurmctld restart, the START that was in flight). The
 * plugin keeps one live record per job, so whatever the agent has for the
 * job is stale. Returns how many failed; *events is the step's outcome
 * then (fail_or_retry). */
static size_t clear_leftovers(struct bb_job *j, const bool *leftover, int *events)
{
    struct node_calls c;
    if (calls_init(&c, j) < 0) {
        to_teardown(j);
        *events = LC_CHANGED;
        return 1;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        if (leftover[i]) {
            log_warn("job %u: node %s already has a server of this job, left by a lost "
                     "record: tearing it down to start again", j->job_id, j->nodes[i].name);
            agent_job_ref_put(calls_add(&c, i, AGENT_TEARDOWN),
                              &(struct agent_job_ref){ j->job_id, true });
        }
    size_t failed = calls_run(&c);
    if (failed)
        *events = fail_or_retry(j, &c);
    calls_free(&c);
    return failed;
}

/* START on every node not yet started. With leftover, a START refused as
 * "already deployed" marks its node there instead of failing. Returns how
 * many failed; *events is the step's outcome then (fail_or_retry). Nodes
 * that started keep their servers for the next attempt. */
static size_t start_servers(struct bb_job *j, bool *leftover, int *events)
{
    struct node_calls c;
    if (calls_init(&c, j) < 0) {
        to_teardown(j);
        *events = LC_CHANGED;
        return j->nnodes;
    }
    c.tolerate = leftover ? -EEXIST : 0;
    for (size_t i = 0; i < j->nnodes; i++) {
        struct bb_node *n = &j->nodes[i];
        if (n->started)
            continue;
        struct agent_start m = {
            .job_id = j->job_id, .uid = j->uid, .gid = j->gid, .index = (uint32_t)i,
            .nservers = (uint32_t)j->nnodes, .chunk_size = j->chunk_size,
            .quota = j->node_capacity, .listen_host = n->agent_host,
            .storage = n->storage ? n->storage : j->storage, .secret_hex = j->secret_hex,
            .numa_node = n->numa_node,
        };
        agent_start_put(calls_add(&c, i, AGENT_START), &m);
    }
    size_t failed = calls_run(&c);
    for (size_t k = 0; k < c.n; k++) {
        struct bb_node *n = &j->nodes[c.node[k]];
        if (c.req[k].rc < 0)
            continue;
        if (leftover && c.req[k].reply.status == -EEXIST) {
            leftover[c.node[k]] = true;
            continue;
        }
        struct agent_started started;
        n->started = agent_started_get(&c.req[k].reply.reader, &started) == 0;
        n->server_port = n->started ? (int)started.port : 0;
        if (!n->started) {
            char why[256];
            snprintf(why, sizeof(why), "node %s: agent gave no server port", n->name);
            note_failure(&c, FAIL_TRANSIENT, why);
            failed++;
        }
    }
    if (failed)
        *events = fail_or_retry(j, &c);
    calls_free(&c);
    return failed;
}

static int step_deploy(struct bb_job *j, const struct bb_config *cfg)
{
    struct node_calls c;
    bool *leftover = calloc(j->nnodes ? j->nnodes : 1, sizeof(*leftover));
    if (!leftover) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        to_teardown(j);
        return LC_CHANGED;
    }
    int events = 0;
    size_t failed = start_servers(j, leftover, &events);
    bool any = false;
    for (size_t i = 0; !failed && i < j->nnodes; i++)
        any |= leftover[i];
    /* Once: a second refusal is a failure like any other. */
    if (any && !(failed = clear_leftovers(j, leftover, &events)))
        failed = start_servers(j, NULL, &events);
    free(leftover);
    if (failed)
        return events;

    char *text = lifecycle_instance_text(j, cfg);
    if (!text || calls_init(&c, j) < 0) {
        if (!text)
            bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file");
        free(text);
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        agent_configure_put(calls_add(&c, i, AGENT_CONFIGURE),
                            &(struct agent_configure){ j->job_id, text, j->mount });
    failed = calls_run(&c);
    events = failed ? fail_or_retry(j, &c) : 0;
    calls_free(&c);
    free(text);
    if (failed)
        return events;
    j->t_deployed = time(NULL);
    j->retry_at = 0;
    j->phase = PHASE_STAGING_IN;
    j->stage_index = 0;
    log_info("job %u: adafs deployed on %zu nodes in %lds", j->job_id, j->nnodes,
             (long)(j->t_deployed - j->t_begin));
    return LC_CHANGED;
}

/* The next stage spec of the given direction at or after stage_index. */
static struct stage_spec *current_spec(struct bb_job *j, enum stage_direction dir)
{
    while (j->stage_index < j->req.nstages && j->req.stages[j->stage_index].direction != dir)
        j->stage_index++;
    return j->stage_index < j->req.nstages ? &j->req.stages[j->stage_index] : NULL;
}

/* Paths inside the file system are given to the stager from its root. */
static char *inside_path(const char *relative)
{
    char *p = NULL;
    while (relative[0] == '.' && relative[1] == '/')
        relative += 2;
    if (strcmp(relative, ".") == 0)
        relative = "";
    return asprintf(&p, "/%s", relative) < 0 ? NULL : p;
}

/* Encodes the stage request for worker `node` of the job into w. */
static int put_stage(struct rpc_writer *w, struct bb_job *j, const struct bb_config *cfg,
                     const struct stage_spec *s, size_t node, uint32_t flags)
{
    char *inside = inside_path(s->direction == STAGE_IN ? s->destination : s->source);
    if (!inside)
        return -1;
    struct agent_stage m = {
        .job_id = j->job_id, .direction = s->direction == STAGE_IN ? AGENT_STAGE_IN : AGENT_STAGE_OUT,
        .type = (uint32_t)s->type, .worker = (uint32_t)node, .nworkers = (uint32_t)j->nnodes,
        .threads = cfg->stage_threads, .flags = flags | (s->verify ? AGENT_STAGE_VERIFY : 0),
        .max_mdops = j->req.max_mdops ? j->req.max_mdops : cfg->max_mdops,
        .max_bandwidth = j->req.max_bw ? j->req.max_bw : cfg->max_bandwidth,
        .source = s->direction == STAGE_IN ? s->source : inside,
        .destination = s->direction == STAGE_IN ? inside : s->destination,
    };
    agent_stage_put(w, &m);
    free(inside);
    return 0;
}

/* Adds a worker's report (stage_report.h) to the totals; returns the first
 * failure it lists (malloc'd) or NULL. */
static char *add_summary(struct stage_totals *t, const char *summary)
{
    struct stage_report r;
    char err[128];
    if (stage_report_decode(summary, &r, err, sizeof(err)) < 0)
        return NULL;
    t->files += r.files;
    t->verified += r.verified;
    t->dirs += r.dirs;
    t->bytes += r.bytes;
    t->errors += r.errors;
    if (r.seconds > t->seconds)
        t->seconds = r.seconds;   /* workers run side by side */
    char *first = NULL;
    const struct stage_report_failure *f = r.nfailures ? &r.failures[0] : NULL;
    if (f && f->path && f->error &&
        asprintf(&first, "%s: %s%s%s", f->path, f->what ? f->what : "", f->what ? ": " : "",
                 f->error) < 0)
        first = NULL;
    stage_report_free(&r);
    return first;
}

/* The first line of a stager's messages, for a job's reason. */
static char *first_line(const char *text)
{
    while (*text == '\n')
        text++;
    size_t len = strcspn(text, "\n");
    return len ? strndup(text, len) : NULL;
}

static int step_stage(struct bb_job *j, const struct bb_config *cfg, enum stage_direction dir)
{
    const char *verb = dir == STAGE_IN ? "stage_in" : "stage_out";
    struct stage_spec *s = current_spec(j, dir);
    struct stage_totals *totals = dir == STAGE_IN ? &j->in : &j->out;
    if (!s) {
        if (dir == STAGE_IN) {
            j->t_staged_in = time(NULL);
            j->phase = PHASE_RUNNING;
            return LC_CHANGED | LC_RELEASE;
        }
        j->t_staged_out = time(NULL);
        to_teardown(j);
        return LC_CHANGED;
    }
    /* The finalize pass runs on the first node only. */
    size_t nodes = j->finalizing ? 1 : j->nnodes;
    struct node_calls c;
    if (calls_init(&c, j) < 0) {
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < nodes; i++) {
        if (j->nodes[i].stage_sent)
            continue;
        if (put_stage(calls_add(&c, i, AGENT_STAGE), j, cfg, s, i,
                      j->finalizing ? AGENT_STAGE_FINALIZE : 0) < 0) {
            bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a stage request");
            calls_free(&c);
            to_teardown(j);
            return LC_CHANGED;
        }
    }
    if (c.n) {
        size_t failed = calls_run(&c);
        for (size_t k = 0; k < c.n; k++)
            if (c.req[k].rc == 0)
                j->nodes[c.node[k]].stage_sent = true;
        int events = failed ? fail_or_retry(j, &c) : LC_CHANGED;
        calls_free(&c);
        return events;   /* poll on the next step */
    }

    /* Ask every worker; only when none is still copying are the summaries
     * added up, so each is counted once. */
    for (size_t i = 0; i < nodes; i++) {
        struct rpc_writer *w = calls_add(&c, i, AGENT_STATUS);
        agent_job_ref_put(w, &(struct agent_job_ref){ j->job_id, 0 });
    }
    int outcome = calls_run(&c) ? -1 : 1;   /* 1 all done, 0 still running, -1 a call failed */
    struct agent_stage_status *st = calloc(c.n ? c.n : 1, sizeof(*st));
    for (size_t k = 0; outcome >= 0 && k < c.n; k++)
        if (!st || agent_stage_status_get(&c.req[k].reply.reader, &st[k]) < 0) {
            char why[256];
            snprintf(why, sizeof(why), "node %s: %s", j->nodes[c.node[k]].name,
                     st ? "the agent's status answer is malformed" : "out of memory");
            note_failure(&c, FAIL_TRANSIENT, why);
            outcome = -1;
        } else if (st[k].state != AGENT_OP_DONE) {
            outcome = 0;
        }
    if (outcome < 0) {
        int events = fail_or_retry(j, &c);
        calls_free(&c);
        free(st);
        return events;
    }
    int failed = 0;
    char *cause = NULL;
    for (size_t k = 0; outcome == 1 && k < c.n; k++) {
        int exit_status = st[k].exit_status;
        const char *summary = st[k].summary, *errors = st[k].errors;
        char *first = summary ? add_summary(totals, summary) : NULL;
        if (exit_status != 0) {
            failed++;
            if (!cause) {
                char *line = first ? NULL : first_line(errors ? errors : "");
                if (asprintf(&cause, "%s source=%s on node %s: %s", verb, s->source,
                             j->nodes[c.node[k]].name,
                             first ? first : line ? line : "the stager failed") < 0)
                    cause = NULL;
                free(line);
            }
        }
        free(first);
    }
    calls_free(&c);
    free(st);
    if (outcome == 0) {
        /* StageInTimeout / StageOutTimeout bound a whole direction. */
        time_t since = dir == STAGE_IN ? j->t_deployed : j->t_ended;
        uint32_t limit = dir == STAGE_IN ? cfg->stage_in_timeout : cfg->stage_out_timeout;
        if (limit && since && time(NULL) - since > (time_t)limit) {
            bb_job_set_error(j, FAIL_USER, "%s source=%s did not finish within %s=%u s", verb,
                             s->source, dir == STAGE_IN ? "StageInTimeout" : "StageOutTimeout",
                             limit);
            log_warn("job %u: %s", j->job_id, j->error);
            to_teardown(j);
            return LC_CHANGED;
        }
        return 0;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].stage_sent = false;
    if (failed) {
        bb_job_set_error(j, FAIL_USER, "%s", cause ? cause : "stage failed");
        free(cause);
        log_warn("job %u: %s", j->job_id, j->error);
        if (dir == STAGE_IN) {
            to_teardown(j);
            return LC_CHANGED;
        }
        /* Stage-out copies what it can: go on with the other lines. */
    }
    if (!j->finalizing && s->type == STAGE_DIRECTORY && j->nnodes > 1 && !failed) {
        j->finalizing = true;
    } else {
        j->finalizing = false;
        j->stage_index++;
    }
    return LC_CHANGED;
}

static int step_teardown(struct bb_job *j)
{
    /* Teardown is idempotent on the agents: send it to every node. A node
     * that fails it is not the job's failure: the Epilog's RELEASE on that
     * node tears down what is left. */
    struct agent_request *reqs = calloc(j->nnodes, sizeof(*reqs));
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ j->job_id, j->hurry });
    if (!reqs || !rpc_writer_ok(&w)) {
        /* Try again on the next step rather than leave data behind. */
        log_error("job %u: out of memory sending teardown to %zu nodes", j->job_id, j->nnodes);
        free(reqs);
        rpc_writer_free(&w);
        return 0;
    }
    for (size_t i = 0; i < j->nnodes; i++) {
        struct bb_node *n = &j->nodes[i];
        reqs[i] = (struct agent_request){
            .target = target_of(n),
            .op = AGENT_TEARDOWN, .body = w.data, .len = w.len,
        };
    }
    agent_call_all(reqs, j->nnodes, CALL_TIMEOUT_MS);
    for (size_t i = 0; i < j->nnodes; i++) {
        if (reqs[i].rc < 0 || reqs[i].reply.status < 0)
            log_warn("job %u: teardown on %s: %s", j->job_id, j->nodes[i].name,
                     reqs[i].rc < 0 ? reqs[i].err : reqs[i].reply.message);
        if (reqs[i].rc == 0)
            agent_reply_free(&reqs[i].reply);
        j->nodes[i].started = false;   /* the port stays, for bbstat's history */
    }
    free(reqs);
    rpc_writer_free(&w);
    j->phase = PHASE_COMPLETE;
    j->t_done = time(NULL);
    log_info("job %u: adafs torn down%s%s", j->job_id, j->error ? ": " : "", j->error ? j->error : "");
    return LC_CHANGED | LC_FINISHED;
}

int lifecycle_step(struct bb_job *j, const struct bb_config *cfg)
{
    if (j->phase != PHASE_TEARDOWN && j->retry_at && time(NULL) < j->retry_at)
        return 0;
    j->retry_at = 0;
    switch (j->phase) {
    case PHASE_DEPLOYING: return step_deploy(j, cfg);
    case PHASE_STAGING_IN: return step_stage(j, cfg, STAGE_IN);
    case PHASE_STAGING_OUT: return step_stage(j, cfg, STAGE_OUT);
    case PHASE_TEARDOWN: return step_teardown(j);
    case PHASE_RUNNING:
    case PHASE_COMPLETE:
        break;
    }
    return 0;
}

void lifecycle_job_ended(struct bb_job *j, bool hurry)
{
    j->hurry = hurry;
    switch (j->phase) {
    case PHASE_RUNNING:
        j->t_ended = time(NULL);
        if (hurry) {
            to_teardown(j);
            break;
        }
        j->phase = PHASE_STAGING_OUT;
        j->stage_index = 0;
        j->finalizing = false;
        for (size_t i = 0; i < j->nnodes; i++)
            j->nodes[i].stage_sent = false;
        break;
    case PHASE_STAGING_OUT:
        /* Only --hurry stops a stage-out under way. */
        if (hurry)
            to_teardown(j);
        break;
    case PHASE_DEPLOYING:
    case PHASE_STAGING_IN:
        j->t_ended = time(NULL);
        to_teardown(j);
        break;
    case PHASE_TEARDOWN:
    case PHASE_COMPLETE:
        break;
    }
}

void lifecycle_cancel(struct bb_job *j, bool hurry)
{
    if ((j->phase == PHASE_DEPLOYING || j->phase == PHASE_STAGING_IN) && j->failure == FAIL_NONE)
        bb_job_set_error(j, FAIL_CANCELLED, "cancelled");
    lifecycle_job_ended(j, hurry);
}
