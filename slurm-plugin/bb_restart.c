/* bb_restart.c: what the saved instances become after a slurmctld restart
 * (bb_restart.h). */
#include "bb_restart.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "log_sink.h"
#include "persist_job.h"

static void say(const struct bb_restart_hooks *h, void *job, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(const struct bb_restart_hooks *h, void *job, int level, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    h->say(job, level, line);
}

long bb_restart_load(struct bb_driver *d, const char *dir, char **state_file, char *err,
                     size_t errlen)
{
    char *old_file = NULL;
    if (asprintf(state_file, "%s/adafs_state", dir) < 0) {
        *state_file = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* adafs 0.x kept a JSON table: read once, then saved in the new form. */
    if (asprintf(&old_file, "%s/adafs_state.json", dir) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    bool from_old = access(*state_file, F_OK) < 0 && access(old_file, F_OK) == 0;
    const char *load_from = from_old ? old_file : *state_file;
    int lost = bb_job_load(load_from, &d->jobs, err, errlen);
    driver_reindex(d);
    if (lost < 0) {
        /* Nothing in it could be read. Refusing to start would stop every
         * job on the cluster; the Epilogs still tear down what its
         * instances left on the nodes. */
        char aside[4096];
        snprintf(aside, sizeof(aside), "%s.bad.%ld", load_from, (long)time(NULL));
        log_error("%s; moved it to %s and starting without saved instances", err, aside);
        if (rename(load_from, aside) < 0)
            log_error("rename %s: %m", load_from);
    } else if (lost > 0) {
        log_error("%s", err);
    }
    long n = 0;
    for (struct bb_job *j = d->jobs; j; j = j->next) {
        n++;
        if (j->unreadable)
            log_error("JobId=%u: %s: the job is held if still being set up, rebuilt if "
                      "running", j->job_id, j->unreadable);
        else if (!j->released && !j->superseded &&
                 (j->phase == PHASE_DEPLOYING || j->phase == PHASE_STAGING_IN ||
                  j->phase == PHASE_TEARDOWN))
            j->unclaimed = true;
    }
    /* Persistent instances live on in their servers' records. */
    persist_job_adopt(&d->persist, d->jobs);
    /* The table is written afresh, compacted, as the journal from now on. */
    d->store = bb_store_open(*state_file, d->jobs, err, errlen);
    if (!d->store) {
        free(old_file);
        return -1;
    }
    if (from_old && lost >= 0) {
        char done[4096];
        snprintf(done, sizeof(done), "%s.read", old_file);
        if (rename(old_file, done) < 0)
            log_error("rename %s: %m", old_file);
        else
            log_info("read %s (adafs 0.x) into %s; kept it as %s", old_file, *state_file, done);
    }
    free(old_file);
    return n;
}

void bb_restart_supersede(struct bb_driver *d, struct bb_job *old, const char *why)
{
    log_info("JobId=%u: its instance from an earlier allocation (%s) %s: %s", old->job_id,
             bb_phase_name(old->phase),
             old->phase == PHASE_STAGING_OUT || old->phase == PHASE_RUNNING ?
                 "stages out and is torn down first" : "is torn down first", why);
    old->superseded = true;
    old->unclaimed = false;
    lifecycle_job_ended(old, old->phase == PHASE_DEPLOYING || old->phase == PHASE_STAGING_IN);
    driver_save(d, old);
    driver_wake(d);
}

/* A job whose saved record could not be read, found still being set up: what
 * its instance left on its nodes is torn down and the job is held with the
 * reason (how far its stage-in got is unknown). Returns the teardown
 * record, or NULL (err) when even that cannot be made. */
static struct bb_job *unreadable_held(void *job, const char *why,
                                      const struct bb_restart_hooks *h, char *err,
                                      size_t errlen)
{
    struct bb_job *j = h->instance(job, err, errlen);
    if (!j)
        return NULL;
    bb_job_set_error(j, FAIL_USER, "the plugin's saved state of this job could not be read "
                     "after a slurmctld restart (%s); its stage-in is not known to be complete: "
                     "held, release it to run again", why);
    j->phase = PHASE_TEARDOWN;
    j->hurry = true;
    return j;
}

/* A running job whose saved record could not be read: rebuilt from Slurm's
 * record (request, nodes: all a stage-out and a teardown need; the agents
 * keep the instance file), so its results are still staged out. */
static struct bb_job *unreadable_rebuilt(void *job, const char *why,
                                         const struct bb_restart_hooks *h)
{
    char err[1024];
    struct bb_job *j = h->instance(job, err, sizeof(err));
    if (!j) {
        say(h, job, LOG_SINK_ERROR, ": saved state unreadable (%s) and cannot be rebuilt: %s; "
            "its results are not staged out", why, err);
        char note[1536];
        snprintf(note, sizeof(note), "saved state lost after a slurmctld restart: no "
                 "stage-out (%s)", why);
        h->note(job, note);
        return NULL;
    }
    say(h, job, LOG_SINK_ERROR, ": saved state unreadable (%s): rebuilt from the job's record "
        "for its stage-out and teardown", why);
    j->phase = PHASE_RUNNING;
    j->released = true;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].started = true;
    return j;
}

/* A record saved released and not yet ended whose Slurm job has ended (or
 * is gone): the job ended while slurmctld was down, or just before a crash
 * that lost the record's last save. Slurm does not start its stage-out
 * again, so its end is applied here: without it the record would stay
 * "running" for ever (its instance never torn down, a destroy_persistent
 * of what it mounts refused as in use). */
static void settle_released(struct bb_driver *d, struct bb_job *j,
                            const struct bb_restart_hooks *h)
{
    if (!j->released || j->persist || j->superseded || j->phase > PHASE_RUNNING)
        return;
    struct bb_restart_job s;
    h->state(h->arg, j, &s);
    if (s.job && !s.finished)
        return;
    log_info("JobId=%u ended while slurmctld was down (or its record's last save was lost): "
             "staging out and tearing down its instance", j->job_id);
    lifecycle_job_ended(j, false);
    driver_save(d, j);
}

/* A record whose saved state could not be read: a job still being set up
 * is held (its instance torn down), a running one rebuilt, others
 * forgotten. */
static void settle_unreadable(struct bb_driver *d, struct bb_job *j,
                              const struct bb_restart_job *s, const struct bb_restart_hooks *h)
{
    struct bb_job *fresh = NULL;
    char err[1024];
    if (s->configuring && !(fresh = unreadable_held(s->job, j->unreadable, h, err, sizeof(err))))
        say(h, s->job, LOG_SINK_ERROR, ": saved state unreadable (%s): %s", j->unreadable, err);
    else if (s->configuring)
        h->hold(s->job, PHASE_TEARDOWN);
    else if (s->running)
        fresh = unreadable_rebuilt(s->job, j->unreadable, h);
    else
        log_info("JobId=%u: saved state unreadable (%s); the job no longer holds nodes: "
                 "forgotten", j->job_id, j->unreadable);
    if (fresh)
        driver_replace(d, j, fresh);
    else
        driver_forget(d, j);
}

void bb_restart_settle(struct bb_driver *d, const struct bb_restart_hooks *h)
{
    for (struct bb_job *j = d->jobs, *next; j; j = next) {
        next = j->next;
        if (!j->unclaimed && !j->unreadable) {
            settle_released(d, j, h);
            continue;
        }
        struct bb_restart_job s;
        h->state(h->arg, j, &s);
        if (j->unreadable) {
            settle_unreadable(d, j, &s, h);
            continue;
        }
        if (s.configuring && h->same_nodes(s.job, j)) {
            /* Still CONFIGURING, but bb_p_job_begin() was not called
             * (slurmctld's saved prolog_running was already 0). */
            say(h, s.job, LOG_SINK_INFO, ": held again after a slurmctld restart until its "
                "stage-in is done");
            j->unclaimed = false;
            h->hold(s.job, j->phase);
            continue;
        }
        bb_restart_supersede(d, j, !s.job ? "the job is gone" :
                             s.pending ? "slurmctld restarted with the job pending" :
                             "slurmctld restarted with the job elsewhere or finished");
    }
}

int bb_restart_begin_again(struct bb_driver *d, struct bb_job *old,
                           const struct bb_restart_job *s, const struct bb_restart_hooks *h,
                           char *err, size_t errlen)
{
    /* Pending: a new allocation. Not pending: slurmctld restarted and
     * asks again for a job still CONFIGURING on the nodes it had. */
    bool restart = !s->pending;
    if (old->unreadable && restart) {
        struct bb_job *j = unreadable_held(s->job, old->unreadable, h, err, errlen);
        if (!j) {
            say(h, s->job, LOG_SINK_ERROR, ": saved state unreadable (%s): %s", old->unreadable,
                err);
            return -1;
        }
        say(h, s->job, LOG_SINK_ERROR, ": %s", j->error);
        driver_replace(d, old, j);
        driver_wake(d);
        h->hold(s->job, PHASE_TEARDOWN);
        return 1;
    }
    if (old->unreadable) {
        say(h, s->job, LOG_SINK_INFO, ": its unreadable saved record (%s) is of an earlier "
            "allocation: starting afresh", old->unreadable);
        driver_forget(d, old);
        return 0;
    }
    if (restart && !old->superseded && h->same_nodes(s->job, old)) {
        if (old->released) {
            /* Staged in before the restart; slurmctld's saved state had
             * not caught up with the release. */
            say(h, s->job, LOG_SINK_INFO, ": staged in before the slurmctld restart: may run");
            return 1;
        }
        if (old->phase == PHASE_DEPLOYING || old->phase == PHASE_STAGING_IN ||
            old->phase == PHASE_TEARDOWN) {
            /* In teardown before its release, it failed: held until then,
             * when the failure holds or requeues it. */
            say(h, s->job, LOG_SINK_INFO, ": still %s after a slurmctld restart: held until %s",
                bb_phase_name(old->phase),
                old->phase == PHASE_TEARDOWN ? "it is torn down" : "its stage-in is done");
            old->unclaimed = false;
            driver_wake(d);
            /* Slurm saved them with the job; set again all the same. */
            h->set_env(s->job, old);
            h->hold(s->job, old->phase);
            return 1;
        }
    }
    if (old->phase == PHASE_COMPLETE && !old->superseded) {
        driver_forget(d, old);   /* a requeued job's finished record */
        return 0;
    }
    if (old->phase != PHASE_COMPLETE && !old->superseded)
        bb_restart_supersede(d, old, restart ? "slurmctld restarted with the job on other nodes"
                                             : "the job was given new nodes");
    return 0;
}
