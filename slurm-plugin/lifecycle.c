/* lifecycle.c: the step (lifecycle.h): what failures mean, acting on a
 * set's answers, teardown, a running instance's usage, a job's end. The
 * deploy is in lifecycle_deploy.c, the stages in lifecycle_stage.c, the
 * sets of requests in lifecycle_set.c. */
#include "lifecycle.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lifecycle_phases.h"
#include "log.h"
#include "stageout_keep.h"

/* --- what failures mean ------------------------------------------------ */

enum bb_failure lifecycle_classify(int rc, int status, uint32_t fault)
{
    if (rc < 0)
        return FAIL_TRANSIENT;   /* no authenticated answer: it proves nothing */
    if (status >= 0)
        return FAIL_NONE;
    switch (fault) {
    case AGENT_FAULT_NODE: return FAIL_NODE;
    case AGENT_FAULT_JOB: return FAIL_USER;
    default: return FAIL_TRANSIENT;
    }
}

/* How bad a failure is for the job: a proven node fault first (the node
 * must be drained), then the job's own, then what may pass. */
static int severity(enum bb_failure f)
{
    return f == FAIL_NODE ? 3 : f == FAIL_USER ? 2 : f == FAIL_TRANSIENT ? 1 : 0;
}

bool lifecycle_retry(struct bb_job *j, const char *why, time_t now)
{
    if (++j->attempts < LC_ATTEMPTS) {
        time_t wait = (time_t)LC_RETRY_S << (j->attempts - 1);
        j->retry_at = now + wait;
        log_warn("job %u: %s: trying again in %ld s (attempt %u of %d failed; no node is blamed)",
                 j->job_id, why, (long)wait, j->attempts, LC_ATTEMPTS);
        return true;
    }
    /* Held only before the job ran; later its instance is torn down (or,
     * in stage-out, kept: lc_fail_or_retry). */
    bb_job_set_error(j, FAIL_TRANSIENT, "%s (%s after %d attempts; no node drained)", why,
                     j->phase < PHASE_RUNNING ? "held" : "given up", LC_ATTEMPTS);
    j->attempts = 0;
    j->retry_at = 0;
    return false;
}

struct lc_verdict lifecycle_verdict(enum bb_failure failure, unsigned restarts)
{
    /* What may pass was already retried (lifecycle_retry); a job that
     * already failed on other nodes is likely the cause itself: held, so
     * it cannot drain node after node. */
    return (struct lc_verdict){
        .drain = failure == FAIL_NODE,
        .hold = failure == FAIL_USER || failure == FAIL_TRANSIENT || restarts > 0,
    };
}

char *lifecycle_failed_node(const char *error)
{
    if (!error || strncmp(error, "node ", 5) != 0)
        return NULL;
    size_t len = strcspn(error + 5, ": ");
    return len ? strndup(error + 5, len) : NULL;
}


/* --- the failures of a set's answers ------------------------------------ */

void lc_note_failure(struct lc_failures *f, enum bb_failure kind, const char *why)
{
    f->count++;
    if (severity(kind) <= severity(f->worst))
        return;
    f->worst = kind;
    free(f->why);
    f->why = strdup(why);
}

/* Looks at every answer of s that had come (finished: a copy of the
 * set's flags taken under its lock; NULL: all came): an agent's refusal
 * that is no failure of this step (tolerate, 0: none) is left for the
 * caller. */
void lc_set_failures(struct lc_set *s, struct bb_job *j, int tolerate, const bool *finished,
                         struct lc_failures *f)
{
    *f = (struct lc_failures){ 0 };
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *q = &s->call[k];
        if (finished && !finished[k])
            continue;
        /* A stage already running there: our earlier STAGE arrived, its
         * answer did not (a timeout, or a slurmctld restart that lost the
         * acknowledgement). It is watched like the others. */
        if (q->rc == 0 && q->op == AGENT_STAGE && q->reply.status == -EBUSY) {
            log_info("job %u: node %s: stage already running (started before a lost answer): "
                     "watching it", j->job_id, q->node);
            q->reply.status = 0;
        }
        if (q->rc == 0 && tolerate && q->reply.status == tolerate)
            continue;
        enum bb_failure kind = lifecycle_classify(q->rc, q->reply.status, q->reply.fault);
        if (kind != FAIL_NONE)
            lc_note_failure(f, kind, q->rc < 0 ? q->err : q->reply.message);
    }
}

void lc_to_teardown(struct bb_job *j)
{
    lc_set_drop(j);
    j->phase = PHASE_TEARDOWN;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].stage_sent = false;
}

/* After calls that failed: a node's or the job's fault ends the instance
 * (teardown, then the shim drains or holds); one that may pass is tried
 * again later, up to LC_ATTEMPTS times. Returns the step's events. */
int lc_fail_or_retry(struct bb_job *j, struct lc_failures *f, time_t now)
{
    const char *why = f->why ? f->why : "a request failed";
    if (f->worst == FAIL_TRANSIENT && lifecycle_retry(j, why, now)) {
        free(f->why);
        return LC_CHANGED;
    }
    if (f->worst == FAIL_TRANSIENT && j->phase == PHASE_STAGING_OUT) {
        /* An agent unreachable (stopped, restarting, cut off) through the
         * retries of a stage-out: the line failed, as a full destination
         * would. Its data may still be there: the instance is kept and the
         * line run again every AdafsStageOutRetry, up to AdafsStageOutKeep
         * (stageout_keep.h), not torn down with the results. */
        const struct stage_spec *spec = lc_current_spec(j, STAGE_OUT);
        char *cause = NULL;
        if (asprintf(&cause, "stage_out source=%s destination=%s: %s (after %d attempts)",
                     spec ? spec->source : "?", spec ? spec->destination : "?", why,
                     LC_ATTEMPTS) < 0)
            cause = NULL;
        if (!j->out_failed && !j->t_out_failed) {
            /* lifecycle_retry's text is replaced by the line's. */
            free(j->error);
            j->error = NULL;
            j->failure = FAIL_NONE;
        }
        /* The pass ends here, the lines after it failed with it: their
         * STAGE, sent while this line's stager may still run there, would
         * be answered "already running" and that stager's end taken for
         * theirs. The next pass runs them all, in order. */
        for (size_t i = j->stage_index; i < j->req.nstages; i++)
            if (j->req.stages[i].direction == STAGE_OUT && !stageout_keep_skips(j, i))
                stageout_keep_failed(j, i, cause ? cause : why);
        log_warn("job %u: %s", j->job_id, cause ? cause : why);
        free(cause);
        free(f->why);
        for (size_t i = 0; i < j->nnodes; i++)
            j->nodes[i].stage_sent = false;
        j->stage_index = j->req.nstages;
        return LC_CHANGED;
    }
    const struct stage_spec *out = j->phase == PHASE_STAGING_OUT ? lc_current_spec(j, STAGE_OUT)
                                                                   : NULL;
    if (f->worst != FAIL_TRANSIENT && out)
        /* Its data is gone (a node's or the job's fault, e.g. an agent
         * restarted since and wiped it): the comment says what was lost. */
        bb_job_set_error(j, f->worst, "stage_out source=%s destination=%s not copied out: %s",
                         out->source, out->destination, why);
    else if (f->worst != FAIL_TRANSIENT)
        bb_job_set_error(j, f->worst, "%s", why);
    free(f->why);
    lc_to_teardown(j);
    return LC_CHANGED;
}

/* --- teardown ------------------------------------------------------------ */

static int torn_down(struct bb_job *j, const struct lc_env *env)
{
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].started = false;   /* the port stays, for bbstat's history */
    j->phase = PHASE_COMPLETE;
    j->t_done = env->now;
    log_info("job %u: adafs torn down%s%s", j->job_id, j->error ? ": " : "", j->error ? j->error : "");
    return LC_CHANGED | LC_FINISHED;
}

/* One request naming the job (TEARDOWN, STATUS) to every node; nothing is
 * sent when out of memory (the caller's next step tries again). */
static void send_ref_to_all(struct bb_job *j, enum set_kind kind, uint16_t op, bool hurry,
                            const struct lc_env *env)
{
    struct lc_set *s = lc_set_new(j, kind, env);
    if (!s)
        return;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ j->job_id, hurry });
    if (lc_set_share(s, &w) < 0) {
        lc_set_free(s);
        return;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        lc_set_add(s, j, i, op);
    lc_set_send(j, s, env);
}

static int step_teardown(struct bb_job *j, const struct lc_env *env)
{
    if (j->nnodes == 0)
        return torn_down(j, env);
    /* Teardown is idempotent on the agents: sent to every node. Not sent
     * (out of memory): tried again at the next step rather than leave data
     * behind. */
    send_ref_to_all(j, SET_TEARDOWN, AGENT_TEARDOWN, j->hurry, env);
    return 0;
}

static int finish_teardown(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    /* A node that fails it is not the job's failure: the Epilog's RELEASE
     * on that node tears down what is left. */
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        if (c->rc < 0 || c->reply.status < 0)
            log_warn("job %u: teardown on %s: %s", j->job_id, c->node,
                     c->rc < 0 ? c->err : c->reply.message);
    }
    return torn_down(j, env);
}

/* --- a running instance's usage ------------------------------------------ */

int lifecycle_poll(struct bb_job *j, const struct lc_env *env)
{
    if (j->phase != PHASE_RUNNING || j->calls || j->nnodes == 0)
        return 0;
    send_ref_to_all(j, SET_POLL, AGENT_STATUS, false, env);
    return 0;
}

/* What the servers hold: the sum of what each agent said (an agent that
 * did not say is counted as before: nothing of the job changes). */
static int finish_poll(struct bb_job *j, struct lc_set *s, uint64_t *used)
{
    uint64_t sum = 0;
    size_t told = 0;
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        struct agent_stage_status st;
        struct rpc_reader r = c->reply.reader;
        if (c->rc == 0 && c->reply.status == 0 && agent_stage_status_get(&r, &st) == 0 &&
            st.has_server) {
            sum += st.used;
            told++;
        } else {
            log_warn("job %u: usage of its server on %s: %s", j->job_id, c->node,
                     c->rc < 0 ? c->err : c->reply.status < 0 ? c->reply.message
                                                             : "not reported");
        }
    }
    if (told == s->n && used)
        *used = sum;
    return 0;
}

/* --- the step -------------------------------------------------------------- */

/* Acts on the set in flight, if it is done; 1 when the job still waits. */
static int check_set(struct bb_job *j, const struct lc_env *env, int *events)
{
    struct lc_set *s = (struct lc_set *)j->calls;
    bool *finished = malloc(s->n * sizeof(*finished));
    pthread_mutex_lock(&s->lock);
    bool done = s->outstanding == 0, failed = s->failed;
    if (finished)
        memcpy(finished, s->finished, s->n * sizeof(*finished));
    pthread_mutex_unlock(&s->lock);
    enum stage_direction dir = j->phase == PHASE_STAGING_OUT ? STAGE_OUT : STAGE_IN;
    struct stage_spec *spec = NULL;
    if (s->kind == SET_STAGE || s->kind == SET_WATCH)
        spec = lc_current_spec(j, dir);
    if (!done && !failed) {
        free(finished);
        if (spec && lc_stage_overdue(j, env, dir, spec))
            *events = LC_CHANGED;
        return *events ? 0 : 1;
    }
    j->calls = NULL;
    if (s->unbuilt) {
        struct lc_failures f = { .count = 1, .worst = FAIL_TRANSIENT,
                              .why = strdup("out of memory encoding requests to the job's nodes") };
        *events = lc_fail_or_retry(j, &f, env->now);
        free(finished);
        lc_set_free(s);
        return 0;
    }
    if (!done) {
        /* Answers still to come are dropped; the set stays whole until the
         * ones that came are read (only then is it abandoned). */
        if (finished)
            *events = lc_finish_watch_failed(j, s, finished, env);
        else
            *events = (bb_job_set_error(j, FAIL_TRANSIENT, "out of memory"), lc_to_teardown(j),
                       LC_CHANGED);
        free(finished);
        s->base.abandon(&s->base);
        return 0;
    }
    free(finished);
    switch (s->kind) {
    case SET_START: *events = lc_finish_start(j, s, env); break;
    case SET_CLEAR: *events = lc_finish_clear(j, s, env); break;
    case SET_CONFIGURE: *events = lc_finish_configure(j, s, env); break;
    case SET_STAGE: *events = spec ? lc_finish_stage(j, s, env) : LC_CHANGED; break;
    case SET_WATCH: {
        bool all_done = true;
        for (size_t k = 0; k < s->n; k++)
            all_done &= lc_stage_done(&s->call[k]);
        if (!all_done) {
            bool *every = calloc(s->n, sizeof(*every));
            for (size_t k = 0; every && k < s->n; k++)
                every[k] = true;
            *events = every ? lc_finish_watch_failed(j, s, every, env)
                            : (lc_to_teardown(j), LC_CHANGED);
            free(every);
        } else {
            *events = spec ? lc_finish_watch(j, s, dir, spec) : LC_CHANGED;
        }
        break;
    }
    case SET_TEARDOWN: *events = finish_teardown(j, s, env); break;
    case SET_POLL: *events = finish_poll(j, s, env->used); break;
    }
    lc_set_retire(s, env);
    return 0;
}

bool lifecycle_waiting(const struct bb_job *j)
{
    return j->calls != NULL;
}

int lifecycle_step(struct bb_job *j, const struct lc_env *env)
{
    int events = 0;
    if (j->calls && check_set(j, env, &events))
        return events;
    if (j->calls || events & LC_FINISHED)
        return events;   /* sent the next set already (or done) */
    if (j->phase != PHASE_TEARDOWN && j->retry_at && env->now < j->retry_at)
        return events;
    j->retry_at = 0;
    switch (j->phase) {
    case PHASE_DEPLOYING: events |= lc_step_deploy(j, env); break;
    case PHASE_STAGING_IN: events |= lc_step_stage(j, env, STAGE_IN); break;
    case PHASE_STAGING_OUT: events |= lc_step_stage(j, env, STAGE_OUT); break;
    case PHASE_TEARDOWN: events |= step_teardown(j, env); break;
    case PHASE_RUNNING:
    case PHASE_COMPLETE:
        break;
    }
    return events;
}

void lifecycle_job_ended(struct bb_job *j, bool hurry)
{
    j->hurry = hurry;
    switch (j->phase) {
    case PHASE_RUNNING:
        j->t_ended = time(NULL);
        if (hurry) {
            lc_to_teardown(j);
            break;
        }
        lc_set_drop(j);
        j->phase = PHASE_STAGING_OUT;
        j->stage_index = 0;
        j->finalizing = false;
        j->out_failed = j->out_redo = 0;
        j->t_out_failed = j->t_out_pass = 0;
        j->out_passes = 0;
        for (size_t i = 0; i < j->nnodes; i++)
            j->nodes[i].stage_sent = false;
        break;
    case PHASE_STAGING_OUT:
        /* Only --hurry stops a stage-out under way, or a failed one kept. */
        if (hurry) {
            stageout_keep_hurry(j);
            lc_to_teardown(j);
        }
        break;
    case PHASE_DEPLOYING:
    case PHASE_STAGING_IN:
        j->t_ended = time(NULL);
        lc_to_teardown(j);
        break;
    case PHASE_TEARDOWN:
    case PHASE_COMPLETE:
        break;
    }
}

void lifecycle_cancel(struct bb_job *j, bool hurry)
{
    if ((j->phase == PHASE_DEPLOYING || j->phase == PHASE_STAGING_IN) && j->failure == FAIL_NONE)
        bb_job_set_error(j, FAIL_CANCELLED, "cancelled");
    lifecycle_job_ended(j, hurry);
}
