/* conn: one thread per client connection, once gate.c has authenticated
 * it.
 *
 * A client keeps one connection per server for its whole life and may send
 * several requests before reading the answers (a large write goes out as a
 * train of chunk writes). Requests are read through a buffer and answers are
 * gathered in another one that is flushed only when no further complete
 * request is already buffered, so a pipelined train costs one read and one
 * write system call on each side, not one per message.
 *
 * A client on this node comes through the Unix socket instead and may pass
 * a descriptor with a request (FS_BULK_FD): descriptors arrive with their
 * request's first bytes, in request order, and wait in a queue until their
 * request is served. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "log.h"
#include "net.h"

/* A client that stops reading its answers is given this long per write. */
#define SEND_TIMEOUT_MS 30000
#define IN_INITIAL (256u << 10)
#define OUT_FLUSH (256u << 10)
/* At most this much is read beyond the request being completed. */
#define READ_AHEAD (4u << 10)
/* A WRITE or CREATE_WRITE with more payload than this streams its data
 * from the socket into the file (splice) instead of reading it into memory
 * first. */
#define STREAM_MIN (64u << 10)
#define WRITE_PREFIX (24 + FS_CAP_WIRE_SIZE) /* u64 key, u64 index, u32 offset, u32 length, cap */

/* What clients' malformed requests and dropped connections make us log:
 * they proved the secret, but the log is in root's directory, so it is
 * bounded all the same. */
static struct log_limit bad_request_log = LOG_LIMIT_INIT(10, 10000);
static struct log_limit closed_log = LOG_LIMIT_INIT(10, 10000);

struct conn {
    struct server *srv;
    int fd;
    int local;                       /* through the Unix socket */
    int fd_ok;                       /* local, and of our own uid: DATA_FD answers */
    struct net_fds fds;              /* descriptors passed, not yet taken */
    int pipe[2];                     /* for splicing large writes; -1: none yet */
    char peer[64];
    struct fair_who who;             /* what the gate established */
    int has_caller;
    struct caller caller;            /* a server several users share: who it proved */
    uint8_t *in;
    size_t cap, start, end;
    size_t taken;                    /* of cap, counted by access_buffer_take */
    struct rpc_writer out;
};

/* net_read_some, keeping what descriptors a local client passes. */
static ssize_t sock_read(struct conn *c, void *buf, size_t min, size_t max)
{
    ssize_t n = net_read_some_fds(c->fd, buf, min, max, 0, c->local ? &c->fds : NULL);
    if (n == -EPROTO)
        log_limited(&bad_request_log, LOG_LEVEL_WARN,
                    "dropping %s: it passed more descriptors than requests", c->peer);
    return n;
}

/* The connection's pipe, made on first need (-errno if it cannot be). */
static int conn_pipe(struct conn *c)
{
    if (c->pipe[0] >= 0)
        return 0;
    if (pipe2(c->pipe, O_CLOEXEC) < 0) {
        c->pipe[0] = c->pipe[1] = -1;
        return -errno;
    }
    fcntl(c->pipe[1], F_SETPIPE_SZ, STREAM_PIPE_SIZE);
    return 0;
}

static int flush(struct conn *c)
{
    if (c->out.len == 0)
        return 0;
    int rc = net_write_full(c->fd, c->out.data, c->out.len, net_now_ms() + SEND_TIMEOUT_MS);
    c->out.len = 0;
    return rc;
}

/* Makes sure `need` bytes from c->start are buffered. Before blocking on the
 * socket, sends the answers gathered so far: the client may be waiting for
 * them before it sends more. */
static int fill(struct conn *c, size_t need)
{
    if (c->end - c->start >= need)
        return 0;
    int rc = flush(c);
    if (rc < 0)
        return rc;
    if (c->cap - c->start < need) {
        memmove(c->in, c->in + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
        if (c->cap < need) {
            /* On a server several users share, what one user's requests
             * hold in memory is bounded (access.c): else requests sent
             * in part on every connection a user may hold could take all
             * of it. */
            if (c->has_caller &&
                (rc = access_buffer_take(c->srv, c->caller.uid, need - c->cap,
                                         net_now_ms() + SEND_TIMEOUT_MS)) < 0) {
                log_limited(&bad_request_log, LOG_LEVEL_WARN, "dropping %s: uid %u's requests "
                            "hold all the memory this server gives one user "
                            "(--max-buffered-per-user)", c->peer, (unsigned)c->caller.uid);
                return rc;
            }
            uint8_t *p = realloc(c->in, need);
            if (!p) {
                if (c->has_caller)
                    access_buffer_give(c->srv, c->caller.uid, need - c->cap);
                return -ENOMEM;
            }
            if (c->has_caller)
                c->taken += need - c->cap;
            c->in = p;
            c->cap = need;
        }
    }
    /* Read ahead for small requests (a pipelined train arrives in one
     * call), but not past a large one: bytes of the next request read now
     * would have to be moved to the front of the buffer afterwards. And
     * only a little: what is read ahead of a large WRITE's data is copied
     * twice (into this buffer, then into the file) instead of spliced. */
    size_t missing = need - (c->end - c->start);
    size_t room = need > IN_INITIAL ? missing : c->cap - c->end;
    if (room > missing && room > READ_AHEAD)
        room = missing > READ_AHEAD ? missing : READ_AHEAD;
    ssize_t n = sock_read(c, c->in + c->end, missing, room);
    if (n < 0)
        return (int)n;
    c->end += (size_t)n;
    return 0;
}

/* A shared server's connection gives back what a large request took once
 * it is served (a job's own server keeps its buffer: its next large
 * request would fault the pages in again). */
static void shrink(struct conn *c)
{
    size_t left = c->end - c->start;
    if (!c->taken || left > IN_INITIAL)
        return;
    memmove(c->in, c->in + c->start, left);
    c->start = 0;
    c->end = left;
    uint8_t *p = realloc(c->in, IN_INITIAL);
    if (p) {
        c->in = p;
        c->cap = IN_INITIAL;
        access_buffer_give(c->srv, c->caller.uid, c->taken);
        c->taken = 0;
    }
}

/* Is a whole further request already buffered? */
static int request_buffered(const struct conn *c)
{
    size_t avail = c->end - c->start;
    struct rpc_header h;
    if (avail < RPC_HEADER_SIZE || rpc_header_decode(c->in + c->start, &h) < 0)
        return 0;
    return avail - RPC_HEADER_SIZE >= h.length;
}

/* Sends len bytes of file_fd from off after the gathered answers. A chunk
 * that shrank meanwhile is padded with zeros: the length is already sent. */
static int send_file(struct conn *c, int file_fd, uint64_t off, size_t len)
{
    int rc = flush(c);
    off_t pos = (off_t)off;
    int64_t deadline = net_now_ms() + SEND_TIMEOUT_MS;
    while (rc == 0 && len > 0) {
        ssize_t n = sendfile(c->fd, file_fd, &pos, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN) && net_now_ms() < deadline)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) {
            static const uint8_t zeros[4096];
            while (rc == 0 && len > 0) {
                size_t k = len < sizeof(zeros) ? len : sizeof(zeros);
                rc = net_write_full(c->fd, zeros, k, net_now_ms() + SEND_TIMEOUT_MS);
                len -= k;
            }
            break;
        }
        len -= (size_t)n;
    }
    return rc;
}

/* Sends the answers gathered, the one at hdr_at (the last) with the
 * descriptor fd on its first byte, then closes fd. */
static int send_passing(struct conn *c, size_t hdr_at, int fd)
{
    int rc = net_write_full(c->fd, c->out.data, hdr_at, net_now_ms() + SEND_TIMEOUT_MS);
    struct iovec iov = { c->out.data + hdr_at, c->out.len - hdr_at };
    if (rc == 0)
        rc = net_writev_fd(c->fd, &iov, 1, fd, net_now_ms() + SEND_TIMEOUT_MS);
    c->out.len = 0;
    close(fd);
    return rc;
}

/* A request with FS_BULK_FD: its data comes from the descriptor passed
 * with it, at the offset its payload starts with (proto.h). */
static int bulk_from_fd(struct conn *c, uint16_t op, struct rpc_reader *r, struct stream *s)
{
    uint64_t off = rpc_get_u64(r);
    uint32_t len = rpc_get_u32(r);
    *s = (struct stream){ .sock = -1, .pipe = c->pipe, .left = len, .src_off = off,
                          .src_fd = c->local ? net_fds_take(&c->fds) : -1 };
    struct stat st;
    if (!rpc_reader_ok(r) || (op != FS_WRITE && op != FS_CREATE_WRITE) || s->src_fd < 0 ||
        fstat(s->src_fd, &st) < 0)
        return -EBADMSG;
    /* A regular file: not a pipe or socket the client could stall us on. */
    if (!S_ISREG(st.st_mode) || len == 0 || off > (uint64_t)INT64_MAX - len)
        return -EINVAL;
    conn_pipe(c);   /* for splicing where copy_file_range will not copy */
    return 0;
}

/* Handles the request at c->start, of which in_mem payload bytes are in
 * the buffer and rest (if not NULL) is still in the socket; returns < 0 to
 * drop the connection. */
static int serve_one(struct conn *c, const struct rpc_header *req, size_t in_mem,
                     struct stream *rest)
{
    struct server *srv = c->srv;
    size_t hdr_at = c->out.len;
    if (!rpc_put_raw(&c->out, NULL, RPC_HEADER_SIZE))
        return -ENOMEM;
    struct rpc_header ans = { .opcode = req->opcode, .id = req->id };
    struct reply rep = { .caller = c->has_caller ? &c->caller : NULL, .rest = rest,
                         .fd_ok = c->fd_ok, .pass_fd = -1 };
    struct rpc_reader r;
    rpc_reader_init(&r, c->in + c->start + RPC_HEADER_SIZE, in_mem);
    uint16_t op = req->opcode & ~FS_BULK_FD;
    struct stream by_fd = { .src_fd = -1 };
    int bad = 0;
    if (req->opcode & FS_BULK_FD) {
        bad = bulk_from_fd(c, op, &r, &by_fd);
        rep.rest = &by_fd;
    }
    rep.out = c->out;
    struct dispatch_gate gate;
    dispatch_enter(srv, &c->who, req->length, &gate);
    ans.status = bad < 0 ? bad : dispatch(srv, op, &r, &rep);
    c->out = rep.out;
    if (by_fd.src_fd >= 0)
        close(by_fd.src_fd);
    if (ans.status == 0 && !rpc_writer_ok(&c->out))
        ans.status = -ENOMEM;
    if (ans.status == -EBADMSG || ans.status == -EOPNOTSUPP)
        log_limited(&bad_request_log, LOG_LEVEL_WARN, "bad %s%s request (opcode %#x, %u bytes) from %s: %s", dispatch_op_name(op),
                 op != req->opcode ? " (data by descriptor)" : "", req->opcode, req->length,
                 c->peer, strerror(-ans.status));
    if (ans.status < 0) {
        c->out.len = hdr_at + RPC_HEADER_SIZE;   /* no payload with an error */
        if (rep.file)
            datafile_put(rep.file);
        rep.file = NULL;
        if (rep.pass_fd >= 0)
            close(rep.pass_fd);
        rep.pass_fd = -1;
    }
    size_t payload = c->out.len - hdr_at - RPC_HEADER_SIZE;
    ans.length = (uint32_t)(payload + (rep.file ? rep.file_len : 0));
    rpc_header_encode(&ans, c->out.data + hdr_at);
    int rc = 0;
    if (rep.pass_fd >= 0) {
        rc = send_passing(c, hdr_at, rep.pass_fd);
        dispatch_leave(srv, &gate, 0);   /* the client reads the data itself */
        return rc;
    }
    if (rep.file) {
        rc = send_file(c, datafile_fd(rep.file), rep.file_off, rep.file_len);
        datafile_put(rep.file);
    }
    /* A read's data counts in its cost: the slot is held until it is sent
     * (the answers gathered without a file go out with the next flush). */
    dispatch_leave(srv, &gate, ans.length);
    return rc;
}

/* Reads and drops n bytes of the current request from the socket: what a
 * handler did not take of a streamed payload. The buffer is free for it:
 * a streamed request is the last thing buffered. */
static int discard(struct conn *c, size_t n)
{
    while (n > 0) {
        ssize_t got = sock_read(c, c->in, 1, n < c->cap ? n : c->cap);
        if (got < 0)
            return (int)got;
        n -= (size_t)got;
    }
    return 0;
}

/* Where the data of a WRITE or CREATE_WRITE starts in its payload (layouts
 * in proto.h), given the first avail bytes of it at p. A result above avail
 * means: buffer that much, then ask again. */
static size_t data_offset(uint16_t opcode, const uint8_t *p, size_t avail)
{
    if (opcode == FS_WRITE)
        return WRITE_PREFIX;
    /* bytes path, u32 mode, u32 flags, u64 key, u64 size, [i64 mtime], cap, u32 length */
    struct rpc_reader r;
    rpc_reader_init(&r, p, avail);
    size_t flags_end = 4 + (size_t)rpc_get_u32(&r) + 8;
    if (avail < 4 || avail < flags_end)
        return avail < 4 ? 4 : flags_end;
    rpc_reader_init(&r, p + flags_end - 4, 4);
    uint32_t flags = rpc_get_u32(&r);
    return flags_end + 16 + ((flags & FS_CREATE_MTIME) ? 8 : 0) + FS_CAP_WIRE_SIZE + 4;
}

/* Is this a large write whose data should stream from the socket into the
 * file? If so, buffers its payload up to the data and returns 1. Creates
 * the connection's pipe on first use (without one, and for a request
 * whose prefix is malformed, it is read into memory: 0). */
static int stream_prefix(struct conn *c, const struct rpc_header *h)
{
    if ((h->opcode != FS_WRITE && h->opcode != FS_CREATE_WRITE) || h->length <= STREAM_MIN)
        return 0;
    if (conn_pipe(c) < 0)
        return 0;
    for (;;) {
        size_t avail = c->end - c->start - RPC_HEADER_SIZE;
        if (avail > h->length)
            avail = h->length;
        size_t at = data_offset(h->opcode, c->in + c->start + RPC_HEADER_SIZE, avail);
        if (at > h->length)
            return 0;
        if (at <= avail)
            return 1;
        int rc = fill(c, RPC_HEADER_SIZE + at);
        if (rc < 0)
            return rc;
    }
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    int rc;
    for (;;) {
        rc = fill(c, RPC_HEADER_SIZE);
        if (rc < 0)
            break;
        struct rpc_header h;
        rc = rpc_header_decode(c->in + c->start, &h);
        if (rc < 0) {
            log_limited(&bad_request_log, LOG_LEVEL_WARN, "dropping %s: bad message header: %s",
                        c->peer, strerror(-rc));
            break;
        }
        struct stream rest = { .sock = c->fd, .pipe = c->pipe, .src_fd = -1 };
        size_t in_mem = h.length;
        int streaming = rc = stream_prefix(c, &h);
        if (streaming > 0) {
            size_t avail = c->end - c->start - RPC_HEADER_SIZE;
            in_mem = avail < h.length ? avail : h.length;
            rest.left = h.length - in_mem;
        } else if (streaming == 0) {
            rc = fill(c, RPC_HEADER_SIZE + (size_t)h.length);
        }
        if (rc < 0)
            break;
        rc = serve_one(c, &h, in_mem, rest.left ? &rest : NULL);
        c->start += RPC_HEADER_SIZE + in_mem;
        if (rc == 0 && rest.left > 0)
            rc = discard(c, rest.left);
        if (c->start == c->end)
            c->start = c->end = 0;
        if (rc < 0)
            break;
        shrink(c);
        if ((!request_buffered(c) || c->out.len > OUT_FLUSH) && (rc = flush(c)) < 0)
            break;
    }
    if (rc != -ECONNRESET)
        log_limited(&closed_log, LOG_LEVEL_INFO, "connection from %s closed: %s", c->peer,
                    strerror(-rc));
    close(c->fd);
    if (c->pipe[0] >= 0) {
        close(c->pipe[0]);
        close(c->pipe[1]);
    }
    net_fds_close(&c->fds);
    free(c->in);
    rpc_writer_free(&c->out);
    if (c->has_caller) {
        access_buffer_give(c->srv, c->caller.uid, c->taken);
        access_release(c->srv, c->caller.uid);
    }
    atomic_fetch_sub(&c->srv->clients, 1);
    free(c);
    return NULL;
}

int conn_start(struct server *srv, int fd, int local, const char *peer,
               const struct fair_who *who, const struct caller *caller)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->srv = srv;
    c->fd = fd;
    c->local = local;
    c->pipe[0] = c->pipe[1] = -1;
    c->cap = IN_INITIAL;
    c->in = malloc(c->cap);
    rpc_writer_init(&c->out, NULL, 0);
    snprintf(c->peer, sizeof(c->peer), "%s", peer);
    c->who = *who;
    if (caller) {
        c->has_caller = 1;
        c->caller = *caller;
    }
    if (local) {
        net_set_unix_sndbuf(fd);   /* the answers of reads */
        /* Descriptors of data files only to our own user: the secret
         * proved the peer is the job's, the uid that it is not another
         * user who got hold of it (doc/filesystem.md). */
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        c->fd_ok = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
                   cred.uid == geteuid();
    }
    else
        net_set_nodelay(fd);
    /* Only sends time out: an idle client may stay connected for the job. */
    struct timeval tv = { .tv_sec = SEND_TIMEOUT_MS / 1000 };
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = c->in ? pthread_create(&t, &attr, conn_main, c) : ENOMEM;
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(c->in);
        free(c);
        return -rc;
    }
    return 0;
}
