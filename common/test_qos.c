/* Unit tests of the QoS data plane: limit sets, the shared segment, and a
 * process attaching to a stand-in agent over a real Unix socket. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qos_attach.h"
#include "qos_client.h"
#include "qos_limits.h"
#include "qos_paths.h"
#include "qos_conf.h"
#include "qos_proto.h"
#include "qos_seg.h"
#include "tap.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_limits(void)
{
    struct qos_limits l;
    char err[256] = "", buf[256];
    tap_is_int(qos_limits_parse("stat=1000,write=100M", &l, err, sizeof(err)), 0, "parse stat and write");
    tap_ok(l.v[QOS_STAT] == 1000 && l.v[QOS_WRITE] == 100ull << 20 && l.v[QOS_OPEN] == 0,
           "values and classes not given");
    tap_is_int(qos_limits_parse("mdops=2000 bw=500M stat=unlimited", &l, err, sizeof(err)), 0,
               "shorthands and blanks");
    tap_ok(l.v[QOS_OPEN] == 2000 && l.v[QOS_OTHER] == 2000 && l.v[QOS_READ] == 500ull << 20 &&
           l.v[QOS_STAT] == QOS_UNLIMITED, "mdops and bw expand, a later item overrides");
    qos_limits_format(&l, buf, sizeof(buf));
    tap_is_str(buf, "open=2000,close=2000,stat=unlimited,readdir=2000,mkdir=2000,unlink=2000,"
               "rename=2000,other=2000,read=500M,write=500M", "canonical text");
    struct qos_limits back;
    tap_is_int(qos_limits_parse(buf, &back, err, sizeof(err)), 0, "the canonical text parses");
    tap_ok(memcmp(&back, &l, sizeof(l)) == 0, "and gives the same set");
    tap_is_int(qos_limits_parse("stats=5", &l, err, sizeof(err)), -EINVAL, "unknown class refused");
    tap_ok(strstr(err, "'stats'") != NULL, "the message names it: %s", err);
    tap_is_int(qos_limits_parse("write=12QB", &l, err, sizeof(err)), -EINVAL, "bad size refused");
    tap_ok(strstr(err, "'12QB'") && strstr(err, "write"), "the message names value and class: %s", err);
    tap_is_int(qos_limits_parse("stat=0", &l, err, sizeof(err)), -EINVAL, "a rate of 0 is refused");
    tap_is_int(qos_limits_parse("stat=1.5K", &l, err, sizeof(err)), -EINVAL,
               "operations are whole numbers");
    tap_is_int(qos_limits_parse("stat", &l, err, sizeof(err)), -EINVAL, "an item without '='");
    tap_is_int(qos_limits_parse("write=100MB/s,stat=500/s", &l, err, sizeof(err)), 0,
               "a rate may end in /s");
    tap_ok(l.v[QOS_WRITE] == 100ull << 20 && l.v[QOS_STAT] == 500, "and means the same");
    tap_is_int(qos_limits_parse("stat=/s", &l, err, sizeof(err)), -EINVAL, "'/s' alone is no rate");
    tap_is_int(qos_limits_parse("stat=100,Stat=200", &l, err, sizeof(err)), -EINVAL,
               "a class given twice is refused");
    tap_ok(strstr(err, "Stat given twice (in 'Stat=200')") != NULL, "named: %s", err);
    tap_is_int(qos_limits_parse("bw=1G mdops=5 bw=2G", &l, err, sizeof(err)), -EINVAL,
               "and bw twice");
    tap_is_int(qos_limits_parse(NULL, &l, err, sizeof(err)), 0, "NULL is an empty set");
    tap_ok(!qos_limits_any(&l), "with nothing given");
    struct qos_limits max, want;
    qos_limits_parse("mdops=5000,bw=1G", &max, err, sizeof(err));
    qos_limits_parse("stat=6000", &want, err, sizeof(err));
    tap_is_int(qos_limits_check_max(&want, &max, err, sizeof(err)), -E2BIG, "above the maximum");
    tap_ok(strstr(err, "stat=6000") && strstr(err, "stat=5000"), "named: %s", err);
    qos_limits_parse("stat=5000,write=1G", &want, err, sizeof(err));
    tap_is_int(qos_limits_check_max(&want, &max, err, sizeof(err)), 0, "at the maximum is fine");
    char show[5][32];
    qos_rate_show(QOS_WRITE, 104859648, show[0], sizeof(show[0]));   /* 102402K */
    qos_rate_show(QOS_WRITE, 100ull << 20, show[1], sizeof(show[1]));
    qos_rate_show(QOS_WRITE, 1610612736ull + 12345, show[2], sizeof(show[2]));
    qos_rate_show(QOS_STAT, 0, show[3], sizeof(show[3]));
    qos_rate_show(QOS_WRITE, 8192, show[4], sizeof(show[4]));
    tap_ok(!strcmp(show[0], "100M") && !strcmp(show[1], "100M") && !strcmp(show[2], "1.50G") &&
           !strcmp(show[3], "0") && !strcmp(show[4], "8K"),
           "rates shown in 3 digits: %s %s %s %s %s", show[0], show[1], show[2], show[3], show[4]);
}

static bool plain_naive(const char *s)
{
    for (const char *p = s; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || p[1] == '.'))
            return false;
    return true;
}

static void test_paths(void)
{
    struct qos_paths p;
    char err[256];
    tap_is_int(qos_paths_parse("/pfs/,/home//proj:/scratch/../lustre", &p, err, sizeof(err)), 0,
               "three mount points");
    tap_ok(p.n == 3 && strcmp(p.path[0], "/pfs") == 0 && strcmp(p.path[1], "/home/proj") == 0 &&
           strcmp(p.path[2], "/lustre") == 0, "normalised");
    tap_ok(qos_paths_match(&p, "/pfs") && qos_paths_match(&p, "/pfs/a/b") &&
           qos_paths_match(&p, "/lustre/x"), "the mount points and below are on the PFS");
    tap_ok(!qos_paths_match(&p, "/pfsx/a") && !qos_paths_match(&p, "/home/projx") &&
           !qos_paths_match(&p, "/tmp/pfs") && !qos_paths_match(&p, "/"), "lookalikes are not");
    tap_ok(qos_paths_match(&p, "/tmp/../pfs/a") && qos_paths_match(&p, "//pfs//a") &&
           qos_paths_match(&p, "/./home/./proj/x") && !qos_paths_match(&p, "/pfs/../tmp/x"),
           "'..', '.' and '//' are normalised away");
    tap_ok(qos_paths_above(&p, "/") && qos_paths_above(&p, "/home") && !qos_paths_above(&p, "/pfs") &&
           !qos_paths_above(&p, "/hom"), "ancestors of the mount points");
    tap_is_int(qos_paths_parse("pfs", &p, err, sizeof(err)), -EINVAL, "a relative path is refused");
    tap_is_int(qos_paths_parse(",:", &p, err, sizeof(err)), -EINVAL, "no path at all is refused");
    /* The vector scan against the plain loop, at every alignment and
     * across blocks, up to the end of a page. */
    const char *cases[] = { "/a/b/c", "/a//b", "/a/./b", "/a/../b", "/a/.hidden", "a/b", "/",
                            "/abcdefghijklmno/", "/abcdefghijklmn//x", "/abcdefghijklmno/.",
                            "/abcdefghijklmnopqrstuvwxyz012345/x/y", "abcdefghijklmno/.x", "" };
    char buf[256];
    int bad = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int off = 0; off < 32; off++) {
            strcpy(buf + off, cases[i]);
            if (qos_path_plain(buf + off) != plain_naive(cases[i]))
                bad++;
        }
    long page = sysconf(_SC_PAGESIZE);
    char *pg = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(pg + page, (size_t)page, PROT_NONE);
    for (int len = 0; len < 40; len++) {
        char *s = pg + page - len - 1;
        memset(s, 'x', (size_t)len);
        if (len > 3)
            s[len - 2] = '/', s[len - 1] = '.';
        s[len] = '\0';
        if (qos_path_plain(s) != plain_naive(s))
            bad++;
    }
    munmap(pg, 2 * (size_t)page);
    tap_is_int(bad, 0, "qos_path_plain agrees with a byte loop everywhere");
    /* qos_paths_match's vector shortcut against normalise-then-compare. */
    qos_paths_parse("/pfs,/home/proj,/a-very-long-mount-point-name-over-32-bytes", &p, err, sizeof(err));
    const char *paths[] = { "/pfs", "/pfs/", "/pfs/x", "/pfsx", "/pf", "/home/proj", "/home/pro",
                            "/home/projects/x", "/home/proj/a/b/c/d/e/f/g/h/i/j/k/l/m", "/x/../pfs/y",
                            "/pfs/../x", "//pfs", "/a-very-long-mount-point-name-over-32-bytes/f",
                            "/a-very-long-mount-point-name-over-32-byte", "/tmp/abcdefghijklmnopqrstuvwxyz/pfs" };
    bad = 0;
    /* A page followed by one that faults: a read past a path's end there
     * would crash the test. */
    pg = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(pg + page, (size_t)page, PROT_NONE);
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        char norm[4096];
        path_normalise(paths[i], norm, sizeof(norm));
        bool want = qos_paths_under(&p, norm);
        size_t len = strlen(paths[i]);
        for (int off = 0; off < 40; off++) {
            strcpy(buf + off, paths[i]);
            if (qos_paths_match(&p, buf + off) != want)
                bad++;
            char *end = pg + page - len - 1 - (size_t)off % 8;   /* near a page's end */
            strcpy(end, paths[i]);
            if (qos_paths_match(&p, end) != want)
                bad++;
        }
    }
    munmap(pg, 2 * (size_t)page);
    tap_is_int(bad, 0, "qos_paths_match agrees with normalising first, at every alignment");
}

static void test_seg(void)
{
    int fd;
    struct qos_seg *s;
    tap_is_int(qos_seg_create(7, 4, &fd, &s), 0, "a sealed segment");
    tap_ok(ftruncate(fd, 0) < 0 && errno == EPERM, "it cannot be shrunk (a peer's SIGBUS)");
    struct qos_limits l = { .v = { [QOS_STAT] = 1000 } };
    tap_ok(qos_seg_set_limits(s, &l) == 1 && s->head.gen == 1, "new limits bump gen");
    tap_ok(qos_seg_set_limits(s, &l) == 0 && s->head.gen == 1, "the same limits do not");
    int64_t t = 1000000000, waited = 0;
    for (int i = 0; i < 20; i++)
        waited += qos_seg_reserve(s, QOS_STAT, 1000, 1, t, 20000000);
    tap_is_int(waited, 0, "20 ms of tokens at 1000/s are granted at once");
    tap_is_int(qos_seg_reserve(s, QOS_STAT, 1000, 1, t, 20000000), 1000000,
               "the next waits one token's time");
    tap_is_int(qos_seg_reserve(s, QOS_STAT, 1000, 1, t + 50000000, 20000000), 0,
               "after idling it is granted again");
    /* Reserved 100 ms ahead at 1000/s: owed at any new rate. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    atomic_store(&s->bucket[QOS_STAT].next_ns, now + 100000000);
    l.v[QOS_STAT] = 2000;
    qos_seg_set_limits(s, &l);
    int64_t ahead = atomic_load(&s->bucket[QOS_STAT].next_ns) - now;
    tap_ok(ahead > 45000000 && ahead <= 51000000,
           "a higher limit keeps what was reserved, in its own time (%.1f ms of 50)", ahead / 1e6);
    l.v[QOS_STAT] = 500;
    qos_seg_set_limits(s, &l);
    ahead = atomic_load(&s->bucket[QOS_STAT].next_ns) - now;
    tap_ok(ahead > 180000000 && ahead <= 204000000, "a lower one too (%.1f ms of 200)", ahead / 1e6);
    l.v[QOS_STAT] = 1;
    qos_seg_set_limits(s, &l);
    ahead = atomic_load(&s->bucket[QOS_STAT].next_ns) - now;
    tap_ok(ahead <= QOS_CARRY_MAX_NS + 10000000 && ahead > QOS_CARRY_MAX_NS - 100000000,
           "at most QOS_CARRY_MAX_NS (%.0f ms)", ahead / 1e6);
    l.v[QOS_STAT] = QOS_UNLIMITED;
    qos_seg_set_limits(s, &l);
    tap_is_int(atomic_load(&s->bucket[QOS_STAT].next_ns), 0, "no limit owes nothing");
    struct qos_seg_slot *a = qos_seg_claim(s, getpid()), *b = qos_seg_claim(s, 999999999);
    tap_ok(a && b && a != b, "two slots");
    a->used[QOS_STAT] = 5;
    b->used[QOS_STAT] = 7;
    struct qos_usage u;
    qos_seg_collect(s, 4, &u);
    tap_ok(u.used[QOS_STAT] == 12 && u.procs == 1, "collect sums every slot and frees a dead pid's");
    tap_ok(b->pid == 0 && b->used[QOS_STAT] == 7, "a freed slot keeps its counts");
    /* The job's processes may write the header: its count is not read. */
    s->head.nslots = UINT32_MAX;
    qos_seg_collect(s, 4, &u);
    tap_ok(u.used[QOS_STAT] == 12, "collect reads the slots made, whatever the header says");
    qos_seg_unmap(s, 4);
    close(fd);
}

/* A stand-in agent: answers attach requests for job 42 with seg_fd. */
static int seg_fd = -1;
static uid_t job_uid;
static int listener = -1;

static int lookup(void *ctx, uint32_t job, uid_t uid)
{
    if (job != 42)
        return -ENOENT;
    if (uid != job_uid)
        return -EACCES;
    return seg_fd;
}

static void *agent(void *arg)
{
    for (;;) {
        int c = accept(listener, NULL, NULL);
        if (c < 0)
            return NULL;
        uint32_t job;
        uid_t uid;
        qos_attach_answer(c, 1000, lookup, NULL, &job, &uid);
        close(c);
    }
}

static void test_client(void)
{
    char dir[] = "/tmp/test_qos.XXXXXX";
    tap_ok(mkdtemp(dir) != NULL, "a temporary directory");
    struct qos_client_conf conf = { .job_id = 42 };
    snprintf(conf.socket, sizeof(conf.socket), "%s/qos.sock", dir);
    char err[256];
    qos_limits_parse("stat=200", &conf.dflt, err, sizeof(err));
    qos_client_init(&conf);

    /* No agent yet: the static default, from a private budget. */
    double t0 = now_s();
    for (int i = 0; i < 44; i++)
        qos_charge(QOS_STAT, 1);
    double dt = now_s() - t0;
    struct qos_client_state st;
    qos_client_state(&st);
    tap_ok(!st.attached && st.limit[QOS_STAT] == 200, "without an agent: the default, 200/s");
    tap_ok(dt > 0.12 && dt < 2.0, "44 stats at 200/s (4 at once) took %.3f s (0.2 s due)", dt);
    tap_ok(st.limit[QOS_OPEN] == QOS_UNLIMITED, "a class without a default has no limit");
    tap_ok(st.used[QOS_STAT] >= 44, "counted: %llu", (unsigned long long)st.used[QOS_STAT]);

    /* The agent comes up; no controller has driven it yet (QoS off): a
     * stager's wait for first limits returns at once. */
    struct qos_seg *s;
    qos_seg_create(42, 8, &seg_fd, &s);
    job_uid = getuid();
    listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", conf.socket);
    bind(listener, (struct sockaddr *)&a, sizeof(a));
    listen(listener, 8);
    pthread_t th;
    pthread_create(&th, NULL, agent, NULL);
    t0 = now_s();
    int arc = qos_client_await(3000);
    dt = now_s() - t0;
    tap_ok(arc == 0 && dt < 1.0, "no controller: no limits awaited (%d after %.3f s)", arc, dt);
    /* A controller drives the agent but has not named the job: waited for,
     * up to the timeout. */
    qos_seg_beat(s, 1, 1);
    t0 = now_s();
    arc = qos_client_await(200);
    dt = now_s() - t0;
    tap_ok(arc == -ETIMEDOUT && dt >= 0.15, "a controller: its limits awaited (%d after %.3f s)",
           arc, dt);

    /* Then the budget gets 5000/s: taken at the next retry. */
    struct qos_limits l = { .v = { [QOS_STAT] = 5000 } };
    qos_seg_set_limits(s, &l);
    usleep((QOS_RETRY_MS + 100) * 1000);
    qos_charge(QOS_STAT, 1);
    qos_client_state(&st);
    tap_ok(st.attached, "attached to the agent's segment at the next retry");
    tap_ok(st.limit[QOS_STAT] == 5000, "its limit applies: %llu", (unsigned long long)st.limit[QOS_STAT]);
    tap_is_int(qos_client_await(3000), 1, "limits in force: nothing to wait for");
    t0 = now_s();
    for (int i = 0; i < 600; i++)
        qos_charge(QOS_STAT, 1);
    dt = now_s() - t0;
    tap_ok(dt > 0.08 && dt < 2.0, "600 stats at 5000/s took %.3f s (0.12 s due)", dt);

    /* A new limit reaches the process at its next lease: a lease is at
     * most 1 ms of 5000/s, so the sixth charge takes one. */
    l.v[QOS_STAT] = 100;
    qos_seg_set_limits(s, &l);
    for (int i = 0; i < 6; i++)
        qos_charge(QOS_STAT, 1);
    qos_client_state(&st);
    tap_ok(st.limit[QOS_STAT] == 100, "a changed limit is seen at once");

    /* Usage is counted in the segment, by process. */
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 3; i++)
            qos_charge(QOS_WRITE, 1000);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    struct qos_usage u;
    qos_seg_collect(s, 8, &u);
    tap_ok(u.used[QOS_STAT] >= 600 && u.used[QOS_WRITE] >= 3000,
           "the segment holds both processes' usage (stat %llu, write %llu)",
           (unsigned long long)u.used[QOS_STAT], (unsigned long long)u.used[QOS_WRITE]);
    tap_is_int(u.procs, 1, "the child's slot was given back at its exit");
    tap_ok(u.waited_ns[QOS_STAT] > 0, "time spent delayed is counted");

    /* A request from another uid, or for another job, is refused. */
    job_uid = getuid() + 1;
    int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    connect(c, (struct sockaddr *)&a, sizeof(a));
    uint8_t req[QOS_ATTACH_LEN], rep[QOS_ATTACH_LEN];
    qos_attach_req_encode(42, req);
    send(c, req, sizeof(req), 0);
    int32_t rs = 0;
    ssize_t got = recv(c, rep, sizeof(rep), 0);
    tap_ok(got == QOS_ATTACH_LEN && qos_attach_rep_decode(rep, (size_t)got, &rs) == 0 && rs == -EACCES,
           "another uid's request is refused with EACCES");
    close(c);
    c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    connect(c, (struct sockaddr *)&a, sizeof(a));
    send(c, "garbage", 7, 0);
    got = recv(c, rep, sizeof(rep), 0);
    tap_ok(got <= 0, "a malformed request gets no answer");
    close(c);
    shutdown(listener, SHUT_RDWR);
    close(listener);
    pthread_join(th, NULL);
    unlink(conf.socket);
    rmdir(dir);
}

/* The compact class vector: 0 and QOS_UNLIMITED cost a bit and a byte,
 * every value comes back, and a value has one encoding. */
static void test_classes(void)
{
    uint64_t v[QOS_NCLASSES] = { 0 }, back[QOS_NCLASSES];
    v[QOS_OPEN] = 1;
    v[QOS_STAT] = 1000;
    v[QOS_READ] = QOS_UNLIMITED;
    v[QOS_WRITE] = QOS_UNLIMITED - 1;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    qos_classes_put(&w, v);
    tap_is_int((int)w.len, 2 + 1 + 2 + 1 + 10, "mask, then 1, 1000, unlimited, 2^64-2 in 1+2+1+10 bytes");
    struct rpc_writer m;
    rpc_writer_init(&m, NULL, 0);
    rpc_put_u32(&m, QOS_PROTO_VERSION);
    rpc_put_u64(&m, 9);
    rpc_put_u32(&m, 1000);   /* answer in 1 s */
    rpc_put_u32(&m, 1);
    rpc_put_u32(&m, 42);
    rpc_put_u32(&m, 1000);
    rpc_put_raw(&m, w.data, w.len);
    struct rpc_reader r;
    rpc_reader_init(&r, m.data, m.len);
    struct qos_cycle cy;
    tap_is_int(qos_cycle_get(&r, &cy), 0, "a limits message with it decodes");
    if (cy.njobs == 1)
        memcpy(back, cy.jobs[0].limit.v, sizeof(back));
    tap_ok(cy.njobs == 1 && memcmp(back, v, sizeof(v)) == 0 && cy.answer_in_ms == 1000,
           "every class comes back, and when the report is due");
    free(cy.jobs);
    uint8_t late[128];
    memcpy(late, m.data, m.len);
    uint32_t too_late = QOS_ANSWER_MAX_MS + 1;
    for (int b = 0; b < 4; b++)        /* little-endian, as rpc.h writes */
        late[12 + b] = (uint8_t)(too_late >> 8 * b);
    rpc_reader_init(&r, late, m.len);
    tap_is_int(qos_cycle_get(&r, &cy), -EBADMSG, "a report due past QOS_ANSWER_MAX_MS is refused");
    /* 1000 + 1 = 0xe9 0x07; padded to 0xe9 0x87 0x00 it is not its shortest form. */
    size_t at = m.len - w.len + 3;
    uint8_t padded[128];
    memcpy(padded, m.data, at + 2);
    padded[at + 1] |= 0x80;
    padded[at + 2] = 0;
    memcpy(padded + at + 3, m.data + at + 2, m.len - at - 2);
    rpc_reader_init(&r, padded, m.len + 1);
    tap_is_int(qos_cycle_get(&r, &cy), -EBADMSG, "a padded varint is refused");
    rpc_writer_free(&w);
    rpc_writer_free(&m);
}

/* The relays' messages: a group request with its members and parts, and
 * the group report, both ways; and what the decoders refuse. */
static void test_group(void)
{
    static struct qos_group_request g, back;
    g = (struct qos_group_request){ .cycle = 77, .answer_in_ms = 900, .epoch = 3, .self = 1,
                                    .nmembers = 3 };
    const char *names[] = { "n1", "n2", "n3" };
    for (int i = 0; i < 3; i++)
        g.members[i] = (struct qos_group_member){ .node = names[i], .host = "10.0.0.1",
                                                  .port = 6000 + (uint32_t)i };
    /* Members 0 and 2 busy: their AGENT_QOS bodies. */
    struct rpc_writer b0, b2, w;
    rpc_writer_init(&b0, NULL, 0);
    rpc_writer_init(&b2, NULL, 0);
    struct qos_job_limits jl = { .job_id = 5, .uid = 1000 };
    jl.limit.v[QOS_STAT] = 1000;
    qos_cycle_put(&b0, &(struct qos_cycle){ .cycle = 77, .answer_in_ms = 880, .njobs = 1, .jobs = &jl });
    qos_cycle_put(&b2, &(struct qos_cycle){ .cycle = 77, .answer_in_ms = 880 });
    g.nparts = 2;
    g.parts[0] = (struct qos_group_part){ .index = 0, .body = b0.data, .len = (uint32_t)b0.len };
    g.parts[1] = (struct qos_group_part){ .index = 2, .body = b2.data, .len = (uint32_t)b2.len };
    rpc_writer_init(&w, NULL, 0);
    qos_group_request_put(&w, &g);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    int rc = qos_group_request_get(&r, &back, 0);
    tap_ok(rc == 0 && back.nmembers == 3 && back.nparts == 2 && back.self == 1 &&
           strcmp(back.members[2].node, "n3") == 0 && back.members[2].port == 6002 &&
           back.parts[1].index == 2 && back.parts[0].len == b0.len &&
           memcmp(back.parts[0].body, b0.data, b0.len) == 0,
           "a group request with 3 members and 2 parts comes back (%d)", rc);
    struct qos_cycle c;
    rpc_reader_init(&r, back.parts[0].body, back.parts[0].len);
    tap_ok(qos_cycle_get(&r, &c) == 0 && c.njobs == 1 && c.jobs[0].limit.v[QOS_STAT] == 1000,
           "a part is the member's AGENT_QOS body as it is");
    free(c.jobs);

    /* Without the list: good against a known group of 3, refused of 2. */
    g.nmembers = 0;
    w.len = 0;
    qos_group_request_put(&w, &g);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_request_get(&r, &back, 3), 0, "the epoch's list not repeated: decodes");
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_request_get(&r, &back, 2), -EBADMSG,
               "an index beyond the members held is refused");
    g.parts[1].index = 0;
    w.len = 0;
    qos_group_request_put(&w, &g);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_request_get(&r, &back, 3), -EBADMSG, "a member named twice is refused");
    g.parts[1].index = 2;
    g.self = 3;
    w.len = 0;
    qos_group_request_put(&w, &g);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_request_get(&r, &back, 3), -EBADMSG, "a relay not among its members is refused");
    g.self = 1;
    w.len = 0;
    qos_group_request_put(&w, &g);
    rpc_put_u32(&w, 0);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_request_get(&r, &back, 3), -EBADMSG, "trailing bytes are refused");
    struct rpc_writer big;
    rpc_writer_init(&big, NULL, 0);
    rpc_put_u32(&big, QOS_PROTO_VERSION);
    rpc_put_u64(&big, 1);
    rpc_put_u32(&big, 0);
    rpc_put_u32(&big, 1);
    rpc_put_u32(&big, 0);
    rpc_put_u32(&big, QOS_GROUP_MAX + 1);
    rpc_reader_init(&r, big.data, big.len);
    tap_is_int(qos_group_request_get(&r, &back, 0), -EBADMSG, "more than 256 members are refused");
    rpc_writer_free(&big);

    /* The report: member 0 reported, member 2 did not answer. */
    struct rpc_writer rb;
    rpc_writer_init(&rb, NULL, 0);
    struct qos_job_usage u = { .job_id = 5, .procs = 4 };
    u.used[QOS_STAT] = 12345;
    qos_report_put(&rb, &(struct qos_report){ .cycle = 76, .njobs = 1, .jobs = &u });
    static struct qos_group_report rep, rback;
    rep = (struct qos_group_report){ .cycle = 77, .n = 2 };
    rep.e[0] = (struct qos_group_entry){ .index = 0, .status = QOS_MEMBER_REPORTED, .reason = "",
                                         .report = rb.data, .len = (uint32_t)rb.len };
    rep.e[1] = (struct qos_group_entry){ .index = 2, .status = QOS_MEMBER_NO_ANSWER,
                                         .reason = "no report by the deadline" };
    w.len = 0;
    qos_group_report_put(&w, &rep);
    rpc_reader_init(&r, w.data, w.len);
    rc = qos_group_report_get(&r, &rback, 3);
    struct qos_report mr = { 0 };
    struct rpc_reader rr;
    rpc_reader_init(&rr, rback.e[0].report, rback.e[0].len);
    tap_ok(rc == 0 && rback.n == 2 && rback.cycle == 77 && rback.e[1].status == QOS_MEMBER_NO_ANSWER &&
           strcmp(rback.e[1].reason, "no report by the deadline") == 0 &&
           qos_report_get(&rr, &mr) == 0 && mr.njobs == 1 && mr.jobs[0].used[QOS_STAT] == 12345,
           "a group report comes back, each member's report decoding as a direct one (%d)", rc);
    free(mr.jobs);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_report_get(&r, &rback, 2), -EBADMSG,
               "a report naming a member beyond the group is refused");
    rep.e[1].status = QOS_MEMBER_REPORTED;
    w.len = 0;
    qos_group_report_put(&w, &rep);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_report_get(&r, &rback, 3), -EBADMSG, "'reported' with no report is refused");
    rep.e[1] = rep.e[0];
    w.len = 0;
    qos_group_report_put(&w, &rep);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_report_get(&r, &rback, 3), -EBADMSG, "a member reported twice is refused");
    rep.e[1] = (struct qos_group_entry){ .index = 2, .status = QOS_MEMBER_NSTATUS, .reason = "" };
    w.len = 0;
    qos_group_report_put(&w, &rep);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(qos_group_report_get(&r, &rback, 3), -EBADMSG, "an unknown status is refused");
    rpc_writer_free(&rb);
    rpc_writer_free(&w);
    rpc_writer_free(&b0);
    rpc_writer_free(&b2);
}

/* AdafsQosRelayGroup: 0 or 2-256, 32 by default. */
static void test_relay_conf(void)
{
    struct qos_conf c;
    qos_conf_defaults(&c);
    char err[512];
    tap_ok(c.relay_group == 32, "relays: groups of 32 by default");
    tap_ok(qos_conf_set(&c, "AdafsQosRelayGroup", "2", err, sizeof(err)) == 1 && c.relay_group == 2 &&
           qos_conf_set(&c, "AdafsQosRelayGroup", "0", err, sizeof(err)) == 1 && c.relay_group == 0,
           "AdafsQosRelayGroup 2 and 0 (no relays) taken");
    const char *bad[] = { "1", "257", "-3", "x", "", "32 nodes" };
    int refused = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        refused += qos_conf_set(&c, "AdafsQosRelayGroup", bad[i], err, sizeof(err)) < 0;
    tap_ok(refused == 6 && strstr(err, "AdafsQosRelayGroup") != NULL,
           "1, 257, -3, x, empty and '32 nodes' refused (%s)", err);
    qos_conf_free(&c);
}

int main(void)
{
    test_limits();
    test_relay_conf();
    test_classes();
    test_group();
    test_paths();
    test_seg();
    test_client();
    return tap_done();
}
