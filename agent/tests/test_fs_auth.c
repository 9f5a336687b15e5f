/* The handshake against impostors, with a real server and libadafs: a
 * process listening where a server should be (a user's, once the server
 * is gone) receives nothing it can use, the client gets a clear error and
 * sends it no request, and what a whole session puts on the wire never
 * holds the secret. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fstest.h"
#include "handshake.h"
#include "instance.h"
#include "net.h"
#include "tap.h"

/* What an impostor does with the connection it accepts. */
enum impostor {
    SILENT,          /* accepts and says nothing */
    FOREIGN,         /* greets with something that is not adafs' */
    NO_SECRET,       /* plays the handshake without the secret: any MAC will do */
    REFLECT,         /* answers with the client's own MAC */
    RELAY,           /* passes bytes to and from a real server, recording them */
};

struct fake {
    enum impostor mode;
    int lfd, port;
    const char *relay_host;          /* RELAY: the real server */
    int relay_port;
    pthread_t thread;
    uint8_t got[1 << 20];            /* what clients sent it */
    size_t got_len;
    uint8_t sent_back[1 << 20];      /* RELAY: what the real server answered */
    size_t back_len;
    int connections;
};

static void record(uint8_t *buf, size_t *len, const void *p, size_t n)
{
    if (*len + n > (1 << 20))
        n = (1 << 20) - *len;
    memcpy(buf + *len, p, n);
    *len += n;
}

/* Copies between a and b until either closes, recording both ways. */
static void relay(struct fake *f, int a, int b)
{
    struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
    char buf[65536];
    for (;;) {
        if (poll(p, 2, 5000) <= 0)
            return;
        for (int i = 0; i < 2; i++) {
            if (!p[i].revents)
                continue;
            ssize_t n = recv(p[i].fd, buf, sizeof(buf), 0);
            if (n <= 0)
                return;
            if (i == 0)
                record(f->got, &f->got_len, buf, (size_t)n);
            else
                record(f->sent_back, &f->back_len, buf, (size_t)n);
            if (net_write_full(p[1 - i].fd, buf, (size_t)n, net_now_ms() + 5000) < 0)
                return;
        }
    }
}

/* Records what the client sends until it hangs up or 1 s passes. */
static void drain(struct fake *f, int c)
{
    char buf[4096];
    struct pollfd p = { .fd = c, .events = POLLIN };
    int64_t end = net_now_ms() + 1000;
    while (net_now_ms() < end && poll(&p, 1, 100) >= 0) {
        if (!p.revents)
            continue;
        ssize_t n = recv(c, buf, sizeof(buf), 0);
        if (n <= 0)
            return;
        record(f->got, &f->got_len, buf, (size_t)n);
    }
}

static void serve(struct fake *f, int c)
{
    uint8_t hello[HANDSHAKE_HELLO_SIZE], proof[HANDSHAKE_PROOF_SIZE], answer[HANDSHAKE_ANSWER_SIZE];
    struct handshake hs;
    switch (f->mode) {
    case SILENT:
        drain(f, c);
        usleep(2500 * 1000);   /* past the client's timeout */
        return;
    case FOREIGN:
        memset(hello, 0, sizeof(hello));
        memcpy(hello, "HTTP/1.1 200 OK\r\n\r\n", 19);
        net_write_full(c, hello, sizeof(hello), net_now_ms() + 1000);
        drain(f, c);
        return;
    case NO_SECRET:
    case REFLECT:
        handshake_server_hello(&hs, 0, 0, hello);
        net_write_full(c, hello, sizeof(hello), net_now_ms() + 1000);
        if (net_read_full(c, proof, sizeof(proof), net_now_ms() + 2000) < 0)
            return;
        record(f->got, &f->got_len, proof, sizeof(proof));
        memset(answer, 0, sizeof(answer));   /* status 0: "you are in" */
        if (f->mode == REFLECT)
            memcpy(answer + 4, proof + HANDSHAKE_NONCE_SIZE, HANDSHAKE_MAC_SIZE);
        else
            fstest_fill(answer + 4, HANDSHAKE_MAC_SIZE, 7);
        net_write_full(c, answer, sizeof(answer), net_now_ms() + 1000);
        drain(f, c);
        return;
    case RELAY: {
        char err[256];
        int s = net_connect(f->relay_host, f->relay_port, 2000, err, sizeof(err));
        if (s >= 0) {
            relay(f, c, s);
            close(s);
        }
        return;
    }
    }
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    for (;;) {
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            return NULL;
        f->connections++;
        serve(f, c);
        close(c);
    }
}

static struct fake *fake_start(enum impostor mode, const char *relay_host, int relay_port)
{
    struct fake *f = calloc(1, sizeof(*f));
    char err[256];
    f->mode = mode;
    f->relay_host = relay_host;
    f->relay_port = relay_port;
    f->lfd = net_listen("127.0.0.1", 0, 16, &f->port, err, sizeof(err));
    pthread_create(&f->thread, NULL, fake_main, f);
    return f;
}

static void fake_stop(struct fake *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->thread, NULL);
    close(f->lfd);
    free(f);
}

/* An instance file like the real one but with the servers at the given
 * ports of 127.0.0.1 (0: the real server of that index). */
static void write_instance(const struct fstest *t, const char *path, int timeout_ms,
                           int nports, const int *ports)
{
    struct instance in;
    char err[256];
    instance_read(t->instance, &in, err, sizeof(err));
    struct instance_server *servers = calloc((size_t)nports, sizeof(*servers));
    for (int i = 0; i < nports; i++) {
        servers[i] = in.servers[i < in.nservers ? i : 0];
        if (ports[i])
            servers[i].port = ports[i];
    }
    free(in.servers);
    in.servers = servers;
    in.nservers = nports;
    in.timeout_ms = timeout_ms;
    if (instance_write(path, &in, err, sizeof(err)) < 0)
        fprintf(stderr, "%s\n", err);
    instance_free(&in);
}

/* Does buf hold the secret, raw or as the hex of the instance file? */
static int holds_secret(const uint8_t *buf, size_t len, const uint8_t secret[INSTANCE_SECRET_SIZE])
{
    char hex[2 * INSTANCE_SECRET_SIZE + 1];
    secret_to_hex(secret, hex);
    return memmem(buf, len, secret, INSTANCE_SECRET_SIZE) != NULL ||
           memmem(buf, len, secret, 8) != NULL || memmem(buf, len, hex, 16) != NULL;
}

/* A client of the instance at path stats a path: returns the result, with
 * adafs_last_error in why. */
static int stat_through(const char *path, char *why, size_t whylen, double *took)
{
    adafs *fs;
    char err[256];
    if (adafs_connect(&fs, path, err, sizeof(err)) < 0)
        return 1;
    struct stat st;
    double t0 = fstest_now();
    int rc = adafs_stat(fs, "/anything", &st);
    *took = fstest_now() - t0;
    adafs_last_error(fs, why, whylen);
    adafs_disconnect(fs);
    return rc;
}

static void impostors(struct fstest *t, const struct instance *real)
{
    char path[300], why[512];
    double took;
    snprintf(path, sizeof(path), "%s/impostor.instance", t->base);

    struct fake *f = fake_start(NO_SECRET, NULL, 0);
    write_instance(t, path, 2000, 1, &f->port);
    tap_is_int(stat_through(path, why, sizeof(why), &took), -EPERM,
               "a listener playing the handshake without the secret: EPERM");
    tap_ok(strstr(why, "server 0 (127.0.0.1:") && strstr(why, "did not prove it knows"),
           "the error names the server and why (%s)", why);
    tap_is_int(f->got_len, HANDSHAKE_PROOF_SIZE,
               "it received the client's proof and nothing else: no request");
    tap_ok(!holds_secret(f->got, f->got_len, real->secret), "and no byte of the secret");
    uint8_t captured[HANDSHAKE_PROOF_SIZE];
    memcpy(captured, f->got, sizeof(captured));
    fake_stop(f);

    /* The proof it captured is worth nothing at the real server. */
    char err[256];
    int s = net_connect(real->servers[0].host, real->servers[0].port, 2000, err, sizeof(err));
    uint8_t hello[HANDSHAKE_HELLO_SIZE], answer[HANDSHAKE_ANSWER_SIZE];
    net_read_full(s, hello, sizeof(hello), net_now_ms() + 2000);
    net_write_full(s, captured, sizeof(captured), net_now_ms() + 2000);
    tap_ok(net_read_full(s, answer, sizeof(answer), net_now_ms() + 2000) == 0 &&
           answer[0] == (uint8_t)-EACCES, "a captured proof replayed to the real server: EACCES");
    close(s);

    f = fake_start(REFLECT, NULL, 0);
    write_instance(t, path, 2000, 1, &f->port);
    tap_is_int(stat_through(path, why, sizeof(why), &took), -EPERM,
               "a listener reflecting the client's own MAC: EPERM");
    tap_is_int(f->got_len, HANDSHAKE_PROOF_SIZE, "no request sent to it");
    fake_stop(f);

    f = fake_start(FOREIGN, NULL, 0);
    write_instance(t, path, 2000, 1, &f->port);
    tap_is_int(stat_through(path, why, sizeof(why), &took), -EPERM,
               "a listener greeting with something else: EPERM");
    tap_ok(strstr(why, "does not speak the adafs handshake") != NULL, "saying so (%s)", why);
    tap_is_int(f->got_len, 0, "it received nothing at all");
    fake_stop(f);

    f = fake_start(SILENT, NULL, 0);
    write_instance(t, path, 1000, 1, &f->port);
    tap_is_int(stat_through(path, why, sizeof(why), &took), -EIO,
               "a listener that says nothing: EIO");
    tap_ok(took < 2.5, "after the instance's timeout, not a hang (%.1f s)", took);
    tap_ok(strstr(why, "reading its greeting") != NULL, "the error says where (%s)", why);
    tap_is_int(f->got_len, 0, "it received nothing");
    fake_stop(f);

    /* A relay at server 1's address to the real server 0: the proof is for
     * server 1, server 0 does not take it. */
    f = fake_start(RELAY, real->servers[0].host, real->servers[0].port);
    int ports[2] = { 0, f->port };
    write_instance(t, path, 2000, 2, ports);
    adafs *fs;
    adafs_connect(&fs, path, err, sizeof(err));
    struct statvfs sv;
    tap_is_int(adafs_statvfs(fs, &sv), -EACCES,
               "a proof relayed from server 1's address to server 0: EACCES");
    adafs_last_error(fs, why, sizeof(why));
    tap_ok(strstr(why, "server 1 (") != NULL, "naming server 1 (%s)", why);
    adafs_disconnect(fs);
    fake_stop(f);
}

/* A whole session over TCP through a recording relay: the secret is in
 * neither direction. */
static void whole_session(struct fstest *t, const struct instance *real)
{
    char path[300], err[256];
    snprintf(path, sizeof(path), "%s/relayed.instance", t->base);
    struct fake *f = fake_start(RELAY, real->servers[0].host, real->servers[0].port);
    write_instance(t, path, 5000, 1, &f->port);
    adafs *fs;
    adafs_connect(&fs, path, err, sizeof(err));
    char data[100000];
    fstest_fill(data, sizeof(data), 3);
    int ok = adafs_mkdir(fs, "/d", 0700) == 0 &&
             adafs_create_write(fs, "/d/small", 0600, "hello", 5) == 0 &&
             adafs_create_write(fs, "/d/big", 0600, data, sizeof(data)) == 0 &&
             fstest_holds(fs, "/d/big", data, sizeof(data)) && adafs_unlink(fs, "/d/small") == 0;
    tap_ok(ok, "a session through the relay: mkdir, creates, a read, an unlink");
    adafs_disconnect(fs);
    usleep(100 * 1000);
    tap_ok(f->got_len > sizeof(data) && f->back_len > sizeof(data),
           "the relay saw it all (%zu bytes sent, %zu received)", f->got_len, f->back_len);
    tap_ok(!holds_secret(f->got, f->got_len, real->secret),
           "no byte sequence of the secret in what the client sent");
    tap_ok(!holds_secret(f->sent_back, f->back_len, real->secret),
           "nor in what the server answered");
    fake_stop(f);
}

int main(void)
{
    setenv(ADAFS_ENV_TRANSPORT, "tcp", 1);   /* the impostors are on TCP */
    struct fstest t;
    fstest_start(&t, 1, NULL);
    struct instance real;
    char err[256];
    instance_read(t.instance, &real, err, sizeof(err));
    impostors(&t, &real);
    whole_session(&t, &real);
    struct stat st;
    tap_is_int(adafs_stat(t.fs, "/d/big", &st), 0, "the real client is served throughout");
    instance_free(&real);
    fstest_stop(&t);
    return tap_done();
}
