/* qos_attach: see qos_attach.h. */
#include "qos_attach.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void encode(uint32_t word, uint8_t out[QOS_ATTACH_LEN])
{
    put32(out, QOS_ATTACH_MAGIC);
    put32(out + 4, QOS_ATTACH_VERSION);
    put32(out + 8, word);
}

static int decode(const uint8_t *in, size_t len, uint32_t *word)
{
    if (len != QOS_ATTACH_LEN || get32(in) != QOS_ATTACH_MAGIC || get32(in + 4) != QOS_ATTACH_VERSION)
        return -EPROTO;
    *word = get32(in + 8);
    return 0;
}

void qos_attach_req_encode(uint32_t job_id, uint8_t out[QOS_ATTACH_LEN])
{
    encode(job_id, out);
}

int qos_attach_req_decode(const uint8_t *in, size_t len, uint32_t *job_id)
{
    return decode(in, len, job_id);
}

void qos_attach_rep_encode(int32_t status, uint8_t out[QOS_ATTACH_LEN])
{
    encode((uint32_t)status, out);
}

int qos_attach_rep_decode(const uint8_t *in, size_t len, int32_t *status)
{
    uint32_t w;
    if (decode(in, len, &w) < 0)
        return -EPROTO;
    int32_t s = (int32_t)w;
    if (s > 0 || s < -4095)
        return -EPROTO;
    *status = s;
    return 0;
}

int qos_attach_answer(int conn, int timeout_ms, int (*lookup)(void *ctx, uint32_t job, uid_t uid),
                      void *ctx, uint32_t *job, uid_t *uid)
{
    *job = 0;
    *uid = (uid_t)-1;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
        return -errno;
    *uid = cred.uid;
    struct pollfd p = { .fd = conn, .events = POLLIN };
    int ready = poll(&p, 1, timeout_ms);
    if (ready <= 0)
        return ready < 0 ? -errno : -ETIMEDOUT;
    uint8_t req[QOS_ATTACH_LEN + 1];
    ssize_t got = recv(conn, req, sizeof(req), MSG_DONTWAIT);
    if (got < 0)
        return -errno;
    if (qos_attach_req_decode(req, (size_t)got, job) < 0)
        return -EPROTO;
    int fd = lookup(ctx, *job, cred.uid);
    uint8_t rep[QOS_ATTACH_LEN];
    qos_attach_rep_encode(fd < 0 ? fd : 0, rep);
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    struct iovec iov = { rep, sizeof(rep) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (fd >= 0) {
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof(ctl.buf);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof(int));
    }
    if (sendmsg(conn, &m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        return -errno;
    return fd < 0 ? fd : 0;
}
