/* A server's log under a flood of requests with a wrong secret: anyone who
 * reaches a server's port can send them, and the log is root's and not
 * capped, so refusals are logged at most once a second, with a count. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fstest.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc_io.h"
#include "tap.h"

/* One connection, one STAT with an all-zero secret; returns the status. */
static int refused_call(const char *host, int port)
{
    char err[256];
    int fd = net_connect(host, port, 1000, err, sizeof(err));
    if (fd < 0)
        return fd;
    uint8_t zero[RPC_SECRET_SIZE] = { 0 };
    int status = fstest_raw_call(fd, zero, FS_STAT, NULL, NULL, NULL);
    close(fd);
    return status;
}

/* How many lines of the server's log contain text. */
static int log_lines(const struct fstest *t, const char *text)
{
    for (int n = 0; n < 100; n++)
        if (fstest_sh("test \"$(grep -c -- '%s' %s/server.0.log)\" = %d", text, t->base, n) == 0)
            return n;
    return -1;
}

int main(void)
{
    struct fstest t;
    fstest_start(&t, 1, NULL);
    struct instance in;
    char err[256];
    tap_is_int(instance_read(t.instance, &in, err, sizeof(err)), 0, "the instance file reads");
    const char *host = in.servers[0].host;
    int port = in.servers[0].port;

    int refused = 0;
    for (int i = 0; i < 20; i++)
        refused += refused_call(host, port) == -EACCES;
    tap_is_int(refused, 20, "20 requests with a wrong secret are refused");
    tap_is_int(log_lines(&t, "wrong or missing secret"), 1, "and logged once");
    usleep(1100 * 1000);
    tap_is_int(refused_call(host, port), -EACCES, "one more, a second later, is refused");
    tap_is_int(log_lines(&t, "wrong or missing secret"), 2, "and logged");
    tap_is_int(log_lines(&t, "wrong or missing secret (and 19 more refusals since the last one logged)"),
               1, "with the count of those not logged");
    instance_free(&in);
    fstest_stop(&t);
    return tap_done();
}
