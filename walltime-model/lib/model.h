/* model: the internals of struct walltime_model, shared by model.c (the
 * prediction and learning API) and model_io.c (the model file). */
#ifndef WALLTIME_MODEL_H
#define WALLTIME_MODEL_H

#include "features.h"
#include "gbdt.h"
#include "history.h"
#include "walltime.h"

#include <stdio.h>

/* The model's site-wide online state after an observation, kept for "as of"
 * lookups: a prediction uses the state learned from the jobs that had
 * finished by its submit time, whatever was observed since. */
#define CALIB_STEPS 1024
struct calib_state {
    double theta;           /* log of the site's price of a miss, in units of
                               scale (each user's offset is added to it) */
    double scale;           /* recent mean request, seconds (0: none yet) */
    double mix;             /* the median's preference for the baseline over
                               the trees (log odds) */
    double recent;          /* finished jobs, decayed (model.c, RECENT_S) */
};
struct calib_step {
    int64_t end;            /* end time of the job observed */
    struct calib_state s;   /* the state after it */
};
/* Ranges the state is kept in (and a model file must respect). */
#define THETA_MIN (-20.0)
#define THETA_MAX 30.0
#define MIX_MAX 4.6             /* log(99): each median expert keeps >= 1% */
#define MARGIN_MAX 3.0          /* the users' margins, log scale: at most x20 */

struct walltime_model {
    struct walltime_params params;
    struct history hist;
    struct gbdt median, upper;       /* quantile 0.5 and params.quantile */
    /* Ring of the most recent finished jobs, for retraining. */
    float *tx, *ty, *tw;             /* max_train * NFEAT, max_train, max_train */
    size_t tn, thead;
    long observed, trainings, since_train;
    /* The site-wide state after each of the last CALIB_STEPS observations
     * (in observation order), and before them. */
    struct calib_step steps[CALIB_STEPS];
    int nsteps, step_head;
    struct calib_state base;
};

/* The model file written to / read from a stream (model_io.c; name is for
 * messages); walltime_model_save/load add the file handling. */
int model_save_stream(const struct walltime_model *m, FILE *f);
struct walltime_model *model_load_stream(FILE *f, const char *name, char *err, size_t errlen);

/* Allocates the training ring; 0 or -ENOMEM. */
int model_alloc_ring(struct walltime_model *m);
/* The state a model starts with for a miss-rate target. */
struct calib_state calib_initial(double target_miss);

#endif
