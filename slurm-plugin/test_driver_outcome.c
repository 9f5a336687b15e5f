/* driver_outcome_plan: what a step's outcome does to the Slurm job: a
 * release, a requeue or hold after a failure before the release (a node
 * drained only for a fault its agent proved), a note after the run, a
 * failed stage-out kept.
 * driver_job_end: what Slurm's end or cancel of a job does to its record. */
#include "driver.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static struct bb_job *record(uint32_t id, enum bb_phase phase)
{
    struct bb_job *j = bb_job_new(id);
    j->phase = phase;
    return j;
}

static void test_job_end(void)
{
    struct bb_driver d;
    driver_init(&d);
    struct bb_job *running = record(1, PHASE_RUNNING), *staging = record(2, PHASE_STAGING_IN),
                  *lost = record(3, PHASE_STAGING_IN), *out = record(4, PHASE_RUNNING);
    lost->unreadable = strdup("bad checksum");
    staging->unclaimed = true;
    running->next = staging;
    staging->next = lost;
    lost->next = out;
    d.jobs = running;
    driver_reindex(&d);
    char why[256] = "";
    tap_ok(!driver_job_end(&d, 1, true, false, why, sizeof(why)) &&
           running->phase == PHASE_STAGING_OUT, "a running job's end: stage-out");
    tap_ok(!driver_job_end(&d, 2, false, false, why, sizeof(why)) &&
           staging->phase == PHASE_TEARDOWN && staging->failure == FAIL_CANCELLED &&
           !staging->unclaimed, "scancel while staging in: torn down, cancelled");
    tap_ok(!driver_job_end(&d, 4, false, true, why, sizeof(why)) &&
           out->phase == PHASE_TEARDOWN, "scancel --hurry of a running job: no stage-out");
    tap_ok(driver_job_end(&d, 3, true, false, why, sizeof(why)) &&
           strcmp(why, "bad checksum") == 0 && !bb_job_find(d.jobs, 3),
           "an unreadable record not yet settled: forgotten, its reason given");
    tap_ok(!driver_job_end(&d, 99, true, false, why, sizeof(why)), "a job without a record");
    while (d.jobs) {
        struct bb_job *next = d.jobs->next;
        bb_job_free(d.jobs);
        d.jobs = next;
    }
}

static struct bb_outcome outcome(int events, enum bb_failure failure, bool released,
                                 char *node)
{
    return (struct bb_outcome){ .job_id = 7, .events = events, .failure = failure,
                                .released = released, .error = "node n1: broken",
                                .node = node };
}

int main(void)
{
    struct bb_outcome o = outcome(LC_CHANGED | LC_RELEASE, FAIL_NONE, false, NULL);
    struct bb_outcome_plan p = driver_outcome_plan(&o, true, 0);
    tap_ok(p.release && p.released && !p.requeue && !p.comment, "staged in: released");
    o = outcome(LC_CHANGED, FAIL_NONE, false, NULL);
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(!p.release && !p.released && !p.requeue, "a step on the way: shown, no more");

    o = outcome(LC_FINISHED, FAIL_NODE, false, "n1");
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(p.requeue && !p.hold && p.drain, "a proven node fault: the node drained, the job "
           "requeued");
    p = driver_outcome_plan(&o, true, 1);
    tap_ok(p.requeue && p.hold && p.drain, "a job that already failed once is held");
    o = outcome(LC_FINISHED, FAIL_NODE, false, NULL);
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(p.requeue && !p.drain, "no node named: none drained");
    o = outcome(LC_FINISHED, FAIL_USER, false, NULL);
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(p.requeue && p.hold && !p.drain, "the job's own fault: held");
    o = outcome(LC_FINISHED, FAIL_TRANSIENT, false, NULL);
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(p.requeue && p.hold && !p.drain, "what may pass, after its retries: held");
    o = outcome(LC_FINISHED, FAIL_CANCELLED, false, NULL);
    p = driver_outcome_plan(&o, true, 0);
    tap_ok(!p.requeue && !p.comment, "cancelled: nothing");
    o = outcome(LC_FINISHED, FAIL_USER, false, NULL);
    p = driver_outcome_plan(&o, false, 0);
    tap_ok(!p.requeue && p.comment, "no longer configuring: a note only");

    o = outcome(LC_FINISHED, FAIL_USER, true, NULL);
    p = driver_outcome_plan(&o, false, 0);
    tap_ok(!p.requeue && p.comment && p.released, "a stage-out that failed: a note");
    o = outcome(LC_FINISHED, FAIL_NODE, true, "n1");
    p = driver_outcome_plan(&o, false, 0);
    tap_ok(!p.requeue && !p.drain && !p.comment, "after the run a node fault drains nothing");
    o = outcome(LC_FINISHED, FAIL_NONE, true, NULL);
    p = driver_outcome_plan(&o, false, 0);
    tap_ok(!p.requeue && !p.comment && p.out_over && !p.kept, "torn down after a good run: "
           "nothing but the end of its StageOut");
    o = outcome(LC_CHANGED | LC_KEPT, FAIL_USER, true, NULL);
    p = driver_outcome_plan(&o, false, 0);
    tap_ok(p.kept && !p.comment && !p.out_over && !p.requeue && !p.drain,
           "a failed stage-out kept: its reason shown, the job kept in StageOut");
    test_job_end();
    return tap_done();
}
