/* plscale: how the plugin's costs inside slurmctld grow with the number of
 * live instances (jobs holding a burst buffer).
 *
 *   plscale [--state-dir DIR] [--nodes PER_JOB] N...
 *   plscale --sysmap DB NODES HOSTLIST
 *   plscale --hostlist N
 *   plscale --fit-burst DB HOSTLIST SUBMITS
 *
 * For each N, the plugin's own code (libadafs_bb, without the shim) on a
 * table of N instances of PER_JOB nodes (4), each with a stage-in and a
 * stage-out line, as bb_p_job_begin builds them:
 *
 *   begin_us      N records added as bb_p_job_begin adds them (look for an
 *                 older record of the job, insert, save), under the lock
 *   find_us       one lookup of every job by id: what slurmctld's purge of
 *                 finished jobs costs (bb_p_job_test_stage_out per job,
 *                 under its job write lock), and each job_begin/stage_out
 *   pass_us       one driver pass once every job waits for its agents (the
 *                 transport never answers): the once-a-second pass
 *   pass_hold_us  the driver's longest lock hold in those passes
 *   open_us       the journal written for N records (bb_store_open)
 *   puts          3 changes per record appended (a job's deploy, release,
 *                 end): journal bytes, compactions
 *   load_us       the journal read back, as at slurmctld's restart
 *
 * --sysmap: placement from a sysmap database; a DB that does not exist is
 * made first by sysmap's own writer (sysmap_store) from 10,000 synthetic
 * reports of 20 hardware profiles (sysmap/tests/synth.c), hosts n00001
 * to n10000 (2 s after opening it, as in a running slurmctld: placement's
 * table read in the background). place_us, bb_p_job_begin's instance of a job of NODES nodes
 * (n00001...: each node's storage from sysmap) under slurmctld's job lock;
 * fit_us, the submit-time check of a request against HOSTLIST (a
 * partition's nodes), under the job lock too (bb_p_job_validate).
 *
 * --fit-burst: SUBMITS submit-time fits against HOSTLIST one after the
 * other, as a burst of #BB_ADAFS submits to one partition makes them (each
 * under the job write lock): fit_first_us the first, fit_burst_us all of
 * them and fit_burst_max_us the longest; then the same while the
 * collectors keep reporting (a report of n00001 stored between any two
 * submits, not timed): fit_writes_us, fit_writes_max_us.
 *
 * --hostlist: hostlist_expand of n[1-N] (zero-padded) and hostlist_compress
 * of all its names and of every other one in reverse order (N/2 ranges):
 * expand_us, compress_us, compress_sparse_us.
 *
 * Prints "key N value" lines. The pending jobs' calls (test_stage_in,
 * get_est_start, try_stage_in) do not touch the table: see
 * doc/benchmarks.md, Scale. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bb_begin.h"
#include "bb_store.h"
#include "hostlist.h"
#include "directive.h"
#include "driver.h"
#include "instance.h"
#include "placement.h"
#include "synth.h"
#include "sysmap.h"

static char state_dir[4096] = "/var/tmp";
static int per_job = 4;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The calls of every set are kept, never answered: each job waits. */
static struct agent_call **held_calls;
static size_t nheld, capheld;

static void swallow(void *ctx, struct agent_call *call)
{
    (void)ctx;
    if (nheld == capheld) {
        capheld = capheld ? capheld * 2 : 1024;
        held_calls = realloc(held_calls, capheld * sizeof(*held_calls));
        if (!held_calls)
            abort();
    }
    held_calls[nheld++] = call;
}

/* The table's own calls (the list's before the index existed: the
 * same source builds against both). */
#ifdef DRIVER_INDEX_BUCKETS
static struct bb_job *find(struct bb_driver *d, uint32_t id)
{
    return driver_find(d, id);
}

static void add(struct bb_driver *d, struct bb_job *j)
{
    driver_add(d, j);
}
#else
static struct bb_job *find(struct bb_driver *d, uint32_t id)
{
    return bb_job_find(d->jobs, id);
}

static void add(struct bb_driver *d, struct bb_job *j)
{
    j->next = d->jobs;
    d->jobs = j;
}
#endif

static struct bb_job *instance(uint32_t id)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = 1000 + id % 500;
    j->user = strdup("benchuser");
    j->nnodes = (size_t)per_job;
    j->nodes = calloc((size_t)per_job, sizeof(*j->nodes));
    for (int i = 0; i < per_job; i++) {
        char name[32];
        snprintf(name, sizeof(name), "nid%05u", (id * (unsigned)per_job + (unsigned)i) % 10000);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup(name),
                                        .agent_port = 6830, .storage = strdup("/local/adafs"),
                                        .numa_node = -1 };
    }
    char path[64], err[256];
    snprintf(path, sizeof(path), "/adafs/%u", id);
    j->mount = strdup(path);
    snprintf(path, sizeof(path), "/adafs/.job.%u.instance", id);
    j->instance_path = strdup(path);
    j->storage = strdup("/local/adafs");
    j->chunk_size = 524288;
    j->node_capacity = 1ull << 34;
    uint8_t secret[INSTANCE_SECRET_SIZE];
    secret_generate(secret);
    secret_to_hex(secret, j->secret_hex);
    const char *lines = "capacity=64G\n"
                        "stage_in source=/pfs/proj/input destination=input type=directory\n"
                        "stage_out source=results destination=/pfs/proj/out/%j type=directory";
    if (directive_parse("X", NULL, lines, &j->req, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    j->t_begin = time(NULL);
    j->phase = PHASE_DEPLOYING;
    return j;
}

static void one(int n)
{
    char path[4200], err[512];
    snprintf(path, sizeof(path), "%s/plscale_state.%d", state_dir, (int)getpid());
    unlink(path);
    struct bb_driver d;
    driver_init(&d);
    d.config.server_timeout_ms = 5000;
    d.config.stage_threads = 4;
    d.transport = (struct lc_transport){ swallow, NULL, NULL };
    if (!(d.store = bb_store_open(path, NULL, err, sizeof(err)))) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }

    /* bb_p_job_begin, N times. */
    struct bb_job **made = calloc((size_t)n, sizeof(*made));
    for (int i = 0; i < n; i++)
        made[i] = instance(100000u + (uint32_t)i);
    uint64_t t = now_us(), begin_max = 0;
    for (int i = 0; i < n; i++) {
        uint64_t t1 = now_us();
        pthread_mutex_lock(&d.lock);
        if (find(&d, made[i]->job_id))
            abort();
        add(&d, made[i]);
        driver_save(&d, made[i]);
        pthread_mutex_unlock(&d.lock);
        if (now_us() - t1 > begin_max)
            begin_max = now_us() - t1;
    }
    printf("begin_us %d %llu\nbegin_max_us %d %llu\n", n, (unsigned long long)(now_us() - t),
           n, (unsigned long long)begin_max);

    /* slurmctld's purge: one lookup per finished job. */
    t = now_us();
    size_t found = 0;
    for (int i = 0; i < n; i++)
        found += find(&d, 100000u + (uint32_t)i) != NULL;
    printf("find_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    if (found != (size_t)n)
        abort();

    /* The driver: the first pass sends every job's START; then all wait. */
    driver_pass(&d);
    memset(&d.held, 0, sizeof(d.held));
    t = now_us();
    for (int k = 0; k < 3; k++)
        driver_pass(&d);
    printf("pass_us %d %llu\npass_hold_us %d %llu\n", n,
           (unsigned long long)(now_us() - t) / 3, n, (unsigned long long)d.held.max_us);

    /* The journal. */
    bb_store_close(d.store);
    d.store = NULL;
    t = now_us();
    struct bb_store *s = bb_store_open(path, d.jobs, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    printf("open_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    t = now_us();
    for (int k = 0; k < 3; k++)
        for (struct bb_job *j = d.jobs; j; j = j->next) {
            j->phase = k == 0 ? PHASE_STAGING_IN : k == 1 ? PHASE_RUNNING : PHASE_STAGING_OUT;
            bb_store_put(s, j);
        }
    bb_store_sync(s, bb_store_last(s));
    struct bb_store_stats st;
    bb_store_stats(s, &st);
    printf("puts_us %d %llu\njournal_bytes %d %llu\nlive_bytes %d %llu\ncompactions %d %llu\n",
           n, (unsigned long long)(now_us() - t), n, (unsigned long long)st.file_bytes, n,
           (unsigned long long)st.live_bytes, n, (unsigned long long)st.compactions);
    bb_store_close(s);
    struct stat sb;
    printf("file_bytes %d %lld\n", n, stat(path, &sb) == 0 ? (long long)sb.st_size : -1LL);
    struct bb_job *loaded = NULL;
    t = now_us();
    int lost = bb_job_load(path, &loaded, err, sizeof(err));
    printf("load_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    size_t nloaded = 0;
    for (struct bb_job *j = loaded, *next; j; j = next, nloaded++) {
        next = j->next;
        bb_job_free(j);
    }
    if (lost || nloaded != (size_t)n) {
        fprintf(stderr, "plscale: loaded %zu of %d (%d lost: %s)\n", nloaded, n, lost, err);
        exit(1);
    }
    unlink(path);
    d.persist.head = NULL;
    while (d.jobs) {
        struct bb_job *next = d.jobs->next;
        bb_job_free(d.jobs);
        d.jobs = next;
    }
    free(made);
    fflush(stdout);
}

static void quiet(void *arg, int level, const char *line)
{
    (void)arg, (void)level, (void)line;
}

static void make_sysmap(const char *path)
{
    char err[512];
    struct sysmap_db *db;
    if (sysmap_open(path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    uint64_t t = now_us();
    for (int i = 0; i < 10000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%05d", i + 1);
        char *report = synth_report(name, (size_t)(i % 20));
        if (sysmap_store(db, report, strlen(report), 1700000000, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "plscale: %s: %s\n", name, err);
            exit(1);
        }
        free(report);
    }
    sysmap_close(db);
    printf("sysmap_made_us 10000 %llu\n", (unsigned long long)(now_us() - t));
}

static void placement(const char *db, int nodes, const char *hostlist)
{
    char err[512];
    if (access(db, F_OK) < 0)
        make_sysmap(db);
    if (placement_open(db, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    /* A build with the placement table reads it in the background: the
     * times are of a running slurmctld's, not of its first seconds. */
    sleep(2);
    struct bb_config cfg;
    bb_config_load("/nonexistent/burst_buffer.conf", &cfg, err, sizeof(err));
    cfg.node_capacity = 1ull << 50;
    struct bb_begin_node *bn = calloc((size_t)nodes, sizeof(*bn));
    char (*names)[32] = calloc((size_t)nodes, sizeof(*names));
    for (int i = 0; i < nodes; i++) {
        snprintf(names[i], sizeof(names[i]), "n%05d", i + 1);
        bn[i] = (struct bb_begin_node){ .name = names[i], .host = names[i],
                                        .slurmd_port = 6818, .cpus = 64 };
    }
    struct bb_begin_job job = { .job_id = 7, .uid = 1000, .gid = 1000, .user = "benchuser",
                                .name = "bench", .burst_buffer = "#BB_ADAFS capacity=1T",
                                .nodes = bn, .nnodes = (size_t)nodes, .say = quiet };
    for (int round = 0; round < 3; round++) {
        uint64_t t = now_us();
        bool users_fault;
        struct bb_job *j = bb_begin_instance(&job, &cfg, err, sizeof(err), &users_fault);
        uint64_t took = now_us() - t;
        size_t from_sysmap = 0;
        for (size_t i = 0; j && i < j->nnodes; i++)
            from_sysmap += strcmp(j->nodes[i].storage, cfg.storage_path) != 0;
        if (!j) {
            fprintf(stderr, "plscale: %s\n", err);
            exit(1);
        }
        bb_job_free(j);
        printf("place_us %d %llu\nplaced_from_sysmap %d %zu\n", nodes,
               (unsigned long long)took, nodes, from_sysmap);
        t = now_us();
        int fits = placement_check_fit(hostlist, "batch", 1ull << 40, err, sizeof(err));
        printf("fit_us %s %llu\nfits %s %d\n", hostlist, (unsigned long long)(now_us() - t),
               hostlist, fits);
    }
    placement_close();
    bb_config_free(&cfg);
    free(bn);
    free(names);
}

static void fit_series(const char *tag, const char *hostlist, int submits,
                       struct sysmap_db *writer)
{
    char err[512];
    uint64_t all = 0, longest = 0;
    for (int i = 0; i < submits; i++) {
        if (writer) {
            char *report = synth_report("n00001", 0);
            if (sysmap_store(writer, report, strlen(report), 1700000000 + i + 1, NULL, err,
                             sizeof(err)) < 0) {
                fprintf(stderr, "plscale: %s\n", err);
                exit(1);
            }
            free(report);
        }
        uint64_t t = now_us();
        if (placement_check_fit(hostlist, "batch", 1ull << 40, err, sizeof(err)) < 0) {
            fprintf(stderr, "plscale: %s\n", err);
            exit(1);
        }
        uint64_t took = now_us() - t;
        all += took;
        longest = took > longest ? took : longest;
    }
    printf("fit_%s_us %d %llu\nfit_%s_max_us %d %llu\n", tag, submits,
           (unsigned long long)all, tag, submits, (unsigned long long)longest);
}

static void fit_burst(const char *db, const char *hostlist, int submits)
{
    char err[512];
    if (access(db, F_OK) < 0)
        make_sysmap(db);
    if (placement_open(db, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    /* A build with the placement table reads it in the background: the
     * times are of a running slurmctld's, not of its first seconds. */
    sleep(2);
    uint64_t t = now_us();
    placement_check_fit(hostlist, "batch", 1ull << 40, err, sizeof(err));
    printf("fit_first_us %s %llu\n", hostlist, (unsigned long long)(now_us() - t));
    fit_series("burst", hostlist, submits, NULL);
    struct sysmap_db *writer;
    if (sysmap_open(db, SYSMAP_OPEN_WRITE, &writer, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    fit_series("writes", hostlist, submits, writer);
    sysmap_close(writer);
    placement_close();
}

static void hostlists(int n)
{
    char expr[64], err[256];
    snprintf(expr, sizeof(expr), "n[%05d-%05d]", 1, n);
    struct hostlist hl = { 0 };
    uint64_t t = now_us();
    if (hostlist_expand(expr, &hl, err, sizeof(err)) < 0) {
        fprintf(stderr, "plscale: %s\n", err);
        exit(1);
    }
    printf("expand_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    t = now_us();
    char *all = hostlist_compress((const char *const *)hl.names, hl.count);
    printf("compress_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    const char **sparse = calloc(hl.count, sizeof(*sparse));
    size_t k = 0;
    for (size_t i = hl.count; i-- > 0;)
        if (i % 2 == 0)
            sparse[k++] = hl.names[i];
    t = now_us();
    char *some = hostlist_compress(sparse, k);
    printf("compress_sparse_us %d %llu\n", n, (unsigned long long)(now_us() - t));
    if (!all || !some)
        exit(1);
    free(all);
    free(some);
    free(sparse);
    hostlist_free(&hl);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "state-dir", required_argument, NULL, 's' },
        { "nodes", required_argument, NULL, 'n' },
        { "sysmap", required_argument, NULL, 'm' },
        { "hostlist", required_argument, NULL, 'h' },
        { "fit-burst", required_argument, NULL, 'f' },
        { 0 },
    };
    int c;
    const char *sysmap_db = NULL;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 's')
            snprintf(state_dir, sizeof(state_dir), "%s", optarg);
        else if (c == 'n')
            per_job = atoi(optarg);
        else if (c == 'm')
            sysmap_db = optarg;
        else if (c == 'f' && optind + 2 == argc) {
            fit_burst(optarg, argv[optind], atoi(argv[optind + 1]));
            return 0;
        } else if (c == 'h') {
            hostlists(atoi(optarg));
            return 0;
        }
        else
            return 2;
    }
    if (sysmap_db && optind + 2 == argc) {
        placement(sysmap_db, atoi(argv[optind]), argv[optind + 1]);
        return 0;
    }
    if (optind >= argc || per_job < 1 || sysmap_db) {
        fprintf(stderr, "usage: plscale [--state-dir DIR] [--nodes PER_JOB] N...\n"
                        "       plscale --sysmap DB NODES HOSTLIST\n"
                        "       plscale --hostlist N\n"
                        "       plscale --fit-burst DB HOSTLIST SUBMITS\n");
        return 2;
    }
    for (int i = optind; i < argc; i++)
        one(atoi(argv[i]));
    return 0;
}
