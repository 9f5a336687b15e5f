/* Persistent instances through the driver, without slurmctld: a creating
 * job deploys the instance's servers (START with the persistent flag, as
 * their owner, on persistent nodes) and mounts it; a later job of another
 * user of its group mounts it with a CONFIGURE only; its record survives a
 * reload; a destroy is refused while a job uses it, then tears it down
 * (TEARDOWN of the instance's id on its nodes only) and frees the name;
 * a job's end never touches it; a creation that fails fails its job; a
 * job with a file system of its own that also uses it gets a CONFIGURE of
 * each (its own, then the instance's as a further mount). The
 * agents are a queue the test answers (as the link would, off the lock). */
#include "agent_proto.h"
#include "bb_status.h"
#include "driver.h"
#include "persist_job.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- a transport whose requests the test answers ------------------------ */

struct sent {
    struct agent_call *call;
    char host[16];
    uint16_t op;
    uint32_t id, flags, uid, access_gid;
    char name[40];
    char further[40];   /* CONFIGURE: the instance of a further mount */
};
static struct sent queue[256];
static size_t queued, answered;
static struct sent log_of[1024];
static size_t nlog;
static bool fail_start;

static void test_send(void *ctx, struct agent_call *c)
{
    (void)ctx;
    struct sent s = { .call = c, .op = c->op };
    snprintf(s.host, sizeof(s.host), "%s", c->host);
    struct rpc_reader r;
    rpc_reader_init(&r, c->body, c->len);
    if (c->op == AGENT_START) {
        struct agent_start m;
        if (agent_start_get(&r, &m) == 0) {
            s.id = m.job_id;
            s.flags = m.flags;
            s.uid = m.uid;
            s.access_gid = m.access_gid;
            snprintf(s.name, sizeof(s.name), "%s", m.persist_name ? m.persist_name : "");
        }
    } else if (c->op == AGENT_CONFIGURE) {
        struct agent_configure m;
        if (agent_configure_get(&r, &m) == 0) {
            s.id = m.job_id;
            snprintf(s.name, sizeof(s.name), "%s", m.mount);
            snprintf(s.further, sizeof(s.further), "%s", m.name);
        }
    } else if (c->op == AGENT_TEARDOWN || c->op == AGENT_STATUS) {
        struct agent_job_ref m;
        if (agent_job_ref_get(&r, &m) == 0)
            s.id = m.job_id;
    }
    queue[queued++ % 256] = s;
    if (nlog < 1024)
        log_of[nlog++] = s;
}

static const struct lc_transport transport = { test_send, NULL, NULL };

static void reply_ok(struct agent_call *c, struct rpc_writer *w)
{
    c->rc = 0;
    c->reply = (struct agent_reply){ .status = 0, .body = w->data, .len = w->len };
    rpc_reader_init(&c->reply.reader, w->data, w->len);
}

static void answer_all(void)
{
    while (answered < queued) {
        struct agent_call *c = queue[answered++ % 256].call;
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        if (c->op == AGENT_START && fail_start) {
            struct agent_error e = { .fault = AGENT_FAULT_JOB };
            snprintf(e.text, sizeof(e.text), "node %s: storage refused", c->node);
            agent_error_put(&w, &e);
            c->rc = 0;
            c->reply = (struct agent_reply){ .status = -EACCES, .body = w.data, .len = w.len };
            rpc_reader_init(&c->reply.reader, w.data, w.len);
            agent_error_get(&c->reply.reader, &c->reply.message, &c->reply.fault);
        } else {
            if (c->op == AGENT_START)
                agent_started_put(&w, &(struct agent_started){ 7000 + (uint32_t)c->host[1], 99 });
            if (c->op == AGENT_STATUS)   /* a persistent instance's server: 1 MiB held */
                agent_stage_status_put(&w, &(struct agent_stage_status){
                    .summary = "", .errors = "", .has_server = 1, .port = 7000, .pid = 99,
                    .used = 1 << 20 });
            reply_ok(c, &w);
        }
        c->done(c);
    }
}

/* How many requests of op went to host (NULL: any) about id (0: any). */
static int count(const char *host, uint16_t op, uint32_t id)
{
    int n = 0;
    for (size_t i = 0; i < nlog; i++)
        n += log_of[i].op == op && (!host || strcmp(log_of[i].host, host) == 0) &&
             (!id || log_of[i].id == id);
    return n;
}

static const struct sent *last(uint16_t op)
{
    for (size_t i = nlog; i-- > 0;)
        if (log_of[i].op == op)
            return &log_of[i];
    return NULL;
}

/* --- jobs ---------------------------------------------------------------- */

static struct bb_driver d;
static char err[1024];

static struct bb_job *job(uint32_t id, uint32_t uid, const char *host, const char *directives)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = uid;
    j->user = strdup(uid == 1001 ? "alice" : "bob");
    j->phase = PHASE_DEPLOYING;
    j->nnodes = 1;
    j->nodes = calloc(1, sizeof(*j->nodes));
    j->nodes[0] = (struct bb_node){ .name = strdup(host), .agent_host = strdup(host),
                                    .agent_port = 6830, .numa_node = -1 };
    char path[64];
    snprintf(path, sizeof(path), "/adafs/%u", id);
    j->mount = strdup(path);
    j->storage = strdup("/s");
    j->chunk_size = 1 << 20;
    memset(j->secret_hex, 'b', 64);
    if (directive_parse("X", NULL, directives, &j->req, err, sizeof(err)) <= 0)
        printf("# parse: %s\n", err);
    return j;
}

static void add(struct bb_job *j)
{
    driver_add(&d, j);
}

/* Passes until nothing is left to answer and a few passes changed
 * nothing (a step that moves on without a request is followed by a pass). */
static void settle(void)
{
    for (int quiet = 0, i = 0; quiet < 3 && i < 50; i++) {
        driver_pass(&d);
        quiet = answered == queued ? quiet + 1 : 0;
        answer_all();
    }
}

static const struct persist_node pnodes[] = {
    { "p1", "p1", 6830 }, { "p2", "p2", 6830 }, { "p3", "p3", 6830 },
};

static struct bb_job *create(uint32_t creator_id, const char *directives)
{
    struct bb_job *creator = job(creator_id, 1001, "c1", directives);
    add(creator);
    struct bb_job *servers = persist_job_servers(&d.persist, d.jobs, &creator->req.persist[0], creator,
                                                 2000, pnodes, 3, "/s", 1 << 20, 100, err,
                                                 sizeof(err));
    if (servers)
        add(servers);
    return servers;
}

int main(void)
{
    driver_init(&d);
    d.transport = transport;
    d.persist.pool_capacity = 10ULL << 30;
    uint32_t alice[] = { 1001 }, bob[] = { 1002, 2000 }, carol[] = { 1003, 2001 };

    /* Submit-time rules. */
    struct bb_request req = { 0 };
    directive_parse("X", NULL, "chunk=1M\nuse_persistent name=proj", &req, err, sizeof(err));
    tap_ok(persist_job_check_submit(&d.persist, "X", &req, true, 1001, alice, 1, err,
                                    sizeof(err)) < 0 &&
           strstr(err, "use_persistent name=proj: a job that mounts several file systems") &&
           strstr(err, "access=preload"),
           "a job file system and an instance through a kernel mount: refused (%s)", err);
    tap_ok(persist_job_check_submit(&d.persist, "X", &req, false, 1001, alice, 1, err,
                                    sizeof(err)) < 0 && strstr(err, "no such persistent instance"),
           "through the interposer only the instance's own rules apply (%s)", err);
    tap_is_int((int)persist_job_nfurther(&req), 1, "with a file system of its own, the instance "
               "is a further mount");
    bb_request_free(&req);
    memset(&req, 0, sizeof(req));
    directive_parse("X", NULL, "chunk=1M\nstage_in source=/a destination=$ADAFS_PERSISTENT_q/a "
                    "type=file", &req, err, sizeof(err));
    tap_ok(persist_job_check_submit(&d.persist, "X", &req, false, 1001, alice, 1, err,
                                    sizeof(err)) < 0 && strstr(err, "the job mounts no instance q"),
           "a stage line into an instance the job does not mount is refused (%s)", err);
    bb_request_free(&req);
    memset(&req, 0, sizeof(req));
    directive_parse("X", NULL, "use_persistent name=a\nuse_persistent name=b", &req, err,
                    sizeof(err));
    char sname[PERSIST_NAME_MAX + 1];
    tap_ok(strcmp(persist_job_stage_mount(&req, "$ADAFS_PERSISTENT_a/x", sname), "x") == 0 &&
           !sname[0] && strcmp(persist_job_stage_mount(&req, "$ADAFS_PERSISTENT_b/y", sname),
                               "y") == 0 && strcmp(sname, "b") == 0,
           "stage paths: into the first mount's instance, no name; into a further one, its name");
    bb_request_free(&req);
    memset(&req, 0, sizeof(req));
    directive_parse("X", NULL, "use_persistent name=a\nuse_persistent name=b", &req, err,
                    sizeof(err));
    tap_ok(persist_job_nfurther(&req) == 1 && strcmp(persist_job_further(&req, 0)->name, "b") == 0,
           "two instances: the first is the job's first mount, the second a further one");
    bb_request_free(&req);
    memset(&req, 0, sizeof(req));
    directive_parse("X", NULL, "use_persistent name=proj", &req, err, sizeof(err));
    tap_ok(persist_job_check_submit(&d.persist, "X", &req, false, 1001, alice, 1, err,
                                    sizeof(err)) < 0 &&
           strstr(err, "no such persistent instance"), "using what does not exist (%s)", err);

    /* Job 10 creates proj on 2 of the 3 persistent nodes, shared with gid 2000. */
    struct bb_job *servers = create(10, "create_persistent name=proj capacity=2G nodes=2 "
                                        "access=group:proj");
    uint32_t id = AGENT_PERSIST_ID_BASE + 10;
    if (!tap_ok(servers && servers->job_id == id && servers->nnodes == 2 &&
                servers->node_capacity == 1ULL << 30, "its servers' record: id base+10, 2 nodes"))
        return tap_done();
    settle();
    const struct sent *start = last(AGENT_START);
    tap_ok(count("p1", AGENT_START, id) == 1 && count("p2", AGENT_START, id) == 1 &&
           count("p3", AGENT_START, 0) == 0 && count("c1", AGENT_START, 0) == 0,
           "START on p1 and p2 under the instance's id, none on p3 or the job's node");
    tap_ok(start && start->flags == AGENT_START_PERSISTENT && strcmp(start->name, "proj") == 0 &&
           start->uid == 1001 && start->access_gid == 2000,
           "with the persistent flag, its name, its owner and its group");
    tap_ok(count("p1", AGENT_CONFIGURE, id) == 1 && count("p2", AGENT_CONFIGURE, id) == 1,
           "then CONFIGURE of its servers on p1 and p2 (their instance file: the usage "
           "exchange's peers)");
    struct persist_instance *p = persist_find(&d.persist, "proj");
    tap_ok(p && p->state == PERSIST_STATE_READY && servers->phase == PHASE_RUNNING, "proj is ready");
    tap_ok(p && p->used == 2 << 20 && count("p1", AGENT_STATUS, id) == 1,
           "what its 2 servers hold is asked once ready: 2 MiB (%llu, %d STATUS)",
           p ? (unsigned long long)p->used : 0ULL, count("p1", AGENT_STATUS, 0));
    char *status = bb_status_text(d.jobs, 0);
    tap_ok(status && strstr(status, "Persistent=proj(id 2147483658) User=alice(1001) Phase=running"),
           "bbstat names its servers by the instance, not as a job");
    free(status);
    struct bb_job *creator = bb_job_find(d.jobs, 10);
    const struct sent *conf = last(AGENT_CONFIGURE);
    tap_ok(creator->phase == PHASE_RUNNING && creator->released && conf && conf->id == 10 &&
           strcmp(conf->host, "c1") == 0 && strcmp(conf->name, "/adafs/10") == 0,
           "the creating job mounts it (CONFIGURE on its node at its mount) and runs");
    tap_ok(creator->persist_text && strstr(creator->persist_text, "p1") &&
           strstr(creator->persist_text, "p2"), "the instance text lists the instance's servers");
    directive_parse("X", NULL, "use_persistent name=proj", &req, err, sizeof(err));
    tap_is_int(persist_job_check_submit(&d.persist, "X", &req, false, 1002, bob, 2, err,
                                        sizeof(err)), 0,
               "bob, of group 2000, may submit a job that uses it");
    tap_ok(persist_job_check_submit(&d.persist, "X", &req, false, 1003, carol, 2, err,
                                    sizeof(err)) < 0 &&
           strstr(err, "not shared with uid 1003"), "carol may not (%s)", err);
    bb_request_free(&req);

    /* The saved record brings it back. */
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    bb_job_encode(&w, servers);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    struct bb_job *back = bb_job_decode(&r, err, sizeof(err));
    tap_ok(back && back->persist && strcmp(back->persist->name, "proj") == 0 &&
           back->persist->access_gid == 2000 && back->persist->owner_uid == 1001 &&
           back->persist->state == PERSIST_STATE_READY && back->nnodes == 2 &&
           back->nodes[0].server_port == servers->nodes[0].server_port,
           "its saved record decodes with the instance, nodes and ports (%s)", back ? "" : err);
    struct persist_table t2 = { 0 };
    persist_job_adopt(&t2, back);
    tap_ok(persist_find(&t2, "proj") == back->persist, "and is adopted into the table again");
    bb_job_free(back);
    rpc_writer_free(&w);

    /* Job 11 of bob uses it: one CONFIGURE, no server of its own. */
    add(job(11, 1002, "c2", "use_persistent name=proj"));
    settle();
    struct bb_job *user = bb_job_find(d.jobs, 11);
    conf = last(AGENT_CONFIGURE);
    tap_ok(user->phase == PHASE_RUNNING && count("c2", AGENT_START, 0) == 0 && conf &&
           conf->id == 11 && strcmp(conf->host, "c2") == 0 && strcmp(conf->name, "/adafs/11") == 0,
           "a job of bob mounts it with a CONFIGURE only, and runs");
    tap_ok(user->persist_text && strstr(user->persist_text, "2147483658"),
           "its instance file names the instance's id");

    /* Job 13 of bob: a file system of its own and proj beside it. */
    add(job(13, 1002, "c4", "capacity=1G\nuse_persistent name=proj"));
    settle();
    struct bb_job *both = bb_job_find(d.jobs, 13);
    const struct sent *own = NULL, *further = NULL;
    for (size_t i = 0; i < nlog; i++)
        if (log_of[i].op == AGENT_CONFIGURE && log_of[i].id == 13)
            *(log_of[i].further[0] ? &further : &own) = &log_of[i];
    tap_ok(both->phase == PHASE_RUNNING && count("c4", AGENT_START, 13) == 1 &&
           count("c4", AGENT_CONFIGURE, 13) == 2 && own && strcmp(own->name, "/adafs/13") == 0 &&
           further && strcmp(further->name, "/adafs/13.proj") == 0 &&
           strcmp(further->further, "proj") == 0 && own < further,
           "a job with its own file system and proj: START, its CONFIGURE, then proj's at "
           "/adafs/13.proj, and runs");
    tap_ok(both->nfurther == 1 && both->further_text[0] &&
           strstr(both->further_text[0], "2147483658") &&
           strstr(both->further_text[0], "mount=/adafs/13.proj"),
           "the further mount's instance file names proj and its mount point");
    tap_ok(!persist_job_destroy(&d.persist, d.jobs, "proj", 1001, NULL, 0, err, sizeof(err)) &&
           strstr(err, "13"), "a destroy counts a job that mounts it further (%s)", err);
    lifecycle_job_ended(both, false);
    settle();
    tap_ok(count("c4", AGENT_TEARDOWN, 13) == 1 && count(NULL, AGENT_TEARDOWN, id) == 0,
           "its end tears down its node only");

    /* Destroy while job 11 runs: refused, naming it. */
    uint32_t users[] = { 11 };
    tap_ok(!persist_job_destroy(&d.persist, d.jobs, "proj", 1001, users, 1, err, sizeof(err)) &&
           strstr(err, "in use by job(s) 11"), "a destroy while a job uses it is refused (%s)", err);
    tap_ok(!persist_job_destroy(&d.persist, d.jobs, "proj", 1002, NULL, 0, err, sizeof(err)) &&
           strstr(err, "only its owner alice"), "bob may not destroy it (%s)", err);

    tap_ok(!persist_job_destroy(&d.persist, d.jobs, "proj", 1001, NULL, 0, err, sizeof(err)) &&
           strstr(err, "in use by job(s) 11,10"),
           "so it is while the plugin's records of jobs that mount it live on (%s)", err);

    /* Jobs 10 and 11 end: their nodes' TEARDOWN, never the instance's. */
    lifecycle_job_ended(creator, false);
    lifecycle_job_ended(user, false);
    settle();
    tap_ok(count("c1", AGENT_TEARDOWN, 10) == 1 && count("c2", AGENT_TEARDOWN, 11) == 1 &&
           count(NULL, AGENT_TEARDOWN, id) == 0 && p->state == PERSIST_STATE_READY,
           "a job's end tears down its own nodes' part only: proj stays ready");

    /* Job 12 destroys it. */
    struct bb_job *destroyer = job(12, 1001, "c3", "destroy_persistent name=proj");
    add(destroyer);
    tap_ok(persist_job_destroy(&d.persist, d.jobs, "proj", 1001, NULL, 0, err, sizeof(err)) ==
           servers, "its owner destroys it once nobody uses it");
    tap_ok(persist_find(&d.persist, "proj") && p->state == PERSIST_STATE_DESTROYING,
           "the name stays taken while it is torn down");
    settle();
    tap_ok(count("p1", AGENT_TEARDOWN, id) == 1 && count("p2", AGENT_TEARDOWN, id) == 1,
           "TEARDOWN of the instance's id on its two nodes");
    tap_ok(!persist_find(&d.persist, "proj") && servers->phase == PHASE_COMPLETE,
           "then the name is free");
    tap_ok(destroyer->phase == PHASE_RUNNING && count("c3", AGENT_START, 0) == 0 &&
           count("c3", AGENT_CONFIGURE, 0) == 0, "the destroying job then runs, nothing mounted");

    /* A creation whose servers do not start fails its job, which is held. */
    fail_start = true;
    struct bb_job *bad = create(20, "create_persistent name=proj capacity=1G");
    tap_ok(bad && bad->nnodes == 3, "the name is free again: job 20 creates proj on all 3 nodes");
    settle();
    struct bb_job *job20 = bb_job_find(d.jobs, 20);
    tap_ok(job20->phase == PHASE_COMPLETE && job20->failure == FAIL_USER && job20->error &&
           strstr(job20->error, "create_persistent name=proj: its servers did not start") &&
           !job20->released, "its servers refused: the creating job fails with why (%s)",
           job20->error ? job20->error : "");
    tap_ok(!persist_find(&d.persist, "proj"), "and the name is free");

    /* Slurm reissued job id 20 (a kill -9 before it saved its state): the
     * new instance takes an id no record holds. */
    fail_start = false;
    struct bb_job *again = create(20, "create_persistent name=other capacity=1G");
    tap_ok(again && again->job_id == AGENT_PERSIST_ID_BASE + 21,
           "a creating job whose id a record already holds gets the next free id (%u)",
           again ? again->job_id - AGENT_PERSIST_ID_BASE : 0);
    /* 2^64-1 bytes on 3 nodes (no AdafsTotalCapacity: no pool limit): each
     * server's share once wrapped to 0, which its server takes for no quota. */
    uint64_t pool = d.persist.pool_capacity;
    d.persist.pool_capacity = 0;
    struct bb_job *huge = create(22, "create_persistent name=huge "
                                     "capacity=18014398509481983.999999K");
    d.persist.pool_capacity = pool;
    tap_ok(huge && huge->nnodes == 3 && huge->node_capacity == UINT64_MAX / 3,
           "a persistent instance of 2^64-1 bytes: its servers' share is not 0 (%llu)",
           huge ? (unsigned long long)huge->node_capacity : 0ULL);

    d.persist.head = NULL;
    while (d.jobs) {
        struct bb_job *next = d.jobs->next;
        bb_job_free(d.jobs);
        d.jobs = next;
    }
    bb_config_free(&d.config);
    return tap_done();
}
