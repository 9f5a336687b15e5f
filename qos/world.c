/* world: see world.h. */
#include "world.h"

#include <errno.h>
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "log.h"

/* Nodes are reread this often even if slurmctld says nothing changed:
 * cheap, and an address fixed by hand in slurm.conf is picked up. */
#define NODES_EVERY_S 60

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct agent_addr *)a)->name, ((const struct agent_addr *)b)->name);
}

int world_node(const struct world *w, const char *name)
{
    size_t lo = 0, hi = w->nnodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(w->nodes[mid].name, name);
        if (c == 0)
            return (int)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int load_nodes(struct world *w, const struct qos_conf *conf, char *err, size_t errlen)
{
    node_info_msg_t *msg = NULL;
    time_t now = time(NULL);
    time_t since = now - w->nodes_loaded < NODES_EVERY_S ? w->nodes_update : 0;
    if (slurm_load_node(since, &msg, SHOW_ALL) != SLURM_SUCCESS) {
        if (slurm_get_errno() == SLURM_NO_CHANGE_IN_DATA)
            return 0;
        snprintf(err, errlen, "cannot read the nodes from slurmctld: %s",
                 slurm_strerror(slurm_get_errno()));
        return -1;
    }
    struct agent_addr *nodes = calloc(msg->record_count ? msg->record_count : 1, sizeof(*nodes));
    if (!nodes) {
        slurm_free_node_info_msg(msg);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < msg->record_count; i++) {
        const node_info_t *ni = &msg->node_array[i];
        if (!ni->name || strlen(ni->name) >= sizeof(nodes[n].name))
            continue;
        struct agent_addr *wn = &nodes[n++];
        snprintf(wn->name, sizeof(wn->name), "%s", ni->name);
        snprintf(wn->host, sizeof(wn->host), "%s", ni->node_addr && *ni->node_addr ? ni->node_addr
                                                                                   : ni->name);
        wn->port = conf->agent_port_offset ? ni->port + conf->agent_port_offset : conf->agent_port;
    }
    qsort(nodes, n, sizeof(*nodes), by_name);
    w->nodes_update = msg->last_update;
    w->nodes_loaded = now;
    slurm_free_node_info_msg(msg);
    /* Indices must stay what they were for the nodes still there: ctl
     * keeps measurements by index. Nodes only ever get added in place
     * when names sort the same; otherwise the jobs are rebuilt anyway. */
    free(w->nodes);
    w->nodes = nodes;
    w->nnodes = n;
    return 1;
}

static bool job_running(const slurm_job_info_t *j)
{
    /* Running (CONFIGURING while it stages in), or completing (it may be
     * staging out). */
    return (j->job_state & JOB_STATE_BASE) == JOB_RUNNING || (j->job_state & JOB_COMPLETING);
}

static int load_jobs(struct world *w, const struct qos_conf *conf, bool force, char *err,
                     size_t errlen)
{
    job_info_msg_t *msg = NULL;
    if (slurm_load_jobs(force ? 0 : w->jobs_update, &msg, SHOW_ALL) != SLURM_SUCCESS) {
        if (slurm_get_errno() == SLURM_NO_CHANGE_IN_DATA)
            return 0;
        snprintf(err, errlen, "cannot read the jobs from slurmctld: %s",
                 slurm_strerror(slurm_get_errno()));
        return -1;
    }
    size_t cap = 0, used = 0, n = 0;
    for (uint32_t i = 0; i < msg->record_count; i++)
        if (job_running(&msg->job_array[i]))
            n++;
    struct ctl_job_spec *jobs = calloc(n ? n : 1, sizeof(*jobs));
    uint32_t *index = NULL;
    n = 0;
    for (uint32_t i = 0; jobs && i < msg->record_count; i++) {
        const slurm_job_info_t *j = &msg->job_array[i];
        bool bb = j->burst_buffer && *j->burst_buffer;
        if (!job_running(j) || !j->nodes || !*j->nodes || (conf->jobs == QOS_JOBS_BB && !bb))
            continue;
        struct hostlist hl = { 0 };
        char why[256];
        if (hostlist_expand(j->nodes, &hl, why, sizeof(why)) < 0) {
            log_warn("job %u: node list %s: %s; left out", j->job_id, j->nodes, why);
            continue;
        }
        if (used + hl.count > cap) {
            size_t grown_cap = (used + hl.count) * 2;
            uint32_t *grown = realloc(index, grown_cap * sizeof(*grown));
            if (!grown) {
                hostlist_free(&hl);
                break;
            }
            index = grown;
            cap = grown_cap;
        }
        struct ctl_job_spec *s = &jobs[n];
        *s = (struct ctl_job_spec){ .id = j->job_id, .uid = j->user_id };
        s->weight = conf->weight == QOS_WEIGHT_PRIORITY ? (double)j->priority
                                                        : (double)(j->num_nodes ? j->num_nodes : hl.count);
        size_t first = used;
        for (size_t k = 0; k < hl.count; k++) {
            int idx = world_node(w, hl.names[k]);
            if (idx >= 0)
                index[used++] = (uint32_t)idx;
        }
        hostlist_free(&hl);
        s->nnodes = (uint32_t)(used - first);
        s->nodes = (const uint32_t *)(uintptr_t)first;   /* an offset until index stops moving */
        if (bb && qos_directive_find(conf->directive, j->burst_buffer, &s->asked, why,
                                     sizeof(why)) < 0)
            log_warn("job %u: its qos directive: %s; taken as asking nothing", j->job_id, why);
        for (int c = 0; c < QOS_NCLASSES; c++)
            if (conf->max.v[c] != QOS_NOT_GIVEN && s->asked.v[c] > conf->max.v[c])
                s->asked.v[c] = conf->max.v[c];
        n++;
    }
    for (size_t i = 0; i < n; i++)
        jobs[i].nodes = index + (uintptr_t)jobs[i].nodes;
    w->jobs_update = msg->last_update;
    slurm_free_job_info_msg(msg);
    if (!jobs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    free(w->jobs);
    free(w->node_index);
    w->jobs = jobs;
    w->njobs = n;
    w->node_index = index;
    return 1;
}

int world_refresh(struct world *w, const struct qos_conf *conf, char *err, size_t errlen)
{
    int nodes = load_nodes(w, conf, err, errlen);
    if (nodes < 0)
        return -1;
    /* New nodes: the jobs' node indices must be made again. */
    int jobs = load_jobs(w, conf, nodes > 0, err, errlen);
    if (jobs < 0)
        return -1;
    return nodes > 0 || jobs > 0;
}

void world_free(struct world *w)
{
    free(w->nodes);
    free(w->jobs);
    free(w->node_index);
    memset(w, 0, sizeof(*w));
}
