/* stageout_keep: what a failed stage-out does to the job's instance.
 *
 * A stage-out line that fails (an unwritable or full destination) would
 * lose the job's results if the instance were torn down. Slurm's own
 * plugins (lua, datawarp: _start_stage_out) keep the buffer after a failed
 * stage-out unless burst_buffer.conf has Flags=TeardownFailure; adafs does
 * the same, bounded: the instance and its data stay on the job's nodes
 * (their Epilogs wait, so no other job lands there), the failed lines are
 * run again every AdafsStageOutRetry seconds (the stager skips what is
 * already there), and after AdafsStageOutKeep seconds without success it
 * is torn down with what was lost in the job's system comment.
 * `scancel --hurry` tears it down at once. With Flags=TeardownFailure or
 * AdafsStageOutKeep=0 a failed stage-out is torn down at once; so is one
 * that failed reading the job's own file system (a server of the instance
 * killed or hung): keeping it would ask the user to fix a destination that
 * is not at fault, and every pass would fail the same way.
 *
 * Plain C on struct bb_job (its out_* fields, saved), for lifecycle_stage.c;
 * tested by test_stageout_keep without a cluster. */
#ifndef ADAFS_STAGEOUT_KEEP_H
#define ADAFS_STAGEOUT_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "bb_config.h"
#include "bb_job.h"

/* What ends a stage-out pass (every line it had to run has run). */
enum keep_verdict {
    KEEP_DONE,         /* nothing failed: tear down, the data is out */
    KEEP_TEAR_DOWN,    /* failed, not to be kept (TeardownFailure, keep 0, --hurry) */
    KEEP_RETRY,        /* failed, kept: the failed lines run again later */
    KEEP_GIVE_UP,      /* failed, kept AdafsStageOutKeep seconds already: tear down */
    KEEP_FS_LOST,      /* failed reading the job's own file system (a server of
                        * the instance did not answer): not the destination's
                        * fault, nothing for the user to fix there, and a pass
                        * again fails the same way: tear down at once, saying
                        * what was lost and what the user can do */
};
enum keep_verdict stageout_keep_decide(const struct bb_job *j, const struct bb_config *cfg,
                                       time_t now);

/* Line index of req.stages failed in this pass, why: the pass's first
 * failure becomes the job's error (the cause of what follows). */
void stageout_keep_failed(struct bb_job *j, size_t index, const char *why);

/* The same for a line whose stager failed on the job's file system (its
 * report counts fs_faults: a server of the instance did not answer; why
 * names it): that cause becomes the job's error, before any destination's,
 * and the pass ends in KEEP_FS_LOST. */
void stageout_keep_fs_failed(struct bb_job *j, size_t index, const char *why);

/* Does this pass skip the stage_out line at index (it was copied out in
 * an earlier pass)? */
bool stageout_keep_skips(const struct bb_job *j, size_t index);

/* Ends a pass as stageout_keep_decide says: KEEP_RETRY schedules the next
 * pass (retry_at) and puts why, and until when, in the job's error; the
 * others go to teardown (give up: the error names what was lost). Returns
 * the lifecycle's events (LC_CHANGED, LC_KEPT). */
int stageout_keep_end_pass(struct bb_job *j, const struct bb_config *cfg, time_t now);

/* scancel --hurry of a kept instance, or of one whose stage-out is under way
 * (Slurm's convention: --hurry skips stage-out): its error names what is
 * lost (the SystemComment). */
void stageout_keep_hurry(struct bb_job *j);

/* Is the instance kept after a failed stage-out? */
bool stageout_keep_kept(const struct bb_job *j);

#endif
