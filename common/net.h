/* net: small TCP and Unix socket helpers in the spirit of Redis' anet.c.
 *
 * Blocking sockets with deadlines: a connection has SO_RCVTIMEO/SO_SNDTIMEO
 * set, so a single read or write never waits forever, and the *_full helpers
 * additionally stop at an absolute deadline (CLOCK_MONOTONIC milliseconds).
 * On sockets they use recv/sendmsg, not read/write, so an LD_PRELOAD
 * interposer that wraps read and write is not entered for a library's own
 * connections; on pipes and files they fall back to read/writev.
 * Functions return >= 0 or -errno; those that can fail for a reason worth
 * telling a user also write a message naming the peer into err. */
#ifndef ADAFS_NET_H
#define ADAFS_NET_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC, for deadlines. */
int64_t net_now_ms(void);

/* The CLOCK_REALTIME time ms milliseconds from now: the absolute time
 * pthread_cond_timedwait takes. */
struct timespec net_wall_after_ms(int64_t ms);

/* Splits "host:port" into host (copied into host[hostlen]) and *port.
 * Returns 0 or -EINVAL for a missing colon, an empty host, a host that does
 * not fit, or a port that is not a number in 0..65535. */
int net_parse_hostport(const char *text, char *host, size_t hostlen, int *port);

/* Listens on host:port (port 0: the kernel picks one), close-on-exec.
 * Returns the socket and sets *bound_port, or -errno with err filled. */
int net_listen(const char *host, int port, int backlog, int *bound_port,
               char *err, size_t errlen);

/* Connects to host:port, giving up after timeout_ms; the socket is left
 * blocking with TCP_NODELAY and per-call I/O timeouts of timeout_ms.
 * Returns the socket or -errno (-ETIMEDOUT, -ECONNREFUSED...) with err
 * filled. */
int net_connect(const char *host, int port, int timeout_ms, char *err, size_t errlen);

int net_set_nodelay(int fd);
/* Sets SO_RCVTIMEO and SO_SNDTIMEO (0: wait forever). */
int net_set_timeouts(int fd, int timeout_ms);

/* Reads exactly len bytes. Returns 0, -ECONNRESET at end of stream, or
 * -ETIMEDOUT once deadline_ms (0: none) has passed. */
int net_read_full(int fd, void *buf, size_t len, int64_t deadline_ms);

/* Reads at least min and at most max bytes; returns the count or -errno as
 * net_read_full. */
ssize_t net_read_some(int fd, void *buf, size_t min, size_t max, int64_t deadline_ms);

/* Descriptors received with the bytes of a Unix socket (SCM_RIGHTS), in
 * the order they came: first in, first out. */
#define NET_FDS_MAX 16
struct net_fds {
    int fd[NET_FDS_MAX];
    int first, count;
};
/* net_read_some on a Unix socket, keeping the descriptors that come with
 * the bytes in fds. -EPROTO when more arrive than fds holds (they are
 * closed). */
ssize_t net_read_some_fds(int fd, void *buf, size_t min, size_t max, int64_t deadline_ms,
                          struct net_fds *fds);
/* The oldest descriptor received, or -1 if none is waiting. */
int net_fds_take(struct net_fds *fds);
void net_fds_close(struct net_fds *fds);

/* Writes all of iov[0..iovcnt) (the array is modified); on a socket without
 * raising SIGPIPE. Same errors, and -EPIPE when the peer has gone. Works on
 * pipes and files too (through writev). */
int net_writev_full(int fd, struct iovec *iov, int iovcnt, int64_t deadline_ms);
int net_write_full(int fd, const void *buf, size_t len, int64_t deadline_ms);
/* net_writev_full on a Unix socket, passing the descriptor pass_fd with the
 * first bytes (the receiver gets its own copy of it). */
int net_writev_fd(int fd, struct iovec *iov, int iovcnt, int pass_fd, int64_t deadline_ms);

/* Listens on a Unix socket at path (replacing a stale one), mode 0600 so
 * only its owner may connect, close-on-exec. Returns the socket or -errno. */
int net_listen_unix(const char *path, int backlog);
/* Connects to the Unix socket at path. Returns the socket or -errno. */
int net_connect_unix(const char *path);

/* Listens on the abstract Unix socket name (Linux: no file, gone with the
 * socket; anyone on the node may connect, so what it serves must check
 * who asks). Returns the socket or -errno (-EADDRINUSE: taken). */
int net_listen_abstract(const char *name, int backlog);
/* Connects to the abstract Unix socket name, only if the process listening
 * there runs as peer_uid or as root (a server several users share; root
 * could read what is sent anyway), else -EPERM: someone else took the
 * name, and must not see what would be sent; I/O timeouts of timeout_ms.
 * Returns the socket or -errno. */
int net_connect_abstract(const char *name, uid_t peer_uid, int timeout_ms);
/* Asks for a send buffer of NET_UNIX_SNDBUF on a Unix stream socket (as
 * much as net.core.wmem_max allows); net_connect_abstract does it. */
#define NET_UNIX_SNDBUF (4 << 20)
void net_set_unix_sndbuf(int fd);

#endif
