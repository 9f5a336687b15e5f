/* dist_bell: the doorbell of a distributed stage's mailboxes (dist_bell.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dist_bell.h"
#include "log.h"

/* token, then the ringing worker's number (big-endian) */
#define RING_LEN (BELL_TOKEN + 4)
/* Datagrams read per look at the socket: anyone can send to the bell's
 * port, and a flood read until the socket is empty would hold the reader
 * there as long as it lasts (its mailboxes unread, the stage stalled). */
#define RINGS_PER_LOOK 64

int bell_open(struct dist_bell *b, char *err, size_t errlen)
{
    b->fd = -1;
    b->port = 0;
    b->said_error = 0;
    err[0] = '\0';
    b->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (b->wake_fd < 0) {
        int e = errno;
        snprintf(err, errlen, "eventfd: %s", strerror(e));
        return -e;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
    socklen_t alen = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
        snprintf(err, errlen, "the doorbell's UDP socket: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return 0;
    }
    b->fd = fd;
    b->port = ntohs(a.sin_port);
    return 0;
}

void bell_close(struct dist_bell *b)
{
    if (b->fd >= 0)
        close(b->fd);
    if (b->wake_fd >= 0)
        close(b->wake_fd);
    b->fd = b->wake_fd = -1;
}

int bell_resolve(const char *host, uint16_t port, struct sockaddr_in *to, char *err,
                 size_t errlen)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "worker 0's host %s: %s", host,
                 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    memcpy(to, res->ai_addr, sizeof(*to));
    to->sin_port = htons(port);
    freeaddrinfo(res);
    return 0;
}

void bell_ring(struct dist_bell *b, const struct sockaddr_in *to, uint32_t from)
{
    if (b->fd < 0 || !to || !to->sin_port)
        return;
    uint8_t m[RING_LEN];
    memcpy(m, b->token, BELL_TOKEN);
    uint32_t f = htonl(from);
    memcpy(m + BELL_TOKEN, &f, 4);
    if (sendto(b->fd, m, sizeof(m), MSG_DONTWAIT, (const struct sockaddr *)to, sizeof(*to)) < 0 &&
        errno != EAGAIN && !b->said_error) {
        /* The reader's slow poll still finds the message: said once. */
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &to->sin_addr, ip, sizeof(ip));
        log_warn("cannot ring the stage worker's doorbell at %s:%u: %s (it finds the "
                 "message at its next poll)", ip, ntohs(to->sin_port), strerror(errno));
        b->said_error = 1;
    }
}

void bell_wake_local(struct dist_bell *b)
{
    uint64_t one = 1;
    /* EAGAIN: the counter is full, so a wake-up is pending anyway. */
    if (write(b->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_warn("cannot wake the stage's message thread: %s", strerror(errno));
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The run's token, compared in constant time: a ring that is refused
 * says nothing of how much of its token was right. */
static bool token_ok(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;
    for (size_t i = 0; i < BELL_TOKEN; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

int bell_wait(struct dist_bell *b, double seconds,
              void (*rung)(void *arg, uint32_t from, const struct sockaddr_in *addr),
              void *arg)
{
    struct pollfd p[2] = { { .fd = b->wake_fd, .events = POLLIN },
                           { .fd = b->fd, .events = POLLIN } };
    int ms = seconds <= 0 ? 0 : (int)(seconds * 1000.0 + 0.999);
    int64_t due = now_ms() + ms;
    for (;;) {
        int64_t left = due - now_ms();
        if (poll(p, b->fd >= 0 ? 2 : 1, left > 0 ? (int)left : 0) <= 0)
            return 0;
        int local = 0, rang = 0;
        if (p[0].revents & POLLIN) {
            uint64_t v;
            local = read(b->wake_fd, &v, sizeof(v)) == (ssize_t)sizeof(v);
        }
        if (b->fd >= 0 && (p[1].revents & POLLIN)) {
            /* What is waiting, up to RINGS_PER_LOOK: many rings mean one
             * look each; more are read after the caller's look. */
            for (int k = 0; k < RINGS_PER_LOOK; k++) {
                uint8_t m[RING_LEN + 1];
                struct sockaddr_in from;
                socklen_t flen = sizeof(from);
                ssize_t n = recvfrom(b->fd, m, sizeof(m), MSG_DONTWAIT,
                                     (struct sockaddr *)&from, &flen);
                if (n < 0)
                    break;
                if (n != RING_LEN || flen != sizeof(from) || from.sin_family != AF_INET ||
                    !token_ok(m, b->token))
                    continue;               /* not from this run: ignored */
                uint32_t w;
                memcpy(&w, m + BELL_TOKEN, 4);
                rung(arg, ntohl(w), &from);
                rang = 1;
            }
        }
        /* Datagrams not of this run do not end the wait: sent in a stream,
         * they would turn the reader's sleep into a busy loop. */
        if (local || rang || now_ms() >= due)
            return local;
    }
}
