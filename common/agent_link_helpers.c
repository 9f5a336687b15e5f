/* agent_link_helpers: the helper threads, which do the blocking parts of
 * a handshake off the I/O thread (resolving the host, making the hello
 * from the fan-out they share, opening the agent's answer), and that
 * fan-out: one munge credential for the hellos made within FANOUT_MS. */
#include "agent_link_int.h"

#include <errno.h>
#include <netdb.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "net.h"

#define FANOUT_MS 5000                 /* how long one credential serves the hellos made meanwhile */

static int resolve(const char *host, int port, struct sockaddr_storage *addr, socklen_t *len,
                   char *err, size_t errlen)
{
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* Its X25519 secret is every session's of it: gone once it is retired.
 * Under fanout_lock. */
void link_fanout_retire(struct agent_link *l)
{
    session_fanout_clear(&l->fanout);
    l->fanout_live = false;
    if (l->fanout_nodes)
        memset(l->fanout_nodes, 0, l->fanout_cap * sizeof(*l->fanout_nodes));
    l->fanout_count = 0;
}

/* Marks node greeted by the current fan-out: false if it was already, or
 * no room (either way: a fresh fan-out for it). Under fanout_lock. */
static bool fanout_mark(struct agent_link *l, const char *node)
{
    if (2 * (l->fanout_count + 1) > l->fanout_cap) {
        size_t cap = l->fanout_cap ? 2 * l->fanout_cap : 1024;
        uint64_t *grown = calloc(cap, sizeof(*grown));
        if (!grown)
            return false;
        for (size_t i = 0; i < l->fanout_cap; i++) {
            uint64_t h = l->fanout_nodes[i];
            size_t j = h & (cap - 1);
            while (h && grown[j])
                j = (j + 1) & (cap - 1);
            if (h)
                grown[j] = h;
        }
        free(l->fanout_nodes);
        l->fanout_nodes = grown;
        l->fanout_cap = cap;
    }
    uint64_t h = hash_bytes(node, strlen(node)) | 1;
    size_t j = h & (l->fanout_cap - 1);
    for (; l->fanout_nodes[j]; j = (j + 1) & (l->fanout_cap - 1))
        if (l->fanout_nodes[j] == h)
            return false;   /* or another name of the same hash: a fresh one is safe too */
    l->fanout_nodes[j] = h;
    l->fanout_count++;
    return true;
}

/* p's hello, from the fan-out the helpers share: the first helper that
 * needs one makes it (the others wait for it rather than make their own),
 * and it is retired after FANOUT_MS, or made anew for a node that already
 * had a hello of it (its agent would refuse the same nonce twice). */
static int fanout_hello(struct agent_link *l, struct peer *p, struct session_handshake *hs,
                        char **hello, char *err, size_t errlen)
{
    pthread_mutex_lock(&l->fanout_lock);
    int64_t now = net_now_ms();
    int rc = 0;
    if (!l->fanout_live || now - l->fanout_made >= FANOUT_MS || !fanout_mark(l, p->node)) {
        link_fanout_retire(l);
        if ((rc = session_fanout_make(l->cfg.auth, &l->fanout, err, errlen)) == 0) {
            l->fanout_live = true;
            l->fanout_made = now;
            link_count(&l->stats.credentials);
            fanout_mark(l, p->node);
        }
    }
    if (rc == 0)
        rc = session_fanout_hello(&l->fanout, p->node, hs, hello, err, errlen);
    pthread_mutex_unlock(&l->fanout_lock);
    return rc;
}

/* From the I/O thread: never waits for a helper making a credential (it
 * is looked at again in SCAN_MS). */
void link_retire_old_fanout(struct agent_link *l)
{
    if (pthread_mutex_trylock(&l->fanout_lock) != 0)
        return;
    if (l->fanout_live && net_now_ms() - l->fanout_made >= FANOUT_MS)
        link_fanout_retire(l);
    pthread_mutex_unlock(&l->fanout_lock);
}

static void run_helper_job(struct agent_link *l, struct helper_job *job)
{
    struct peer *p = job->peer;
    char why[256];
    if (job->kind == H_HELLO) {
        job->rc = resolve(p->host, p->port, &job->addr, &job->addrlen, why, sizeof(why));
        if (job->rc == 0)
            job->rc = fanout_hello(l, p, &job->hs, &job->cred, why, sizeof(why));
        if (job->rc < 0)
            snprintf(job->err, sizeof(job->err), "node %.64s: agent %.100s:%d: %s", p->node,
                     p->host, p->port, why);
    } else {
        job->rc = session_reply_take(l->cfg.auth, &job->hs, job->cred, &job->keys, why,
                                     sizeof(why));
        if (job->rc < 0)
            snprintf(job->err, sizeof(job->err),
                     "node %.64s: %.100s:%d answered, but not as its agent: %s", p->node, p->host,
                     p->port, why);
        free(job->cred);
        job->cred = NULL;
        session_handshake_clear(&job->hs);
    }
    /* A hello's handshake goes to the peer, which needs its secret. */
}

void *link_helper_main(void *arg)
{
    struct agent_link *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->work && !l->stopping)
            pthread_cond_wait(&l->work_ready, &l->lock);
        if (l->stopping)
            break;
        struct helper_job *job = l->work;
        l->work = job->next;
        if (!l->work)
            l->work_tail = NULL;
        pthread_mutex_unlock(&l->lock);
        run_helper_job(l, job);
        pthread_mutex_lock(&l->lock);
        job->next = l->results;
        l->results = job;
        link_wake(l);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

void link_give_helper(struct agent_link *l, struct peer *p, enum helper_kind kind, char *cred)
{
    struct helper_job *job = calloc(1, sizeof(*job));
    if (!job) {
        free(cred);
        link_close_peer(l, p);
        link_fail_all(p, -ENOMEM, "out of memory");
        return;
    }
    job->kind = kind;
    job->peer = p;
    job->cred = cred;
    if (kind == H_VERIFY)
        job->hs = p->hs;
    sodium_memzero(&p->hs, sizeof(p->hs));
    p->helper_busy = true;
    pthread_mutex_lock(&l->lock);
    if (l->work_tail)
        l->work_tail->next = job;
    else
        l->work = job;
    l->work_tail = job;
    pthread_cond_signal(&l->work_ready);
    pthread_mutex_unlock(&l->lock);
}

