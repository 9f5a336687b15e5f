/* predict: the walltime model inside the plugin.
 *
 * Loaded from AdafsWalltimeModel at start. Every submitted job gets a median
 * and a conservative run-time estimate (walltime-model/walltime.h), kept in
 * a table so `scontrol show bbstat JOBID` can show them; the model follows
 * each job's life (submitted, started, finished or cancelled) and its
 * calibration learns from the estimates it gave. It is retrained and saved
 * from the plugin's walltime thread, never from the submit path; the saved
 * file carries the calibration and the jobs in flight across restarts.
 * Thread-safe: predictions and events take the model's lock (a few
 * microseconds); training works on a second copy of the model that replays
 * the same events, under a lock of its own, and the trained copy is swapped
 * in under the model's lock, so a submit never waits for a training. */
#ifndef ADAFS_PREDICT_H
#define ADAFS_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "walltime.h"

/* The calibration's set-point as a share of AdafsWalltimeMissRate. */
#define PREDICT_AIM 0.8

/* Loads the model file (missing file: a new, untrained model that is saved
 * there later) and aims its calibration at PREDICT_AIM x miss_rate, the
 * share of jobs that may run longer than their conservative estimate.
 * Returns 0, or -1 with the reason in err. */
int predict_open(const char *path, double miss_rate, char *err, size_t errlen);
void predict_close(void);
bool predict_enabled(void);
/* The end time of the newest finished job the model learned from (0: none),
 * so that a restarted plugin does not teach it the same jobs again. */
time_t predict_last_end(void);

/* Predicts and remembers the estimates for job->job_id; the model records
 * the job as submitted. 0 or -errno. */
int predict_job(const struct walltime_job *job, struct walltime_prediction *out,
                char *err, size_t errlen);

/* The remembered estimates of a job, if any. */
bool predict_lookup(uint32_t job_id, struct walltime_prediction *out);

/* A job has started (submit_time + wait_time), finished (the model learns
 * from it) or ended without running. */
void predict_started(const struct walltime_job *job);
void predict_observe(const struct walltime_job *job);
void predict_cancelled(const struct walltime_job *job);

/* Retrains when enough new jobs were observed (off the lock predictions
 * take), saves the model file and swaps the trained model in (force: save
 * now even without retraining, as at shutdown). For one thread. */
void predict_maintain(bool force);

/* How many trained models were swapped in (tests, bbstat). */
long predict_swaps(void);

#endif
