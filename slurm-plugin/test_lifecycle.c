/* What a job's end and scancel do to its instance, phase by phase. These
 * decisions touch no agent, so they are tested without one. */
#include "lifecycle.h"
#include "tap.h"

#include <stdlib.h>

static struct bb_job *job_in(enum bb_phase phase)
{
    struct bb_job *j = bb_job_new(1);
    j->phase = phase;
    j->nnodes = 2;
    j->nodes = calloc(2, sizeof(*j->nodes));
    j->nodes[0].stage_sent = j->nodes[1].stage_sent = true;
    j->stage_index = 3;
    return j;
}

static void ended(enum bb_phase from, bool hurry, enum bb_phase want, const char *what)
{
    struct bb_job *j = job_in(from);
    lifecycle_job_ended(j, hurry);
    tap_is_int(j->phase, want, what);
    bb_job_free(j);
}

static void cancelled(enum bb_phase from, bool hurry, enum bb_phase want,
                      enum bb_failure failure, const char *what)
{
    struct bb_job *j = job_in(from);
    lifecycle_cancel(j, hurry);
    tap_ok(j->phase == want && j->failure == failure, "%s (phase %s, failure %d)", what,
           bb_phase_name(j->phase), (int)j->failure);
    bb_job_free(j);
}

int main(void)
{
    struct bb_job *j = job_in(PHASE_RUNNING);
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
    return tap_done();
}
