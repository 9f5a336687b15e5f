#include "fake_agents.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "stage_report.h"

#define MAX_NODES 64

struct fake_stage {
    uint32_t job_id;
    int64_t ends_at;
    bool started;
    char source[256];
};

struct fake_node {
    struct fake_node_script script;
    int calls[16];
    int flap, leftovers, lost;
    struct fake_stage stage;
};

/* An answer due at `due`. */
struct pending {
    struct agent_call *call;
    int64_t due;
    struct pending *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct fake_node nodes[MAX_NODES + 1];
static struct pending *queue;
static pthread_t thread;
static bool running, stopping;
static int readies;

int64_t fake_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int node_of(const struct agent_call *c)
{
    int n = atoi(c->node + 1);
    return n >= 1 && n <= MAX_NODES ? n : 0;
}

static void error_reply(struct agent_call *c, int status, uint32_t fault, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void error_reply(struct agent_call *c, int status, uint32_t fault, const char *fmt, ...)
{
    struct agent_error e = { .fault = fault };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.text, sizeof(e.text), fmt, ap);
    va_end(ap);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_error_put(&w, &e);
    c->reply = (struct agent_reply){ .status = status, .body = w.data, .len = w.len };
    rpc_reader_init(&c->reply.reader, w.data, w.len);
    agent_error_get(&c->reply.reader, &c->reply.message, &c->reply.fault);
}

static void ok_reply(struct agent_call *c, struct rpc_writer *w)
{
    c->reply = (struct agent_reply){ .status = 0, .body = w->data, .len = w->len };
    rpc_reader_init(&c->reply.reader, w->data, w->len);
}

/* Stages whose source holds this text fail on every node ("": none). */
static char failing_source[64];

void fake_fail_source(const char *text)
{
    snprintf(failing_source, sizeof(failing_source), "%s", text ? text : "");
}

static bool failing_fs;

void fake_fail_fs(bool on)
{
    failing_fs = on;
}

static void status_reply(struct agent_call *c, struct fake_node *n, int64_t now, bool lost)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    int state = lost || !n->stage.started ? AGENT_OP_NONE
              : now < n->stage.ends_at ? AGENT_OP_RUNNING : AGENT_OP_DONE;
    bool fails = n->script.kind == FAKE_STAGE_FAILS ||
                 (failing_source[0] && strstr(n->stage.source, failing_source));
    char *summary = NULL;
    if (state == AGENT_OP_DONE) {
        struct stage_report_failure f = { n->stage.source, ENOENT, "No such file or directory",
                                          "open source" };
        if (failing_fs)
            f = (struct stage_report_failure){ n->stage.source, EIO, "Input/output error",
                                               "read source (the job's file system: server 0 "
                                               "(n1:40000): cannot connect to n1:40000: "
                                               "Connection refused)" };
        struct stage_report r = { .direction = "in", .source = n->stage.source, .files = 10,
                                  .bytes = 1000, .dirs = 1, .errors = fails, .verified = 10,
                                  .fs_faults = fails && failing_fs,
                                  .seconds = 0.5, .complete = !fails, .failures = fails ? &f : NULL,
                                  .nfailures = fails };
        summary = stage_report_encode(&r);
    }
    agent_stage_status_put(&w, &(struct agent_stage_status){
        .state = (uint32_t)state, .exit_status = state == AGENT_OP_DONE ? fails : -1,
        .summary = summary ? summary : "",
        .errors = fails ? "adafs-stage: it failed\nsecond line\n" : "" });
    free(summary);
    ok_reply(c, &w);
}

/* Fills c's answer as node n answers it at `now`; returns when it is due
 * (now, or later: -1 for "never", the call's deadline). */
static int64_t answer(struct agent_call *c, struct fake_node *n, int64_t now)
{
    c->rc = 0;
    c->reply = (struct agent_reply){ 0 };
    struct rpc_reader r;
    rpc_reader_init(&r, c->body, c->len);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    int64_t due = now + (n->script.kind == FAKE_SLOW ? n->script.delay_ms : 0);
    switch (n->script.kind) {
    case FAKE_DEAD:
        c->rc = -ETIMEDOUT;
        snprintf(c->err, sizeof(c->err), "node %s: agent 127.0.0.1:6830: %s: no answer within %d s",
                 c->node, agent_op_name(c->op), c->timeout_ms / 1000);
        return now + c->timeout_ms;
    case FAKE_SQUATTER:
        c->rc = -EACCES;
        snprintf(c->err, sizeof(c->err), "node %s: agent 127.0.0.1:6830 refused the handshake: "
                 "node %s: storage unusable, drain me (unauthenticated answer)", c->node, c->node);
        return due;
    case FAKE_FLAPPING:
        if (n->flap++ % 2 == 0) {
            c->rc = -ECONNRESET;
            snprintf(c->err, sizeof(c->err), "node %s: agent 127.0.0.1:6830: %s: Connection reset "
                     "by peer", c->node, agent_op_name(c->op));
            return due;
        }
        break;
    default:
        break;
    }
    switch (c->op) {
    case AGENT_START: {
        struct agent_start m;
        if (agent_start_get(&r, &m) < 0) {
            error_reply(c, -EBADMSG, AGENT_FAULT_JOB, "node %s: malformed start request", c->node);
            break;
        }
        if (n->script.kind == FAKE_NODE_FAULT) {
            error_reply(c, -EIO, AGENT_FAULT_NODE, "node %s: storage unusable", c->node);
        } else if (n->script.kind == FAKE_JOB_FAULT) {
            error_reply(c, -EINVAL, AGENT_FAULT_JOB, "node %s: bad request", c->node);
        } else if (n->script.kind == FAKE_EXITING) {
            error_reply(c, -ECHILD, AGENT_FAULT_TRANSIENT, "node %s: server did not start: it exited",
                        c->node);
        } else if ((n->script.kind == FAKE_LEFTOVER && n->leftovers++ == 0) ||
                   n->script.kind == FAKE_ALWAYS_LEFTOVER) {
            error_reply(c, -EEXIST, AGENT_FAULT_TRANSIENT,
                        "node %s: job %u: already deployed here for another user or secret",
                        c->node, m.job_id);
        } else {
            /* FAKE_BAD_PORT: port 0, which the plugin's decoder refuses. */
            agent_started_put(&w, &(struct agent_started){
                n->script.kind == FAKE_BAD_PORT ? 0 : 4000 + (uint32_t)node_of(c), 99 });
            ok_reply(c, &w);
            return due;
        }
        break;
    }
    case AGENT_CONFIGURE:
    case AGENT_TEARDOWN:
        if (c->op == AGENT_TEARDOWN)
            n->stage.started = false;
        ok_reply(c, &w);
        break;
    case AGENT_STAGE: {
        struct agent_stage m;
        if (agent_stage_get(&r, &m) < 0) {
            error_reply(c, -EBADMSG, AGENT_FAULT_JOB, "node %s: malformed stage request", c->node);
            break;
        }
        if (n->script.kind == FAKE_BUSY_STAGE) {
            n->stage = (struct fake_stage){ m.job_id, now + n->script.stage_ms, true, "" };
            snprintf(n->stage.source, sizeof(n->stage.source), "%s", m.source);
            error_reply(c, -EBUSY, AGENT_FAULT_TRANSIENT, "node %s: a stage is already running",
                        c->node);
            break;
        }
        n->stage = (struct fake_stage){ m.job_id, now + n->script.stage_ms, true, "" };
        snprintf(n->stage.source, sizeof(n->stage.source), "%s", m.source);
        ok_reply(c, &w);
        break;
    }
    case AGENT_WATCH: {
        struct agent_watch m;
        if (agent_watch_get(&r, &m) < 0) {
            error_reply(c, -EBADMSG, AGENT_FAULT_JOB, "node %s: malformed watch", c->node);
            break;
        }
        if (n->script.kind == FAKE_LOST_STAGE && n->lost++ == 0) {
            status_reply(c, n, now, true);
            break;
        }
        if (n->script.kind == FAKE_NO_HOLD) {
            status_reply(c, n, now, false);
            return due;
        }
        /* Held until the stage ends or the hold runs out; answered then. */
        int64_t until = now + m.hold_ms;
        if (n->stage.started && n->stage.ends_at < until)
            until = n->stage.ends_at;
        c->reply = (struct agent_reply){ 0 };
        return until > due ? until : due;
    }
    default:
        rpc_put_str(&w, c->node);
        ok_reply(c, &w);
        break;
    }
    return due;
}

static void *fake_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        int64_t now = fake_now_ms();
        struct pending **p = &queue, *due = NULL;
        for (; *p; p = &(*p)->next)
            if ((*p)->due <= now) {
                due = *p;
                *p = due->next;
                break;
            }
        if (!due) {
            int64_t next = now + 1000;
            for (struct pending *q = queue; q; q = q->next)
                next = q->due < next ? q->due : next;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ms = next - now;
            ts.tv_sec += ms / 1000;
            ts.tv_nsec += (ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&changed, &lock, &ts);
            continue;
        }
        struct agent_call *c = due->call;
        free(due);
        /* A held WATCH is answered now, as the stage stands. */
        struct fake_node *n = &nodes[node_of(c)];
        if (c->op == AGENT_WATCH && c->rc == 0 && !c->reply.body)
            status_reply(c, n, fake_now_ms(), false);
        pthread_mutex_unlock(&lock);
        c->done(c);
        pthread_mutex_lock(&lock);
    }
    /* Whatever is left is cancelled, as agent_link_free does. */
    while (queue) {
        struct pending *q = queue;
        queue = q->next;
        agent_reply_free(&q->call->reply);
        q->call->rc = -ECANCELED;
        snprintf(q->call->err, sizeof(q->call->err), "cancelled");
        pthread_mutex_unlock(&lock);
        q->call->done(q->call);
        pthread_mutex_lock(&lock);
        free(q);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void fake_send(void *ctx, struct agent_call *c)
{
    (void)ctx;
    pthread_mutex_lock(&lock);
    struct fake_node *n = &nodes[node_of(c)];
    if (c->op < 16)
        n->calls[c->op]++;
    struct pending *p = malloc(sizeof(*p));
    p->call = c;
    p->due = answer(c, n, fake_now_ms());
    p->next = queue;
    queue = p;
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&lock);
}

const struct lc_transport fake_transport = { .send = fake_send };

void fake_start(int count)
{
    pthread_mutex_lock(&lock);
    memset(nodes, 0, sizeof(nodes));
    for (int i = 1; i <= count && i <= MAX_NODES; i++)
        nodes[i].script = (struct fake_node_script){ FAKE_OK, 0, 50 };
    stopping = false;
    readies = 0;
    pthread_mutex_unlock(&lock);
    running = pthread_create(&thread, NULL, fake_main, NULL) == 0;
}

void fake_stop(void)
{
    pthread_mutex_lock(&lock);
    stopping = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    if (running)
        pthread_join(thread, NULL);
    running = false;
}

void fake_set(int node, const struct fake_node_script *script)
{
    pthread_mutex_lock(&lock);
    nodes[node].script = *script;
    nodes[node].flap = nodes[node].leftovers = nodes[node].lost = 0;
    pthread_mutex_unlock(&lock);
}

int fake_calls(int node, uint16_t op)
{
    pthread_mutex_lock(&lock);
    int n = nodes[node].calls[op];
    pthread_mutex_unlock(&lock);
    return n;
}

int fake_total(uint16_t op)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i <= MAX_NODES; i++)
        n += nodes[i].calls[op];
    pthread_mutex_unlock(&lock);
    return n;
}

void fake_reset_counts(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i <= MAX_NODES; i++)
        memset(nodes[i].calls, 0, sizeof(nodes[i].calls));
    pthread_mutex_unlock(&lock);
}

void fake_ready(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    readies++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

bool fake_wait(int ms)
{
    pthread_mutex_lock(&lock);
    int64_t until = fake_now_ms() + ms;
    while (readies == 0 && fake_now_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&changed, &lock, &ts);
    }
    bool got = readies > 0;
    readies = 0;
    pthread_mutex_unlock(&lock);
    return got;
}
