#include "agent_link.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent_proto.h"
#include "hash.h"
#include "net.h"

#define SCAN_MS 50                     /* how often deadlines and idle sessions are looked at */
#define BACKOFF_MS 200
#define BACKOFF_MAX_MS 1000            /* a cut connection is tried again at most this far apart */
#define FANOUT_MS 5000                 /* how long one credential serves the hellos made meanwhile */

/* Where a session to one agent stands. */
enum peer_state {
    P_IDLE,          /* no connection */
    P_PREPARING,     /* a helper resolves the host and makes the hello */
    P_BACKOFF,       /* refused or cut before anything was asked: tried again at retry_at */
    P_CONNECTING,
    P_HELLO,         /* hello sent, the agent's reply awaited */
    P_VERIFYING,     /* a helper opens the agent's reply */
    P_READY,
};

/* Bytes to write, in order. */
struct outbuf {
    struct outbuf *next;
    size_t len, off;
    uint8_t data[];
};

struct peer {
    char *node, *host;
    int port;
    enum peer_state state;
    int fd;
    unsigned tries;                    /* connection attempts refused in a row */
    unsigned cuts;                     /* accepted and cut before a request, in a row */
    int64_t retry_at, state_deadline, last_used;
    struct session_keys keys;
    struct session_handshake hs;       /* while P_HELLO .. P_VERIFYING */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct outbuf *out, *out_tail;
    /* The frame being read. */
    uint8_t head[RPC_HEADER_SIZE];
    size_t head_got;
    struct rpc_header h;
    uint8_t *payload;
    size_t payload_got;
    bool reading_payload;
    /* Requests: waiting to be sent, and sent (answered by id). */
    struct agent_call *queued, *queued_tail, *inflight;
    unsigned ninflight;
    uint32_t next_id;
    bool helper_busy;
    struct peer *hnext, *next;
};

enum helper_kind { H_HELLO, H_VERIFY };

/* Blocking work for a helper thread, and its result. */
struct helper_job {
    enum helper_kind kind;
    struct peer *peer;
    struct helper_job *next;
    int rc;
    char err[512];
    struct session_handshake hs;
    char *cred;                        /* in: the reply (verify); out: the hello */
    struct session_keys keys;
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct agent_link {
    struct agent_link_config cfg;
    int epfd, evfd;
    pthread_t io;
    pthread_t helpers[AGENT_LINK_HELPERS];
    unsigned nhelpers;
    bool io_started;
    pthread_mutex_t lock;              /* the three queues and stopping */
    pthread_cond_t work_ready;
    struct agent_call *submitted, *submitted_tail;
    struct helper_job *work, *work_tail, *results;
    bool stopping;
    /* The fan-out the helpers' hellos share (agent_session.h). */
    pthread_mutex_t fanout_lock;
    struct session_fanout fanout;
    bool fanout_live;
    int64_t fanout_made;
    /* The nodes greeted with it (hashes of their names; 0 empty): an
     * agent refuses the same (nonce, node) twice, even a restarted one on
     * another port sharing a process with it (simulated agents). */
    uint64_t *fanout_nodes;
    size_t fanout_cap, fanout_count;
    /* The I/O thread's own. */
    struct peer **buckets;
    size_t nbuckets, npeers;
    struct peer *peers;
    unsigned open_sessions;
    struct agent_link_stats stats;     /* updated with __atomic */
};

static void count(uint64_t *counter)
{
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static void wake(struct agent_link *l)
{
    uint64_t one = 1;
    ssize_t n = write(l->evfd, &one, sizeof(one));
    (void)n;   /* a full counter is a pending wake-up already */
}

void agent_reply_free(struct agent_reply *reply)
{
    free(reply->body);
    *reply = (struct agent_reply){ 0 };
}

/* --- finishing requests ------------------------------------------------ */

static void finish(struct agent_call *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(struct agent_call *c, int rc, const char *fmt, ...)
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
static void fail_all(struct peer *p, int rc, const char *why)
{
    struct agent_call *lists[2] = { p->inflight, p->queued };
    p->inflight = p->queued = p->queued_tail = NULL;
    p->ninflight = 0;
    for (int i = 0; i < 2; i++)
        for (struct agent_call *c = lists[i], *next; c; c = next) {
            next = c->next;
            finish(c, rc, "%s: %s", why, agent_op_name(c->op));
        }
}

static void enqueue(struct peer *p, struct agent_call *c, bool front)
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

static void close_peer(struct agent_link *l, struct peer *p);

/* --- helper threads ------------------------------------------------------ */

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
static void fanout_retire(struct agent_link *l)
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
        fanout_retire(l);
        if ((rc = session_fanout_make(l->cfg.auth, &l->fanout, err, errlen)) == 0) {
            l->fanout_live = true;
            l->fanout_made = now;
            count(&l->stats.credentials);
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
static void retire_old_fanout(struct agent_link *l)
{
    if (pthread_mutex_trylock(&l->fanout_lock) != 0)
        return;
    if (l->fanout_live && net_now_ms() - l->fanout_made >= FANOUT_MS)
        fanout_retire(l);
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

static void *helper_main(void *arg)
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
        wake(l);
    }
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

static void give_helper(struct agent_link *l, struct peer *p, enum helper_kind kind, char *cred)
{
    struct helper_job *job = calloc(1, sizeof(*job));
    if (!job) {
        free(cred);
        close_peer(l, p);
        fail_all(p, -ENOMEM, "out of memory");
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

/* --- connections ------------------------------------------------------- */

static void watch_fd(struct agent_link *l, struct peer *p, uint32_t events)
{
    struct epoll_event ev = { .events = events, .data.ptr = p };
    epoll_ctl(l->epfd, EPOLL_CTL_MOD, p->fd, &ev);
}

static void close_peer(struct agent_link *l, struct peer *p)
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

static void start_connecting(struct agent_link *l, struct peer *p)
{
    p->state = P_PREPARING;
    give_helper(l, p, H_HELLO, NULL);
}

/* A connection that failed before anything was asked on it (so trying
 * again is safe). Refused (an agent restarting): AGENT_LINK_CONNECT_TRIES
 * attempts. Accepted and then cut (a live agent's admission shedding a
 * flood of unproven peers): tried again until the calls' deadlines (the
 * reaper ends them), backing off to BACKOFF_MAX_MS. */
static void connect_failed(struct agent_link *l, struct peer *p, int rc, const char *why)
{
    close_peer(l, p);
    count(&l->stats.handshakes_failed);
    bool cut = rc == -ECONNRESET || rc == -EPIPE;
    if (p->queued && ((rc == -ECONNREFUSED && ++p->tries < AGENT_LINK_CONNECT_TRIES) || cut)) {
        unsigned n = cut ? ++p->cuts : p->tries;
        int64_t pause = (int64_t)BACKOFF_MS << (n - 1 < 4 ? n - 1 : 4);
        p->state = P_BACKOFF;
        p->retry_at = net_now_ms() + (pause < BACKOFF_MAX_MS ? pause : BACKOFF_MAX_MS);
        return;
    }
    p->tries = p->cuts = 0;
    fail_all(p, rc, why);
}

static int queue_frame(struct peer *p, uint16_t opcode, int32_t status, const void *payload,
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
static int write_out(struct peer *p)
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
    int rc = rpc_writer_ok(&w) ? queue_frame(p, SESSION_OP_HELLO, 0, w.data, w.len) : -ENOMEM;
    rpc_writer_free(&w);
    if (rc == 0)
        rc = write_out(p);
    if (rc < 0) {
        char why[600];
        snprintf(why, sizeof(why), "node %s: agent %s:%d: handshake: %s", p->node, p->host,
                 p->port, strerror(-rc));
        connect_failed(l, p, rc, why);
        return;
    }
    p->state = P_HELLO;
    watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

/* A helper made the hello: connect (non-blocking) and send it. */
static void hello_ready(struct agent_link *l, struct peer *p, struct helper_job *job)
{
    if (job->rc < 0) {
        session_handshake_clear(&job->hs);
        connect_failed(l, p, job->rc, job->err);
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
        connect_failed(l, p, rc, why);
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
        if (!rpc_writer_ok(&w) || queue_frame(p, SESSION_OP_HELLO, 0, w.data, w.len) < 0) {
            snprintf(why, sizeof(why), "node %s: agent %s:%d: out of memory", p->node, p->host,
                     p->port);
            connect_failed(l, p, -ENOMEM, why);
        }
        rpc_writer_free(&w);
        free(job->cred);
    } else {
        int rc = -errno;
        snprintf(why, sizeof(why), "node %s: agent cannot connect to %s:%d: %s", p->node, p->host,
                 p->port, strerror(errno));
        free(job->cred);
        connect_failed(l, p, rc, why);
    }
}

/* --- requests ------------------------------------------------------------ */

static void session_broke(struct agent_link *l, struct peer *p, int rc, const char *why);

/* Seals and writes queued requests while the session has room; a request
 * is sealed only when its turn comes and the socket took the one before,
 * so a large body sent to thousands of agents is not held sealed for each
 * at once. */
static void pump(struct agent_link *l, struct peer *p)
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
            rc = queue_frame(p, SESSION_OP_SEALED, 0, sealed, len);
            free(sealed);
        }
        if (rc < 0) {
            finish(c, rc, "node %s: agent %s:%d: %s: %s", p->node, p->host, p->port,
                   agent_op_name(c->op), rc == -EMSGSIZE ? "request too large" : strerror(-rc));
            continue;
        }
        c->next = p->inflight;
        p->inflight = c;
        p->ninflight++;
        p->last_used = net_now_ms();
        count(&l->stats.sent);
        if ((rc = write_out(p)) < 0) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
            session_broke(l, p, rc, why);
            return;
        }
    }
    if (p->fd >= 0 && p->state == P_READY)
        watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

/* The session broke (closed, reset, a message that did not open): what was
 * sent is sent once more on a new session, unless it already was. */
static void session_broke(struct agent_link *l, struct peer *p, int rc, const char *why)
{
    close_peer(l, p);
    struct agent_call *sent = p->inflight;
    p->inflight = NULL;
    p->ninflight = 0;
    for (struct agent_call *c = sent, *next; c; c = next) {
        next = c->next;
        if (c->resent || rc == -EBADMSG) {
            finish(c, rc, "%s: %s: %s", why, agent_op_name(c->op),
                   rc == -EBADMSG ? "the session's answer did not open" : strerror(-rc));
        } else {
            c->resent = true;
            count(&l->stats.resent);
            enqueue(p, c, true);
        }
    }
    if (p->queued) {
        p->tries = p->cuts = 0;
        start_connecting(l, p);
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
    finish(c, 0, NULL);
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
            connect_failed(l, p, -EPROTO, msg);
            return;
        }
        if (p->h.status < 0) {
            /* Anyone on the port could have said it: shown, never believed. */
            char msg[1100];
            snprintf(msg, sizeof(msg), "node %s: agent %s:%d refused the handshake: %.900s"
                     " (unauthenticated answer)", p->node, p->host, p->port, text);
            free(payload);
            p->tries = AGENT_LINK_CONNECT_TRIES;
            connect_failed(l, p, -EACCES, msg);
            return;
        }
        char *cred = strdup(text);
        free(payload);
        if (!cred) {
            connect_failed(l, p, -ENOMEM, "out of memory");
            return;
        }
        p->state = P_VERIFYING;
        /* What follows is read once the reply is checked. */
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, p->fd, NULL);
        give_helper(l, p, H_VERIFY, cred);
        return;
    }
    struct session_msg m;
    int rc = p->h.opcode == SESSION_OP_SEALED ? session_open(&p->keys, payload, len, &m) : -EBADMSG;
    free(payload);
    if (rc < 0) {
        session_broke(l, p, rc == -ENOMEM ? -ENOMEM : -EBADMSG, why);
        return;
    }
    count(&l->stats.received);
    p->last_used = net_now_ms();
    if (m.op == 0 && m.status < 0) {
        /* An agent at its session limit, before any request: its answer to
         * every request of the session. */
        struct agent_call *lists[2] = { p->inflight, p->queued };
        p->inflight = p->queued = p->queued_tail = NULL;
        p->ninflight = 0;
        close_peer(l, p);
        for (int i = 0; i < 2; i++)
            for (struct agent_call *c = lists[i], *next; c; c = next) {
                next = c->next;
                struct session_msg copy = m;
                copy.plain = malloc(m.len ? m.len : 1);
                if (!copy.plain) {
                    finish(c, -ENOMEM, "%s: out of memory", why);
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
    pump(l, p);
}

/* Reads what the socket has; frames are handled as they complete. */
static void read_in(struct agent_link *l, struct peer *p)
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
                connect_failed(l, p, rc, msg);
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
                    connect_failed(l, p, -EPROTO, why);
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

static void on_event(struct agent_link *l, struct peer *p, uint32_t events)
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
            connect_failed(l, p, -err, why);
            return;
        }
        p->state = P_HELLO;
    }
    if (events & EPOLLOUT) {
        int rc = write_out(p);
        if (rc < 0) {
            char why[600];
            snprintf(why, sizeof(why), "node %s: agent %s:%d", p->node, p->host, p->port);
            if (p->state == P_HELLO)
                connect_failed(l, p, rc, why);
            else
                session_broke(l, p, rc, why);
            return;
        }
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        read_in(l, p);
    if (p->fd >= 0 && p->state == P_READY)
        pump(l, p);
    else if (p->fd >= 0 && p->state == P_HELLO)
        watch_fd(l, p, EPOLLIN | (p->out ? EPOLLOUT : 0));
}

static void verified(struct agent_link *l, struct peer *p, struct helper_job *job)
{
    if (job->rc < 0) {
        sodium_memzero(&job->keys, sizeof(job->keys));
        p->tries = AGENT_LINK_CONNECT_TRIES;
        connect_failed(l, p, -EACCES, job->err);
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
    count(&l->stats.sessions);
    read_in(l, p);   /* an agent at its limit has said so already */
    if (p->state == P_READY)
        pump(l, p);
}

/* --- the I/O thread -------------------------------------------------- */

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
            hello_ready(l, p, job);
        else
            verified(l, p, job);
        free(job);
    }
    for (struct agent_call *c = calls, *next; c; c = next) {
        next = c->next;
        struct peer *p = find_peer(l, c);
        if (!p) {
            finish(c, -ENOMEM, "node %s: out of memory", c->node);
            continue;
        }
        enqueue(p, c, false);
        if (p->state == P_IDLE) {
            p->tries = p->cuts = 0;
            start_connecting(l, p);
        } else if (p->state == P_READY) {
            pump(l, p);
        }
    }
}

/* Requests past their deadline end; connections that take too long fail;
 * refused ones are tried again; idle sessions close. */
static void scan(struct agent_link *l)
{
    retire_old_fanout(l);
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
                count(&l->stats.timed_out);
                finish(c, -ETIMEDOUT, "node %s: agent %s:%d: %s: no answer within %d s%s", p->node,
                       p->host, p->port, agent_op_name(c->op), (c->timeout_ms + 999) / 1000,
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
            connect_failed(l, p, -ETIMEDOUT, why);
        } else if (p->state == P_BACKOFF && now >= p->retry_at) {
            start_connecting(l, p);
        } else if (p->state == P_READY && !p->ninflight && !p->queued &&
                   now - p->last_used >= l->cfg.idle_ms) {
            close_peer(l, p);
        } else if (p->state == P_READY && p->queued) {
            pump(l, p);
        }
    }
}

static void *io_main(void *arg)
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
            on_event(l, evs[i].data.ptr, evs[i].events);
        }
        take_submitted(l);
        if (net_now_ms() >= next_scan) {
            scan(l);
            next_scan = net_now_ms() + SCAN_MS;
        }
    }
    return NULL;
}

/* --- the API ------------------------------------------------------------- */

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
    int rc = pthread_create(&l->io, NULL, io_main, l);
    l->io_started = rc == 0;
    for (unsigned i = 0; rc == 0 && i < AGENT_LINK_HELPERS; i++)
        if ((rc = pthread_create(&l->helpers[i], NULL, helper_main, l)) == 0)
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
        wake(l);
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
        finish(c, -ECANCELED, "node %s: the agent link is closing", c->node);
    }
    for (struct peer *p = l->peers, *next; p; p = next) {
        next = p->next;
        fail_all(p, -ECANCELED, "the agent link is closing");
        close_peer(l, p);
        free(p->node);
        free(p->host);
        free(p);
    }
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->evfd >= 0)
        close(l->evfd);
    fanout_retire(l);
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
    wake(l);
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
