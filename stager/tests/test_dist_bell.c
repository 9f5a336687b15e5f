/* The doorbell of a distributed stage (dist_bell.h) against what anyone on
 * the network can send to its UDP port: a ring with the run's token wakes
 * the reader and names the worker and its address; datagrams without it
 * (another token, another length, another sender) do not end the wait, and
 * a queue or a stream of them never holds the reader past its time. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dist_bell.h"
#include "tap.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct heard {
    int n;
    uint32_t from;
    struct sockaddr_in addr;
};

static void rung(void *arg, uint32_t from, const struct sockaddr_in *addr)
{
    struct heard *h = arg;
    h->n++;
    h->from = from;
    h->addr = *addr;
}

/* A socket of another user's program: not a bell, no token. */
static int stranger(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (fd >= 0)
        bind(fd, (struct sockaddr *)&a, sizeof(a));
    return fd;
}

static size_t queued(int fd)
{
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 ? (size_t)n : 0;
}

struct flood {
    const struct sockaddr_in *to;
    atomic_bool stop;
    long sent;
};

static void *flooder(void *arg)
{
    struct flood *f = arg;
    int fd = stranger();
    uint8_t junk[BELL_TOKEN + 4] = { 0 };
    while (!atomic_load(&f->stop))
        if (sendto(fd, junk, sizeof(junk), 0, (const struct sockaddr *)f->to, sizeof(*f->to)) > 0)
            f->sent++;
    close(fd);
    return NULL;
}

int main(void)
{
    char err[256];
    struct dist_bell reader, ringer;
    tap_is_int(bell_open(&reader, err, sizeof(err)), 0, "the reader's bell opens");
    tap_is_int(bell_open(&ringer, err, sizeof(err)), 0, "a worker's bell opens");
    if (reader.fd < 0 || ringer.fd < 0) {
        printf("# no UDP socket here (%s): the rest needs one\n", err);
        return tap_done();
    }
    for (int i = 0; i < BELL_TOKEN; i++)
        reader.token[i] = ringer.token[i] = (uint8_t)(0xa0 + i);
    struct sockaddr_in to;
    tap_is_int(bell_resolve("localhost", reader.port, &to, err, sizeof(err)), 0,
               "the reader's bell is found by host name and port");

    /* A ring of the run: the worker and where it rang from. */
    struct heard h = { 0 };
    bell_ring(&ringer, &to, 3);
    double t0 = now();
    bell_wait(&reader, 2.0, rung, &h);
    tap_ok(h.n == 1 && h.from == 3 && ntohs(h.addr.sin_port) == ringer.port && now() - t0 < 1.0,
           "a ring with the run's token wakes the reader at once, naming worker 3 and its port "
           "(%d rings, from %u, port %u)", h.n, h.from, ntohs(h.addr.sin_port));

    /* Another user's datagrams: a guessed token, the ring's own bytes but
     * one short or long, nothing. */
    int s = stranger();
    uint8_t forged[BELL_TOKEN + 5];
    memset(forged, 0, sizeof(forged));
    memcpy(forged, reader.token, BELL_TOKEN - 1);   /* all but the last byte */
    sendto(s, forged, BELL_TOKEN + 4, 0, (struct sockaddr *)&to, sizeof(to));
    memcpy(forged, reader.token, BELL_TOKEN);
    sendto(s, forged, BELL_TOKEN + 3, 0, (struct sockaddr *)&to, sizeof(to));
    sendto(s, forged, BELL_TOKEN + 5, 0, (struct sockaddr *)&to, sizeof(to));
    sendto(s, forged, 0, 0, (struct sockaddr *)&to, sizeof(to));
    h.n = 0;
    t0 = now();
    int local = bell_wait(&reader, 0.3, rung, &h);
    double took = now() - t0;
    tap_ok(h.n == 0 && !local, "forged datagrams ring nothing (%d rings)", h.n);
    tap_ok(took > 0.25 && took < 2.0,
           "and do not end the reader's wait (%.3f s of 0.3): no busy loop for a stream of them",
           took);

    /* A queue of them: one look reads a bounded number and returns. */
    uint8_t junk[BELL_TOKEN + 4] = { 0 };
    int sent = 0;
    for (int i = 0; i < 2000; i++)
        if (sendto(s, junk, sizeof(junk), MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to)) > 0)
            sent++;
    size_t before = queued(reader.fd);
    bell_wait(&reader, 0, rung, &h);
    size_t after = queued(reader.fd);
    tap_ok(before > 0 && after > 0,
           "a look at a socket full of junk reads a bounded part of it, not until it is empty "
           "(%d sent; queued: next datagram %zu bytes before, %zu after)", sent, before, after);
    while (queued(reader.fd) > 0)
        bell_wait(&reader, 0, rung, &h);
    tap_is_int(h.n, 0, "none of it rang");

    /* A stream of them while the reader waits: it still wakes on its time,
     * and a ring of the run among them is not needed for that. */
    struct flood f = { .to = &to };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, flooder, &f);
    usleep(50000);
    double longest = 0;
    for (int i = 0; i < 5; i++) {
        t0 = now();
        bell_wait(&reader, 0.05, rung, &h);
        if (now() - t0 > longest)
            longest = now() - t0;
    }
    atomic_store(&f.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    tap_ok(longest < 1.0, "under a stream of %ld datagrams from two senders the reader's 50 ms "
           "waits end on time (longest %.3f s)", f.sent, longest);
    tap_is_int(h.n, 0, "and nothing of the stream rang");

    /* The local wake-up still works after all this. */
    while (queued(reader.fd) > 0)
        bell_wait(&reader, 0, rung, &h);
    bell_wake_local(&reader);
    t0 = now();
    tap_is_int(bell_wait(&reader, 2.0, rung, &h), 1, "a local wake-up ends the wait");
    tap_ok(now() - t0 < 1.0, "at once");

    close(s);
    bell_close(&reader);
    bell_close(&ringer);
    return tap_done();
}
