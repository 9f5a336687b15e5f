#include "lifecycle.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "instance.h"
#include "log.h"
#include "persist_job.h"
#include "stage_report.h"

/* --- what failures mean ------------------------------------------------ */

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

struct lc_verdict lifecycle_verdict(enum bb_failure failure, unsigned restarts)
{
    /* What may pass was already retried (lifecycle_retry); a job that
     * already failed on other nodes is likely the cause itself: held, so
     * it cannot drain node after node. */
    return (struct lc_verdict){
        .drain = failure == FAIL_NODE,
        .hold = failure == FAIL_USER || failure == FAIL_TRANSIENT || restarts > 0,
    };
}

char *lifecycle_failed_node(const char *error)
{
    if (!error || strncmp(error, "node ", 5) != 0)
        return NULL;
    size_t len = strcspn(error + 5, ": ");
    return len ? strndup(error + 5, len) : NULL;
}

/* --- sets of requests ---------------------------------------------------- */

enum set_kind { SET_START, SET_CLEAR, SET_CONFIGURE, SET_STAGE, SET_WATCH, SET_TEARDOWN, SET_POLL };

/* One request to each of some of a job's nodes, in flight together. The
 * job holds it (bb_job.calls) until it has acted on the answers, or drops
 * it (abandoned: answers still to come are thrown away, and the last one
 * frees it). Answers touch only the set, under its lock. */
struct lc_set {
    struct bb_calls base;          /* first: bb_job_free abandons it */
    pthread_mutex_t lock;
    enum set_kind kind;
    size_t n;
    struct agent_call *call;
    size_t *node;                  /* each call's index in job->nodes */
    struct rpc_writer *body;       /* each call's, unless shared */
    uint8_t *shared;               /* one body for all (CONFIGURE's instance text) */
    size_t shared_len;
    bool *finished;
    int64_t *sent_ms;              /* when each was last sent */
    /* The nodes' names and agents' hosts, copied: the transport reads them
     * until each call is done, and an abandoned set outlives its record.
     * name_of[2i], name_of[2i+1]: node i's name and agent host. */
    char *names;
    const char **name_of;
    int hold_ms;
    size_t outstanding;            /* answers still to come */
    bool abandoned;
    bool failed;                   /* a WATCH failed: the others need not be waited for */
    bool strict;                   /* START: "already deployed" is a failure (leftovers cleared) */
    const struct lc_transport *transport;
    void (*ready)(void *arg);
    void *ready_arg;
};

static void set_free(struct lc_set *s)
{
    for (size_t k = 0; k < s->n; k++) {
        agent_reply_free(&s->call[k].reply);
        rpc_writer_free(&s->body[k]);
    }
    free(s->call);
    free(s->node);
    free(s->body);
    free(s->shared);
    free(s->finished);
    free(s->sent_ms);
    free(s->names);
    free(s->name_of);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void set_abandon(struct bb_calls *base)
{
    struct lc_set *s = (struct lc_set *)base;
    pthread_mutex_lock(&s->lock);
    s->abandoned = true;
    bool last = s->outstanding == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        set_free(s);
}

static void drop_set(struct bb_job *j)
{
    if (j->calls)
        j->calls->abandon(j->calls);
    j->calls = NULL;
}

/* A WATCH answered with its stage still running (the hold ran out). */
static bool still_running(const struct agent_call *c)
{
    if (c->rc < 0 || c->reply.status < 0)
        return false;
    struct rpc_reader r = c->reply.reader;
    struct agent_stage_status st;
    return agent_stage_status_get(&r, &st) == 0 && st.state == AGENT_OP_RUNNING;
}

static bool stage_done(const struct agent_call *c)
{
    if (c->rc < 0 || c->reply.status < 0)
        return false;
    struct rpc_reader r = c->reply.reader;
    struct agent_stage_status st;
    return agent_stage_status_get(&r, &st) == 0 && st.state == AGENT_OP_DONE;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An answer came (or the request failed). */
static void set_answered(struct agent_call *c)
{
    struct lc_set *s = c->arg;
    size_t k = (size_t)(c - s->call);
    const struct lc_transport *t = s->transport;
    void (*ready)(void *) = s->ready;
    void *ready_arg = s->ready_arg;
    pthread_mutex_lock(&s->lock);
    if (!s->abandoned && s->kind == SET_WATCH && still_running(c)) {
        int64_t now = now_ms();
        if (now - s->sent_ms[k] >= s->hold_ms / 4) {
            /* Asked again at once: no step, no new session, no credential. */
            agent_reply_free(&c->reply);
            s->sent_ms[k] = now;
            pthread_mutex_unlock(&s->lock);
            t->send(t->ctx, c);
            return;
        }
        /* An agent that does not hold a WATCH would be asked in a loop: a
         * failure, tried again later (fail_or_retry). */
        agent_reply_free(&c->reply);
        c->rc = -EPROTO;
        snprintf(c->err, sizeof(c->err), "node %s: its agent answers a WATCH at once while the "
                 "stage runs", c->node);
    }
    s->finished[k] = true;
    s->outstanding--;
    bool last = s->outstanding == 0, notify = false;
    if (s->abandoned) {
        pthread_mutex_unlock(&s->lock);
        if (last)
            set_free(s);
        return;
    }
    if (last) {
        notify = true;
    } else if (s->kind == SET_WATCH && !s->failed && !stage_done(c)) {
        s->failed = true;
        notify = true;
    }
    pthread_mutex_unlock(&s->lock);
    if (notify)
        ready(ready_arg);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static struct lc_set *set_new(struct bb_job *j, enum set_kind kind, const struct lc_env *env)
{
    struct lc_set *s = calloc(1, sizeof(*s));
    size_t n = j->nnodes ? j->nnodes : 1, names = 0;
    for (size_t i = 0; i < j->nnodes; i++)
        names += strlen(or_empty(j->nodes[i].name)) + strlen(or_empty(j->nodes[i].agent_host)) + 2;
    if (s) {
        s->call = calloc(n, sizeof(*s->call));
        s->node = calloc(n, sizeof(*s->node));
        s->body = calloc(n, sizeof(*s->body));
        s->finished = calloc(n, sizeof(*s->finished));
        s->sent_ms = calloc(n, sizeof(*s->sent_ms));
        s->names = malloc(names ? names : 1);
        s->name_of = calloc(2 * n, sizeof(*s->name_of));
    }
    if (!s || !s->call || !s->node || !s->body || !s->finished || !s->sent_ms || !s->names ||
        !s->name_of) {
        if (s) {
            free(s->call);
            free(s->node);
            free(s->body);
            free(s->finished);
            free(s->sent_ms);
            free(s->names);
            free(s->name_of);
        }
        free(s);
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return NULL;
    }
    char *at = s->names;
    for (size_t i = 0; i < j->nnodes; i++) {
        s->name_of[2 * i] = at;
        at = stpcpy(at, or_empty(j->nodes[i].name)) + 1;
        s->name_of[2 * i + 1] = at;
        at = stpcpy(at, or_empty(j->nodes[i].agent_host)) + 1;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->base.abandon = set_abandon;
    s->kind = kind;
    s->transport = env->transport;
    s->ready = env->ready;
    s->ready_arg = env->ready_arg;
    s->hold_ms = env->hold_ms;
    return s;
}

/* The body to fill for a request to node i. */
static struct rpc_writer *set_add(struct lc_set *s, struct bb_job *j, size_t i, uint16_t op)
{
    struct bb_node *n = &j->nodes[i];
    size_t k = s->n++;
    s->node[k] = i;
    rpc_writer_init(&s->body[k], NULL, 0);
    s->call[k] = (struct agent_call){ .node = s->name_of[2 * i], .host = s->name_of[2 * i + 1],
                                      .port = n->agent_port, .op = op };
    return &s->body[k];
}

/* Sends the set and hands it to the job. 0, or -1 (the set freed, the
 * job's error set) when a body could not be encoded; an empty set is
 * freed and nothing is sent. */
static int set_send(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    int timeout = env->call_ms + (s->kind == SET_WATCH ? env->hold_ms : 0);
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        const struct rpc_writer *w = &s->body[k];
        if (!s->shared && !rpc_writer_ok(w)) {
            bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a request");
            set_free(s);
            return -1;
        }
        c->body = s->shared ? s->shared : w->data;
        c->len = s->shared ? s->shared_len : w->len;
        c->timeout_ms = timeout;
        c->done = set_answered;
        c->arg = s;
    }
    if (s->n == 0) {
        set_free(s);
        return 0;
    }
    s->outstanding = s->n;
    j->calls = &s->base;
    int64_t now = now_ms();
    for (size_t k = 0; k < s->n; k++)
        s->sent_ms[k] = now;
    /* Nothing of the set is touched after the last send: its answers may
     * already be acted upon. */
    size_t n = s->n;
    struct lc_outbox *box = env->outbox;
    if (box && box->n + n > box->cap) {
        size_t cap = box->cap ? box->cap : 64;
        while (cap < box->n + n)
            cap *= 2;
        struct agent_call **grown = realloc(box->calls, cap * sizeof(*grown));
        if (grown) {
            box->calls = grown;
            box->cap = cap;
        } else {
            box = NULL;   /* out of memory: sent now, under the caller's lock: slower, not wrong */
        }
    }
    if (box) {
        for (size_t k = 0; k < n; k++)
            box->calls[box->n++] = &s->call[k];
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        env->transport->send(env->transport->ctx, &s->call[k]);
    return 0;
}

void lc_outbox_flush(struct lc_outbox *box, const struct lc_transport *t)
{
    if (box->n && t->send_many)
        t->send_many(t->ctx, box->calls, box->n);
    else
        for (size_t k = 0; k < box->n; k++)
            t->send(t->ctx, box->calls[k]);
    box->n = 0;
}

void lc_outbox_free(struct lc_outbox *box)
{
    free(box->calls);
    *box = (struct lc_outbox){ 0 };
}

/* The failures among a finished set's answers, worst first. */
struct failures {
    size_t count;
    enum bb_failure worst;
    char *why;                     /* the first message of the worst kind */
};

static void note_failure(struct failures *f, enum bb_failure kind, const char *why)
{
    f->count++;
    if (severity(kind) <= severity(f->worst))
        return;
    f->worst = kind;
    free(f->why);
    f->why = strdup(why);
}

/* Looks at every answer of s that had come (finished: a copy of the
 * set's flags taken under its lock; NULL: all came): an agent's refusal
 * that is no failure of this step (tolerate, 0: none) is left for the
 * caller. */
static void set_failures(struct lc_set *s, struct bb_job *j, int tolerate, const bool *finished,
                         struct failures *f)
{
    *f = (struct failures){ 0 };
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *q = &s->call[k];
        if (finished && !finished[k])
            continue;
        /* A stage already running there: our earlier STAGE arrived, its
         * answer did not (a timeout, or a slurmctld restart that lost the
         * acknowledgement). It is watched like the others. */
        if (q->rc == 0 && q->op == AGENT_STAGE && q->reply.status == -EBUSY) {
            log_info("job %u: node %s: stage already running (started before a lost answer): "
                     "watching it", j->job_id, q->node);
            q->reply.status = 0;
        }
        if (q->rc == 0 && tolerate && q->reply.status == tolerate)
            continue;
        enum bb_failure kind = lifecycle_classify(q->rc, q->reply.status, q->reply.fault);
        if (kind != FAIL_NONE)
            note_failure(f, kind, q->rc < 0 ? q->err : q->reply.message);
    }
}

static void to_teardown(struct bb_job *j)
{
    drop_set(j);
    j->phase = PHASE_TEARDOWN;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].stage_sent = false;
}

/* After calls that failed: a node's or the job's fault ends the instance
 * (teardown, then the shim drains or holds); one that may pass is tried
 * again later, up to LC_ATTEMPTS times. Returns the step's events. */
static int fail_or_retry(struct bb_job *j, struct failures *f, time_t now)
{
    const char *why = f->why ? f->why : "a request failed";
    if (f->worst == FAIL_TRANSIENT && lifecycle_retry(j, why, now)) {
        free(f->why);
        return LC_CHANGED;
    }
    if (f->worst != FAIL_TRANSIENT)
        bb_job_set_error(j, f->worst, "%s", why);
    free(f->why);
    to_teardown(j);
    return LC_CHANGED;
}

/* --- deploy ------------------------------------------------------------- */

/* The instance text of the servers of j, mounted at mount. */
static char *instance_text(const struct bb_job *j, const char *mount, const struct bb_config *cfg)
{
    struct instance in = { .chunk_size = j->chunk_size, .timeout_ms = (int)cfg->server_timeout_ms,
                           .nservers = (int)j->nnodes };
    if (!mount || strlen(mount) >= sizeof(in.mount) ||
        secret_from_hex(j->secret_hex, in.secret) < 0)
        return NULL;
    strcpy(in.mount, mount);
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

char *lifecycle_instance_text(const struct bb_job *j, const struct bb_config *cfg)
{
    return instance_text(j, j->mount, cfg);
}

char *lifecycle_persist_text(const struct bb_job *servers, const char *mount,
                             const struct bb_config *cfg)
{
    return instance_text(servers, mount, cfg);
}

static int send_configure(struct bb_job *j, const struct lc_env *env);

/* START on every node not yet started, then (all started) CONFIGURE.
 * Unless strict, a START refused as "already deployed" (after a slurmctld
 * restart, the START that was in flight: its record was lost) marks its
 * node's leftover to clear. */
static int deploy_next(struct bb_job *j, const struct lc_env *env, bool strict)
{
    if (!persist_job_own_servers(j))
        return send_configure(j, env);   /* mounts a persistent instance, or nothing */
    struct lc_set *s = set_new(j, SET_START, env);
    if (!s) {
        to_teardown(j);
        return LC_CHANGED;
    }
    s->strict = strict;
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
            /* A persistent instance's servers: run as their owner on storage
             * of their own, tied to no job (persist_job.h). */
            .flags = j->persist ? AGENT_START_PERSISTENT : 0,
            .persist_name = j->persist ? j->persist->name : NULL,
            .access_gid = j->persist ? j->persist->access_gid : 0,
        };
        agent_start_put(set_add(s, j, i, AGENT_START), &m);
    }
    if (s->n == 0) {
        set_free(s);
        return send_configure(j, env);
    }
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

static int deployed(struct bb_job *j, const struct lc_env *env);

static int send_configure(struct bb_job *j, const struct lc_env *env)
{
    /* A persistent instance's servers need no instance file: no job runs
     * there. A job that starts no server mounts the instance it names, if
     * any (persist_job_step wrote its text). */
    bool own = persist_job_own_servers(j);
    if (j->nnodes == 0 || j->persist || (!own && !j->persist_text))
        return deployed(j, env);
    char *text = own ? lifecycle_instance_text(j, env->cfg) : strdup(j->persist_text);
    struct lc_set *s = text ? set_new(j, SET_CONFIGURE, env) : NULL;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    uint32_t access = j->req.access == BB_ACCESS_FUSE ? AGENT_ACCESS_FUSE
                    : j->req.access == BB_ACCESS_BOTH ? AGENT_ACCESS_BOTH : AGENT_ACCESS_PRELOAD;
    if (s)
        agent_configure_put(&w, &(struct agent_configure){ j->job_id, text, j->mount, access,
                                                           j->uid, j->gid });
    free(text);
    if (!s || !rpc_writer_ok(&w)) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file");
        rpc_writer_free(&w);
        if (s)
            set_free(s);
        to_teardown(j);
        return LC_CHANGED;
    }
    /* One encoded body for every node: an instance of N servers goes to
     * N agents. */
    s->shared = w.data;
    s->shared_len = w.len;
    for (size_t i = 0; i < j->nnodes; i++)
        set_add(s, j, i, AGENT_CONFIGURE);
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

/* Tears down, on the nodes whose START found a leftover, what an instance
 * of this job whose record was lost left there. The plugin keeps one live
 * record per job, so whatever the agent has for the job is stale. */
static int send_clear(struct bb_job *j, const struct lc_env *env, const bool *leftover)
{
    struct lc_set *s = set_new(j, SET_CLEAR, env);
    if (!s) {
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        if (leftover[i]) {
            log_warn("job %u: node %s already has a server of this job, left by a lost "
                     "record: tearing it down to start again", j->job_id, j->nodes[i].name);
            agent_job_ref_put(set_add(s, j, i, AGENT_TEARDOWN),
                              &(struct agent_job_ref){ j->job_id, true });
        }
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

static int finish_start(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct failures f;
    set_failures(s, j, s->strict ? 0 : -EEXIST, NULL, &f);
    bool *leftover = calloc(j->nnodes ? j->nnodes : 1, sizeof(*leftover));
    bool any = false;
    for (size_t k = 0; k < s->n; k++) {
        struct bb_node *n = &j->nodes[s->node[k]];
        struct agent_call *c = &s->call[k];
        if (c->rc < 0 || c->reply.status < 0) {
            if (c->rc == 0 && !s->strict && c->reply.status == -EEXIST && leftover)
                any = leftover[s->node[k]] = true;
            continue;
        }
        struct agent_started started;
        n->started = agent_started_get(&c->reply.reader, &started) == 0;
        n->server_port = n->started ? (int)started.port : 0;
        if (!n->started) {
            char why[256];
            snprintf(why, sizeof(why), "node %s: agent gave no server port", n->name);
            note_failure(&f, FAIL_TRANSIENT, why);
        }
    }
    if (f.count == 0 && s->n > 0)
        j->attempts = 0;   /* progress: a later failure counts from one */
    int events;
    if (f.count)
        events = fail_or_retry(j, &f, env->now);
    else if (!leftover)
        events = (bb_job_set_error(j, FAIL_TRANSIENT, "out of memory"), to_teardown(j), LC_CHANGED);
    else if (any)
        events = send_clear(j, env, leftover) | LC_CHANGED;   /* once: then START strictly */
    else
        events = deploy_next(j, env, s->strict) | LC_CHANGED;
    free(leftover);
    return events;
}

static int deployed(struct bb_job *j, const struct lc_env *env)
{
    j->attempts = 0;
    j->t_deployed = env->now;
    j->retry_at = 0;
    j->phase = PHASE_STAGING_IN;
    j->stage_index = 0;
    log_info("job %u: adafs deployed on %zu nodes in %lds", j->job_id, j->nnodes,
             (long)(j->t_deployed - j->t_begin));
    return LC_CHANGED;
}

static int finish_configure(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct failures f;
    set_failures(s, j, 0, NULL, &f);
    return f.count ? fail_or_retry(j, &f, env->now) : deployed(j, env);
}

static int step_deploy(struct bb_job *j, const struct lc_env *env)
{
    return deploy_next(j, env, false);
}

/* --- staging ------------------------------------------------------------- */

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

/* How many of the job's nodes run the current stage: the finalize pass
 * runs on the first only. */
static size_t stage_workers(const struct bb_job *j)
{
    return j->finalizing ? 1 : j->nnodes;
}

/* STAGE on the workers not yet started, else WATCH on all of them. */
static int send_stage(struct bb_job *j, const struct lc_env *env, const struct stage_spec *spec)
{
    size_t nodes = stage_workers(j);
    bool all_sent = true;
    for (size_t i = 0; i < nodes; i++)
        all_sent &= j->nodes[i].stage_sent;
    struct lc_set *s = set_new(j, all_sent ? SET_WATCH : SET_STAGE, env);
    if (!s) {
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < nodes; i++) {
        if (all_sent) {
            agent_watch_put(set_add(s, j, i, AGENT_WATCH),
                            &(struct agent_watch){ j->job_id, AGENT_OP_RUNNING, (uint32_t)env->hold_ms });
        } else if (!j->nodes[i].stage_sent &&
                   put_stage(set_add(s, j, i, AGENT_STAGE), j, env->cfg, spec, i,
                             j->finalizing ? AGENT_STAGE_FINALIZE : 0) < 0) {
            bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a stage request");
            set_free(s);
            to_teardown(j);
            return LC_CHANGED;
        }
    }
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

static int finish_stage(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct failures f;
    set_failures(s, j, 0, NULL, &f);
    for (size_t k = 0; k < s->n; k++)
        if (s->call[k].rc == 0 && s->call[k].reply.status == 0)
            j->nodes[s->node[k]].stage_sent = true;
    if (f.count)
        return fail_or_retry(j, &f, env->now);
    j->attempts = 0;
    return LC_CHANGED;   /* watched from the next step on */
}

/* StageInTimeout / StageOutTimeout bound a whole direction. */
static bool stage_overdue(struct bb_job *j, const struct lc_env *env, enum stage_direction dir,
                          const struct stage_spec *spec)
{
    time_t since = dir == STAGE_IN ? j->t_deployed : j->t_ended;
    uint32_t limit = dir == STAGE_IN ? env->cfg->stage_in_timeout : env->cfg->stage_out_timeout;
    if (!limit || !since || env->now - since <= (time_t)limit)
        return false;
    bb_job_set_error(j, FAIL_USER, "%s source=%s did not finish within %s=%u s",
                     dir == STAGE_IN ? "stage_in" : "stage_out", spec->source,
                     dir == STAGE_IN ? "StageInTimeout" : "StageOutTimeout", limit);
    log_warn("job %u: %s", j->job_id, j->error);
    to_teardown(j);
    return true;
}

/* A WATCH set that ended early: one worker's answer was no stage done.
 * Only the answers that had come (finished) are looked at. */
static int finish_watch_failed(struct bb_job *j, struct lc_set *s, const bool *finished,
                               const struct lc_env *env)
{
    struct failures f;
    set_failures(s, j, 0, finished, &f);
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        if (!finished[k] || c->rc < 0 || c->reply.status < 0)
            continue;
        struct rpc_reader r = c->reply.reader;
        struct agent_stage_status st;
        char why[256];
        if (agent_stage_status_get(&r, &st) < 0) {
            snprintf(why, sizeof(why), "node %s: the agent's status answer is malformed", c->node);
            note_failure(&f, FAIL_TRANSIENT, why);
        } else if (st.state == AGENT_OP_NONE) {
            /* The agent knows the job but runs no stage of it: started
             * again on that node at the next attempt. */
            snprintf(why, sizeof(why), "node %s: no stage of the job runs there (the agent lost "
                     "it): starting it again", c->node);
            note_failure(&f, FAIL_TRANSIENT, why);
            j->nodes[s->node[k]].stage_sent = false;
        }
    }
    if (!f.count)
        note_failure(&f, FAIL_TRANSIENT, "a status request failed");
    return fail_or_retry(j, &f, env->now);
}

/* Every worker's stage is done: their reports added up once. */
static int finish_watch(struct bb_job *j, struct lc_set *s, enum stage_direction dir,
                        struct stage_spec *spec)
{
    const char *verb = dir == STAGE_IN ? "stage_in" : "stage_out";
    struct stage_totals *totals = dir == STAGE_IN ? &j->in : &j->out;
    int failed = 0;
    char *cause = NULL;
    for (size_t k = 0; k < s->n; k++) {
        struct rpc_reader r = s->call[k].reply.reader;
        struct agent_stage_status st;
        if (agent_stage_status_get(&r, &st) < 0)
            continue;   /* cannot be: the set would have failed */
        char *first = st.summary[0] ? add_summary(totals, st.summary) : NULL;
        if (st.exit_status != 0) {
            failed++;
            if (!cause) {
                char *line = first ? NULL : first_line(st.errors);
                if (asprintf(&cause, "%s source=%s on node %s: %s", verb, spec->source,
                             j->nodes[s->node[k]].name,
                             first ? first : line ? line : "the stager failed") < 0)
                    cause = NULL;
                free(line);
            }
        }
        free(first);
    }
    j->attempts = 0;
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
    /* The workers finish a stage themselves, attributes included (the
     * stager's doc/stager.md): no finalize pass follows. One in a state
     * saved by an older version still runs, and does nothing. */
    j->finalizing = false;
    j->stage_index++;
    return LC_CHANGED;
}

static int step_stage(struct bb_job *j, const struct lc_env *env, enum stage_direction dir)
{
    struct stage_spec *spec = current_spec(j, dir);
    if (!spec) {
        if (dir == STAGE_IN) {
            j->t_staged_in = env->now;
            j->phase = PHASE_RUNNING;
            return LC_CHANGED | LC_RELEASE;
        }
        j->t_staged_out = env->now;
        to_teardown(j);
        return LC_CHANGED;
    }
    if (j->nnodes == 0) {
        j->stage_index++;   /* nobody to copy to or from */
        return LC_CHANGED;
    }
    return send_stage(j, env, spec);
}

/* --- teardown ------------------------------------------------------------ */

static int torn_down(struct bb_job *j, const struct lc_env *env)
{
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].started = false;   /* the port stays, for bbstat's history */
    j->phase = PHASE_COMPLETE;
    j->t_done = env->now;
    log_info("job %u: adafs torn down%s%s", j->job_id, j->error ? ": " : "", j->error ? j->error : "");
    return LC_CHANGED | LC_FINISHED;
}

static int step_teardown(struct bb_job *j, const struct lc_env *env)
{
    if (j->nnodes == 0)
        return torn_down(j, env);
    /* Teardown is idempotent on the agents: sent to every node. */
    struct lc_set *s = set_new(j, SET_TEARDOWN, env);
    if (!s)
        return 0;   /* tried again at the next step rather than leave data behind */
    for (size_t i = 0; i < j->nnodes; i++)
        agent_job_ref_put(set_add(s, j, i, AGENT_TEARDOWN),
                          &(struct agent_job_ref){ j->job_id, j->hurry });
    set_send(j, s, env);
    return 0;
}

static int finish_teardown(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    /* A node that fails it is not the job's failure: the Epilog's RELEASE
     * on that node tears down what is left. */
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        if (c->rc < 0 || c->reply.status < 0)
            log_warn("job %u: teardown on %s: %s", j->job_id, c->node,
                     c->rc < 0 ? c->err : c->reply.message);
    }
    return torn_down(j, env);
}

/* --- a running instance's usage ------------------------------------------ */

int lifecycle_poll(struct bb_job *j, const struct lc_env *env)
{
    if (j->phase != PHASE_RUNNING || j->calls || j->nnodes == 0)
        return 0;
    struct lc_set *s = set_new(j, SET_POLL, env);
    if (!s)
        return 0;
    for (size_t i = 0; i < j->nnodes; i++)
        agent_job_ref_put(set_add(s, j, i, AGENT_STATUS),
                          &(struct agent_job_ref){ j->job_id, false });
    set_send(j, s, env);
    return 0;
}

/* What the servers hold: the sum of what each agent said (an agent that
 * did not say is counted as before: nothing of the job changes). */
static int finish_poll(struct bb_job *j, struct lc_set *s, uint64_t *used)
{
    uint64_t sum = 0;
    size_t told = 0;
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        struct agent_stage_status st;
        struct rpc_reader r = c->reply.reader;
        if (c->rc == 0 && c->reply.status == 0 && agent_stage_status_get(&r, &st) == 0 &&
            st.has_server) {
            sum += st.used;
            told++;
        } else {
            log_warn("job %u: usage of its server on %s: %s", j->job_id, c->node,
                     c->rc < 0 ? c->err : c->reply.status < 0 ? c->reply.message
                                                             : "not reported");
        }
    }
    if (told == s->n && used)
        *used = sum;
    return 0;
}

/* --- the step -------------------------------------------------------------- */

/* Acts on the set in flight, if it is done; 1 when the job still waits. */
static int check_set(struct bb_job *j, const struct lc_env *env, int *events)
{
    struct lc_set *s = (struct lc_set *)j->calls;
    bool *finished = malloc(s->n * sizeof(*finished));
    pthread_mutex_lock(&s->lock);
    bool done = s->outstanding == 0, failed = s->failed;
    if (finished)
        memcpy(finished, s->finished, s->n * sizeof(*finished));
    pthread_mutex_unlock(&s->lock);
    enum stage_direction dir = j->phase == PHASE_STAGING_OUT ? STAGE_OUT : STAGE_IN;
    struct stage_spec *spec = NULL;
    if (s->kind == SET_STAGE || s->kind == SET_WATCH)
        spec = current_spec(j, dir);
    if (!done && !failed) {
        free(finished);
        if (spec && stage_overdue(j, env, dir, spec))
            *events = LC_CHANGED;
        return *events ? 0 : 1;
    }
    j->calls = NULL;
    if (!done) {
        /* Answers still to come are dropped; the set stays whole until the
         * ones that came are read (only then is it abandoned). */
        if (finished)
            *events = finish_watch_failed(j, s, finished, env);
        else
            *events = (bb_job_set_error(j, FAIL_TRANSIENT, "out of memory"), to_teardown(j),
                       LC_CHANGED);
        free(finished);
        s->base.abandon(&s->base);
        return 0;
    }
    free(finished);
    switch (s->kind) {
    case SET_START: *events = finish_start(j, s, env); break;
    case SET_CLEAR: {
        struct failures f;
        set_failures(s, j, 0, NULL, &f);
        *events = f.count ? fail_or_retry(j, &f, env->now) : deploy_next(j, env, true) | LC_CHANGED;
        break;
    }
    case SET_CONFIGURE: *events = finish_configure(j, s, env); break;
    case SET_STAGE: *events = spec ? finish_stage(j, s, env) : LC_CHANGED; break;
    case SET_WATCH: {
        bool all_done = true;
        for (size_t k = 0; k < s->n; k++)
            all_done &= stage_done(&s->call[k]);
        if (!all_done) {
            bool *every = calloc(s->n, sizeof(*every));
            for (size_t k = 0; every && k < s->n; k++)
                every[k] = true;
            *events = every ? finish_watch_failed(j, s, every, env)
                            : (to_teardown(j), LC_CHANGED);
            free(every);
        } else {
            *events = spec ? finish_watch(j, s, dir, spec) : LC_CHANGED;
        }
        break;
    }
    case SET_TEARDOWN: *events = finish_teardown(j, s, env); break;
    case SET_POLL: *events = finish_poll(j, s, env->used); break;
    }
    set_free(s);
    return 0;
}

bool lifecycle_waiting(const struct bb_job *j)
{
    return j->calls != NULL;
}

int lifecycle_step(struct bb_job *j, const struct lc_env *env)
{
    int events = 0;
    if (j->calls && check_set(j, env, &events))
        return events;
    if (j->calls || events & LC_FINISHED)
        return events;   /* sent the next set already (or done) */
    if (j->phase != PHASE_TEARDOWN && j->retry_at && env->now < j->retry_at)
        return events;
    j->retry_at = 0;
    switch (j->phase) {
    case PHASE_DEPLOYING: events |= step_deploy(j, env); break;
    case PHASE_STAGING_IN: events |= step_stage(j, env, STAGE_IN); break;
    case PHASE_STAGING_OUT: events |= step_stage(j, env, STAGE_OUT); break;
    case PHASE_TEARDOWN: events |= step_teardown(j, env); break;
    case PHASE_RUNNING:
    case PHASE_COMPLETE:
        break;
    }
    return events;
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
        drop_set(j);
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
