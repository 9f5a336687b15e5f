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

/* What the conservative estimate draws on, as of the job's submit time:
 * the user's finished runs with the same request and size, and of any
 * request, as run/request ratios (capped at 1) with their recency weights
 * and submit times; and the jobs of the same request and size that the
 * history shows still in flight then (finished later; running if started
 * before: elapsed time / request). */
struct hist_view {
    int n;                              /* same request and size */
    float ratio[HIST_LEN], weight[HIST_LEN];
    int64_t submit[HIST_LEN];
    int un;                             /* any request */
    float uratio[HIST_LEN], uweight[HIST_LEN];
    int64_t usubmit[HIST_LEN];
    int inflight;                       /* submitted, not finished by then */
    int running;                        /* of which started */
    float elapsed[HIST_LEN];
};

/* Fills f[NFEAT] for job from u (may be NULL), using only entries whose end
 * time is <= job->submit_time, and *view if not NULL. Returns
 * features_baseline(f). */
float features_compute(const struct user_hist *u, const struct walltime_job *job,
                       float f[NFEAT], struct hist_view *view);

/* Number of episodes among n submit times (sorted in place): submissions
 * closer than gap seconds belong to one, sent together before any could
 * tell how the others ran. */
int episodes(int64_t *submit, int n, int64_t gap);

/* History-only estimate of the run/request ratio (median of the latest runs
 * of the most similar jobs), <= 1: the trees start from it and correct it. */
float features_baseline(const float f[NFEAT]);

/* Names of the features, for model files and reports. */
extern const char *const feature_names[NFEAT];

/* The real run time hit the limit: within 1% (or a minute) of the request. */
int hit_limit(int64_t run, int64_t req);

#endif
