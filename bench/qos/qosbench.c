/* qosbench: the cost of adafs' I/O quality of service (issue 24).
 *
 *   qosbench check [SECONDS]        the data-plane check alone, one thread:
 *                                   path classification + charge without a
 *                                   binding limit, calls per second
 *   qosbench stat PATH COUNT        COUNT stat() calls on PATH: ops/s
 *   qosbench write FILE MIB         MIB sequential 1 MiB write() calls: MiB/s
 *   qosbench read FILE MIB          the same with read()
 *
 * stat/read/write run under the interposer (bench/qos/overhead.sh takes
 * turns with QoS on and off); each prints one number on stdout, per
 * second of wall time or, with QOS_BENCH_CLOCK=cpu, per second of the
 * process's CPU time (on a loaded machine the time spent waiting for a
 * core swamps a difference of a few percent). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "qos_client.h"
#include "qos_paths.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What the interposer does for a stat on a path: classify, then charge
 * when it is on the PFS. volatile keeps the loop from being folded. */
static double check_rate(const struct qos_paths *p, const char *path, double seconds)
{
    volatile unsigned long hits = 0;
    unsigned long n = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 100000; i++) {
            const char *volatile s = path;
            if (qos_paths_match(p, s)) {
                qos_charge(QOS_STAT, 1);
                hits++;
            }
        }
        n += 100000;
    } while ((t = now_s()) - t0 < seconds);
    return (double)n / (t - t0);
}

static int check(double seconds)
{
    struct qos_paths p;
    char err[256];
    if (qos_paths_parse("/pfs,/home", &p, err, sizeof(err)) < 0)
        return fprintf(stderr, "%s\n", err), 1;
    struct qos_client_conf conf = { 0 };   /* no agent, no default: no binding limit */
    qos_client_init(&conf);
    const char *on = "/pfs/project/run-0042/output/part-17.dat";
    const char *off = "/scratch/user/run-0042/output/part-17.dat";
    printf("check on a PFS path (classify + charge): %.2f M calls/s\n", check_rate(&p, on, seconds) / 1e6);
    printf("check on another path (classify):        %.2f M calls/s\n", check_rate(&p, off, seconds) / 1e6);
    volatile unsigned long n = 0;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 100000; i++)
            qos_charge(QOS_READ, 4096);
        n += 100000;
    } while ((t = now_s()) - t0 < seconds);
    printf("charge of a read (no classification):     %.2f M calls/s\n", (double)n / (t - t0) / 1e6);
    return 0;
}

/* The loops' clock: wall, or the process's CPU time (QOS_BENCH_CLOCK=cpu). */
static double loop_s(void)
{
    const char *c = getenv("QOS_BENCH_CLOCK");
    if (!c || strcmp(c, "cpu") != 0)
        return now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int stat_loop(const char *path, long count)
{
    struct stat st;
    double t0 = loop_s();
    for (long i = 0; i < count; i++)
        if (stat(path, &st) < 0)
            return perror(path), 1;
    printf("%.0f\n", (double)count / (loop_s() - t0));
    return 0;
}

static int rw_loop(const char *file, long mib, int writing)
{
    static char buf[1 << 20];
    memset(buf, 'q', sizeof(buf));
    int fd = open(file, writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY, 0600);
    if (fd < 0)
        return perror(file), 1;
    double t0 = loop_s();
    for (long i = 0; i < mib; i++) {
        ssize_t n = writing ? write(fd, buf, sizeof(buf)) : read(fd, buf, sizeof(buf));
        if (n != (ssize_t)sizeof(buf)) {
            fprintf(stderr, "%s: short %s at MiB %ld: %s\n", file, writing ? "write" : "read", i,
                    n < 0 ? strerror(errno) : "end of file");
            return 1;
        }
    }
    double dt = loop_s() - t0;
    close(fd);
    printf("%.1f\n", (double)mib / dt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return check(argc > 2 ? atof(argv[2]) : 2.0);
    if (argc == 4 && strcmp(argv[1], "stat") == 0)
        return stat_loop(argv[2], atol(argv[3]));
    if (argc == 4 && (strcmp(argv[1], "write") == 0 || strcmp(argv[1], "read") == 0))
        return rw_loop(argv[2], atol(argv[3]), argv[1][0] == 'w');
    fprintf(stderr, "usage: qosbench check [SECONDS] | stat PATH COUNT | write FILE MIB | read FILE MIB\n");
    return 2;
}
