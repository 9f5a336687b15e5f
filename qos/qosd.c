/* adafs-qosd: the cluster-wide controller of adafs' I/O quality of
 * service toward the parallel file system (doc/qos.md). One per cluster,
 * beside slurmctld, as slurmctld's user:
 *
 *   adafs-qosd [--config FILE] [--log FILE] [--log-level LEVEL]
 *              [--pidfile FILE] [--foreground]
 *
 * Each period: take each busy node's usage of the period just ended (its
 * agent's answer to the last limits, due now), reread burst_buffer.conf
 * if it changed, ask slurmctld what runs (world.h), compute every job's
 * limits on every node (ctl.h) and send them, the next usage due at the
 * period's end (qos_agents.h: two messages per node and period),
 * then write the status (for bbstat and adafs-qos), a line per job and
 * class to the records, and the state (state.h). adafs-qos talks to it
 * over <state dir>/qosd.sock (root and this daemon's user only). If qosd
 * stops, every agent keeps the limits it was last sent. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "ctl.h"
#include "daemon.h"
#include "fileio.h"
#include "log.h"
#include "munge_auth.h"
#include "net.h"
#include "qos_agents.h"
#include "qos_conf.h"
#include "qos_proto.h"
#include "relays.h"
#include "rpc_io.h"
#include "state.h"
#include "world.h"

#define RECORDS_MAX (64ll << 20)   /* records.csv is rotated past this */
#define CONTROL_TIMEOUT_MS 1000

static struct qos_conf conf;
static char conf_path[4096];
static struct timespec conf_mtime;
static struct state st;
static struct world world;
static struct agents ag;
static struct groups groups;
static struct ctl *ctl;
static struct session_auth munge;
static char path_state[4200], path_status[4200], path_records[4200], path_socket[4200];
static bool jobs_dirty = true, restored;
static struct qos_status last_status;
static struct log_limit slurm_log = LOG_LIMIT_INIT(3, 60000);
static struct log_limit peer_log = LOG_LIMIT_INIT(10, 60000);

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "adafs-qosd: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static uint32_t period_ms(void)
{
    return st.period_ms ? st.period_ms : conf.period_ms;
}

static struct ctl_settings settings(void)
{
    struct ctl_settings s = { .policy = st.policy >= 0 ? st.policy : conf.policy,
                              .capacity = conf.capacity, .dflt = conf.dflt,
                              .agent_timeout_ms = conf.agent_timeout_ms };
    if (st.capacity_set)
        qos_limits_merge(&s.capacity, &st.capacity);
    return s;
}

static void set_paths(void)
{
    snprintf(path_state, sizeof(path_state), "%s/state", conf.state_dir);
    snprintf(path_status, sizeof(path_status), "%s/status", conf.state_dir);
    snprintf(path_records, sizeof(path_records), "%s/records.csv", conf.state_dir);
    snprintf(path_socket, sizeof(path_socket), "%s/qosd.sock", conf.state_dir);
}

static bool same_string(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Rereads burst_buffer.conf when it changed: its values replace what
 * adafs-qos set changed (the file is the later word). */
static void reload_if_changed(bool force)
{
    struct stat sb;
    if (stat(conf_path, &sb) < 0)
        return;
    if (!force && sb.st_mtim.tv_sec == conf_mtime.tv_sec && sb.st_mtim.tv_nsec == conf_mtime.tv_nsec)
        return;
    conf_mtime = sb.st_mtim;
    struct qos_conf next;
    char err[1024];
    if (qos_conf_load(conf_path, &next, err, sizeof(err)) < 0) {
        log_error("%s; keeping the settings in force", err);
        qos_conf_free(&next);
        return;
    }
    if (strcmp(next.state_dir, conf.state_dir) != 0)
        log_warn("%s: AdafsQosStateDir changed to %s: takes effect at restart", conf_path, next.state_dir);
    free(next.state_dir);
    next.state_dir = strdup(conf.state_dir);
    /* The agents' sessions hold the socket name given at start (munge). */
    if (!same_string(next.munge_socket, conf.munge_socket))
        log_warn("%s: AdafsMungeSocket changed to %s: takes effect at restart", conf_path,
                 next.munge_socket ? next.munge_socket : "munge's default");
    free(next.munge_socket);
    next.munge_socket = conf.munge_socket;
    conf.munge_socket = NULL;
    qos_conf_free(&conf);
    conf = next;
    st.policy = -1;
    st.period_ms = 0;
    st.capacity_set = false;
    char cap[1024];
    qos_limits_format(&conf.capacity, cap, sizeof(cap));
    log_info("settings from %s: policy %s, period %u ms, capacity %s", conf_path,
             qos_policy_name(conf.policy), conf.period_ms, cap[0] ? cap : "none");
    jobs_dirty = true;
}

/* Jobs to the controller, with limits set by adafs-qos set over their
 * directives', and after a restart the limits saved. */
static void apply_jobs(void)
{
    struct ctl_job_spec *specs = malloc((world.njobs ? world.njobs : 1) * sizeof(*specs));
    uint32_t *ids = malloc((world.njobs ? world.njobs : 1) * sizeof(*ids));
    if (!specs || !ids) {
        free(specs);
        free(ids);
        return;
    }
    for (size_t i = 0; i < world.njobs; i++)
        ids[i] = world.jobs[i].id;
    /* Limits set for a job that ended go with it (job ids come back). */
    state_prune_jobs(&st, ids, world.njobs);
    free(ids);
    for (size_t i = 0; i < world.njobs; i++) {
        specs[i] = world.jobs[i];
        const struct qos_limits *set = state_job(&st, specs[i].id);
        if (set)
            qos_limits_merge(&specs[i].asked, set);
    }
    if (ctl_set_jobs(ctl, specs, world.njobs, world.nnodes) < 0)
        log_error("out of memory taking %zu jobs", world.njobs);
    free(specs);
    if (!restored) {
        for (uint32_t i = 0; i < st.nlimits; i++) {
            int node = world_node(&world, st.limits[i].node);
            if (node >= 0)
                ctl_restore_limits(ctl, st.limits[i].job_id, (uint32_t)node, &st.limits[i].limits);
        }
        restored = true;
    }
    jobs_dirty = false;
}

static void collect_limit(void *arg, uint32_t job_id, uint32_t node, const struct qos_limits *l)
{
    struct state *s = arg;
    struct state_limit *e = &s->limits[s->nlimits++];
    e->job_id = job_id;
    snprintf(e->node, sizeof(e->node), "%s", node < world.nnodes ? world.nodes[node].name : "");
    e->limits = *l;
}

static void save_state(void)
{
    size_t n = 0;
    for (size_t i = 0; i < world.njobs; i++)
        n += world.jobs[i].nnodes;
    free(st.limits);
    st.limits = calloc(n ? n : 1, sizeof(*st.limits));
    st.nlimits = 0;
    if (st.limits)
        ctl_each_limit(ctl, collect_limit, &st);
    char err[600];
    if (state_save(path_state, &st, err, sizeof(err)) < 0)
        log_limited(&slurm_log, LOG_LEVEL_ERROR, "cannot save the state: %s", err);
}

static void write_status(uint64_t cycle)
{
    free(last_status.jobs);
    struct ctl_settings s = settings();
    last_status = (struct qos_status){ .cycle = cycle, .time_ms = (uint64_t)time(NULL) * 1000,
                                       .period_ms = period_ms(), .capacity = s.capacity };
    snprintf(last_status.policy, sizeof(last_status.policy), "%s", qos_policy_name(s.policy));
    for (size_t i = 0; i < ag.n; i++)
        if (ag.a[i].active) {
            last_status.agents++;
            last_status.agents_up += ag.a[i].have_report;
        }
    ctl_status(ctl, &last_status);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, QOS_STATUS_MAGIC);
    qos_status_put(&w, &last_status);
    /* Readable by slurmctld's user (the plugin's bbstat): the daemon's. */
    int rc = rpc_writer_ok(&w) ? fileio_replace(path_status, w.data, w.len, 0640) : -ENOMEM;
    if (rc < 0)
        log_limited(&slurm_log, LOG_LEVEL_ERROR, "cannot write %s: %s", path_status, strerror(-rc));
    rpc_writer_free(&w);
}

static void append_records(void)
{
    struct stat sb;
    if (stat(path_records, &sb) == 0 && sb.st_size > RECORDS_MAX) {
        char old[4300];
        snprintf(old, sizeof(old), "%s.1", path_records);
        rename(path_records, old);
    }
    int fd = open(path_records, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "a");
    if (!f) {
        if (fd >= 0)
            close(fd);
        log_limited(&slurm_log, LOG_LEVEL_ERROR, "cannot append to %s: %s", path_records, strerror(errno));
        return;
    }
    if (ftell(f) == 0)
        fprintf(f, "time,cycle,job,class,asked,demand,alloc,usage\n");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double t = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
    for (uint32_t i = 0; i < last_status.njobs; i++) {
        const struct qos_job_status *j = &last_status.jobs[i];
        for (int c = 0; c < QOS_NCLASSES; c++) {
            if (!j->usage[c] && j->alloc[c] == QOS_UNLIMITED)
                continue;   /* nothing to draw */
            fprintf(f, "%.3f,%llu,%u,%s", t, (unsigned long long)last_status.cycle, j->job_id,
                    qos_class_name(c));
            uint64_t v[4] = { j->asked[c], j->demand[c], j->alloc[c], j->usage[c] };
            for (int k = 0; k < 4; k++)
                if (v[k] == QOS_UNLIMITED || (k == 0 && v[k] == QOS_NOT_GIVEN))
                    fprintf(f, ",");
                else
                    fprintf(f, ",%llu", (unsigned long long)v[k]);
            fprintf(f, "\n");
        }
    }
    fclose(f);
}

/* When this period ends (net_now_ms clock): the agents' reports are due. */
static int64_t period_end;

/* Computes every job's limits from the usage taken and sends each busy
 * agent its message (a relay its group's), its report due at the
 * period's end. Without relays (a change pushed mid-period: a relay
 * serves one group cycle at a time), their groups hear the change at the
 * next period, within one. */
static void send_limits(uint64_t n, bool relays)
{
    int64_t now = net_now_ms();
    struct ctl_settings s = settings();
    ctl_compute(ctl, &s, now);
    int64_t due = period_end - now;
    uint32_t answer_in = due < 0 ? 0 : due > QOS_ANSWER_MAX_MS ? QOS_ANSWER_MAX_MS : (uint32_t)due;
    for (size_t i = 0; i < ag.n && i < world.nnodes; i++) {
        struct agent *a = &ag.a[i];
        if (a->busy && a->op != AGENT_QOS_GROUP)
            ctl_node_message(ctl, (uint32_t)i, n, answer_in, agents_message(a));
        else if (a->op == AGENT_QOS_GROUP && !relays)
            a->busy = false;   /* for this send only: relays_plan sets it again */
    }
    if (relays)
        relays_messages(&groups, &ag, ctl, n, answer_in, relays_margin_ms(period_ms()));
    agents_send(&ag, now + (int64_t)period_ms() * 4 / 10);
}

static void cycle(uint64_t n, int64_t start)
{
    /* The answers to the last limits, due now: the usage of the period
     * just ended, before anything else takes time. */
    agents_receive(&ag, start + (int64_t)period_ms() * 4 / 10);
    relays_take(&groups, &ag, net_now_ms());
    reload_if_changed(false);
    char err[1024];
    int changed = world_refresh(&world, &conf, err, sizeof(err));
    if (changed < 0)
        log_limited(&slurm_log, LOG_LEVEL_WARN, "%s", err);
    int moved = changed > 0 ? agents_sync(&ag, world.nodes, world.nnodes) : 0;
    if (moved < 0)
        log_error("out of memory taking %zu nodes", world.nnodes);
    /* Regrouped only when the nodes changed, not their jobs: a group
     * keeps its relay and epoch (its list is not sent again). */
    if ((moved > 0 || groups.size != conf.relay_group || groups.nnodes != ag.n) &&
        groups_sync(&groups, ag.n, conf.relay_group) < 0)
        log_error("out of memory making groups of %u of %zu nodes", conf.relay_group, ag.n);
    if (changed > 0 || jobs_dirty)
        apply_jobs();
    for (size_t i = 0; i < ag.n && i < world.nnodes; i++) {
        struct agent *a = &ag.a[i];
        /* A node that had jobs hears a few empty cycles, so its agent
         * drops their budgets. */
        if (ctl_node_busy(ctl, (uint32_t)i))
            a->busy_cycle = n;
        a->active = a->busy_cycle && n - a->busy_cycle <= 5;
        if (a->active && a->have_report) {
            /* The next node's pairs are fetched while this one's report
             * is taken: the cache misses overlap (ctl.h). */
            if (i + 1 < ag.n && i + 1 < world.nnodes)
                ctl_prefetch_report(ctl, (uint32_t)i + 1);
            ctl_take_report(ctl, (uint32_t)i, &a->report, a->answered_ms);
        }
    }
    /* Who gets what: a relay its group's message, the others their own. */
    relays_plan(&groups, &ag, net_now_ms());
    for (size_t i = 0; i < ag.n; i++) {
        struct agent *a = &ag.a[i];
        if (!a->busy && a->connected && !a->pending)
            agents_close(a);   /* its agent would close it idle: a new one when it is busy again */
    }
    send_limits(n, true);
    for (size_t i = 0; i < ag.n; i++) {
        struct agent *a = &ag.a[i];
        bool ok = !a->err[0];
        /* One line when an agent stops answering, one when it is back. */
        if (!ok && !a->failing)
            log_warn("node %s: agent %s:%d: %s", a->name, a->host, a->port, a->err);
        else if (ok && a->failing && a->active)
            log_info("node %s: agent answers again", a->name);
        a->failing = !ok && (a->active || a->busy || a->failing);
    }
    st.cycle = n;
    write_status(n);
    append_records();
    save_state();
}

/* One request of adafs-qos on the control socket. */
static int control_set(struct rpc_reader *r, char *msg, size_t len)
{
    const char *what = rpc_get_str(r);
    uint32_t job = rpc_get_u32(r);
    const char *value = rpc_get_str(r);
    if (!rpc_reader_done(r)) {
        snprintf(msg, len, "malformed set request");
        return -EBADMSG;
    }
    char why[512];
    if (strcmp(what, "policy") == 0) {
        int p = qos_policy_from_name(value);
        if (p < 0) {
            snprintf(msg, len, "policy %s: expected static, priority, proportional or psfa", value);
            return -EINVAL;
        }
        st.policy = p;
        snprintf(msg, len, "policy is now %s", qos_policy_name(p));
    } else if (strcmp(what, "capacity") == 0) {
        struct qos_limits l;
        if (qos_limits_parse(value, &l, why, sizeof(why)) < 0) {
            snprintf(msg, len, "capacity %s: %s", value, why);
            return -EINVAL;
        }
        if (!qos_limits_any(&l)) {
            snprintf(msg, len, "capacity %s: no class given", value);
            return -EINVAL;
        }
        if (!st.capacity_set)
            st.capacity = conf.capacity;
        qos_limits_merge(&st.capacity, &l);
        st.capacity_set = true;
        char text[512];
        qos_limits_format(&st.capacity, text, sizeof(text));
        snprintf(msg, len, "capacity is now %s", text);
    } else if (strcmp(what, "period") == 0) {
        char *end;
        double secs = strtod(value, &end);
        if (*end || secs < 0.1 || secs > 60) {
            snprintf(msg, len, "period %s: expected seconds from 0.1 to 60", value);
            return -EINVAL;
        }
        st.period_ms = (uint32_t)lround(secs * 1000);
        snprintf(msg, len, "period is now %u ms", st.period_ms);
    } else if (strcmp(what, "job") == 0) {
        struct qos_limits l;
        if (qos_limits_parse(value, &l, why, sizeof(why)) < 0) {
            snprintf(msg, len, "job %u: %s", job, why);
            return -EINVAL;
        }
        if (state_set_job(&st, job, &l) < 0) {
            snprintf(msg, len, "out of memory");
            return -ENOMEM;
        }
        jobs_dirty = true;
        bool running = false;
        for (uint32_t i = 0; i < last_status.njobs && !running; i++)
            running = last_status.jobs[i].job_id == job;
        snprintf(msg, len, "job %u: limits %s%s", job, qos_limits_any(&l) ? "set" : "cleared",
                 running ? "" : " (it is not under QoS now: a mistyped job id? they apply if"
                 " it runs)");
    } else {
        snprintf(msg, len, "cannot set '%s': policy, capacity, period or job", what);
        return -EINVAL;
    }
    log_info("adafs-qos set %s: %s", what, msg);
    return 0;
}

/* One request on the control socket; whether it changed a setting. */
static bool serve_control(int lfd)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return false;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    struct rpc_header h;
    uint8_t *payload = NULL;
    net_set_timeouts(fd, CONTROL_TIMEOUT_MS);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
        (cred.uid != 0 && cred.uid != geteuid())) {
        log_limited(&peer_log, LOG_LEVEL_WARN, "control socket: uid %d refused (only root and"
                    " uid %u)", clen ? (int)cred.uid : -1, (unsigned)geteuid());
        close(fd);
        return false;
    }
    if (rpc_recv(fd, &h, &payload, 1 << 16, net_now_ms() + CONTROL_TIMEOUT_MS) < 0) {
        close(fd);
        return false;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    struct rpc_reader r;
    rpc_reader_init(&r, payload, h.length);
    int rc = 0;
    if (h.opcode == QOSCTL_STATUS) {
        qos_status_put(&w, &last_status);
    } else if (h.opcode == QOSCTL_SET) {
        char msg[1024];
        rc = control_set(&r, msg, sizeof(msg));
        rpc_put_str(&w, msg);
    } else {
        rc = -EOPNOTSUPP;
        rpc_put_str(&w, "unknown request");
    }
    struct rpc_header resp = { .opcode = h.opcode, .id = h.id, .status = rc };
    if (rpc_writer_ok(&w))
        rpc_send(fd, &resp, w.data, w.len, net_now_ms() + CONTROL_TIMEOUT_MS);
    rpc_writer_free(&w);
    free(payload);
    close(fd);
    return h.opcode == QOSCTL_SET && rc == 0;
}

/* A change made by adafs-qos set goes out at once, not a period later:
 * limits computed from the usage already taken this cycle (each agent
 * then owes two answers at the period's end; the last is kept). */
static void push(uint64_t n)
{
    if (jobs_dirty)
        apply_jobs();
    send_limits(n, false);
    for (size_t i = 0; i < ag.n; i++)
        if (ag.a[i].op == AGENT_QOS_GROUP)
            ag.a[i].busy = true;   /* the relays', cleared for this send */
    write_status(n);
    save_state();
}

static void usage(FILE *out)
{
    fprintf(out, "usage: adafs-qosd [--config FILE] [--log FILE] [--log-level LEVEL]\n"
                 "                  [--pidfile FILE] [--foreground]\n");
}

static void default_config(void)
{
    /* burst_buffer.conf is beside slurm.conf, as slurmctld finds it. */
    const char *sc = getenv("SLURM_CONF");
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", sc && *sc ? sc : "/etc/slurm/slurm.conf");
    snprintf(conf_path, sizeof(conf_path), "%s/burst_buffer.conf", dirname(buf));
}

int main(int argc, char **argv)
{
    const char *log_path = NULL, *pidfile = NULL;
    int level = LOG_LEVEL_INFO;
    bool foreground = false;
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' }, { "log", required_argument, NULL, 'L' },
        { "log-level", required_argument, NULL, 'v' }, { "pidfile", required_argument, NULL, 'p' },
        { "foreground", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    default_config();
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': snprintf(conf_path, sizeof(conf_path), "%s", optarg); break;
        case 'L': log_path = optarg; break;
        case 'v':
            if ((level = log_level_parse(optarg)) < 0)
                die("--log-level %s: use error, warn, info or debug", optarg);
            break;
        case 'p': pidfile = optarg; break;
        case 'f': foreground = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "adafs-qosd: unexpected '%s' (it takes options only)\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    char err[1024];
    if (qos_conf_load(conf_path, &conf, err, sizeof(err)) < 0)
        die("%s", err);
    if (!conf.paths)
        die("%s: AdafsQosPaths is not set: I/O quality of service is off, nothing to control",
            conf_path);
    struct stat sb;
    if (stat(conf_path, &sb) == 0)
        conf_mtime = sb.st_mtim;
    if (mkdir(conf.state_dir, 0750) < 0 && errno != EEXIST)
        die("AdafsQosStateDir %s: %s", conf.state_dir, strerror(errno));
    set_paths();
    if (log_path && log_open("adafs-qosd", (enum log_level)level, log_path) < 0)
        die("--log %s: %s", log_path, strerror(errno));
    log_set_level((enum log_level)level);
    int lfd = net_listen_unix(path_socket, 16);
    if (lfd < 0)
        die("%s: %s%s", path_socket, strerror(-lfd),
            lfd == -EACCES ? " (AdafsQosStateDir must be writable by adafs-qosd's user:"
            " run it as slurmctld's user, as the adafs-qosd unit does)" : "");
    chmod(path_socket, 0660);
    int rc = state_load(path_state, &st, err, sizeof(err));
    if (rc < 0)
        log_error("%s; starting afresh", err);
    else if (rc == 0)
        log_info("state of cycle %llu restored: %u job limits, %u node limits",
                 (unsigned long long)st.cycle, st.njobs, st.nlimits);
    if (daemon_start(foreground, pidfile, err, sizeof(err)) < 0)
        die("%s", err);
    int sfd = daemon_signals((const int[]){ SIGTERM, SIGINT, SIGHUP, 0 });
    slurm_init(NULL);
    munge_auth_init(&munge, conf.munge_socket);
    ag.auth = &munge;
    ctl = ctl_new();
    if (sfd < 0 || !ctl)
        die("cannot start: %s", strerror(sfd < 0 ? -sfd : errno));
    char cap[1024];
    qos_limits_format(&conf.capacity, cap, sizeof(cap));
    log_info("controlling I/O toward %s: policy %s, period %u ms, capacity %s, state in %s",
             conf.paths, qos_policy_name(settings().policy), period_ms(), cap[0] ? cap : "none",
             conf.state_dir);
    for (uint64_t n = st.cycle + 1;; n++) {
        int64_t start = net_now_ms();
        period_end = start + period_ms();
        cycle(n, start);
        for (;;) {
            int64_t left = period_end - net_now_ms();
            if (left <= 0)
                break;
            struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = lfd, .events = POLLIN } };
            if (poll(p, 2, (int)left) <= 0)
                continue;
            if (p[0].revents) {
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGHUP) {
                    reload_if_changed(true);
                    continue;
                }
                log_info("stopping; agents keep the limits they were last sent");
                save_state();
                unlink(path_socket);
                if (pidfile)
                    unlink(pidfile);
                return 0;
            }
            if (p[1].revents && serve_control(lfd))
                push(n);
        }
    }
}
