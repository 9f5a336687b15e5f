/* lcbench: the plugin's orchestration at scale, against simulated agents.
 *
 *   lcbench [--munge-socket PATH] [--sim-munge-socket PATH] [--cpu-of PID]...
 *           [--split-cpus] [--state-dir DIR] scale NODES [REPEATS]
 *   lcbench ... concurrent JOBS NODES_PER_JOB STAGE_MS [dead] [REPEATS]
 *   lcbench ... staging NODES SECONDS
 *
 * The plugin's driver, lifecycle, saved journal and agent link (the code
 * slurmctld runs, without its shim) drive jobs on simulated agents
 * (common/agent_sim.c) in a child process, on loopback, both sides proved
 * by munge as on a cluster. What bb_p_job_begin does under slurmctld's job
 * lock (add the record, save it) is done here under the driver's lock and
 * timed; the driver's own lock holds are timed by the driver.
 *
 * scale: one job of NODES nodes, agents answering at once: from begin to
 *   the release applied (deploy: START and CONFIGURE on every node; a job
 *   with no stage lines, then with one), and from its end to the teardown
 *   applied. Cold (sessions opened) and warm (a second job on the same
 *   nodes: sessions kept).
 * concurrent: JOBS jobs of NODES_PER_JOB nodes each, begun at once, each
 *   staging a line for STAGE_MS; with "dead", node 0 (the first job's)
 *   accepts connections and never answers. Prints each job's phase times.
 * staging: one job of NODES nodes staging for SECONDS: messages and
 *   sessions (credentials) per second while it stages.
 *
 * --sim-munge-socket: the simulated agents open the plugin's credentials
 * with a munged of their own (same key), as each node's agent does with
 * its node's; --cpu-of PID (up to 4, e.g. the munged): scale reports the
 * CPU each used from begin to release, with the plugin's and the
 * simulator's, to tell whose work a cold deploy's time is on 2 cores.
 * --split-cpus: the simulated agents run on the last CPU only, the plugin
 * on the others (on 2 cores, one each), as agents on other machines would
 * not take the plugin's CPU; the wall times are then the plugin's on its
 * share of the machine.
 *
 * Prints one line per result, "key value" (ms, counts). */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_link.h"
#include "agent_sim.h"
#include "driver.h"
#include "instance.h"
#include "munge_auth.h"
#include "net.h"

static struct session_auth munge, sim_munge;
static char state_dir[4096] = "/var/tmp";
static pid_t cpu_of[4];
static int ncpu_of;
static bool split_cpus;

/* With --split-cpus: the simulator (sim) on the last CPU, the plugin on the
 * rest. Exits when the machine has a single CPU. */
static void pin(bool sim)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 2) {
        fprintf(stderr, "lcbench: --split-cpus needs 2 CPUs or more\n");
        exit(2);
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (long i = sim ? n - 1 : 0; i < (sim ? n : n - 1); i++)
        CPU_SET((int)i, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        fprintf(stderr, "lcbench: sched_setaffinity: %s\n", strerror(errno));
        exit(1);
    }
}

/* CPU seconds (user + system) a process used so far, from /proc. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');   /* the name may hold spaces */
    unsigned long long utime, stime;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return -1;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* --- the simulated agents, in a child ------------------------------------ */

struct sim_child {
    pid_t pid;
    int to_child;           /* closed: the child stops */
    int nodes;
    int *ports;
};

static void start_sim(struct sim_child *c, int nodes, int stage_ms, int dead_node)
{
    int up[2], down[2];
    if (pipe(up) < 0 || pipe(down) < 0)
        exit(1);
    c->nodes = nodes;
    c->ports = calloc((size_t)nodes, sizeof(int));
    c->pid = fork();
    if (c->pid == 0) {
        if (split_cpus)
            pin(true);
        close(up[0]);
        close(down[1]);
        char err[256];
        struct agent_sim_node all = { .mode = SIM_OK, .stage_ms = stage_ms };
        struct agent_sim *sim = agent_sim_start(sim_munge.seal ? &sim_munge : &munge, 0,
                                                "127.0.0.1", nodes, "n", &all, err, sizeof(err));
        if (!sim) {
            fprintf(stderr, "lcbench: simulated agents: %s\n", err);
            _exit(1);
        }
        if (dead_node >= 0)
            agent_sim_set(sim, dead_node, &(struct agent_sim_node){ .mode = SIM_SILENT });
        for (int i = 0; i < nodes; i++) {
            int port = agent_sim_port(sim, i);
            if (write(up[1], &port, sizeof(port)) != sizeof(port))
                _exit(1);
        }
        char b;
        while (read(down[0], &b, 1) > 0)
            ;
        struct agent_sim_stats st;
        agent_sim_stats(sim, &st);
        agent_sim_stop(sim);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    for (int i = 0; i < nodes; i++)
        if (net_read_full(up[0], &c->ports[i], sizeof(int), net_now_ms() + 60000) < 0) {
            fprintf(stderr, "lcbench: the simulated agents did not start\n");
            exit(1);
        }
    close(up[0]);
    c->to_child = down[1];
}

static void stop_sim(struct sim_child *c)
{
    close(c->to_child);
    waitpid(c->pid, NULL, 0);
    free(c->ports);
}

/* --- the plugin's side ------------------------------------------------ */

#define MAX_JOBS 1024

/* When each job was shown each phase (ms since the run's start). */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t seen_cond = PTHREAD_COND_INITIALIZER;
static int64_t shown[MAX_JOBS + 1][PHASE_COMPLETE + 1];
static int64_t t0;

static void apply(const struct bb_outcome *o, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&seen_lock);
    if (o->job_id <= MAX_JOBS && !shown[o->job_id][o->phase])
        shown[o->job_id][o->phase] = net_now_ms() - t0;
    pthread_cond_broadcast(&seen_cond);
    pthread_mutex_unlock(&seen_lock);
}

static int64_t wait_shown(uint32_t job, enum bb_phase phase, int timeout_ms)
{
    int64_t until = net_now_ms() + timeout_ms;
    pthread_mutex_lock(&seen_lock);
    while (!shown[job][phase] && net_now_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&seen_cond, &seen_lock, &ts);
    }
    int64_t at = shown[job][phase];
    pthread_mutex_unlock(&seen_lock);
    return at ? at : -1;
}

static void send_link(void *ctx, struct agent_call *call)
{
    agent_link_send(ctx, call);
}

static void send_link_many(void *ctx, struct agent_call **calls, size_t n)
{
    agent_link_send_many(ctx, calls, n);
}

struct plugin {
    struct bb_driver d;
    struct agent_link *link;
    char path[4200];
    uint64_t begin_max_us;   /* what bb_p_job_begin holds the job lock for */
};

static void plugin_start(struct plugin *p)
{
    char err[512];
    driver_init(&p->d);
    p->d.config.server_timeout_ms = 5000;
    p->d.config.stage_threads = 4;
    snprintf(p->path, sizeof(p->path), "%s/lcbench_state.%d", state_dir, (int)getpid());
    unlink(p->path);
    if (!(p->d.store = bb_store_open(p->path, NULL, err, sizeof(err)))) {
        fprintf(stderr, "lcbench: %s\n", err);
        exit(1);
    }
    struct agent_link_config cfg = { .auth = &munge };
    if (!(p->link = agent_link_new(&cfg, err, sizeof(err)))) {
        fprintf(stderr, "lcbench: %s\n", err);
        exit(1);
    }
    p->d.transport = (struct lc_transport){ send_link, p->link, send_link_many };
    p->d.hooks = (struct bb_driver_hooks){ .apply = apply };
    memset(shown, 0, sizeof(shown));
    driver_start(&p->d);
}

static void plugin_stop(struct plugin *p)
{
    driver_stop(&p->d);
    agent_link_free(p->link);
    while (p->d.jobs) {
        struct bb_job *next = p->d.jobs->next;
        bb_job_free(p->d.jobs);
        p->d.jobs = next;
    }
    bb_store_close(p->d.store);
    unlink(p->path);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* What bb_p_job_begin does for a job of nodes [from, from + n): the record
 * built (as new_instance) and saved, under the lock, timed. */
static void begin(struct plugin *p, const struct sim_child *sim, uint32_t id, int from, int n,
                  const char *stages)
{
    uint64_t start = now_us();
    pthread_mutex_lock(&p->d.lock);
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = 1000;
    j->user = strdup("bench");
    j->nnodes = (size_t)n;
    j->nodes = calloc((size_t)n, sizeof(*j->nodes));
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", from + i);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup("127.0.0.1"),
                                        .agent_port = sim->ports[from + i],
                                        .storage = strdup("/var/lib/adafs"), .numa_node = -1 };
    }
    char path[64], err[256];
    snprintf(path, sizeof(path), "/adafs/%u", id);
    j->mount = strdup(path);
    snprintf(path, sizeof(path), "/adafs/.job.%u.instance", id);
    j->instance_path = strdup(path);
    j->storage = strdup("/var/lib/adafs");
    j->chunk_size = 524288;
    j->node_capacity = 1 << 30;
    uint8_t secret[INSTANCE_SECRET_SIZE];
    secret_generate(secret);
    secret_to_hex(secret, j->secret_hex);
    if (stages && directive_parse("X", NULL, stages, &j->req, err, sizeof(err)) < 0)
        fprintf(stderr, "lcbench: %s\n", err);
    j->t_begin = time(NULL);
    j->phase = PHASE_DEPLOYING;
    driver_add(&p->d, j);
    driver_save(&p->d, j);
    pthread_mutex_unlock(&p->d.lock);
    driver_wake(&p->d);
    uint64_t took = now_us() - start;
    if (took > p->begin_max_us)
        p->begin_max_us = took;
}

static void end(struct plugin *p, uint32_t id, bool hurry)
{
    pthread_mutex_lock(&p->d.lock);
    struct bb_job *j = driver_find(&p->d, id);
    if (j) {
        lifecycle_job_ended(j, hurry);
        driver_save(&p->d, j);
    }
    pthread_mutex_unlock(&p->d.lock);
    driver_wake(&p->d);
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* --- scenarios ------------------------------------------------------------- */

static void scale(int nodes, int repeats)
{
    struct sim_child sim;
    start_sim(&sim, nodes, 0, -1);
    struct plugin p = { 0 };
    plugin_start(&p);
    uint32_t id = 1;
    for (int r = 0; r < repeats; r++) {
        for (int with_stage = 0; with_stage < 2; with_stage++) {
            /* The first job of each repeat opens the sessions (cold): a
             * fresh link. The second finds them open (warm). */
            for (int warm = 0; warm < 2; warm++, id++) {
                if (!warm) {
                    plugin_stop(&p);
                    memset(&p, 0, sizeof(p));
                    plugin_start(&p);
                }
                double cpu0 = cpu_s(), sim0 = proc_cpu_s(sim.pid), other0[4];
                for (int k = 0; k < ncpu_of; k++)
                    other0[k] = proc_cpu_s(cpu_of[k]);
                t0 = net_now_ms();
                begin(&p, &sim, id, 0, nodes,
                      with_stage ? "stage_in source=/pfs/in destination=in type=file" : NULL);
                int64_t released = wait_shown(id, PHASE_RUNNING, 120000);
                double cpu1 = cpu_s(), sim1 = proc_cpu_s(sim.pid);
                char others[128] = "-";
                for (int k = 0, at = 0; k < ncpu_of && at < (int)sizeof(others) - 16; k++)
                    at += snprintf(others + at, sizeof(others) - (size_t)at, "%s%.2f", k ? "," : "",
                                   proc_cpu_s(cpu_of[k]) - other0[k]);
                int64_t t_end = net_now_ms() - t0;
                end(&p, id, false);
                int64_t done = wait_shown(id, PHASE_COMPLETE, 120000);
                double cpu2 = cpu_s();
                struct agent_link_stats ls;
                agent_link_stats(p.link, &ls);
                printf("scale nodes=%d stage=%d %s repeat=%d release_ms %lld teardown_ms %lld "
                       "cpu_release_s %.3f cpu_teardown_s %.3f sessions %llu credentials %llu sent %llu "
                       "begin_lock_us %llu driver_lock_max_us %llu (%s) sim_cpu_release_s %.2f "
                       "others_cpu_release_s %s\n",
                       nodes, with_stage, warm ? "warm" : "cold", r, (long long)released,
                       (long long)(done - t_end), cpu1 - cpu0, cpu2 - cpu1,
                       (unsigned long long)ls.sessions, (unsigned long long)ls.credentials,
                       (unsigned long long)ls.sent,
                       (unsigned long long)p.begin_max_us, (unsigned long long)p.d.held.max_us,
                       p.d.held.max_where ? p.d.held.max_where : "-", sim1 - sim0, others);
                fflush(stdout);
            }
        }
    }
    plugin_stop(&p);
    stop_sim(&sim);
}

static void concurrent(int jobs, int per, int stage_ms, bool dead, int repeat)
{
    struct sim_child sim;
    start_sim(&sim, jobs * per, stage_ms, dead ? 0 : -1);
    struct plugin p = { 0 };
    plugin_start(&p);
    t0 = net_now_ms();
    for (int i = 0; i < jobs; i++)
        begin(&p, &sim, (uint32_t)(i + 1), i * per, per,
              "stage_in source=/pfs/in destination=in type=file");
    for (int i = 1; i < jobs; i++)
        wait_shown((uint32_t)(i + 1), PHASE_RUNNING, 120000);
    /* Each job that runs ends at once: its teardown is a phase change too. */
    for (int i = 1; i < jobs; i++)
        end(&p, (uint32_t)(i + 1), false);
    for (int i = 1; i < jobs; i++)
        wait_shown((uint32_t)(i + 1), PHASE_COMPLETE, 120000);
    for (int i = 0; i < jobs; i++) {
        printf("concurrent dead=%d repeat=%d job %d", dead, repeat, i + 1);
        for (int ph = PHASE_STAGING_IN; ph <= PHASE_COMPLETE; ph++)
            printf(" %s %lld", bb_phase_name((enum bb_phase)ph), (long long)shown[i + 1][ph]);
        printf("\n");
    }
    printf("concurrent dead=%d repeat=%d begin_lock_max_us %llu driver_lock_max_us %llu (%s)\n",
           dead, repeat, (unsigned long long)p.begin_max_us, (unsigned long long)p.d.held.max_us,
           p.d.held.max_where ? p.d.held.max_where : "-");
    fflush(stdout);
    plugin_stop(&p);
    stop_sim(&sim);
}

static void staging(int nodes, int seconds)
{
    struct sim_child sim;
    start_sim(&sim, nodes, seconds * 1000, -1);
    struct plugin p = { 0 };
    plugin_start(&p);
    t0 = net_now_ms();
    begin(&p, &sim, 1, 0, nodes, "stage_in source=/pfs/in destination=in type=file");
    /* Deployed and the stage started: from then on it is only watched. */
    wait_shown(1, PHASE_STAGING_IN, 120000);
    int64_t until = net_now_ms() + 3000;
    struct agent_link_stats a, b;
    while (net_now_ms() < until)
        usleep(100000);
    agent_link_stats(p.link, &a);
    int64_t from = net_now_ms();
    wait_shown(1, PHASE_RUNNING, seconds * 1000 + 120000);
    agent_link_stats(p.link, &b);
    double span = (double)(net_now_ms() - from) / 1000.0;
    printf("staging nodes=%d seconds=%d window_s %.1f requests %llu answers %llu "
           "messages_per_s %.1f sessions_opened %llu credentials_per_s %.2f\n",
           nodes, seconds, span, (unsigned long long)(b.sent - a.sent),
           (unsigned long long)(b.received - a.received),
           (double)(b.sent - a.sent + b.received - a.received) / span,
           (unsigned long long)(b.sessions - a.sessions),
           (double)(b.credentials - a.credentials + b.sessions - a.sessions) / span);
    /* Credentials: made by the link, and opened by the agents (one each). */
    printf("staging nodes=%d deploy_sessions %llu deploy_credentials %llu (made %llu)\n", nodes,
           (unsigned long long)a.sessions, (unsigned long long)(a.credentials + a.sessions),
           (unsigned long long)a.credentials);
    fflush(stdout);
    end(&p, 1, true);
    wait_shown(1, PHASE_COMPLETE, 60000);
    plugin_stop(&p);
    stop_sim(&sim);
}

int main(int argc, char **argv)
{
    const char *socket = NULL;
    static const struct option opts[] = {
        { "munge-socket", required_argument, NULL, 'm' },
        { "state-dir", required_argument, NULL, 's' },
        { "sim-munge-socket", required_argument, NULL, 'M' },
        { "cpu-of", required_argument, NULL, 'c' },
        { "split-cpus", no_argument, NULL, 'p' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'm')
            socket = optarg;
        else if (c == 's')
            snprintf(state_dir, sizeof(state_dir), "%s", optarg);
        else if (c == 'M')
            munge_auth_init(&sim_munge, optarg);
        else if (c == 'c' && ncpu_of < 4)
            cpu_of[ncpu_of++] = (pid_t)atoi(optarg);
        else if (c == 'p')
            split_cpus = true;
        else
            return 2;
    }
    munge_auth_init(&munge, socket);
    if (split_cpus)
        pin(false);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl = { 1 << 17, 1 << 17 };
    setrlimit(RLIMIT_NOFILE, &rl);
    argc -= optind;
    argv += optind;
    if (argc >= 2 && strcmp(argv[0], "scale") == 0) {
        scale(atoi(argv[1]), argc > 2 ? atoi(argv[2]) : 1);
    } else if (argc >= 4 && strcmp(argv[0], "concurrent") == 0) {
        bool dead = argc > 4 && strcmp(argv[4], "dead") == 0;
        concurrent(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), dead, argc > 5 ? atoi(argv[5]) : 0);
    } else if (argc >= 3 && strcmp(argv[0], "staging") == 0) {
        staging(atoi(argv[1]), atoi(argv[2]));
    } else {
        fprintf(stderr, "usage: lcbench [--munge-socket PATH] [--sim-munge-socket PATH] [--cpu-of PID]... "
                        "[--split-cpus] [--state-dir DIR] scale NODES "
                        "[REPEATS] | concurrent JOBS NODES_PER_JOB STAGE_MS [dead|clean] "
                        "[REPEAT] | staging NODES SECONDS\n");
        return 2;
    }
    return 0;
}
