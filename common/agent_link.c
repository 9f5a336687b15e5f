/* agent_link: the API of agent_link.h (making and closing a link, handing
 * requests to its I/O thread, waiting for one); the work behind it is in
 * agent_link_io.c and the files agent_link_int.h names. */
#include "agent_link_int.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net.h"

void agent_reply_free(struct agent_reply *reply)
{
    free(reply->body);
    *reply = (struct agent_reply){ 0 };
}

struct agent_link *agent_link_new(const struct agent_link_config *cfg, char *err, size_t errlen)
{
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium does not initialise");
        return NULL;
    }
    struct agent_link *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->cfg = *cfg;
    if (l->cfg.connect_timeout_ms <= 0)
        l->cfg.connect_timeout_ms = 10000;
    if (l->cfg.idle_ms <= 0)
        l->cfg.idle_ms = 20000;
    l->nbuckets = 256;
    l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&l->lock, NULL);
    pthread_mutex_init(&l->fanout_lock, NULL);
    pthread_cond_init(&l->work_ready, NULL);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    if (!l->buckets || l->epfd < 0 || l->evfd < 0 ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->evfd, &ev) < 0) {
        snprintf(err, errlen, "agent link: %s", strerror(errno ? errno : ENOMEM));
        agent_link_free(l);
        return NULL;
    }
    int rc = pthread_create(&l->io, NULL, link_io_main, l);
    l->io_started = rc == 0;
    for (unsigned i = 0; rc == 0 && i < AGENT_LINK_HELPERS; i++)
        if ((rc = pthread_create(&l->helpers[i], NULL, link_helper_main, l)) == 0)
            l->nhelpers++;
    if (rc != 0) {
        snprintf(err, errlen, "agent link: cannot start a thread: %s", strerror(rc));
        agent_link_free(l);
        return NULL;
    }
    return l;
}

void agent_link_free(struct agent_link *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stopping = true;
    pthread_cond_broadcast(&l->work_ready);
    pthread_mutex_unlock(&l->lock);
    if (l->evfd >= 0)
        link_wake(l);
    if (l->io_started)
        pthread_join(l->io, NULL);
    for (unsigned i = 0; i < l->nhelpers; i++)
        pthread_join(l->helpers[i], NULL);
    /* Work a helper never took, results the I/O thread never took. */
    struct helper_job *lists[2] = { l->work, l->results };
    for (int i = 0; i < 2; i++)
        for (struct helper_job *job = lists[i], *next; job; job = next) {
            next = job->next;
            free(job->cred);
            sodium_memzero(job, sizeof(*job));
            free(job);
        }
    for (struct agent_call *c = l->submitted, *next; c; c = next) {
        next = c->next;
        link_finish(c, -ECANCELED, "node %s: the agent link is closing", c->node);
    }
    for (struct peer *p = l->peers, *next; p; p = next) {
        next = p->next;
        link_fail_all(p, -ECANCELED, "the agent link is closing");
        link_close_peer(l, p);
        free(p->node);
        free(p->host);
        free(p);
    }
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->evfd >= 0)
        close(l->evfd);
    link_fanout_retire(l);
    free(l->fanout_nodes);
    pthread_cond_destroy(&l->work_ready);
    pthread_mutex_destroy(&l->lock);
    pthread_mutex_destroy(&l->fanout_lock);
    free(l->buckets);
    free(l);
}

static void prepare(struct agent_call *c, int64_t now)
{
    c->rc = 0;
    c->err[0] = '\0';
    c->reply = (struct agent_reply){ 0 };
    c->resent = false;
    c->next = NULL;
    c->deadline = now + (c->timeout_ms > 0 ? c->timeout_ms : 30000);
}

void agent_link_send(struct agent_link *l, struct agent_call *c)
{
    agent_link_send_many(l, &c, 1);
}

void agent_link_send_many(struct agent_link *l, struct agent_call **calls, size_t n)
{
    if (n == 0)
        return;
    int64_t now = net_now_ms();
    for (size_t k = 0; k < n; k++) {
        prepare(calls[k], now);
        if (k)
            calls[k - 1]->next = calls[k];
    }
    pthread_mutex_lock(&l->lock);
    if (l->submitted_tail)
        l->submitted_tail->next = calls[0];
    else
        l->submitted = calls[0];
    l->submitted_tail = calls[n - 1];
    pthread_mutex_unlock(&l->lock);
    link_wake(l);
}

struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
};

static void wake_waiter(struct agent_call *c)
{
    struct waiter *w = c->arg;
    pthread_mutex_lock(&w->lock);
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int agent_link_call(struct agent_link *l, const char *node, const char *host, int port,
                    uint16_t op, const void *body, size_t len, int timeout_ms,
                    struct agent_reply *reply, char *err, size_t errlen)
{
    struct waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
    struct agent_call c = { .node = node, .host = host, .port = port, .op = op, .body = body,
                            .len = len, .timeout_ms = timeout_ms, .done = wake_waiter, .arg = &w };
    agent_link_send(l, &c);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    *reply = c.reply;
    snprintf(err, errlen, "%s", c.err);
    return c.rc;
}

void agent_link_stats(struct agent_link *l, struct agent_link_stats *out)
{
    out->sessions = __atomic_load_n(&l->stats.sessions, __ATOMIC_RELAXED);
    out->credentials = __atomic_load_n(&l->stats.credentials, __ATOMIC_RELAXED);
    out->handshakes_failed = __atomic_load_n(&l->stats.handshakes_failed, __ATOMIC_RELAXED);
    out->sent = __atomic_load_n(&l->stats.sent, __ATOMIC_RELAXED);
    out->received = __atomic_load_n(&l->stats.received, __ATOMIC_RELAXED);
    out->resent = __atomic_load_n(&l->stats.resent, __ATOMIC_RELAXED);
    out->timed_out = __atomic_load_n(&l->stats.timed_out, __ATOMIC_RELAXED);
    out->open_sessions = __atomic_load_n(&l->open_sessions, __ATOMIC_RELAXED);
}
