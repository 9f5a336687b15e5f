/* agent_link_conn: a peer's connection: the non-blocking connect, the
 * hello and the agent's answer handed to a helper to check, back-off and
 * retries of a connection that failed before anything was asked on it,
 * the bytes waiting to be written, and closing. */
#include "agent_link_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"

#define BACKOFF_MS 200
#define BACKOFF_MAX_MS 1000            /* a cut connection is tried again at most this far apart */

void link_watch_fd(struct agent_link *l, struct peer *p, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, p->fd, &ev);
}

void link_close_peer(struct agent_link *l, struct peer *p)
{
    if (p->fd >= 0) {
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
        close(p->fd);
        if (p->state == P_READY)
            __atomic_sub_fetch(&l->open_sessions, 1, __ATOMIC_RELAXED);
    }
    p->fd = -1;
    for (struct outbuf *b = p->out, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    p->out = p->out_tail = NULL;
    free(p->payload);
    p->payload = NULL;
    p->head_got = p->payload_got = 0;
    p->reading_payload = false;
    sodium_memzero(&p->keys, sizeof(p->keys));
    sodium_memzero(&p->hs, sizeof(p->hs));
    p->state = P_IDLE;
}

void link_start_connecting(struct agent_link *l, struct peer *p)
{
    p->state = P_PREPARING;
    link_give_helper(l, p, H_HELLO, NULL);
}

/* A connection that failed before anything was asked on it (so trying
 * again is safe). Refused (an agent restarting): AGENT_LINK_CONNECT_TRIES
 * attempts. Accepted and then cut (a live agent's admission shedding a
 * flood of unproven peers): tried again until the calls' deadlines (the
 * reaper ends them), backing off to BACKOFF_MAX_MS. */
void link_connect_failed(struct agent_link *l, struct peer *p, int rc, const char *why)
{
    link_close_peer(l, p);
    link_count(&l->stats.handshakes_failed);
    bool cut = rc == -ECONNRESET || rc == -EPIPE;
    if (p->queued && ((rc == -ECONNREFUSED && ++p->tries < AGENT_LINK_CONNECT_TRIES) || cut)) {
        unsigned n = cut ? ++p->cuts : p->tries;
        int64_t pause = (int64_t)BACKOFF_MS << (n - 1 < 4 ? n - 1 : 4);
        p->state = P_BACKOFF;
        p->retry_at = net_now_ms() + (pause < BACKOFF_MAX_MS ? pause : BACKOFF_MAX_MS);
        return;
    }
    p->tries = p->cuts = 0;
    link_fail_all(p, rc, why);
}

int link_queue_frame(struct peer *p, uint16_t opcode, int32_t status, const void *payload,
                     size_t len)
{
    struct outbuf *b = malloc(sizeof(*b) + RPC_HEADER_SIZE + len);
    if (!b)
        return -ENOMEM;
    b->next = NULL;
    b->len = RPC_HEADER_SIZE + len;
    b->off = 0;
    struct rpc_header h = { .opcode = opcode, .status = status, .length = (uint32_t)len };
    rpc_header_encode(&h, b->data);
    memcpy(b->data + RPC_HEADER_SIZE, payload, len);
    if (p->out_tail)
        p->out_tail->next = b;
    else
        p->out = b;
    p->out_tail = b;
    return 0;
}

/* Writes what is queued; 0, or -errno for a connection that broke. */
int link_write_out(struct peer *p)
{
    while (p->out) {
        struct outbuf *b = p->out;
        ssize_t n = send(p->fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
        b->off += (size_t)n;
        if (b->off < b->len)
            return 0;
        p->out = b->next;
        if (!p->out)
            p->out_tail = NULL;
        free(b);
    }
    return 0;
}

static void send_hello(struct agent_link *l, struct peer *p, char *cred)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, cred);
    free(cred);
    int rc = rpc_writer_ok(&w) ? link_queue_frame(p, SESSION_OP_HELLO, 0, w.data, w.len) : -ENOMEM;
    rpc_writer_free(&w);
    if (rc == 0)
        rc = link_write_out(p);
    if (rc < 0) {
        char why[600];
        snprintf(why, sizeof(why), "node %s: agent %s:%d: handshake: %s", p->node, p->host,
                 p->port, strerror(-rc));
        link_connect_failed(l, p, rc, why);
        return;
    }
    p->state = P_HELLO;
    link_watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

/* A helper made the hello: connect (non-blocking) and send it. */
void link_hello_ready(struct agent_link *l, struct peer *p, struct helper_job *job)
{
    if (job->rc < 0) {
        session_handshake_clear(&job->hs);
        link_connect_failed(l, p, job->rc, job->err);
        free(job->cred);
        return;
    }
    p->hs = job->hs;
    sodium_memzero(&job->hs, sizeof(job->hs));
    p->addr = job->addr;
    p->addrlen = job->addrlen;
    char why[600];
    int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int rc = -errno;
        snprintf(why, sizeof(why), "node %s: agent %s:%d: socket: %s", p->node, p->host, p->port,
                 strerror(errno));
        free(job->cred);
        link_connect_failed(l, p, rc, why);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    p->fd = fd;
    p->state_deadline = net_now_ms() + l->cfg.connect_timeout_ms;
    struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = p };
    epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
    if (connect(fd, (struct sockaddr *)&p->addr, p->addrlen) == 0) {
        send_hello(l, p, job->cred);
    } else if (errno == EINPROGRESS) {
        p->state = P_CONNECTING;
        /* The hello waits in the outgoing queue until the connection is up. */
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        rpc_put_str(&w, job->cred);
        if (!rpc_writer_ok(&w) || link_queue_frame(p, SESSION_OP_HELLO, 0, w.data, w.len) < 0) {
            snprintf(why, sizeof(why), "node %s: agent %s:%d: out of memory", p->node, p->host,
                     p->port);
            link_connect_failed(l, p, -ENOMEM, why);
        }
        rpc_writer_free(&w);
        free(job->cred);
    } else {
        int rc = -errno;
        snprintf(why, sizeof(why), "node %s: agent cannot connect to %s:%d: %s", p->node, p->host,
                 p->port, strerror(errno));
        free(job->cred);
        link_connect_failed(l, p, rc, why);
    }
}

void link_verified(struct agent_link *l, struct peer *p, struct helper_job *job)
{
    if (job->rc < 0) {
        sodium_memzero(&job->keys, sizeof(job->keys));
        p->tries = AGENT_LINK_CONNECT_TRIES;
        link_connect_failed(l, p, -EACCES, job->err);
        return;
    }
    p->keys = job->keys;
    sodium_memzero(&job->keys, sizeof(job->keys));
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };
    epoll_ctl(l->epfd, EPOLL_CTL_ADD, p->fd, &ev);
    p->state = P_READY;
    p->tries = p->cuts = 0;
    p->last_used = net_now_ms();
    __atomic_add_fetch(&l->open_sessions, 1, __ATOMIC_RELAXED);
    link_count(&l->stats.sessions);
    link_read_in(l, p);   /* an agent at its limit has said so already */
    if (p->state == P_READY)
        link_pump(l, p);
}

