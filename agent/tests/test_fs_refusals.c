/* A server's log under floods: anyone who reaches a server's port can send
 * wrong proofs of the secret or garbage, and a client can send garbage
 * requests; the log is in root's directory and not capped, so each kind of
 * line is written at most a few times per window, and what was left out is
 * counted in a later line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstest.h"
#include "handshake.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc_io.h"
#include "tap.h"

/* A connection that has read the server's HELLO, or -1. */
static int greeted(const struct instance *in)
{
    char err[256];
    int fd = net_connect(in->servers[0].host, in->servers[0].port, 2000, err, sizeof(err));
    uint8_t hello[HANDSHAKE_HELLO_SIZE];
    if (fd >= 0 && net_read_full(fd, hello, sizeof(hello), net_now_ms() + 2000) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Sends 64 bytes that are no proof; returns the status of the answer. */
static int wrong_proof(const struct instance *in, unsigned seed)
{
    int fd = greeted(in);
    if (fd < 0)
        return 1;
    uint8_t proof[HANDSHAKE_PROOF_SIZE], answer[HANDSHAKE_ANSWER_SIZE];
    fstest_fill(proof, sizeof(proof), seed);
    int status = 1;
    if (net_write_full(fd, proof, sizeof(proof), net_now_ms() + 2000) == 0 &&
        net_read_full(fd, answer, sizeof(answer), net_now_ms() + 2000) == 0)
        status = (int32_t)(answer[0] | answer[1] << 8 | answer[2] << 16 | (uint32_t)answer[3] << 24);
    close(fd);
    return status;
}

static int log_lines(const struct fstest *t, const char *text)
{
    char path[300], line[4096];
    snprintf(path, sizeof(path), "%s/server.0.log", t->base);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return f ? n : -1;
}

static long log_size(const struct fstest *t)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/server.0.log", t->base);
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int main(void)
{
    struct fstest t;
    fstest_start(&t, 1, NULL);
    struct instance in;
    char err[256];
    tap_is_int(instance_read(t.instance, &in, err, sizeof(err)), 0, "the instance file reads");
    long before = log_size(&t);

    int refused = 0;
    for (int i = 0; i < 300; i++)
        refused += wrong_proof(&in, (unsigned)i) == -EACCES;
    tap_is_int(refused, 300, "300 wrong proofs of the secret are refused (EACCES)");
    for (int i = 0; i < 300; i++) {
        int fd = greeted(&in);
        if (fd >= 0 && net_write_full(fd, "GET / HTTP/1.0\r\n", 16, net_now_ms() + 1000) == 0)
            close(fd);
    }
    int bad = 0;
    for (int i = 0; i < 300; i++) {
        int fd = fstest_connect(&in, 0, 0);
        uint8_t junk[RPC_HEADER_SIZE];
        memset(junk, 'J', sizeof(junk));
        char c;
        bad += fd >= 0 && net_write_full(fd, junk, sizeof(junk), net_now_ms() + 1000) == 0 &&
               net_read_full(fd, &c, 1, net_now_ms() + 2000) == -ECONNRESET;
        if (fd >= 0)
            close(fd);
    }
    tap_is_int(bad, 300, "300 authenticated clients sending a garbage header are dropped");
    usleep(200 * 1000);
    int n_refused = log_lines(&t, "wrong proof of the instance's secret");
    int n_dropped = log_lines(&t, "before it authenticated: it hung up");
    int n_bad = log_lines(&t, "bad message header");
    tap_ok(n_refused >= 1 && n_refused <= 5, "wrong proofs: logged, at most 5 lines (%d)", n_refused);
    tap_ok(n_dropped >= 1 && n_dropped <= 5, "hang-ups before the proof: at most 5 lines (%d)",
           n_dropped);
    tap_ok(n_bad >= 1 && n_bad <= 10, "garbage headers: at most 10 lines (%d)", n_bad);
    long grown = log_size(&t) - before;
    tap_ok(grown > 0 && grown < 8192, "900 bad connections grew the log by %ld bytes", grown);
    struct stat st;
    tap_ok(adafs_stat(t.fs, "/", &st) == 0, "the server still serves its client");

    /* What was left out is counted once the window is over, even when
     * nothing more comes. */
    int summarised = 0;
    for (int i = 0; i < 130 && !summarised; i++) {
        usleep(100 * 1000);
        summarised = fstest_sh("grep -q 'similar lines left out' %s/server.0.log", t.base) == 0;
    }
    tap_ok(summarised, "the lines left out are counted in a later line");
    instance_free(&in);
    fstest_stop(&t);
    return tap_done();
}
