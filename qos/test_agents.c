/* Unit test of adafs-qosd's agents module with its kept worker threads:
 * whole control cycles (agents_receive, ctl_take_report, ctl_compute,
 * ctl_node_message, agents_send) against stand-in agents on loopback,
 * over real agent sessions (session_fake stands in for munge). It checks
 * that every report reaches its own node's slot, that a mute agent costs
 * its deadline and a dead one its retry, and, run under ThreadSanitizer
 * (scripts/check), that the hand-offs between qosd's thread and the pool's
 * are ordered: each cycle the pool writes the reports and sessions that
 * the main thread then reads, and the main thread writes the messages the
 * pool then sends. The set of busy nodes changes between cycles (a round
 * with one busy node, or whose answers are all in, runs in qosd's thread
 * alone, the kept threads idle) and the node table is shrunk and grown
 * under the pool.
 * Then the same through relays (groups.h, relays.h, common/qos_relay.h):
 * stand-in agents that relay with the real relay code, qosd's side as
 * qosd.c runs it; a member that does not answer its relay, a relay that
 * dies mid-cycle (after forwarding, before answering) and a relay whose
 * group report is garbled or forged: every report still lands in its own
 * node's slot, and the group is served directly, then by a new relay. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_proto.h"
#include "ctl.h"
#include "qos_agents.h"
#include "qos_relay.h"
#include "relays.h"
#include "net.h"
#include "session_fake.h"
#include "world.h"
#include "tap.h"

#define QOSD_UID 64030
#define NODES 22          /* more than AGENTS_THREADS: threads take several nodes */
#define MUTE_NODE 5       /* takes the limits of cycles 1-3 and does not report them */
#define DOWN_NODE 9       /* nothing listens */
#define DEADLINE_MS 600   /* generous: a loaded CI host must not make a working agent late */

static struct session_auth qosd_auth, agent_auth;
static struct session_fake qosd_id, agent_id;
static atomic_bool stopping;

/* A stand-in node agent: answers each AGENT_QOS at once with a report
 * naming its node and the cycle (the real agent answers at the period's
 * end; when does not matter here). */
enum relay_fault { RELAY_OK, RELAY_DIES, RELAY_GARBLES, RELAY_FORGES };

struct fake_agent {
    int index, lfd, port;
    uint64_t mute_lo, mute_hi;   /* AGENT_QOS of these cycles unanswered */
    pthread_t t;
    atomic_uint sessions, answered;
    atomic_uint groups;          /* AGENT_QOS_GROUP answered */
    atomic_ullong applied;       /* the last cycle whose limits it took */
    /* As a relay: the real relay code, and what goes wrong at fault_cycle. */
    struct qos_relay relay;
    enum relay_fault fault;
    uint64_t fault_cycle;
    atomic_bool dead;
    pthread_t st[64];            /* one thread per session: qosd's and a relay's at once */
    int nst;
};

/* A report of the jobs c names, usage naming this node and the cycle:
 * stat ops = 1000 x cycle + node. */
static void put_usage(const struct fake_agent *fa, const struct qos_cycle *c, struct rpc_writer *w)
{
    struct qos_job_usage *u = calloc(c->njobs ? c->njobs : 1, sizeof(*u));
    for (uint32_t j = 0; u && j < c->njobs; j++) {
        u[j].job_id = c->jobs[j].job_id;
        u[j].procs = 1;
        u[j].used[QOS_STAT] = 1000 * c->cycle + (uint64_t)fa->index;
    }
    struct qos_report rep = { .cycle = c->cycle, .njobs = u ? c->njobs : 0, .jobs = u };
    qos_report_put(w, &rep);
    free(u);
}

/* The relay's own node, for the relay code. */
struct own_ctx {
    struct fake_agent *fa;
    struct qos_cycle c;
};

static int own_apply(void *ctx, const uint8_t *body, size_t len, char *err, size_t errlen)
{
    struct own_ctx *o = ctx;
    struct rpc_reader r;
    rpc_reader_init(&r, body, len);
    free(o->c.jobs);
    if (qos_cycle_get(&r, &o->c) < 0) {
        snprintf(err, errlen, "malformed");
        return -EBADMSG;
    }
    atomic_store(&o->fa->applied, o->c.cycle);
    return 0;
}

static int own_report(void *ctx, uint64_t cycle, struct rpc_writer *w, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct own_ctx *o = ctx;
    o->c.cycle = cycle;
    put_usage(o->fa, &o->c, w);
    return 0;
}

/* AGENT_QOS_GROUP: relayed by the real code; then, at fault_cycle, the
 * fault. Returns false when the session is to end (the relay died). */
static bool serve_group(struct fake_agent *fa, struct agent_session *s, const struct session_msg *m,
                        const atomic_bool *over)
{
    struct own_ctx o = { .fa = fa };
    const struct qos_relay_own own = { .apply = own_apply, .report = own_report, .ctx = &o };
    struct rpc_reader r;
    rpc_reader_init(&r, m->body, m->len);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    char err[512] = "";
    uint64_t cycle = 0;
    int rc = qos_relay_serve(&fa->relay, &r, &w, &own, over, err, sizeof(err));
    free(o.c.jobs);
    if (rc == 0) {
        struct rpc_reader rr;
        rpc_reader_init(&rr, w.data, w.len);
        rpc_get_u32(&rr);
        cycle = rpc_get_u64(&rr);
    }
    bool faulty = rc == 0 && fa->fault != RELAY_OK && cycle == fa->fault_cycle;
    if (faulty && fa->fault == RELAY_DIES) {
        /* Forwarded and collected, then gone: no answer, nothing listens. */
        atomic_store(&fa->dead, true);
        rpc_writer_free(&w);
        return false;
    }
    if (faulty && fa->fault == RELAY_GARBLES)
        w.len--;   /* cut short (sealed by the relay: its own bytes, not the wire's) */
    if (faulty && fa->fault == RELAY_FORGES) {
        /* A well-formed report of another cycle (one replayed or made up). */
        rpc_writer_free(&w);
        rpc_writer_init(&w, NULL, 0);
        struct qos_group_report *fake = calloc(1, sizeof(*fake));
        fake->cycle = cycle + 1;
        qos_group_report_put(&w, fake);
        free(fake);
    }
    if (rc < 0) {
        struct agent_error e = { .fault = AGENT_FAULT_TRANSIENT };
        snprintf(e.text, sizeof(e.text), "%s", err);
        rpc_writer_free(&w);
        rpc_writer_init(&w, NULL, 0);
        agent_error_put(&w, &e);
    }
    if (agent_session_send_id(s, AGENT_QOS_GROUP, m->id, rc, w.data, w.len, net_now_ms() + 5000) == 0)
        atomic_fetch_add(&fa->groups, 1);
    rpc_writer_free(&w);
    return true;
}

static void serve_session(struct fake_agent *fa, int fd)
{
    int64_t deadline = net_now_ms() + 5000;
    char *cred = NULL, err[512];
    char name[16];
    snprintf(name, sizeof(name), "n%02d", fa->index);
    struct agent_session s;
    if (agent_session_recv_hello(fd, &cred, deadline) < 0 ||
        agent_session_accept(&s, fd, &agent_auth, name, QOSD_UID, cred, deadline, err,
                             sizeof(err)) < 0) {
        free(cred);
        close(fd);
        return;
    }
    free(cred);
    atomic_fetch_add(&fa->sessions, 1);
    struct session_msg m;
    atomic_bool over = false;
    /* Until qosd (or a relay) closes the session. */
    while (!atomic_load(&fa->dead) && agent_session_recv(&s, &m, AGENT_MAX_BODY, 0) == 0) {
        struct rpc_reader r;
        rpc_reader_init(&r, m.body, m.len);
        struct qos_cycle c = { 0 };
        bool go_on = true;
        if (m.op == AGENT_QOS_GROUP) {
            go_on = serve_group(fa, &s, &m, &over);
        } else if (m.op == AGENT_QOS && qos_cycle_get(&r, &c) == 0) {
            atomic_store(&fa->applied, c.cycle);
            if (!(c.cycle >= fa->mute_lo && c.cycle <= fa->mute_hi)) {
                struct rpc_writer w;
                rpc_writer_init(&w, NULL, 0);
                put_usage(fa, &c, &w);
                if (agent_session_send_id(&s, AGENT_QOS, m.id, 0, w.data, w.len,
                                          net_now_ms() + 5000) == 0)
                    atomic_fetch_add(&fa->answered, 1);
                rpc_writer_free(&w);
            }
        }
        free(c.jobs);
        free(m.plain);
        if (!go_on)
            break;
    }
    agent_session_close(&s);
}

struct session_arg {
    struct fake_agent *fa;
    int fd;
};

static void *session_run(void *arg)
{
    struct session_arg *sa = arg;
    serve_session(sa->fa, sa->fd);
    free(sa);
    return NULL;
}

static void *fake_agent_run(void *arg)
{
    struct fake_agent *fa = arg;
    while (!atomic_load(&stopping)) {
        struct pollfd p = { .fd = fa->lfd, .events = POLLIN };
        if (atomic_load(&fa->dead))
            break;
        if (poll(&p, 1, 50) == 1) {
            int fd = accept(fa->lfd, NULL, NULL);
            struct session_arg *sa = fd >= 0 ? malloc(sizeof(*sa)) : NULL;
            if (sa && fa->nst < 64) {
                *sa = (struct session_arg){ .fa = fa, .fd = fd };
                if (pthread_create(&fa->st[fa->nst], NULL, session_run, sa) == 0) {
                    fa->nst++;
                    continue;
                }
            }
            free(sa);
            if (fd >= 0)
                close(fd);
        }
    }
    /* The relay's member sessions closed, so its members' threads end. */
    qos_relay_free(&fa->relay);
    if (atomic_load(&fa->dead)) {
        close(fa->lfd);   /* nothing listens any more */
        fa->lfd = -2;
    }
    for (int i = 0; i < fa->nst; i++)
        pthread_join(fa->st[i], NULL);
    return NULL;
}

static struct fake_agent agents_sim[NODES];
/* What the mute and the dead agent's slots said, in cycle 4 (after the
 * receive) and cycle 2 (after the send). */
static char mute_err[512], down_err[512];
static bool mute_connected = true;
static struct agent_addr world_nodes[NODES];
static uint32_t job_nodes[NODES];

/* Jobs 100 + k on nodes 2k and 2k + 1 (of the first n nodes). */
static size_t jobs_on(size_t n, struct ctl_job_spec *jobs)
{
    size_t nj = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        job_nodes[i] = (uint32_t)i;
        job_nodes[i + 1] = (uint32_t)i + 1;
        jobs[nj++] = (struct ctl_job_spec){ .id = 100 + (uint32_t)nj, .uid = 1000, .weight = 1,
                                            .nnodes = 2, .nodes = &job_nodes[i] };
    }
    return nj;
}

static const struct ctl_settings settings = {
    .policy = QOS_POLICY_PSFA, .agent_timeout_ms = 3000, .capacity.v[QOS_STAT] = 10000,
};

/* The reports the agents gave, into c (as qosd.c takes them). Returns how
 * many nodes reported their own usage of cycle n - 1 (node i's job used
 * 1000 * (n - 1) + i stats); *wrong counts reports in another's slot. */
static size_t take_reports(struct agents *ag, struct ctl *c, uint64_t n, size_t *wrong)
{
    size_t good = 0;
    for (size_t i = 0; i < ag->n; i++) {
        struct agent *a = &ag->a[i];
        if (!a->have_report)
            continue;
        bool own = a->report.cycle == n - 1 && a->report.njobs > 0;
        for (uint32_t j = 0; j < a->report.njobs; j++)
            own = own && a->report.jobs[j].used[QOS_STAT] == 1000 * (n - 1) + i;
        good += own;
        *wrong += !own;
        ctl_take_report(c, (uint32_t)i, &a->report, a->answered_ms);
    }
    return good;
}

/* One of qosd's cycles (qosd.c's cycle and send_limits): the reports of
 * the last one taken, the limits sent. Returns how many nodes reported
 * their own usage of cycle n - 1; *wrong counts reports in another's slot. */
static size_t one_cycle(struct agents *ag, struct ctl *c, uint64_t n, size_t busy_nodes,
                        size_t *wrong)
{
    int64_t start = net_now_ms();
    agents_receive(ag, start + DEADLINE_MS);
    if (n == 4) {
        mute_connected = ag->a[MUTE_NODE].connected;
        snprintf(mute_err, sizeof(mute_err), "%s", ag->a[MUTE_NODE].err);
    }
    size_t good = take_reports(ag, c, n, wrong);
    for (size_t i = 0; i < ag->n; i++)
        ag->a[i].busy = i < busy_nodes && ctl_node_busy(c, (uint32_t)i);
    int64_t now = net_now_ms();
    ctl_compute(c, &settings, now);
    for (size_t i = 0; i < ag->n; i++)
        if (ag->a[i].busy)
            ctl_node_message(c, (uint32_t)i, n, 0, agents_message(&ag->a[i]));
    agents_send(ag, now + DEADLINE_MS);
    if (n == 2)
        snprintf(down_err, sizeof(down_err), "%s", ag->a[DOWN_NODE].err);
    return good;
}

static void test_cycles(void)
{
    for (int i = 0; i < NODES; i++) {
        struct fake_agent *fa = &agents_sim[i];
        fa->index = i;
        if (i == MUTE_NODE)
            fa->mute_lo = 1, fa->mute_hi = 3;
        qos_relay_init(&fa->relay, &agent_auth);
        char err[256];
        fa->lfd = net_listen("127.0.0.1", 0, 4, &fa->port, err, sizeof(err));
        if (fa->lfd < 0) {
            tap_ok(0, "listen for node %d: %s", i, err);
            return;
        }
        snprintf(world_nodes[i].name, sizeof(world_nodes[i].name), "n%02d", i);
        snprintf(world_nodes[i].host, sizeof(world_nodes[i].host), "127.0.0.1");
        world_nodes[i].port = fa->port;
        if (i == DOWN_NODE) {   /* its port taken, then let go: refused */
            close(fa->lfd);
            fa->lfd = -1;
        } else {
            pthread_create(&fa->t, NULL, fake_agent_run, fa);
        }
    }
    struct world w = { .nodes = world_nodes, .nnodes = NODES };
    struct agents ag = { .auth = &qosd_auth };
    struct ctl *c = ctl_new();
    struct ctl_job_spec jobs[NODES / 2];
    tap_ok(agents_sync(&ag, w.nodes, w.nnodes) == 1 && ctl_set_jobs(c, jobs, jobs_on(NODES, jobs), NODES) == 0,
           "%d nodes' agents and %d jobs set up", NODES, NODES / 2);

    size_t wrong = 0, good[8];
    int64_t t0 = net_now_ms();
    /* Cycles 1-3 every node busy; 4-5 one busy (the kept threads left idle for
     * nothing); 6-8 all again. */
    for (uint64_t n = 1; n <= 8; n++)
        good[n - 1] = one_cycle(&ag, c, n, n == 4 || n == 5 ? 1 : NODES, &wrong);
    int64_t took = net_now_ms() - t0;
    size_t answering = NODES - 2;
    tap_ok(wrong == 0, "every report taken is its own node's, of the last cycle (%zu not)", wrong);
    tap_ok(good[1] == answering && good[2] == answering && good[3] == answering,
           "cycles 2-4: the %zu working agents' reports arrive (%zu %zu %zu)", answering, good[1],
           good[2], good[3]);
    tap_ok(good[4] == 1 && good[5] == 1,
           "with one busy node, its report alone (%zu %zu)", good[4], good[5]);
    tap_ok(good[7] == answering + 1, "all busy again, the mute agent back: %zu reports (%zu)",
           answering + 1, good[7]);
    tap_ok(!mute_connected && strstr(mute_err, "no report") != NULL,
           "the mute agent's session is closed at its deadline (%s)", mute_err);
    tap_ok(strstr(down_err, "unreachable; next try") != NULL,
           "the dead agent is not tried again the next cycle (%s)", down_err);
    tap_ok(took < 3 * DEADLINE_MS + 8 * 300,
           "a mute agent costs its own deadline, not one per node (%lld ms for 8 cycles, 3 waited)",
           (long long)took);
    tap_ok(atomic_load(&agents_sim[0].sessions) == 1,
           "a working agent's session is kept from cycle to cycle (%u)",
           atomic_load(&agents_sim[0].sessions));

    /* The table shrunk under the kept pool, then grown: the sessions of
     * the nodes that stay are kept. */
    w.nnodes = NODES / 2;
    ctl_set_jobs(c, jobs, jobs_on(NODES / 2, jobs), NODES / 2);
    int rc = agents_sync(&ag, w.nodes, w.nnodes) == 1 ? 0 : -1;   /* shrunk: changed */
    size_t before = good[7];
    good[0] = one_cycle(&ag, c, 9, NODES, &wrong);
    good[1] = one_cycle(&ag, c, 10, NODES, &wrong);
    w.nnodes = NODES;
    ctl_set_jobs(c, jobs, jobs_on(NODES, jobs), NODES);
    rc = rc ? rc : agents_sync(&ag, w.nodes, w.nnodes) == 1 ? 0 : -1;
    rc = rc ? rc : agents_sync(&ag, w.nodes, w.nnodes) == 0 ? 0 : -1;   /* the same again: unchanged */
    good[2] = one_cycle(&ag, c, 11, NODES, &wrong);
    good[3] = one_cycle(&ag, c, 12, NODES, &wrong);
    /* Shrunk, nodes 0-9 have jobs: 9 of them answer (not the dead). */
    tap_ok(rc == 0 && wrong == 0 && good[1] == NODES / 2 - 2 && good[3] == before,
           "the table shrunk to %d nodes and grown back (a sync of the same nodes: unchanged): %zu then %zu reports, none misplaced",
           NODES / 2, good[1], good[3]);
    tap_ok(atomic_load(&agents_sim[0].sessions) == 1, "and node 0 kept its session (%u)",
           atomic_load(&agents_sim[0].sessions));

    agents_free(&ag);   /* joins the kept threads */
    ctl_free(c);
    atomic_store(&stopping, true);
    unsigned answered = 0;
    for (int i = 0; i < NODES; i++)
        if (agents_sim[i].lfd >= 0) {
            pthread_join(agents_sim[i].t, NULL);   /* (none of these dies) */
            close(agents_sim[i].lfd);
            answered += atomic_load(&agents_sim[i].answered);
        }
    tap_ok(answered > 0, "the stand-in agents answered %u messages", answered);
}

/* --- through relays ---------------------------------------------------- */

#define RNODES 12
#define RGROUP 4            /* groups {0-3} {4-7} {8-11} */
#define ANSWER_MS 150       /* the relay's answer due; its members' MARGIN_MS earlier */
#define MARGIN_MS 50
#define R_MUTE 6            /* a member: cycles 3-4 unanswered */
#define R_DIES 4            /* the first relay of group 1: dies in cycle 7 */
#define R_GARBLES 8         /* group 2's relay: a report cut short in cycle 11 */
#define R_FORGES 0          /* group 0's relay: a report of another cycle in cycle 14 */

static struct fake_agent rsim[RNODES];
static struct agent_addr rnodes[RNODES];
/* Cycle 8, the reports of 7 just taken: the dead relay's slot and what
 * its members applied. */
static char dead_err[512];
static uint64_t applied5, applied7;

/* qosd.c's cycle with relays. Returns the reports of cycle n - 1 in
 * their own slots; *wrong counts misplaced ones, *sent the messages out,
 * *refused group reports refused. */
static size_t relay_cycle(struct agents *ag, struct groups *gs, struct ctl *c, uint64_t n,
                          size_t *wrong, size_t *sent, unsigned *refused)
{
    int64_t start = net_now_ms();
    agents_receive(ag, start + DEADLINE_MS);
    *refused += relays_take(gs, ag, net_now_ms());
    if (n == 8) {
        snprintf(dead_err, sizeof(dead_err), "%s", ag->a[R_DIES].err);
        applied5 = atomic_load(&rsim[5].applied);
        applied7 = atomic_load(&rsim[7].applied);
    }
    size_t good = take_reports(ag, c, n, wrong);
    for (size_t i = 0; i < ag->n; i++)
        ag->a[i].active = ctl_node_busy(c, (uint32_t)i);
    relays_plan(gs, ag, net_now_ms());
    for (size_t i = 0; i < ag->n; i++)
        if (!ag->a[i].busy && ag->a[i].connected && !ag->a[i].pending)
            agents_close(&ag->a[i]);
    int64_t now = net_now_ms();
    ctl_compute(c, &settings, now);
    *sent = 0;
    for (size_t i = 0; i < ag->n; i++) {
        *sent += ag->a[i].busy;
        if (ag->a[i].busy && ag->a[i].op == AGENT_QOS)
            ctl_node_message(c, (uint32_t)i, n, ANSWER_MS, agents_message(&ag->a[i]));
    }
    relays_messages(gs, ag, c, n, ANSWER_MS, MARGIN_MS);
    agents_send(ag, now + DEADLINE_MS);
    return good;
}

static void test_relays(void)
{
    atomic_store(&stopping, false);
    for (int i = 0; i < RNODES; i++) {
        struct fake_agent *fa = &rsim[i];
        fa->index = i;
        if (i == R_MUTE)
            fa->mute_lo = 3, fa->mute_hi = 4;
        fa->fault = i == R_DIES ? RELAY_DIES : i == R_GARBLES ? RELAY_GARBLES
                  : i == R_FORGES ? RELAY_FORGES : RELAY_OK;
        fa->fault_cycle = i == R_DIES ? 7 : i == R_GARBLES ? 11 : 14;
        qos_relay_init(&fa->relay, &agent_auth);
        char err[256];
        fa->lfd = net_listen("127.0.0.1", 0, 16, &fa->port, err, sizeof(err));
        if (fa->lfd < 0) {
            tap_ok(0, "listen for node %d: %s", i, err);
            return;
        }
        snprintf(rnodes[i].name, sizeof(rnodes[i].name), "n%02d", i);
        snprintf(rnodes[i].host, sizeof(rnodes[i].host), "127.0.0.1");
        rnodes[i].port = fa->port;
        pthread_create(&fa->t, NULL, fake_agent_run, fa);
    }
    struct agents ag = { .auth = &qosd_auth };
    struct groups gs = { 0 };
    struct ctl *c = ctl_new();
    struct ctl_job_spec jobs[RNODES / 2];
    tap_ok(agents_sync(&ag, rnodes, RNODES) >= 0 && groups_sync(&gs, RNODES, RGROUP) == 0 &&
           ctl_set_jobs(c, jobs, jobs_on(RNODES, jobs), RNODES) == 0,
           "%d nodes in groups of %d", RNODES, RGROUP);
    size_t wrong = 0, sent[20], good[20];
    unsigned refused = 0, refused_at[20];
    int relay1_at9 = -2, relay2_at13 = -2;
    bool mute_direct = false;
    char member_err[512] = "";
    for (uint64_t n = 1; n <= 16; n++) {
        good[n] = relay_cycle(&ag, &gs, c, n, &wrong, &sent[n], &refused);
        refused_at[n] = refused;
        if (n == 4)
            snprintf(member_err, sizeof(member_err), "%s", ag.a[R_MUTE].err);
        if (n == 5)
            mute_direct = ag.a[R_MUTE].busy && ag.a[R_MUTE].op == AGENT_QOS && gs.g[1].relay == R_DIES;
        if (n == 9)
            relay1_at9 = gs.g[1].relay;
        if (n == 13)
            relay2_at13 = gs.g[2].relay;
    }
    tap_ok(wrong == 0, "through relays too every report taken is its own node's (%zu not)", wrong);
    tap_ok(sent[1] == RNODES && sent[3] == 3 && good[3] == RNODES,
           "cycle 1 direct (%zu messages), then one per group (%zu) and every node's report"
           " through its relay (%zu)", sent[1], sent[3], good[3]);
    tap_ok(good[4] == RNODES - 1 && strstr(member_err, "no answer to its relay") != NULL,
           "a member that does not answer its relay: reported missing, the others' reports"
           " arrive (%zu; %s)", good[4], member_err);
    tap_ok(mute_direct, "a member missing twice is served directly while its relay works");
    tap_ok(good[6] == RNODES, "and reports again directly (%zu)", good[6]);
    tap_ok(applied5 == 7 && applied7 == 7 && dead_err[0] && good[8] == RNODES - 3,
           "a relay dying mid-cycle: its members had their limits of that cycle (%llu %llu), its"
           " group's reports of it are missing (%zu), the relay's failure said (%s)",
           (unsigned long long)applied5, (unsigned long long)applied7, good[8], dead_err);
    tap_ok(relay1_at9 == 5 && good[10] == RNODES - 1,
           "served directly one period, then the next member relays (%d) and the live nodes"
           " report (%zu)", relay1_at9, good[10]);
    tap_ok(refused_at[12] == 1 && refused_at[11] == 0 && relay2_at13 == 9,
           "a garbled group report is refused, and its group relayed by the next member (%d)",
           relay2_at13);
    tap_ok(refused_at[15] == 2 && good[16] == RNODES - 1,
           "a group report of another cycle is refused (%u refused), and all live nodes report"
           " again (%zu)", refused_at[15], good[16]);
    agents_free(&ag);
    groups_free(&gs);
    ctl_free(c);
    atomic_store(&stopping, true);
    unsigned groups_answered = 0;
    for (int i = 0; i < RNODES; i++) {
        pthread_join(rsim[i].t, NULL);
        if (rsim[i].lfd >= 0)
            close(rsim[i].lfd);
        groups_answered += atomic_load(&rsim[i].groups);
    }
    tap_ok(groups_answered > 0, "the stand-in relays answered %u group requests", groups_answered);
}

int main(void)
{
    session_fake_init(&qosd_auth, &qosd_id, QOSD_UID);
    session_fake_init(&agent_auth, &agent_id, 0);
    test_cycles();
    test_relays();
    return tap_done();
}
