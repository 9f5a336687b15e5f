/* call: requests to the servers, over one persistent TCP connection per
 * server per process (TCP_NODELAY, connected on first use); to a server of
 * this node over its Unix socket instead, when it has one and runs as we
 * do (ADAFS_TRANSPORT=tcp: not).
 *
 * A batch sends all its requests before reading any answer, so requests to
 * different servers overlap, and a train of chunk writes to one server
 * streams without waiting. Answers on one connection come back in request
 * order, so reading them in batch order cannot deadlock. Every send and
 * receive is bounded by the instance's timeout: a dead or stuck server turns
 * into -EIO for the calls addressed to it, and its connection is dropped so
 * the next call reconnects.
 *
 * A new connection first runs the handshake (handshake.h), within the
 * same timeout: nothing of a request goes to a listener that has not
 * proved it holds the instance's secret. A server that refuses our proof
 * gives EACCES, a listener that is not the instance's server EPERM, and
 * the reason, naming the server, is kept for adafs_last_error().
 *
 * Bulk data in files avoids the caller's memory: a payload in a file goes
 * out with sendfile(2), and answer data bound for a file is spliced from
 * the socket through the connection's pipe into it (adafs_pwrite_from_fd,
 * adafs_pread_to_fd). The pipe is opened with the connection on first need
 * (close-on-exec) and closed with it; a forked child opens its own. splice
 * and sendfile raise SIGPIPE on a dead peer, which a library must not do to
 * its caller: they run with SIGPIPE blocked, and a SIGPIPE they caused is
 * taken back. A payload in memory is copied into the socket by sendmsg:
 * lending its pages with vmsplice(2) + splice(2) instead was measured no
 * faster on loopback (doc/bench/fs.md: the profile trades the copy for
 * page pinning and one socket fragment per 4 KiB page).
 *
 * Over a Unix socket, data in the caller's file for a WRITE or
 * CREATE_WRITE does not cross the socket at all: the request passes the
 * caller's descriptor instead (FS_BULK_FD), and the server copies from
 * that file into its chunk file itself (copy_file_range: one copy in the
 * page cache, as cp makes, instead of a sendfile into the socket and a
 * splice out of it). Reads come over the socket (proto.h says why). */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "handshake.h"
#include "net.h"

#define CONN_BUF (64u << 10)
/* At most this much is read beyond the answer being read: enough for the
 * next few small answers of a batch in the same system call, and little
 * of a next answer's bulk data (which would be copied twice: into the
 * buffer, then where it goes, instead of spliced). */
#define CONN_AHEAD (4u << 10)
/* The most a pipe may hold here (/proc/sys/fs/pipe-max-size, 1 MiB by
 * default); a smaller pipe only means more system calls. */
#define PIPE_WANT (1u << 20)

void call_init(struct call *c, int server, uint16_t op)
{
    memset(c, 0, sizeof(*c));
    c->server = server;
    c->op = op;
    c->bulk_fd = c->dest_fd = c->pass_fd = -1;
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
    pthread_mutex_init(&fs->error_lock, NULL);
    for (int i = 0; i < fs->inst.nservers; i++) {
        struct server_conn *sc = &fs->conns[i];
        pthread_mutex_init(&sc->lock, NULL);
        sc->start = sc->end = 0;
    }
}

/* libc's close(), as for the data files of lib/direct.c: an interposer
 * that keeps the library's descriptors out of the program's way (preload/
 * ownfd.h) sees the library give the number up, and lets the program use
 * it from then on. */
static void sock_close(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* Forgets the connection; closes its socket and pipe only in the process
 * that opened them (a forked child's copies are closed by conn_ready
 * without touching the parent's conversation). */
static void conn_forget(struct server_conn *sc, int close_them)
{
    if (close_them) {
        sock_close(sc->fd);
        sock_close(sc->pipe[0]);
        sock_close(sc->pipe[1]);
    }
    sc->fd = -1;
    sc->pipe[0] = sc->pipe[1] = -1;
    sc->start = sc->end = 0;
}

static void conn_drop(struct server_conn *sc)
{
    conn_forget(sc, sc->fd >= 0 && sc->pid == getpid());
}

/* The connection's pipe, opened on first need. Through the interposer,
 * pipe2 lands in the library's own descriptor range like the socket. */
static int conn_pipe(struct server_conn *sc)
{
    if (sc->pipe[0] >= 0)
        return 0;
    if (pipe2(sc->pipe, O_CLOEXEC) < 0) {
        sc->pipe[0] = sc->pipe[1] = -1;
        return -errno;
    }
    fcntl(sc->pipe[1], F_SETPIPE_SZ, PIPE_WANT);
    int size = fcntl(sc->pipe[1], F_GETPIPE_SZ);
    sc->pipe_size = size > 0 ? (size_t)size : 4096;
    return 0;
}

/* Keeps why a connection to a server failed, for adafs_last_error(). */
static void note_error(adafs *fs, const char *msg)
{
    pthread_mutex_lock(&fs->error_lock);
    snprintf(fs->last_error, sizeof(fs->last_error), "%s", msg);
    pthread_mutex_unlock(&fs->error_lock);
}

/* Keeps that server's connection failed within a call (the server was
 * killed or stopped answering): adafs_last_error names it and its address. */
static void note_lost(adafs *fs, int server, const char *when)
{
    const struct instance_server *s = &fs->inst.servers[server];
    char msg[INSTANCE_HOST_MAX + 160];
    snprintf(msg, sizeof(msg), "server %d (%s:%d): connection lost %s (closed, or no answer "
             "within %d ms)", server, s->host, s->port, when, fs->inst.timeout_ms);
    note_error(fs, msg);
}

/* Attempts at connecting and authenticating before a call gives up: a
 * server under a storm of connections may cut a handshake short
 * (fsd/gate.c evicts the oldest), which is worth another try. */
#define CONNECT_ATTEMPTS 3

/* Connects to server and authenticates both ends (handshake.h): the local
 * socket first when allowed, else TCP. Returns the socket, or -EACCES (the
 * server refused our secret), -EPERM (what listens there is not this
 * instance's server), -EIO (unreachable, full, or too slow); err says
 * which, naming the server. */
static int conn_open(adafs *fs, int server, int *local, char *err, size_t errlen)
{
    const struct instance_server *s = &fs->inst.servers[server];
    int64_t deadline = net_now_ms() + fs->inst.timeout_ms;
    int rc = -EIO;
    for (int attempt = 0; attempt < CONNECT_ATTEMPTS; attempt++) {
        int left = (int)(deadline - net_now_ms());
        if (left <= 0)
            break;
        int fd = -1;
        *local = 0;
        if (fs->local_sockets) {
            char name[INSTANCE_LOCAL_NAME_MAX];
            instance_local_name(s->host, s->port, name);
            fd = net_connect_abstract(name, geteuid(), left);
            *local = fd >= 0;
        }
        char why[400];
        if (fd < 0)
            fd = net_connect(s->host, s->port, left, why, sizeof(why));
        if (fd < 0) {
            snprintf(err, errlen, "server %d: %s", server, why);
            return -EIO;
        }
        char peer[INSTANCE_HOST_MAX + 64];
        snprintf(peer, sizeof(peer), "server %d (%s:%d%s)", server, s->host, s->port,
                 *local ? ", local socket" : "");
        rc = handshake_client(fd, (uint32_t)server, fs->inst.secret, deadline, peer, err, errlen);
        if (rc == 0)
            return fd;
        sock_close(fd);
        if (rc != -ECONNRESET && rc != -EPIPE)
            break;
        struct timespec pause = { 0, 2000000L << attempt };
        nanosleep(&pause, NULL);
    }
    return rc == -EACCES || rc == -EPERM ? rc : rc == -EPROTO ? -EPERM : -EIO;
}

const char *adafs_last_error(adafs *fs, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    pthread_mutex_lock(&fs->error_lock);
    snprintf(buf, len, "%s", fs->last_error);
    pthread_mutex_unlock(&fs->error_lock);
    return buf;
}

static int conn_ready(adafs *fs, int server, int need_pipe)
{
    struct server_conn *sc = &fs->conns[server];
    pid_t pid = getpid();
    /* Inherited over fork: the socket and pipe are the parent's. */
    if (sc->fd >= 0 && sc->pid != pid)
        conn_forget(sc, 1);
    if (sc->fd < 0) {
        if (!sc->in) {
            sc->in = malloc(CONN_BUF);
            if (!sc->in)
                return -ENOMEM;
            sc->cap = CONN_BUF;
        }
        char err[512];
        int local, fd = conn_open(fs, server, &local, err, sizeof(err));
        if (fd < 0) {
            note_error(fs, err);
            return fd;
        }
        sc->fd = fd;
        sc->local = local;
        sc->pid = pid;
        sc->start = sc->end = 0;
    }
    return need_pipe ? conn_pipe(sc) : 0;
}

/* Whether a call moves its bulk data through the connection's pipe. */
static int uses_pipe(const struct call *c)
{
    return c->dest_fd >= 0;
}

/* After a splice or sendfile failed with errno: 0 to try again (interrupted,
 * or the socket's own timeout ran out before the deadline), else -errno or
 * -ETIMEDOUT. */
static int retry(int64_t deadline)
{
    if (errno != EINTR && errno != EAGAIN)
        return -errno;
    return net_now_ms() < deadline ? 0 : -ETIMEDOUT;
}

/* SIGPIPE blocked around a splice or sendfile into a socket. */
struct nopipe {
    sigset_t old;
    int was_pending;
};

static void nopipe_begin(struct nopipe *np)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &np->old);
    sigpending(&pending);
    np->was_pending = sigismember(&pending, SIGPIPE);
}

static void nopipe_end(struct nopipe *np, int rc)
{
    if (rc == -EPIPE && !np->was_pending) {
        sigset_t pipe_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        struct timespec zero = { 0, 0 };
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

/* Sends len bytes of file fd from off; the caller made sure it holds them.
 * A file that shrank meanwhile gives -ENODATA (the request is then
 * incomplete, and the connection must go). */
static int send_from_file(struct server_conn *sc, int fd, uint64_t off, size_t len,
                          int64_t deadline)
{
    off_t pos = (off_t)off;
    while (len > 0) {
        ssize_t n = syscall(SYS_sendfile, sc->fd, fd, &pos, len);
        if (n < 0) {
            int rc = retry(deadline);
            if (rc < 0)
                return rc;
            continue;
        }
        if (n == 0)
            return -ENODATA;
        len -= (size_t)n;
    }
    return 0;
}

/* On a local connection, data in the caller's file goes by descriptor:
 * the opcode gets FS_BULK_FD and the payload the file's offset and the
 * data's length in front (proto.h). */
static void pass_descriptor(const struct server_conn *sc, struct call *c)
{
    if (!sc->local || c->bulk_fd < 0 || c->bulk_len == 0)
        return;
    uint8_t head_buf[12];
    struct rpc_writer head;
    rpc_writer_init(&head, head_buf, sizeof(head_buf));
    rpc_put_u64(&head, c->bulk_fd_off);
    rpc_put_u32(&head, (uint32_t)c->bulk_len);
    size_t n = c->req.len;
    if (!rpc_put_raw(&c->req, NULL, sizeof(head_buf)))
        return;   /* the writer is failed: the call fails with ENOMEM */
    memmove(c->req.data + sizeof(head_buf), c->req.data, n);
    memcpy(c->req.data, head_buf, sizeof(head_buf));
    c->op |= FS_BULK_FD;
    c->pass_fd = c->bulk_fd;
    c->bulk_len = 0;
}

static int send_call(adafs *fs, struct call *c)
{
    struct server_conn *sc = &fs->conns[c->server];
    struct rpc_header h = { .opcode = c->op, .id = atomic_fetch_add(&fs->request_id, 1) + 1,
                            .length = (uint32_t)(c->req.len + c->bulk_len) };
    uint8_t hdr[RPC_HEADER_SIZE];
    rpc_header_encode(&h, hdr);
    struct iovec iov[3] = {
        { .iov_base = hdr, .iov_len = sizeof(hdr) },
        { .iov_base = c->req.data, .iov_len = c->req.len },
        { .iov_base = (void *)c->bulk, .iov_len = c->bulk_len },
    };
    int64_t deadline = net_now_ms() + fs->inst.timeout_ms;
    int from_file = c->bulk_len > 0 && c->bulk_fd >= 0;
    int rc = c->pass_fd >= 0 ? net_writev_fd(sc->fd, iov, 2, c->pass_fd, deadline)
                             : net_writev_full(sc->fd, iov, from_file ? 2 : 3, deadline);
    if (rc < 0 || !from_file)
        return rc;
    struct nopipe np;
    nopipe_begin(&np);
    rc = send_from_file(sc, c->bulk_fd, c->bulk_fd_off, c->bulk_len, deadline);
    nopipe_end(&np, rc);
    return rc;
}

/* Copies up to len buffered bytes into dst and reads the rest straight from
 * the socket, so bulk data lands in the caller's buffer without a detour.
 * ahead: how much more may be read into the buffer (CONN_AHEAD for small
 * answers; not into bulk data). */
static int conn_read(adafs *fs, struct server_conn *sc, void *dst, size_t len, size_t ahead)
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
    size_t room = rest + ahead < sc->cap ? rest + ahead : sc->cap;
    ssize_t n = net_read_some(sc->fd, sc->in, rest, room, deadline);
    if (n < 0)
        return (int)n;
    memcpy((uint8_t *)dst + take, sc->in, rest);
    sc->start = rest;
    sc->end = (size_t)n;
    return 0;
}

/* Writes n bytes into fd at *off; -errno on failure. Raw system calls on
 * the caller's file, as on our sockets: an interposer must not route them. */
static int pwrite_all(int fd, const uint8_t *p, size_t n, loff_t *off)
{
    while (n > 0) {
        ssize_t k = syscall(SYS_pwrite64, fd, p, n, *off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -errno : -EIO;
        p += k;
        n -= (size_t)k;
        *off += k;
    }
    return 0;
}

/* Moves the len bytes of an answer's payload into c->dest_fd at
 * c->dest_off: what is buffered already with pwrite, the rest from the
 * socket through the pipe. Should the file refuse them (c->dest_err), the
 * rest is still read and dropped, so the connection stays in step. */
static int conn_read_to_fd(adafs *fs, struct server_conn *sc, struct call *c, size_t len)
{
    int64_t deadline = net_now_ms() + fs->inst.timeout_ms;
    loff_t off = (loff_t)c->dest_off;
    size_t have = sc->end - sc->start;
    size_t take = have < len ? have : len;
    if (take > 0)
        c->dest_err = pwrite_all(c->dest_fd, sc->in + sc->start, take, &off);
    sc->start += take;
    len -= take;
    if (sc->start == sc->end)
        sc->start = sc->end = 0;
    while (len > 0) {
        if (c->dest_err < 0) {
            /* The buffer is empty: a sink for the rest. */
            ssize_t n = net_read_some(sc->fd, sc->in, 1, len < sc->cap ? len : sc->cap, deadline);
            if (n < 0)
                return (int)n;
            len -= (size_t)n;
            continue;
        }
        ssize_t got = syscall(SYS_splice, sc->fd, NULL, sc->pipe[1], NULL,
                              len < sc->pipe_size ? len : sc->pipe_size, SPLICE_F_MOVE);
        if (got == 0)
            return -ECONNRESET;
        if (got < 0) {
            int rc = retry(deadline);
            if (rc < 0)
                return rc;
            continue;
        }
        len -= (size_t)got;
        while (got > 0) {
            ssize_t put = c->dest_err < 0 ? -1 :
                syscall(SYS_splice, sc->pipe[0], NULL, c->dest_fd, &off, (size_t)got, SPLICE_F_MOVE);
            if (put < 0 && c->dest_err == 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                if (c->dest_err == 0)
                    c->dest_err = put < 0 ? -errno : -EIO;
                ssize_t n = syscall(SYS_read, sc->pipe[0], sc->in,
                                    (size_t)got < sc->cap ? (size_t)got : sc->cap);
                if (n <= 0)
                    return -EIO;
                put = n;
            }
            got -= put;
        }
    }
    return 0;
}

/* The last answer due on its connection, bound for the caller's memory,
 * with nothing of it read yet: header, flags and payload come with one
 * recvmsg when they have all arrived (nothing can follow them on the
 * connection, so where the payload goes is known before the header is
 * read). Most reads are one such answer. Returns 1, or -EIO. */
static int recv_last_into_dest(adafs *fs, struct server_conn *sc, struct call *c, size_t head)
{
    int64_t deadline = net_now_ms() + fs->inst.timeout_ms;
    uint8_t front[RPC_HEADER_SIZE + 4];
    size_t flen = RPC_HEADER_SIZE + head, got = 0;
    struct iovec iov[2] = { { front, flen }, { c->dest, c->dest_cap } };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
    while (got < RPC_HEADER_SIZE) {
        ssize_t n = recvmsg(sc->fd, &msg, 0);
        if (n == 0 || (n < 0 && retry(deadline) < 0))
            return -EIO;
        if (n < 0)
            continue;
        got += (size_t)n;
        for (size_t left = (size_t)n; left > 0 && msg.msg_iovlen > 0;) {
            size_t take = left < msg.msg_iov->iov_len ? left : msg.msg_iov->iov_len;
            msg.msg_iov->iov_base = (uint8_t *)msg.msg_iov->iov_base + take;
            msg.msg_iov->iov_len -= take;
            left -= take;
            if (msg.msg_iov->iov_len == 0) {
                msg.msg_iov++;
                msg.msg_iovlen--;
            }
        }
    }
    struct rpc_header h;
    if (rpc_header_decode(front, &h) < 0 || h.opcode != c->op)
        return -EIO;
    size_t len = h.length;
    if (head && h.status == 0) {
        if (len < head)
            return -EIO;
        if (got < flen && net_read_full(sc->fd, front + got, flen - got, deadline) < 0)
            return -EIO;
        struct rpc_reader r;
        rpc_reader_init(&r, front + RPC_HEADER_SIZE, head);
        c->flags = rpc_get_u32(&r);
        len -= head;
    } else if (head && got > RPC_HEADER_SIZE) {
        return -EIO;   /* an error has no flags, nor a payload */
    }
    size_t have = got > flen ? got - flen : 0;
    if (len > c->dest_cap || have > len ||
        (have < len && net_read_full(sc->fd, (uint8_t *)c->dest + have, len - have, deadline) < 0))
        return -EIO;
    c->resp_len = len;
    c->status = h.status > 0 ? -EIO : h.status;
    return 1;
}

static int recv_call(adafs *fs, struct call *c)
{
    struct server_conn *sc = &fs->conns[c->server];
    uint8_t hdr[RPC_HEADER_SIZE];
    int bulk = (c->dest || c->dest_fd >= 0) && c->dest_cap >= sc->cap / 2;
    uint8_t flags[4];
    size_t head = c->dest_flags ? sizeof(flags) : 0;
    if (bulk && c->dest && c->last && sc->start == sc->end)
        return recv_last_into_dest(fs, sc, c, head);
    int rc = conn_read(fs, sc, hdr, sizeof(hdr), bulk ? head : CONN_AHEAD);
    struct rpc_header h;
    if (rc < 0 || rpc_header_decode(hdr, &h) < 0 || h.opcode != c->op)
        return -EIO;
    if (c->dest || c->dest_fd >= 0) {
        size_t len = h.length;
        if (head && h.status == 0) {
            if (len < head || conn_read(fs, sc, flags, head, 0) < 0)
                return -EIO;
            struct rpc_reader r;
            rpc_reader_init(&r, flags, head);
            c->flags = rpc_get_u32(&r);
            len -= head;
        }
        if (len > c->dest_cap)
            return -EIO;
        rc = c->dest ? conn_read(fs, sc, c->dest, len, CONN_AHEAD)
                     : conn_read_to_fd(fs, sc, c, len);
        c->resp_len = len;
    } else {
        c->resp = h.length <= sizeof(c->resp_inline) ? c->resp_inline : malloc(h.length);
        if (!c->resp)
            return -EIO;
        rc = conn_read(fs, sc, c->resp, h.length, CONN_AHEAD);
        c->resp_len = h.length;
    }
    if (rc < 0)
        return -EIO;
    c->status = h.status > 0 ? -EIO : h.status;
    return 1;
}

/* The answer to a DATA_FD, with nothing else due on the connection: the
 * header (no payload) and the descriptor passed with its first byte. */
static int recv_fd_answer(adafs *fs, struct server_conn *sc, struct call *c, int *fd)
{
    uint8_t hdr[RPC_HEADER_SIZE];
    struct net_fds fds = { .count = 0 };
    *fd = -1;
    if (sc->start != sc->end)
        return -EIO;   /* bytes of nothing we asked for */
    ssize_t n = net_read_some_fds(sc->fd, hdr, sizeof(hdr), sizeof(hdr),
                                  net_now_ms() + fs->inst.timeout_ms, &fds);
    struct rpc_header h;
    int rc = n == (ssize_t)sizeof(hdr) && rpc_header_decode(hdr, &h) == 0 &&
             h.opcode == c->op && h.length == 0 ? 0 : -EIO;
    if (rc == 0)
        rc = h.status > 0 ? -EIO : h.status;
    if (rc == 0 && (*fd = net_fds_take(&fds)) < 0)
        rc = -EIO;
    net_fds_close(&fds);   /* only one was due */
    if (rc < 0 && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    return rc;
}

int fs_data_fd(adafs *fs, int server, uint64_t key)
{
    struct server_conn *sc = &fs->conns[server];
    pthread_mutex_lock(&sc->lock);
    int rc = conn_ready(fs, server, 0), fd = -1;
    if (rc == 0 && !sc->local)
        rc = -EPERM;
    if (rc == 0) {
        struct call c;
        call_init(&c, server, FS_DATA_FD);
        rpc_put_u64(&c.req, key);
        rc = rpc_writer_ok(&c.req) ? send_call(fs, &c) : -ENOMEM;
        if (rc == 0)
            rc = recv_fd_answer(fs, sc, &c, &fd);
        else if (rc != -ENOMEM)
            rc = -EIO;
        if (rc == -EIO)
            conn_drop(sc);
        call_free(&c);
    }
    pthread_mutex_unlock(&sc->lock);
    return rc < 0 ? rc : fd;
}

void fs_call(adafs *fs, struct call *calls, int n)
{
    fs_call_meanwhile(fs, calls, n, NULL, NULL);
}

void fs_call_meanwhile(adafs *fs, struct call *calls, int n, void (*meanwhile)(void *),
                       void *arg)
{
    int nservers = fs->inst.nservers;
    /* Per server: 0 not in the batch, 1 in it and needs no pipe, 2 needs
     * one, 3 ready; < 0 its connection failed (-errno) in this batch. */
    int small[64], *state = nservers <= 64 ? small : calloc((size_t)nservers, sizeof(int));
    if (!state) {
        for (int i = 0; i < n; i++)
            calls[i].status = -ENOMEM;
        if (meanwhile)
            meanwhile(arg);
        return;
    }
    if (state == small)
        memset(small, 0, sizeof(small));
    for (int i = 0; i < n; i++) {
        int *st = &state[calls[i].server];
        if (*st < 2)
            *st = uses_pipe(&calls[i]) ? 2 : 1;
    }
    /* Locked in ascending order. */
    for (int s = 0; s < nservers; s++) {
        if (!state[s])
            continue;
        pthread_mutex_lock(&fs->conns[s].lock);
        int rc = conn_ready(fs, s, state[s] == 2);
        state[s] = rc < 0 ? rc : 3;
    }
    for (int i = 0; i < n; i++) {
        struct call *c = &calls[i];
        c->status = -EIO;
        if (state[c->server] < 0) {
            c->status = state[c->server];
            continue;
        }
        pass_descriptor(&fs->conns[c->server], c);
        if (!rpc_writer_ok(&c->req)) {
            c->status = -ENOMEM;
            continue;
        }
        if (send_call(fs, c) < 0) {
            conn_drop(&fs->conns[c->server]);
            note_lost(fs, c->server, "sending a request");
            state[c->server] = -EIO;
            continue;
        }
        c->status = 1;   /* sent: an answer is due */
    }
    if (meanwhile)
        meanwhile(arg);
    /* The last answer due on each connection (state 3 -> 4 on the way). */
    for (int i = n - 1; i >= 0; i--) {
        int *st = &state[calls[i].server];
        calls[i].last = calls[i].status == 1 && *st == 3;
        if (calls[i].last)
            *st = 4;
    }
    for (int i = 0; i < n; i++) {
        struct call *c = &calls[i];
        if (c->status != 1)
            continue;
        if (state[c->server] < 0 || recv_call(fs, c) < 0) {
            c->status = -EIO;
            if (state[c->server] >= 0) {
                conn_drop(&fs->conns[c->server]);
                note_lost(fs, c->server, "awaiting an answer");
            }
            state[c->server] = -EIO;
        }
    }
    for (int s = 0; s < nservers; s++)
        if (state[s])
            pthread_mutex_unlock(&fs->conns[s].lock);
    if (state != small)
        free(state);
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
