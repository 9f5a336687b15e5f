/* model: the internals of struct walltime_model, shared by model.c (the
 * prediction and learning API) and model_io.c (the model file). */
#ifndef WALLTIME_MODEL_H
#define WALLTIME_MODEL_H

#include "features.h"
#include "gbdt.h"
#include "history.h"
#include "walltime.h"

struct walltime_model {
    struct walltime_params params;
    struct history hist;
    struct gbdt median, upper;       /* quantile 0.5 and params.quantile */
    /* Ring of the most recent finished jobs, for retraining. */
    float *tx, *ty, *tw;             /* max_train * NFEAT, max_train, max_train */
    size_t tn, thead;
    long observed, trainings, since_train;
};

/* Allocates the training ring; 0 or -ENOMEM. */
int model_alloc_ring(struct walltime_model *m);

#endif
