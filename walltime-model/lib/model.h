/* model: the internals of struct walltime_model, shared by model.c (the
 * prediction and learning API) and model_io.c (the model file). */
#ifndef WALLTIME_MODEL_H
#define WALLTIME_MODEL_H

#include "features.h"
#include "gbdt.h"
#include "history.h"
#include "walltime.h"

/* Price of an underestimate after an observation, for "as of" lookups. */
#define LAMBDA_STEPS 1024
/* The log price stays in [0, LAMBDA_MAX_LOG]: 1 s to 1e12 s ("never
 * underestimate"). */
#define LAMBDA_MAX_LOG 27.6
struct lambda_step {
    int64_t end;            /* end time of the job observed */
    double log_lambda;      /* log of the price (seconds) after it */
};

struct walltime_model {
    struct walltime_params params;
    struct history hist;
    struct gbdt median, upper;       /* quantile 0.5 and params.quantile */
    /* Ring of the most recent finished jobs, for retraining. */
    float *tx, *ty, *tw;             /* max_train * NFEAT, max_train, max_train */
    size_t tn, thead;
    long observed, trainings, since_train;
    /* The conservative estimate's price of an underestimate, one for all
     * users: a ring of its values after each of the last LAMBDA_STEPS
     * observations (in observation order), and its value before them. */
    struct lambda_step steps[LAMBDA_STEPS];
    int nsteps, step_head;
    double log_lambda_base;
};

/* Allocates the training ring; 0 or -ENOMEM. */
int model_alloc_ring(struct walltime_model *m);

#endif
