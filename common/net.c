#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int64_t net_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec net_wall_after_ms(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int net_parse_hostport(const char *text, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= hostlen)
        return -EINVAL;
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || errno || p < 0 || p > 65535)
        return -EINVAL;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    *port = (int)p;
    return 0;
}

/* Resolves host numerically or by name into an IPv4 address. */
static int resolve(const char *host, int port, struct sockaddr_in *sa, char *err, size_t errlen)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
        return 0;
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "cannot resolve host '%s': %s", host, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}

int net_listen(const char *host, int port, int backlog, int *bound_port,
               char *err, size_t errlen)
{
    struct sockaddr_in sa;
    int rc = resolve(host, port, &sa, err, errlen);
    if (rc < 0)
        return rc;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return rc;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot listen on %s:%d: %s", host, port, strerror(errno));
        close(fd);
        return rc;
    }
    socklen_t len = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    *bound_port = ntohs(sa.sin_port);
    return fd;
}

int net_set_nodelay(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ? -errno : 0;
}

int net_set_timeouts(int fd, int timeout_ms)
{
    struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
        return -errno;
    return 0;
}

int net_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    int rc = resolve(host, port, &sa, err, errlen);
    if (rc < 0)
        return rc;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return rc;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno != EINPROGRESS) {
            rc = -errno;
            goto fail;
        }
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int n;
        do
            n = poll(&p, 1, timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n == 0) {
            rc = -ETIMEDOUT;
            goto fail;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (n < 0 || soerr) {
            rc = n < 0 ? -errno : -soerr;
            goto fail;
        }
    }
    if (fcntl(fd, F_SETFL, 0) < 0 || net_set_nodelay(fd) < 0 ||
        net_set_timeouts(fd, timeout_ms) < 0) {
        rc = -errno;
        goto fail;
    }
    return fd;
fail:
    snprintf(err, errlen, "cannot connect to %s:%d: %s", host, port, strerror(-rc));
    close(fd);
    return rc;
}

/* A blocking call returned EAGAIN (the socket timeout hit) or was
 * interrupted: go on unless the deadline has passed. */
static int retry_or_timeout(int64_t deadline_ms)
{
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        return -errno;
    if (errno == EINTR && (deadline_ms == 0 || net_now_ms() < deadline_ms))
        return 0;
    if (deadline_ms != 0 && net_now_ms() >= deadline_ms)
        return -ETIMEDOUT;
    return 0;
}

/* Receives into buf[0..max) on a Unix socket, taking the descriptors that
 * came with the bytes into fds (those beyond what fits are closed and the
 * call fails with -EPROTO: the peer broke the protocol). */
static ssize_t recv_fds(int fd, void *buf, size_t max, struct net_fds *fds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * NET_FDS_MAX)];
    } control;
    struct iovec iov = { .iov_base = buf, .iov_len = max };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.buf, .msg_controllen = sizeof(control.buf) };
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    int overflow = (msg.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int passed;
            memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (fds->count < NET_FDS_MAX) {
                fds->fd[(fds->first + fds->count++) % NET_FDS_MAX] = passed;
            } else {
                close(passed);
                overflow = 1;
            }
        }
    }
    if (overflow) {
        errno = EPROTO;
        return -1;
    }
    return n;
}

int net_fds_take(struct net_fds *fds)
{
    if (fds->count == 0)
        return -1;
    int fd = fds->fd[fds->first];
    fds->first = (fds->first + 1) % NET_FDS_MAX;
    fds->count--;
    return fd;
}

void net_fds_close(struct net_fds *fds)
{
    for (int fd; (fd = net_fds_take(fds)) >= 0;)
        close(fd);
}

ssize_t net_read_some(int fd, void *buf, size_t min, size_t max, int64_t deadline_ms)
{
    return net_read_some_fds(fd, buf, min, max, deadline_ms, NULL);
}

ssize_t net_read_some_fds(int fd, void *buf, size_t min, size_t max, int64_t deadline_ms,
                          struct net_fds *fds)
{
    size_t got = 0;
    while (got < min) {
        ssize_t n = fds ? recv_fds(fd, (char *)buf + got, max - got, fds)
                        : recv(fd, (char *)buf + got, max - got, 0);
        if (n < 0 && errno == EPROTO)
            return -EPROTO;
        if (n < 0 && errno == ENOTSOCK)
            n = read(fd, (char *)buf + got, max - got);   /* a pipe or a file */
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0) {
            return -ECONNRESET;
        } else {
            int rc = retry_or_timeout(deadline_ms);
            if (rc < 0)
                return rc;
        }
    }
    return (ssize_t)got;
}

int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms)
{
    ssize_t n = net_read_some(fd, buf, len, len, deadline_ms);
    return n < 0 ? (int)n : 0;
}

/* net_writev_full, passing pass_fd (>= 0) with the first bytes sent. */
static int writev_passing(int fd, struct iovec *iov, int iovcnt, int pass_fd,
                          int64_t deadline_ms)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    if (pass_fd >= 0) {
        struct msghdr probe = { .msg_control = control.buf, .msg_controllen = sizeof(control.buf) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&probe);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    while (iovcnt > 0) {
        /* sendmsg with MSG_NOSIGNAL: a peer that went away must give
         * -EPIPE, not kill the (application) process with SIGPIPE. */
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)iovcnt };
        if (pass_fd >= 0) {
            msg.msg_control = control.buf;
            msg.msg_controllen = sizeof(control.buf);
        }
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK && pass_fd < 0)
            n = writev(fd, iov, iovcnt);   /* a pipe or a file */
        if (n < 0) {
            int rc = retry_or_timeout(deadline_ms);
            if (rc < 0)
                return rc;
            continue;
        }
        pass_fd = -1;   /* it went with these bytes */
        while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

int net_writev_full(int fd, struct iovec *iov, int iovcnt, int64_t deadline_ms)
{
    return writev_passing(fd, iov, iovcnt, -1, deadline_ms);
}

int net_writev_fd(int fd, struct iovec *iov, int iovcnt, int pass_fd, int64_t deadline_ms)
{
    return writev_passing(fd, iov, iovcnt, pass_fd, deadline_ms);
}

int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    return net_writev_full(fd, &iov, 1, deadline_ms);
}

/* A Unix stream socket, with addr filled for path: the fd, or
 * -ENAMETOOLONG when path does not fit, or -errno. */
static int unix_socket(const char *path, struct sockaddr_un *addr)
{
    *addr = (struct sockaddr_un){ .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(addr->sun_path))
        return -ENAMETOOLONG;
    memcpy(addr->sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
}

/* A Unix stream socket, with addr and *alen filled for the abstract name
 * (no file: the kernel drops the name with the socket): the fd, or
 * -ENAMETOOLONG, or -errno. */
static int abstract_socket(const char *name, struct sockaddr_un *addr, socklen_t *alen)
{
    *addr = (struct sockaddr_un){ .sun_family = AF_UNIX };
    size_t len = strlen(name);
    if (len + 1 > sizeof(addr->sun_path))
        return -ENAMETOOLONG;
    memcpy(addr->sun_path + 1, name, len);
    *alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    return fd < 0 ? -errno : fd;
}

void net_set_unix_sndbuf(int fd)
{
    /* Unix stream sockets have no autotuning; what a sender may queue is
     * its send buffer (208 KiB by default), far below a chunk train.
     * Capped by net.core.wmem_max; below that, what we get is fine too. */
    int want = NET_UNIX_SNDBUF;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
}

int net_listen_abstract(const char *name, int backlog)
{
    struct sockaddr_un addr;
    socklen_t alen;
    int fd = abstract_socket(name, &addr, &alen);
    if (fd < 0)
        return fd;
    if (bind(fd, (struct sockaddr *)&addr, alen) < 0 || listen(fd, backlog) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int net_connect_abstract(const char *name, uid_t peer_uid, int timeout_ms)
{
    struct sockaddr_un addr;
    socklen_t alen;
    int fd = abstract_socket(name, &addr, &alen);
    if (fd < 0)
        return fd;
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    int rc = 0;
    if (connect(fd, (struct sockaddr *)&addr, alen) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
        rc = -errno;
    else if (cred.uid != peer_uid && cred.uid != 0)
        rc = -EPERM;
    else
        rc = net_set_timeouts(fd, timeout_ms);
    if (rc == 0)
        net_set_unix_sndbuf(fd);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int net_listen_unix(const char *path, int backlog)
{
    struct sockaddr_un addr;
    int fd = unix_socket(path, &addr);
    if (fd < 0)
        return fd;
    unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0600) < 0 ||
        listen(fd, backlog) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int net_connect_unix(const char *path)
{
    struct sockaddr_un addr;
    int fd = unix_socket(path, &addr);
    if (fd < 0)
        return fd;
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}
