#include "gbdt.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void gbdt_init(struct gbdt *m)
{
    memset(m, 0, sizeof(*m));
}

void gbdt_free(struct gbdt *m)
{
    free(m->roots);
    free(m->nodes);
    gbdt_init(m);
}

float gbdt_predict(const struct gbdt *m, const float *x)
{
    float v = m->base;
    for (int t = 0; t < m->ntrees; t++) {
        const struct gbdt_node *nd = &m->nodes[m->roots[t]];
        while (nd->feature >= 0)
            nd = &m->nodes[x[nd->feature] <= nd->threshold ? nd->left : nd->right];
        v += nd->value;
    }
    return v;
}

/* ---- training ---------------------------------------------------------- */

struct pair { float r, w; };

static int cmp_pair(const void *a, const void *b)
{
    float x = ((const struct pair *)a)->r, y = ((const struct pair *)b)->r;
    return (x > y) - (x < y);
}

/* Weighted q-quantile of p[0..n) (sorted in place). */
static float wquantile(struct pair *p, size_t n, double q)
{
    double total = 0, acc = 0;
    qsort(p, n, sizeof(*p), cmp_pair);
    for (size_t i = 0; i < n; i++)
        total += p[i].w;
    for (size_t i = 0; i < n; i++) {
        acc += p[i].w;
        if (acc >= q * total)
            return p[i].r;
    }
    return n ? p[n - 1].r : 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Up to GBDT_BINS-1 cut points per feature at quantiles of its values. */
static int make_bins(const struct gbdt_data *d, float *cuts, int *ncuts, uint8_t *bin)
{
    float *v = malloc(d->n * sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (int f = 0; f < d->nf; f++) {
        for (size_t i = 0; i < d->n; i++)
            v[i] = d->x[i * d->nf + f];
        qsort(v, d->n, sizeof(*v), cmp_float);
        float *c = &cuts[f * GBDT_BINS];
        int nc = 0;
        for (int b = 1; b < GBDT_BINS; b++) {
            float cut = v[(size_t)((double)b / GBDT_BINS * (double)d->n)];
            /* A cut at the maximum would leave an empty right side. */
            if (cut < v[d->n - 1] && (nc == 0 || cut > c[nc - 1]))
                c[nc++] = cut;
        }
        ncuts[f] = nc;
        for (size_t i = 0; i < d->n; i++) {
            float x = d->x[i * d->nf + f];
            int lo = 0, hi = nc;             /* first cut >= x */
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                if (c[mid] < x)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            bin[i * d->nf + f] = (uint8_t)lo;
        }
    }
    free(v);
    return 0;
}

struct fit {
    const struct gbdt_data *d;
    const struct gbdt_config *cfg;
    const uint8_t *bin;
    const float *cuts;
    const int *ncuts;
    float *pred, *grad;
    size_t *idx;
    struct pair *pairs;
    double *hist;            /* nf * GBDT_BINS * 3 */
    struct gbdt *m;
    int cap;
};

static int new_node(struct fit *s)
{
    struct gbdt *m = s->m;
    if (m->nnodes == s->cap) {
        int cap = s->cap ? s->cap * 2 : 1024;
        struct gbdt_node *n = realloc(m->nodes, (size_t)cap * sizeof(*n));
        if (!n)
            return -1;
        m->nodes = n;
        s->cap = cap;
    }
    memset(&m->nodes[m->nnodes], 0, sizeof(m->nodes[0]));
    m->nodes[m->nnodes].feature = -1;
    return m->nnodes++;
}

/* Grows the subtree over idx[lo, hi) and returns its node, or -1 (ENOMEM). */
static int grow(struct fit *s, size_t lo, size_t hi, int depth)
{
    const struct gbdt_data *d = s->d;
    const int nf = d->nf;
    int node = new_node(s);
    if (node < 0)
        return -1;
    size_t n = hi - lo;
    int best_f = -1, best_b = 0;
    if (depth < s->cfg->depth && n >= 2 * (size_t)s->cfg->min_leaf) {
        double *hist = s->hist;
        memset(hist, 0, sizeof(double) * (size_t)nf * GBDT_BINS * 3);
        double tg = 0, tw = 0;
        for (size_t k = lo; k < hi; k++) {
            size_t i = s->idx[k];
            double w = d->w[i], wg = w * s->grad[i];
            tg += wg;
            tw += w;
            const uint8_t *b = &s->bin[i * nf];
            for (int f = 0; f < nf; f++) {
                double *h = &hist[((size_t)f * GBDT_BINS + b[f]) * 3];
                h[0] += wg;
                h[1] += w;
                h[2] += 1;
            }
        }
        double best_gain = tg * tg / tw * (1 + 1e-9) + 1e-12;
        for (int f = 0; f < nf; f++) {
            double lg = 0, lw = 0, lc = 0;
            for (int b = 0; b < s->ncuts[f]; b++) {
                const double *h = &hist[((size_t)f * GBDT_BINS + b) * 3];
                lg += h[0];
                lw += h[1];
                lc += h[2];
                double rc = (double)n - lc, rw = tw - lw;
                if (lc < s->cfg->min_leaf || rc < s->cfg->min_leaf || lw <= 0 || rw <= 0)
                    continue;
                double gain = lg * lg / lw + (tg - lg) * (tg - lg) / rw;
                if (gain > best_gain) {
                    best_gain = gain;
                    best_f = f;
                    best_b = b;
                }
            }
        }
    }
    if (best_f < 0) {
        /* Leaf: the quantile of the residuals is the loss's exact optimum. */
        for (size_t k = lo; k < hi; k++) {
            size_t i = s->idx[k];
            s->pairs[k - lo].r = d->y[i] - s->pred[i];
            s->pairs[k - lo].w = d->w[i];
        }
        float v = (float)(s->cfg->learning_rate *
                          wquantile(s->pairs, n, s->cfg->quantile));
        s->m->nodes[node].value = v;
        for (size_t k = lo; k < hi; k++)
            s->pred[s->idx[k]] += v;
        return node;
    }
    /* Partition idx so the left child's jobs come first. */
    size_t mid = lo;
    for (size_t k = lo; k < hi; k++)
        if (s->bin[s->idx[k] * nf + best_f] <= best_b) {
            size_t t = s->idx[k];
            s->idx[k] = s->idx[mid];
            s->idx[mid++] = t;
        }
    int left = grow(s, lo, mid, depth + 1);
    if (left < 0)
        return -1;
    int right = grow(s, mid, hi, depth + 1);
    if (right < 0)
        return -1;
    struct gbdt_node *nd = &s->m->nodes[node];
    nd->feature = best_f;
    nd->threshold = s->cuts[best_f * GBDT_BINS + best_b];
    nd->left = left;
    nd->right = right;
    return node;
}

int gbdt_fit(struct gbdt *m, const struct gbdt_data *d, const struct gbdt_config *cfg)
{
    gbdt_free(m);
    if (d->n == 0)
        return 0;
    int rc = -ENOMEM;
    struct fit s = { .d = d, .cfg = cfg, .m = m };
    uint8_t *bin = malloc(d->n * (size_t)d->nf);
    float *cuts = malloc(sizeof(float) * (size_t)d->nf * GBDT_BINS);
    int *ncuts = malloc(sizeof(int) * (size_t)d->nf);
    s.pred = malloc(d->n * sizeof(float));
    s.grad = malloc(d->n * sizeof(float));
    s.idx = malloc(d->n * sizeof(size_t));
    s.pairs = malloc(d->n * sizeof(struct pair));
    s.hist = malloc(sizeof(double) * (size_t)d->nf * GBDT_BINS * 3);
    m->roots = calloc((size_t)cfg->trees, sizeof(int));
    if (!bin || !cuts || !ncuts || !s.pred || !s.grad || !s.idx || !s.pairs ||
        !s.hist || !m->roots || make_bins(d, cuts, ncuts, bin) < 0)
        goto out;
    s.bin = bin;
    s.cuts = cuts;
    s.ncuts = ncuts;

    for (size_t i = 0; i < d->n; i++) {
        s.pairs[i].r = d->y[i];
        s.pairs[i].w = d->w[i];
    }
    m->base = d->offset ? 0 : wquantile(s.pairs, d->n, cfg->quantile);
    for (size_t i = 0; i < d->n; i++)
        s.pred[i] = d->offset ? d->offset[i] : m->base;
    for (int t = 0; t < cfg->trees; t++) {
        for (size_t i = 0; i < d->n; i++) {
            /* Negative gradient of the pinball loss. */
            s.grad[i] = d->y[i] > s.pred[i] ? (float)cfg->quantile
                                            : (float)(cfg->quantile - 1);
            s.idx[i] = i;
        }
        int root = grow(&s, 0, d->n, 0);
        if (root < 0)
            goto out;
        m->roots[m->ntrees++] = root;
    }
    rc = 0;
out:
    free(bin);
    free(cuts);
    free(ncuts);
    free(s.pred);
    free(s.grad);
    free(s.idx);
    free(s.pairs);
    free(s.hist);
    if (rc < 0)
        gbdt_free(m);
    return rc;
}
