#include "bb_status.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bb_qos.h"
#include "lock_watch.h"
#include "persist.h"
#include "predict.h"
#include "size.h"
#include "strbuf.h"

static void totals(FILE *f, const char *what, const struct stage_totals *t)
{
    double mib = (double)t->bytes / 1048576.0;
    fprintf(f, "  %s: Files=%" PRIu64 " Dirs=%" PRIu64 " Bytes=%" PRIu64 " Errors=%" PRIu64
               " Seconds=%.2f FilesPerSec=%.0f MiBPerSec=%.1f",
            what, t->files, t->dirs, t->bytes, t->errors, t->seconds,
            t->seconds > 0 ? (double)t->files / t->seconds : 0,
            t->seconds > 0 ? mib / t->seconds : 0);
    if (t->verified)
        fprintf(f, " Verified=%" PRIu64, t->verified);
    fprintf(f, "\n");
}

/* Seconds between two phase times, or "-" when the later is not reached. */
static void span(FILE *f, const char *name, time_t from, time_t to)
{
    if (from && to)
        fprintf(f, " %s=%lds", name, (long)(to - from));
    else
        fprintf(f, " %s=-", name);
}

/* Every server is listed for one job asked for, or a small one: the whole
 * table's servers would be long to write under the plugin's lock. */
#define LIST_SERVERS_UP_TO 16

static void list_servers(FILE *f, const struct bb_job *j, bool asked)
{
    fprintf(f, "  Servers=");
    size_t listed = asked || j->nnodes <= LIST_SERVERS_UP_TO ? j->nnodes : LIST_SERVERS_UP_TO;
    for (size_t i = 0; i < listed; i++)
        fprintf(f, "%s%s(%s:%d)", i ? "," : "", j->nodes[i].name, j->nodes[i].agent_host,
                j->nodes[i].server_port);
    if (listed < j->nnodes)
        fprintf(f, ",... (%zu more: scontrol show bbstat %u)", j->nnodes - listed, j->job_id);
    fprintf(f, "\n");
}

static void list_instances(FILE *f, const struct bb_job *j)
{
    fprintf(f, "  Instances=");
    for (size_t i = 0; i < j->req.npersist; i++)
        fprintf(f, "%s%s name=%s", i ? "," : "", persist_op_name(j->req.persist[i].op),
                j->req.persist[i].name);
    fprintf(f, "%s (no file system of its own)\n", j->req.npersist ? "" : "-");
}

static void one(FILE *f, const struct bb_job *j, bool asked)
{
    if (j->unreadable) {
        fprintf(f, "JobId=%u SavedStateUnreadable=%s\n", j->job_id, j->unreadable);
        return;
    }
    /* A job of only persistent-instance lines starts no server of its own:
     * it shows the instances it names instead of servers and a size. */
    bool own_fs = j->persist || j->node_capacity;
    char cap[32] = "-", chunk[32] = "-";
    if (own_fs) {
        size_format(j->node_capacity, cap, sizeof(cap));
        size_format(j->chunk_size, chunk, sizeof(chunk));
    }
    /* A persistent instance's servers go by its name (and its id on the
     * agents), not by a Slurm job's id. */
    if (j->persist)
        fprintf(f, "Persistent=%s(id %u) ", j->persist->name, j->job_id);
    else
        fprintf(f, "JobId=%u ", j->job_id);
    fprintf(f, "User=%s(%u) Phase=%s%s Nodes=%zu NodeCapacity=%s Chunk=%s Mount=%s\n",
            j->user ? j->user : "?", j->uid, bb_phase_name(j->phase),
            j->superseded ? " (an earlier allocation's)" : "", j->nnodes, cap, chunk,
            j->mount ? j->mount : "-");
    if (own_fs)
        list_servers(f, j, asked);
    else
        list_instances(f, j);
    totals(f, "StageIn", &j->in);
    totals(f, "StageOut", &j->out);
    fprintf(f, "  Timings:");
    span(f, "Deploy", j->t_begin, j->t_deployed);
    span(f, "StageIn", j->t_deployed, j->t_staged_in);
    span(f, "Run", j->t_staged_in, j->t_ended);
    span(f, "StageOut", j->t_ended, j->t_staged_out ? j->t_staged_out : 0);
    span(f, "Total", j->t_begin, j->t_done);
    fprintf(f, "\n");
    if (j->error)
        fprintf(f, "  Error=%s\n", j->error);
    if (j->phase == PHASE_STAGING_OUT && j->t_out_failed) {
        /* A failed stage-out kept (stageout_keep.h). */
        char since[32] = "-", next[32] = "-";
        struct tm tm;
        strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%S", localtime_r(&j->t_out_failed, &tm));
        if (j->retry_at)
            strftime(next, sizeof(next), "%Y-%m-%dT%H:%M:%S", localtime_r(&j->retry_at, &tm));
        fprintf(f, "  StageOutKept=yes FailedSince=%s Passes=%u NextPass=%s\n", since,
                j->out_passes, next);
    }
}

char *bb_status_text(const struct bb_job *jobs, uint32_t job_id)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    int shown = 0;
    for (const struct bb_job *j = jobs; j; j = j->next)
        if (!job_id || j->job_id == job_id) {
            one(f, j, job_id != 0);
            shown++;
        }
    if (!shown && job_id)
        fprintf(f, "JobId=%u has no adafs instance\n", job_id);
    else if (!shown)
        fprintf(f, "no adafs instances\n");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

bool bb_status_shown(const struct bb_job *j, bool see_all, uint32_t uid)
{
    return j->phase != PHASE_COMPLETE && j->node_capacity && (see_all || j->uid == uid);
}

void bb_status_pool(const struct bb_job *jobs, const struct bb_config *cfg, size_t node_count,
                    bool see_all, uint32_t uid, struct bb_pool_view *out)
{
    *out = (struct bb_pool_view){
        .total = cfg->total_capacity ? cfg->total_capacity : cfg->node_capacity * node_count,
    };
    /* Servers of jobs and persistent instances; a job that mounts an
     * instance reserves nothing of its own. */
    for (const struct bb_job *j = jobs; j; j = j->next)
        if (j->phase != PHASE_COMPLETE && j->node_capacity) {
            out->used += j->node_capacity * j->nnodes;
            out->count += bb_status_shown(j, see_all, uid);
        }
}

void bb_status_buffer(const struct bb_job *j, struct bb_buffer_view *out)
{
    const struct persist_instance *p = j->persist;
    *out = (struct bb_buffer_view){
        .job_id = p ? 0 : j->job_id, .persistent = p != NULL, .name = p ? p->name : NULL,
        .size = p ? p->capacity : j->node_capacity * j->nnodes, .phase = j->phase,
        .uid = j->uid, .t_begin = j->t_begin,
    };
    if (p) {
        char size[32];
        size_format(p->used, size, sizeof(size));
        snprintf(out->pool, sizeof(out->pool), "persistent(used=%s,fair_share=%s)", size,
                 p->fair_share[0] ? p->fair_share : "default");
    }
}

/* Slurm does not say who asks for bbstat: with PrivateData nobody sees
 * other jobs' users, servers or errors (which name paths). d->lock held. */
static char *private_report(const struct bb_driver *d, const char *plugin, const char *state_file)
{
    size_t active = 0;
    for (const struct bb_job *j = d->jobs; j; j = j->next)
        active += j->phase != PHASE_COMPLETE;
    struct strbuf b = { 0 };
    strbuf_printf(&b, "%s: per-job status is private (Flags=PrivateData); %zu instances "
                  "active. Users: scontrol show job; administrators: %s and slurmctld's log\n",
                  plugin, active, state_file ? state_file : "the plugin's state file");
    return strbuf_take(&b);
}

char *bb_status_report(struct bb_driver *d, const char *arg, const char *plugin,
                       const char *state_file, const struct bb_lock_stats *job_lock)
{
    struct strbuf b = { 0 };
    uint32_t only = 0;
    if (arg) {
        char *end;
        unsigned long id = strtoul(arg, &end, 10);
        if (*end || id == 0) {
            strbuf_printf(&b, "%s: '%s' is not a job id (scontrol show bbstat without one"
                          " lists the persistent instances too)\n", plugin, arg);
            return strbuf_take(&b);
        }
        only = (uint32_t)id;
    }
    pthread_mutex_lock(&d->lock);
    if (d->config.flags & BBCONF_PRIVATE_DATA) {
        char *out = private_report(d, plugin, state_file);
        pthread_mutex_unlock(&d->lock);
        return out;
    }
    uint64_t since = lock_watch_now_us();
    char *text = bb_status_text(d->jobs, only);
    char *persistent = only ? NULL : persist_status_text(&d->persist);
    driver_lock_note(&d->held, "bbstat", lock_watch_now_us() - since);
    struct bb_lock_stats table = d->held;
    /* qosd's status file is read off the table lock. */
    char *qos_dir = d->config.qos.paths && d->config.qos.state_dir ?
                    strdup(d->config.qos.state_dir) : NULL;
    pthread_mutex_unlock(&d->lock);
    char *qos = qos_dir ? bb_qos_text(qos_dir, only) : NULL;
    free(qos_dir);
    strbuf_printf(&b, "%s", text ? text : "out of memory\n");
    free(text);
    if (persistent && persistent[0])
        strbuf_printf(&b, "Persistent instances:\n%s", persistent);
    free(persistent);
    if (qos)
        strbuf_printf(&b, "%s", qos);
    free(qos);
    if (!only) {
        /* For administrators and the benchmarks: nothing of the plugin
         * should keep slurmctld's job lock long. */
        strbuf_printf(&b, "Plugin: JobLockHeldMaxUs=%"PRIu64"(%s) JobLockHolds=%"PRIu64
                      " JobLockHeldMeanUs=%"PRIu64" TableLockHeldMaxUs=%"PRIu64"(%s)\n",
                      job_lock->max_us, job_lock->max_where ? job_lock->max_where : "-",
                      job_lock->holds, job_lock->holds ? job_lock->total_us / job_lock->holds : 0,
                      table.max_us, table.max_where ? table.max_where : "-");
    }
    struct walltime_prediction p;
    if (only && predict_lookup(only, &p))
        strbuf_printf(&b, "JobId=%u Walltime: Median=%.0fs Conservative=%.0fs Group=%s "
                      "MissProbability=%.3f\n", only, p.median_s, p.conservative_s,
                      walltime_group_name(p.group), p.miss_probability);
    return strbuf_take(&b);
}
