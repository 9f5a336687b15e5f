/* Unit tests of fairshare: the draws of adafsd's service slots, with a
 * simulated clock (clients that always have requests waiting, a server
 * with one slot, each request costing a fixed time), the blocking gate
 * with threads, and the exchange between servers. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exchange.h"
#include "fairshare.h"
#include "tap.h"

#define DEPTH 4   /* requests each simulated client keeps waiting */

struct client {
    struct fair_who who;
    uint64_t cost;        /* of each of its requests */
    int active;           /* 0: sends nothing */
    double service;       /* time served, in the run */
    unsigned long served;
    struct fair_pass pass[DEPTH];
    int queued[DEPTH];
};

/* Serves steps requests one at a time; the slot goes to whatever the gate
 * granted; each client sends a new request as soon as one is served. */
static void simulate(struct fair *f, struct client *c, int n, long steps)
{
    for (int i = 0; i < n; i++)
        for (int d = 0; d < DEPTH && c[i].active; d++)
            if (!c[i].queued[d] && fair_try_enter(f, &c[i].who, &c[i].pass[d]) >= 0)
                c[i].queued[d] = 1;
    int start = 0;
    for (long s = 0; s < steps; s++) {
        /* the granted request after the last one served: round robin over
         * the granted ones, as the slots of a server free in turn */
        int found = 0;
        for (int k = 0; k < n * DEPTH && !found; k++) {
            int slot = (start + k) % (n * DEPTH), i = slot / DEPTH, d = slot % DEPTH;
            if (!c[i].queued[d] || !fair_granted(f, &c[i].pass[d]))
                continue;
            c[i].service += (double)c[i].cost;
            c[i].served++;
            fair_leave(f, &c[i].pass[d], c[i].cost);
            c[i].queued[d] = 0;
            if (c[i].active && fair_try_enter(f, &c[i].who, &c[i].pass[d]) >= 0)
                c[i].queued[d] = 1;
            start = slot + 1;
            found = 1;
        }
        if (!found)
            break;
    }
}

static void drain(struct fair *f, struct client *c, int n)
{
    for (int i = 0; i < n; i++)
        c[i].active = 0;
    simulate(f, c, n, 1000000);
    for (int i = 0; i < n; i++)
        c[i].service = 0, c[i].served = 0;
}

static int within(double got, double want, double tolerance)
{
    return fabs(got - want) <= tolerance * want;
}

static void test_policies(void)
{
    tap_is_int(fair_policy_parse("job-fair"), FAIR_JOB, "job-fair parses");
    tap_is_int(fair_policy_parse("user-then-size"), FAIR_USER_THEN_SIZE, "user-then-size parses");
    tap_is_int(fair_policy_parse("fair"), -1, "an unknown policy is refused");
    tap_is_str(fair_policy_name(FAIR_SIZE), "size-fair", "names round trip");
}

static void test_size_fair(void)
{
    struct fair *f = fair_new(FAIR_SIZE, 1, 42);
    struct client c[2] = {
        { .who = { .job = 10, .uid = 1000, .nodes = 4 }, .cost = 100, .active = 1 },
        { .who = { .job = 11, .uid = 1001, .nodes = 1 }, .cost = 100, .active = 1 },
    };
    simulate(f, c, 2, 50000);
    double ratio = c[0].service / c[1].service;
    tap_ok(within(ratio, 4, 0.1), "size-fair: a 4-node job gets 4 times a 1-node job's service "
           "(%.3f)", ratio);
    drain(f, c, 2);
    fair_free(f);
}

/* size-fair from the agent's file: the clients say 1 node each (as the
 * gate does for a job on the node), the file says 4 and 1. */
static void test_jobs_file(void)
{
    char path[] = "/tmp/test_fairshare.XXXXXX";
    int fd = mkstemp(path);
    dprintf(fd, "# job nodes\n10 4\n11 1\n");
    fchmod(fd, 0644);
    close(fd);
    struct fair *f = fair_new(FAIR_SIZE, 1, 42);
    int rc = fair_jobs_load(f, path);
    if (geteuid() != 0) {
        tap_is_int(rc, -EPERM, "a node-count file not root's is refused");
        fair_free(f);
        unlink(path);
        return;
    }
    tap_is_int(rc, 0, "the agent's node-count file loads");
    struct client c[2] = {
        { .who = { .job = 10, .uid = 1000, .nodes = 1 }, .cost = 100, .active = 1 },
        { .who = { .job = 11, .uid = 1001, .nodes = 1 }, .cost = 100, .active = 1 },
    };
    simulate(f, c, 2, 50000);
    double ratio = c[0].service / c[1].service;
    tap_ok(within(ratio, 4, 0.1), "size-fair by the agent's node counts, not the clients' "
           "(%.3f)", ratio);
    drain(f, c, 2);
    fd = open(path, O_WRONLY | O_TRUNC);
    dprintf(fd, "10 four\n");
    close(fd);
    tap_is_int(fair_jobs_load(f, path), -EINVAL, "a line that is not JOB NODES is refused");
    chmod(path, 0666);
    tap_is_int(fair_jobs_load(f, path), -EPERM, "a file others may write is refused");
    unlink(path);
    symlink("/etc/passwd", path);
    tap_is_int(fair_jobs_load(f, path), -ELOOP, "a link is not followed");
    unlink(path);
    fair_free(f);
}

static void test_job_fair(void)
{
    struct fair *f = fair_new(FAIR_JOB, 1, 7);
    struct client c[2] = {
        { .who = { .job = 10, .uid = 1000, .nodes = 4 }, .cost = 100, .active = 1 },
        { .who = { .job = 11, .uid = 1000, .nodes = 1 }, .cost = 100, .active = 1 },
    };
    simulate(f, c, 2, 50000);
    double ratio = c[0].service / c[1].service;
    tap_ok(within(ratio, 1, 0.1), "job-fair: two jobs of different sizes get equal service "
           "(%.3f)", ratio);
    /* opportunity: one goes quiet, the other takes everything */
    c[1].active = 0;
    simulate(f, c, 2, 100);
    c[0].service = c[1].service = 0;
    c[0].served = c[1].served = 0;
    simulate(f, c, 2, 1000);
    tap_ok(c[1].service == 0 && c[0].served == 1000, "an idle job's share goes to the busy one");
    drain(f, c, 2);
    fair_free(f);
}

static void test_user_then_size(void)
{
    struct fair *f = fair_new(FAIR_USER_THEN_SIZE, 1, 99);
    struct client c[4] = {
        { .who = { .job = 1, .uid = 1000, .nodes = 1 }, .cost = 100, .active = 1 },
        { .who = { .job = 2, .uid = 1000, .nodes = 3 }, .cost = 100, .active = 1 },
        { .who = { .job = 3, .uid = 1001, .nodes = 2 }, .cost = 100, .active = 1 },
        { .who = { .job = 4, .uid = 1001, .nodes = 8 }, .cost = 100, .active = 1 },
    };
    simulate(f, c, 4, 80000);
    double total = c[0].service + c[1].service + c[2].service + c[3].service;
    double user0 = (c[0].service + c[1].service) / total;
    tap_ok(within(user0, 0.5, 0.05), "user-then-size: each of two users gets half (%.3f)", user0);
    double in_user = c[1].service / c[0].service;
    tap_ok(within(in_user, 3, 0.1), "user-then-size: a user's jobs share by size (%.3f)",
           in_user);
    drain(f, c, 4);
    fair_free(f);
}

static void test_user_fair(void)
{
    struct fair *f = fair_new(FAIR_USER, 1, 5);
    /* user 1000 runs three jobs, user 1001 one: users, not jobs, are equal */
    struct client c[4] = {
        { .who = { .job = 1, .uid = 1000 }, .cost = 100, .active = 1 },
        { .who = { .job = 2, .uid = 1000 }, .cost = 100, .active = 1 },
        { .who = { .job = 3, .uid = 1000 }, .cost = 100, .active = 1 },
        { .who = { .job = 4, .uid = 1001 }, .cost = 100, .active = 1 },
    };
    simulate(f, c, 4, 40000);
    double user0 = c[0].service + c[1].service + c[2].service;
    tap_ok(within(user0 / c[3].service, 1, 0.1), "user-fair: users are equal whatever their "
           "job counts (%.3f)", user0 / c[3].service);
    drain(f, c, 4);
    fair_free(f);
}

static void test_cost(void)
{
    /* a stat storm (50 us each) against 1 MiB writes (2050 us each) */
    struct fair *f = fair_new(FAIR_JOB, 1, 3);
    struct client c[2] = {
        { .who = { .job = 20, .uid = 1000 }, .cost = 50000, .active = 1 },
        { .who = { .job = 21, .uid = 1001 }, .cost = 2050000, .active = 1 },
    };
    simulate(f, c, 2, 100000);
    double ratio = c[0].service / c[1].service;
    tap_ok(within(ratio, 1, 0.1), "cost: stats and 1 MiB writes get equal service time (%.3f, "
           "%lu stats per write)", ratio, c[0].served / (c[1].served ? c[1].served : 1));
    drain(f, c, 2);
    fair_free(f);
}

static void test_fast_path(void)
{
    struct fair *f = fair_new(FAIR_JOB, 2, 1);
    struct fair_who who = { .job = 5, .uid = 1000 };
    struct fair_pass p[3];
    tap_ok(fair_try_enter(f, &who, &p[0]) == 1 && fair_try_enter(f, &who, &p[1]) == 1,
           "a request finding a slot free goes at once");
    tap_is_int(fair_try_enter(f, &who, &p[2]), 0, "one entity alone is held to the slots too");
    struct fair_who other = { .job = 6, .uid = 1001 };
    struct fair_pass q;
    tap_is_int(fair_try_enter(f, &other, &q), 0, "a second entity waits while the slots are "
               "taken");
    fair_leave(f, &p[0], 10);
    fair_leave(f, &p[1], 10);
    tap_ok(fair_granted(f, &q) && fair_granted(f, &p[2]), "both waiters are served as slots free");
    fair_leave(f, &p[2], 10);
    fair_leave(f, &q, 10);
    fair_free(f);
}

/* Threads through the blocking gate: every request is served once. */
struct worker {
    struct fair *f;
    struct fair_who who;
    int n;
    _Atomic int *inside;
    int max_inside;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        struct fair_pass p;
        if (fair_enter(w->f, &w->who, &p) < 0)
            continue;
        int now = ++*w->inside;
        if (now > w->max_inside)
            w->max_inside = now;
        struct timespec ts = { 0, 2000 };
        nanosleep(&ts, NULL);
        --*w->inside;
        fair_leave(w->f, &p, 2000);
    }
    return NULL;
}

static void test_threads(void)
{
    struct fair *f = fair_new(FAIR_JOB, 2, 0);
    _Atomic int inside = 0;
    struct worker w[6];
    pthread_t t[6];
    for (int i = 0; i < 6; i++) {
        w[i] = (struct worker){ .f = f, .who = { .job = 100 + i % 3, .uid = 1000 }, .n = 300,
                                .inside = &inside };
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    int max = 0;
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        if (w[i].max_inside > max)
            max = w[i].max_inside;
    }
    tap_ok(inside == 0, "threads: every request through the gate came out");
    struct fair_usage u[8];
    size_t n = fair_usage_take(f, u, 8);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += u[i].used;
    tap_ok(n == 3 && total == 6 * 300 * 2000ull, "threads: all cost charged to the 3 jobs");
    fair_free(f);
}

/* Two servers; job A uses both, job B only server 2: exchanging use each
 * period, server 2 gives B what A already had on server 1. */
static void test_exchange(void)
{
    struct fair *s1 = fair_new(FAIR_JOB, 1, 11), *s2 = fair_new(FAIR_JOB, 1, 12);
    struct client a1[1] = { { .who = { .job = 1, .uid = 1000 }, .cost = 100, .active = 1 } };
    struct client c2[2] = {
        { .who = { .job = 1, .uid = 1000 }, .cost = 100, .active = 1 },
        { .who = { .job = 2, .uid = 1001 }, .cost = 100, .active = 1 },
    };
    double a = 0, b = 0;
    for (int period = 0; period < 4; period++) {
        a1[0].service = c2[0].service = c2[1].service = 0;
        simulate(s1, a1, 1, 4000);
        simulate(s2, c2, 2, 4000);
        a = a1[0].service + c2[0].service;
        b = c2[1].service;
        struct fair_usage u[8];
        size_t n = fair_usage_take(s1, u, 4);
        n += fair_usage_take(s2, u + n, 4);
        fair_usage_apply(s1, u, n);
        fair_usage_apply(s2, u, n);
        if (period == 0)
            tap_ok(within(a / b, 3, 0.15), "exchange: without it the job on both servers gets "
                   "3 times the other (%.3f)", a / b);
    }
    tap_ok(within(a / b, 1, 0.1), "exchange: after it both jobs get equal global service "
           "(%.3f)", a / b);
    tap_ok(fair_correction(s2, 2) > 1, "exchange: server 2 weighs the job it alone serves "
           "more (%.2f)", fair_correction(s2, 2));
    drain(s1, a1, 1);
    drain(s2, c2, 2);
    fair_free(s1);
    fair_free(s2);
}

/* A time on the receivers' clock (CLOCK_REALTIME ns). */
#define T0 1800000000000000000ull
#define MS 1000000ull

/* Delivers every datagram of one server's period to the other. */
static int deliver(struct exchange *to, uint8_t out[][EXCHANGE_DGRAM_MAX], const size_t *lens,
                   size_t n, uint64_t now)
{
    char why[256];
    for (size_t i = 0; i < n; i++) {
        int rc = exchange_receive(to, out[i], lens[i], now, why, sizeof(why));
        if (rc < 0) {
            printf("# refused: %s\n", why);
            return rc;
        }
    }
    return 0;
}

/* The same two servers as test_exchange, their reports carried as
 * datagrams by exchange.c: shares settle within two periods; and every
 * forged, tampered, replayed, stale or misdirected datagram is refused. */
static void test_exchange_wire(void)
{
    uint8_t key[EXCHANGE_KEY_SIZE], other[EXCHANGE_KEY_SIZE];
    for (int i = 0; i < EXCHANGE_KEY_SIZE; i++)
        key[i] = (uint8_t)(i * 7 + 1), other[i] = (uint8_t)(i * 7 + 2);
    struct fair *s1 = fair_new(FAIR_JOB, 1, 21), *s2 = fair_new(FAIR_JOB, 1, 22);
    struct exchange *x1 = exchange_new(s1, key, 0, 2, 500), *x2 = exchange_new(s2, key, 1, 2, 500);
    struct exchange *forger = exchange_new(s1, other, 0, 2, 500);
    struct client a1[1] = { { .who = { .job = 1, .uid = 1000 }, .cost = 100, .active = 1 } };
    struct client c2[2] = {
        { .who = { .job = 1, .uid = 1000 }, .cost = 100, .active = 1 },
        { .who = { .job = 2, .uid = 1001 }, .cost = 100, .active = 1 },
    };
    static uint8_t out1[EXCHANGE_PARTS_MAX][EXCHANGE_DGRAM_MAX], out2[EXCHANGE_PARTS_MAX][EXCHANGE_DGRAM_MAX];
    size_t lens1[EXCHANGE_PARTS_MAX], lens2[EXCHANGE_PARTS_MAX];
    double ratio[4] = { 0 };
    unsigned used = 0;
    for (int period = 0; period < 4; period++) {
        a1[0].service = c2[0].service = c2[1].service = 0;
        simulate(s1, a1, 1, 4000);
        simulate(s2, c2, 2, 4000);
        ratio[period] = (a1[0].service + c2[0].service) / c2[1].service;
        uint64_t now = T0 + (uint64_t)period * 500 * MS;
        size_t n1 = exchange_period(x1, now, out1, lens1, NULL);
        size_t n2 = exchange_period(x2, now + 3 * MS, out2, lens2, &used);
        deliver(x2, out1, lens1, n1, now + 1 * MS);
        deliver(x1, out2, lens2, n2, now + 4 * MS);
    }
    tap_ok(within(ratio[0], 3, 0.15), "wire: the first period, before any report, 3:1 (%.3f)",
           ratio[0]);
    tap_ok(within(ratio[2], 1, 0.1) && within(ratio[3], 1, 0.1),
           "wire: equal global service from the third period on, within 2 periods of the "
           "first reports (%.3f, %.3f)", ratio[2], ratio[3]);
    tap_ok(used == 1, "wire: server 2 applied server 1's report (%u)", used);

    /* What a client holding the secret but not the server key could send. */
    char why[256];
    uint64_t now = T0 + 10 * 500 * MS;
    simulate(s1, a1, 1, 100);
    size_t n = exchange_period(forger, now, out1, lens1, NULL);
    tap_ok(n == 1 && exchange_receive(x2, out1[0], lens1[0], now, why, sizeof(why)) == -EACCES,
           "wire: a report made with another key is refused (%s)", why);
    simulate(s1, a1, 1, 100);
    n = exchange_period(x1, now, out1, lens1, NULL);
    out1[0][EXCHANGE_HEADER_SIZE + 16] ^= 1;   /* the first entry's use */
    tap_ok(exchange_receive(x2, out1[0], lens1[0], now, why, sizeof(why)) == -EACCES,
           "wire: a tampered report is refused (%s)", why);
    out1[0][EXCHANGE_HEADER_SIZE + 16] ^= 1;
    tap_ok(exchange_receive(x2, out1[0], lens1[0], now, why, sizeof(why)) == 0,
           "wire: the report as sent is taken");
    tap_ok(exchange_receive(x2, out1[0], lens1[0], now + MS, why, sizeof(why)) == -ESTALE,
           "wire: the same report again (a replay) is refused (%s)", why);
    n = exchange_period(x1, now + 20000 * MS, out1, lens1, NULL);
    tap_ok(exchange_receive(x2, out1[0], lens1[0], now, why, sizeof(why)) == -ESTALE,
           "wire: a report stamped 20 s ahead is refused (%s)", why);
    n = exchange_period(x2, now + MS, out2, lens2, NULL);
    tap_ok(exchange_receive(x2, out2[0], lens2[0], now + MS, why, sizeof(why)) == -EBADMSG,
           "wire: a server's own report reflected back is refused (%s)", why);
    tap_ok(exchange_receive(x2, out2[0], 10, now, why, sizeof(why)) == -EBADMSG &&
           exchange_receive(x2, out2[0], lens2[0] - 1, now, why, sizeof(why)) == -EBADMSG,
           "wire: truncated datagrams are refused (%s)", why);

    /* A report of more entities than one datagram holds comes in parts;
     * one lost part: the report is not used until a whole one comes. */
    drain(s1, a1, 1);   /* its request holds server 1's one slot */
    uint64_t later = now + 5000 * MS;   /* the reports above are stale */
    struct client many[130];
    for (int i = 0; i < 130; i++)
        many[i] = (struct client){ .who = { .job = 100 + (uint64_t)i, .uid = 2000 }, .cost = 10,
                                   .active = 1 };
    simulate(s1, many, 130, 4000);
    n = exchange_period(x1, later, out1, lens1, NULL);
    tap_ok(n == 3, "wire: 130 entities go in 3 datagrams (%zu)", n);
    deliver(x2, out1, lens1, 2, later + MS);
    exchange_period(x2, later + 2 * MS, out2, lens2, &used);
    tap_ok(used == 0, "wire: an incomplete report is not applied (%u peers)", used);
    deliver(x2, out1 + 2, lens1 + 2, 1, later + 3 * MS);
    exchange_period(x2, later + 4 * MS, out2, lens2, &used);
    tap_ok(used == 1, "wire: once whole it is (%u peers)", used);
    exchange_period(x2, later + 1100 * MS, out2, lens2, &used);
    tap_ok(used == 0, "wire: a peer silent for 2 periods no longer counts (%u peers)", used);
    drain(s1, many, 130);
    drain(s2, c2, 2);
    exchange_free(x1);
    exchange_free(x2);
    exchange_free(forger);
    fair_free(s1);
    fair_free(s2);
}

static void test_cgroups(void)
{
    tap_is_int(fair_job_of_cgroup("/slurm/uid_999/job_42/step_0/task_0", 999), 42,
               "cgroup v1: the job of a Slurm step");
    tap_is_int(fair_job_of_cgroup("/slurm_n3/uid_999/job_42/step_batch", 999), 42,
               "cgroup v1 with several slurmd on a host");
    tap_is_int(fair_job_of_cgroup("/slurm/uid_1001/job_42/step_0", 999), 0,
               "cgroup v1: another user's job path does not count");
    tap_is_int(fair_job_of_cgroup("/system.slice/slurmstepd.scope/job_7/step_0/user/task_0", 5),
               7, "cgroup v2: the job of a Slurm step");
    tap_is_int(fair_job_of_cgroup("/system.slice/n1_slurmstepd.scope/job_7", 5), 7,
               "cgroup v2 with several slurmd on a host");
    tap_is_int(fair_job_of_cgroup("/system.slice/evilslurmstepd.scope/job_7", 5), 0,
               "cgroup v2: a unit merely ending in slurmstepd.scope does not count");
    tap_is_int(fair_job_of_cgroup("/user.slice/user-5.slice/user@5.service/slurm/uid_5/job_7", 5),
               0, "a user's own cgroups named like Slurm's do not count");
    tap_is_int(fair_job_of_cgroup("/system.slice/slurmstepd.scope/job_7x/step_0", 5), 0,
               "job_ID must be all digits");
    tap_is_int(fair_job_of_cgroup("/slurm/uid_5/job_-7/step_0", 5), 0, "no signs");
    tap_is_int(fair_job_of_cgroup("/", 5), 0, "no job at the root");
}

int main(void)
{
    test_cgroups();
    test_policies();
    test_size_fair();
    test_jobs_file();
    test_job_fair();
    test_user_then_size();
    test_user_fair();
    test_cost();
    test_fast_path();
    test_threads();
    test_exchange();
    test_exchange_wire();
    return tap_done();
}
