/* walltime: predicts how long a batch job will really run, at submit time.
 *
 * The model starts from the user's own finished jobs - the recency-weighted
 * median run of the jobs with the same request and size - and a small
 * gradient-boosted tree ensemble, trained on every finished job, corrects it
 * from history features (run/request ratios, how often jobs hit the limit,
 * request, size, time of day...). Two estimates per job:
 *   - median:       the run time the job most likely has (minimises MAE);
 *   - conservative: an upper estimate the job rarely exceeds, chosen per
 *                   job from the user's runs of the same request and size,
 *                   of any request, and the request, at a price per miss
 *                   calibrated online so that params.target_miss of the
 *                   jobs exceed it on any job stream.
 * Both are never above the requested time.
 *
 * Only what is known when the job is submitted is used: its request, user,
 * group, account, partition, size, memory, name, submit time, the jobs of
 * the same user that had *finished* by then (their end time <= this submit
 * time), and the same user's identical jobs in flight then (how many, and
 * how long those that had started had been running). Features, margins and
 * the calibration are always taken "as of" the job's submit time, so a job
 * observed too early never leaks into a prediction through its user's
 * history; the trees learn from every job observed before the last
 * walltime_train() (in the replay: only jobs finished by then).
 *
 * Thread safety (for the Slurm plugin): a struct walltime_model has no lock
 * of its own. walltime_predict() and walltime_model_save() only read it, so
 * any number of threads may call them at once; walltime_submit(), the
 * walltime_observe_*() calls, walltime_train() and walltime_model_free()
 * change it and need the caller's exclusive lock. A pthread_rwlock_t fits:
 * write lock around submit and observe (a few us each) and train. Training on
 * 30,000 jobs takes ~2.5 s here, too long under slurmctld's job lock: train a
 * fresh model (walltime_model_load() of a saved copy, or `adafs-walltime
 * train`) in a background thread or offline and swap the pointer under the
 * write lock. walltime_observe_finished() retrains by itself only when
 * params.auto_retrain is set. The model holds no global state, so separate
 * models are independent.
 * The library never prints; errors come back as negative errno plus a message
 * in the caller's buffer. */
#ifndef ADAFS_WALLTIME_H
#define ADAFS_WALLTIME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Everything declared here is libadafs_walltime's API and exported; the
 * library is built with hidden visibility, so nothing else is
 * (walltime-model/libadafs_walltime.sym). */
#pragma GCC visibility push(default)

/* One job. Fields not known are -1 (numbers) or 0 (string keys). */
struct walltime_job {
    int64_t job_id;
    int64_t submit_time;   /* seconds, any fixed epoch */
    int64_t req_time;      /* requested wall time, seconds, > 0 */
    int64_t run_time;      /* real run time (finished jobs only), else -1 */
    int64_t wait_time;     /* queue wait; submit + wait + run = end time, which
                              decides from when on a finished job is history */
    int64_t uid;
    int64_t gid;
    int64_t procs;         /* requested processors (CPUs) */
    int64_t nodes;         /* requested nodes, -1 if unknown */
    int64_t req_mem_kb;    /* requested memory in KiB (total), -1 if unknown */
    uint32_t account;      /* walltime_key() of the account (SWF: queue) */
    uint32_t partition;    /* walltime_key() of the partition name (SWF: id) */
    uint32_t exe;          /* walltime_key() of the job name / executable */
    int status;            /* finished jobs: 1 completed, 0 failed, 5 cancelled */
};

/* Stable 32-bit key of a name (FNV-1a; 0 for NULL or ""), for the string
 * fields of struct walltime_job. */
uint32_t walltime_key(const char *name);
/* Key of a numeric id as given in SWF traces (-1 -> 0). */
uint32_t walltime_key_id(int64_t id);
/* A job with every field unknown (-1 / 0). */
void walltime_job_init(struct walltime_job *job);

/* Times and durations (seconds) and counts a job may carry: far beyond any
 * machine, small enough that the model's sums of times (end = submit + wait
 * + run) cannot overflow. */
#define WALLTIME_MAX_SECONDS (INT64_C(1) << 40)     /* 34,800 years */
#define WALLTIME_MAX_COUNT (INT64_C(1) << 40)

/* 0 if every number of job is unknown (-1) or in range: times, durations,
 * processors, nodes and ids in [0, WALLTIME_MAX_*], a request > 0, memory
 * >= 0, status -1 to 5 (SWF's codes). Else -EINVAL and a message naming the
 * field and its value. Readers and the model check jobs with it. */
int walltime_job_check(const struct walltime_job *job, char *err, size_t errlen);

/* Which history the conservative estimate came from, its calibration
 * group: the user's jobs of this request and size, the user's jobs of any
 * request, or neither (the site level: the request itself, or the median
 * of the model trained on every job). */
enum walltime_group {       /* from the coarsest to the most specific */
    WALLTIME_GROUP_SITE, WALLTIME_GROUP_USER, WALLTIME_GROUP_REQUEST
};
/* "site", "user" or "user+request". */
const char *walltime_group_name(enum walltime_group group);

struct walltime_prediction {
    double median_s;        /* most likely run time, seconds, <= req_time */
    double conservative_s;  /* rarely-exceeded run time, seconds, <= req_time */
    enum walltime_group group;  /* where the conservative estimate came from */
    double miss_probability;    /* the model's own chance that the job runs
                                   longer than conservative_s */
};

struct walltime_params {
    int trees;              /* boosting rounds per ensemble */
    int depth;              /* tree depth */
    double learning_rate;
    int min_leaf;           /* minimum jobs per leaf */
    double quantile;        /* quantile of the conservative ensemble */
    double target_miss;     /* conservative: share of jobs that may run longer
                               than it, the online calibration's set-point */
    double calib_eta;       /* conservative: step of the calibration per job */
    double inflight_k0;     /* conservative: jobs of the same kind in flight
                               that double the price of a miss */
    int episode_gap_s;      /* submissions closer than this are one episode */
    int max_train;          /* finished jobs kept for retraining */
    int retrain_every;      /* auto-retrain after this many observations */
    int auto_retrain;       /* observe_finished() retrains by itself */
};

struct walltime_model;

/* The defaults the measurements in doc/bench/walltime.md were made with. */
void walltime_params_default(struct walltime_params *params);

struct walltime_model *walltime_model_new(const struct walltime_params *params);
void walltime_model_free(struct walltime_model *model);

/* Both estimates for a job about to be submitted. Reads the model only:
 * a what-if that the model will not learn from (see walltime_submit).
 * Returns 0, or -EINVAL (message in err) if the job has no positive request. */
int walltime_predict(const struct walltime_model *model,
                     const struct walltime_job *job,
                     struct walltime_prediction *out, char *err, size_t errlen);

/* The life of a job, as the scheduler sees it. walltime_submit() predicts
 * like walltime_predict() and records the job (by uid and job_id) with the
 * estimates it got: the calibration learns from what it really told each
 * job, and the job counts as in flight for the next submissions of the same
 * kind. walltime_observe_started() (submit_time + wait_time = the start)
 * lets later predictions see how long it has been running;
 * walltime_observe_finished() learns from it; walltime_observe_cancelled()
 * forgets a job that ended without running. A finished job that was never
 * submitted here (or whose record was dropped) is learned from with the
 * estimate recomputed as of its submit time. All return 0 or -EINVAL /
 * -ENOMEM with a message; started/cancelled of an unknown job do nothing. */
int walltime_submit(struct walltime_model *model, const struct walltime_job *job,
                    struct walltime_prediction *out, char *err, size_t errlen);
int walltime_observe_started(struct walltime_model *model,
                             const struct walltime_job *job, char *err, size_t errlen);
int walltime_observe_finished(struct walltime_model *model,
                              const struct walltime_job *job,
                              char *err, size_t errlen);
int walltime_observe_cancelled(struct walltime_model *model,
                               const struct walltime_job *job);

/* Sets the calibration's set-point (params.target_miss, 0 < miss < 1) of a
 * model, e.g. one loaded from a file; the calibration moves to it from
 * where it is. */
void walltime_model_set_target_miss(struct walltime_model *model, double miss);

/* Refits both ensembles on the finished jobs kept so far. Returns 0, or
 * -ENOMEM with a message. Before the first training the model predicts from
 * the user's history alone. */
int walltime_train(struct walltime_model *model, char *err, size_t errlen);

/* Number of finished jobs observed / training runs done / jobs submitted
 * and not finished, for reports. */
long walltime_model_observed(const struct walltime_model *model);
long walltime_model_trainings(const struct walltime_model *model);
long walltime_model_pending(const struct walltime_model *model);
/* End time (submit + wait + run) of the newest finished job learned from,
 * -1 if none: a caller that restarts with a saved model resumes from it. */
int64_t walltime_model_last_end(const struct walltime_model *model);

/* Text model file ("adafs-walltime-model 5"): parameters, the calibration
 * state (the site's price of a miss; each user's offset to it), trees,
 * per-user histories, margins and jobs in flight, the kept training jobs,
 * with every number written exactly, so a reloaded model predicts and goes
 * on learning bit-identically.
 * save returns 0 or -errno; load returns the model or NULL with the reason
 * (path and line) in err. */
int walltime_model_save(const struct walltime_model *model, const char *path,
                        char *err, size_t errlen);
struct walltime_model *walltime_model_load(const char *path,
                                           char *err, size_t errlen);

/* ---- traces ---------------------------------------------------------- */

/* Parses one line of a Standard Workload Format trace. Returns 1 for a job
 * (in *job), 0 for a comment or blank line, -1 for a malformed line with the
 * reason in err ("field 9 (requested time) is not a number: 'x'"). */
int walltime_parse_swf_line(const char *line, struct walltime_job *job,
                            char *err, size_t errlen);

/* The sacct --parsable2 fields the reader expects, in this order (see
 * doc/walltime.md for the full command). */
#define WALLTIME_SACCT_FORMAT \
    "JobIDRaw,UID,GID,Account,Partition,JobName,Submit,Start,TimelimitRaw,ElapsedRaw,NCPUS,NNodes,ReqMem,State"

/* Parses one line of `sacct --parsable2 --noheader --format=WALLTIME_SACCT_FORMAT`,
 * split at '|' (a job name with a newline can forge such a line: a trace
 * read by walltime_trace_read splits at the delimiter its header names).
 * Returns 1 for a job, 0 for a line to ignore (header, job steps such as
 * "123.batch", jobs still pending/running), -1 if malformed (reason in err). */
int walltime_parse_sacct_line(const char *line, struct walltime_job *job,
                              char *err, size_t errlen);

enum walltime_format { WALLTIME_SWF, WALLTIME_SACCT };

struct walltime_trace {
    struct walltime_job *jobs;
    size_t n;
    size_t malformed;      /* lines reported and skipped */
    long max_procs;        /* SWF "; MaxProcs:" header, else -1 */
};

/* Reads a whole trace. Each malformed line is reported on `report` (may be
 * NULL) as "PATH:LINE: reason" and skipped. Jobs come back sorted by submit
 * time (stable). Returns 0 or -errno (message in err). */
int walltime_trace_read(const char *path, enum walltime_format format,
                        FILE *report, struct walltime_trace *trace,
                        char *err, size_t errlen);
void walltime_trace_free(struct walltime_trace *trace);

#pragma GCC visibility pop

#endif
