/* call: requests to the servers, over one persistent TCP connection per
 * server per process (TCP_NODELAY, connected on first use).
 *
 * A batch sends all its requests before reading any answer, so requests to
 * different servers overlap, and a train of chunk writes to one server
 * streams without waiting. Answers on one connection come back in request
 * order, so reading them in batch order cannot deadlock. Every send and
 * receive is bounded by the instance's timeout: a dead or stuck server turns
 * into -EIO for the calls addressed to it, and its connection is dropped so
 * the next call reconnects. */
#include "client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "net.h"

#define CONN_BUF (64u << 10)

void call_init(struct call *c, int server, uint16_t op)
{
    memset(c, 0, sizeof(*c));
    c->server = server;
    c->op = op;
    rpc_writer_init(&c->req, c->req_inline, sizeof(c->req_inline));
}

void call_free(struct call *c)
{
    rpc_writer_free(&c->req);
    if (c->resp && c->resp != c->resp_inline)
        free(c->resp);
    c->resp = NULL;
}

void call_reader(const struct call *c, struct rpc_reader *r)
{
    rpc_reader_init(r, c->resp, c->resp_len);
}

void conns_reset_after_fork(adafs *fs)
{
    for (int i = 0; i < fs->inst.nservers; i++) {
        struct server_conn *sc = &fs->conns[i];
        pthread_mutex_init(&sc->lock, NULL);
        sc->start = sc->end = 0;
    }
}

/* close(2) without passing through an interposer that wraps close(). */
static void sock_close(int fd)
{
    syscall(SYS_close, fd);
}

static void conn_drop(struct server_conn *sc)
{
    if (sc->fd >= 0 && sc->pid == getpid())
        sock_close(sc->fd);
    sc->fd = -1;
    sc->start = sc->end = 0;
}

static int conn_ready(adafs *fs, int server)
{
    struct server_conn *sc = &fs->conns[server];
    pid_t pid = getpid();
    if (sc->fd >= 0 && sc->pid != pid) {
        /* Inherited over fork: the socket is the parent's conversation.
         * Closing our copy leaves the parent's intact. */
        sock_close(sc->fd);
        sc->fd = -1;
        sc->start = sc->end = 0;
    }
    if (sc->fd >= 0)
        return 0;
    if (!sc->in) {
        sc->in = malloc(CONN_BUF);
        if (!sc->in)
            return -ENOMEM;
        sc->cap = CONN_BUF;
    }
    char err[256];
    const struct instance_server *s = &fs->inst.servers[server];
    int fd = net_connect(s->host, s->port, fs->inst.timeout_ms, err, sizeof(err));
    if (fd < 0)
        return -EIO;
    sc->fd = fd;
    sc->pid = pid;
    sc->start = sc->end = 0;
    return 0;
}

static int send_call(adafs *fs, struct call *c)
{
    struct server_conn *sc = &fs->conns[c->server];
    struct rpc_header h = { .opcode = c->op, .id = atomic_fetch_add(&fs->request_id, 1) + 1,
                            .length = (uint32_t)(c->req.len + c->bulk_len) };
    memcpy(h.secret, fs->inst.secret, RPC_SECRET_SIZE);
    uint8_t hdr[RPC_HEADER_SIZE];
    rpc_header_encode(&h, hdr);
    struct iovec iov[3] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = c->req.data, .iov_len = c->req.len },
        { .iov_base = (void *)c->bulk, .iov_len = c->bulk_len },
    };
    return net_writev_full(sc->fd, iov, c->bulk_len ? 3 : 2, net_now_ms() + fs->inst.timeout_ms);
}

/* Copies up to len buffered bytes into dst and reads the rest straight from
 * the socket, so bulk data lands in the caller's buffer without a detour.
 * ahead: small reads may read ahead into the buffer (the next answers of a
 * batch come in the same system call); not before bulk data, which would
 * then be copied twice. */
static int conn_read(adafs *fs, struct server_conn *sc, void *dst, size_t len, int ahead)
{
    int64_t deadline = net_now_ms() + fs->inst.timeout_ms;
    size_t have = sc->end - sc->start;
    size_t take = have < len ? have : len;
    memcpy(dst, sc->in + sc->start, take);
    sc->start += take;
    if (take == len)
        return 0;
    if (sc->start == sc->end)
        sc->start = sc->end = 0;
    size_t rest = len - take;
    if (rest >= sc->cap / 2)
        return net_read_full(sc->fd, (uint8_t *)dst + take, rest, deadline);
    ssize_t n = net_read_some(sc->fd, sc->in, rest, ahead ? sc->cap : rest, deadline);
    if (n < 0)
        return (int)n;
    memcpy((uint8_t *)dst + take, sc->in, rest);
    sc->start = rest;
    sc->end = (size_t)n;
    return 0;
}

static int recv_call(adafs *fs, struct call *c)
{
    struct server_conn *sc = &fs->conns[c->server];
    uint8_t hdr[RPC_HEADER_SIZE];
    int rc = conn_read(fs, sc, hdr, sizeof(hdr), !c->dest || c->dest_cap < sc->cap / 2);
    struct rpc_header h;
    if (rc < 0 || rpc_header_decode(hdr, &h) < 0 || h.opcode != c->op)
        return -EIO;
    if (c->dest) {
        if (h.length > c->dest_cap)
            return -EIO;
        rc = conn_read(fs, sc, c->dest, h.length, 1);
        c->resp_len = h.length;
    } else {
        c->resp = h.length <= sizeof(c->resp_inline) ? c->resp_inline : malloc(h.length);
        if (!c->resp)
            return -EIO;
        rc = conn_read(fs, sc, c->resp, h.length, 1);
        c->resp_len = h.length;
    }
    if (rc < 0)
        return -EIO;
    c->status = h.status > 0 ? -EIO : h.status;
    return 1;
}

void fs_call(adafs *fs, struct call *calls, int n)
{
    int nservers = fs->inst.nservers;
    /* Which servers take part, locked in ascending order. */
    uint8_t small[64], *used = nservers <= 64 ? small : calloc((size_t)nservers, 1);
    if (!used) {
        for (int i = 0; i < n; i++)
            calls[i].status = -ENOMEM;
        return;
    }
    memset(used, 0, nservers <= 64 ? sizeof(small) : 0);
    for (int i = 0; i < n; i++)
        used[calls[i].server] = 1;
    for (int s = 0; s < nservers; s++) {
        if (!used[s])
            continue;
        pthread_mutex_lock(&fs->conns[s].lock);
        /* used[s] == 2: the connection failed in this batch. */
        if (conn_ready(fs, s) < 0)
            used[s] = 2;
    }
    for (int i = 0; i < n; i++) {
        struct call *c = &calls[i];
        c->status = -EIO;
        if (!rpc_writer_ok(&c->req)) {
            c->status = -ENOMEM;
            continue;
        }
        if (used[c->server] == 2)
            continue;
        if (send_call(fs, c) < 0) {
            conn_drop(&fs->conns[c->server]);
            used[c->server] = 2;
            continue;
        }
        c->status = 1;   /* sent: an answer is due */
    }
    for (int i = 0; i < n; i++) {
        struct call *c = &calls[i];
        if (c->status != 1)
            continue;
        if (used[c->server] == 2 || recv_call(fs, c) < 0) {
            c->status = -EIO;
            if (used[c->server] != 2)
                conn_drop(&fs->conns[c->server]);
            used[c->server] = 2;
        }
    }
    for (int s = 0; s < nservers; s++)
        if (used[s])
            pthread_mutex_unlock(&fs->conns[s].lock);
    if (used != small)
        free(used);
}

int fs_call1(adafs *fs, struct call *c)
{
    fs_call(fs, c, 1);
    return c->status;
}

void conns_close(adafs *fs)
{
    for (int i = 0; i < fs->inst.nservers; i++) {
        conn_drop(&fs->conns[i]);
        free(fs->conns[i].in);
        fs->conns[i].in = NULL;
        pthread_mutex_destroy(&fs->conns[i].lock);
    }
}
