/* adafs-stage: the command-line front of libadafs_stage.
 *
 *   adafs-stage in|out|copy [options] SRC DST
 *
 * Exit status: 0 everything copied, 1 some files failed (each listed),
 * 2 nothing could be done (bad arguments, unreadable list, no instance). */
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"
#include "report.h"
#include "size.h"
#include "stage.h"
#include "qos_client.h"

static void usage(FILE *out)
{
    fputs("usage: adafs-stage in|out|copy [options] SRC DST\n"
          "  in    copy SRC on the parallel file system into the job's file system DST\n"
          "  out   copy SRC in the job's file system out to DST\n"
          "  copy  copy between two ordinary directories\n"
          "options:\n"
          "  --instance FILE      adafs instance file (default $ADAFS_INSTANCE)\n"
          "  --type T             file, directory (default) or list (SRC is a list file)\n"
          "  --worker K/N         this is worker K of N (0 <= K < N), all started at once\n"
          "  --peer-timeout S     seconds without word from another worker before it is\n"
          "                       given up (default 60)\n"
          "  --threads T          copy threads (default 8)\n"
          "  --max-mdops R        metadata operations/s toward the parallel fs\n"
          "  --max-bw B           bytes/s toward the parallel fs (e.g. 500M)\n"
          "  --piece-size S       split files bigger than S into S pieces (default 64M)\n"
          "  --verify             re-read each destination and compare XXH3 checksums\n"
          "  --follow-symlinks    copy what symlinks point to (default: skip, warn)\n"
          "  --json               print a JSON summary on stdout (no progress bar)\n"
          "  --progress-json FILE append a JSON progress line to FILE every second\n"
          "  --quiet              no progress bar, no summary (exit status only)\n"
          "  --user USER          (as root) become USER before touching any path\n"
          "  --allow-root         stage in/out as root (never for user-given paths)\n"
          "  --qos-socket PATH    charge the job's I/O budget toward the parallel fs, from\n"
          "                       the node agent at PATH (with --qos-job)\n"
          "  --qos-job ID         the job whose budget is charged\n",
          out);
}

static int parse_worker(const char *s, unsigned *k, unsigned *n)
{
    char *end;
    unsigned long a = strtoul(s, &end, 10);
    if (end == s || *end != '/')
        return -1;
    const char *p = end + 1;
    unsigned long b = strtoul(p, &end, 10);
    if (end == p || *end || b == 0 || a >= b || b > 65536)
        return -1;
    *k = (unsigned)a;
    *n = (unsigned)b;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    return size_parse(s, out);   /* plain numbers and K/M/G suffixes */
}

struct progress_ctx {
    struct stage_run *run;
    atomic_int stop;
    FILE *json;               /* --progress-json: a JSON line per second */
};

static void *progress_main(void *arg)
{
    struct progress_ctx *c = arg;
    struct timespec tick = { 0, c->json ? 0 : 200 * 1000 * 1000 };
    if (c->json)
        tick.tv_sec = 1;
    while (!atomic_load(&c->stop)) {
        nanosleep(&tick, NULL);
        struct stage_progress p;
        stage_get_progress(c->run, &p);
        if (c->json)
            report_progress_json(c->json, &p);
        else
            report_progress(stderr, &p);
    }
    if (!c->json)
        fputc('\n', stderr);
    return NULL;
}

/* The copy threads allocate and free the same buffers all run long: the
 * replies of the file system's servers (a listing's page with its small
 * files' data, a batch's records), their 4 MiB batch buffers. glibc maps
 * blocks above its adaptive threshold afresh and gives a freed arena's top
 * back to the kernel, so each such block was faulted in and zeroed again:
 * page faults, page clearing and mmap/munmap were a third of the CPU that
 * two workers' stage-out spent beyond one process's (perf, issue 22, run
 * 13: fixing the thresholds cut the workers' CPU by 5.5%, one process's by
 * 3%). A stage is a short process; what it keeps is freed at its exit. A
 * mallopt that fails (another allocator, a sanitizer's) leaves glibc's
 * defaults: only speed differs. */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

int main(int argc, char **argv)
{
    enum { O_INSTANCE = 256, O_TYPE, O_WORKER, O_THREADS, O_MDOPS, O_BW, O_PIECE, O_VERIFY,
           O_FOLLOW, O_JSON, O_QUIET, O_USER, O_ALLOW_ROOT, O_FINALIZE, O_PROGRESS_JSON,
           O_PEER_TIMEOUT, O_HELP, O_QOS_SOCKET, O_QOS_JOB };
    static const struct option longopts[] = {
        { "instance", required_argument, NULL, O_INSTANCE },
        { "type", required_argument, NULL, O_TYPE },
        { "worker", required_argument, NULL, O_WORKER },
        { "threads", required_argument, NULL, O_THREADS },
        { "max-mdops", required_argument, NULL, O_MDOPS },
        { "max-bw", required_argument, NULL, O_BW },
        { "piece-size", required_argument, NULL, O_PIECE },
        { "verify", no_argument, NULL, O_VERIFY },
        { "follow-symlinks", no_argument, NULL, O_FOLLOW },
        { "json", no_argument, NULL, O_JSON },
        { "quiet", no_argument, NULL, O_QUIET },
        { "user", required_argument, NULL, O_USER },
        { "allow-root", no_argument, NULL, O_ALLOW_ROOT },
        { "finalize", no_argument, NULL, O_FINALIZE },
        { "progress-json", required_argument, NULL, O_PROGRESS_JSON },
        { "peer-timeout", required_argument, NULL, O_PEER_TIMEOUT },
        { "help", no_argument, NULL, O_HELP },
        { "qos-socket", required_argument, NULL, O_QOS_SOCKET },
        { "qos-job", required_argument, NULL, O_QOS_JOB },
        { NULL, 0, NULL, 0 },
    };
    log_open("adafs-stage", LOG_LEVEL_WARN, NULL);
    keep_freed_memory();
    struct stage_options opt = { .type = STAGE_DIRECTORY, .workers = 1 };
    int json = 0, quiet = 0, allow_root = 0, finalize = 0, c;
    const char *user = NULL, *progress_json = NULL;
    struct qos_client_conf qos = { 0 };
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case O_INSTANCE: opt.instance = optarg; break;
        case O_TYPE:
            if (stage_type_parse(optarg, &opt.type) < 0) {
                fprintf(stderr, "adafs-stage: --type %s: must be file, directory or list\n", optarg);
                return 2;
            }
            break;
        case O_WORKER:
            if (parse_worker(optarg, &opt.worker, &opt.workers) < 0) {
                fprintf(stderr, "adafs-stage: --worker %s: expected K/N with 0 <= K < N\n", optarg);
                return 2;
            }
            break;
        case O_THREADS:
            if (parse_u64(optarg, &v) < 0 || v == 0 || v > 1024) {
                fprintf(stderr, "adafs-stage: --threads %s: expected 1 to 1024\n", optarg);
                return 2;
            }
            opt.threads = (unsigned)v;
            break;
        case O_MDOPS:
        case O_BW:
        case O_PIECE:
            if (parse_u64(optarg, &v) < 0 || (c == O_PIECE && v == 0)) {
                fprintf(stderr, "adafs-stage: --%s %s: not a %s\n",
                        c == O_MDOPS ? "max-mdops" : c == O_BW ? "max-bw" : "piece-size",
                        optarg, c == O_MDOPS ? "number" : "size (e.g. 500M)");
                return 2;
            }
            if (c == O_MDOPS)
                opt.max_mdops = v;
            else if (c == O_BW)
                opt.max_bw = v;
            else
                opt.piece_size = v;
            break;
        case O_VERIFY: opt.verify = 1; break;
        case O_FOLLOW: opt.follow_symlinks = 1; break;
        case O_JSON: json = 1; break;
        case O_QUIET: quiet = 1; break;
        case O_USER: user = optarg; break;
        case O_ALLOW_ROOT: allow_root = 1; break;
        case O_FINALIZE: finalize = 1; break;
        case O_PEER_TIMEOUT: {
            char *end;
            double t = strtod(optarg, &end);
            if (end == optarg || *end || !(t > 0 && t <= 86400)) {
                fprintf(stderr, "adafs-stage: --peer-timeout %s: expected seconds, over 0 "
                        "and at most 86400\n", optarg);
                return 2;
            }
            opt.peer_timeout = t;
            break;
        }
        case O_PROGRESS_JSON: progress_json = optarg; break;
        case O_QOS_SOCKET:
            if (strlen(optarg) >= sizeof(qos.socket)) {
                fprintf(stderr, "adafs-stage: --qos-socket %s: too long\n", optarg);
                return 2;
            }
            strcpy(qos.socket, optarg);
            break;
        case O_QOS_JOB:
            if (parse_u64(optarg, &v) < 0 || v == 0 || v > UINT32_MAX) {
                fprintf(stderr, "adafs-stage: --qos-job %s: not a job id\n", optarg);
                return 2;
            }
            qos.job_id = (uint32_t)v;
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind != 3) {
        /* Say what is wrong, not only how it should look. */
        static const char *const needed[] = { "the action (in, out or copy)", "SRC", "DST" };
        int have = argc - optind;
        if (have < 3) {
            fprintf(stderr, "adafs-stage: missing ");
            for (int i = have; i < 3; i++)
                fprintf(stderr, "%s%s", needed[i], i == 2 ? "" : i == 1 ? " and " : ", ");
            if (have > 0)
                fprintf(stderr, " after %s '%s'", have == 1 ? "the action" : "SRC",
                        argv[argc - 1]);
            fputc('\n', stderr);
        } else {
            fprintf(stderr, "adafs-stage: %d argument%s too many, from '%s' after DST '%s'\n",
                    have - 3, have == 4 ? "" : "s", argv[optind + 3], argv[optind + 2]);
        }
        fputs("usage: adafs-stage in|out|copy [options] SRC DST (--help: the options)\n", stderr);
        return 2;
    }
    const char *dir = argv[optind];
    if (!strcmp(dir, "in"))
        opt.direction = STAGE_IN;
    else if (!strcmp(dir, "out"))
        opt.direction = STAGE_OUT;
    else if (!strcmp(dir, "copy"))
        opt.direction = STAGE_COPY;
    else {
        fprintf(stderr, "adafs-stage: unknown action '%s': expected in, out or copy\n", dir);
        return 2;
    }
    opt.src = argv[optind + 1];
    opt.dst = argv[optind + 2];

    /* Become the job user before anything below opens a path. */
    char err[512] = "";
    if (user) {
        uid_t uid;
        gid_t gid;
        char name[256];
        int rc = privdrop_lookup(user, &uid, &gid, name, sizeof(name));
        if (rc < 0) {
            fprintf(stderr, "adafs-stage: --user %s: %s\n", user,
                    rc == -ENOENT ? "no such user" : strerror(-rc));
            return 2;
        }
        if (privdrop_to(uid, gid, name, err, sizeof(err)) < 0) {
            fprintf(stderr, "adafs-stage: --user %s: %s\n", user, err);
            return 2;
        }
    } else if (geteuid() == 0 && opt.direction != STAGE_COPY && !allow_root) {
        fprintf(stderr, "adafs-stage: refusing to stage %s as root: paths come from the job "
                "user; use --user USER (or run as the user)\n", dir);
        return 2;
    }

    /* The workers now finish a run themselves; an older plugin's separate
     * finalize round has nothing left to do. */
    if (finalize) {
        fprintf(stderr, "adafs-stage: --finalize: nothing to do, the workers of a run set "
                "the attributes themselves (ignored)\n");
        if (json) {
            struct stage_result none = { 0 };
            char *s = report_json(&opt, &none);
            if (s)
                puts(s);
            free(s);
        }
        return 0;
    }

    if (qos.socket[0] || qos.job_id) {
        if (!qos.socket[0] || !qos.job_id) {
            fprintf(stderr, "adafs-stage: --qos-socket and --qos-job go together\n");
            return 2;
        }
        qos_client_init(&qos);
        /* The job has just started: its first limits may be a period
         * away, and a stage's first seconds would run unlimited. */
        int qrc = qos_client_await(3000);
        if (qrc < 0)
            fprintf(stderr, "adafs-stage: no limits from the job's I/O budget (%s): going on"
                    " under the site's default until they come\n",
                    qrc == -ETIMEDOUT ? "none within 3 s" : "the node agent gave none");
    }
    struct stage_run *run;
    int rc = stage_create(&opt, &run, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "adafs-stage: %s\n", err[0] ? err : strerror(-rc));
        return 2;
    }
    struct progress_ctx pc = { run, 0, NULL };
    if (progress_json && !(pc.json = fopen(progress_json, "ae"))) {
        fprintf(stderr, "adafs-stage: --progress-json %s: %s\n", progress_json, strerror(errno));
        stage_destroy(run);
        return 2;
    }
    pthread_t progress;
    int show = pc.json || (!json && !quiet && isatty(STDERR_FILENO));
    if (show && pthread_create(&progress, NULL, progress_main, &pc) != 0)
        show = 0;
    rc = stage_execute(run);
    if (show) {
        atomic_store(&pc.stop, 1);
        pthread_join(progress, NULL);
    }
    if (pc.json)
        fclose(pc.json);
    const struct stage_result *r = stage_result(run);
    if (json) {
        char *s = report_json(&opt, r);
        if (s)
            puts(s);
        else
            fprintf(stderr, "adafs-stage: out of memory writing the JSON summary\n");
        free(s);
    } else if (!quiet) {
        report_text(stderr, &opt, r);
    }
    stage_destroy(run);
    if (rc < 0) {
        fprintf(stderr, "adafs-stage: %s\n", strerror(-rc));
        return 2;
    }
    return rc;
}
