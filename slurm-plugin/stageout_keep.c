/* stageout_keep.c: a failed stage-out kept, retried, given up
 * (stageout_keep.h). */
#include "stageout_keep.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "lifecycle_phases.h"
#include "log.h"

/* What follows a pass's cause in the error of a kept instance. */
#define KEPT_MARK " [kept: "

static uint64_t bit(size_t index)
{
    return index < 64 ? (uint64_t)1 << index : 0;
}

void stageout_keep_failed(struct bb_job *j, size_t index, const char *why)
{
    /* The first failure of the first pass, as before; of a later pass,
     * the pass's own first (the user may have fixed the first cause). */
    if (!j->out_failed && (j->t_out_failed || j->failure == FAIL_NONE ||
                           j->failure == FAIL_CANCELLED))
        bb_job_replace_error(j, FAIL_USER, "%s", why);
    j->out_failed |= bit(index);
}

void stageout_keep_fs_failed(struct bb_job *j, size_t index, const char *why)
{
    /* The instance's fault explains the pass better than a destination's
     * (the first of them wins). */
    if (!j->out_fs_lost)
        bb_job_replace_error(j, FAIL_USER, "%s", why);
    j->out_fs_lost = true;
    j->out_failed |= bit(index);
}

bool stageout_keep_skips(const struct bb_job *j, size_t index)
{
    return j->out_redo && !(j->out_redo & bit(index));
}

bool stageout_keep_kept(const struct bb_job *j)
{
    return j->phase == PHASE_STAGING_OUT && j->t_out_failed != 0;
}

enum keep_verdict stageout_keep_decide(const struct bb_job *j, const struct bb_config *cfg,
                                       time_t now)
{
    if (!j->out_failed)
        return KEEP_DONE;
    if (j->out_fs_lost)
        return KEEP_FS_LOST;
    if ((cfg->flags & BBCONF_TEARDOWN_FAILURE) || cfg->stage_out_keep == 0 || j->hurry)
        return KEEP_TEAR_DOWN;
    time_t since = j->t_out_failed ? j->t_out_failed : now;
    return now - since >= (time_t)cfg->stage_out_keep ? KEEP_GIVE_UP : KEEP_RETRY;
}

/* The error without what a kept pass added (the cause alone). */
static size_t cause_len(const char *error)
{
    if (!error)
        return 0;
    const char *last = NULL;
    for (const char *p = strstr(error, KEPT_MARK); p; p = strstr(p + 1, KEPT_MARK))
        last = p;
    return last ? (size_t)(last - error) : strlen(error);
}

/* The stage_out lines not (wholly) copied out: those failed in this pass
 * and those this pass has still to run. malloc'd ("" when none). */
static char *lost_lines(const struct bb_job *j)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < j->req.nstages; i++) {
        const struct stage_spec *s = &j->req.stages[i];
        if (s->direction != STAGE_OUT)
            continue;
        bool pending = i >= j->stage_index && !stageout_keep_skips(j, i);
        if (!(j->out_failed & bit(i)) && !pending)
            continue;
        if (shown++ >= 4) {
            more++;
            continue;
        }
        fprintf(f, "%sstage_out source=%s destination=%s", shown > 1 ? ", " : "", s->source,
                s->destination);
    }
    if (more)
        fprintf(f, " and %zu more", more);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The job's error on giving up: why, what is lost, the last cause. */
static void say_lost(struct bb_job *j, const char *why)
{
    char *lost = lost_lines(j);
    size_t n = cause_len(j->error);
    char *cause = j->error ? strndup(j->error, n) : NULL;
    bb_job_replace_error(j, FAIL_USER, "%s: torn down, its data is gone; not copied out: %s%s%s",
                         why, lost && lost[0] ? lost : "(unknown)",
                         cause ? "; last error: " : "", cause ? cause : "");
    log_warn("job %u: %s", j->job_id, j->error);
    free(cause);
    free(lost);
}

/* The job's error when its own file system failed the stage-out: the
 * cause (which names the node, the server, the path and the errno), that
 * it is not the destination's fault, what was lost, what the user can do.
 * Not "fix the destination": the source broke. */
static void say_fs_lost(struct bb_job *j)
{
    char *lost = lost_lines(j);
    size_t n = cause_len(j->error);
    char *cause = j->error ? strndup(j->error, n) : NULL;
    bb_job_replace_error(j, FAIL_USER, "%s; torn down, not kept: the job's file system failed "
                         "(a server of its instance did not answer), not the destination, and "
                         "another pass would fail the same way; what that server held is lost, "
                         "what was copied before is at the destination; not (wholly) copied "
                         "out: %s; run the job again to make what was lost, and tell the admin "
                         "the node and server named", cause ? cause : "stage_out failed",
                         lost && lost[0] ? lost : "(unknown)");
    log_warn("job %u: %s", j->job_id, j->error);
    free(cause);
    free(lost);
}

void stageout_keep_hurry(struct bb_job *j)
{
    if (stageout_keep_kept(j)) {
        say_lost(j, "scancel --hurry while a failed stage_out was kept");
        return;
    }
    if (j->phase != PHASE_STAGING_OUT)
        return;
    /* Slurm's convention: --hurry skips stage-out, also one under way.
     * What it leaves behind is said as for a kept one: the line running
     * and those after it. */
    char *lost = lost_lines(j);
    if (lost && lost[0])
        say_lost(j, "scancel --hurry stopped the stage_out under way");
    free(lost);
}

int stageout_keep_end_pass(struct bb_job *j, const struct bb_config *cfg, time_t now)
{
    enum keep_verdict v = stageout_keep_decide(j, cfg, now);
    if (v == KEEP_RETRY) {
        if (!j->t_out_failed)
            j->t_out_failed = now;
        time_t until = j->t_out_failed + (time_t)cfg->stage_out_keep;
        /* 0: every second, as the driver looks (not at once, again and again). */
        uint32_t every = cfg->stage_out_retry ? cfg->stage_out_retry : 1;
        time_t next = now + (time_t)every;
        if (next > until)
            next = until;   /* the last pass ends at the keep's end, not after */
        char when[32];
        struct tm tm;
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", localtime_r(&until, &tm));
        size_t n = cause_len(j->error);
        char *cause = j->error ? strndup(j->error, n) : NULL;
        bb_job_replace_error(j, FAIL_USER, "%s" KEPT_MARK "the job's data stays on its nodes; "
                             "the failed stage_out lines run again every %u s until %s "
                             "(AdafsStageOutKeep=%u s), then it is torn down; fix the "
                             "destination, or scancel --hurry to tear it down now]",
                             cause ? cause : "stage_out failed", every, when,
                             cfg->stage_out_keep);
        free(cause);
        log_warn("job %u: %s (pass %u)", j->job_id, j->error, j->out_passes + 1);
        j->out_redo = j->out_failed;
        j->out_failed = 0;
        j->out_passes++;
        j->stage_index = 0;
        j->retry_at = next;
        j->t_out_pass = next;
        return LC_CHANGED | LC_KEPT;
    }
    if (v == KEEP_FS_LOST) {
        say_fs_lost(j);
    } else if (v == KEEP_GIVE_UP) {
        char why[160];
        snprintf(why, sizeof(why), "stage_out failed and did not succeed within "
                 "AdafsStageOutKeep=%u s (%u passes)", cfg->stage_out_keep, j->out_passes + 1);
        say_lost(j, why);
    } else if (v == KEEP_DONE && j->t_out_failed) {
        log_info("job %u: stage_out done on pass %u, %ld s after it first failed", j->job_id,
                 j->out_passes + 1, (long)(now - j->t_out_failed));
        free(j->error);
        j->error = NULL;
        j->failure = FAIL_NONE;
    }
    /* KEEP_TEAR_DOWN: today's way, the error as the pass left it. */
    j->out_redo = 0;
    j->t_staged_out = now;
    lc_to_teardown(j);
    return LC_CHANGED;
}
