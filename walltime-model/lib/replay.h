/* replay: the time-ordered evaluation of the predictors on a trace.
 *
 * Jobs are taken in submit order. Before a job is predicted, every job whose
 * end (submit + wait + run) is <= its submit time - and only those - is
 * handed to the predictors' history and to the model, in end order, and the
 * model is told which jobs had started by then (submit + wait <= it). So
 * each prediction uses only what was known when the job was submitted; the
 * model retrains itself every params.retrain_every finished jobs. */
#ifndef WALLTIME_REPLAY_H
#define WALLTIME_REPLAY_H

#include "walltime.h"

enum replay_predictor { P_REQUEST, P_LAST2, P_ALEA, P_MODEL, P_MODEL_SAFE, P_COUNT };

extern const char *const replay_predictor_names[P_COUNT];

/* Jobs per window of the windowed underestimation rates: a rate that holds
 * overall may still fail for days at a time. */
#define REPLAY_WINDOW 1000

struct replay_metrics {
    size_t n;
    double mae_s, medae_s, underestimation_rate;
    /* Underestimation rate of each run of REPLAY_WINDOW consecutive
     * predicted jobs (submit order; a last, shorter run is left out), and
     * the window where it is highest (0 if there is none). */
    double *window_rate;
    size_t windows, worst_window;
    /* Distribution over users of each user's median absolute error. */
    double user_medae_p25, user_medae_p50, user_medae_p75, user_medae_p90;
    size_t users;
};

struct replay_result {
    size_t n;                       /* jobs in the trace */
    size_t skipped;                 /* without a request or a run time */
    double *pred[P_COUNT];          /* n predictions each, NAN if skipped */
    struct replay_metrics metrics[P_COUNT];
    size_t group[3];                /* conservative estimates by walltime_group */
    long trainings;
    double train_seconds;           /* time spent retraining */
};

/* Replays trace (sorted by submit time). Returns 0 or a negative errno with
 * the message in err. */
int replay_run(const struct walltime_trace *trace, const struct walltime_params *params,
               struct replay_result *out, char *err, size_t errlen);
void replay_free(struct replay_result *r);

/* The same replay without the baselines and metrics: the model as it ends,
 * having submitted, started and finished every job in time order and
 * retrained on the way, i.e. with the state a live model would have. */
int replay_model(const struct walltime_trace *trace, const struct walltime_params *params,
                 struct walltime_model **model, char *err, size_t errlen);

/* The "last two" and "ALEA" baselines of a job from its user's history as of
 * its submit time (the request if the user has none). */
struct user_hist;
double baseline_last2(const struct user_hist *u, const struct walltime_job *job);
double baseline_alea(const struct user_hist *u, const struct walltime_job *job);

#endif
