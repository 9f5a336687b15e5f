/* state: what adafs-qosd keeps across a restart, in <state dir>/state
 * (0600, replaced atomically each cycle): the cycle count, the changes
 * made at run time with adafs-qos set (policy, capacity, period, each
 * job's limits), and the last limits of every job on every node, which a
 * restarted qosd sends again until it has measured the jobs anew. */
#ifndef ADAFS_QOS_STATE_H
#define ADAFS_QOS_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "qos_limits.h"

#define STATE_MAGIC 0x44514441u   /* "ADQD" read as little-endian */
#define STATE_VERSION 2

struct state_job {               /* adafs-qos set job */
    uint32_t job_id;
    bool seen;                   /* seen running: dropped once it is not */
    struct qos_limits limits;
};

struct state_limit {             /* a job's limits on a node */
    uint32_t job_id;
    char node[65];
    struct qos_limits limits;
};

struct state {
    uint64_t cycle;
    int policy;                  /* -1: the file's */
    uint32_t period_ms;          /* 0: the file's */
    bool capacity_set;
    struct qos_limits capacity;  /* the classes set override the file's */
    struct state_job *jobs;
    uint32_t njobs;
    struct state_limit *limits;
    uint32_t nlimits;
};

void state_init(struct state *s);
void state_free(struct state *s);
/* 0, 1 when there is no state yet, or -1 with err (the file is kept for
 * an admin to look at; qosd starts afresh). */
int state_load(const char *path, struct state *s, char *err, size_t errlen);
int state_save(const char *path, const struct state *s, char *err, size_t errlen);

/* The job's limits set with adafs-qos set, or NULL. */
const struct qos_limits *state_job(const struct state *s, uint32_t job_id);
/* Sets (or with an empty set, clears) a job's limits. -ENOMEM. */
int state_set_job(struct state *s, uint32_t job_id, const struct qos_limits *l);
/* Marks the jobs running (ids[0..n)) seen and drops the limits of jobs
 * seen before that no longer run; returns how many were dropped. */
unsigned state_prune_jobs(struct state *s, const uint32_t *running, size_t n);

#endif
