#include "rpc_io.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "net.h"

int rpc_send(int fd, struct rpc_header *h, const void *payload, size_t len,
             int64_t deadline_ms)
{
    if (len > RPC_MAX_PAYLOAD)
        return -EMSGSIZE;
    uint8_t head[RPC_HEADER_SIZE];
    h->length = (uint32_t)len;
    rpc_header_encode(h, head);
    struct iovec iov[2] = { { head, sizeof(head) }, { (void *)payload, len } };
    return net_writev_full(fd, iov, len ? 2 : 1, deadline_ms);
}

/* net_read_full, but the deadline holds even while bytes keep coming: one
 * message of these protocols has a deadline as a whole, and a peer
 * sending a byte now and then must not hold the reader past it (the
 * socket needs I/O timeouts for a peer that sends nothing). */
static int read_by_deadline(int fd, uint8_t *buf, size_t len, int64_t deadline_ms)
{
    for (size_t got = 0; got < len;) {
        if (got && deadline_ms != 0 && net_now_ms() >= deadline_ms)
            return -ETIMEDOUT;
        ssize_t n = net_read_some(fd, buf + got, 1, len - got, deadline_ms);
        if (n < 0)
            return (int)n;
        got += (size_t)n;
    }
    return 0;
}

int rpc_recv(int fd, struct rpc_header *h, uint8_t **payload, size_t max_len,
             int64_t deadline_ms)
{
    uint8_t head[RPC_HEADER_SIZE];
    *payload = NULL;
    int rc = read_by_deadline(fd, head, sizeof(head), deadline_ms);
    if (rc < 0)
        return rc;
    if ((rc = rpc_header_decode(head, h)) < 0)
        return rc;
    if (h->length > max_len)
        return -EMSGSIZE;
    if (h->length == 0)
        return 0;
    uint8_t *buf = malloc(h->length);
    if (!buf)
        return -ENOMEM;
    if ((rc = read_by_deadline(fd, buf, h->length, deadline_ms)) < 0) {
        free(buf);
        return rc;
    }
    *payload = buf;
    return 0;
}
