#include "conns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "net.h"

struct conn_slot {
    int fd;                           /* -1: free */
    in_addr_t addr;
    unsigned long long seq;           /* accept order: the oldest is evicted */
    int trusted;
    int evicted;
};

struct conns {
    long long max, per_host;
    conn_serve_fn serve;
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    struct conn_slot *slots;
    long long active;
    unsigned long long next_seq;
};

static struct log_limit eviction_log = LOG_LIMIT_INIT(5, 10000);

void conns_flush_log(void)
{
    log_limit_flush(&eviction_log);
}

struct conns *conns_new(long long max, long long per_host, conn_serve_fn serve, void *arg)
{
    struct conns *cs = calloc(1, sizeof(*cs));
    if (!cs || !(cs->slots = calloc((size_t)max, sizeof(*cs->slots)))) {
        free(cs);
        return NULL;
    }
    cs->max = max;
    cs->per_host = per_host;
    cs->serve = serve;
    cs->arg = arg;
    pthread_mutex_init(&cs->lock, NULL);
    pthread_cond_init(&cs->freed, NULL);
    for (long long i = 0; i < max; i++)
        cs->slots[i].fd = -1;
    return cs;
}

void conns_trust(struct conn *c)
{
    pthread_mutex_lock(&c->owner->lock);
    c->slot->trusted = 1;
    pthread_mutex_unlock(&c->owner->lock);
}

int conns_trusted(struct conn *c)
{
    pthread_mutex_lock(&c->owner->lock);
    int t = c->slot->trusted;
    pthread_mutex_unlock(&c->owner->lock);
    return t;
}

/* After an early error reply (413, 401) the client may still be sending
 * its body; closing at once would reset the connection and the client would
 * see "connection reset" instead of the reply. Drains briefly (the caller
 * closes). */
static void drain_gently(int fd)
{
    char sink[4096];
    long long deadline = http_now_ms() + 500;
    shutdown(fd, SHUT_WR);
    while (http_now_ms() < deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 100) == 1 && recv(fd, sink, sizeof(sink), 0) <= 0)
            break;
    }
}

static void release(struct conns *cs, struct conn *c)
{
    pthread_mutex_lock(&cs->lock);
    c->slot->fd = -1;
    cs->active--;
    pthread_cond_broadcast(&cs->freed);
    pthread_mutex_unlock(&cs->lock);
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    c->owner->serve(c);
    drain_gently(c->fd);
    /* The slot goes before the descriptor: once it is closed, the accept
     * loop may get its number again, and must not evict that one. */
    release(c->owner, c);
    close(c->fd);
    free(c);
    return NULL;
}

/* With cs->lock held: shuts down the oldest untrusted connection (of addr
 * only, if by_addr); 1 if there was one. Its handler then finds its peer
 * gone and frees the slot. */
static int evict_oldest(struct conns *cs, int by_addr, in_addr_t addr)
{
    struct conn_slot *oldest = NULL;
    for (long long i = 0; i < cs->max; i++) {
        struct conn_slot *s = &cs->slots[i];
        if (s->fd < 0 || s->trusted || s->evicted || (by_addr && s->addr != addr))
            continue;
        if (!oldest || s->seq < oldest->seq)
            oldest = s;
    }
    if (!oldest)
        return 0;
    oldest->evicted = 1;
    shutdown(oldest->fd, SHUT_RDWR);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &(struct in_addr){ .s_addr = oldest->addr }, ip, sizeof(ip));
    log_limited(&eviction_log, LOG_LEVEL_WARN, "evicted a connection from %s that had shown "
                "no credentials: %s", ip, by_addr ? "its address has --max-per-host "
                "connections" : "--max-connections reached");
    return 1;
}

int conns_make_room(struct conns *cs, volatile sig_atomic_t *stopping)
{
    pthread_mutex_lock(&cs->lock);
    while (cs->active >= cs->max && !*stopping) {
        long long evicting = 0;
        for (long long i = 0; i < cs->max; i++)
            evicting += cs->slots[i].fd >= 0 && cs->slots[i].evicted;
        if (!evicting)
            evict_oldest(cs, 0, 0);
        /* Woken when a slot frees; the timeout only rechecks *stopping. */
        struct timespec until = net_wall_after_ms(200);
        pthread_cond_timedwait(&cs->freed, &cs->lock, &until);
    }
    pthread_mutex_unlock(&cs->lock);
    return !*stopping;
}

void conns_admit(struct conns *cs, int fd, const struct sockaddr_in *sa)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    c->fd = fd;
    c->arg = cs->arg;
    c->owner = cs;
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip));
    snprintf(c->peer, sizeof(c->peer), "%s:%d", ip, ntohs(sa->sin_port));
    pthread_mutex_lock(&cs->lock);
    long long of_addr = 0;
    struct conn_slot *free_slot = NULL;
    for (long long i = 0; i < cs->max; i++) {
        struct conn_slot *s = &cs->slots[i];
        if (s->fd < 0 && !free_slot)
            free_slot = s;
        of_addr += s->fd >= 0 && !s->evicted && s->addr == sa->sin_addr.s_addr;
    }
    int refuse = !free_slot ||
                 (of_addr >= cs->per_host && !evict_oldest(cs, 1, sa->sin_addr.s_addr));
    if (!refuse) {
        *free_slot = (struct conn_slot){ .fd = fd, .addr = sa->sin_addr.s_addr,
                                         .seq = cs->next_seq++ };
        c->slot = free_slot;
        cs->active++;
    }
    pthread_mutex_unlock(&cs->lock);
    if (refuse) {
        log_limited(&eviction_log, LOG_LEVEL_WARN, "%s: 503: its address has %lld uploads in "
                    "progress (--max-per-host)", c->peer, cs->per_host);
        http_respond(fd, http_now_ms(), 503,
                     "{\"error\":\"too many connections from this address\"}");
        close(fd);
        free(c);
        return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &attr, conn_main, c);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_error("cannot serve %s: no thread: %s", c->peer, strerror(rc));
        release(cs, c);
        close(fd);
        free(c);
    }
}

void conns_finish(struct conns *cs)
{
    pthread_mutex_lock(&cs->lock);
    for (long long i = 0; i < cs->max; i++)
        if (cs->slots[i].fd >= 0 && !cs->slots[i].trusted)
            shutdown(cs->slots[i].fd, SHUT_RDWR);
    while (cs->active > 0)
        pthread_cond_wait(&cs->freed, &cs->lock);
    pthread_mutex_unlock(&cs->lock);
    conns_flush_log();
    free(cs->slots);
    free(cs);
}
