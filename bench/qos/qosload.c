/* qosload: the load programs of the QoS acceptance runs (issue 24), each
 * process logging what it did in each second:
 *
 *   qosload stat DIR SECONDS LOG [OPTION...]    stat() DIR/f0..f63 in a loop
 *   qosload storm DIR SECONDS LOG [OPTION...]   open, fstat, close them in a loop
 *   qosload write FILE SECONDS LOG [OPTION...]  1 MiB write()s, rewinding every 64 MiB
 *   qosload idle SECONDS                        sleep (a job that stops its I/O)
 * options:
 *   --rate R       at most R operations (bytes) per second: the process's demand
 *   --ops N        stop after N operations (bytes) instead of after SECONDS
 *   --idle AT:FOR  do nothing from second AT for FOR seconds
 *
 * LOG gets one line per second: "UNIXTIME COUNT ONCPU_NS RUNQ_NS" (operations,
 * or bytes for write; then the nanoseconds the process ran and waited on the
 * run queue in that second, from /proc/self/schedstat, 0 0 where the kernel
 * does not keep them), and a last "done UNIXTIME" line; "%p" in LOG is the
 * process id, "%r" $SLURM_PROCID. Missing files of DIR are created first.
 *
 * The two times tell the machine's part from the controller's: a process
 * held back by QoS, or pacing itself, sleeps; running and waiting for a CPU
 * is the time it wanted to run, so COUNT / (ONCPU + RUNQ) is the rate it
 * would have had in that second with nothing holding it back, on the share of
 * the CPUs the machine gave it (its unhindered rate: bench/qos/analyze.py). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's time on a CPU and waiting on the run queue, in ns. */
static void sched_times(unsigned long long *oncpu, unsigned long long *runq)
{
    *oncpu = *runq = 0;
    FILE *f = fopen("/proc/self/schedstat", "r");
    if (!f)
        return;
    if (fscanf(f, "%llu %llu", oncpu, runq) != 2)
        *oncpu = *runq = 0;
    fclose(f);
}

static FILE *open_log(const char *pattern)
{
    char path[4096];
    size_t o = 0;
    for (const char *p = pattern; *p && o < sizeof(path) - 32; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            const char *r = getenv("SLURM_PROCID");
            o += (size_t)snprintf(path + o, sizeof(path) - o, "%s", r ? r : "0");
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = '\0';
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "idle") == 0) {
        sleep((unsigned)atoi(argv[2]));
        return 0;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: qosload stat|storm DIR SECONDS LOG [--rate R] [--ops N] [--idle AT:FOR]\n"
                        "       qosload write FILE SECONDS LOG [...] | idle SECONDS\n");
        return 2;
    }
    const char *mode = argv[1], *target = argv[2];
    double seconds = atof(argv[3]), rate = 0, ops = 0, idle_at = -1, idle_for = 0;
    for (int a = 5; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--rate") == 0)
            rate = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--ops") == 0)
            ops = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--idle") == 0 &&
                 sscanf(argv[a + 1], "%lf:%lf", &idle_at, &idle_for) == 2)
            ;
        else {
            fprintf(stderr, "qosload: bad option '%s %s'\n", argv[a], argv[a + 1]);
            return 2;
        }
    }
    if ((argc - 5) % 2) {
        fprintf(stderr, "qosload: option '%s' without a value\n", argv[argc - 1]);
        return 2;
    }
    FILE *log = open_log(argv[4]);
    if (!log)
        return 1;
    char names[64][4096];
    static char buf[1 << 20];
    int fd = -1;
    int writing = strcmp(mode, "write") == 0;
    if (writing) {
        if ((fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
            return perror(target), 1;
        memset(buf, 'q', sizeof(buf));
    } else {
        for (int i = 0; i < 64; i++) {
            snprintf(names[i], sizeof(names[i]), "%s/f%d", target, i);
            int c = open(names[i], O_WRONLY | O_CREAT, 0644);
            if (c >= 0)
                close(c);
        }
    }
    int storm = strcmp(mode, "storm") == 0;
    double start = now_s(), second = (double)(long)start + 1, done_total = 0, next_at = start;
    unsigned long long count = 0, off = 0, cpu0, runq0, cpu1, runq1;
    sched_times(&cpu0, &runq0);
    for (unsigned long i = 0;; i++) {
        double t = now_s();
        if (t >= second) {
            sched_times(&cpu1, &runq1);
            fprintf(log, "%.0f %llu %llu %llu\n", second - 1, count, cpu1 - cpu0, runq1 - runq0);
            cpu0 = cpu1;
            runq0 = runq1;
            fflush(log);
            count = 0;
            second += 1;
            if (!ops && t - start >= seconds)
                break;
        }
        if (ops && done_total >= ops)
            break;
        if (idle_at >= 0 && t - start >= idle_at && t - start < idle_at + idle_for) {
            usleep(10000);
            continue;
        }
        /* Paced at rate with at most 50 ms of credit: a process held back
         * below its demand does not make up for it later, so its demand
         * stays what it was given. */
        if (rate > 0) {
            if (next_at < t - 0.05)
                next_at = t - 0.05;
            double ahead = next_at - t;
            if (ahead > 0.002) {
                usleep((useconds_t)(ahead * 1e6 > 20000 ? 20000 : ahead * 1e6));
                continue;
            }
        }
        struct stat st;
        if (writing) {
            ssize_t n = write(fd, buf, sizeof(buf));
            if (n < 0)
                return perror(target), 1;
            count += (unsigned long long)n;
            done_total += (double)n;
            next_at += rate > 0 ? (double)n / rate : 0;
            if ((off += (unsigned long long)n) >= (64u << 20)) {
                lseek(fd, 0, SEEK_SET);
                off = 0;
            }
        } else if (storm) {
            int f = open(names[i % 64], O_RDONLY);
            if (f >= 0) {
                fstat(f, &st);
                close(f);
            }
            count++;
            done_total++;
            next_at += rate > 0 ? 1 / rate : 0;
        } else {
            stat(names[i % 64], &st);
            count++;
            done_total++;
            next_at += rate > 0 ? 1 / rate : 0;
        }
    }
    if (count) {
        sched_times(&cpu1, &runq1);
        fprintf(log, "%.0f %llu %llu %llu\n", second - 1, count, cpu1 - cpu0, runq1 - runq0);
    }
    fprintf(log, "done %.3f\n", now_s());
    if (fd >= 0)
        close(fd);
    fclose(log);
    return 0;
}
