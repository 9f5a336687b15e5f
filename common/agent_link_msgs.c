/* agent_link_msgs: the requests on a peer's session: queued, sealed and
 * sent in turn (at most AGENT_LINK_INFLIGHT at once), frames read and
 * opened, answers matched to their requests by id, a broken session's
 * requests sent once more; and every request's end (link_finish). */
#include "agent_link_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "agent_proto.h"
#include "net.h"

/* --- finishing requests ------------------------------------------------ */

void link_finish(struct agent_call *c, int rc, const char *fmt, ...)
{
    c->rc = rc;
    if (rc < 0 && fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, sizeof(c->err), fmt, ap);
        va_end(ap);
    }
    c->next = NULL;
    c->done(c);
}

/* Ends every request of p, waiting and sent, with rc and one message. */
void link_fail_all(struct peer *p, int rc, const char *why)
{
    struct agent_call *lists[2] = { p->inflight, p->queued };
    p->inflight = p->queued = p->queued_tail = NULL;
    p->ninflight = 0;
    for (int i = 0; i < 2; i++)
        for (struct agent_call *c = lists[i], *next; c; c = next) {
            next = c->next;
            link_finish(c, rc, "%s: %s", why, agent_op_name(c->op));
        }
}

void link_enqueue(struct peer *p, struct agent_call *c, bool front)
{
    c->next = NULL;
    if (front) {
        c->next = p->queued;
        p->queued = c;
        if (!p->queued_tail)
            p->queued_tail = c;
    } else if (p->queued_tail) {
        p->queued_tail->next = c;
        p->queued_tail = c;
    } else {
        p->queued = p->queued_tail = c;
    }
}

/* --- requests ------------------------------------------------------------ */

static void session_broke(struct agent_link *l, struct peer *p, int rc, const char *why);

/* Seals and writes queued requests while the session has room; a request
 * is sealed only when its turn comes and the socket took the one before,
 * so a large body sent to thousands of agents is not held sealed for each
 * at once. */
void link_pump(struct agent_link *l, struct peer *p)
{
    while (p->state == P_READY && p->queued && p->ninflight < AGENT_LINK_INFLIGHT && !p->out) {
        struct agent_call *c = p->queued;
        p->queued = c->next;
        if (!p->queued)
            p->queued_tail = NULL;
        if (++p->next_id == 0)
            p->next_id = 1;
        c->id = p->next_id;
        uint8_t *sealed;
        size_t len;
        int rc = session_seal_id(&p->keys, c->op, c->id, 0, c->body, c->len, &sealed, &len);
        if (rc == 0) {
            rc = link_queue_frame(p, SESSION_OP_SEALED, 0, sealed, len);
            free(sealed);
        }
        if (rc < 0) {
            link_finish(c, rc, "node %s: agent %s:%d: %s: %s", p->node, p->host, p->port,
                        agent_op_name(c->op),
                        rc == -EMSGSIZE ? "request too large" : strerror(-rc));
            continue;
        }
        c->next = p->inflight;
        p->inflight = c;
        p->ninflight++;
        p->last_used = net_now_ms();
        link_count(&l->stats.sent);
        if ((rc = link_write_out(p)) < 0) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
            session_broke(l, p, rc, why);
            return;
        }
    }
    if (p->fd >= 0 && p->state == P_READY)
        link_watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

/* The session broke (closed, reset, a message that did not open): what was
 * sent is sent once more on a new session, unless it already was. */
static void session_broke(struct agent_link *l, struct peer *p, int rc, const char *why)
{
    link_close_peer(l, p);
    struct agent_call *sent = p->inflight;
    p->inflight = NULL;
    p->ninflight = 0;
    for (struct agent_call *c = sent, *next; c; c = next) {
        next = c->next;
        if (c->resent || rc == -EBADMSG) {
            link_finish(c, rc, "%s: %s: %s", why, agent_op_name(c->op),
                        rc == -EBADMSG ? "the session's answer did not open" : strerror(-rc));
        } else {
            c->resent = true;
            link_count(&l->stats.resent);
            link_enqueue(p, c, true);
        }
    }
    if (p->queued) {
        p->tries = p->cuts = 0;
        link_start_connecting(l, p);
    }
}

static struct agent_call *take_inflight(struct peer *p, uint32_t id)
{
    for (struct agent_call **q = &p->inflight; *q; q = &(*q)->next)
        if ((*q)->id == id) {
            struct agent_call *c = *q;
            *q = c->next;
            p->ninflight--;
            return c;
        }
    return NULL;
}

/* Fills a call's reply from an opened message (which it takes). */
static void answer(struct agent_call *c, struct session_msg *m)
{
    struct agent_reply *r = &c->reply;
    *r = (struct agent_reply){ .status = m->status, .body = m->plain, .len = m->len,
                               .fault = AGENT_FAULT_TRANSIENT };
    rpc_reader_init(&r->reader, m->body, m->len);
    if (r->status < 0 && agent_error_get(&r->reader, &r->message, &r->fault) < 0) {
        r->message = "the agent's error reply is malformed";
        r->fault = AGENT_FAULT_TRANSIENT;
    }
    link_finish(c, 0, NULL);
}

static void frame_ready(struct agent_link *l, struct peer *p)
{
    char why[600];
    snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
    uint8_t *payload = p->payload;
    size_t len = p->h.length;
    p->payload = NULL;
    p->head_got = p->payload_got = 0;
    p->reading_payload = false;
    if (p->state == P_HELLO) {
        struct rpc_reader r;
        rpc_reader_init(&r, payload, len);
        const char *text = rpc_get_str(&r);
        if (p->h.opcode != SESSION_OP_HELLO || !text || !rpc_reader_done(&r)) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s: handshake: the answer is not an adafs agent's", why);
            free(payload);
            p->tries = AGENT_LINK_CONNECT_TRIES;
            link_connect_failed(l, p, -EPROTO, msg);
            return;
        }
        if (p->h.status < 0) {
            /* Anyone on the port could have said it: shown, never believed. */
            char msg[1100];
            snprintf(msg, sizeof(msg), "node %s: agent %s:%d refused the handshake: %.900s"
                     " (unauthenticated answer)", p->node, p->host, p->port, text);
            free(payload);
            p->tries = AGENT_LINK_CONNECT_TRIES;
            link_connect_failed(l, p, -EACCES, msg);
            return;
        }
        char *cred = strdup(text);
        free(payload);
        if (!cred) {
            link_connect_failed(l, p, -ENOMEM, "out of memory");
            return;
        }
        p->state = P_VERIFYING;
        /* What follows is read once the reply is checked. */
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
        link_give_helper(l, p, H_VERIFY, cred);
        return;
    }
    struct session_msg m;
    int rc = p->h.opcode == SESSION_OP_SEALED ? session_open(&p->keys, payload, len, &m) : -EBADMSG;
    free(payload);
    if (rc < 0) {
        session_broke(l, p, rc == -ENOMEM ? -ENOMEM : -EBADMSG, why);
        return;
    }
    link_count(&l->stats.received);
    p->last_used = net_now_ms();
    if (m.op == 0 && m.status < 0) {
        /* An agent at its session limit, before any request: its answer to
         * every request of the session. */
        struct agent_call *lists[2] = { p->inflight, p->queued };
        p->inflight = p->queued = p->queued_tail = NULL;
        p->ninflight = 0;
        link_close_peer(l, p);
        for (int i = 0; i < 2; i++)
            for (struct agent_call *c = lists[i], *next; c; c = next) {
                next = c->next;
                struct session_msg copy = m;
                copy.plain = malloc(m.len ? m.len : 1);
                if (!copy.plain) {
                    link_finish(c, -ENOMEM, "%s: out of memory", why);
                    continue;
                }
                memcpy(copy.plain, m.body, m.len);
                copy.body = copy.plain;
                answer(c, &copy);
            }
        free(m.plain);
        return;
    }
    struct agent_call *c = take_inflight(p, m.id);
    if (!c) {
        free(m.plain);   /* the answer of a request that timed out */
        return;
    }
    if (c->op != m.op) {
        free(m.plain);
        c->next = p->inflight;   /* failed with the others */
        p->inflight = c;
        p->ninflight++;
        session_broke(l, p, -EBADMSG, why);
        return;
    }
    answer(c, &m);
    link_pump(l, p);
}

/* Reads what the socket has; frames are handled as they complete. */
void link_read_in(struct agent_link *l, struct peer *p)
{
    for (;;) {
        if (p->fd < 0 || (p->state != P_HELLO && p->state != P_READY))
            return;
        uint8_t *dst;
        size_t want;
        if (!p->reading_payload) {
            dst = p->head + p->head_got;
            want = RPC_HEADER_SIZE - p->head_got;
        } else {
            dst = p->payload + p->payload_got;
            want = p->h.length - p->payload_got;
        }
        ssize_t n = want ? recv(p->fd, dst, want, 0) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (want && n <= 0) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
            int rc = n == 0 ? -ECONNRESET : -errno;
            if (p->state == P_HELLO) {
                char msg[700];
                snprintf(msg, sizeof(msg), "%s: handshake: %s", why, strerror(-rc));
                link_connect_failed(l, p, rc, msg);
            } else {
                session_broke(l, p, rc, why);
            }
            return;
        }
        if (!p->reading_payload) {
            p->head_got += (size_t)n;
            if (p->head_got < RPC_HEADER_SIZE)
                continue;
            size_t max = p->state == P_HELLO ? SESSION_HELLO_MAX : AGENT_MAX_BODY + SESSION_OVERHEAD;
            int rc = rpc_header_decode(p->head, &p->h);
            if (rc == 0 && p->h.length > max)
                rc = -EMSGSIZE;
            if (rc == 0 && !(p->payload = malloc(p->h.length ? p->h.length : 1)))
                rc = -ENOMEM;
            if (rc < 0) {
                char why[600];
                snprintf(why, sizeof(why), "node %s: agent %s:%d: %s", p->node, p->host, p->port,
                         p->state == P_HELLO ? "handshake: the answer is not an adafs agent's"
                                             : "a frame that is not the session's");
                if (p->state == P_HELLO) {
                    p->tries = AGENT_LINK_CONNECT_TRIES;
                    link_connect_failed(l, p, -EPROTO, why);
                } else {
                    session_broke(l, p, -EBADMSG, why);
                }
                return;
            }
            p->reading_payload = true;
            p->payload_got = 0;
        } else {
            p->payload_got += (size_t)n;
        }
        if (p->reading_payload && p->payload_got == p->h.length)
            frame_ready(l, p);
    }
}

void link_on_event(struct agent_link *l, struct peer *p, uint32_t events)
{
    if (p->fd < 0)
        return;
    if (p->state == P_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent cannot connect to %s:%d: %s", p->node,
                     p->host, p->port, strerror(err));
            link_connect_failed(l, p, -err, why);
            return;
        }
        p->state = P_HELLO;
    }
    if (events & EPOLLOUT) {
        int rc = link_write_out(p);
        if (rc < 0) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
            if (p->state == P_HELLO)
                link_connect_failed(l, p, rc, why);
            else
                session_broke(l, p, rc, why);
            return;
        }
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        link_read_in(l, p);
    if (p->fd >= 0 && p->state == P_READY)
        link_pump(l, p);
    else if (p->fd >= 0 && p->state == P_HELLO)
        link_watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

