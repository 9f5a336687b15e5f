/* agent_link_io: the I/O thread: the peers (one per node, host and port),
 * the requests handed over and the helpers' results taken in turn, epoll
 * events passed to their peer, and every SCAN_MS the deadlines, the
 * connections to try again and the idle sessions to close. */
#include "agent_link_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent_proto.h"
#include "hash.h"
#include "net.h"

#define SCAN_MS 50                     /* how often deadlines and idle sessions are looked at */

static struct peer *find_peer(struct agent_link *l, const struct agent_call *c)
{
    char key[600];
    int n = snprintf(key, sizeof(key), "%s|%s|%d", c->node, c->host, c->port);
    size_t b = (size_t)hash_bytes(key, (size_t)n) & (l->nbuckets - 1);
    for (struct peer *p = l->buckets[b]; p; p = p->hnext)
        if (p->port == c->port && strcmp(p->node, c->node) == 0 && strcmp(p->host, c->host) == 0)
            return p;
    if (l->npeers >= l->nbuckets * 2) {
        /* Grow: rehash every peer into twice the buckets. */
        size_t nb = l->nbuckets * 4;
        struct peer **grown = calloc(nb, sizeof(*grown));
        if (grown) {
            for (struct peer *p = l->peers; p; p = p->next) {
                int m = snprintf(key, sizeof(key), "%s|%s|%d", p->node, p->host, p->port);
                size_t pb = (size_t)hash_bytes(key, (size_t)m) & (nb - 1);
                p->hnext = grown[pb];
                grown[pb] = p;
            }
            free(l->buckets);
            l->buckets = grown;
            l->nbuckets = nb;
            b = (size_t)hash_bytes(key, (size_t)snprintf(key, sizeof(key), "%s|%s|%d", c->node,
                                                         c->host, c->port)) & (nb - 1);
        }
    }
    struct peer *p = calloc(1, sizeof(*p));
    if (!p || !(p->node = strdup(c->node)) || !(p->host = strdup(c->host))) {
        if (p)
            free(p->node);
        free(p);
        return NULL;
    }
    p->port = c->port;
    p->fd = -1;
    p->hnext = l->buckets[b];
    l->buckets[b] = p;
    p->next = l->peers;
    l->peers = p;
    l->npeers++;
    return p;
}

static void take_submitted(struct agent_link *l)
{
    pthread_mutex_lock(&l->lock);
    struct agent_call *calls = l->submitted;
    struct helper_job *results = l->results;
    l->submitted = l->submitted_tail = NULL;
    l->results = NULL;
    pthread_mutex_unlock(&l->lock);
    for (struct helper_job *job = results, *next; job; job = next) {
        next = job->next;
        struct peer *p = job->peer;
        p->helper_busy = false;
        if (job->kind == H_HELLO)
            link_hello_ready(l, p, job);
        else
            link_verified(l, p, job);
        free(job);
    }
    for (struct agent_call *c = calls, *next; c; c = next) {
        next = c->next;
        struct peer *p = find_peer(l, c);
        if (!p) {
            link_finish(c, -ENOMEM, "node %s: out of memory", c->node);
            continue;
        }
        link_enqueue(p, c, false);
        if (p->state == P_IDLE) {
            p->tries = p->cuts = 0;
            link_start_connecting(l, p);
        } else if (p->state == P_READY) {
            link_pump(l, p);
        }
    }
}

/* Requests past their deadline end; connections that take too long fail;
 * refused ones are tried again; idle sessions close. */
static void scan(struct agent_link *l)
{
    link_retire_old_fanout(l);
    int64_t now = net_now_ms();
    for (struct peer *p = l->peers; p; p = p->next) {
        struct agent_call **lists[2] = { &p->inflight, &p->queued };
        for (int i = 0; i < 2; i++)
            for (struct agent_call **q = lists[i]; *q;) {
                struct agent_call *c = *q;
                if (now < c->deadline) {
                    q = &c->next;
                    continue;
                }
                *q = c->next;
                if (i == 0)
                    p->ninflight--;
                link_count(&l->stats.timed_out);
                link_finish(c, -ETIMEDOUT, "node %s: agent %s:%d: %s: no answer within %d s%s",
                            p->node, p->host, p->port, agent_op_name(c->op),
                            (c->timeout_ms + 999) / 1000,
                            p->state == P_READY || i == 0 ? "" : " (no session: still connecting)");
            }
        p->queued_tail = NULL;
        for (struct agent_call *c = p->queued; c; c = c->next)
            p->queued_tail = c;
        if ((p->state == P_CONNECTING || p->state == P_HELLO) && now >= p->state_deadline) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d: %s timed out", p->node, p->host,
                     p->port, p->state == P_CONNECTING ? "connect" : "handshake");
            p->tries = AGENT_LINK_CONNECT_TRIES;
            link_connect_failed(l, p, -ETIMEDOUT, why);
        } else if (p->state == P_BACKOFF && now >= p->retry_at) {
            link_start_connecting(l, p);
        } else if (p->state == P_READY && !p->ninflight && !p->queued &&
                   now - p->last_used >= l->cfg.idle_ms) {
            link_close_peer(l, p);
        } else if (p->state == P_READY && p->queued) {
            link_pump(l, p);
        }
    }
}

void *link_io_main(void *arg)
{
    struct agent_link *l = arg;
    struct epoll_event evs[128];
    int64_t next_scan = net_now_ms() + SCAN_MS;
    for (;;) {
        int wait = (int)(next_scan - net_now_ms());
        int n = epoll_wait(l->epfd, evs, 128, wait > 0 ? wait : 0);
        pthread_mutex_lock(&l->lock);
        bool stopping = l->stopping;
        pthread_mutex_unlock(&l->lock);
        if (stopping)
            break;
        for (int i = 0; i < n; i++) {
            if (!evs[i].data.ptr) {
                uint64_t v;
                ssize_t got = read(l->evfd, &v, sizeof(v));
                (void)got;
                continue;
            }
            link_on_event(l, evs[i].data.ptr, evs[i].events);
        }
        take_submitted(l);
        if (net_now_ms() >= next_scan) {
            scan(l);
            next_scan = net_now_ms() + SCAN_MS;
        }
    }
    return NULL;
}
