#include "bb_status.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "persist.h"
#include "size.h"

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

static void one(FILE *f, const struct bb_job *j, bool asked)
{
    if (j->unreadable) {
        fprintf(f, "JobId=%u SavedStateUnreadable=%s\n", j->job_id, j->unreadable);
        return;
    }
    char cap[32], chunk[32];
    size_format(j->node_capacity, cap, sizeof(cap));
    size_format(j->chunk_size, chunk, sizeof(chunk));
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
    fprintf(f, "  Servers=");
    size_t listed = asked || j->nnodes <= LIST_SERVERS_UP_TO ? j->nnodes : LIST_SERVERS_UP_TO;
    for (size_t i = 0; i < listed; i++)
        fprintf(f, "%s%s(%s:%d)", i ? "," : "", j->nodes[i].name, j->nodes[i].agent_host,
                j->nodes[i].server_port);
    if (listed < j->nnodes)
        fprintf(f, ",... (%zu more: scontrol show bbstat %u)", j->nnodes - listed, j->job_id);
    fprintf(f, "\n");
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
