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

int rpc_recv(int fd, struct rpc_header *h, uint8_t **payload, size_t max_len,
             int64_t deadline_ms)
{
    uint8_t head[RPC_HEADER_SIZE];
    *payload = NULL;
    int rc = net_read_full(fd, head, sizeof(head), deadline_ms);
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
    if ((rc = net_read_full(fd, buf, h->length, deadline_ms)) < 0) {
        free(buf);
        return rc;
    }
    *payload = buf;
    return 0;
}
