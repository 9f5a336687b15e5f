/* bb_begin: a job's instance as bb_p_job_begin() makes it, without Slurm.
 *
 * The shim copies what it needs of Slurm's job record and node table into
 * a struct bb_begin_job (job_record_t and node_record_t stay in the shim);
 * from it and the configuration this module makes the job's record (its
 * request parsed, %-symbols expanded, nodes, storage, capacity, secrets,
 * mount) and the environment its processes get (where the file system is
 * mounted, persistent instances, LD_PRELOAD, I/O quality of service), as
 * name=value pairs the shim sets in the job. Unit tests drive it with
 * made-up jobs (test_bb_begin.c). */
#ifndef ADAFS_BB_BEGIN_H
#define ADAFS_BB_BEGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bb_config.h"
#include "bb_job.h"
#include "driver.h"
#include "persist_job.h"

/* One node of the job's allocation, in Slurm's node table order. */
struct bb_begin_node {
    const char *name;         /* Slurm's node name */
    const char *host;         /* where its slurmd (and agent) listen (comm_name) */
    int slurmd_port;
    unsigned cpus;            /* the job's CPUs there (its stage threads follow); 0: unknown */
};

/* What the shim tells of the Slurm job. */
struct bb_begin_job {
    uint32_t job_id, uid, gid;
    const char *user;               /* NULL: unknown */
    const char *name;               /* the job's name (%x) */
    const char *burst_buffer;       /* its canonical request (bb_p_job_validate) */
    uint32_t array_job_id, array_task_id;   /* 0 and 0 unless an array task */
    const struct bb_begin_node *nodes;
    size_t nnodes;
    /* A line about the job for slurmctld's log (level: LOG_SINK_*); the
     * shim puts the plugin's and the job's names before it, and the line
     * goes on from them (": what happened", or " verb ..."). */
    void (*say)(void *arg, int level, const char *line);
    void *say_arg;
};

/* Where an agent listens: beside its node's slurmd (AdafsAgentPortOffset)
 * or on AdafsAgentPort. */
int bb_begin_agent_port(const struct bb_config *cfg, int slurmd_port);

/* The job's new instance (phase PHASE_DEPLOYING), or NULL with err, and
 * *users_fault set when only the user can fix it (the request, or a
 * capacity the job's nodes cannot hold). */
struct bb_job *bb_begin_instance(const struct bb_begin_job *job, const struct bb_config *cfg,
                                 char *err, size_t errlen, bool *users_fault);

/* What slurmctld knows for a job's persistent lines. */
struct bb_begin_persist_hooks {
    /* The running or pending jobs, other than self, that mount instance
     * name (bb_begin_request_mounts): all counted in *n, the first 8 in
     * ids (persist_check_destroy names no more). */
    void (*users_of)(void *arg, const char *name, uint32_t self, uint32_t ids[8], size_t *n);
    /* A group's id; -1 when there is no such group. */
    int (*group_id)(void *arg, const char *group, uint32_t *gid);
    /* AdafsPersistentNodes as slurmctld knows them (malloc'd, *n of
     * them), or NULL when out of memory. */
    struct persist_node *(*nodes)(void *arg, size_t *n);
    void *arg;
};

/* At job begin, the job's persistent lines that act at once: a destroy
 * (refused while other jobs use the instance) and a create (the instance
 * and the record of its servers, linked into d's table and saved). The
 * job itself then waits in the driver until they are settled. 0, or -1
 * with the reason in err (the job is held). d->lock held. */
int bb_begin_persistent(struct bb_driver *d, const struct bb_begin_job *job, struct bb_job *j,
                        const struct bb_begin_persist_hooks *hooks, char *err, size_t errlen);

/* Does a job's request (its burst_buffer) mount persistent instance name? */
bool bb_begin_request_mounts(const struct bb_config *cfg, const char *burst_buffer,
                             const char *name);

/* True when the request asks for I/O quality of service only (no file
 * system). */
bool bb_begin_qos_only(const struct bb_config *cfg, const char *burst_buffer);

/* Environment variables for the job, in the order they are to be set (a
 * later one of the same name replaces an earlier). */
struct bb_env {
    char **names, **values;
    size_t n, cap;
};
void bb_env_free(struct bb_env *env);

/* What the job's processes need to find their file system (nothing for a
 * job that only destroys a persistent instance). -1 when out of memory. */
int bb_begin_fs_env(const struct bb_begin_job *job, const struct bb_job *j,
                    const struct bb_config *cfg, struct bb_env *env);
/* The job's processes under I/O quality of service (qos_conf.h): the
 * interposer's settings, and LD_PRELOAD when preload (a job without a file
 * system). -1 when out of memory. */
int bb_begin_qos_env(const struct bb_config *cfg, bool preload, struct bb_env *env);

#endif
