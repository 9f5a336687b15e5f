/* bb_restart: what the saved instances become after a slurmctld restart,
 * without Slurm.
 *
 * The plugin's table is saved after every step; slurmctld saves its job
 * table on its own schedule. After a restart (kill -9 included) the two may
 * disagree, and Slurm itself forgets that we held a job: it zeroes
 * prolog_running and calls bb_p_job_begin() again for every job still
 * CONFIGURING (read_config.c, _sync_nodes_to_jobs), then launches any
 * CONFIGURING job whose prolog_running is 0 at its next periodic check.
 * So an instance loaded before its release is "unclaimed" until slurmctld
 * says where its job is: bb_p_job_begin() of the same allocation holds the
 * job again and the stage-in goes on (a stage in flight is polled again,
 * or started again if it was never acknowledged; bb_restart_begin_again);
 * otherwise the driver's first look, which runs once slurmctld has
 * finished loading (it waits for the job lock that loading holds),
 * settles the rest (bb_restart_settle).
 *
 * What slurmctld knows of a job the shim tells in a struct bb_restart_job,
 * and what must be done to its Slurm job it does through hooks; every
 * decision is here, driven by unit tests (test_bb_restart.c). */
#ifndef ADAFS_BB_RESTART_H
#define ADAFS_BB_RESTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"

/* Reads the saved table from <dir>/adafs_state (or adafs 0.x's
 * adafs_state.json, once, kept as .read afterwards) into d, marks the
 * instances saved before their release unclaimed, adopts persistent
 * instances and opens the journal (d->store). *state_file: the table's
 * path (malloc'd). A table that cannot be read at all is moved aside and
 * the plugin starts without it. How many records were loaded, or -1 with
 * err (no journal: the plugin cannot start). d->lock held. */
long bb_restart_load(struct bb_driver *d, const char *dir, char **state_file, char *err,
                     size_t errlen);

/* What slurmctld says of a record's job. */
struct bb_restart_job {
    void *job;              /* the shim's (job_record_t), passed to the hooks; NULL: gone */
    bool pending;
    bool configuring;       /* CONFIGURING (with details) */
    bool running;           /* running or suspended, and not configuring */
    bool finished;
};

struct bb_restart_hooks {
    /* The job's instance made afresh from Slurm's record (bb_begin.h), or
     * NULL with err. */
    struct bb_job *(*instance)(void *job, char *err, size_t errlen);
    /* Holds the job in CONFIGURING until the plugin releases it, showing
     * phase. */
    void (*hold)(void *job, enum bb_phase phase);
    /* Sets the job's environment for its file system again. */
    void (*set_env)(void *job, const struct bb_job *j);
    /* Notes in the job (its system comment) why its results are lost. */
    void (*note)(void *job, const char *text);
    /* A line about the job for slurmctld's log (LOG_SINK_*), going on
     * from the job's name (": what happened"), as bb_begin_job's say. */
    void (*say)(void *job, int level, const char *line);
    /* Does the job hold the nodes j was deployed on, in the same order?
     * (Asked only where it decides: it walks slurmctld's node table.) */
    bool (*same_nodes)(void *job, const struct bb_job *j);
    /* What slurmctld says of j's job (bb_restart_settle). */
    void (*state)(void *arg, const struct bb_job *j, struct bb_restart_job *out);
    void *arg;
};

/* The driver's first look after a restart: settles every saved instance
 * bb_p_job_begin() did not claim. d->lock and slurmctld's job lock held. */
void bb_restart_settle(struct bb_driver *d, const struct bb_restart_hooks *hooks);

/* bb_p_job_begin() for a job that already has a record: 1 when that
 * settled it (held again, or let go on), 0 when a new instance is to be
 * made, -1 (the reason in err) when the job cannot begin now. d->lock
 * held. */
int bb_restart_begin_again(struct bb_driver *d, struct bb_job *old,
                           const struct bb_restart_job *s, const struct bb_restart_hooks *hooks,
                           char *err, size_t errlen);

/* Marks an instance of an earlier allocation of its job: torn down unless
 * it is staging out (its results are not lost), never acting on the job
 * again. d->lock held. */
void bb_restart_supersede(struct bb_driver *d, struct bb_job *old, const char *why);

#endif
