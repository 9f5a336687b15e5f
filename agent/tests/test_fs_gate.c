/* What connections that never authenticate cost a server (fsd/gate.c):
 * hundreds of idle ones take no thread and little memory, are dropped
 * after the handshake's deadline, and cannot keep the job's own clients
 * out, even from many addresses at once; authenticated clients are
 * bounded by --max-clients. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fstest.h"
#include "instance.h"
#include "net.h"
#include "tap.h"

/* A field of /proc/PID/status ("Threads", "VmRSS" in kB), or -1. */
static long proc_status(int pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static int open_fds(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n - 2;
}

/* A TCP connection to the server from source address src (NULL: any),
 * left idle; -errno on failure. */
static int idle_tcp(const struct instance *in, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    if (fd < 0)
        return -errno;
    if (src) {
        inet_pton(AF_INET, src, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
            close(fd);
            return -errno;
        }
    }
    a.sin_port = htons((uint16_t)in->servers[0].port);
    inet_pton(AF_INET, in->servers[0].host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

static int idle_local(const struct instance *in)
{
    char name[INSTANCE_LOCAL_NAME_MAX];
    instance_local_name(in->servers[0].host, in->servers[0].port, name);
    return net_connect_abstract(name, geteuid(), 2000);
}

/* How many of fds the server has hung up on (end of stream after its
 * greeting, or a reset). */
static int hung_up(const int *fds, int n)
{
    int closed = 0;
    for (int i = 0; i < n; i++) {
        char buf[128];
        ssize_t got;
        while ((got = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
            ;
        closed += got == 0 || (got < 0 && errno != EAGAIN);
    }
    return closed;
}

/* A fresh client of the instance (transport: "tcp" or NULL for the local
 * socket) creates a file and reads its status; returns how long it took
 * in ms, or -1 if it failed. */
static double fresh_client(const char *instance, const char *transport, const char *name)
{
    if (transport)
        setenv(ADAFS_ENV_TRANSPORT, transport, 1);
    else
        unsetenv(ADAFS_ENV_TRANSPORT);
    adafs *fs;
    char err[256];
    double t0 = fstest_now();
    int ok = adafs_connect(&fs, instance, err, sizeof(err)) == 0;
    struct stat st;
    ok = ok && adafs_create_write(fs, name, 0600, "x", 1) == 0 && adafs_stat(fs, name, &st) == 0;
    if (fs)
        adafs_disconnect(fs);
    unsetenv(ADAFS_ENV_TRANSPORT);
    return ok ? (fstest_now() - t0) * 1000 : -1;
}

/* One server, its instance read into in; returns its pid. */
static int start_one(struct fstest *t, struct instance *in)
{
    char err[256];
    fstest_start(t, 1, NULL);
    instance_read(t->instance, in, err, sizeof(err));
    return fstest_server_pid(t, 0);
}

static void idle_flood(void)
{
    struct fstest t;
    struct instance in;
    int pid = start_one(&t, &in);
    struct stat st;
    adafs_create_write(t.fs, "/warm", 0600, "w", 1);
    long threads0 = proc_status(pid, "Threads"), rss0 = proc_status(pid, "VmRSS");
    int fds0 = open_fds(pid);

    enum { TCP = 600, LOCAL = 100 };
    int fds[TCP + LOCAL], opened = 0;
    for (int i = 0; i < TCP; i++)
        opened += (fds[i] = idle_tcp(&in, NULL)) >= 0;
    for (int i = TCP; i < TCP + LOCAL; i++)
        opened += (fds[i] = idle_local(&in)) >= 0;
    tap_is_int(opened, TCP + LOCAL, "700 idle connections (600 TCP, 100 local) are accepted");
    usleep(300 * 1000);
    long threads = proc_status(pid, "Threads"), rss = proc_status(pid, "VmRSS");
    tap_ok(threads <= threads0 + 1, "they cost no thread (%ld threads, %ld before)", threads,
           threads0);
    tap_ok(rss - rss0 < 8192, "and little memory (RSS %ld kB, %ld before)", rss, rss0);
    int server_fds = open_fds(pid);
    tap_ok(server_fds - fds0 <= 256 + LOCAL + 4,
           "the server holds at most 256 of one address's (%d descriptors, %d before)",
           server_fds, fds0);
    double ms = fresh_client(t.instance, "tcp", "/tcp-client");
    tap_ok(ms >= 0 && ms < 1000, "a new client over TCP is served meanwhile (%.0f ms)", ms);
    ms = fresh_client(t.instance, NULL, "/local-client");
    tap_ok(ms >= 0 && ms < 1000, "and one over the local socket (%.0f ms)", ms);
    tap_ok(adafs_stat(t.fs, "/warm", &st) == 0, "and the connected client still is");

    /* The handshake's deadline is 5 s: then every idle one is gone. */
    int closed = 0;
    for (int i = 0; i < 80 && closed < TCP + LOCAL; i++) {
        usleep(100 * 1000);
        closed = hung_up(fds, TCP + LOCAL);
    }
    tap_is_int(closed, TCP + LOCAL, "within 8 s the server has hung up on all 700");
    for (int i = 0; i < TCP + LOCAL; i++)
        close(fds[i]);
    usleep(100 * 1000);
    server_fds = open_fds(pid);
    tap_ok(server_fds <= fds0 + 2, "and holds none of them (%d descriptors)", server_fds);
    tap_ok(proc_status(pid, "Threads") <= threads0 + 1, "threads as before");
    tap_ok(fstest_sh("n=$(grep -c 'dropped the connection of .* before it authenticated' "
                     "%s/server.0.log); [ $n -ge 1 ] && [ $n -le 10 ]", t.base) == 0,
           "the log says why they were dropped, in a few lines for 700 connections");
    instance_free(&in);
    fstest_stop(&t);
}

/* Idle connections from many addresses fill the table: the oldest go, and
 * a client's handshake, which takes a round trip, is never the oldest. */
static void many_addresses(void)
{
    struct fstest t;
    struct instance in;
    int pid = start_one(&t, &in);
    enum { ADDRS = 8, EACH = 200 };
    int *fds = malloc(sizeof(int) * ADDRS * EACH), opened = 0;
    int fds0 = open_fds(pid);
    double worst = 0;
    for (int a = 0; a < ADDRS; a++) {
        char src[32];
        snprintf(src, sizeof(src), "127.0.0.%d", a + 2);
        for (int i = 0; i < EACH; i++)
            opened += (fds[a * EACH + i] = idle_tcp(&in, src)) >= 0;
        char name[32];
        snprintf(name, sizeof(name), "/between-%d", a);
        double ms = fresh_client(t.instance, "tcp", name);
        if (ms < 0 || ms > worst)
            worst = ms < 0 ? 1e9 : ms;
    }
    tap_is_int(opened, ADDRS * EACH, "1600 idle connections from 8 addresses");
    tap_ok(worst < 1000, "a client between each batch of 200 is served (slowest %.0f ms)", worst);
    usleep(200 * 1000);
    int server_fds = open_fds(pid);
    tap_ok(server_fds - fds0 <= 1024 + 4,
           "the server holds at most 1024 handshakes (%d descriptors, %d before)", server_fds,
           fds0);
    tap_ok(hung_up(fds, EACH) == EACH, "the oldest were evicted");
    tap_ok(fstest_sh("grep -q 'evicted by a newer connection' %s/server.0.log", t.base) == 0,
           "and the log says so");
    for (int i = 0; i < ADDRS * EACH; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    instance_free(&in);
    fstest_stop(&t);
}

static void max_clients(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--max-clients 2");
    adafs *a, *b;
    char err[256], why[512];
    struct stat st;
    adafs_connect(&a, t.instance, err, sizeof(err));
    adafs_connect(&b, t.instance, err, sizeof(err));
    tap_ok(adafs_stat(t.fs, "/x", &st) == -ENOENT && adafs_stat(a, "/x", &st) == -ENOENT,
           "two clients are served with --max-clients 2");
    tap_is_int(adafs_stat(b, "/x", &st), -EIO, "a third gets EIO");
    adafs_last_error(b, why, sizeof(why));
    tap_ok(strstr(why, "refused the connection") && strstr(why, strerror(EUSERS)),
           "saying the server has too many (%s)", why);
    tap_ok(fstest_sh("grep -q 'maximum of 2 clients' %s/server.0.log", t.base) == 0,
           "the server log says so");
    adafs_disconnect(a);
    int rc = -1;
    for (int i = 0; i < 50 && rc != -ENOENT; i++) {
        usleep(20 * 1000);
        rc = adafs_stat(b, "/x", &st);
    }
    tap_is_int(rc, -ENOENT, "once one leaves, the third is served");
    adafs_disconnect(b);
    fstest_stop(&t);
}

int main(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 4096) {
        tap_skip(1, "RLIMIT_NOFILE %llu: too few descriptors to flood", (unsigned long long)rl.rlim_cur);
        return tap_done();
    }
    idle_flood();
    many_addresses();
    max_clients();
    return tap_done();
}
