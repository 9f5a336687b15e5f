/* agents: see agents.h. */
#include "agents.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "net.h"

static void disconnect(struct agent *a)
{
    if (a->connected)
        agent_session_close(&a->s);
    a->connected = false;
}

int agents_sync(struct agents *ag, const struct world *w)
{
    struct agent *next = calloc(w->nnodes ? w->nnodes : 1, sizeof(*next));
    if (!next)
        return -ENOMEM;
    for (size_t i = 0; i < w->nnodes; i++) {
        const struct world_node *wn = &w->nodes[i];
        struct agent *a = &next[i];
        for (size_t k = 0; k < ag->n; k++) {
            struct agent *old = &ag->a[k];
            if (old->name[0] && strcmp(old->name, wn->name) == 0 && strcmp(old->host, wn->host) == 0 &&
                old->port == wn->port) {
                *a = *old;
                old->name[0] = '\0';   /* taken */
                break;
            }
        }
        if (!a->name[0]) {
            snprintf(a->name, sizeof(a->name), "%s", wn->name);
            snprintf(a->host, sizeof(a->host), "%s", wn->host);
            a->port = wn->port;
            rpc_writer_init(&a->msg, NULL, 0);
        }
    }
    for (size_t k = 0; k < ag->n; k++)
        if (ag->a[k].name[0]) {
            disconnect(&ag->a[k]);
            rpc_writer_free(&ag->a[k].msg);
            free(ag->a[k].report.jobs);
        }
    free(ag->a);
    ag->a = next;
    ag->n = w->nnodes;
    return 0;
}

/* One agent's exchange of op (body out); the outcome in a->have_report,
 * a->sent or a->err. */
static void exchange_one(struct agent *a, const struct session_auth *auth, uint16_t op,
                         const struct rpc_writer *out, int64_t deadline)
{
    int64_t now = net_now_ms();
    if (!a->connected) {
        if (now < a->retry_ms) {
            snprintf(a->err, sizeof(a->err), "unreachable; next try in %lld ms",
                     (long long)(a->retry_ms - now));
            return;
        }
        int left = (int)(deadline - now);
        int rc = agent_session_connect(&a->s, auth, a->name, a->host, a->port,
                                       left > 0 ? left : 1, a->err, sizeof(a->err));
        if (rc < 0) {
            a->retry_ms = now + AGENTS_RETRY_MS;
            return;
        }
        a->connected = true;
    }
    struct session_msg m = { 0 };
    int rc = agent_session_send(&a->s, op, 0, out->data, out->len, deadline);
    if (rc == 0)
        rc = agent_session_recv(&a->s, &m, AGENT_MAX_BODY, deadline);
    if (rc < 0) {
        snprintf(a->err, sizeof(a->err), "%s", rc == -ECONNRESET ? "the agent closed the session"
                                               : rc == -EBADMSG ? "a message did not open"
                                               : strerror(-rc));
        disconnect(a);   /* a late answer would be taken for the next one */
        return;
    }
    struct rpc_reader r;
    rpc_reader_init(&r, m.body, m.len);
    if (m.status < 0) {
        const char *text;
        uint32_t fault;
        snprintf(a->err, sizeof(a->err), "refused: %s",
                 agent_error_get(&r, &text, &fault) == 0 ? text : strerror(-m.status));
    } else if (op == AGENT_QOS && a->have_report) {
        a->sent = true;   /* the usage was taken just before */
    } else if (qos_report_get(&r, &a->report) < 0) {
        free(a->report.jobs);
        memset(&a->report, 0, sizeof(a->report));
        snprintf(a->err, sizeof(a->err), "a malformed report");
    } else {
        a->have_report = true;
        a->sent = a->report_late = op == AGENT_QOS;
        a->answered_ms = net_now_ms();
    }
    free(m.plain);
}

struct pool {
    struct agents *ag;
    atomic_size_t next;
    uint16_t op;
    const struct rpc_writer *ask;   /* AGENT_QOS_REPORT's body; else each agent's msg */
    int64_t deadline;
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->ag->n;)
        if (p->ag->a[i].busy)
            exchange_one(&p->ag->a[i], p->ag->auth, p->op,
                         p->ask ? p->ask : &p->ag->a[i].msg, p->deadline);
    return NULL;
}

static void run_pool(struct agents *ag, uint16_t op, const struct rpc_writer *ask,
                     int64_t deadline_ms)
{
    size_t busy = 0;
    for (size_t i = 0; i < ag->n; i++)
        busy += ag->a[i].busy;
    struct pool p = { .ag = ag, .op = op, .ask = ask, .deadline = deadline_ms };
    size_t nthreads = busy < AGENTS_THREADS ? busy : AGENTS_THREADS;
    pthread_t t[AGENTS_THREADS];
    size_t started = 0;
    for (; started + 1 < nthreads; started++)
        if (pthread_create(&t[started], NULL, worker, &p) != 0)
            break;
    worker(&p);   /* this thread works too */
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

void agents_collect(struct agents *ag, uint64_t cycle, int64_t deadline_ms)
{
    for (size_t i = 0; i < ag->n; i++) {
        struct agent *a = &ag->a[i];
        free(a->report.jobs);
        memset(&a->report, 0, sizeof(a->report));
        a->have_report = a->sent = a->report_late = false;
        a->err[0] = '\0';
    }
    struct rpc_writer ask;
    rpc_writer_init(&ask, NULL, 0);
    rpc_put_u32(&ask, QOS_PROTO_VERSION);
    rpc_put_u64(&ask, cycle);
    run_pool(ag, AGENT_QOS_REPORT, &ask, deadline_ms);
    rpc_writer_free(&ask);
}

void agents_exchange(struct agents *ag, int64_t deadline_ms)
{
    for (size_t i = 0; i < ag->n; i++)
        ag->a[i].sent = false;
    run_pool(ag, AGENT_QOS, NULL, deadline_ms);
}

void agents_free(struct agents *ag)
{
    for (size_t i = 0; i < ag->n; i++) {
        disconnect(&ag->a[i]);
        rpc_writer_free(&ag->a[i].msg);
        free(ag->a[i].report.jobs);
    }
    free(ag->a);
    ag->a = NULL;
    ag->n = 0;
}
