/* exchange_client: load on one server of an instance, for
 * test_fs_exchange.sh.
 *
 *   exchange_client SERVER PROCS WARMUP SECONDS
 *
 * PROCS processes (ADAFS_INSTANCE), each with its own handle, stat a file
 * of their own whose metadata lies on server SERVER (made in /pub, which
 * must let them; 0666, as a one-job server run by root stamps it root's)
 * for WARMUP + SECONDS; prints "ops N", the stats done after the warm-up. */
#include <errno.h>
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

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int child(int out, unsigned server, double warmup, double seconds)
{
    adafs *fs;
    char err[256], path[64];
    if (adafs_connect(&fs, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "exchange_client: %s\n", err);
        return 1;
    }
    unsigned n = (unsigned)adafs_server_count(fs);
    for (unsigned i = 0;; i++) {
        snprintf(path, sizeof(path), "/pub/f.%d.%u", (int)getpid(), i);
        if (hash_place_path(path, n) == server)
            break;
    }
    int fd = adafs_open(fs, path, O_CREAT | O_WRONLY, 0666);
    if (fd < 0) {
        fprintf(stderr, "exchange_client: create %s: %s\n", path, strerror(-fd));
        return 1;
    }
    adafs_close(fs, fd);
    unsigned long long ops = 0;
    double start = now(), from = start + warmup, end = from + seconds;
    for (double t; (t = now()) < end;) {
        struct stat st;
        int rc = adafs_stat(fs, path, &st);
        if (rc < 0) {
            fprintf(stderr, "exchange_client: stat %s: %s\n", path, strerror(-rc));
            return 1;
        }
        ops += t >= from;
    }
    dprintf(out, "%llu\n", ops);
    adafs_disconnect(fs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: exchange_client SERVER PROCS WARMUP SECONDS\n");
        return 2;
    }
    unsigned server = (unsigned)atoi(argv[1]);
    int procs = atoi(argv[2]);
    double warmup = atof(argv[3]), seconds = atof(argv[4]);
    int p[2];
    if (pipe(p) < 0)
        return 1;
    for (int i = 0; i < procs; i++)
        if (fork() == 0)
            _exit(child(p[1], server, warmup, seconds));
    close(p[1]);
    int failed = 0, status;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status);
    FILE *in = fdopen(p[0], "r");
    unsigned long long total = 0, ops;
    while (in && fscanf(in, "%llu", &ops) == 1)
        total += ops;
    printf("ops %llu\n", total);
    return failed;
}
