/* qos_agents: see qos_agents.h. */
#include "qos_agents.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "net.h"

void agents_take_incoming(struct agent *a, int64_t answered_ms)
{
    struct qos_report taken = a->incoming;
    uint32_t cap = a->incoming_cap;
    a->incoming = a->report;
    a->incoming_cap = a->report_cap;
    a->report = taken;
    a->report_cap = cap;
    a->have_report = true;
    a->answered_ms = answered_ms;
}

void agents_close(struct agent *a)
{
    if (a->connected)
        agent_session_close(&a->s);
    a->connected = false;
    a->pending = 0;
    a->group_epoch_sent = 0;   /* a new session hears the group's list again */
}

static void forget(struct agent *a)
{
    agents_close(a);
    rpc_writer_free(&a->msg);
    free(a->report.jobs);
    free(a->incoming.jobs);
    free(a->group_plain);
}

int agents_sync(struct agents *ag, const struct agent_addr *nodes, size_t n)
{
    struct agent *next = calloc(n ? n : 1, sizeof(*next));
    if (!next)
        return -ENOMEM;
    int changed = n != ag->n;
    for (size_t i = 0; i < n; i++) {
        const struct agent_addr *wn = &nodes[i];
        struct agent *a = &next[i];
        for (size_t k = 0; k < ag->n; k++) {
            struct agent *old = &ag->a[k];
            if (old->name[0] && strcmp(old->name, wn->name) == 0 && strcmp(old->host, wn->host) == 0 &&
                old->port == wn->port) {
                *a = *old;
                old->name[0] = '\0';   /* taken */
                changed |= k != i;
                break;
            }
        }
        if (!a->name[0]) {
            changed = 1;
            snprintf(a->name, sizeof(a->name), "%s", wn->name);
            snprintf(a->host, sizeof(a->host), "%s", wn->host);
            a->port = wn->port;
            rpc_writer_init(&a->msg, NULL, 0);
        }
    }
    for (size_t k = 0; k < ag->n; k++)
        if (ag->a[k].name[0])
            forget(&ag->a[k]);
    free(ag->a);
    ag->a = next;
    ag->n = n;
    return changed;
}

struct rpc_writer *agents_message(struct agent *a)
{
    a->msg.len = 0;      /* the buffer is kept from cycle to cycle */
    a->msg.failed = 0;
    rpc_put_raw(&a->msg, NULL, SESSION_OVERHEAD);
    return &a->msg;
}

static void failed(struct agent *a, int rc)
{
    snprintf(a->err, sizeof(a->err), "%s", rc == -ECONNRESET ? "the agent closed the session"
                                           : rc == -EBADMSG ? "a message did not open"
                                           : rc == -ETIMEDOUT ? "no report by the deadline"
                                           : strerror(-rc));
    agents_close(a);   /* a late answer would be taken for the next one */
}

/* Sends a its msg (connecting first if it has no session): pending, or
 * a->err. */
static void send_one(struct agent *a, const struct session_auth *auth, int64_t deadline)
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
        a->pending = 0;
    }
    if (!rpc_writer_ok(&a->msg) || a->msg.len < SESSION_OVERHEAD) {
        snprintf(a->err, sizeof(a->err), "%s", strerror(ENOMEM));
        return;
    }
    /* Sealed where it was written: no copy, no allocation per message. */
    int rc = agent_session_send_in_place(&a->s, a->op ? a->op : AGENT_QOS, 0, a->msg.data,
                                         a->msg.len - SESSION_OVERHEAD, deadline);
    if (rc < 0)
        failed(a, rc);
    else
        a->pending++;
}

/* Takes every answer a owes (its reports: the last one kept), by
 * deadline: have_report, report, answered_ms, or a->err. */
static void receive_one(struct agent *a, int64_t deadline)
{
    while (a->connected && a->pending > 0) {
        struct session_msg m = { 0 };
        int rc = agent_session_recv(&a->s, &m, AGENT_MAX_BODY, deadline);
        if (rc < 0) {
            failed(a, rc);
            return;
        }
        a->pending--;
        struct rpc_reader r;
        rpc_reader_init(&r, m.body, m.len);
        if (m.status < 0) {
            const char *text;
            uint32_t fault;
            snprintf(a->err, sizeof(a->err), "refused: %s",
                     agent_error_get(&r, &text, &fault) == 0 ? text : strerror(-m.status));
        } else if (m.op == AGENT_QOS_GROUP) {
            /* A relay's group report: kept whole for the caller, who
             * checks it against what it asked (one thread, after the
             * pool: it writes the members' slots). */
            free(a->group_plain);
            a->group_plain = m.plain;
            a->group_body = m.body;
            a->group_len = m.len;
            a->answered_ms = net_now_ms();
            m.plain = NULL;
        } else if (qos_report_get_into(&r, &a->incoming, &a->incoming_cap) < 0) {
            snprintf(a->err, sizeof(a->err), "a malformed report");
        } else {
            agents_take_incoming(a, net_now_ms());
        }
        free(m.plain);
    }
}

struct pool {
    struct agents *ag;
    atomic_size_t next;
    bool send;                      /* else receive */
    int64_t deadline;
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->ag->n;) {
        struct agent *a = &p->ag->a[i];
        if (p->send && a->busy)
            send_one(a, p->ag->auth, p->deadline);
        else if (!p->send && a->pending)
            receive_one(a, p->deadline);
    }
    return NULL;
}

/* The worker threads, started when first needed and kept: starting and
 * joining a thread costs about 50 us of CPU on the project's VM, and each
 * period started and joined up to 15 twice, 1.6 ms of qosd's CPU (issue
 * 24's acceptance 5). Each round of work (one run_pool) wakes every kept
 * thread once; run_pool returns when all have finished it. */
struct pool_thread {
    struct agents_pool *kp;
    pthread_t t;
    uint64_t seen;                  /* the last round it worked on */
};

struct agents_pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    struct pool_thread th[AGENTS_THREADS - 1];
    size_t nthreads;
    uint64_t round;
    size_t working;                 /* threads not yet done with this round */
    bool stop;
    struct pool *work;
};

static void *pool_thread(void *arg)
{
    struct pool_thread *th = arg;
    struct agents_pool *kp = th->kp;
    pthread_mutex_lock(&kp->mu);
    for (;;) {
        while (!kp->stop && kp->round == th->seen)
            pthread_cond_wait(&kp->go, &kp->mu);
        if (kp->stop)
            break;
        th->seen = kp->round;
        struct pool *p = kp->work;
        pthread_mutex_unlock(&kp->mu);
        worker(p);
        pthread_mutex_lock(&kp->mu);
        if (--kp->working == 0)
            pthread_cond_signal(&kp->done);
    }
    pthread_mutex_unlock(&kp->mu);
    return NULL;
}

static struct agents_pool *pool_of(struct agents *ag)
{
    if (!ag->pool) {
        struct agents_pool *kp = calloc(1, sizeof(*kp));
        if (!kp)
            return NULL;   /* run_pool works in this thread alone */
        pthread_mutex_init(&kp->mu, NULL);
        pthread_cond_init(&kp->go, NULL);
        pthread_cond_init(&kp->done, NULL);
        ag->pool = kp;
    }
    return ag->pool;
}

/* Whether this round may wait on a peer: a send that must connect first
 * (a handshake), or an answer owed that has not begun to arrive (one
 * poll over the sessions). A round that cannot is done in the calling
 * thread alone: waking the kept threads costs more than its work when
 * the answers are in, as a relay's group reports are at a period's
 * start. */
static bool may_wait(struct agents *ag, bool send, size_t busy)
{
    if (send) {
        for (size_t i = 0; i < ag->n; i++)
            if (ag->a[i].busy && !ag->a[i].connected)
                return true;
        return false;
    }
    if (busy > ag->ready_cap) {
        struct pollfd *grown = realloc(ag->ready, busy * sizeof(*grown));
        if (!grown)
            return true;
        ag->ready = grown;
        ag->ready_cap = busy;
    }
    size_t n = 0;
    for (size_t i = 0; i < ag->n && n < busy; i++)
        if (ag->a[i].pending && ag->a[i].connected)
            ag->ready[n++] = (struct pollfd){ .fd = ag->a[i].s.fd, .events = POLLIN };
    if (n < busy)
        return true;   /* a pending answer without a session: let the workers sort it */
    int got = poll(ag->ready, (nfds_t)n, 0);
    return got < 0 || (size_t)got < n;
}

static void run_pool(struct agents *ag, bool send, int64_t deadline_ms)
{
    size_t busy = 0;
    for (size_t i = 0; i < ag->n; i++)
        busy += send ? ag->a[i].busy : ag->a[i].pending > 0;
    struct pool p = { .ag = ag, .send = send, .deadline = deadline_ms };
    size_t wanted = (busy + AGENTS_PER_THREAD - 1) / AGENTS_PER_THREAD;
    wanted = wanted < AGENTS_THREADS ? wanted : AGENTS_THREADS;
    if (wanted > 1 && !may_wait(ag, send, busy))
        wanted = 1;
    struct agents_pool *kp = wanted > 1 ? pool_of(ag) : NULL;
    if (kp) {
        pthread_mutex_lock(&kp->mu);
        while (kp->nthreads + 1 < wanted) {
            struct pool_thread *th = &kp->th[kp->nthreads];
            th->kp = kp;
            th->seen = kp->round;   /* set before it runs: it takes the next round */
            if (pthread_create(&th->t, NULL, pool_thread, th) != 0)
                break;   /* fewer threads: the waits overlap less, nothing is lost */
            kp->nthreads++;
        }
        kp->work = &p;
        kp->working = kp->nthreads;
        kp->round++;
        pthread_cond_broadcast(&kp->go);
        pthread_mutex_unlock(&kp->mu);
    }
    worker(&p);   /* this thread works too */
    if (kp) {
        pthread_mutex_lock(&kp->mu);
        while (kp->working > 0)
            pthread_cond_wait(&kp->done, &kp->mu);
        kp->work = NULL;
        pthread_mutex_unlock(&kp->mu);
    }
}

static void pool_free(struct agents_pool *kp)
{
    if (!kp)
        return;
    pthread_mutex_lock(&kp->mu);
    kp->stop = true;
    pthread_cond_broadcast(&kp->go);
    pthread_mutex_unlock(&kp->mu);
    for (size_t i = 0; i < kp->nthreads; i++)
        pthread_join(kp->th[i].t, NULL);
    pthread_cond_destroy(&kp->go);
    pthread_cond_destroy(&kp->done);
    pthread_mutex_destroy(&kp->mu);
    free(kp);
}

void agents_receive(struct agents *ag, int64_t deadline_ms)
{
    for (size_t i = 0; i < ag->n; i++) {
        struct agent *a = &ag->a[i];
        a->report.njobs = 0;   /* its buffer kept */
        a->have_report = false;
        free(a->group_plain);
        a->group_plain = NULL;
        a->group_body = NULL;
        a->group_len = 0;
        a->err[0] = '\0';
    }
    run_pool(ag, false, deadline_ms);
}

void agents_send(struct agents *ag, int64_t deadline_ms)
{
    for (size_t i = 0; i < ag->n; i++)
        if (ag->a[i].busy)
            ag->a[i].err[0] = '\0';
    run_pool(ag, true, deadline_ms);
}

void agents_free(struct agents *ag)
{
    for (size_t i = 0; i < ag->n; i++)
        forget(&ag->a[i]);
    free(ag->a);
    ag->a = NULL;
    ag->n = 0;
    pool_free(ag->pool);
    ag->pool = NULL;
    free(ag->ready);
    ag->ready = NULL;
    ag->ready_cap = 0;
}
