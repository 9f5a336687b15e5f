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

/* A worker's final WATCH answer, read on the transport's thread as it
 * comes: a step of a 4,096-node job then only adds up numbers under the
 * caller's lock, instead of decoding 4,096 JSON reports there. */
struct lc_digest {
    bool read;                     /* the answer was a finished stage's */
    int exit_status;
    struct stage_totals part;      /* its report's counters */
    char *why;                     /* a failed worker's first failure or message */
};

/* One request to each of some of a job's nodes, in flight together. The
 * job holds it (bb_job.calls) until it has acted on the answers, or drops
 * it (abandoned: answers still to come are thrown away, and the last one
 * frees it). Answers touch only the set, under its lock. */
struct lc_set {
    struct bb_calls base;          /* first: bb_job_free abandons it */
    pthread_mutex_t lock;
    enum set_kind kind;
    uint16_t op;
    size_t n;
    size_t *node;                  /* each call's index in job->nodes */
    int *port;                     /* each call's agent port */
    /* The calls and their bodies are made only when the set is sent
     * (set_build: off the caller's lock when it has an outbox; a
     * 4,096-node set's calls are megabytes), from what the step copied of
     * the job into the set (the record may change or be freed before). */
    struct agent_call *call;
    struct rpc_writer *body;       /* each call's, unless shared */
    uint8_t *shared;               /* one body for all (CONFIGURE, WATCH, TEARDOWN) */
    size_t shared_len;
    int timeout_ms;
    bool unbuilt;                  /* out of memory building it: never sent */
    /* Makes the shared body (CONFIGURE's instance), or each call's. */
    int (*build_shared)(struct lc_set *s);
    void (*build)(const struct lc_set *s, size_t k, struct rpc_writer *w);
    uint32_t job_id;
    char secret_hex[INSTANCE_SECRET_HEX];
    char server_key_hex[INSTANCE_SECRET_HEX];
    struct agent_start start;      /* START: all but each node's own fields */
    char persist_name[PERSIST_NAME_MAX + 1]; /* START of a persistent instance's servers */
    char fair_policy[FAIR_POLICY_NAME_MAX];  /* ... and their fair_share= ("": the agents') */
    int32_t *numa;                 /* START: each node's NUMA node */
    uint32_t *threads;             /* STAGE: each node's worker's copy threads */
    struct agent_stage stage;      /* STAGE: all but the worker */
    char *stage_source, *stage_destination;
    struct instance instance;      /* CONFIGURE: all but the servers */
    int *server_port;              /* CONFIGURE: each node's server's */
    uint32_t access, uid, gid;     /* CONFIGURE */
    char *configure_text;          /* CONFIGURE of a persistent instance: its file as made */
    char further_name[PERSIST_NAME_MAX + 1];  /* CONFIGURE, STAGE of a further mount: its instance */
    size_t further;                /* CONFIGURE: 0 the first mount, k the k-th further one */
    struct lc_digest *digest;      /* WATCH: each answer, read as it came */
    bool *finished;
    int64_t *sent_ms;              /* when each was last sent */
    /* The nodes' names, agents' hosts and storage directories, copied: the
     * transport reads them until each call is done, a body is built from
     * them after the step, and an abandoned set outlives its record.
     * name_of[3i], [3i+1], [3i+2]: node i's name, agent host, storage. */
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
        if (s->call)
            agent_reply_free(&s->call[k].reply);
        if (s->body)
            rpc_writer_free(&s->body[k]);
        if (s->digest)
            free(s->digest[k].why);
    }
    free(s->digest);
    free(s->port);
    free(s->server_port);
    free(s->numa);
    free(s->threads);
    free(s->stage_source);
    free(s->stage_destination);
    free(s->configure_text);
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

static void digest_answer(struct lc_set *s, size_t k);

/* An answer came (or the request failed). */
static void set_answered(struct agent_call *c)
{
    struct lc_set *s = c->arg;
    size_t k = (size_t)(c - s->call);
    const struct lc_transport *t = s->transport;
    void (*ready)(void *) = s->ready;
    void *ready_arg = s->ready_arg;
    /* Only this thread touches call k until it is marked finished. */
    if (s->kind == SET_WATCH && stage_done(c))
        digest_answer(s, k);
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

/* Where node i's server keeps its data. */
static const char *node_storage(const struct bb_job *j, size_t i)
{
    return j->nodes[i].storage ? j->nodes[i].storage : j->storage;
}

static struct lc_set *set_new(struct bb_job *j, enum set_kind kind, const struct lc_env *env)
{
    struct lc_set *s = calloc(1, sizeof(*s));
    if (!s) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    size_t n = j->nnodes ? j->nnodes : 1, names = 0;
    for (size_t i = 0; i < j->nnodes; i++)
        names += strlen(or_empty(j->nodes[i].name)) + strlen(or_empty(j->nodes[i].agent_host)) +
                 strlen(or_empty(node_storage(j, i))) + 3;
    s->node = malloc(n * sizeof(*s->node));
    s->port = malloc(n * sizeof(*s->port));
    s->finished = calloc(n, sizeof(*s->finished));
    s->sent_ms = calloc(n, sizeof(*s->sent_ms));
    s->names = malloc(names ? names : 1);
    s->name_of = malloc(3 * n * sizeof(*s->name_of));
    if (!s->node || !s->port || !s->finished || !s->sent_ms || !s->names || !s->name_of) {
        set_free(s);
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return NULL;
    }
    char *at = s->names;
    for (size_t i = 0; i < j->nnodes; i++) {
        s->name_of[3 * i] = at;
        at = stpcpy(at, or_empty(j->nodes[i].name)) + 1;
        s->name_of[3 * i + 1] = at;
        at = stpcpy(at, or_empty(j->nodes[i].agent_host)) + 1;
        s->name_of[3 * i + 2] = at;
        at = stpcpy(at, or_empty(node_storage(j, i))) + 1;
    }
    s->base.abandon = set_abandon;
    s->kind = kind;
    s->job_id = j->job_id;
    s->transport = env->transport;
    s->ready = env->ready;
    s->ready_arg = env->ready_arg;
    s->hold_ms = env->hold_ms;
    return s;
}

/* A request of the set to node i (every request of a set has one op);
 * made when the set is sent. */
static void set_add(struct lc_set *s, const struct bb_job *j, size_t i, uint16_t op)
{
    size_t k = s->n++;
    s->op = op;
    s->node[k] = i;
    s->port[k] = j->nodes[i].agent_port;
}

/* The one body every request of the set carries (w's data, taken over);
 * -1 if it could not be encoded (w freed). */
static int set_share(struct lc_set *s, struct rpc_writer *w)
{
    if (!rpc_writer_ok(w)) {
        rpc_writer_free(w);
        return -1;
    }
    /* A writer that never grew points at no memory of its own. */
    s->shared = w->owned ? w->owned : malloc(w->len ? w->len : 1);
    if (!w->owned && s->shared)
        memcpy(s->shared, w->data, w->len);
    s->shared_len = w->len;
    return s->shared ? 0 : -1;
}

/* Makes the set's calls and their bodies from what the set holds; -1
 * when out of memory. Reads nothing of the job. */
static int set_build(struct lc_set *s)
{
    s->call = calloc(s->n, sizeof(*s->call));
    if (!s->call || (s->build_shared && s->build_shared(s) < 0))
        return -1;
    if (!s->shared && !(s->body = calloc(s->n, sizeof(*s->body))))
        return -1;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = s->node[k];
        struct agent_call *c = &s->call[k];
        *c = (struct agent_call){ .node = s->name_of[3 * i], .host = s->name_of[3 * i + 1],
                                  .port = s->port[k], .op = s->op, .timeout_ms = s->timeout_ms,
                                  .done = set_answered, .arg = s };
        if (s->shared) {
            c->body = s->shared;
            c->len = s->shared_len;
            continue;
        }
        struct rpc_writer *w = &s->body[k];
        rpc_writer_init(w, NULL, 0);
        s->build(s, k, w);
        if (!rpc_writer_ok(w))
            return -1;
        c->body = w->data;
        c->len = w->len;
    }
    return 0;
}

/* A set that could not be built is answered as a whole, unsent: its step
 * tries again later (check_set), blaming no node. */
static void set_unbuilt(struct lc_set *s)
{
    void (*ready)(void *) = s->ready;
    void *ready_arg = s->ready_arg;
    pthread_mutex_lock(&s->lock);
    s->unbuilt = true;
    s->outstanding = 0;
    bool abandoned = s->abandoned;
    pthread_mutex_unlock(&s->lock);
    if (abandoned)
        set_free(s);
    else
        ready(ready_arg);
}

/* Room for one more set in an outbox's list of n; false when out of
 * memory. */
static bool set_list_grow(struct lc_set ***list, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t more = *cap ? *cap * 2 : 16;
    struct lc_set **grown = realloc(*list, more * sizeof(*grown));
    if (!grown)
        return false;
    *list = grown;
    *cap = more;
    return true;
}

/* Sends the set and hands it to the job: through env->outbox, built when
 * the caller flushes it, or built and sent now. 0, or -1 (the set freed,
 * the job's error set) when it could not be built now; an empty set is
 * freed and nothing is sent. */
static int set_send(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    if (s->n == 0) {
        set_free(s);
        return 0;
    }
    s->timeout_ms = env->call_ms + (s->kind == SET_WATCH ? env->hold_ms : 0);
    /* Out of memory for the outbox: built and sent now, under the caller's
     * lock (slower, not wrong). */
    struct lc_outbox *box = env->outbox;
    if (box && !set_list_grow(&box->sets, box->n, &box->cap))
        box = NULL;
    if (!box && set_build(s) < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a request");
        set_free(s);
        return -1;
    }
    s->outstanding = s->n;
    j->calls = &s->base;
    if (box) {
        box->sets[box->n++] = s;
        return 0;
    }
    int64_t now = now_ms();
    for (size_t k = 0; k < s->n; k++)
        s->sent_ms[k] = now;
    /* Nothing of the set is touched after the last send: its answers may
     * already be acted upon. */
    size_t n = s->n;
    for (size_t k = 0; k < n; k++)
        env->transport->send(env->transport->ctx, &s->call[k]);
    return 0;
}

/* A set acted upon: freed by the caller's flush, after its lock (a
 * 4,096-node set is thousands of answers to free), or now. */
static void set_retire(struct lc_set *s, const struct lc_env *env)
{
    struct lc_outbox *box = env->outbox;
    if (box && set_list_grow(&box->spent, box->nspent, &box->spentcap))
        box->spent[box->nspent++] = s;
    else
        set_free(s);
}

void lc_outbox_flush(struct lc_outbox *box, const struct lc_transport *t)
{
    for (size_t i = 0; i < box->nspent; i++)
        set_free(box->spent[i]);
    box->nspent = 0;
    /* Every set is built before any is sent: once sent, a set's answers
     * may be acted upon and it freed. */
    size_t ncalls = 0;
    for (size_t i = 0; i < box->n; i++)
        ncalls += box->sets[i]->n;
    struct agent_call **calls = malloc((ncalls ? ncalls : 1) * sizeof(*calls));
    size_t sent = 0, unbuilt = 0;
    int64_t now = now_ms();
    for (size_t i = 0; i < box->n; i++) {
        struct lc_set *s = box->sets[i];
        if (!calls || set_build(s) < 0) {
            box->sets[unbuilt++] = s;   /* answered after the others are sent */
            continue;
        }
        for (size_t k = 0; k < s->n; k++) {
            s->sent_ms[k] = now;
            calls[sent++] = &s->call[k];
        }
    }
    if (sent && t->send_many)
        t->send_many(t->ctx, calls, sent);
    else
        for (size_t k = 0; k < sent; k++)
            t->send(t->ctx, calls[k]);
    free(calls);
    for (size_t i = 0; i < unbuilt; i++)
        set_unbuilt(box->sets[i]);
    box->n = 0;
}

void lc_outbox_free(struct lc_outbox *box)
{
    for (size_t i = 0; i < box->nspent; i++)
        set_free(box->spent[i]);
    free(box->sets);
    free(box->spent);
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

/* The instance's description but its servers, mounted at mount; -1 when
 * the mount or the record's secret cannot be written. */
static int instance_head(struct instance *in, const struct bb_job *j, const char *mount,
                         const struct bb_config *cfg)
{
    *in = (struct instance){ .chunk_size = j->chunk_size, .timeout_ms = (int)cfg->server_timeout_ms,
                             .nservers = (int)j->nnodes };
    if (!mount || strlen(mount) >= sizeof(in->mount) ||
        secret_from_hex(j->secret_hex, in->secret) < 0)
        return -1;
    strcpy(in->mount, mount);
    return 0;
}

/* The instance text of the servers of j, mounted at mount. */
static char *instance_text(const struct bb_job *j, const char *mount, const struct bb_config *cfg)
{
    struct instance in;
    if (instance_head(&in, j, mount, cfg) < 0)
        return NULL;
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

/* Node k's START: the set's copy of the job's fields and its node's. */
static void build_start(const struct lc_set *s, size_t k, struct rpc_writer *w)
{
    size_t i = s->node[k];
    struct agent_start m = s->start;
    m.index = (uint32_t)i;
    m.listen_host = s->name_of[3 * i + 1];
    m.storage = s->name_of[3 * i + 2];
    m.numa_node = s->numa[i];
    agent_start_put(w, &m);
}

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
    s->numa = malloc((j->nnodes ? j->nnodes : 1) * sizeof(*s->numa));
    if (!s->numa) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        set_free(s);
        to_teardown(j);
        return LC_CHANGED;
    }
    memcpy(s->secret_hex, j->secret_hex, sizeof(s->secret_hex));
    memcpy(s->server_key_hex, j->server_key_hex, sizeof(s->server_key_hex));
    if (j->persist) {
        snprintf(s->persist_name, sizeof(s->persist_name), "%s", j->persist->name);
        snprintf(s->fair_policy, sizeof(s->fair_policy), "%s", j->persist->fair_share);
    }
    s->start = (struct agent_start){
        .job_id = j->job_id, .uid = j->uid, .gid = j->gid, .nservers = (uint32_t)j->nnodes,
        .chunk_size = j->chunk_size, .quota = j->node_capacity, .secret_hex = s->secret_hex,
        /* A persistent instance's servers: run as their owner on storage
         * of their own, tied to no job (persist_job.h). */
        .flags = j->persist ? AGENT_START_PERSISTENT : 0,
        .persist_name = j->persist ? s->persist_name : NULL,
        .access_gid = j->persist ? j->persist->access_gid : 0,
        /* Beside the secret, for the servers only (doc/fairshare.md). */
        .server_key_hex = s->server_key_hex,
        /* How its servers share themselves among its jobs; a job's own
         * instance serves one job: nothing to share (doc/fairshare.md). */
        .fair_policy = s->fair_policy,
    };
    s->build = build_start;
    for (size_t i = 0; i < j->nnodes; i++) {
        s->numa[i] = j->nodes[i].numa_node;
        if (!j->nodes[i].started)
            set_add(s, j, i, AGENT_START);
    }
    if (s->n == 0) {
        set_free(s);
        return send_configure(j, env);
    }
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

static int deployed(struct bb_job *j, const struct lc_env *env);

/* CONFIGURE's body, one for every node (an instance of N servers goes to
 * N agents): the instance file from the set's copy of the job's. */
static int build_configure(struct lc_set *s)
{
    struct instance *in = &s->instance;
    char *made = NULL;
    if (!s->configure_text) {
        in->servers = calloc(s->n, sizeof(*in->servers));
        if (!in->servers)
            return -1;
        for (size_t k = 0; k < s->n; k++) {
            snprintf(in->servers[k].host, sizeof(in->servers[k].host), "%s",
                     s->name_of[3 * s->node[k] + 1]);
            in->servers[k].port = s->server_port[s->node[k]];
        }
        made = instance_format(in, s->job_id);
        instance_free(in);
    }
    const char *text = s->configure_text ? s->configure_text : made;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    if (text)
        agent_configure_put(&w, &(struct agent_configure){ s->job_id, text, in->mount,
                                                           s->access, s->uid, s->gid,
                                                           s->further_name });
    free(made);
    if (!text || set_share(s, &w) < 0) {
        rpc_writer_free(&w);
        return -1;
    }
    return 0;
}

static int send_configure(struct bb_job *j, const struct lc_env *env)
{
    /* A job that starts no server mounts the instance it names, if any
     * (persist_job_step wrote its text). A persistent instance's servers
     * get their own instance's file too, though no job runs there: the
     * agent puts it beside their secret, where they find each other's
     * ports for the usage exchange (no process mounts it: mount=/). */
    bool own = persist_job_own_servers(j);
    if (j->nnodes == 0 || (!own && !j->persist_text))
        return deployed(j, env);
    struct lc_set *s = set_new(j, SET_CONFIGURE, env);
    if (s && (own ? instance_head(&s->instance, j, j->persist ? "/" : j->mount, env->cfg) < 0
                  : !j->mount || strlen(j->mount) >= sizeof(s->instance.mount))) {
        bb_job_set_error(j, FAIL_TRANSIENT, "the record's mount or secret cannot be written "
                         "to an instance file");
        set_free(s);
        s = NULL;
    }
    if (s && !own)
        strcpy(s->instance.mount, j->mount);
    /* Its own servers' file is made when the set is sent; a persistent
     * instance's was made when the instance was ready (persist_job_step). */
    if (s && (own ? !(s->server_port = malloc(j->nnodes * sizeof(*s->server_port)))
                  : !(s->configure_text = strdup(j->persist_text)))) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file");
        set_free(s);
        s = NULL;
    }
    if (!s) {
        to_teardown(j);
        return LC_CHANGED;
    }
    s->access = j->req.access == BB_ACCESS_FUSE ? AGENT_ACCESS_FUSE
              : j->req.access == BB_ACCESS_BOTH ? AGENT_ACCESS_BOTH : AGENT_ACCESS_PRELOAD;
    s->uid = j->uid;
    s->gid = j->gid;
    s->build_shared = build_configure;
    for (size_t i = 0; own && i < j->nnodes; i++)
        s->server_port[i] = j->nodes[i].server_port;
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
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ j->job_id, true });
    if (set_share(s, &w) < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a request");
        set_free(s);
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        if (leftover[i]) {
            log_warn("job %u: node %s already has a server of this job, left by a lost "
                     "record: tearing it down to start again", j->job_id, j->nodes[i].name);
            set_add(s, j, i, AGENT_TEARDOWN);
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

/* CONFIGURE of the job's k-th further mount (persist_job.h), after its
 * first: the instance file persist_job_step made, through the interposer. */
static int send_further_configure(struct bb_job *j, const struct lc_env *env, size_t k)
{
    const struct persist_spec *spec = persist_job_further(&j->req, k);
    char *mount = spec && j->mount ? persist_job_further_mount(j->mount, spec->name) : NULL;
    struct lc_set *s = mount ? set_new(j, SET_CONFIGURE, env) : NULL;
    if (s && (strlen(mount) >= sizeof(s->instance.mount) ||
              !(s->configure_text = strdup(j->further_text[k])))) {
        set_free(s);
        s = NULL;
    }
    if (!s) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file of a "
                         "further mount");
        free(mount);
        to_teardown(j);
        return LC_CHANGED;
    }
    strcpy(s->instance.mount, mount);
    free(mount);
    snprintf(s->further_name, sizeof(s->further_name), "%s", spec->name);
    s->further = k + 1;
    s->access = AGENT_ACCESS_PRELOAD;
    s->uid = j->uid;
    s->gid = j->gid;
    s->build_shared = build_configure;
    for (size_t i = 0; i < j->nnodes; i++)
        set_add(s, j, i, AGENT_CONFIGURE);
    return set_send(j, s, env) < 0 ? (to_teardown(j), LC_CHANGED) : 0;
}

static int finish_configure(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct failures f;
    set_failures(s, j, 0, NULL, &f);
    if (f.count)
        return fail_or_retry(j, &f, env->now);
    j->further_configured = s->further;
    if (j->further_configured < j->nfurther)
        return send_further_configure(j, env, j->further_configured) | LC_CHANGED;
    return deployed(j, env);
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

/* The stage request every worker of the job gets, but for its number,
 * into the set (its paths copied). -1 when out of memory. */
static int stage_template(struct lc_set *set, const struct bb_job *j, const struct bb_config *cfg,
                          const struct stage_spec *s, uint32_t flags)
{
    bool in = s->direction == STAGE_IN;
    bool list_out = !in && s->type == STAGE_LIST;
    /* Into or out of the job's first mount, or a further one it names. */
    const char *inside = in ? s->destination : s->source;
    if (!list_out)
        inside = persist_job_stage_mount(&j->req, inside, set->further_name);
    set->stage_source = in ? strdup(s->source) : inside_path(inside);
    set->stage_destination = in ? inside_path(inside) : strdup(s->destination);
    set->threads = malloc((j->nnodes ? j->nnodes : 1) * sizeof(*set->threads));
    if (!set->stage_source || !set->stage_destination || !set->threads)
        return -1;
    for (size_t i = 0; i < j->nnodes; i++)
        set->threads[i] = bb_stage_threads(cfg, j->nodes[i].cpus);
    set->stage = (struct agent_stage){
        .job_id = j->job_id, .direction = in ? AGENT_STAGE_IN : AGENT_STAGE_OUT,
        .type = (uint32_t)s->type, .nworkers = (uint32_t)j->nnodes,
        .threads = cfg->stage_threads, .flags = flags | (s->verify ? AGENT_STAGE_VERIFY : 0),
        .threads_per_cpu = cfg->stage_threads_per_cpu,
        .max_mdops = j->req.max_mdops ? j->req.max_mdops : cfg->max_mdops,
        .max_bandwidth = j->req.max_bw ? j->req.max_bw : cfg->max_bandwidth,
        .source = set->stage_source, .destination = set->stage_destination,
        .name = set->further_name,
    };
    return 0;
}

/* Worker k's STAGE: the set's template with its number. */
static void build_stage(const struct lc_set *s, size_t k, struct rpc_writer *w)
{
    struct agent_stage m = s->stage;
    m.worker = (uint32_t)s->node[k];
    m.threads = s->threads[s->node[k]];
    agent_stage_put(w, &m);
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

/* A worker's final WATCH answer, read where it came (set_answered). */
static void digest_answer(struct lc_set *s, size_t k)
{
    struct lc_digest *d = &s->digest[k];
    struct rpc_reader r = s->call[k].reply.reader;
    struct agent_stage_status st;
    if (d->read || agent_stage_status_get(&r, &st) < 0)
        return;
    d->read = true;
    d->exit_status = st.exit_status;
    char *first = st.summary[0] ? add_summary(&d->part, st.summary) : NULL;
    if (st.exit_status != 0)
        d->why = first ? first : first_line(st.errors);
    else
        free(first);
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
    int rc;
    if (all_sent) {
        /* Every worker is asked the same; each answer is read as it comes. */
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        agent_watch_put(&w, &(struct agent_watch){ j->job_id, AGENT_OP_RUNNING,
                                                   (uint32_t)env->hold_ms });
        s->digest = calloc(nodes ? nodes : 1, sizeof(*s->digest));
        rc = s->digest ? set_share(s, &w) : (rpc_writer_free(&w), -1);
    } else {
        s->build = build_stage;
        rc = stage_template(s, j, env->cfg, spec, j->finalizing ? AGENT_STAGE_FINALIZE : 0);
    }
    if (rc < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a stage request");
        set_free(s);
        to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < nodes; i++)
        if (all_sent || !j->nodes[i].stage_sent)
            set_add(s, j, i, all_sent ? AGENT_WATCH : AGENT_STAGE);
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
        const struct lc_digest *d = &s->digest[k];
        if (!d->read)
            continue;   /* cannot be: the set would have failed */
        totals->files += d->part.files;
        totals->verified += d->part.verified;
        totals->dirs += d->part.dirs;
        totals->bytes += d->part.bytes;
        totals->errors += d->part.errors;
        if (d->part.seconds > totals->seconds)
            totals->seconds = d->part.seconds;   /* workers run side by side */
        if (d->exit_status != 0 && failed++ == 0 &&
            asprintf(&cause, "%s source=%s on node %s: %s", verb, spec->source,
                     j->nodes[s->node[k]].name, d->why ? d->why : "the stager failed") < 0)
            cause = NULL;
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

/* One request naming the job (TEARDOWN, STATUS) to every node; nothing is
 * sent when out of memory (the caller's next step tries again). */
static void send_ref_to_all(struct bb_job *j, enum set_kind kind, uint16_t op, bool hurry,
                            const struct lc_env *env)
{
    struct lc_set *s = set_new(j, kind, env);
    if (!s)
        return;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ j->job_id, hurry });
    if (set_share(s, &w) < 0) {
        set_free(s);
        return;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        set_add(s, j, i, op);
    set_send(j, s, env);
}

static int step_teardown(struct bb_job *j, const struct lc_env *env)
{
    if (j->nnodes == 0)
        return torn_down(j, env);
    /* Teardown is idempotent on the agents: sent to every node. Not sent
     * (out of memory): tried again at the next step rather than leave data
     * behind. */
    send_ref_to_all(j, SET_TEARDOWN, AGENT_TEARDOWN, j->hurry, env);
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
    send_ref_to_all(j, SET_POLL, AGENT_STATUS, false, env);
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
    if (s->unbuilt) {
        struct failures f = { .count = 1, .worst = FAIL_TRANSIENT,
                              .why = strdup("out of memory encoding requests to the job's nodes") };
        *events = fail_or_retry(j, &f, env->now);
        free(finished);
        set_free(s);
        return 0;
    }
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
    set_retire(s, env);
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
