/* A failed stage-out without a cluster (stageout_keep.h): the decision
 * (done, tear down, retry, give up), and the lifecycle against stand-in
 * agents (fake_agents.c): kept with its reason and nothing torn down, only
 * the failed line run again at the next pass, the data out once the
 * destination is fixed, given up after AdafsStageOutKeep with what was
 * lost, scancel --hurry (of a kept one and of one under way),
 * Flags=TeardownFailure and AdafsStageOutKeep=0 as
 * before, and the kept state through the saved record. */
#include "agent_proto.h"
#include "fake_agents.h"
#include "lifecycle.h"
#include "lifecycle_fixture.h"
#include "stageout_keep.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define TWO_LINES "stage_out source=good destination=/pfs/good type=file\n" \
                  "stage_out source=bad destination=/pfs/bad type=file"

/* A job that ran and whose stage-out failed on its "bad" line once. */
static struct bb_job *failed_once(uint32_t id, int *events)
{
    fake_fail_source(NULL);
    struct bb_job *j = job_of(id, 1, TWO_LINES);
    drive(j, 2000);
    fake_reset_counts();
    fake_fail_source("bad");
    lifecycle_job_ended(j, false);
    *events = drive(j, 3000);
    return j;
}

static void test_decide(void)
{
    struct bb_config c = { .stage_out_keep = 100, .stage_out_retry = 10 };
    struct bb_job j = { .phase = PHASE_STAGING_OUT };
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_DONE, "nothing failed: done");
    j.out_failed = 2;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_RETRY, "a first failure: kept, retried");
    j.t_out_failed = 950;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_RETRY, "50 s of 100 kept: retried");
    tap_is_int(stageout_keep_decide(&j, &c, 1050), KEEP_GIVE_UP, "100 s of 100: given up");
    c.flags = BBCONF_TEARDOWN_FAILURE;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_TEAR_DOWN,
               "Flags=TeardownFailure: torn down at once");
    c.flags = 0;
    c.stage_out_keep = 0;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_TEAR_DOWN,
               "AdafsStageOutKeep=0: torn down at once");
    c.stage_out_keep = 100;
    j.hurry = true;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_TEAR_DOWN, "--hurry: torn down");
    j.hurry = false;
    j.out_fs_lost = true;
    tap_is_int(stageout_keep_decide(&j, &c, 1000), KEEP_FS_LOST,
               "the job's file system failed: not kept, whatever the keep allows");
    j.out_fs_lost = false;
    j.out_redo = 2;
    tap_ok(stageout_keep_skips(&j, 0) && !stageout_keep_skips(&j, 1),
           "a pass after a failure runs the failed lines only");
    j.out_redo = 0;
    tap_ok(!stageout_keep_skips(&j, 0) && !stageout_keep_skips(&j, 1),
           "the first pass runs every line");
}

static void test_kept_then_fixed(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    int ev;
    struct bb_job *j = failed_once(20, &ev);
    tap_ok(j->phase == PHASE_STAGING_OUT && (ev & LC_KEPT) && !(ev & LC_FINISHED) &&
           fake_total(AGENT_TEARDOWN) == 0, "a failed stage-out: kept, nothing torn down (%s)",
           bb_phase_name(j->phase));
    tap_ok(stageout_keep_kept(j) && j->failure == FAIL_USER && j->error &&
           strstr(j->error, "stage_out source=bad destination=/pfs/bad on node n1: /bad") &&
           strstr(j->error, "No such file or directory") &&
           strstr(j->error, "run again every 60 s until") &&
           strstr(j->error, "AdafsStageOutKeep=600 s") && strstr(j->error, "scancel --hurry"),
           "the reason names the line, node, path, error, when it is retried and until when "
           "(%s)", j->error ? j->error : "");
    tap_ok(j->retry_at == fake_clock + 60 && j->out_redo == 2,
           "the next pass in 60 s, of the failed line only");
    int stages = fake_total(AGENT_STAGE);
    fake_clock += 30;
    drive(j, 500);
    tap_ok(fake_total(AGENT_STAGE) == stages && j->phase == PHASE_STAGING_OUT,
           "nothing is sent before the retry is due");

    /* Still failing: kept, the reason not repeated within itself. */
    fake_clock += 30;
    ev = drive(j, 3000);
    tap_ok((ev & LC_KEPT) && j->phase == PHASE_STAGING_OUT && j->out_passes == 2 &&
           fake_total(AGENT_STAGE) == stages + 1, "a second failing pass: kept (one STAGE)");
    tap_ok(j->error && strstr(j->error, "[kept") == strrchr(j->error, '[') &&
           strstr(j->error, "stage_out source=bad"), "one note of the keep in the reason");

    /* The user fixed the destination. */
    fake_fail_source(NULL);
    fake_clock = j->retry_at;
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->failure == FAIL_NONE &&
           !j->error && fake_total(AGENT_STAGE) == stages + 2 &&
           fake_total(AGENT_TEARDOWN) == 1,
           "destination fixed: the failed line copied out at the next pass, then teardown, "
           "no failure left (%s)", j->error ? j->error : "");
    bb_job_free(j);
}

static void test_give_up(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 100, .stage_out_retry = 60 };
    int ev;
    time_t t0 = fake_clock;
    struct bb_job *j = failed_once(21, &ev);
    fake_clock = j->retry_at;
    drive(j, 3000);
    tap_ok(j->phase == PHASE_STAGING_OUT && j->retry_at == t0 + 100,
           "the last pass comes at AdafsStageOutKeep's end, not after it");
    fake_clock = j->retry_at;
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->failure == FAIL_USER &&
           fake_total(AGENT_TEARDOWN) == 1, "after AdafsStageOutKeep: torn down");
    tap_ok(j->error && strstr(j->error, "did not succeed within AdafsStageOutKeep=100 s (3 passes)") &&
           strstr(j->error, "not copied out: stage_out source=bad destination=/pfs/bad") &&
           !strstr(j->error, "source=good destination") &&
           strstr(j->error, "last error: stage_out source=bad destination=/pfs/bad on node n1") &&
           !strstr(j->error, "[kept"),
           "its comment says what was lost and the last error (%s)", j->error ? j->error : "");
    bb_job_free(j);
}

static void test_hurry(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    int ev;
    struct bb_job *j = failed_once(22, &ev);
    lifecycle_cancel(j, false);
    tap_is_int(j->phase, PHASE_STAGING_OUT, "scancel without --hurry: still kept");
    lifecycle_cancel(j, true);
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && fake_total(AGENT_TEARDOWN) == 1 &&
           j->error && strstr(j->error, "scancel --hurry while a failed stage_out was kept") &&
           strstr(j->error, "not copied out: stage_out source=bad destination=/pfs/bad"),
           "scancel --hurry: torn down at once, the comment says what was lost (%s)",
           j->error ? j->error : "");
    bb_job_free(j);
}

/* scancel --hurry while the stage-out runs (nothing failed, nothing kept):
 * Slurm's convention is that --hurry skips stage-out. */
static void test_hurry_under_way(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    fake_fail_source(NULL);
    struct bb_job *j = job_of(23, 1, TWO_LINES);
    drive(j, 2000);
    fake_reset_counts();
    lifecycle_job_ended(j, false);
    env.now = fake_clock;
    lifecycle_step(j, &env);
    tap_ok(j->phase == PHASE_STAGING_OUT && !stageout_keep_kept(j) && fake_total(AGENT_STAGE) == 1,
           "the stage-out runs its first line");
    lifecycle_cancel(j, true);
    int ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && fake_total(AGENT_TEARDOWN) == 1 &&
           fake_total(AGENT_STAGE) == 1,
           "scancel --hurry: torn down, the other line never started");
    tap_ok(j->failure == FAIL_USER && j->error &&
           strstr(j->error, "scancel --hurry stopped the stage_out under way") &&
           strstr(j->error, "not copied out: stage_out source=good destination=/pfs/good, "
                            "stage_out source=bad destination=/pfs/bad"),
           "its comment says so and names the lines not copied out (%s)", j->error ? j->error : "");
    bb_job_free(j);
}

static void test_not_kept(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60,
                              .flags = BBCONF_TEARDOWN_FAILURE };
    int ev;
    struct bb_job *j = failed_once(23, &ev);
    tap_ok(j->phase == PHASE_COMPLETE && !(ev & LC_KEPT) && j->failure == FAIL_USER &&
           fake_total(AGENT_STAGE) == 2 && j->error && !strstr(j->error, "[kept"),
           "Flags=TeardownFailure: both lines tried, then torn down (%s)",
           j->error ? j->error : "");
    bb_job_free(j);
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 0 };
    j = failed_once(26, &ev);
    tap_ok((ev & LC_KEPT) && j->retry_at == fake_clock + 1 && strstr(j->error, "every 1 s"),
           "AdafsStageOutRetry=0: a pass every second, not again and again at once");
    bb_job_free(j);
    cfg = (struct bb_config){ .stage_out_keep = 0, .stage_out_retry = 60 };
    j = failed_once(24, &ev);
    tap_ok(j->phase == PHASE_COMPLETE && !(ev & LC_KEPT), "AdafsStageOutKeep=0: torn down");
    bb_job_free(j);
}

/* The node's agent silent through a stage-out's retries (stopped,
 * restarting, cut off): the line failed as a full destination would, and
 * the instance is kept, not torn down with the results; once the agent
 * answers again the next pass copies them out. */
static void test_agent_silent(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    fake_fail_source(NULL);
    struct bb_job *j = job_of(27, 1, TWO_LINES);
    drive(j, 2000);
    fake_reset_counts();
    fake_set(1, &(struct fake_node_script){ FAKE_DEAD, 0, 20 });
    lifecycle_job_ended(j, false);
    int ev = drive(j, 3000);
    for (int i = 0; i < 2 * LC_ATTEMPTS && !(ev & LC_KEPT); i++) {
        if (j->retry_at > fake_clock)
            fake_clock = j->retry_at;
        ev |= drive(j, 3000);
    }
    tap_ok(j->phase == PHASE_STAGING_OUT && stageout_keep_kept(j) && (ev & LC_KEPT) &&
           fake_total(AGENT_TEARDOWN) == 0,
           "an agent silent through the retries of a stage-out: kept, nothing torn down (%s)",
           bb_phase_name(j->phase));
    tap_ok(fake_total(AGENT_STAGE) == LC_ATTEMPTS,
           "the pass ends with that line, asked %d times (%d): the next one is not started "
           "while its stager may still run", LC_ATTEMPTS, fake_total(AGENT_STAGE));
    tap_ok(j->out_redo == 3, "both lines run again at the next pass");
    tap_ok(j->error && strstr(j->error, "stage_out source=good destination=/pfs/good: node n1") &&
           strstr(j->error, "(after 4 attempts)") && strstr(j->error, "[kept: ") &&
           !strstr(j->error, "held after"),
           "its reason names the line, the node and the attempts, and says it is kept (%s)",
           j->error ? j->error : "");
    fake_set(1, &(struct fake_node_script){ FAKE_OK, 0, 20 });
    fake_clock = j->retry_at;
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->failure == FAIL_NONE &&
           !j->error && fake_total(AGENT_TEARDOWN) == 1,
           "the agent answers again: the next pass copies out, then teardown, no failure left "
           "(%s)", j->error ? j->error : "");
    bb_job_free(j);
}

/* A server of the job's file system gone during the stage-out: the
 * stager's report counts fs_faults. Not kept as "fix the destination":
 * torn down at the pass's end, the reason naming the server, what was
 * lost and what the user can do. */
static void test_fs_lost(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    fake_fail_fs(true);
    int ev;
    struct bb_job *j = failed_once(28, &ev);
    tap_ok(j->phase == PHASE_COMPLETE && !(ev & LC_KEPT) && (ev & LC_FINISHED) &&
           !stageout_keep_kept(j) && fake_total(AGENT_TEARDOWN) == 1 &&
           fake_total(AGENT_STAGE) == 2,
           "the job's file system failed: both lines tried, then torn down, not kept (%s)",
           bb_phase_name(j->phase));
    tap_ok(j->error && strstr(j->error, "stage_out source=bad destination=/pfs/bad on node n1: /bad") &&
           strstr(j->error, "server 0 (n1:40000)") && strstr(j->error, "Input/output error") &&
           strstr(j->error, "(that server ran on node n1)") && strstr(j->error, "not the destination") &&
           strstr(j->error, "not (wholly) copied out: stage_out source=bad destination=/pfs/bad") &&
           !strstr(j->error, "source=good destination") && strstr(j->error, "run the job again") &&
           !strstr(j->error, "fix the destination") && !strstr(j->error, "[kept"),
           "its reason names the line, node, server, errno, what was lost and what to do (%s)",
           j->error ? j->error : "");
    bb_job_free(j);
    /* Kept for a destination first, then the file system fails: torn down. */
    fake_fail_fs(false);
    j = failed_once(29, &ev);
    tap_ok(stageout_keep_kept(j), "a destination's failure: kept");
    fake_fail_fs(true);
    fake_clock = j->retry_at;
    ev = drive(j, 3000);
    tap_ok(j->phase == PHASE_COMPLETE && (ev & LC_FINISHED) && j->error &&
           strstr(j->error, "server 0 (n1:40000)") && !strstr(j->error, "No such file") &&
           !strstr(j->error, "[kept"),
           "kept, then the file system fails on a later pass: torn down, its cause given (%s)",
           j->error ? j->error : "");
    bb_job_free(j);
    fake_fail_fs(false);
}

static void test_saved(void)
{
    cfg = (struct bb_config){ .stage_out_keep = 600, .stage_out_retry = 60 };
    int ev;
    struct bb_job *j = failed_once(25, &ev);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    bb_job_encode(&w, j);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    char err[256] = "";
    struct bb_job *back = bb_job_decode(&r, err, sizeof(err));
    j->out_fs_lost = true;     /* as a pass that failed on the file system has it */
    struct rpc_writer w2;
    rpc_writer_init(&w2, NULL, 0);
    bb_job_encode(&w2, j);
    j->out_fs_lost = false;
    struct rpc_reader r2;
    rpc_reader_init(&r2, w2.data, w2.len);
    struct bb_job *fs = bb_job_decode(&r2, err, sizeof(err));
    tap_ok(back && !back->out_fs_lost && fs && fs->out_fs_lost,
           "a pass's failure on the job's file system survives its saved record %s", err);
    bb_job_free(fs);
    rpc_writer_free(&w2);
    tap_ok(back && back->phase == PHASE_STAGING_OUT && back->t_out_failed == j->t_out_failed &&
           back->t_out_pass == j->t_out_pass && back->out_redo == 2 && back->out_passes == 1 &&
           stageout_keep_kept(back) && strcmp(back->error, j->error) == 0,
           "a kept instance survives its saved record (a slurmctld restart) %s", err);
    bb_job_free(back);
    rpc_writer_free(&w);
    bb_job_free(j);
}

int main(void)
{
    fixture_start(1);
    fake_set(1, &(struct fake_node_script){ FAKE_OK, 0, 20 });
    test_decide();
    test_kept_then_fixed();
    test_give_up();
    test_hurry();
    test_hurry_under_way();
    test_not_kept();
    test_agent_silent();
    test_fs_lost();
    test_saved();
    fake_stop();
    return tap_done();
}
