/* model_io: the model file, a line-oriented text format.
 *
 *   adafs-walltime-model 5
 *   params TREES DEPTH LR MIN_LEAF QUANTILE TARGET_MISS CALIB_ETA INFLIGHT_K0
 *          EPISODE_GAP MAX_TRAIN RETRAIN_EVERY AUTO
 *   state OBSERVED TRAININGS SINCE_TRAIN
 *   calib THETA SCALE MIX RECENT NSTEPS HEAD (the state before the ring),
 *       then NSTEPS "step END THETA SCALE MIX RECENT" lines (ring slots)
 *   ensemble median|upper BASE NTREES NNODES, then "roots ..." and NNODES
 *       "node FEATURE THRESHOLD LEFT RIGHT VALUE" lines
 *   users N, then per user "user UID COUNT HEAD NPENDING", COUNT
 *       "e SUBMIT END REQ RUN PROCS MEM EXE PARTITION STATUS MARGIN OFFSET RECENT"
 *       lines
 *       (ring slots) and NPENDING
 *       "p JOB_ID SUBMIT START REQ PROCS CONSERVATIVE BASE TREES" lines
 *   train N HEAD, then N "t Y W F0 .. F29" lines
 *   end
 *
 * Real numbers are written as C99 hexadecimal floats (%a), which read back
 * bit for bit, so a reloaded model predicts exactly what the saved one did. */
#include "model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bumped whenever the features or the saved state change meaning: the trees
 * and the kept training jobs of an older file would be read with the wrong
 * features. Version 2 added ratio_wq75 and same_age (the baseline for new
 * and stale requests); version 3 the price of an underestimate (the
 * conservative estimate's choice); version 4 its online calibration, the
 * median's mixture and the jobs in flight; version 5 a price of a miss per
 * user: each user's offset to the site's price and recent jobs. */
#define MODEL_VERSION "5"

/* The longest line is "roots" with one index per tree. */
#define MAX_TREES 1000
#define MAX_TOKENS (MAX_TREES + 1)

static int save_ensemble(FILE *f, const char *name, const struct gbdt *g)
{
    fprintf(f, "ensemble %s %a %d %d\nroots", name, (double)g->base, g->ntrees, g->nnodes);
    for (int t = 0; t < g->ntrees; t++)
        fprintf(f, " %d", g->roots[t]);
    fputc('\n', f);
    for (int i = 0; i < g->nnodes; i++) {
        const struct gbdt_node *n = &g->nodes[i];
        fprintf(f, "node %d %a %d %d %a\n", n->feature, (double)n->threshold,
                n->left, n->right, (double)n->value);
    }
    return 0;
}

int model_save_stream(const struct walltime_model *m, FILE *f)
{
    const struct walltime_params *p = &m->params;
    fprintf(f, "adafs-walltime-model " MODEL_VERSION "\n");
    fprintf(f, "params %d %d %a %d %a %a %a %a %d %d %d %d\n", p->trees, p->depth,
            p->learning_rate, p->min_leaf, p->quantile, p->target_miss, p->calib_eta,
            p->inflight_k0, p->episode_gap_s, p->max_train, p->retrain_every,
            p->auto_retrain);
    fprintf(f, "state %ld %ld %ld\n", m->observed, m->trainings, m->since_train);
    fprintf(f, "calib %a %a %a %a %d %d\n", m->base.theta, m->base.scale, m->base.mix,
            m->base.recent, m->nsteps, m->step_head);
    for (int k = 0; k < m->nsteps; k++) {
        const struct calib_step *c = &m->steps[k];
        fprintf(f, "step %lld %a %a %a %a\n", (long long)c->end, c->s.theta, c->s.scale,
                c->s.mix, c->s.recent);
    }
    save_ensemble(f, "median", &m->median);
    save_ensemble(f, "upper", &m->upper);
    fprintf(f, "users %zu\n", m->hist.used);
    for (size_t s = 0; s < m->hist.cap; s++) {
        const struct user_hist *u = &m->hist.slots[s];
        if (u->uid == -1)
            continue;
        fprintf(f, "user %lld %d %d %d\n", (long long)u->uid, u->count, u->head, u->npending);
        for (int k = 0; k < u->count; k++) {
            const struct hist_entry *e = &u->e[k];
            fprintf(f, "e %lld %lld %lld %lld %lld %lld %u %u %d %a %a %a\n",
                    (long long)e->submit, (long long)e->end, (long long)e->req,
                    (long long)e->run, (long long)e->procs, (long long)e->mem,
                    e->exe, e->partition, e->status, e->log_margin, e->price_offset,
                    e->recent);
        }
        for (int k = 0; k < u->npending; k++) {
            const struct pending_job *pj = &u->pending[k];
            fprintf(f, "p %lld %lld %lld %lld %lld %a %a %a\n", (long long)pj->job_id,
                    (long long)pj->submit, (long long)pj->start, (long long)pj->req,
                    (long long)pj->procs, pj->conservative, pj->base, pj->trees);
        }
    }
    fprintf(f, "train %zu %zu\n", m->tn, m->thead);
    for (size_t i = 0; i < m->tn; i++) {
        fprintf(f, "t %a %a", (double)m->ty[i], (double)m->tw[i]);
        for (int k = 0; k < NFEAT; k++)
            fprintf(f, " %a", (double)m->tx[i * NFEAT + k]);
        fputc('\n', f);
    }
    fprintf(f, "end\n");
    return ferror(f) ? -1 : 0;
}

int walltime_model_save(const struct walltime_model *m, const char *path,
                        char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "model path too long: %s", path);
        return -ENAMETOOLONG;
    }
    FILE *f = fopen(tmp, "we");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "cannot create model file %s: %s", tmp, strerror(e));
        return -e;
    }
    int bad = model_save_stream(m, f) < 0;
    if (fclose(f) != 0 || bad) {
        int e = errno ? errno : EIO;
        snprintf(err, errlen, "cannot write model file %s: %s", tmp, strerror(e));
        unlink(tmp);
        return -e;
    }
    if (rename(tmp, path) < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
        unlink(tmp);
        return -e;
    }
    return 0;
}

/* ---- loading ----------------------------------------------------------- */

struct reader {
    FILE *f;
    const char *path;
    long lineno;
    char *line;
    size_t cap;
    char *tok[MAX_TOKENS];
    int ntok;
    char *err;
    size_t errlen;
};

/* Next line split into tokens; it must start with `word` and have `n`
 * tokens (n < 0: at least -n). */
static int next(struct reader *r, const char *word, int n)
{
    if (getline(&r->line, &r->cap, r->f) < 0) {
        snprintf(r->err, r->errlen, "%s:%ld: unexpected end of file, expected '%s'",
                 r->path, r->lineno + 1, word);
        return -1;
    }
    r->lineno++;
    r->ntok = 0;
    char *save = NULL;
    for (char *t = strtok_r(r->line, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
        if (r->ntok == MAX_TOKENS) {
            snprintf(r->err, r->errlen, "%s:%ld: too many fields", r->path, r->lineno);
            return -1;
        }
        r->tok[r->ntok++] = t;
    }
    if (r->ntok == 0 || strcmp(r->tok[0], word) != 0 ||
        (n >= 0 ? r->ntok != n : r->ntok < -n)) {
        snprintf(r->err, r->errlen, "%s:%ld: expected a '%s' line with %d fields",
                 r->path, r->lineno, word, n < 0 ? -n : n);
        return -1;
    }
    return 0;
}

static int num(struct reader *r, int i, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(r->tok[i], &end);
    if (errno || *end) {
        snprintf(r->err, r->errlen, "%s:%ld: field %d is not a number: '%.40s'",
                 r->path, r->lineno, i + 1, r->tok[i]);
        return -1;
    }
    return 0;
}

/* A number in [lo, hi]. */
static int num_in(struct reader *r, int i, double lo, double hi, double *v)
{
    if (num(r, i, v) < 0)
        return -1;
    if (!(*v >= lo && *v <= hi)) {
        snprintf(r->err, r->errlen, "%s:%ld: field %d is not a number in [%g, %g]: '%.40s'",
                 r->path, r->lineno, i + 1, lo, hi, r->tok[i]);
        return -1;
    }
    return 0;
}

/* The most finished jobs a decayed count can hold (far more than a day's). */
#define RECENT_MAX 1e15

/* The calibration state in fields i to i+3. */
static int calib(struct reader *r, int i, struct calib_state *s)
{
    return num_in(r, i, THETA_MIN, THETA_MAX, &s->theta) < 0 ||
           num_in(r, i + 1, 0, (double)WALLTIME_MAX_SECONDS, &s->scale) < 0 ||
           num_in(r, i + 2, -MIX_MAX, MIX_MAX, &s->mix) < 0 ||
           num_in(r, i + 3, 0, RECENT_MAX, &s->recent) < 0 ? -1 : 0;
}

static int integer(struct reader *r, int i, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    *v = strtoll(r->tok[i], &end, 10);
    if (errno || *end || *v < lo || *v > hi) {
        snprintf(r->err, r->errlen, "%s:%ld: field %d is not an integer in [%lld, %lld]: '%.40s'",
                 r->path, r->lineno, i + 1, lo, hi, r->tok[i]);
        return -1;
    }
    return 0;
}

static int load_ensemble(struct reader *r, const char *name, struct gbdt *g)
{
    double base;
    long long nt, nn, v;
    if (next(r, "ensemble", 5) < 0)
        return -1;
    if (strcmp(r->tok[1], name) != 0) {
        snprintf(r->err, r->errlen, "%s:%ld: expected ensemble '%s'", r->path, r->lineno, name);
        return -1;
    }
    if (num_in(r, 2, -1e3, 1e3, &base) < 0 || integer(r, 3, 0, MAX_TREES, &nt) < 0 ||
        integer(r, 4, 0, 100000000, &nn) < 0)
        return -1;
    g->base = (float)base;
    g->roots = calloc((size_t)nt + 1, sizeof(int));
    g->nodes = calloc((size_t)nn + 1, sizeof(struct gbdt_node));
    if (!g->roots || !g->nodes) {
        snprintf(r->err, r->errlen, "%s: out of memory", r->path);
        return -1;
    }
    if (next(r, "roots", (int)nt + 1) < 0)
        return -1;
    for (int t = 0; t < nt; t++) {
        if (integer(r, t + 1, 0, nn - 1, &v) < 0)
            return -1;
        g->roots[t] = (int)v;
    }
    g->ntrees = (int)nt;
    for (int i = 0; i < nn; i++) {
        struct gbdt_node *n = &g->nodes[i];
        long long feat, left, right;
        double thr, val;
        if (next(r, "node", 6) < 0 || integer(r, 1, -1, NFEAT - 1, &feat) < 0 ||
            num_in(r, 2, -1e12, 1e12, &thr) < 0 || integer(r, 3, 0, nn - 1, &left) < 0 ||
            integer(r, 4, 0, nn - 1, &right) < 0 || num_in(r, 5, -1e3, 1e3, &val) < 0)
            return -1;
        /* Children always come after their parent, so walks end. */
        if (feat >= 0 && (left <= i || right <= i)) {
            snprintf(r->err, r->errlen, "%s:%ld: node %d has a child before it",
                     r->path, r->lineno, i);
            return -1;
        }
        *n = (struct gbdt_node){ (int)feat, (float)thr, (int)left, (int)right, (float)val };
        g->nnodes = i + 1;
    }
    return 0;
}

static int load_body(struct reader *r, struct walltime_model **out)
{
    long long v[9];
    double d[5];
    struct walltime_params p;
    if (next(r, "adafs-walltime-model", 2) < 0)
        return -1;
    if (strcmp(r->tok[1], MODEL_VERSION) != 0) {
        snprintf(r->err, r->errlen, "%s:1: unsupported model version '%.20s' (this build reads "
                 MODEL_VERSION "; retrain with adafs-walltime train)", r->path, r->tok[1]);
        return -1;
    }
    if (next(r, "params", 13) < 0 || integer(r, 1, 1, MAX_TREES, &v[0]) < 0 ||
        integer(r, 2, 1, 30, &v[1]) < 0 || num_in(r, 3, 1e-6, 1, &d[0]) < 0 ||
        integer(r, 4, 1, 1000000, &v[2]) < 0 || num_in(r, 5, 0.5, 0.999, &d[1]) < 0 ||
        num_in(r, 6, 0.001, 0.5, &d[2]) < 0 || num_in(r, 7, 1e-4, 1, &d[3]) < 0 ||
        num_in(r, 8, 0.1, 1e6, &d[4]) < 0 || integer(r, 9, 0, 86400, &v[6]) < 0 ||
        integer(r, 10, 1, 1000000, &v[3]) < 0 ||
        integer(r, 11, 1, 100000000, &v[4]) < 0 || integer(r, 12, 0, 1, &v[5]) < 0)
        return -1;
    p = (struct walltime_params){
        .trees = (int)v[0], .depth = (int)v[1], .learning_rate = d[0],
        .min_leaf = (int)v[2], .quantile = d[1], .target_miss = d[2],
        .calib_eta = d[3], .inflight_k0 = d[4], .episode_gap_s = (int)v[6],
        .max_train = (int)v[3], .retrain_every = (int)v[4], .auto_retrain = (int)v[5],
    };
    struct walltime_model *m = walltime_model_new(&p);
    if (!m) {
        snprintf(r->err, r->errlen, "%s: out of memory", r->path);
        return -1;
    }
    *out = m;
    if (next(r, "state", 4) < 0 || integer(r, 1, 0, 1LL << 60, &v[0]) < 0 ||
        integer(r, 2, 0, 1LL << 60, &v[1]) < 0 || integer(r, 3, 0, 1LL << 60, &v[2]) < 0)
        return -1;
    m->observed = (long)v[0];
    m->trainings = (long)v[1];
    m->since_train = (long)v[2];
    if (next(r, "calib", 7) < 0 || calib(r, 1, &m->base) < 0 ||
        integer(r, 5, 0, CALIB_STEPS, &v[0]) < 0 ||
        integer(r, 6, 0, CALIB_STEPS - 1, &v[1]) < 0)
        return -1;
    m->nsteps = (int)v[0];
    m->step_head = (int)v[1];
    if (m->nsteps < CALIB_STEPS && m->step_head != m->nsteps) {
        snprintf(r->err, r->errlen, "%s:%ld: ring head %d with %d steps", r->path,
                 r->lineno, m->step_head, m->nsteps);
        return -1;
    }
    for (int k = 0; k < m->nsteps; k++) {
        if (next(r, "step", 6) < 0 || integer(r, 1, 0, WALLTIME_MAX_SECONDS * 3, &v[0]) < 0 ||
            calib(r, 2, &m->steps[k].s) < 0)
            return -1;
        m->steps[k].end = (int64_t)v[0];
    }
    if (load_ensemble(r, "median", &m->median) < 0 || load_ensemble(r, "upper", &m->upper) < 0)
        return -1;

    long long nusers;
    if (next(r, "users", 2) < 0 || integer(r, 1, 0, 100000000, &nusers) < 0)
        return -1;
    for (long long k = 0; k < nusers; k++) {
        long long uid, count, head, npending;
        if (next(r, "user", 5) < 0 || integer(r, 1, 0, WALLTIME_MAX_COUNT, &uid) < 0 ||
            integer(r, 2, 0, HIST_LEN, &count) < 0 ||
            integer(r, 3, 0, HIST_LEN - 1, &head) < 0 ||
            integer(r, 4, 0, PENDING_MAX, &npending) < 0)
            return -1;
        if (count < HIST_LEN && head != count) {
            snprintf(r->err, r->errlen, "%s:%ld: ring head %lld with %lld entries", r->path,
                     r->lineno, head, count);
            return -1;
        }
        if (history_find(&m->hist, uid)) {
            snprintf(r->err, r->errlen, "%s:%ld: user %lld appears twice", r->path, r->lineno, uid);
            return -1;
        }
        struct user_hist *u = history_get(&m->hist, uid);
        if (!u) {
            snprintf(r->err, r->errlen, "%s: out of memory", r->path);
            return -1;
        }
        u->count = (int)count;
        u->head = (int)head;
        for (int i = 0; i < count; i++) {
            long long e[9];
            double margin, theta, recent;
            if (next(r, "e", 13) < 0 || num_in(r, 10, -MARGIN_MAX, MARGIN_MAX, &margin) < 0 ||
                num_in(r, 11, THETA_MIN, THETA_MAX, &theta) < 0 ||
                num_in(r, 12, 1, RECENT_MAX, &recent) < 0)
                return -1;
            for (int c = 0; c < 9; c++) {
                /* submit end req run procs mem exe partition status */
                long long lo = c == 2 ? 1 : c == 4 || c == 5 || c == 8 ? -1 : 0;
                long long hi = c == 6 || c == 7 ? 0xffffffffLL : c == 8 ? 5
                             : c == 1 ? 3 * WALLTIME_MAX_SECONDS : c == 5 ? 1LL << 62
                             : WALLTIME_MAX_SECONDS;
                if (integer(r, c + 1, lo, hi, &e[c]) < 0)
                    return -1;
            }
            u->e[i] = (struct hist_entry){ e[0], e[1], e[2], e[3], e[4], e[5],
                                           (uint32_t)e[6], (uint32_t)e[7], (int32_t)e[8],
                                           margin, theta, recent };
        }
        for (long long i = 0; i < npending; i++) {
            long long jv[5];
            double ratio[3];
            if (next(r, "p", 9) < 0)
                return -1;
            for (int c = 0; c < 5; c++) {
                /* job_id submit start req procs */
                long long lo = c == 2 || c == 4 ? -1 : c == 3 ? 1 : 0;
                if (integer(r, c + 1, lo, c == 0 ? WALLTIME_MAX_COUNT : WALLTIME_MAX_SECONDS,
                            &jv[c]) < 0)
                    return -1;
            }
            for (int c = 0; c < 3; c++)
                if (num_in(r, 6 + c, 0, 1, &ratio[c]) < 0)
                    return -1;
            struct pending_job pj = { jv[0], jv[1], jv[2], jv[3], jv[4],
                                      ratio[0], ratio[1], ratio[2] };
            if (user_pending_find(u, pj.job_id)) {
                snprintf(r->err, r->errlen, "%s:%ld: job %lld is pending twice", r->path,
                         r->lineno, jv[0]);
                return -1;
            }
            if (user_pending_add(u, &pj) < 0) {
                snprintf(r->err, r->errlen, "%s: out of memory", r->path);
                return -1;
            }
        }
    }

    long long tn, thead;
    if (next(r, "train", 3) < 0 || integer(r, 1, 0, m->params.max_train, &tn) < 0 ||
        integer(r, 2, 0, m->params.max_train - 1, &thead) < 0)
        return -1;
    /* As the other rings: until it is full the head is the count, and the
     * slots from the head on were never written (the next job learnt goes
     * to the head, and a save then writes the slots below the count). */
    if (tn < m->params.max_train && thead != tn) {
        snprintf(r->err, r->errlen, "%s:%ld: ring head %lld with %lld training jobs", r->path,
                 r->lineno, thead, tn);
        return -1;
    }
    m->tn = (size_t)tn;
    m->thead = (size_t)thead;
    for (long long i = 0; i < tn; i++) {
        double x;
        if (next(r, "t", 3 + NFEAT) < 0)
            return -1;
        for (int c = 0; c < NFEAT + 2; c++) {
            /* ratio, weight (the request), features (logs, counts, ratios) */
            if (num_in(r, c + 1, c == 0 ? 0 : c == 1 ? 1 : -1e12,
                       c == 0 ? 1 : c == 1 ? (double)WALLTIME_MAX_SECONDS : 1e12, &x) < 0)
                return -1;
            if (c == 0)
                m->ty[i] = (float)x;
            else if (c == 1)
                m->tw[i] = (float)x;
            else
                m->tx[i * NFEAT + c - 2] = (float)x;
        }
    }
    return next(r, "end", 1);
}

struct walltime_model *model_load_stream(FILE *f, const char *name, char *err, size_t errlen)
{
    struct reader r = { .f = f, .path = name, .err = err, .errlen = errlen };
    struct walltime_model *m = NULL;
    int rc = load_body(&r, &m);
    free(r.line);
    if (rc < 0) {
        walltime_model_free(m);
        return NULL;
    }
    return m;
}

struct walltime_model *walltime_model_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot open model file %s: %s", path, strerror(errno));
        return NULL;
    }
    struct walltime_model *m = model_load_stream(f, path, err, errlen);
    fclose(f);
    return m;
}
