/* adafs-qos: the command line of adafs' I/O quality of service.
 *
 *   adafs-qos [--config FILE] status [--json]
 *   adafs-qos [--config FILE] set policy NAME | capacity LIMITS | period SECONDS
 *   adafs-qos [--config FILE] set job JOBID LIMITS|clear
 *   adafs-qos [--config FILE] plot [--class CLASS] [--job JOBID]... [--last SECONDS] [-o FILE]
 *   adafs-qos [--config FILE] taskprolog
 *
 * status and set talk to adafs-qosd over <AdafsQosStateDir>/qosd.sock (as
 * root or slurmctld's user); plot draws adafs-qosd's records with gnuplot;
 * taskprolog prints the lines a Slurm TaskProlog prints to put a job that
 * has no burst buffer under QoS (doc/qos.md). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net.h"
#include "qos_conf.h"
#include "qos_proto.h"
#include "rpc_io.h"

static struct qos_conf conf;
static char conf_path[4096];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "adafs-qos: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-qos [--config FILE] status [--json]\n"
            "       adafs-qos [--config FILE] set policy NAME | capacity LIMITS... | period SECONDS\n"
            "       adafs-qos [--config FILE] set job JOBID LIMITS...|clear\n"
            "       adafs-qos [--config FILE] plot [--class CLASS] [--job JOBID]... [--last SECONDS]"
            " [-o FILE]\n"
            "       adafs-qos [--config FILE] taskprolog\n"
            "LIMITS: CLASS=RATE,... (open close stat readdir mkdir unlink rename other: ops/s;\n"
            "read write: bytes/s such as 100M; mdops, bw: all of either; unlimited)\n");
}

/* One request to adafs-qosd; the answer's payload in *reply. */
static int ask(uint16_t op, const struct rpc_writer *body, struct rpc_reader *r, uint8_t **reply,
               int *status)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/qosd.sock", conf.state_dir);
    int fd = net_connect_unix(path);
    if (fd < 0)
        return fail("cannot reach adafs-qosd at %s: %s%s", path, strerror(-fd),
                    fd == -EACCES ? " (only root and adafs-qosd's user may ask; a user sees a"
                    " job's limits and usage with scontrol show bbstat JOBID)"
                    : fd == -ENOENT || fd == -ECONNREFUSED ? " (is adafs-qosd running? its log"
                    " says why not)" : "");
    net_set_timeouts(fd, 5000);
    struct rpc_header h = { .opcode = op, .id = 1 };
    int rc = rpc_send(fd, &h, body->data, body->len, net_now_ms() + 5000);
    if (rc == 0)
        rc = rpc_recv(fd, &h, reply, 64u << 20, net_now_ms() + 5000);
    close(fd);
    if (rc < 0)
        return fail("adafs-qosd at %s: %s%s", path, strerror(-rc),
                    rc == -ECONNRESET ? " (only root and adafs-qosd's user may ask)" : "");
    rpc_reader_init(r, *reply, h.length);
    *status = h.status;
    return 0;
}

/* A rate of the status table: "-" for none (not asked, or not limited). */
static void print_value(int c, uint64_t v, bool asked)
{
    char buf[32];
    if (asked)
        qos_value_format(c, v, buf, sizeof(buf));
    else
        qos_rate_show(c, v, buf, sizeof(buf));
    printf(" %10s", strcmp(buf, "unlimited") == 0 ? "-" : buf);
}

static json_t *class_object(const uint64_t *v, bool zero_is_none)
{
    json_t *o = json_object();
    for (int c = 0; c < QOS_NCLASSES; c++)
        json_object_set_new(o, qos_class_name(c),
                            v[c] == QOS_UNLIMITED || (zero_is_none && !v[c]) ? json_null()
                                                                              : json_integer((json_int_t)v[c]));
    return o;
}

static int status(bool as_json)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    struct rpc_reader r;
    uint8_t *reply = NULL;
    int st;
    if (ask(QOSCTL_STATUS, &w, &r, &reply, &st))
        return 1;
    struct qos_status s;
    if (st < 0 || qos_status_get(&r, &s) < 0) {
        free(reply);
        return fail("adafs-qosd sent a malformed status");
    }
    free(reply);
    char cap[1024];
    qos_limits_format(&s.capacity, cap, sizeof(cap));
    if (as_json) {
        json_t *jobs = json_array();
        for (uint32_t i = 0; i < s.njobs; i++) {
            const struct qos_job_status *j = &s.jobs[i];
            json_array_append_new(jobs, json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:o,s:o,s:o,s:o}",
                "job", (json_int_t)j->job_id, "uid", (json_int_t)j->uid, "nodes", (json_int_t)j->nodes,
                "nodes_reporting", (json_int_t)j->nodes_reporting, "processes", (json_int_t)j->procs,
                "weight", j->weight_milli / 1000.0, "asked", class_object(j->asked, true),
                "demand", class_object(j->demand, false), "allocation", class_object(j->alloc, false),
                "usage", class_object(j->usage, false)));
        }
        json_t *doc = json_pack("{s:I,s:I,s:s,s:I,s:o,s:I,s:I,s:o}", "cycle", (json_int_t)s.cycle,
                                "time_ms", (json_int_t)s.time_ms, "policy", s.policy,
                                "period_ms", (json_int_t)s.period_ms,
                                "capacity", class_object(s.capacity.v, true),
                                "agents", (json_int_t)s.agents, "agents_answering",
                                (json_int_t)s.agents_up, "jobs", jobs);
        char *text = json_dumps(doc, JSON_INDENT(2));
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(doc);
    } else {
        printf("Policy=%s Period=%ums Cycle=%llu Agents=%u/%u answering\nCapacity=%s\n", s.policy,
               s.period_ms, (unsigned long long)s.cycle, s.agents_up, s.agents, cap[0] ? cap : "none");
        printf("%8s %6s %5s %5s %-7s %10s %10s %10s %10s\n", "JOBID", "UID", "NODES", "PROCS",
               "CLASS", "ASKED", "DEMAND", "ALLOC", "USAGE");
        for (uint32_t i = 0; i < s.njobs; i++) {
            const struct qos_job_status *j = &s.jobs[i];
            for (int c = 0; c < QOS_NCLASSES; c++) {
                if (!j->usage[c] && j->alloc[c] == QOS_UNLIMITED && !j->asked[c])
                    continue;
                char nodes[32];
                snprintf(nodes, sizeof(nodes), "%u/%u", j->nodes_reporting, j->nodes);
                printf("%8u %6u %5s %5u %-7s", j->job_id, j->uid, nodes, j->procs, qos_class_name(c));
                print_value(c, j->asked[c] ? j->asked[c] : QOS_UNLIMITED, true);
                print_value(c, j->demand[c], false);
                print_value(c, j->alloc[c], false);
                print_value(c, j->usage[c], false);
                printf("\n");
            }
        }
    }
    free(s.jobs);
    return 0;
}

/* A usage error: what was wrong, then the usage; exit status 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "adafs-qos: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return 2;
}

static int set(int argc, char **argv)
{
    static const char *const what[] = { "policy", "capacity", "period", "job" };
    bool known = false;
    for (size_t k = 0; argc > 0 && k < sizeof(what) / sizeof(what[0]); k++)
        known |= strcmp(argv[0], what[k]) == 0;
    if (argc == 0)
        return usage_error("set: what? (policy, capacity, period or job)");
    if (!known)
        return usage_error("set %s: unknown setting (known: policy, capacity, period, job)",
                           argv[0]);
    bool job_set = strcmp(argv[0], "job") == 0;
    if (argc < (job_set ? 3 : 2))
        return usage_error(job_set ? "set job: expected JOBID and LIMITS (or clear)"
                                   : "set %s: expected its value", argv[0]);
    bool limits = job_set || strcmp(argv[0], "capacity") == 0;
    if (!limits && argc > 2)
        return usage_error("set %s: unexpected '%s' (one value)", argv[0], argv[2]);
    /* Limits may come as several arguments (stat=500 write=100M), as on a
     * qos line: joined by commas. */
    char joined[1024] = "";
    for (int k = job_set ? 2 : 1; limits && k < argc; k++) {
        size_t n = strlen(joined);
        if (snprintf(joined + n, sizeof(joined) - n, "%s%s", n ? "," : "", argv[k]) >=
            (int)(sizeof(joined) - n))
            return fail("set %s: limits too long (at most %zu characters)", argv[0],
                        sizeof(joined) - 1);
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    uint32_t job = 0;
    const char *value = limits ? joined : argv[1];
    if (job_set) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (errno || end == argv[1] || *end || argv[1][0] == '-' || !v || v > UINT32_MAX)
            return fail("set job %s: '%s' is not a job id", argv[1], argv[1]);
        job = (uint32_t)v;
        if (strcmp(argv[2], "clear") == 0 && argc > 3)
            return usage_error("set job %s clear: unexpected '%s'", argv[1], argv[3]);
        value = strcmp(argv[2], "clear") == 0 ? "" : joined;
    }
    rpc_put_str(&w, argv[0]);
    rpc_put_u32(&w, job);
    rpc_put_str(&w, value);
    struct rpc_reader r;
    uint8_t *reply = NULL;
    int st;
    int rc = ask(QOSCTL_SET, &w, &r, &reply, &st);
    rpc_writer_free(&w);
    if (rc)
        return 1;
    const char *msg = rpc_get_str(&r);
    if (st < 0)
        fail("set %s: refused by adafs-qosd: %s", argv[0], msg ? msg : strerror(-st));
    else
        printf("%s\n", msg ? msg : "(no answer text)");
    free(reply);
    return st < 0 ? 1 : 0;
}

/* plot: records.csv -> one data file per job -> gnuplot -> PNG. */
static int plot(int argc, char **argv)
{
    const char *cls = "stat", *out = "adafs-qos.png";
    double last = 0;
    unsigned long jobs[64];
    int njobs = 0;
    static const struct option opts[] = {
        { "class", required_argument, NULL, 'c' }, { "job", required_argument, NULL, 'j' },
        { "last", required_argument, NULL, 'l' }, { "output", required_argument, NULL, 'o' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "+o:", opts, NULL)) != -1) {
        switch (c) {
        case 'c': cls = optarg; break;
        case 'j': {
            char *end;
            errno = 0;
            unsigned long v = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || !v || v > UINT32_MAX)
                return usage_error("plot --job %s: not a job id", optarg);
            if (njobs == 64)
                return usage_error("plot --job %s: at most 64 jobs in one plot", optarg);
            jobs[njobs++] = v;
            break;
        }
        case 'l': {
            char *end;
            last = strtod(optarg, &end);
            if (end == optarg || *end || !(last > 0))
                return usage_error("plot --last %s: expected seconds above 0", optarg);
            break;
        }
        case 'o': out = optarg; break;
        default: return usage(stderr), 2;
        }
    }
    if (optind < argc)
        return usage_error("plot: unexpected '%s'", argv[optind]);
    if (qos_class_from_name(cls) < 0)
        return usage_error("plot --class %s: not a class (open close stat readdir mkdir unlink"
                           " rename other read write)", cls);
    char records[4200], dir[] = "/tmp/adafs-qos-plot.XXXXXX";
    snprintf(records, sizeof(records), "%s/records.csv", conf.state_dir);
    FILE *in = fopen(records, "re");
    if (!in)
        return fail("%s: %s", records, strerror(errno));
    if (!mkdtemp(dir))
        return fail("mkdtemp: %s", strerror(errno));
    /* Columns: time,cycle,job,class,asked,demand,alloc,usage */
    char line[512];
    double t0 = -1, tmax = 0;
    unsigned long seen[256];
    int nseen = 0;
    while (fgets(line, sizeof(line), in)) {
        double t;
        unsigned long job;
        char name[32];
        if (sscanf(line, "%lf,%*u,%lu,%31[^,]", &t, &job, name) != 3 || strcmp(name, cls) != 0)
            continue;
        tmax = t > tmax ? t : tmax;
    }
    rewind(in);
    while (fgets(line, sizeof(line), in)) {
        /* Empty fields are "unlimited": split by hand, sscanf stops there. */
        char *f[8], *p = line;
        int nf = 0;
        while (nf < 8 && p)
            f[nf++] = strsep(&p, ",\n");
        if (nf < 8 || strcmp(f[3], cls) != 0)
            continue;
        double t = atof(f[0]);
        unsigned long job = strtoul(f[2], NULL, 10);
        if (nf < 8 || (last > 0 && t < tmax - last))
            continue;
        bool want = njobs == 0;
        for (int i = 0; i < njobs; i++)
            want |= jobs[i] == job;
        if (!want)
            continue;
        if (t0 < 0)
            t0 = t;
        int k = 0;
        while (k < nseen && seen[k] != job)
            k++;
        if (k == nseen && nseen < 256)
            seen[nseen++] = job;
        char path[64 + sizeof(dir)];
        snprintf(path, sizeof(path), "%s/%lu.dat", dir, job);
        FILE *d = fopen(path, "ae");
        if (d) {
            fprintf(d, "%.3f %s %s\n", t - t0, *f[7] ? f[7] : "NaN", *f[6] ? f[6] : "NaN");
            fclose(d);
        }
    }
    fclose(in);
    if (!nseen)
        return fail("%s: no records of class %s%s", records, cls, njobs ? " for those jobs" : "");
    char script[4096 + sizeof(dir) * 2];
    int n = snprintf(script, sizeof(script),
                     "set terminal pngcairo size 1200,600\nset output '%s'\n"
                     "set title 'adafs-qos: %s per job (solid: usage, dashed: allocation)'\n"
                     "set xlabel 'seconds'\nset ylabel '%s per second'\nset key outside\n"
                     "set grid\nplot ", out, cls, qos_class_is_data(qos_class_from_name(cls)) ? "bytes"
                                                                                          : "operations");
    for (int k = 0; k < nseen && n < (int)sizeof(script) - 256; k++)
        n += snprintf(script + n, sizeof(script) - (size_t)n,
                      "%s'%s/%lu.dat' using 1:2 with lines lw 2 lc %d title 'job %lu usage', "
                      "'%s/%lu.dat' using 1:3 with lines dt 2 lc %d title 'job %lu allocation'",
                      k ? ", " : "", dir, seen[k], k + 1, seen[k], dir, seen[k], k + 1, seen[k]);
    snprintf(script + n, sizeof(script) - (size_t)n, "\n");
    char gp[sizeof(dir) + 16];
    snprintf(gp, sizeof(gp), "%s/plot.gp", dir);
    FILE *g = fopen(gp, "we");
    if (!g)
        return fail("%s: %s", gp, strerror(errno));
    fputs(script, g);
    fclose(g);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        fprintf(stderr, "adafs-qos: gnuplot: %s (Debian: apt-get install gnuplot-nox)\n", strerror(errno));
        _exit(127);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    for (int k = 0; k < nseen; k++) {
        char path[64 + sizeof(dir)];
        snprintf(path, sizeof(path), "%s/%lu.dat", dir, seen[k]);
        unlink(path);
    }
    unlink(gp);
    rmdir(dir);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        return fail("gnuplot failed");
    printf("%s: %d jobs, class %s\n", out, nseen, cls);
    return 0;
}

/* TaskProlog: puts the task under QoS (and the interposer) unless it is
 * already. Slurm reads "export NAME=VALUE" lines from its output. */
static int taskprolog(void)
{
    if (!conf.paths)
        return 0;   /* QoS off: nothing to add */
    char *env[3];
    int n = qos_conf_job_env(&conf, env);
    for (int i = 0; i < n; i++) {
        printf("export %s\n", env[i]);
        free(env[i]);
    }
    const char *pre = getenv("LD_PRELOAD");
    if (!pre || !strstr(pre, "libadafs_preload"))
        printf("export LD_PRELOAD=%s%s%s\n", conf.preload, pre && *pre ? " " : "", pre ? pre : "");
    return 0;
}

int main(int argc, char **argv)
{
    const char *sc = getenv("SLURM_CONF");
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", sc && *sc ? sc : "/etc/slurm/slurm.conf");
    snprintf(conf_path, sizeof(conf_path), "%s/burst_buffer.conf", dirname(buf));
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "--config") == 0) {
        snprintf(conf_path, sizeof(conf_path), "%s", argv[2]);
        i = 3;
    }
    if (i >= argc || strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
        usage(i >= argc ? stderr : stdout);
        return i >= argc ? 2 : 0;
    }
    const char *cmd = argv[i];
    /* A mistyped command is named before the configuration is read. */
    if (strcmp(cmd, "status") != 0 && strcmp(cmd, "set") != 0 && strcmp(cmd, "plot") != 0 &&
        strcmp(cmd, "taskprolog") != 0) {
        fprintf(stderr, "adafs-qos: unknown command '%s' (known: status, set, plot, "
                "taskprolog)\n", cmd);
        usage(stderr);
        return 2;
    }
    char err[1024];
    if (qos_conf_load(conf_path, &conf, err, sizeof(err)) < 0)
        return fail("%s", err);
    if (strcmp(cmd, "status") == 0 && (argc - i == 1 || (argc - i == 2 && !strcmp(argv[i + 1], "--json"))))
        return status(argc - i == 2);
    if (strcmp(cmd, "status") == 0)
        return usage_error("status: unexpected '%s' (status takes only --json)",
                           strcmp(argv[i + 1], "--json") == 0 ? argv[i + 2] : argv[i + 1]);
    if (strcmp(cmd, "taskprolog") == 0 && argc - i > 1)
        return usage_error("taskprolog: unexpected '%s' (it takes no arguments)", argv[i + 1]);
    if (strcmp(cmd, "set") == 0)
        return set(argc - i - 1, argv + i + 1);
    if (strcmp(cmd, "plot") == 0)
        return plot(argc - i, argv + i);
    if (strcmp(cmd, "taskprolog") == 0 && argc - i == 1)
        return taskprolog();
    usage(stderr);
    return 2;
}
