/* gbdt: a small gradient-boosted regression tree ensemble with quantile loss.
 *
 * Quantile 0.5 is the absolute-error (median) loss; 0.9 gives an upper
 * estimate. Features are pre-binned into at most GBDT_BINS quantile bins;
 * each tree is grown level by level on the loss's sign gradient, and each
 * leaf gets the weighted quantile of the residuals it holds (exact for this
 * loss, unlike a gradient step). Training is deterministic: the same data
 * gives the same trees. */
#ifndef WALLTIME_GBDT_H
#define WALLTIME_GBDT_H

#include <stddef.h>

#define GBDT_BINS 64

struct gbdt_node {
    int feature;            /* -1 for a leaf */
    float threshold;        /* x[feature] <= threshold goes left */
    int left, right;        /* node indices */
    float value;            /* leaf contribution */
};

struct gbdt {
    float base;             /* start value (weighted quantile of y) */
    int ntrees;
    int *roots;             /* ntrees node indices */
    struct gbdt_node *nodes;
    int nnodes;
};

struct gbdt_config {
    double quantile;
    int trees, depth, min_leaf;
    double learning_rate;
};

/* Training set: x is n rows of nf floats; y targets; w positive weights;
 * offset (may be NULL) a per-row start value the trees correct, which the
 * caller adds to gbdt_predict() (base is then 0). */
struct gbdt_data {
    const float *x, *y, *w, *offset;
    size_t n;
    int nf;
};

void gbdt_init(struct gbdt *m);
void gbdt_free(struct gbdt *m);
/* Replaces m with a model fitted to d. Returns 0 or -ENOMEM. */
int gbdt_fit(struct gbdt *m, const struct gbdt_data *d, const struct gbdt_config *cfg);
float gbdt_predict(const struct gbdt *m, const float *x);

#endif
