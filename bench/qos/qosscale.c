/* qosscale: one control cycle of adafs-qosd at scale (issue 24, acceptance
 * 5), with simulated agents.
 *
 *   qosscale [NODES JOBS MAXNODES CYCLES [io [relay [GROUP]]]]   (1000 1000 16 200, GROUP 32)
 *
 * Jobs of 1..MAXNODES nodes (sizes and places fixed by a seeded
 * generator) on NODES nodes. Each cycle every busy node's agent answers
 * the last limits with its report (its jobs' usage totals, some held back
 * at their limit), qosd computes and sends each busy node its limits
 * (AGENT_QOS), the next report due at the period's end (qos_proto.h: two
 * messages per busy node). What is timed is qosd's part: decoding every
 * report, taking it, computing every job's limits with the policy and
 * encoding every node's message (into a buffer kept from cycle to cycle,
 * after room for the session's head, as adafs-qosd does). qosd's part of
 * the sessions' cryptography is timed apart: per busy node, in a session
 * of its own, receiving the report into a buffer of its own (the one
 * allocation and copy of rpc_recv), opening it there and sealing the
 * limits where they were written (the agent's side seals and opens
 * untimed), with each cipher of agent_session.h in turn in the same cycle.
 * qosd's ends of the sessions lie together, as in its table of agents. Prints the median, 10th and 90th percentile CPU time per cycle,
 * the messages and bytes per cycle.
 * With "io", a second controller also runs every cycle as adafs-qosd
 * does, over real sessions: each busy node's report sealed by its agent
 * (untimed) and sent over a TCP connection on loopback, and qosd's whole
 * part timed in one thread: receiving each report (agent_session_recv:
 * its system calls, its buffer, opening), decoding and taking it,
 * computing, writing each node's limits and sending them sealed
 * (agent_session_send_in_place). That is every CPU cost of qosd's cycle
 * but its worker threads' start (adafs-qosd spreads the waiting over 16;
 * loopback also charges the receiver's TCP processing to the sender).
 * With "io relay", that controller runs through relays instead (doc/qos.md,
 * "Relays per group of nodes"): groups of GROUP nodes, qosd's own code
 * (qos/groups.c, qos/relays.c, common/qos_agents.c with its kept worker
 * threads) planning, writing each relay's AGENT_QOS_GROUP, sending it,
 * receiving, checking and taking each group report, over one loopback
 * session per relay; timed in the process's CPU time (qosd's thread and
 * its kept threads: every CPU cost of qosd's cycle). The relays
 * answer untimed, except the first group's: a stand-in relay doing a
 * relay's message work (receive and decode the group message, forward
 * each other busy member its body sealed over a session of its own,
 * receive, open and decode each member's report, write and seal the
 * group report) is timed apart as the relay's own cost per period (its
 * members' agents answer untimed). */
#include <errno.h>
#include <sodium.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "agent_session.h"
#include "ctl.h"
#include "groups.h"
#include "log.h"
#include "net.h"
#include "qos_agents.h"
#include "qos_proto.h"
#include "relays.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Every node's session with one cipher: qosd's ends together, the
 * agents' apart. */
struct links {
    struct session_keys *q, *a;
};

static void links_init(struct links *l, size_t n, int cipher)
{
    l->q = calloc(n, sizeof(*l->q));
    l->a = calloc(n, sizeof(*l->a));
    if (!l->q || !l->a)
        abort();
    for (size_t i = 0; i < n; i++) {
        randombytes_buf(l->q[i].tx, sizeof(l->q[i].tx));
        randombytes_buf(l->q[i].rx, sizeof(l->q[i].rx));
        memcpy(l->a[i].rx, l->q[i].tx, sizeof(l->a[i].rx));
        memcpy(l->a[i].tx, l->q[i].rx, sizeof(l->a[i].tx));
        if (session_keys_use(&l->q[i], cipher) < 0 || session_keys_use(&l->a[i], cipher) < 0)
            abort();
    }
}

static void seal_or_die(struct session_keys *k, uint16_t op, const struct rpc_writer *w,
                        uint8_t **out, size_t *len)
{
    if (session_seal(k, op, 0, w->data, w->len, out, len) < 0)
        abort();
}

static void open_or_die(struct session_keys *k, const uint8_t *in, size_t len)
{
    struct session_msg m;
    if (session_open(k, in, len, &m) < 0)
        abort();
    free(m.plain);
}

/* qosd's cryptography for one cycle over links (CPU seconds): the
 * agents' reports are sealed first, untimed; then per busy node qosd
 * opens the report and seals the limits; the agents open the limits
 * after, untimed. */
struct sealed {
    uint8_t *report;
    size_t report_len;
    struct rpc_writer limits;    /* room for the session's head, the limits */
};

static double crypto_cycle(struct ctl *c, size_t nnodes, struct links *links, struct sealed *sl,
                           const struct rpc_writer *encoded, const struct rpc_writer *limits);

/* The "io" mode: a controller of its own, and per busy node qosd's and
 * the agent's ends of a session over a loopback TCP connection. */
struct io {
    struct ctl *c;
    struct agent_session *q, *a;
    struct rpc_writer *limits;
    struct qos_report got;
    uint32_t got_cap;
};

static void io_init(struct io *io, const struct ctl_job_spec *jobs, size_t njobs, size_t nnodes,
                    const struct ctl *busy_in)
{
    io->c = ctl_new();
    if (!io->c || ctl_set_jobs(io->c, jobs, njobs, nnodes) < 0)
        abort();
    struct links l;
    links_init(&l, nnodes, SESSION_CIPHER_AES256GCM);
    io->q = calloc(nnodes, sizeof(*io->q));
    io->a = calloc(nnodes, sizeof(*io->a));
    io->limits = calloc(nnodes, sizeof(*io->limits));
    if (!io->q || !io->a || !io->limits)
        abort();
    char err[256];
    int port, lfd = net_listen("127.0.0.1", 0, 1024, &port, err, sizeof(err));
    if (lfd < 0) {
        fprintf(stderr, "qosscale: %s\n", err);
        exit(1);
    }
    for (size_t n = 0; n < nnodes; n++) {
        io->q[n].fd = io->a[n].fd = -1;
        rpc_writer_init(&io->limits[n], NULL, 0);
        if (!ctl_node_busy(busy_in, (uint32_t)n))
            continue;
        io->q[n].fd = net_connect("127.0.0.1", port, 5000, err, sizeof(err));
        io->a[n].fd = accept(lfd, NULL, NULL);
        if (io->q[n].fd < 0 || io->a[n].fd < 0 || net_set_nodelay(io->a[n].fd) < 0) {
            fprintf(stderr, "qosscale: a loopback connection: %s (raise the open files limit?)\n",
                    io->q[n].fd < 0 ? err : strerror(errno));
            exit(1);
        }
        io->q[n].keys = l.q[n];
        io->a[n].keys = l.a[n];
    }
    close(lfd);
    free(l.q);
    free(l.a);
}

/* One cycle of qosd over the sessions (CPU seconds of qosd's part). */
static double io_cycle(struct io *io, const struct ctl_settings *s, size_t nnodes,
                       const struct rpc_writer *encoded, uint64_t cycle, int64_t now)
{
    for (size_t n = 0; n < nnodes; n++)   /* the agents answer: untimed */
        if (io->a[n].fd >= 0 &&
            agent_session_send(&io->a[n], AGENT_QOS, 0, encoded[n].data, encoded[n].len, 0) < 0)
            abort();
    double t0 = cpu_s();
    for (size_t n = 0; n < nnodes; n++) {
        if (io->q[n].fd < 0)
            continue;
        if (n + 1 < nnodes)
            ctl_prefetch_report(io->c, (uint32_t)n + 1);
        struct session_msg m;
        if (agent_session_recv(&io->q[n], &m, AGENT_MAX_BODY, 0) < 0)
            abort();
        struct rpc_reader r;
        rpc_reader_init(&r, m.body, m.len);
        if (qos_report_get_into(&r, &io->got, &io->got_cap) == 0)
            ctl_take_report(io->c, (uint32_t)n, &io->got, now);
        free(m.plain);
    }
    ctl_compute(io->c, s, now);
    for (size_t n = 0; n < nnodes; n++) {
        if (io->q[n].fd < 0)
            continue;
        struct rpc_writer *w = &io->limits[n];
        w->len = 0;
        rpc_put_raw(w, NULL, SESSION_OVERHEAD);
        ctl_node_message(io->c, (uint32_t)n, cycle, 990, w);
        if (agent_session_send_in_place(&io->q[n], AGENT_QOS, 0, w->data, w->len - SESSION_OVERHEAD, 0) < 0)
            abort();
    }
    double d = cpu_s() - t0;
    for (size_t n = 0; n < nnodes; n++) {   /* the agents take their limits: untimed */
        struct session_msg m;
        if (io->a[n].fd < 0)
            continue;
        if (agent_session_recv(&io->a[n], &m, AGENT_MAX_BODY, 0) < 0)
            abort();
        free(m.plain);
    }
    return d;
}

/* Both ends of one session over a loopback TCP connection. */
static void session_pair(int lfd, int port, struct agent_session *near, struct agent_session *far)
{
    char err[256];
    struct links l;
    links_init(&l, 1, SESSION_CIPHER_AES256GCM);
    near->fd = net_connect("127.0.0.1", port, 5000, err, sizeof(err));
    far->fd = accept(lfd, NULL, NULL);
    if (near->fd < 0 || far->fd < 0 || net_set_nodelay(far->fd) < 0 || net_set_nodelay(near->fd) < 0) {
        fprintf(stderr, "qosscale: a loopback connection: %s\n", near->fd < 0 ? err : strerror(errno));
        exit(1);
    }
    near->keys = l.q[0];
    far->keys = l.a[0];
    free(l.q);
    free(l.a);
}

/* The "io relay" mode: qosd's table of agents (only the relays' with
 * sessions), its groups, and the relays' ends; the first group's relay
 * with sessions to its members. */
struct relayed {
    struct ctl *c;
    struct agents ag;
    struct groups gs;
    struct agent_session *far;      /* per node: the relay's end of qosd's session */
    struct agent_session *to_m, *m; /* first group: the relay's and each member's ends */
    struct rpc_writer relay_out, fwd;
    struct qos_report got;
    uint32_t got_cap;
    size_t relays, direct;
    double own_thread;              /* the last cycle's CPU in qosd's own thread */
};

static void relayed_init(struct relayed *rl, const struct ctl_job_spec *jobs, size_t njobs,
                         size_t nnodes, uint32_t group, int64_t now)
{
    rl->c = ctl_new();
    if (!rl->c || ctl_set_jobs(rl->c, jobs, njobs, nnodes) < 0)
        abort();
    struct agent_addr *addrs = calloc(nnodes, sizeof(*addrs));
    for (size_t n = 0; n < nnodes; n++) {
        snprintf(addrs[n].name, sizeof(addrs[n].name), "n%05zu", n);
        snprintf(addrs[n].host, sizeof(addrs[n].host), "127.0.0.1");
        addrs[n].port = 6830;
    }
    if (agents_sync(&rl->ag, addrs, nnodes) < 0 || groups_sync(&rl->gs, nnodes, group) < 0)
        abort();
    free(addrs);
    /* Every busy node answered last period: the first busy member of
     * each group with enough busy members relays. */
    for (size_t n = 0; n < nnodes; n++) {
        rl->ag.a[n].active = ctl_node_busy(rl->c, (uint32_t)n);
        rl->ag.a[n].have_report = rl->ag.a[n].active;
    }
    relays_plan(&rl->gs, &rl->ag, now);
    char err[256];
    int port, lfd = net_listen("127.0.0.1", 0, 1024, &port, err, sizeof(err));
    if (lfd < 0) {
        fprintf(stderr, "qosscale: %s\n", err);
        exit(1);
    }
    rl->far = calloc(nnodes, sizeof(*rl->far));
    rl->to_m = calloc(group, sizeof(*rl->to_m));
    rl->m = calloc(group, sizeof(*rl->m));
    for (size_t n = 0; n < nnodes; n++) {
        struct agent *a = &rl->ag.a[n];
        rl->far[n].fd = -1;
        if (!a->busy)
            continue;
        if (a->op == AGENT_QOS_GROUP)
            rl->relays++;
        else
            rl->direct++;
        session_pair(lfd, port, &a->s, &rl->far[n]);
        a->connected = true;
    }
    const struct group *g0 = &rl->gs.g[0];
    for (uint32_t i = 0; i < g0->n; i++) {
        rl->to_m[i].fd = rl->m[i].fd = -1;
        if ((int)(g0->first + i) != g0->relay)
            session_pair(lfd, port, &rl->to_m[i], &rl->m[i]);
    }
    close(lfd);
    rpc_writer_init(&rl->relay_out, NULL, 0);
    rpc_writer_init(&rl->fwd, NULL, 0);
}

/* qosd's messages of cycle cy (relays_messages and the direct ones),
 * sent: timed by the caller. */
static void relayed_send(struct relayed *rl, uint64_t cy)
{
    for (size_t n = 0; n < rl->ag.n; n++) {
        struct agent *a = &rl->ag.a[n];
        if (a->busy && a->op == AGENT_QOS)
            ctl_node_message(rl->c, (uint32_t)n, cy, 990, agents_message(a));
    }
    relays_messages(&rl->gs, &rl->ag, rl->c, cy, 990, 20);
    agents_send(&rl->ag, net_now_ms() + 5000);   /* adafs-qosd's own, its kept threads */
    for (size_t n = 0; n < rl->ag.n; n++)
        if (rl->ag.a[n].busy && rl->ag.a[n].err[0]) {
            fprintf(stderr, "qosscale: send to %s: %s\n", rl->ag.a[n].name, rl->ag.a[n].err);
            exit(1);
        }
}

/* The relays' side of cycle cy (and the direct nodes'): each takes its
 * message and answers. Returns the first group's relay's CPU seconds. */
static double relayed_answer(struct relayed *rl, const struct rpc_writer *encoded)
{
    double relay_cpu = 0;
    static struct qos_group_request req;
    for (size_t n = 0; n < rl->ag.n; n++) {
        struct agent *a = &rl->ag.a[n];
        if (!a->busy)
            continue;
        bool timed = a->op == AGENT_QOS_GROUP && (int)n == rl->gs.g[0].relay;
        double t0 = cpu_s();
        struct session_msg m;
        if (agent_session_recv(&rl->far[n], &m, AGENT_MAX_BODY, 0) < 0)
            abort();
        if (a->op == AGENT_QOS) {   /* a direct node answers its report */
            free(m.plain);
            if (agent_session_send(&rl->far[n], AGENT_QOS, 0, encoded[n].data, encoded[n].len, 0) < 0)
                abort();
            continue;
        }
        const struct group *g = &rl->gs.g[rl->gs.node[n].group];
        struct rpc_reader r;
        rpc_reader_init(&r, m.body, m.len);
        if (qos_group_request_get(&r, &req, g->n) < 0)
            abort();
        struct rpc_writer *out = &rl->relay_out;
        out->len = 0;
        rpc_put_raw(out, NULL, SESSION_OVERHEAD);
        struct qos_group_writer gw;
        qos_group_report_start(&gw, out, req.cycle);
        if (!timed) {   /* untimed: the members' reports as they would come */
            for (uint32_t k = 0; k < req.nparts; k++) {
                qos_group_entry_start(&gw, req.parts[k].index, QOS_MEMBER_REPORTED, "");
                rpc_put_raw(out, encoded[g->first + req.parts[k].index].data,
                            encoded[g->first + req.parts[k].index].len);
                qos_group_entry_end(&gw);
            }
        } else {
            /* Forward each other member its body, sealed where it is
             * written (as the relay's pool does). */
            for (uint32_t k = 0; k < req.nparts; k++) {
                uint32_t i = req.parts[k].index;
                if (g->first + i == n)
                    continue;
                rl->fwd.len = 0;
                rpc_put_raw(&rl->fwd, NULL, SESSION_OVERHEAD);
                rpc_put_raw(&rl->fwd, req.parts[k].body, req.parts[k].len);
                if (agent_session_send_in_place(&rl->to_m[i], AGENT_QOS, 0, rl->fwd.data,
                                                rl->fwd.len - SESSION_OVERHEAD, 0) < 0)
                    abort();
            }
            relay_cpu += cpu_s() - t0;
            /* The members answer: untimed. */
            for (uint32_t k = 0; k < req.nparts; k++) {
                uint32_t i = req.parts[k].index;
                if (g->first + i == n)
                    continue;
                struct session_msg mm;
                if (agent_session_recv(&rl->m[i], &mm, AGENT_MAX_BODY, 0) < 0)
                    abort();
                free(mm.plain);
                if (agent_session_send(&rl->m[i], AGENT_QOS, 0, encoded[g->first + i].data,
                                       encoded[g->first + i].len, 0) < 0)
                    abort();
            }
            t0 = cpu_s();
            for (uint32_t k = 0; k < req.nparts; k++) {
                uint32_t i = req.parts[k].index;
                qos_group_entry_start(&gw, i, QOS_MEMBER_REPORTED, "");
                if (g->first + i == n) {   /* its own node: its report as it is */
                    rpc_put_raw(out, encoded[n].data, encoded[n].len);
                } else {
                    struct session_msg mm;
                    if (agent_session_recv(&rl->to_m[i], &mm, AGENT_MAX_BODY, 0) < 0)
                        abort();
                    struct rpc_reader mr;
                    rpc_reader_init(&mr, mm.body, mm.len);
                    if (qos_report_get_into(&mr, &rl->got, &rl->got_cap) < 0)
                        abort();
                    qos_report_put(out, &rl->got);
                    free(mm.plain);
                }
                qos_group_entry_end(&gw);
            }
        }
        qos_group_report_end(&gw);
        free(m.plain);
        if (agent_session_send_in_place(&rl->far[n], AGENT_QOS_GROUP, 0, out->data,
                                        out->len - SESSION_OVERHEAD, 0) < 0)
            abort();
        if (timed)
            relay_cpu += cpu_s() - t0;
    }
    return relay_cpu;
}

/* qosd's part of one cycle through relays (CPU seconds): the answers
 * taken (agents_receive's work, in one thread), relays_take, the reports
 * taken, compute, relays_plan, the messages written and sent. */
static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double relayed_cycle(struct relayed *rl, const struct ctl_settings *s, uint64_t cy, int64_t now)
{
    /* The process's CPU time: qosd's thread and its kept threads (the
     * relays' side ran before, untimed). */
    double t0 = process_cpu_s(), t0_own = cpu_s();
    agents_receive(&rl->ag, net_now_ms() + 5000);   /* adafs-qosd's own */
    if (relays_take(&rl->gs, &rl->ag, now) != 0)
        abort();
    for (size_t n = 0; n < rl->ag.n; n++) {
        struct agent *a = &rl->ag.a[n];
        if (!a->have_report)
            continue;
        if (n + 1 < rl->ag.n)
            ctl_prefetch_report(rl->c, (uint32_t)n + 1);
        ctl_take_report(rl->c, (uint32_t)n, &a->report, now);
    }
    ctl_compute(rl->c, s, now);
    relays_plan(&rl->gs, &rl->ag, now);
    relayed_send(rl, cy);
    rl->own_thread = cpu_s() - t0_own;
    return process_cpu_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t nnodes = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    size_t njobs = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    uint32_t maxn = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 16;
    int cycles = argc > 4 ? atoi(argv[4]) : 200;
    bool with_io = argc > 5 && strcmp(argv[5], "io") == 0;
    bool with_relay = with_io && argc > 6 && strcmp(argv[6], "relay") == 0;
    uint32_t group = argc > 7 ? (uint32_t)strtoul(argv[7], NULL, 10) : 32;
    if (sodium_init() < 0)
        return 1;
    log_set_level(LOG_LEVEL_WARN);   /* not a line per relay named */
    struct ctl_job_spec *jobs = calloc(njobs, sizeof(*jobs));
    uint32_t *nodes = calloc(njobs * maxn, sizeof(*nodes));
    size_t pairs = 0;
    for (size_t i = 0; i < njobs; i++) {
        uint32_t k = 1 + next_rand() % maxn, first = next_rand() % (uint32_t)nnodes;
        for (uint32_t n = 0; n < k; n++)
            nodes[i * maxn + n] = (first + n) % (uint32_t)nnodes;
        jobs[i] = (struct ctl_job_spec){ .id = (uint32_t)(1000 + i), .uid = 1000 + (uint32_t)(i % 50),
                                         .weight = k, .nnodes = k, .nodes = &nodes[i * maxn] };
        if (i % 5 == 0)
            jobs[i].asked.v[QOS_STAT] = 200 + next_rand() % 2000;
        pairs += k;
    }
    struct ctl *c = ctl_new();
    if (ctl_set_jobs(c, jobs, njobs, nnodes) < 0)
        return 1;
    struct ctl_settings s = { .policy = QOS_POLICY_PSFA, .agent_timeout_ms = 5000 };
    s.capacity.v[QOS_STAT] = 100000;
    s.capacity.v[QOS_OPEN] = 50000;
    s.capacity.v[QOS_WRITE] = 20ull << 30;
    s.capacity.v[QOS_READ] = 40ull << 30;

    /* Each node's report, as its agent would send it: the jobs with
     * pairs on it. Totals grow every cycle. */
    struct qos_report *rep = calloc(nnodes, sizeof(*rep));
    for (size_t i = 0; i < njobs; i++)
        for (uint32_t n = 0; n < jobs[i].nnodes; n++)
            rep[jobs[i].nodes[n]].njobs++;
    for (size_t n = 0; n < nnodes; n++) {
        rep[n].jobs = calloc(rep[n].njobs + 1, sizeof(*rep[n].jobs));
        rep[n].njobs = 0;
    }
    for (size_t i = 0; i < njobs; i++)
        for (uint32_t n = 0; n < jobs[i].nnodes; n++) {
            struct qos_report *r = &rep[jobs[i].nodes[n]];
            r->jobs[r->njobs++] = (struct qos_job_usage){ .job_id = jobs[i].id, .procs = 4 };
        }
    struct rpc_writer *encoded = calloc(nnodes, sizeof(*encoded));
    struct rpc_writer *limits = calloc(nnodes, sizeof(*limits));
    bool aes = session_ciphers() & 1u << SESSION_CIPHER_AES256GCM;
    struct links box, gcm_links, *gcm = aes ? &gcm_links : NULL;
    links_init(&box, nnodes, SESSION_CIPHER_SECRETBOX);
    if (gcm)
        links_init(gcm, nnodes, SESSION_CIPHER_AES256GCM);
    struct sealed *sl = calloc(nnodes, sizeof(*sl));
    for (size_t n = 0; n < nnodes; n++) {
        rpc_writer_init(&limits[n], NULL, 0);
        rpc_writer_init(&sl[n].limits, NULL, 0);
    }
    double *t = calloc((size_t)cycles, sizeof(double)), *seal = calloc((size_t)cycles, sizeof(double));
    double *seal_gcm = calloc((size_t)cycles, sizeof(double));
    double *t_take = calloc((size_t)cycles, sizeof(double)), *t_compute = calloc((size_t)cycles, sizeof(double));
    double *t_io = calloc((size_t)cycles, sizeof(double));
    struct io io = { 0 };
    if (with_io && !gcm) {
        fprintf(stderr, "qosscale: io needs AES-256-GCM (AES-NI)\n");
        return 1;
    }
    struct relayed rl = { 0 };
    double *t_relay = calloc((size_t)cycles, sizeof(double));
    double *t_own = calloc((size_t)cycles, sizeof(double));
    if (with_relay) {
        relayed_init(&rl, jobs, njobs, nnodes, group, 1000000);
        relayed_send(&rl, 0);   /* cycle 0's messages: their answers start the first timed cycle */
    } else if (with_io) {
        io_init(&io, jobs, njobs, nnodes, c);
    }
    size_t msgs = 0, bytes_out = 0, bytes_in = 0;
    int64_t now = 1000000;
    struct qos_report got = { 0 };
    uint32_t got_cap = 0;
    for (int cy = 0; cy < cycles; cy++) {
        now += 1000;
        /* The agents' side (not timed): usage grows, some jobs held back. */
        for (size_t n = 0; n < nnodes; n++) {
            for (uint32_t k = 0; k < rep[n].njobs; k++) {
                struct qos_job_usage *u = &rep[n].jobs[k];
                u->used[QOS_STAT] += 50 + next_rand() % 400;
                u->used[QOS_OPEN] += next_rand() % 100;
                u->used[QOS_WRITE] += (uint64_t)(next_rand() % 64) << 20;
                if (u->job_id % 3 == 0)
                    u->waited_ns[QOS_STAT] += 300000000;
            }
            rpc_writer_free(&encoded[n]);
            rpc_writer_init(&encoded[n], NULL, 0);
            qos_report_put(&encoded[n], &rep[n]);
        }
        /* qosd's side. */
        double t0 = cpu_s();
        msgs = bytes_out = bytes_in = 0;
        for (size_t n = 0; n < nnodes; n++) {
            if (!ctl_node_busy(c, (uint32_t)n))
                continue;
            /* As adafs-qosd: the next busy node's pairs fetched ahead. */
            for (size_t m = n + 1; m < nnodes && m < n + 8; m++)
                if (ctl_node_busy(c, (uint32_t)m)) {
                    ctl_prefetch_report(c, (uint32_t)m);
                    break;
                }
            struct rpc_reader r;
            rpc_reader_init(&r, encoded[n].data, encoded[n].len);
            /* Into a buffer kept from report to report, as adafs-qosd's
             * (agents.h). */
            if (qos_report_get_into(&r, &got, &got_cap) == 0)
                ctl_take_report(c, (uint32_t)n, &got, now);
            bytes_in += encoded[n].len;
        }
        double t1 = cpu_s();
        ctl_compute(c, &s, now);
        double t2 = cpu_s();
        for (size_t n = 0; n < nnodes; n++) {
            if (!ctl_node_busy(c, (uint32_t)n))
                continue;
            /* The buffer kept, room for the session's head first. */
            limits[n].len = 0;
            rpc_put_raw(&limits[n], NULL, SESSION_OVERHEAD);
            ctl_node_message(c, (uint32_t)n, (uint64_t)cy, 990, &limits[n]);
            bytes_out += limits[n].len - SESSION_OVERHEAD;
            msgs += 2;
        }
        t[cy] = cpu_s() - t0;
        t_take[cy] = t1 - t0;
        t_compute[cy] = t2 - t1;
        /* qosd's cryptography of those messages, each cipher in turn
         * (which goes first alternates). */
        for (int k = 0; k < 2; k++) {
            bool g = (k + cy) % 2 == 1;
            if (g && !gcm)
                continue;
            double d = crypto_cycle(c, nnodes, g ? gcm : &box, sl, encoded, limits);
            *(g ? &seal_gcm[cy] : &seal[cy]) = d;
        }
        if (with_relay) {
            t_relay[cy] = relayed_answer(&rl, encoded);   /* the answers to the last messages */
            t_io[cy] = relayed_cycle(&rl, &s, (uint64_t)cy + 1, now);
            t_own[cy] = rl.own_thread;
        } else if (with_io) {
            t_io[cy] = io_cycle(&io, &s, nnodes, encoded, (uint64_t)cy, now);
        }
    }
    qsort(t, (size_t)cycles, sizeof(double), cmp_double);
    qsort(seal, (size_t)cycles, sizeof(double), cmp_double);
    qsort(seal_gcm, (size_t)cycles, sizeof(double), cmp_double);
    qsort(t_take, (size_t)cycles, sizeof(double), cmp_double);
    qsort(t_compute, (size_t)cycles, sizeof(double), cmp_double);
    qsort(t_io, (size_t)cycles, sizeof(double), cmp_double);
    qsort(t_relay, (size_t)cycles, sizeof(double), cmp_double);
    qsort(t_own, (size_t)cycles, sizeof(double), cmp_double);
    printf("nodes %zu, jobs %zu (1-%u nodes each), (job, node) pairs %zu, policy psfa, 4 classes with capacity\n",
           nnodes, njobs, maxn, pairs);
    printf("qosd CPU per cycle (decode reports, compute, encode messages): median %.3f ms, "
           "p10 %.3f ms, p90 %.3f ms over %d cycles\n", t[cycles / 2] * 1e3,
           t[cycles / 10] * 1e3, t[cycles * 9 / 10] * 1e3, cycles);
    printf("  of which: decode and take the reports %.3f ms, compute %.3f ms (medians)\n",
           t_take[cycles / 2] * 1e3, t_compute[cycles / 2] * 1e3);
    printf("qosd's cryptography (open 1, seal 1 per busy node): XSalsa20-Poly1305 median %.3f ms "
           "(p10 %.3f, p90 %.3f)", seal[cycles / 2] * 1e3, seal[cycles / 10] * 1e3,
           seal[cycles * 9 / 10] * 1e3);
    if (gcm)
        printf(", AES-256-GCM median %.3f ms (p10 %.3f, p90 %.3f)\n", seal_gcm[cycles / 2] * 1e3,
               seal_gcm[cycles / 10] * 1e3, seal_gcm[cycles * 9 / 10] * 1e3);
    else
        printf(", AES-256-GCM: not on this CPU\n");
    printf("cycle + cryptography, medians: %.3f ms (XSalsa20-Poly1305)", (t[cycles / 2] + seal[cycles / 2]) * 1e3);
    if (gcm)
        printf(", %.3f ms (AES-256-GCM)", (t[cycles / 2] + seal_gcm[cycles / 2]) * 1e3);
    printf("\n");
    if (with_relay) {
        uint32_t members = 0;
        for (uint32_t i = 0; i < rl.gs.g[0].n; i++)
            members += rl.gs.node[rl.gs.g[0].first + i].relay == rl.gs.g[0].relay;
        printf("through relays, groups of %u: %zu relays, %zu busy nodes served directly\n", group,
               rl.relays, rl.direct);
        printf("qosd's whole cycle through the relays over sessions on loopback TCP (receive, open, check "
               "and take each group report, compute, plan, write, seal, send; its kept threads included): median %.3f ms "
               "(p10 %.3f, p90 %.3f)\n", t_io[cycles / 2] * 1e3, t_io[cycles / 10] * 1e3,
               t_io[cycles * 9 / 10] * 1e3);
        printf("  of which in qosd's own thread: median %.3f ms\n", t_own[cycles / 2] * 1e3);
        printf("messages at qosd per cycle: %zu (one out and one in per relay and per direct node)\n",
               2 * (rl.relays + rl.direct));
        printf("a relay's own message work per period (the first group's: itself and %u members; "
               "2 messages with qosd, %u with its members): median %.3f ms (p10 %.3f, "
               "p90 %.3f)\n", members - 1, 2 * (members - 1), t_relay[cycles / 2] * 1e3,
               t_relay[cycles / 10] * 1e3, t_relay[cycles * 9 / 10] * 1e3);
    } else if (with_io)
        printf("qosd's whole cycle over sessions on loopback TCP (receive, open, decode, take, compute, "
               "write, seal, send; one thread): median %.3f ms (p10 %.3f, p90 %.3f)\n", t_io[cycles / 2] * 1e3,
               t_io[cycles / 10] * 1e3, t_io[cycles * 9 / 10] * 1e3);
    printf("messages per cycle: %zu (the limits out and the report in per busy node), %zu bytes out, %zu bytes in\n",
           msgs, bytes_out, bytes_in);
    ctl_free(c);
    free(got.jobs);
    for (size_t n = 0; n < nnodes; n++) {
        rpc_writer_free(&encoded[n]);
        rpc_writer_free(&limits[n]);
    }
    free(encoded);
    free(limits);
    for (struct links *l = &box; l; l = l == &box ? gcm : NULL) {
        free(l->q);
        free(l->a);
    }
    for (size_t n = 0; n < nnodes; n++)
        rpc_writer_free(&sl[n].limits);
    free(sl);
    free(seal_gcm);
    free(t);
    free(seal);
    free(t_take);
    free(t_compute);
    free(t_io);
    free(t_relay);
    free(t_own);
    if (with_relay) {
        for (size_t n = 0; n < nnodes; n++)
            if (rl.far[n].fd >= 0)
                agent_session_close(&rl.far[n]);
        for (uint32_t i = 0; i < rl.gs.g[0].n; i++)
            if (rl.m[i].fd >= 0) {
                agent_session_close(&rl.m[i]);
                agent_session_close(&rl.to_m[i]);
            }
        agents_free(&rl.ag);
        groups_free(&rl.gs);
        ctl_free(rl.c);
        free(rl.far);
        free(rl.m);
        free(rl.to_m);
        rpc_writer_free(&rl.relay_out);
        rpc_writer_free(&rl.fwd);
        free(rl.got.jobs);
    } else if (with_io) {
        for (size_t n = 0; n < nnodes; n++) {
            agent_session_close(&io.q[n]);
            agent_session_close(&io.a[n]);
            rpc_writer_free(&io.limits[n]);
        }
        free(io.q);
        free(io.a);
        free(io.limits);
        free(io.got.jobs);
        ctl_free(io.c);
    }
    return 0;
}

static double crypto_cycle(struct ctl *c, size_t nnodes, struct links *links, struct sealed *sl,
                           const struct rpc_writer *encoded, const struct rpc_writer *limits)
{
    /* The agents seal their reports; the limits, as ctl_node_message wrote
     * them (sealing them in place destroys them, and each cycle seals
     * them once per cipher). Not timed. */
    for (size_t n = 0; n < nnodes; n++)
        if (ctl_node_busy(c, (uint32_t)n)) {
            seal_or_die(&links->a[n], 8, &encoded[n], &sl[n].report, &sl[n].report_len);
            sl[n].limits.len = 0;
            rpc_put_raw(&sl[n].limits, limits[n].data, limits[n].len);
        }
    double t0 = cpu_s();
    for (size_t n = 0; n < nnodes; n++) {
        if (!ctl_node_busy(c, (uint32_t)n))
            continue;
        struct session_keys *q = &links->q[n];
        /* rpc_recv's buffer, then the report opened in it. */
        uint8_t *got = malloc(sl[n].report_len);
        if (!got)
            abort();
        memcpy(got, sl[n].report, sl[n].report_len);
        struct session_msg m;
        if (session_open_in_place(q, got, sl[n].report_len, &m) < 0)
            abort();
        free(got);
        if (session_seal_in_place(q, 8, 0, 0, sl[n].limits.data, sl[n].limits.len - SESSION_OVERHEAD) < 0)
            abort();
    }
    double d = cpu_s() - t0;
    for (size_t n = 0; n < nnodes; n++)
        if (ctl_node_busy(c, (uint32_t)n)) {
            open_or_die(&links->a[n], sl[n].limits.data, sl[n].limits.len);
            free(sl[n].report);
        }
    return d;
}
