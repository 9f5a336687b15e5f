/* bb_status: what Slurm's commands show of adafs: the text of `scontrol
 * show bbstat [JOBID]`, and the pool and buffers of `scontrol show burst`
 * (the shim packs them in the layout scontrol unpacks). */
#ifndef ADAFS_BB_STATUS_H
#define ADAFS_BB_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "bb_config.h"
#include "bb_job.h"
#include "driver.h"

/* One block per instance (only job_id's when it is not 0). malloc'd. */
char *bb_status_text(const struct bb_job *jobs, uint32_t job_id);

/* The whole of `scontrol show bbstat [arg]` (arg: a job id, or NULL),
 * malloc'd: the instances (one job's, with its walltime estimates), the
 * persistent instances, qosd's view, and how long the plugin held
 * slurmctld's job lock (job_lock) and d's. With Flags=PrivateData only
 * how many instances are active: Slurm does not say who asks. plugin
 * names the plugin in messages; state_file is for administrators. Takes
 * d->lock. */
char *bb_status_report(struct bb_driver *d, const char *arg, const char *plugin,
                       const char *state_file, const struct bb_lock_stats *job_lock);

/* The pool of `scontrol show burst`: adafs has one, implicit. */
struct bb_pool_view {
    uint64_t total;           /* AdafsTotalCapacity, or nodes x AdafsNodeCapacity */
    uint64_t used;            /* what every active instance's servers reserve */
    uint32_t count;           /* the buffers shown (bb_status_shown) */
};
/* An instance is shown to uid when it reserves capacity (servers of a job
 * or of a persistent instance; a job that mounts one reserves nothing of
 * its own) and see_all (no PrivateData, or an operator) or it is uid's. */
bool bb_status_shown(const struct bb_job *j, bool see_all, uint32_t uid);
void bb_status_pool(const struct bb_job *jobs, const struct bb_config *cfg, size_t node_count,
                    bool see_all, uint32_t uid, struct bb_pool_view *out);

/* One buffer of `scontrol show burst`. A persistent instance shows as
 * Name=NAME (scontrol prints a buffer without a job id so), with what its
 * servers hold and how they share themselves (default: each agent's
 * --fair-policy) in its pool. */
struct bb_buffer_view {
    uint32_t job_id;          /* 0 for a persistent instance */
    bool persistent;          /* a persistent instance (array_task_id 0, else NO_VAL) */
    const char *name;         /* NULL, or the persistent instance's */
    char pool[96];            /* "" or the persistent instance's */
    uint64_t size;
    enum bb_phase phase;
    uint32_t uid;
    time_t t_begin;
};
void bb_status_buffer(const struct bb_job *j, struct bb_buffer_view *out);

#endif
