/* world: what runs on the cluster, as adafs-qosd sees it: the nodes (and
 * where each one's agent listens) and the running jobs under QoS (their
 * owner, nodes, weight and what their directive asks), from slurmctld
 * through libslurm. Asks only for what changed since the last time. */
#ifndef ADAFS_QOS_WORLD_H
#define ADAFS_QOS_WORLD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ctl.h"
#include "qos_agents.h"
#include "qos_conf.h"


struct world {
    struct agent_addr *nodes;     /* sorted by name; indices are ctl's */
    size_t nnodes;
    struct ctl_job_spec *jobs;
    size_t njobs;
    uint32_t *node_index;        /* storage of the jobs' node lists */
    time_t jobs_update, nodes_update, nodes_loaded;
};

/* Refreshes from slurmctld: 1 when the jobs or nodes changed, 0 when not,
 * -1 with err (the previous view stays). A job's asked limits are its
 * directive's, capped at AdafsQosMax. */
int world_refresh(struct world *w, const struct qos_conf *conf, char *err, size_t errlen);

/* The index of node name, or -1. */
int world_node(const struct world *w, const char *name);

void world_free(struct world *w);

#endif
