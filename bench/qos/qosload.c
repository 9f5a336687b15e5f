/* qosload: the load programs of the QoS acceptance runs (issue 24), each
 * process logging what it did in each second:
 *
 *   qosload stat DIR SECONDS LOG      stat() the files DIR/f0..f63 in a loop
 *   qosload storm DIR SECONDS LOG     open, fstat, close them in a loop
 *   qosload write FILE SECONDS LOG    1 MiB write()s, rewinding every 64 MiB
 *   qosload idle SECONDS              sleep (a job that stops its I/O)
 *
 * LOG gets one line per second: "UNIXTIME COUNT" (operations, or bytes for
 * write); "%p" in LOG is the process id, "%r" $SLURM_PROCID. Missing
 * files of DIR are created first. */
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
    if (argc != 5) {
        fprintf(stderr, "usage: qosload stat|storm DIR SECONDS LOG | write FILE SECONDS LOG | idle SECONDS\n");
        return 2;
    }
    const char *mode = argv[1], *target = argv[2];
    double seconds = atof(argv[3]);
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
    double start = now_s(), second = (double)(long)start + 1;
    unsigned long long count = 0, off = 0;
    for (unsigned long i = 0;; i++) {
        double t = now_s();
        if (t >= second) {
            fprintf(log, "%.0f %llu\n", second - 1, count);
            fflush(log);
            count = 0;
            second += 1;
            if (t - start >= seconds)
                break;
        }
        struct stat st;
        if (writing) {
            ssize_t n = write(fd, buf, sizeof(buf));
            if (n < 0)
                return perror(target), 1;
            count += (unsigned long long)n;
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
        } else {
            stat(names[i % 64], &st);
            count++;
        }
    }
    if (fd >= 0)
        close(fd);
    fclose(log);
    return 0;
}
