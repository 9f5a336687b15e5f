/* easy: an EASY backfilling simulation of a trace (Tsafrir's EASY++ setup).
 *
 * Jobs start in submit order while they fit; when the first queued job does
 * not fit it gets a reservation at the time enough processors are expected
 * to be free, and later jobs may jump ahead if they fit now and are expected
 * to end before it (or use only processors it does not need). "Expected"
 * comes from an estimate per job - the request, or a prediction - while jobs
 * always run their real time and are killed at their request. A running job
 * that outlives its estimate is expected to run until its request. */
#ifndef WALLTIME_EASY_H
#define WALLTIME_EASY_H

#include <stddef.h>

#include "walltime.h"

struct easy_result {
    size_t jobs;
    double avg_wait_s;
    double avg_bounded_slowdown;     /* max(1, (wait + run) / max(run, 10 s)) */
};

/* estimate[i] is used for planning job i (NAN: the job is left out, as are
 * jobs without request or run time). machine_procs <= 0 means the largest
 * job's size. Returns 0 or -ENOMEM. */
int easy_simulate(const struct walltime_trace *trace, const double *estimate,
                  long machine_procs, struct easy_result *out);

#endif
