/* fairload: a load of one kind on an adafs instance, for the fair-sharing
 * benchmarks (bench/fair/run.sh).
 *
 *   fairload stat|write DIR PROCS SECONDS [ON_MS OFF_MS]
 *
 * PROCS processes, each with its own libadafs handle (ADAFS_INSTANCE),
 * keep one request each in flight for SECONDS: stat of a file of their
 * own, or 1 MiB writes over one; with ON_MS and OFF_MS, in bursts of ON_MS
 * separated by OFF_MS of nothing. Prints "ops N bytes B seconds S".
 *
 * FAIRLOAD_SERVER=I: each process's file is one whose metadata lies on
 * server I (bench/fair/exchange.sh loads chosen servers of an instance).
 * FAIRLOAD_WINDOW_MS=W: each process also prints "window K ops N" for
 * every W ms window it ran in (K counted from the epoch of
 * CLOCK_MONOTONIC, so processes' windows line up). */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adafs.h"
#include "hash.h"

#define WRITE_SIZE (1u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double on_s, off_s;   /* bursts; 0: continuous */

static int child(int out, int write_op, const char *dir, double seconds)
{
    adafs *fs;
    char err[256], path[512];
    if (adafs_connect(&fs, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "fairload: %s\n", err);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/f.%d", dir, (int)getpid());
    const char *server = getenv("FAIRLOAD_SERVER");
    for (unsigned i = 0; server && hash_place_path(path, (unsigned)adafs_server_count(fs)) !=
                                   (unsigned)atoi(server); i++)
        snprintf(path, sizeof(path), "%s/f.%d.%u", dir, (int)getpid(), i);
    const char *window_ms = getenv("FAIRLOAD_WINDOW_MS");
    double window = window_ms ? atof(window_ms) / 1e3 : 0;
    long cur = -1;
    unsigned long long in_window = 0;
    /* 0666: a server run by root (the benchmarks') stamps the file root's. */
    int fd = adafs_open(fs, path, O_CREAT | O_RDWR | O_TRUNC, 0666);
    if (fd < 0) {
        fprintf(stderr, "fairload: %s: %s\n", path, strerror(-fd));
        return 1;
    }
    char *buf = calloc(1, WRITE_SIZE);
    unsigned long long ops = 0, bytes = 0;
    double start = now(), end = start + seconds;
    for (double t; (t = now()) < end;) {
        struct stat st;
        if (on_s > 0 && fmod(t - start, on_s + off_s) >= on_s) {
            double wake = t - fmod(t - start, on_s + off_s) + on_s + off_s;
            usleep((useconds_t)((wake < end ? wake - t : end - t) * 1e6));
            continue;
        }
        long rc = write_op ? adafs_pwrite(fs, fd, buf, WRITE_SIZE, 0) : adafs_stat(fs, path, &st);
        if (rc < 0) {
            fprintf(stderr, "fairload: %s: %s\n", path, strerror((int)-rc));
            return 1;
        }
        ops++;
        bytes += write_op ? WRITE_SIZE : 0;
        if (window > 0) {
            long k = (long)(now() / window);
            if (k != cur && cur >= 0)
                printf("window %ld ops %llu\n", cur, in_window);
            in_window = k != cur ? 0 : in_window;
            cur = k;
            in_window++;
        }
    }
    if (cur >= 0)
        printf("window %ld ops %llu\n", cur, in_window);
    fflush(stdout);
    dprintf(out, "%llu %llu\n", ops, bytes);
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc != 5 && argc != 7) || (strcmp(argv[1], "stat") && strcmp(argv[1], "write"))) {
        fprintf(stderr, "usage: fairload stat|write DIR PROCS SECONDS [ON_MS OFF_MS]\n");
        return 2;
    }
    if (argc == 7) {
        on_s = atof(argv[5]) / 1e3;
        off_s = atof(argv[6]) / 1e3;
    }
    int write_op = strcmp(argv[1], "write") == 0, procs = atoi(argv[3]);
    double seconds = atof(argv[4]);
    int p[2];
    if (pipe(p) < 0)
        return 1;
    double t0 = now();
    for (int i = 0; i < procs; i++)
        if (fork() == 0) {
            close(p[0]);
            _exit(child(p[1], write_op, argv[2], seconds));
        }
    close(p[1]);
    FILE *in = fdopen(p[0], "r");
    unsigned long long ops = 0, bytes = 0, o, b;
    while (fscanf(in, "%llu %llu", &o, &b) == 2) {
        ops += o;
        bytes += b;
    }
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    printf("ops %llu bytes %llu seconds %.3f\n", ops, bytes, now() - t0);
    return failed;
}
