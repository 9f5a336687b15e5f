/* features: what the model may know about a job when it is submitted.
 *
 * The job's own request, size, memory, partition and submit time, plus
 * summaries of the same user's jobs that had finished by then: run times of
 * jobs with the same request and size, run/request ratios, how often they
 * ran into the limit. Run times are expressed relative to this job's request
 * (ratios), the scale the trees learn on. Unknown values are -1. */
#ifndef WALLTIME_FEATURES_H
#define WALLTIME_FEATURES_H

#include "history.h"
#include "walltime.h"

enum {
    F_LOG_REQ, F_LOG_PROCS, F_LOG_MEM, F_HOUR, F_WDAY, F_PARTITION,
    F_NHIST, F_SAME_N, F_SAME_LAST, F_SAME_MED3, F_SAME_MED5, F_SAME_MIN5,
    F_SAME_MAX5, F_SAME_LIMIT, F_REQ_N, F_REQ_MED5, F_EXE_MED3, F_LAST1,
    F_LAST2, F_RATIO_MED5, F_RATIO_MAX5, F_RATIO_MEAN, F_LIMIT10, F_FAIL5,
    F_SINCE_END, F_REQ_REL, F_SAME_WMED, F_REQ_WMED, F_RATIO_WQ75,
    F_SAME_AGE,
    NFEAT
};

/* Per-job decay of the recency weights in the weighted medians. */
#define RECENCY_DECAY 0.92f
/* log2(1 + seconds) since the newest finished job with the same request and
 * size was submitted, beyond which the baseline treats the request as half
 * new: one day. */
#define SAME_STALE_LOG2 16.4f
/* Ratio guessed for a user without history. */
#define BASELINE_NEW_USER 0.3f

/* The user's finished runs with the same request and size, as run/request
 * ratios (capped at 1) with their recency weights, sorted by ratio: the
 * distribution the conservative estimate is chosen from. */
struct same_runs {
    int n;
    float ratio[HIST_LEN], weight[HIST_LEN];
};

/* Fills f[NFEAT] for job from u (may be NULL), using only entries whose end
 * time is <= job->submit_time, and *same if not NULL. Returns
 * features_baseline(f). */
float features_compute(const struct user_hist *u, const struct walltime_job *job,
                       float f[NFEAT], struct same_runs *same);

/* History-only estimate of the run/request ratio (median of the latest runs
 * of the most similar jobs), <= 1: the trees start from it and correct it. */
float features_baseline(const float f[NFEAT]);

/* Names of the features, for model files and reports. */
extern const char *const feature_names[NFEAT];

/* The real run time hit the limit: within 1% (or a minute) of the request. */
int hit_limit(int64_t run, int64_t req);

#endif
