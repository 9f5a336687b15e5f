/* bench_sysmap: the resource database at cluster scale.
 *
 * Loads N synthetic hosts built from P hardware profiles (one report per
 * transaction, as sysmap-server stores them), checks that the data table
 * holds each distinct value once, and times the queries sysquery and the
 * plugin make: all hosts, one host, the deployment view, a capacity sum.
 * With --sysquery PATH it also times the sysquery program itself.
 *
 * usage: bench_sysmap [--db FILE] [--hosts N] [--profiles P] [--sysquery PATH]
 * Targets (issue 6): load 10,000 hosts < 10 s, all hosts < 1 s, one host < 20 ms. */
#include "synth.h"
#include "sysmap.h"

#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU time of this process: what the work costs when the machine is shared. */
static double cpu_s(void)
{
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

/* Runs argv with stdout to /dev/null; returns the wall time or -1. */
static double time_program(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    double t0 = now_s();
    pid_t pid;
    int status;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        return -1;
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? now_s() - t0 : -1;
}

static const char *verdict(double got, double limit)
{
    return got >= 0 && got < limit ? "met" : "NOT MET";
}

int main(int argc, char **argv)
{
    const char *path = "bench_sysmap.db", *sysquery = NULL;
    long hosts = 10000, profiles = 20;
    static const struct option opts[] = {
        { "db", required_argument, NULL, 'd' }, { "hosts", required_argument, NULL, 'n' },
        { "profiles", required_argument, NULL, 'p' }, { "sysquery", required_argument, NULL, 's' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "d:n:p:s:", opts, NULL)) != -1) {
        switch (c) {
        case 'd': path = optarg; break;
        case 'n': hosts = strtol(optarg, NULL, 10); break;
        case 'p': profiles = strtol(optarg, NULL, 10); break;
        case 's': sysquery = optarg; break;
        default:
            fprintf(stderr, "usage: bench_sysmap [--db FILE] [--hosts N] [--profiles P] [--sysquery PATH]\n");
            return 2;
        }
    }
    if (hosts <= 0 || profiles <= 0 || hosts > 999999) {
        fprintf(stderr, "bench_sysmap: --hosts must be 1..999999 and --profiles positive\n");
        return 2;
    }
    char err[1024], name[32], wal[4200];
    unlink(path);
    snprintf(wal, sizeof(wal), "%s-wal", path);
    unlink(wal);
    struct sysmap_db *db;
    if (sysmap_open(path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench_sysmap: %s\n", err);
        return 1;
    }

    /* Reports are made before timing: the load measures the database. */
    char **reports = calloc((size_t)hosts, sizeof(*reports));
    size_t bytes = 0;
    for (long i = 0; i < hosts; i++) {
        snprintf(name, sizeof(name), "n%05ld", i + 1);
        reports[i] = synth_report(name, (size_t)(i % profiles));
        bytes += strlen(reports[i]);
    }
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < hosts; i++)
        if (sysmap_store(db, reports[i], strlen(reports[i]), 1700000000, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "bench_sysmap: host %ld: %s\n", i + 1, err);
            return 1;
        }
    double load = now_s() - t0, load_cpu = cpu_s() - c0;
    for (long i = 0; i < hosts; i++)
        free(reports[i]);
    free(reports);

    sqlite3 *s;
    sqlite3_stmt *st;
    long long rows = -1, distinct = -1, links = -1;
    sqlite3_open_v2(path, &s, SQLITE_OPEN_READONLY, NULL);
    if (sqlite3_prepare_v2(s, "SELECT (SELECT count(*) FROM data), (SELECT count(DISTINCT value) FROM data),"
                           " (SELECT count(*) FROM host_data)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        rows = sqlite3_column_int64(st, 0);
        distinct = sqlite3_column_int64(st, 1);
        links = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    sqlite3_close(s);

    struct sysmap_query all = { 0 };
    char *out = NULL;
    t0 = now_s();
    c0 = cpu_s();
    if (sysmap_query_json(db, &all, &out, err, sizeof(err)) < 0) {
        fprintf(stderr, "bench_sysmap: %s\n", err);
        return 1;
    }
    double q_all = now_s() - t0, q_all_cpu = cpu_s() - c0;
    size_t out_len = strlen(out);
    free(out);

    struct sysmap_query deploy_all = { .deploy = 1 };
    t0 = now_s();
    sysmap_query_json(db, &deploy_all, &out, err, sizeof(err));
    double q_deploy_all = now_s() - t0;
    free(out);

    /* One host: the worst of 100 spread over the cluster. */
    double q_one = 0, q_view = 0;
    for (int k = 0; k < 100; k++) {
        snprintf(name, sizeof(name), "n%05ld", 1 + (long)k * hosts / 100);
        struct sysmap_query one = { .hostlist = name };
        t0 = now_s();
        sysmap_query_json(db, &one, &out, err, sizeof(err));
        double t = now_s() - t0;
        free(out);
        if (t > q_one)
            q_one = t;
        struct sysmap_deploy_view v;
        t0 = now_s();
        sysmap_deploy_view(db, name, 0, &v, err, sizeof(err));
        t = now_s() - t0;
        if (t > q_view)
            q_view = t;
    }
    char range[64];
    snprintf(range, sizeof(range), "n[00001-%05ld]", hosts);
    struct sysmap_capacity cap;
    t0 = now_s();
    sysmap_capacity(db, range, 0, &cap, err, sizeof(err));
    double q_cap = now_s() - t0;
    free(cap.without_storage);
    sysmap_close(db);

    printf("hosts %ld, profiles %ld, report bytes %zu (%.1f KiB/host)\n", hosts, profiles, bytes,
           (double)bytes / (double)hosts / 1024);
    printf("data rows %lld, distinct values %lld, expected %ld: %s\n", rows, distinct,
           profiles * SYNTH_EXTRACTORS,
           rows == distinct && rows == profiles * SYNTH_EXTRACTORS ? "each value stored once" : "WRONG");
    printf("host_data links %lld\n", links);
    printf("%-44s %9.3f s  (< 10 s: %s), CPU %.3f s\n", "load (one transaction per report)", load,
           verdict(load, 10), load_cpu);
    printf("%-44s %9.3f s  (< 1 s: %s), CPU %.3f s, %zu bytes of JSON\n",
           "query all hosts, all values (API)", q_all, verdict(q_all, 1), q_all_cpu, out_len);
    printf("%-44s %9.3f s\n", "deployment view of all hosts (API)", q_deploy_all);
    printf("%-44s %9.3f ms (< 20 ms: %s)\n", "query one host, worst of 100 (API)", q_one * 1e3,
           verdict(q_one, 0.020));
    printf("%-44s %9.3f ms\n", "sysmap_deploy_view, worst of 100", q_view * 1e3);
    printf("%-44s %9.3f s  (%zu hosts, %llu bytes)\n", "sysmap_capacity over all hosts", q_cap,
           cap.hosts, (unsigned long long)cap.total_bytes);
    if (sysquery) {
        char *a[] = { (char *)sysquery, "--db", (char *)path, NULL };
        double t = time_program(a);
        printf("%-44s %9.3f s  (< 1 s: %s)\n", "sysquery --db F (all hosts, all values)", t, verdict(t, 1));
        char *b[] = { (char *)sysquery, "--db", (char *)path, "--pretty", NULL };
        t = time_program(b);
        printf("%-44s %9.3f s\n", "sysquery --db F --pretty (all hosts)", t);
        char *d[] = { (char *)sysquery, "--db", (char *)path, "--deploy", NULL };
        t = time_program(d);
        printf("%-44s %9.3f s\n", "sysquery --db F --deploy (all hosts)", t);
        snprintf(name, sizeof(name), "n%05ld", hosts / 2);
        char *e[] = { (char *)sysquery, "--db", (char *)path, "-n", name, NULL };
        double worst = 0;
        for (int k = 0; k < 10; k++) {
            t = time_program(e);
            if (t > worst || t < 0)
                worst = t;
        }
        printf("%-44s %9.3f ms (< 20 ms: %s)\n", "sysquery -n ONE (process, worst of 10)", worst * 1e3,
               verdict(worst, 0.020));
    }
    unlink(path);
    unlink(wal);
    return 0;
}
