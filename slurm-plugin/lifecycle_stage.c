/* lifecycle_stage.c: an instance's stages (lifecycle_phases.h): STAGE on
 * every worker, then WATCH until each stager ends, each worker's report
 * read as it comes and added up once all are done. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle_phases.h"
#include "log.h"
#include "persist_job.h"
#include "stage_report.h"
#include "stageout_keep.h"

/* The next stage spec of the given direction at or after stage_index. */
struct stage_spec *lc_current_spec(struct bb_job *j, enum stage_direction dir)
{
    /* A pass after a failed stage-out runs the failed lines only. */
    while (j->stage_index < j->req.nstages &&
           (j->req.stages[j->stage_index].direction != dir ||
            (dir == STAGE_OUT && stageout_keep_skips(j, j->stage_index))))
        j->stage_index++;
    return j->stage_index < j->req.nstages ? &j->req.stages[j->stage_index] : NULL;
}

/* Paths inside the file system are given to the stager from its root. */
static char *inside_path(const char *relative)
{
    char *p = NULL;
    while (relative[0] == '.' && relative[1] == '/')
        relative += 2;
    if (strcmp(relative, ".") == 0)
        relative = "";
    return asprintf(&p, "/%s", relative) < 0 ? NULL : p;
}

/* The stage request every worker of the job gets, but for its number,
 * into the set (its paths copied). -1 when out of memory. */
static int stage_template(struct lc_set *set, const struct bb_job *j, const struct bb_config *cfg,
                          const struct stage_spec *s, uint32_t flags)
{
    bool in = s->direction == STAGE_IN;
    bool list_out = !in && s->type == STAGE_LIST;
    /* Into or out of the job's first mount, or a further one it names. */
    const char *inside = in ? s->destination : s->source;
    if (!list_out)
        inside = persist_job_stage_mount(&j->req, inside, set->further_name);
    set->stage_source = in ? strdup(s->source) : inside_path(inside);
    set->stage_destination = in ? inside_path(inside) : strdup(s->destination);
    set->threads = malloc((j->nnodes ? j->nnodes : 1) * sizeof(*set->threads));
    if (!set->stage_source || !set->stage_destination || !set->threads)
        return -1;
    for (size_t i = 0; i < j->nnodes; i++)
        set->threads[i] = bb_stage_threads(cfg, j->nodes[i].cpus);
    set->stage = (struct agent_stage){
        .job_id = j->job_id, .direction = in ? AGENT_STAGE_IN : AGENT_STAGE_OUT,
        .type = (uint32_t)s->type, .nworkers = (uint32_t)j->nnodes,
        .threads = cfg->stage_threads, .flags = flags | (s->verify ? AGENT_STAGE_VERIFY : 0),
        .threads_per_cpu = cfg->stage_threads_per_cpu,
        .max_mdops = j->req.max_mdops ? j->req.max_mdops : cfg->max_mdops,
        .max_bandwidth = j->req.max_bw ? j->req.max_bw : cfg->max_bandwidth,
        .source = set->stage_source, .destination = set->stage_destination,
        .name = set->further_name,
    };
    return 0;
}

/* Worker k's STAGE: the set's template with its number. */
static void build_stage(const struct lc_set *s, size_t k, struct rpc_writer *w)
{
    struct agent_stage m = s->stage;
    m.worker = (uint32_t)s->node[k];
    m.threads = s->threads[s->node[k]];
    agent_stage_put(w, &m);
}

/* Adds a worker's report (stage_report.h) to the totals; returns the first
 * failure it lists (malloc'd) or NULL. */
static char *add_summary(struct stage_totals *t, const char *summary, bool *fs_fault)
{
    struct stage_report r;
    char err[128];
    if (stage_report_decode(summary, &r, err, sizeof(err)) < 0)
        return NULL;
    t->files += r.files;
    t->verified += r.verified;
    t->dirs += r.dirs;
    t->bytes += r.bytes;
    t->errors += r.errors;
    *fs_fault = r.fs_faults > 0;
    if (r.seconds > t->seconds)
        t->seconds = r.seconds;   /* workers run side by side */
    char *first = NULL;
    const struct stage_report_failure *f = r.nfailures ? &r.failures[0] : NULL;
    if (f && f->path && f->error &&
        asprintf(&first, "%s: %s%s%s", f->path, f->what ? f->what : "", f->what ? ": " : "",
                 f->error) < 0)
        first = NULL;
    stage_report_free(&r);
    return first;
}

/* The first line of a stager's messages, for a job's reason. */
static char *first_line(const char *text)
{
    while (*text == '\n')
        text++;
    size_t len = strcspn(text, "\n");
    return len ? strndup(text, len) : NULL;
}

/* Is a failure (the worker's first) about a file being copied, not the
 * workers' mailboxes (the stager's .adafs-stage directory)? */
static bool copy_failure(const char *why)
{
    return why && !strstr(why, "/.adafs-stage/");
}

/* The node of the server a stager's failure names ("the job's file
 * system: server K"): the instance's server K runs on the job's node K
 * (lifecycle_deploy.c). NULL if none is named. */
static const char *failed_server_node(const struct bb_job *j, const char *why)
{
    const char *p = why ? strstr(why, "the job's file system: server ") : NULL;
    unsigned k;
    if (!p || sscanf(p, "the job's file system: server %u", &k) != 1 || k >= j->nnodes)
        return NULL;
    return j->nodes[k].name;
}

/* A worker's final WATCH answer, read where it came (set_answered). */
void lc_digest_answer(struct lc_set *s, size_t k)
{
    struct lc_digest *d = &s->digest[k];
    struct rpc_reader r = s->call[k].reply.reader;
    struct agent_stage_status st;
    if (d->read || agent_stage_status_get(&r, &st) < 0)
        return;
    d->read = true;
    d->exit_status = st.exit_status;
    char *first = st.summary[0] ? add_summary(&d->part, st.summary, &d->fs_fault) : NULL;
    if (st.exit_status != 0)
        d->why = first ? first : first_line(st.errors);
    else
        free(first);
}

/* How many of the job's nodes run the current stage: the finalize pass
 * runs on the first only. */
static size_t stage_workers(const struct bb_job *j)
{
    return j->finalizing ? 1 : j->nnodes;
}

/* STAGE on the workers not yet started, else WATCH on all of them. */
static int send_stage(struct bb_job *j, const struct lc_env *env, const struct stage_spec *spec)
{
    size_t nodes = stage_workers(j);
    bool all_sent = true;
    for (size_t i = 0; i < nodes; i++)
        all_sent &= j->nodes[i].stage_sent;
    struct lc_set *s = lc_set_new(j, all_sent ? SET_WATCH : SET_STAGE, env);
    if (!s) {
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    int rc;
    if (all_sent) {
        /* Every worker is asked the same; each answer is read as it comes. */
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        agent_watch_put(&w, &(struct agent_watch){ j->job_id, AGENT_OP_RUNNING,
                                                   (uint32_t)env->hold_ms });
        s->digest = calloc(nodes ? nodes : 1, sizeof(*s->digest));
        rc = s->digest ? lc_set_share(s, &w) : (rpc_writer_free(&w), -1);
    } else {
        s->build = build_stage;
        rc = stage_template(s, j, env->cfg, spec, j->finalizing ? AGENT_STAGE_FINALIZE : 0);
    }
    if (rc < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a stage request");
        lc_set_free(s);
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < nodes; i++)
        if (all_sent || !j->nodes[i].stage_sent)
            lc_set_add(s, j, i, all_sent ? AGENT_WATCH : AGENT_STAGE);
    return lc_set_send(j, s, env) < 0 ? (lc_to_teardown(j), LC_CHANGED) : 0;
}

int lc_finish_stage(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct lc_failures f;
    lc_set_failures(s, j, 0, NULL, &f);
    for (size_t k = 0; k < s->n; k++)
        if (s->call[k].rc == 0 && s->call[k].reply.status == 0)
            j->nodes[s->node[k]].stage_sent = true;
    if (f.count)
        return lc_fail_or_retry(j, &f, env->now);
    j->attempts = 0;
    return LC_CHANGED;   /* watched from the next step on */
}

/* StageInTimeout / StageOutTimeout bound a whole direction. */
bool lc_stage_overdue(struct bb_job *j, const struct lc_env *env, enum stage_direction dir,
                          const struct stage_spec *spec)
{
    /* A stage-out pass after a failed one is timed from its own start. */
    time_t since = dir == STAGE_IN ? j->t_deployed : j->t_out_pass ? j->t_out_pass : j->t_ended;
    uint32_t limit = dir == STAGE_IN ? env->cfg->stage_in_timeout : env->cfg->stage_out_timeout;
    if (!limit || !since || env->now - since <= (time_t)limit)
        return false;
    bb_job_set_error(j, FAIL_USER, "%s source=%s did not finish within %s=%u s",
                     dir == STAGE_IN ? "stage_in" : "stage_out", spec->source,
                     dir == STAGE_IN ? "StageInTimeout" : "StageOutTimeout", limit);
    log_warn("job %u: %s", j->job_id, j->error);
    lc_to_teardown(j);
    return true;
}

/* A WATCH set that ended early: one worker's answer was no stage done.
 * Only the answers that had come (finished) are looked at. */
int lc_finish_watch_failed(struct bb_job *j, struct lc_set *s, const bool *finished,
                               const struct lc_env *env)
{
    struct lc_failures f;
    lc_set_failures(s, j, 0, finished, &f);
    for (size_t k = 0; k < s->n; k++) {
        struct agent_call *c = &s->call[k];
        if (!finished[k] || c->rc < 0 || c->reply.status < 0)
            continue;
        struct rpc_reader r = c->reply.reader;
        struct agent_stage_status st;
        char why[256];
        if (agent_stage_status_get(&r, &st) < 0) {
            snprintf(why, sizeof(why), "node %s: the agent's status answer is malformed", c->node);
            lc_note_failure(&f, FAIL_TRANSIENT, why);
        } else if (st.state == AGENT_OP_NONE) {
            /* The agent knows the job but runs no stage of it: started
             * again on that node at the next attempt. */
            snprintf(why, sizeof(why), "node %s: no stage of the job runs there (the agent lost "
                     "it): starting it again", c->node);
            lc_note_failure(&f, FAIL_TRANSIENT, why);
            j->nodes[s->node[k]].stage_sent = false;
        }
    }
    if (!f.count)
        lc_note_failure(&f, FAIL_TRANSIENT, "a status request failed");
    return lc_fail_or_retry(j, &f, env->now);
}

/* Every worker's stage is done: their reports added up once. */
int lc_finish_watch(struct bb_job *j, struct lc_set *s, enum stage_direction dir,
                        struct stage_spec *spec)
{
    const char *verb = dir == STAGE_IN ? "stage_in" : "stage_out";
    struct stage_totals *totals = dir == STAGE_IN ? &j->in : &j->out;
    int failed = 0, best = 0;
    char *cause = NULL;
    for (size_t k = 0; k < s->n; k++) {
        const struct lc_digest *d = &s->digest[k];
        if (!d->read)
            continue;   /* cannot be: the set would have failed */
        totals->files += d->part.files;
        totals->verified += d->part.verified;
        totals->dirs += d->part.dirs;
        totals->bytes += d->part.bytes;
        totals->errors += d->part.errors;
        if (d->part.seconds > totals->seconds)
            totals->seconds = d->part.seconds;   /* workers run side by side */
        /* A stage-out's reason names its destination too: the stager's
         * paths are inside the file system, the user must fix the other. */
        /* The job's file system failing (a server gone, named by that
         * worker) is the cause to give, before any other worker's; a
         * failed copy (its path) before a failed mailbox. */
        int rank = d->exit_status == 0 ? 0 : !d->fs_fault ? 1 : !copy_failure(d->why) ? 2 : 3;
        if (rank == 0)
            continue;
        failed++;
        if (rank <= best)
            continue;
        best = rank;
        free(cause);
        const char *server_node = d->fs_fault ? failed_server_node(j, d->why) : NULL;
        if (asprintf(&cause, "%s source=%s%s%s on node %s: %s%s%s%s", verb, spec->source,
                     dir == STAGE_OUT ? " destination=" : "",
                     dir == STAGE_OUT ? spec->destination : "", j->nodes[s->node[k]].name,
                     d->why ? d->why : "the stager failed",
                     server_node ? " (that server ran on node " : "",
                     server_node ? server_node : "", server_node ? ")" : "") < 0)
            cause = NULL;
    }
    j->attempts = 0;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].stage_sent = false;
    if (failed && dir == STAGE_IN) {
        bb_job_set_error(j, FAIL_USER, "%s", cause ? cause : "stage failed");
        free(cause);
        log_warn("job %u: %s", j->job_id, j->error);
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    if (failed) {
        /* Stage-out copies what it can: go on with the other lines; the
         * failed ones decide at the pass's end (stageout_keep.h). */
        if (best >= 2)
            stageout_keep_fs_failed(j, j->stage_index, cause ? cause : "stage failed");
        else
            stageout_keep_failed(j, j->stage_index, cause ? cause : "stage failed");
        free(cause);
        log_warn("job %u: %s", j->job_id, j->error);
    }
    /* The workers finish a stage themselves, attributes included (the
     * stager's doc/stager.md): no finalize pass follows. One in a state
     * saved by an older version still runs, and does nothing. */
    j->finalizing = false;
    j->stage_index++;
    return LC_CHANGED;
}

int lc_step_stage(struct bb_job *j, const struct lc_env *env, enum stage_direction dir)
{
    struct stage_spec *spec = lc_current_spec(j, dir);
    if (!spec) {
        if (dir == STAGE_IN) {
            j->t_staged_in = env->now;
            j->phase = PHASE_RUNNING;
            return LC_CHANGED | LC_RELEASE;
        }
        return stageout_keep_end_pass(j, env->cfg, env->now);
    }
    if (j->nnodes == 0) {
        j->stage_index++;   /* nobody to copy to or from */
        return LC_CHANGED;
    }
    return send_stage(j, env, spec);
}

