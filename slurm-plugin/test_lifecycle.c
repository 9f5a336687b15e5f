/* The lifecycle without a cluster: a stand-in transport (fake_agents.c)
 * answers as each node's agent is scripted to, at once, slowly, never,
 * every other time, with a fault it proves, as a squatter on its port, or
 * lying. Each row of doc/lifecycle.md's failure table that happens once a
 * job has nodes is driven here, and what a job's end and scancel do at
 * each phase. */
#include "agent_proto.h"
#include "fake_agents.h"
#include "lifecycle.h"
#include "lifecycle_fixture.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Lets every retry of j come due and drives it again. */
static int retry(struct bb_job *j, int ms)
{
    if (j->retry_at > fake_clock)
        fake_clock = j->retry_at;
    return drive(j, ms);
}

static void script(int node, enum fake_kind kind, int delay_ms, int stage_ms)
{
    fake_set(node, &(struct fake_node_script){ kind, delay_ms, stage_ms });
}

static void all_ok(int nodes)
{
    for (int i = 1; i <= nodes; i++)
        script(i, FAKE_OK, 0, 20);
    fake_reset_counts();
}

static void test_classify(void)
{
    tap_is_int(lifecycle_classify(-ECONNREFUSED, 0, 0), FAIL_TRANSIENT,
               "no authenticated answer (refused, reset, timed out, squatter) is transient");
    tap_is_int(lifecycle_classify(0, 0, 0), FAIL_NONE, "an answer of status 0 is no failure");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_NODE), FAIL_NODE,
               "a node fault the agent states is the node's");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_JOB), FAIL_USER, "a job fault the job's");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_TRANSIENT), FAIL_TRANSIENT,
               "a transient one (a server that exited while it started) is transient");
    tap_is_int(lifecycle_classify(0, -EIO, 7), FAIL_TRANSIENT, "an unknown fault is not a node's");

    struct lc_verdict v = lifecycle_verdict(FAIL_NODE, 0);
    tap_ok(v.drain && !v.hold, "a proven node fault: the node drained, the job requeued");
    v = lifecycle_verdict(FAIL_NODE, 1);
    tap_ok(v.drain && v.hold, "a node fault of a job requeued before: held, so it cannot drain "
           "node after node");
    v = lifecycle_verdict(FAIL_TRANSIENT, 0);
    tap_ok(!v.drain && v.hold, "nothing proven: held, no node drained");
    v = lifecycle_verdict(FAIL_USER, 0);
    tap_ok(!v.drain && v.hold, "the user's fault: held, no node drained");
    char *node = lifecycle_failed_node("node n12: storage unusable");
    tap_is_str(node, "n12", "the node a node fault names");
    free(node);
    tap_ok(!lifecycle_failed_node("stage_in source=/x on node n1: ...") &&
           !lifecycle_failed_node(NULL), "a message that names no node first names none");
}

static void test_happy_path(void)
{
    all_ok(4);
    struct bb_job *j = job_of(10, 4,
                              "stage_in source=/pfs/in destination=in type=directory\n"
                              "stage_in source=/pfs/list destination=. type=list\n"
                              "stage_out source=out destination=/pfs/out type=file");
    int ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_RUNNING && (ev & LC_RELEASE) && j->failure == FAIL_NONE,
           "4 nodes: deployed, two lines staged in, released (phase %s)", bb_phase_name(j->phase));
    tap_ok(fake_total(AGENT_START) == 4 && fake_total(AGENT_CONFIGURE) == 4,
           "one START and one CONFIGURE per node");
    tap_ok(j->nodes[2].started && j->nodes[2].server_port == 4003, "each node's server port is kept");
    tap_ok(fake_total(AGENT_STAGE) == 4 + 4,
           "a STAGE per node and line, no finalize pass: the workers finish a stage (%d)",
           fake_total(AGENT_STAGE));
    tap_ok(fake_calls(1, AGENT_STAGE) == 2 && fake_calls(2, AGENT_STAGE) == 2,
           "n1 stages as much as any other node");
    tap_ok(j->in.files == 80 && j->in.bytes == 8000 && j->in.verified == 80,
           "each worker's report counted once (%llu files)", (unsigned long long)j->in.files);
    tap_ok(fake_total(AGENT_WATCH) >= 8 && fake_total(AGENT_STATUS) == 0,
           "stages are watched, not polled (%d WATCH, %d STATUS)", fake_total(AGENT_WATCH),
           fake_total(AGENT_STATUS));

    lifecycle_job_ended(j, false);
    tap_is_int(j->phase, PHASE_STAGING_OUT, "the job ends: stage-out");
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->out.files == 40,
           "staged out and torn down (%s, %llu files out)", bb_phase_name(j->phase),
           (unsigned long long)j->out.files);
    tap_is_int(fake_total(AGENT_TEARDOWN), 4, "TEARDOWN on every node");
    tap_ok(!j->nodes[0].started && j->nodes[0].server_port == 4001,
           "servers marked stopped; the port stays for bbstat");
    bb_job_free(j);
}

static void test_long_stage(void)
{
    /* A stage longer than the agent's hold: each WATCH comes back with the
     * stage running and is sent again by the set, without a step. */
    all_ok(2);
    script(1, FAKE_OK, 0, 700);
    script(2, FAKE_OK, 0, 700);
    struct bb_job *j = job_of(11, 2, "stage_in source=/pfs/f destination=f type=file");
    int ev = drive(j, 4000);
    tap_ok(j->phase == PHASE_RUNNING && (ev & LC_RELEASE), "a 0.7 s stage with a 0.2 s hold ends");
    tap_ok(fake_total(AGENT_WATCH) >= 6 && fake_total(AGENT_WATCH) <= 12,
           "its workers were asked again as each hold ran out (%d WATCH for 2 nodes)",
           fake_total(AGENT_WATCH));
    bb_job_free(j);
}

static void test_stage_failures(void)
{
    all_ok(2);
    script(2, FAKE_STAGE_FAILS, 0, 20);
    struct bb_job *j = job_of(12, 2, "stage_in source=/pfs/missing destination=in type=directory");
    j->req.stages[0].line = 3;
    int ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->failure == FAIL_USER,
           "stage-in source missing: torn down, the user's failure");
    tap_ok(j->error && strstr(j->error, "stage_in source=/pfs/missing on node n2") &&
           strstr(j->error, "No such file or directory"),
           "the reason names the line, node, path and error (%s)", j->error ? j->error : "");
    bb_job_free(j);

    /* The stager's messages when its report lists no failure. */
    j = job_of(13, 1, "stage_out source=o destination=/pfs/o type=file\n"
                      "stage_out source=p destination=/pfs/p type=file");
    all_ok(1);
    drive(j, 2000);
    script(1, FAKE_STAGE_FAILS, 0, 20);
    lifecycle_job_ended(j, false);
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && j->failure == FAIL_USER && fake_calls(1, AGENT_STAGE) == 2,
           "stage-out failures: the other lines are still copied, then teardown");
    tap_ok(j->error && strstr(j->error, "stage_out source=o destination=/pfs/o on node n1"),
           "the first failure is kept for the job's comment (%s)", j->error ? j->error : "");
    bb_job_free(j);

    /* StageInTimeout while the stage runs. */
    all_ok(1);
    script(1, FAKE_OK, 0, 60000);
    cfg.stage_in_timeout = 10;
    j = job_of(14, 1, "stage_in source=/pfs/big destination=big type=file");
    drive(j, 300);
    tap_ok(j->phase == PHASE_STAGING_IN && lifecycle_waiting(j), "a long stage is watched");
    fake_clock += 11;
    ev = drive(j, 2000);
    tap_ok(j->phase == PHASE_COMPLETE && j->failure == FAIL_USER && j->error &&
           strstr(j->error, "did not finish within StageInTimeout=10 s"),
           "past StageInTimeout: torn down at once, though its WATCH is still out (%s)",
           j->error ? j->error : "");
    cfg.stage_in_timeout = 0;
    bb_job_free(j);
}

static void test_deploy_failures(void)
{
    /* Unreachable: tried again 5, 10, 20 s later, then held. */
    all_ok(2);
    script(2, FAKE_DEAD, 0, 20);
    struct bb_job *j = job_of(20, 2, NULL);
    time_t before = fake_clock;
    drive(j, 2000);
    tap_ok(j->phase == PHASE_DEPLOYING && j->failure == FAIL_NONE && j->attempts == 1 &&
           j->retry_at == before + LC_RETRY_S,
           "n2's agent never answers: the deploy waits %d s to try again, nothing blamed",
           LC_RETRY_S);
    tap_ok(j->nodes[0].started && !j->nodes[1].started, "n1 keeps its server meanwhile");
    drive(j, 100);
    tap_is_int(fake_calls(2, AGENT_START), 1, "before then no request is sent");
    retry(j, 2000);
    retry(j, 2000);
    int ev = retry(j, 2000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->failure == FAIL_TRANSIENT &&
           j->error && strstr(j->error, "node n2: agent 127.0.0.1:6830: start: no answer") &&
           strstr(j->error, "held after 4 attempts; no node drained"),
           "after 4 attempts: torn down and held, the reason naming the node (%s)",
           j->error ? j->error : "");
    tap_ok(fake_calls(1, AGENT_START) == 1 && fake_calls(2, AGENT_START) == 4,
           "only n2 was asked to start again");
    bb_job_free(j);

    /* Comes back: deployed, the count starts again. */
    all_ok(2);
    script(2, FAKE_EXITING, 0, 20);
    j = job_of(21, 2, NULL);
    drive(j, 2000);
    tap_is_int(j->attempts, 1, "a server that exited while it started: tried again");
    script(2, FAKE_OK, 0, 20);
    retry(j, 2000);
    tap_ok(j->phase == PHASE_STAGING_IN || j->phase == PHASE_RUNNING, "then it starts: deployed");
    tap_is_int(j->attempts, 0, "and the count starts again after a success");
    bb_job_free(j);

    /* A proven node fault: at once, naming the node. */
    all_ok(2);
    script(1, FAKE_DEAD, 0, 20);
    script(2, FAKE_NODE_FAULT, 0, 20);
    j = job_of(22, 2, NULL);
    int ev2 = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev2 & LC_FINISHED) && j->failure == FAIL_NODE &&
           j->error && strncmp(j->error, "node n2: storage unusable", 25) == 0,
           "n2's agent proves a node fault: the node's failure, naming n2, even with n1 silent (%s)",
           j->error ? j->error : "");
    bb_job_free(j);

    /* A squatter on n2's port saying "drain me": nothing proven. */
    all_ok(2);
    script(2, FAKE_SQUATTER, 0, 20);
    j = job_of(23, 2, NULL);
    drive(j, 2000);
    for (int i = 0; i < 3; i++)
        retry(j, 2000);
    tap_ok(j->phase == PHASE_COMPLETE && j->failure == FAIL_TRANSIENT && j->error &&
           strstr(j->error, "(unauthenticated answer)") && strstr(j->error, "no node drained"),
           "a squatter's claim of a node fault drains nothing: held after the retries (%s)",
           j->error ? j->error : "");
    bb_job_free(j);

    /* A job fault: held at once. */
    all_ok(2);
    script(1, FAKE_JOB_FAULT, 0, 20);
    j = job_of(24, 2, NULL);
    drive(j, 2000);
    tap_ok(j->phase == PHASE_COMPLETE && j->failure == FAIL_USER && j->attempts == 0,
           "a job fault: the job's failure at once, no retry");
    bb_job_free(j);

    /* An agent lying about its server's port. */
    all_ok(1);
    script(1, FAKE_BAD_PORT, 0, 20);
    j = job_of(25, 1, NULL);
    drive(j, 2000);
    tap_ok(j->phase == PHASE_DEPLOYING && j->attempts == 1 && !j->nodes[0].started,
           "an answer with no usable port: transient, tried again");
    bb_job_free(j);

    /* A flapping node: every other request fails; the job gets there. */
    all_ok(3);
    script(3, FAKE_FLAPPING, 0, 20);
    j = job_of(26, 3, "stage_in source=/pfs/f destination=f type=file");
    for (int i = 0; i < 8 && j->phase != PHASE_RUNNING && j->phase != PHASE_COMPLETE; i++)
        retry(j, 2000);
    tap_ok(j->phase == PHASE_RUNNING && j->failure == FAIL_NONE,
           "a flapping node: retried step by step, the job runs (%s)", bb_phase_name(j->phase));
    bb_job_free(j);

    /* Slow: the job waits for it, and only it. */
    all_ok(2);
    script(2, FAKE_SLOW, 400, 20);
    j = job_of(27, 2, NULL);
    int64_t t0 = fake_now_ms();
    drive(j, 3000);
    tap_ok(j->phase == PHASE_STAGING_IN || j->phase == PHASE_RUNNING,
           "a slow node: deployed when it answers");
    tap_ok(fake_now_ms() - t0 >= 700, "after its delays (%lld ms)", (long long)(fake_now_ms() - t0));
    bb_job_free(j);
}

static void test_leftovers(void)
{
    /* After a restart, the START in flight at the crash left a server: it
     * is torn down once and started again. */
    all_ok(2);
    script(2, FAKE_LEFTOVER, 0, 20);
    struct bb_job *j = job_of(30, 2, NULL);
    drive(j, 2000);
    tap_ok(j->phase == PHASE_STAGING_IN || j->phase == PHASE_RUNNING,
           "a node with a leftover of the job: deployed (%s)", bb_phase_name(j->phase));
    tap_ok(fake_calls(2, AGENT_TEARDOWN) == 1 && fake_calls(2, AGENT_START) == 2 &&
           fake_calls(1, AGENT_TEARDOWN) == 0, "its leftover torn down there only, then started");
    bb_job_free(j);

    all_ok(1);
    script(1, FAKE_ALWAYS_LEFTOVER, 0, 20);
    j = job_of(31, 1, NULL);
    drive(j, 2000);
    tap_ok(j->phase == PHASE_DEPLOYING && j->attempts == 1 && fake_calls(1, AGENT_TEARDOWN) == 1,
           "refused again after its leftover was cleared: a failure like any other");
    bb_job_free(j);
}

static void test_lying_watchers(void)
{
    /* The agent lost the stage (it says none runs): started again there. */
    all_ok(2);
    script(2, FAKE_LOST_STAGE, 0, 20);
    struct bb_job *j = job_of(40, 2, "stage_in source=/pfs/f destination=f type=file");
    drive(j, 2000);
    tap_ok(j->phase == PHASE_STAGING_IN && j->attempts == 1 && !j->nodes[1].stage_sent &&
           j->nodes[0].stage_sent, "a worker whose agent runs no stage: marked to start again");
    retry(j, 2000);
    tap_ok(j->phase == PHASE_RUNNING && fake_calls(2, AGENT_STAGE) == 2 &&
           fake_calls(1, AGENT_STAGE) == 1, "and started again there only; the job runs");
    bb_job_free(j);

    /* An agent answering WATCH at once while the stage runs is not asked
     * again in a loop. */
    all_ok(1);
    script(1, FAKE_NO_HOLD, 0, 60000);
    j = job_of(41, 1, "stage_in source=/pfs/f destination=f type=file");
    drive(j, 1000);
    tap_ok(j->phase == PHASE_STAGING_IN && j->attempts == 1 && fake_calls(1, AGENT_WATCH) < 5,
           "a WATCH answered at once: a failure tried again later, not a loop (%d WATCH)",
           fake_calls(1, AGENT_WATCH));
    bb_job_free(j);

    /* A STAGE refused as "already running": its first answer was lost. */
    all_ok(1);
    script(1, FAKE_BUSY_STAGE, 0, 20);
    j = job_of(42, 1, "stage_in source=/pfs/f destination=f type=file");
    drive(j, 2000);
    tap_ok(j->phase == PHASE_RUNNING && j->attempts == 0,
           "a STAGE answered \"already running\" is watched like the others");
    bb_job_free(j);
}

static void test_cancel_in_flight(void)
{
    all_ok(2);
    script(2, FAKE_SLOW, 300, 20);
    struct bb_job *j = job_of(50, 2, "stage_in source=/pfs/f destination=f type=file");
    env.now = fake_clock;
    lifecycle_step(j, &env);
    tap_ok(lifecycle_waiting(j), "STARTs in flight");
    lifecycle_cancel(j, false);
    tap_ok(j->phase == PHASE_TEARDOWN && j->failure == FAIL_CANCELLED && !lifecycle_waiting(j),
           "scancel meanwhile: at once to teardown, the STARTs' answers to be dropped");
    int ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED), "torn down");
    bb_job_free(j);

    /* Freed with a set in flight (a record forgotten): its answers come to
     * nothing. */
    all_ok(1);
    script(1, FAKE_SLOW, 200, 20);
    j = job_of(51, 1, NULL);
    env.now = fake_clock;
    lifecycle_step(j, &env);
    bb_job_free(j);
    fake_wait(400);
    tap_ok(true, "a record freed with requests in flight: their answers are dropped");
}

/* As the driver steps jobs: each step under its lock only copies what its
 * set needs of the record; the set is built, sent and later freed at the
 * flush, after the lock. */
static void test_outbox(void)
{
    struct lc_outbox box = { 0 };
    env.outbox = &box;
    all_ok(3);
    struct bb_job *j = job_of(60, 3, "stage_in source=/pfs/in destination=in type=file");
    env.now = fake_clock;
    lifecycle_step(j, &env);
    fake_wait(100);
    tap_ok(lifecycle_waiting(j) && box.n == 1 && fake_total(AGENT_START) == 0,
           "a step hands its set to the outbox and sends nothing itself");
    lc_outbox_flush(&box, env.transport);
    int ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_RUNNING && (ev & LC_RELEASE) && fake_total(AGENT_START) == 3 &&
           fake_total(AGENT_CONFIGURE) == 3 && fake_total(AGENT_STAGE) == 3,
           "through the outbox: deployed, staged in, released (%s)", bb_phase_name(j->phase));
    tap_ok(j->in.files == 30 && j->nodes[2].server_port == 4003,
           "each worker's report, read as it came, counted once (%llu files)",
           (unsigned long long)j->in.files);
    tap_ok(box.nspent == 0 && box.n == 0, "every spent set was freed at a flush");

    /* A record freed between the step and the flush: the set is built from
     * its own copy, sent, and its answers dropped. */
    all_ok(2);
    struct bb_job *k = job_of(61, 2, NULL);
    env.now = fake_clock;
    lifecycle_step(k, &env);
    bb_job_free(k);
    lc_outbox_flush(&box, env.transport);
    fake_wait(200);
    tap_is_int(fake_total(AGENT_START), 2, "a set whose record was freed before the flush still "
               "goes out whole, and its answers come to nothing");
    lifecycle_job_ended(j, true);
    drive(j, 3000);
    tap_is_int(j->phase, PHASE_COMPLETE, "and teardown through it");
    bb_job_free(j);
    lc_outbox_free(&box);
    env.outbox = NULL;
}

static struct bb_job *phase_job(enum bb_phase phase)
{
    struct bb_job *j = job_of(60, 2, NULL);
    j->phase = phase;
    j->nodes[0].stage_sent = j->nodes[1].stage_sent = true;
    j->stage_index = 3;
    return j;
}

static void ended(enum bb_phase from, bool hurry, enum bb_phase want, const char *what)
{
    struct bb_job *j = phase_job(from);
    lifecycle_job_ended(j, hurry);
    tap_is_int(j->phase, want, what);
    bb_job_free(j);
}

static void cancelled(enum bb_phase from, bool hurry, enum bb_phase want,
                      enum bb_failure failure, const char *what)
{
    struct bb_job *j = phase_job(from);
    lifecycle_cancel(j, hurry);
    tap_ok(j->phase == want && j->failure == failure, "%s (phase %s, failure %d)", what,
           bb_phase_name(j->phase), (int)j->failure);
    bb_job_free(j);
}

static void test_ends(void)
{
    struct bb_job *j = phase_job(PHASE_RUNNING);
    lifecycle_job_ended(j, false);
    tap_is_int(j->phase, PHASE_STAGING_OUT, "a finished job stages out");
    tap_ok(j->stage_index == 0 && !j->nodes[0].stage_sent && !j->nodes[1].stage_sent,
           "from its first stage_out line, on every node");
    tap_ok(j->t_ended != 0, "its end time is recorded");
    bb_job_free(j);

    ended(PHASE_RUNNING, true, PHASE_TEARDOWN, "with --hurry it skips stage-out");
    ended(PHASE_STAGING_OUT, false, PHASE_STAGING_OUT, "a second end does not restart stage-out");
    ended(PHASE_DEPLOYING, false, PHASE_TEARDOWN, "a job that never ran is torn down");
    ended(PHASE_COMPLETE, false, PHASE_COMPLETE, "a finished instance stays finished");

    cancelled(PHASE_STAGING_IN, false, PHASE_TEARDOWN, FAIL_CANCELLED,
              "scancel during stage-in tears down and says why");
    cancelled(PHASE_RUNNING, false, PHASE_STAGING_OUT, FAIL_NONE,
              "scancel of a running job still stages its results out");
    cancelled(PHASE_STAGING_OUT, false, PHASE_STAGING_OUT, FAIL_NONE,
              "plain scancel during stage-out lets the copy finish");
    cancelled(PHASE_STAGING_OUT, true, PHASE_TEARDOWN, FAIL_NONE,
              "scancel --hurry during stage-out stops it");
    cancelled(PHASE_TEARDOWN, true, PHASE_TEARDOWN, FAIL_NONE, "teardown is not started twice");

    j = job_of(61, 0, "stage_in source=/a destination=a type=file");
    int ev = drive(j, 500);
    tap_ok(j->phase == PHASE_RUNNING && (ev & LC_RELEASE), "a job of no nodes goes through");
    lifecycle_job_ended(j, true);
    ev = drive(j, 500);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED), "and is torn down at once");
    bb_job_free(j);
}

static void test_instance_text(void)
{
    struct bb_job *j = job_of(70, 2, NULL);
    j->nodes[0].server_port = 4001;
    j->nodes[1].server_port = 4002;
    cfg.server_timeout_ms = 5000;
    char *text = lifecycle_instance_text(j, &cfg);
    tap_ok(text && strstr(text, "mount=/adafs/70\n") && strstr(text, "server=127.0.0.1:4002\n") &&
           strstr(text, "timeout_ms=5000\n"), "the instance file lists every server");
    free(text);
    strcpy(j->secret_hex, "zz");
    tap_ok(!lifecycle_instance_text(j, &cfg), "a record whose secret is not hex writes none");
    bb_job_free(j);
}

int main(void)
{
    fixture_start(8);
    test_classify();
    test_happy_path();
    test_long_stage();
    test_stage_failures();
    test_deploy_failures();
    test_leftovers();
    test_lying_watchers();
    test_cancel_in_flight();
    test_outbox();
    test_ends();
    test_instance_text();
    fake_stop();
    return tap_done();
}
