/* easy: an EASY backfilling simulation of a trace (Tsafrir's EASY++ setup).
 *
 * Jobs start in submit order while they fit; when the first queued job does
 * not fit it gets a reservation at the time enough nodes are expected to be
 * free, and later jobs may jump ahead if they fit now and are expected to
 * end before it (or use only nodes it does not need). "Expected" comes from
 * an estimate per job - the request, or a prediction - while jobs always
 * run their real time and are killed at their request. A running job that
 * outlives its estimate is expected to run until its request.
 *
 * Nodes have identities: a job takes the lowest-numbered free nodes. After
 * every event the scheduler plans the first EASY_PLAN_JOBS queued jobs in
 * queue order, as Slurm's backfill plans its first bf_max_job_test jobs:
 * each gets the lowest-numbered nodes among those expected free earliest,
 * and those nodes are then expected busy for its estimate. A job's node
 * allocation prediction time (T_NAP, ADA-FS) is how long before its start
 * the planned node list was already, without a break, the list it got:
 * that is how far ahead a file system could be deployed and filled on them. */
#ifndef WALLTIME_EASY_H
#define WALLTIME_EASY_H

#include <stddef.h>

#include "walltime.h"

/* Queued jobs planned after each event. */
#define EASY_PLAN_JOBS 100

/* Jobs by how far ahead their nodes were known. */
struct easy_nap {
    size_t at_once;          /* started when submitted */
    size_t le_1s;            /* waited, nodes known <= 1 s ahead (or never) */
    size_t le_10min;         /* 1 s - 10 min ahead */
    size_t gt_10min;         /* more than 10 minutes ahead */
};

struct easy_result {
    size_t jobs;
    double avg_wait_s;
    double avg_bounded_slowdown;     /* max(1, (wait + run) / max(run, 10 s)) */
    struct easy_nap nap;
};

/* estimate[i] is used for planning job i (NAN: the job is left out, as are
 * jobs without request or run time). The machine has machine_procs
 * processors (<= 0: the largest job's size) in nodes of cores_per_node
 * (< 1: 1); a job takes ceil(procs / cores_per_node) whole nodes. If
 * nap_s is not NULL it receives each job's T_NAP in seconds (NAN if left
 * out, 0 if its nodes were not known ahead). Returns 0 or -ENOMEM. */
int easy_simulate(const struct walltime_trace *trace, const double *estimate,
                  long machine_procs, long cores_per_node, struct easy_result *out,
                  double *nap_s);

#endif
