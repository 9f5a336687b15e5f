/* predict: the walltime model inside the plugin.
 *
 * Loaded from AdafsWalltimeModel at start. Every submitted job gets a median
 * and a conservative run-time estimate (walltime-model/walltime.h), kept in
 * a table so `scontrol show bbstat JOBID` can show them; finished jobs teach
 * the model, which is retrained and saved from the plugin's walltime thread,
 * never from the submit path. Thread-safe: predictions share a read lock;
 * training (seconds) works on a second copy of the model under a lock of
 * its own, and the trained copy is swapped in under the write lock, so a
 * submit never waits for a training. */
#ifndef ADAFS_PREDICT_H
#define ADAFS_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walltime.h"

/* Loads the model file (missing file: a new, untrained model that is saved
 * there later). Returns 0, or -1 with the reason in err. */
int predict_open(const char *path, char *err, size_t errlen);
void predict_close(void);
bool predict_enabled(void);

/* Predicts and remembers the estimates for job->job_id. 0 or -errno. */
int predict_job(const struct walltime_job *job, struct walltime_prediction *out,
                char *err, size_t errlen);

/* The remembered estimates of a job, if any. */
bool predict_lookup(uint32_t job_id, struct walltime_prediction *out);

/* A job has finished: the model learns from it. */
void predict_observe(const struct walltime_job *job);

/* Retrains when enough new jobs were observed (off the lock predictions
 * take), saves the model file and swaps the trained model in (force: save
 * now even without retraining, as at shutdown). For one thread. */
void predict_maintain(bool force);

/* How many trained models were swapped in (tests, bbstat). */
long predict_swaps(void);

#endif
