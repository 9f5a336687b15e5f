/* bb_submit: the submit-time checks of a job's burst buffer request
 * (bb_p_job_validate), without Slurm.
 *
 * Refuses a malformed request with a message naming the token, a user or
 * group adafs never runs as, a user burst_buffer.conf does not allow,
 * limits above the site's (bandwidth, metadata rate, I/O quality of
 * service, capacity per node, what the partition's nodes can hold by
 * sysmap), and persistent lines the user may not use (persist_job.h);
 * gives the request's canonical form, which the job keeps. What only
 * slurmctld knows (a user's name and groups, a partition's nodes) the shim
 * answers through hooks, asked only when a check needs them. Unit tests
 * drive it with made-up users and partitions (test_bb_submit.c). */
#ifndef ADAFS_BB_SUBMIT_H
#define ADAFS_BB_SUBMIT_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"

/* Why a request is refused: Slurm's ESLURM_INVALID_BURST_BUFFER_REQUEST,
 * ESLURM_BURST_BUFFER_PERMISSION, ESLURM_BURST_BUFFER_LIMIT. */
enum bb_submit_verdict { BB_SUBMIT_OK, BB_SUBMIT_INVALID, BB_SUBMIT_PERMISSION, BB_SUBMIT_LIMIT };

struct bb_submit_hooks {
    /* uid's groups as slurmd gives them to a job started with gid
     * (malloc'd into *groups); how many, or < 0 when unknown. */
    int (*groups)(void *arg, uint32_t uid, uint32_t gid, uint32_t **groups);
    /* uid's name (malloc'd), or NULL. */
    char *(*user_name)(void *arg, uint32_t uid);
    /* The nodes (a hostlist expression) and name of partition (NULL: the
     * default one); false when there is no such partition. */
    bool (*partition)(void *arg, const char *partition, const char **nodes, const char **name);
    void *arg;
};

struct bb_submit_job {
    const char *script;          /* the batch script, or NULL */
    const char *burst_buffer;    /* --bb, or NULL */
    uint32_t uid, gid;
    uint32_t nodes;              /* nodes asked for (at least 1) */
    const char *partition;       /* NULL: the default */
};

/* Checks the job's request against d's configuration and persistent
 * instances (taking d->lock). BB_SUBMIT_OK with *canonical (malloc'd)
 * the request to keep, or NULL when the job asks for no burst buffer;
 * otherwise *err_msg (malloc'd) says why. */
enum bb_submit_verdict bb_submit_check(struct bb_driver *d, const struct bb_submit_job *job,
                                       const struct bb_submit_hooks *hooks, char **canonical,
                                       char **err_msg);

#endif
