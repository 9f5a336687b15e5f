/* Unit tests of adafs-qosd's policies and control cycle, without a
 * network: agents' reports are made up, the messages decoded back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "policy.h"
#include "tap.h"

static struct policy_job pj[8];
static uint32_t order[8];
static double want[8];

static void jobs3(double d0, double d1, double d2)
{
    memset(pj, 0, sizeof(pj));
    pj[0].demand = d0;
    pj[1].demand = d1;
    pj[2].demand = d2;
    for (int i = 0; i < 3; i++)
        pj[i].weight = 1;
}

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-6 * (fabs(b) + 1);
}

static void test_policies(void)
{
    tap_ok(qos_policy_from_name("PSFA") == QOS_POLICY_PSFA && qos_policy_from_name("x") < 0 &&
           strcmp(qos_policy_name(QOS_POLICY_PROPORTIONAL), "proportional") == 0, "policy names");
    jobs3(100, 400, 500);
    policy_allocate(QOS_POLICY_PSFA, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 100) && near(pj[1].alloc, 250) && near(pj[2].alloc, 250),
           "psfa: max-min in order of demand (100, 250, 250 of 600)");
    jobs3(500, 400, 100);
    policy_allocate(QOS_POLICY_PSFA, 600, pj, 3, order, want);
    tap_ok(near(pj[2].alloc, 100) && near(pj[0].alloc, 250) && near(pj[1].alloc, 250),
           "psfa: the same whatever the order the jobs come in (the published fault)");
    jobs3(100, 200, 300);
    pj[0].usage = 100;
    pj[1].usage = 200;
    pj[2].usage = 300;
    policy_allocate(QOS_POLICY_PSFA, 1200, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 200) && near(pj[1].alloc, 400) && near(pj[2].alloc, 600),
           "psfa: what no demand takes goes in proportion to usage (200, 400, 600)");
    jobs3(100, 200, 300);
    pj[2].asked = 250;
    policy_allocate(QOS_POLICY_PSFA, 1200, pj, 3, order, want);
    tap_ok(pj[2].alloc <= 250 + 1e-9 && near(pj[0].alloc + pj[1].alloc + pj[2].alloc, 1200),
           "psfa: a job never gets more than it asked; the rest goes to the others");
    jobs3(200, 2100, 0);
    pj[0].asked = 200;
    pj[0].grows = pj[1].grows = true;   /* both held at their limits */
    policy_allocate(QOS_POLICY_PSFA, 1000, pj, 2, order, want);
    tap_ok(near(pj[0].alloc, 200) && near(pj[1].alloc, 800),
           "psfa: a held job below half a share takes no more than it asked (200, 800 of 1000)");
    jobs3(INFINITY, 100, 100);
    policy_allocate(QOS_POLICY_PSFA, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 400), "psfa: a job not yet measured takes what the others leave");

    jobs3(1000, 1000, 1000);
    pj[0].weight = 1;
    pj[1].weight = 2;
    pj[2].weight = 3;
    policy_allocate(QOS_POLICY_PRIORITY, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 100) && near(pj[1].alloc, 200) && near(pj[2].alloc, 300),
           "priority: capacity by weight");
    jobs3(1, 1000, 1000);
    policy_allocate(QOS_POLICY_PRIORITY, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 200), "priority: whatever the demand (equal weights: uniform)");

    jobs3(50, 1000, 1000);
    pj[0].asked = 300;
    policy_allocate(QOS_POLICY_PROPORTIONAL, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 300) && near(pj[1].alloc, 150) && near(pj[2].alloc, 150),
           "proportional: a reservation is kept whatever the demand, the rest max-min");
    jobs3(1000, 1000, 1000);
    pj[0].asked = 600;
    pj[1].asked = 600;
    policy_allocate(QOS_POLICY_PROPORTIONAL, 600, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 300) && near(pj[1].alloc, 300) && near(pj[2].alloc, 0),
           "proportional: overbooked reservations are scaled down together");
    jobs3(1000, 1000, 1000);
    pj[0].asked = 1e15;
    pj[1].asked = 300;
    policy_allocate(QOS_POLICY_PROPORTIONAL, 600, pj, 3, order, want);
    tap_ok(near(pj[1].alloc, 200) && near(pj[0].alloc, 400),
           "proportional: a job asking 10^15 reserves the capacity at most: another's 300 "
           "is scaled to 200, not to nothing (%.3g)", pj[1].alloc);

    jobs3(5, 5, 5);
    pj[0].asked = 70;
    pj[1].dflt = 40;
    pj[2].dflt = INFINITY;
    policy_allocate(QOS_POLICY_STATIC, 10, pj, 3, order, want);
    tap_ok(near(pj[0].alloc, 70) && near(pj[1].alloc, 40) && isinf(pj[2].alloc),
           "static: what was asked, else the default, whatever the capacity");
    jobs3(5, 5, 5);
    pj[1].asked = 70;
    policy_allocate(QOS_POLICY_PSFA, INFINITY, pj, 3, order, want);
    tap_ok(isinf(pj[0].alloc) && near(pj[1].alloc, 70), "no capacity for a class: only what was asked");
}

/* Max-min by demand, the plain way: repeatedly give every job left an
 * equal share, settling those whose demand fits. */
static void maxmin_reference(double capacity, const double *demand, size_t n, double *alloc)
{
    char *done = calloc(n, 1);
    size_t left = n;
    while (left) {
        double share = capacity / (double)left;
        size_t settled = 0;
        for (size_t i = 0; i < n; i++)
            if (!done[i] && demand[i] <= share) {
                alloc[i] = demand[i];
                capacity -= demand[i];
                done[i] = 1;
                settled++;
            }
        if (!settled) {
            for (size_t i = 0; i < n; i++)
                if (!done[i])
                    alloc[i] = share;
            break;
        }
        left -= settled;
    }
    free(done);
}

static void test_many_jobs(void)
{
    enum { N = 1000 };
    static struct policy_job many[N];
    static uint32_t ord[2 * N];
    static double scratch[N], demand[N], ref[N];
    uint64_t x = 88172645463325252ull;
    double sum = 0;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* repeats, zeros, the unmeasured (INFINITY) and a wide range */
        demand[i] = i % 97 == 0 ? INFINITY : i % 31 == 0 ? 0 : (double)(x % 5000) * (i % 3 ? 1 : 1e-3);
        many[i] = (struct policy_job){ .demand = demand[i], .weight = 1 };
        sum += isinf(demand[i]) ? 0 : demand[i];
    }
    double capacity = sum / 2;
    policy_allocate(QOS_POLICY_PSFA, capacity, many, N, ord, scratch);
    maxmin_reference(capacity, demand, N, ref);
    int same = 1;
    double given = 0;
    for (size_t i = 0; i < N; i++) {
        same &= near(many[i].alloc, ref[i]);
        given += many[i].alloc;
    }
    tap_ok(same && near(given, capacity),
           "psfa: 1,000 jobs (ties, zeros, unmeasured ones) get exactly max-min by demand");
    for (size_t i = 0; i < N; i++)
        many[i].demand = demand[N - 1 - i];
    policy_allocate(QOS_POLICY_PSFA, capacity, many, N, ord, scratch);
    same = 1;
    for (size_t i = 0; i < N; i++)
        same &= near(many[i].alloc, ref[N - 1 - i]);
    tap_ok(same, "and the same in reverse order");
}

/* --- the control cycle ---------------------------------------------- */

static struct qos_report report(uint32_t job, uint32_t procs, int cls, uint64_t used, uint64_t waited_ns)
{
    static struct qos_job_usage u[4];
    static int next;
    struct qos_job_usage *e = &u[next++ % 4];
    memset(e, 0, sizeof(*e));
    e->job_id = job;
    e->procs = procs;
    e->used[cls] = used;
    e->waited_ns[cls] = waited_ns;
    return (struct qos_report){ .njobs = 1, .jobs = e };
}

/* The limit node's message gives job for class cls. */
static uint64_t limit_in(struct ctl *c, uint32_t node, uint32_t job, int cls)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    ctl_node_message(c, node, 1, 0, &w);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    struct qos_cycle cy;
    uint64_t v = 0;
    if (qos_cycle_get(&r, &cy) == 0)
        for (uint32_t i = 0; i < cy.njobs; i++)
            if (cy.jobs[i].job_id == job)
                v = cy.jobs[i].limit.v[cls];
    free(cy.jobs);
    rpc_writer_free(&w);
    return v;
}

static void test_ctl(void)
{
    struct ctl *c = ctl_new();
    uint32_t n01[] = { 0, 1 }, n2[] = { 2 };
    struct ctl_job_spec jobs[] = {
        { .id = 10, .uid = 1000, .weight = 2, .nnodes = 2, .nodes = n01 },
        { .id = 11, .uid = 1001, .weight = 1, .nnodes = 1, .nodes = n2 },
    };
    tap_is_int(ctl_set_jobs(c, jobs, 2, 4), 0, "two jobs on three of four nodes");
    tap_ok(ctl_node_busy(c, 0) && ctl_node_busy(c, 2) && !ctl_node_busy(c, 3), "busy nodes");
    struct ctl_settings s = { .policy = QOS_POLICY_PSFA, .agent_timeout_ms = 3000 };
    s.capacity.v[QOS_STAT] = 1000;
    int64_t t = 100000;
    ctl_compute(c, &s, t);
    tap_ok(limit_in(c, 0, 10, QOS_STAT) == 250 && limit_in(c, 1, 10, QOS_STAT) == 250 &&
           limit_in(c, 2, 11, QOS_STAT) == 500,
           "not yet measured: equal shares, each job's split evenly over its nodes");
    tap_ok(limit_in(c, 0, 10, QOS_READ) == QOS_UNLIMITED, "a class without capacity: no limit");

    /* Job 10 uses all it is given on node 0, held back; job 11 uses 50/s. */
    uint64_t used0 = 0, last0 = 0;
    for (int k = 0; k < 3; k++) {
        t += 1000;
        used0 += k ? limit_in(c, 0, 10, QOS_STAT) : 0;
        struct qos_report r0 = report(10, 4, QOS_STAT, used0, 600000000ull * (uint64_t)k);
        struct qos_report r1 = report(10, 0, QOS_STAT, 0, 0);
        struct qos_report r2 = report(11, 1, QOS_STAT, 50ull * (uint64_t)k, 0);
        ctl_take_report(c, 0, &r0, t);
        ctl_take_report(c, 1, &r1, t);
        ctl_take_report(c, 2, &r2, t);
        ctl_compute(c, &s, t);
    }
    uint64_t l0 = limit_in(c, 0, 10, QOS_STAT), l1 = limit_in(c, 1, 10, QOS_STAT);
    uint64_t l2 = limit_in(c, 2, 11, QOS_STAT);
    tap_ok(l2 >= 50 && l2 <= 54, "a job using 50/s unhindered gets what it uses and a margin (%llu)",
           (unsigned long long)l2);
    tap_ok(l0 + l1 >= 945, "its margin costs the job held back no more than 5%% of 50/s (%llu of 950)",
           (unsigned long long)(l0 + l1));
    tap_ok(l0 + l1 + l2 <= 1001 && l0 + l1 + l2 >= 990, "the capacity is all given out (%llu)",
           (unsigned long long)(l0 + l1 + l2));
    tap_ok(l0 > 10 * l1 && l1 >= 1, "a job's share follows its usage over its nodes (%llu on the busy"
           " node, %llu on the idle one)", (unsigned long long)l0, (unsigned long long)l1);

    /* Node 2's agent stops reporting: job 11 leaves the sums. */
    for (int k = 3; k < 8; k++) {
        t += 1000;
        last0 = limit_in(c, 0, 10, QOS_STAT);
        used0 += last0;
        struct qos_report r0 = report(10, 4, QOS_STAT, used0, 600000000ull * (uint64_t)k);
        ctl_take_report(c, 0, &r0, t);
        struct qos_report r1 = report(10, 0, QOS_STAT, 0, 0);
        ctl_take_report(c, 1, &r1, t);
        ctl_compute(c, &s, t);
    }
    tap_ok(!ctl_node_up(c, 2) && ctl_node_up(c, 0), "an agent silent past the timeout is down");
    l0 = limit_in(c, 0, 10, QOS_STAT);
    l1 = limit_in(c, 1, 10, QOS_STAT);
    tap_ok(l0 + l1 >= 990, "the job on live nodes gets the capacity the silent one's job held (%llu)",
           (unsigned long long)(l0 + l1));
    tap_ok(limit_in(c, 2, 11, QOS_STAT) == l2, "the silent node keeps the last limits it was sent");

    struct qos_status st;
    ctl_status(c, &st);
    tap_ok(st.njobs == 2 && st.jobs[0].job_id == 10 && st.jobs[0].nodes == 2 &&
           st.jobs[0].usage[QOS_STAT] == last0 && st.jobs[1].nodes_reporting == 0,
           "status: nodes, reporting nodes, usage");
    free(st.jobs);

    /* The job set changes: measurements of pairs still there are kept. */
    struct ctl_job_spec again[] = { jobs[0] };
    ctl_set_jobs(c, again, 1, 4);
    tap_ok(limit_in(c, 0, 10, QOS_STAT) == l0 && !ctl_node_busy(c, 2),
           "a job set refresh keeps what was measured, drops what ended");

    /* Node 2, idle (so not asked) far past the timeout, gets a new job: it
     * is up as a new node is, and the job gets a limit in the first cycle
     * (not a cycle or two unlimited while its agent's report comes). */
    t += 60000;
    struct ctl_job_spec later[] = { jobs[0], { .id = 12, .uid = 1002, .weight = 1, .nnodes = 1, .nodes = n2 } };
    ctl_set_jobs(c, later, 2, 4);
    ctl_compute(c, &s, t);
    uint64_t l12 = limit_in(c, 2, 12, QOS_STAT);
    tap_ok(ctl_node_up(c, 2) && l12 >= 1 && l12 <= 1000,
           "a node busy again after idling is up, its new job limited at once (%llu)",
           (unsigned long long)l12);
    ctl_free(c);
}

/* Two one-node jobs, 20 on node 0 and 21 on node 1, sharing 1000 stat/s
 * by PSFA: the setting of the tests below. */
static const struct ctl_settings two_jobs_settings = {
    .policy = QOS_POLICY_PSFA, .agent_timeout_ms = 3000, .capacity.v[QOS_STAT] = 1000,
};

static struct ctl *two_jobs(void)
{
    struct ctl *c = ctl_new();
    static const uint32_t n0[] = { 0 }, n1[] = { 1 };
    const struct ctl_job_spec jobs[] = {
        { .id = 20, .uid = 1000, .weight = 1, .nnodes = 1, .nodes = n0 },
        { .id = 21, .uid = 1001, .weight = 1, .nnodes = 1, .nodes = n1 },
    };
    ctl_set_jobs(c, jobs, 2, 2);
    return c;
}

/* One period of the two jobs: both agents report their totals (stat ops
 * used, ns held back) at *t + 1 s, then the controller computes. */
static void two_jobs_cycle(struct ctl *c, int64_t *t, uint64_t used20, uint64_t waited20,
                           uint64_t used21, uint64_t waited21)
{
    *t += 1000;
    struct qos_report r0 = report(20, 1, QOS_STAT, used20, waited20);
    struct qos_report r1 = report(21, 1, QOS_STAT, used21, waited21);
    ctl_take_report(c, 0, &r0, *t);
    ctl_take_report(c, 1, &r1, *t);
    ctl_compute(c, &two_jobs_settings, *t);
}

/* A job back from idling: held at the 1/s it was left with, it gets its
 * fair share in the next cycle, not a doubling per period. */
static void test_back_from_idle(void)
{
    struct ctl *c = two_jobs();
    int64_t t = 100000;
    uint64_t used20 = 0, used21 = 0, waited21 = 0, waited20 = 0;
    for (int k = 0; k < 4; k++) {   /* job 20 idle, job 21 takes all it gets */
        used21 += limit_in(c, 1, 21, QOS_STAT) == QOS_UNLIMITED ? 500 : limit_in(c, 1, 21, QOS_STAT);
        waited21 += 1000000000ull;
        two_jobs_cycle(c, &t, used20, 0, used21, waited21);
    }
    uint64_t idle = limit_in(c, 0, 20, QOS_STAT);
    /* Job 20 comes back: held all the period at what it was left with. */
    used20 += idle;
    waited20 += 1000000000ull;
    used21 += limit_in(c, 1, 21, QOS_STAT);
    waited21 += 1000000000ull;
    two_jobs_cycle(c, &t, used20, waited20, used21, waited21);
    uint64_t back = limit_in(c, 0, 20, QOS_STAT);
    tap_ok(idle <= 5 && back >= 450 && back <= 550,
           "a job held back after idling gets its fair share in one cycle (%llu -> %llu of 1000)",
           (unsigned long long)idle, (unsigned long long)back);
    ctl_free(c);
}

/* Four periods of the two jobs from their first limits: job 20 uses
 * fixed20 plus frac20 of its limit each period and is held back
 * waited20 ns of it, job 21 uses all it gets and is held half the
 * period. Their limits after, into l20 and l21. */
static void two_jobs_run(uint64_t fixed20, double frac20, uint64_t waited20, uint64_t *l20, uint64_t *l21)
{
    struct ctl *c = two_jobs();
    int64_t t = 100000;
    uint64_t u20 = 0, u21 = 0;
    ctl_compute(c, &two_jobs_settings, t);
    for (int k = 1; k < 5; k++) {
        u20 += fixed20 + (uint64_t)((double)limit_in(c, 0, 20, QOS_STAT) * frac20);
        u21 += limit_in(c, 1, 21, QOS_STAT);
        two_jobs_cycle(c, &t, u20, waited20 * (uint64_t)k, u21, 500000000ull * (uint64_t)k);
    }
    *l20 = limit_in(c, 0, 20, QOS_STAT);
    *l21 = limit_in(c, 1, 21, QOS_STAT);
    ctl_free(c);
}

/* A job held back now and then but using well under its limit (bursts,
 * or processes slowed by something else) does not want more: it is not
 * given its fair share at the cost of a job that does. A job held back
 * most of the period at its limit, but achieving only 90% of it (its
 * processes not scheduled for a while on a busy node), still wants its
 * share: its limit is not cut to what it achieved. */
static void test_bursty_or_held(void)
{
    uint64_t l20, l21;
    two_jobs_run(100, 0, 200000000ull, &l20, &l21);   /* limit 500 at first: held 20%, uses 100/s */
    tap_ok(l20 >= 100 && l20 <= 106 && l21 >= 890,
           "a job held in bursts under its limit keeps what it uses, the starved one the rest (%llu, %llu)",
           (unsigned long long)l20, (unsigned long long)l21);
    two_jobs_run(0, 0.9, 800000000ull, &l20, &l21);   /* held 80%, 90% of its limit */
    tap_ok(l20 >= 495 && l20 <= 505 && l21 >= 495 && l21 <= 505,
           "a job held most of the time keeps its fair share whatever it achieved (%llu, %llu)",
           (unsigned long long)l20, (unsigned long long)l21);
}

/* Five periods of job 20 at 300/s unhindered while job 21 takes all it
 * gets (held 90% of the time): the totals go on in *u20, *u21, *w21. */
static void steady_300(struct ctl *c, int64_t *t, uint64_t *u20, uint64_t *u21, uint64_t *w21)
{
    for (int k = 0; k < 5; k++) {
        *u20 += k ? 300 : 0;
        *u21 += limit_in(c, 1, 21, QOS_STAT) == QOS_UNLIMITED ? 500 : limit_in(c, 1, 21, QOS_STAT);
        *w21 += 900000000ull;
        two_jobs_cycle(c, t, *u20, 0, *u21, *w21);
    }
}

/* A job below its fair share whose usage dips for one period (its
 * processes descheduled) is held at the dip the next: it gets back the
 * rate it used, not its whole fair share at the other's cost. */
static void test_dip_then_held(void)
{
    struct ctl *c = two_jobs();
    int64_t t = 100000;
    uint64_t u20 = 0, u21 = 0, w21 = 0;
    steady_300(c, &t, &u20, &u21, &w21);
    u20 += 270;                      /* the dip */
    u21 += limit_in(c, 1, 21, QOS_STAT);
    w21 += 900000000ull;
    two_jobs_cycle(c, &t, u20, 0, u21, w21);
    uint64_t cut = limit_in(c, 0, 20, QOS_STAT);
    u20 += cut;                      /* held at the dip, using all of it */
    u21 += limit_in(c, 1, 21, QOS_STAT);
    w21 += 900000000ull;
    two_jobs_cycle(c, &t, u20, 300000000ull, u21, w21);
    uint64_t l20 = limit_in(c, 0, 20, QOS_STAT), l21 = limit_in(c, 1, 21, QOS_STAT);
    tap_ok(cut < 300 && l20 >= 300 && l20 <= 330 && l21 >= 670,
           "a job held at a one-period dip gets its rate back, not its whole fair share (%llu -> %llu, "
           "the other %llu)", (unsigned long long)cut, (unsigned long long)l20, (unsigned long long)l21);
    ctl_free(c);
}

/* A steady job is given its rate and the margin; held back a moment by
 * its own bursts while its rate is a little up (noise), it is not taken
 * for one pressing against its limit: it keeps about its rate, the other
 * job the rest (it got 500 / 500 before CTL_AT_LIMIT). */
static void test_steady_at_margin(void)
{
    struct ctl *c = two_jobs();
    int64_t t = 100000;
    uint64_t u20 = 0, u21 = 0, w21 = 0;
    steady_300(c, &t, &u20, &u21, &w21);
    uint64_t given = limit_in(c, 0, 20, QOS_STAT);
    u20 += 301;                      /* 0.3% up, held 5% of the period */
    u21 += limit_in(c, 1, 21, QOS_STAT);
    w21 += 900000000ull;
    two_jobs_cycle(c, &t, u20, 50000000ull, u21, w21);
    uint64_t l20 = limit_in(c, 0, 20, QOS_STAT), l21 = limit_in(c, 1, 21, QOS_STAT);
    tap_ok(given >= 310 && given <= 320 && l20 >= 300 && l20 <= 330 && l21 >= 670,
           "a steady job held a moment at its margin keeps its rate (%llu -> %llu, the other %llu)",
           (unsigned long long)given, (unsigned long long)l20, (unsigned long long)l21);
    ctl_free(c);
}

/* A steady job held most of a period at a limit its unhindered rate does
 * not exceed (its node busy a moment) asks a step more, not its whole
 * fair share (it got 500 / 500 before CTL_STEP); if it goes on pressing,
 * the step doubles each period and it reaches its fair share in a few. */
static void test_held_steps_up(void)
{
    struct ctl *c = two_jobs();
    int64_t t = 100000;
    uint64_t u20 = 0, u21 = 0, w21 = 0, w20 = 0;
    steady_300(c, &t, &u20, &u21, &w21);
    uint64_t given = limit_in(c, 0, 20, QOS_STAT), l20 = given, l21 = 0, steps[4];
    for (int k = 0; k < 4; k++) {
        u20 += k ? l20 : 300;            /* then using all it is given */
        w20 += 600000000ull;             /* held 60% of each period */
        u21 += limit_in(c, 1, 21, QOS_STAT);
        w21 += 900000000ull;
        two_jobs_cycle(c, &t, u20, w20, u21, w21);
        steps[k] = l20 = limit_in(c, 0, 20, QOS_STAT);
        if (k == 0)
            l21 = limit_in(c, 1, 21, QOS_STAT);
    }
    tap_ok(steps[0] >= 340 && steps[0] <= 360 && l21 >= 640,
           "a steady job held most of a period at its limit gets a step more, not its fair share "
           "(%llu -> %llu, the other %llu)", (unsigned long long)given, (unsigned long long)steps[0],
           (unsigned long long)l21);
    tap_ok(steps[1] > steps[0] && steps[2] > steps[1] && steps[3] >= 495 && steps[3] <= 505,
           "going on pressing, it reaches its fair share in a few periods (%llu, %llu, %llu)",
           (unsigned long long)steps[1], (unsigned long long)steps[2], (unsigned long long)steps[3]);
    ctl_free(c);
}

int main(void)
{
    test_policies();
    test_many_jobs();
    test_ctl();
    test_back_from_idle();
    test_bursty_or_held();
    test_dip_then_held();
    test_steady_at_margin();
    test_held_steps_up();
    return tap_done();
}
