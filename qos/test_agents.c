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
 * with one busy node still wakes every kept thread) and the node table is
 * shrunk and grown under the pool. */
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
#include "qos_agents.h"
#include "ctl.h"
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
struct fake_agent {
    int index, lfd, port;
    bool mute;
    pthread_t t;
    atomic_uint sessions, answered;
};

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
    /* Until qosd closes the session (agents_free, or its deadline). */
    while (agent_session_recv(&s, &m, AGENT_MAX_BODY, 0) == 0) {
        struct rpc_reader r;
        rpc_reader_init(&r, m.body, m.len);
        struct qos_cycle c = { 0 };
        if (m.op == AGENT_QOS && qos_cycle_get(&r, &c) == 0 && !(fa->mute && c.cycle <= 3)) {
            /* Usage that names this node: stat ops = 1000 x cycle + node. */
            struct qos_job_usage *u = calloc(c.njobs ? c.njobs : 1, sizeof(*u));
            for (uint32_t j = 0; u && j < c.njobs; j++) {
                u[j].job_id = c.jobs[j].job_id;
                u[j].procs = 1;
                u[j].used[QOS_STAT] = 1000 * c.cycle + (uint64_t)fa->index;
            }
            struct qos_report rep = { .cycle = c.cycle, .njobs = u ? c.njobs : 0, .jobs = u };
            struct rpc_writer w;
            rpc_writer_init(&w, NULL, 0);
            qos_report_put(&w, &rep);
            if (agent_session_send_id(&s, AGENT_QOS, m.id, 0, w.data, w.len,
                                      net_now_ms() + 5000) == 0)
                atomic_fetch_add(&fa->answered, 1);
            rpc_writer_free(&w);
            free(u);
        }
        free(c.jobs);
        free(m.plain);
    }
    agent_session_close(&s);
}

static void *fake_agent_run(void *arg)
{
    struct fake_agent *fa = arg;
    while (!atomic_load(&stopping)) {
        struct pollfd p = { .fd = fa->lfd, .events = POLLIN };
        if (poll(&p, 1, 50) == 1) {
            int fd = accept(fa->lfd, NULL, NULL);
            if (fd >= 0)
                serve_session(fa, fd);
        }
    }
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
    size_t good = 0;
    for (size_t i = 0; i < ag->n; i++) {
        struct agent *a = &ag->a[i];
        if (a->have_report) {
            bool own = a->report.cycle == n - 1 && a->report.njobs > 0;
            for (uint32_t j = 0; j < a->report.njobs; j++)
                own = own && a->report.jobs[j].used[QOS_STAT] == 1000 * (n - 1) + i;
            good += own;
            *wrong += !own;
            ctl_take_report(c, (uint32_t)i, &a->report, a->answered_ms);
        }
        a->busy = i < busy_nodes && ctl_node_busy(c, (uint32_t)i);
    }
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
        fa->mute = i == MUTE_NODE;
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
    tap_ok(agents_sync(&ag, w.nodes, w.nnodes) == 0 && ctl_set_jobs(c, jobs, jobs_on(NODES, jobs), NODES) == 0,
           "%d nodes' agents and %d jobs set up", NODES, NODES / 2);

    size_t wrong = 0, good[8];
    int64_t t0 = net_now_ms();
    /* Cycles 1-3 every node busy; 4-5 one busy (the kept threads woken for
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
    int rc = agents_sync(&ag, w.nodes, w.nnodes);
    size_t before = good[7];
    good[0] = one_cycle(&ag, c, 9, NODES, &wrong);
    good[1] = one_cycle(&ag, c, 10, NODES, &wrong);
    w.nnodes = NODES;
    ctl_set_jobs(c, jobs, jobs_on(NODES, jobs), NODES);
    rc = rc ? rc : agents_sync(&ag, w.nodes, w.nnodes);
    good[2] = one_cycle(&ag, c, 11, NODES, &wrong);
    good[3] = one_cycle(&ag, c, 12, NODES, &wrong);
    /* Shrunk, nodes 0-9 have jobs: 9 of them answer (not the dead). */
    tap_ok(rc == 0 && wrong == 0 && good[1] == NODES / 2 - 2 && good[3] == before,
           "the table shrunk to %d nodes and grown back: %zu then %zu reports, none misplaced",
           NODES / 2, good[1], good[3]);
    tap_ok(atomic_load(&agents_sim[0].sessions) == 1, "and node 0 kept its session (%u)",
           atomic_load(&agents_sim[0].sessions));

    agents_free(&ag);   /* joins the kept threads */
    ctl_free(c);
    atomic_store(&stopping, true);
    unsigned answered = 0;
    for (int i = 0; i < NODES; i++)
        if (agents_sim[i].lfd >= 0) {
            pthread_join(agents_sim[i].t, NULL);
            close(agents_sim[i].lfd);
            answered += atomic_load(&agents_sim[i].answered);
        }
    tap_ok(answered > 0, "the stand-in agents answered %u messages", answered);
}

int main(void)
{
    session_fake_init(&qosd_auth, &qosd_id, QOSD_UID);
    session_fake_init(&agent_auth, &agent_id, 0);
    test_cycles();
    return tap_done();
}
