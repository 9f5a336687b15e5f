/* ctl: see ctl.h. Arrays indexed by job and by (job, node) pair, a job's
 * pairs contiguous and sorted by node, a hash from job id to job: one
 * cycle of 1,000 nodes and 1,000 jobs must cost under a millisecond. */
#include "ctl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* One class of a (job, node): 32 bytes, two to a cache line. A pair's
 * classes are laid out one after the other (not a field's ten values
 * together), so a step of the cycle reads the lines of the classes it
 * works on (those a report names or the pair used, those with a limit),
 * not all ten: at 1,000-10,000 nodes a cycle's time is the cache lines
 * it reads, not its arithmetic (issue 24's acceptance 5). */
struct pair_class {
    uint64_t last_used, last_waited;  /* totals of the last report taken */
    /* Rates in float: 24 bits of mantissa are far finer than the noise of
     * a measured rate; so is the limit (a relative 6e-8 above 2^24/s). */
    float limit;                      /* what the node was last sent; INFINITY: none */
    float rate, demand;
    float peak;                       /* the most it used unhindered lately (ctl.h) */
};

struct pair {
    uint32_t job, node;
    uint32_t job_id, uid;             /* jobs[job]'s: a report's entry is matched and a
                                       * message written without touching the job (a
                                       * cache miss per pair at 1,000 nodes) */
    uint32_t samples;                 /* reports taken: a rate needs two */
    uint32_t procs;
    int64_t last_ms;
    bool restored;                    /* limit from the saved state, not yet measured */
    uint16_t touched;                 /* classes whose state is not all 0 */
    uint16_t capped;                  /* classes with a limit (finite) */
    uint8_t pressed[QOS_NCLASSES];    /* periods in a row pressing against its limit (ctl.h) */
    struct pair_class cl[QOS_NCLASSES] __attribute__((aligned(64)));
};

struct job {
    uint32_t id, uid;
    double weight;
    struct qos_limits asked;
    uint32_t first, npairs;
    uint32_t procs, up;
    float demand[QOS_NCLASSES], usage[QOS_NCLASSES], alloc[QOS_NCLASSES];   /* float: as a pair's */
    bool grows[QOS_NCLASSES];         /* a node of it presses against its limit */
};

struct node {
    int64_t first_ms, last_ms;        /* when it first had jobs, last reported */
    bool up;
    uint32_t *pairs, npairs, cap;
    /* The pair of each entry of its last report, in the report's order:
     * an agent lists its jobs the same way each time, so a report is
     * matched to its pairs without a lookup. */
    uint32_t *seen, nseen, seencap;
};

struct ctl {
    struct job *jobs;
    size_t njobs;
    struct pair *pairs;
    size_t npairs;
    struct node *nodes;
    size_t nnodes;
    uint32_t *hash;                   /* job index + 1; 0: empty */
    size_t hmask;
    struct policy_job *pj;
    uint32_t *order;
    double *want;
    size_t scratch;
    /* Which classes the last compute limited; a class that stops being
     * limited has its limits lifted once, not every cycle. */
    bool was_limited[QOS_NCLASSES];
    bool lift_all;                    /* restored limits: lift every unlimited class */
    uint16_t reported;                /* classes any report named: their lines are fetched ahead */
    uint16_t asked;                   /* classes some job asked a limit in (ctl_set_jobs) */
};

/* A (job, node)'s limit of class cl: QOS_UNLIMITED for none; at most
 * 10^18 per second (1 EB/s: what split gives at most) so that it converts
 * back exactly as far as float holds it. */
static void set_limit(struct pair *p, int cl, uint64_t v)
{
    if (v == QOS_UNLIMITED) {
        p->cl[cl].limit = INFINITY;
        p->capped &= (uint16_t)~(1u << cl);
    } else {
        p->cl[cl].limit = (float)(v > (uint64_t)1e18 ? (uint64_t)1e18 : v);
        p->capped |= (uint16_t)(1u << cl);
    }
}

static uint64_t limit_of(const struct pair *p, int cl)
{
    return p->capped >> cl & 1 ? (uint64_t)p->cl[cl].limit : QOS_UNLIMITED;
}

static bool capped(const struct pair *p, int cl)
{
    return p->capped >> cl & 1;
}

struct ctl *ctl_new(void)
{
    return calloc(1, sizeof(struct ctl));
}

void ctl_free(struct ctl *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nnodes; i++) {
        free(c->nodes[i].pairs);
        free(c->nodes[i].seen);
    }
    free(c->nodes);
    free(c->jobs);
    free(c->pairs);
    free(c->hash);
    free(c->pj);
    free(c->order);
    free(c->want);
    free(c);
}

static size_t slot_of(uint32_t id, size_t mask)
{
    return (size_t)(id * 2654435761u) & mask;
}

static struct job *lookup(const struct ctl *c, uint32_t id)
{
    if (!c->hash)
        return NULL;
    for (size_t s = slot_of(id, c->hmask);; s = (s + 1) & c->hmask) {
        uint32_t v = c->hash[s];
        if (!v)
            return NULL;
        if (c->jobs[v - 1].id == id)
            return &c->jobs[v - 1];
    }
}

static struct pair *find_pair(const struct ctl *c, const struct job *j, uint32_t node)
{
    size_t lo = j->first, hi = (size_t)j->first + j->npairs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c->pairs[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (size_t)j->first + j->npairs && c->pairs[lo].node == node ? &c->pairs[lo] : NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double as_rate(uint64_t v)
{
    return v == QOS_NOT_GIVEN || v == QOS_UNLIMITED ? INFINITY : (double)v;
}

int ctl_set_jobs(struct ctl *c, const struct ctl_job_spec *specs, size_t njobs, size_t nnodes)
{
    size_t npairs = 0;
    for (size_t i = 0; i < njobs; i++)
        npairs += specs[i].nnodes;
    size_t hsize = 16;
    while (hsize < 2 * njobs)
        hsize *= 2;
    struct job *jobs = calloc(njobs ? njobs : 1, sizeof(*jobs));
    /* Pairs on cache lines of their own: a pair's classes are read a line
     * at a time (struct pair_class). */
    struct pair *pairs = aligned_alloc(_Alignof(struct pair), (npairs ? npairs : 1) * sizeof(*pairs));
    uint32_t *hash = calloc(hsize, sizeof(*hash));
    uint32_t *sorted = malloc((npairs ? npairs : 1) * sizeof(*sorted));
    struct node *nodes = c->nodes;
    if (nnodes > c->nnodes) {
        nodes = realloc(c->nodes, nnodes * sizeof(*nodes));
        if (nodes) {
            memset(nodes + c->nnodes, 0, (nnodes - c->nnodes) * sizeof(*nodes));
            c->nodes = nodes;
            c->nnodes = nnodes;
        }
    }
    struct policy_job *pj = njobs > c->scratch ? malloc(njobs * sizeof(*pj)) : NULL;
    uint32_t *order = njobs > c->scratch ? malloc(2 * njobs * sizeof(*order)) : NULL;
    double *want = njobs > c->scratch ? malloc(njobs * sizeof(*want)) : NULL;
    if (!jobs || !pairs || !hash || !sorted || (nnodes && !nodes) ||
        (njobs > c->scratch && (!pj || !order || !want))) {
        free(jobs);
        free(pairs);
        free(hash);
        free(sorted);
        free(pj);
        free(order);
        free(want);
        return -ENOMEM;
    }
    memset(pairs, 0, (npairs ? npairs : 1) * sizeof(*pairs));
    if (pj) {
        free(c->pj);
        free(c->order);
        free(c->want);
        c->pj = pj;
        c->order = order;
        c->want = want;
        c->scratch = njobs;
    }
    size_t at = 0;
    uint16_t asked = 0;
    for (size_t i = 0; i < njobs; i++) {
        const struct ctl_job_spec *s = &specs[i];
        for (int cl = 0; cl < QOS_NCLASSES; cl++)
            if (!isinf(as_rate(s->asked.v[cl])))
                asked |= (uint16_t)(1u << cl);
        struct job *j = &jobs[i];
        *j = (struct job){ .id = s->id, .uid = s->uid, .weight = s->weight, .asked = s->asked,
                           .first = (uint32_t)at };
        memcpy(sorted, s->nodes, s->nnodes * sizeof(*sorted));
        qsort(sorted, s->nnodes, sizeof(*sorted), cmp_u32);
        const struct job *old = lookup(c, s->id);
        for (uint32_t k = 0; k < s->nnodes; k++) {
            if (sorted[k] >= c->nnodes || (k && sorted[k] == sorted[k - 1]))
                continue;   /* an index out of range, a node named twice */
            struct pair *p = &pairs[at++];
            const struct pair *was = old && old->uid == s->uid ? find_pair(c, old, sorted[k]) : NULL;
            if (was) {
                *p = *was;
            } else {
                *p = (struct pair){ .node = sorted[k] };
                for (int cl = 0; cl < QOS_NCLASSES; cl++)
                    set_limit(p, cl, QOS_UNLIMITED);
            }
            p->job = (uint32_t)i;
            p->job_id = s->id;
            p->uid = s->uid;
        }
        j->npairs = (uint32_t)(at - j->first);
        size_t h = slot_of(j->id, hsize - 1);
        while (hash[h])
            h = (h + 1) & (hsize - 1);
        hash[h] = (uint32_t)i + 1;
    }
    free(sorted);
    free(c->jobs);
    free(c->pairs);
    free(c->hash);
    c->jobs = jobs;
    c->njobs = njobs;
    c->pairs = pairs;
    c->npairs = at;
    c->hash = hash;
    c->hmask = hsize - 1;
    c->asked = asked;
    /* Each node's pairs. A node that had none was not asked for reports:
     * ctl_compute takes it as new (first_ms 0), so an old last report
     * does not make it look down. */
    for (size_t n = 0; n < c->nnodes; n++) {
        if (!c->nodes[n].npairs)
            c->nodes[n].first_ms = 0;
        c->nodes[n].npairs = c->nodes[n].nseen = 0;
    }
    for (size_t i = 0; i < at; i++) {
        struct node *n = &c->nodes[pairs[i].node];
        if (n->npairs == n->cap) {
            uint32_t cap = n->cap ? 2 * n->cap : 8;
            uint32_t *grown = realloc(n->pairs, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            n->pairs = grown;
            n->cap = cap;
        }
        n->pairs[n->npairs++] = (uint32_t)i;
    }
    return 0;
}

/* The step stops doubling at 320% of the limit (x4.2 a period): a job
 * pressing for long asks a few times its limit, not a number that grows
 * past any capacity (the status shows it), and from half an equal share
 * (below it a job takes the equal share at once) it reaches its share in
 * three periods all the same. */
#define CTL_MAX_DOUBLINGS 6

/* Held back in the period just measured, and by its limit: held most of
 * the period whatever it achieved, or held a moment with its rate within
 * half the margin of its limit (ctl.h). Held for a moment but using less
 * than that, its calls came in bursts (or its processes were slowed by
 * something else): it did not want more on average. */
static bool pressing(const struct pair *p, int cl, float held)
{
    return capped(p, cl) && held > CTL_HELD &&
           (held >= CTL_HELD_MOSTLY || p->cl[cl].rate * CTL_AT_LIMIT >= (double)p->cl[cl].limit);
}

void ctl_prefetch_report(const struct ctl *c, uint32_t node)
{
    if (node >= c->nnodes)
        return;
    const struct node *nd = &c->nodes[node];
    for (uint32_t i = 0; i < nd->nseen; i++) {
        if (nd->seen[i] >= c->npairs)
            continue;
        const struct pair *p = &c->pairs[nd->seen[i]];
        __builtin_prefetch(p, 1);
        for (unsigned m = c->reported; m; m &= m - 1)
            __builtin_prefetch(&p->cl[__builtin_ctz(m)], 1);
    }
}

void ctl_take_report(struct ctl *c, uint32_t node, const struct qos_report *rep, int64_t now_ms)
{
    if (node >= c->nnodes)
        return;
    ctl_prefetch_report(c, node);
    struct node *nd = &c->nodes[node];
    nd->last_ms = now_ms;
    if (rep->njobs > nd->seencap) {
        uint32_t *grown = realloc(nd->seen, rep->njobs * sizeof(*grown));
        if (grown) {
            nd->seen = grown;
            nd->seencap = rep->njobs;
        }
    }
    uint32_t seen = 0;
    for (uint32_t i = 0; i < rep->njobs; i++) {
        const struct qos_job_usage *u = &rep->jobs[i];
        struct pair *p = NULL;
        uint32_t hint = i < nd->nseen ? nd->seen[i] : UINT32_MAX;
        if (hint < c->npairs && c->pairs[hint].node == node && c->pairs[hint].job_id == u->job_id) {
            p = &c->pairs[hint];
        } else {
            const struct job *j = lookup(c, u->job_id);
            p = j ? find_pair(c, j, node) : NULL;
        }
        if (i < nd->seencap)
            nd->seen[seen++] = p ? (uint32_t)(p - c->pairs) : UINT32_MAX;
        if (!p)
            continue;
        /* The classes the entry names, and those whose state may still
         * change (a total gone back to 0, a peak fading): the others are 0
         * on both sides and stay so, and their lines are not read. */
        unsigned named = 0;
        for (int cl = 0; cl < QOS_NCLASSES; cl++)
            named |= (unsigned)((u->used[cl] | u->waited_ns[cl]) != 0) << cl;
        c->reported |= (uint16_t)named;
        unsigned work = named | p->touched;
        p->touched = (uint16_t)work;
        double dt = (double)(now_ms - p->last_ms) / 1000.0;
        if (p->samples && dt > 0.001) {
            double per_s = 1 / dt, held_per_ns = per_s / 1e9 / (u->procs ? u->procs : 1);
            double decay = dt * CTL_PEAK_DECAY < 1 ? 1 - dt * CTL_PEAK_DECAY : 0;
            for (unsigned m = work; m; m &= m - 1) {
                int cl = __builtin_ctz(m);
                struct pair_class *k = &p->cl[cl];
                /* Totals that went back: a new budget (an agent restarted). */
                uint64_t du = u->used[cl] >= k->last_used ? u->used[cl] - k->last_used : 0;
                uint64_t dw = u->waited_ns[cl] >= k->last_waited ? u->waited_ns[cl] - k->last_waited : 0;
                k->rate = (float)((double)du * per_s);
                double held_d = (double)dw * held_per_ns;
                float held = held_d > 1 ? 1 : (float)held_d;
                k->peak *= (float)decay;
                if (held <= CTL_HELD && k->rate > k->peak)
                    k->peak = k->rate;
                if (!pressing(p, cl, held))
                    p->pressed[cl] = 0;
                else if (p->pressed[cl] < CTL_MAX_DOUBLINGS)
                    p->pressed[cl]++;
            }
        }
        if (!p->samples || dt > 0.001) {
            for (unsigned m = work; m; m &= m - 1) {
                int cl = __builtin_ctz(m);
                p->cl[cl].last_used = u->used[cl];
                p->cl[cl].last_waited = u->waited_ns[cl];
            }
            p->last_ms = now_ms;
            if (p->samples < 2)
                p->samples++;
            if (p->samples == 2)
                p->restored = false;
        }
        p->procs = u->procs;
    }
    nd->nseen = seen;
}

void ctl_restore_limits(struct ctl *c, uint32_t job_id, uint32_t node, const struct qos_limits *l)
{
    const struct job *j = lookup(c, job_id);
    struct pair *p = j ? find_pair(c, j, node) : NULL;
    if (!p || p->samples >= 2)
        return;
    for (int cl = 0; cl < QOS_NCLASSES; cl++)
        set_limit(p, cl, l->v[cl]);
    p->restored = true;
    c->lift_all = true;
}

static double unit(int cl)
{
    return qos_class_is_data(cl) ? 4096 : 1;
}

/* What a (job, node) would use of class cl, as far as can be told;
 * *grows when that is only a step up from the limit it presses against. */
static double pair_demand(const struct pair *p, int cl, bool *grows)
{
    const struct pair_class *k = &p->cl[cl];
    if (p->samples < 2)
        return p->restored && capped(p, cl) ? (double)k->limit : INFINITY;
    if (p->pressed[cl] && capped(p, cl)) {
        /* Held at its limit: a step up from it (ctl.h), and at least the
         * most it used unhindered lately: a job below its fair share whose
         * usage dipped for a period (its processes descheduled) and was
         * then held at that dip is given its rate back at once. */
        *grows = true;
        double step = (double)k->limit * (1 + CTL_STEP * ldexp(1, p->pressed[cl] - 1));
        double seen = k->peak * CTL_HEADROOM + unit(cl);
        return step > seen ? step : seen;
    }
    return k->rate * CTL_HEADROOM + unit(cl);
}


/* Job j's allocation of class cl over its nodes that report, by demand;
 * under the static policy a job that asked nothing gets the site default
 * on each node as it is (it is per node already). */
static void split(struct ctl *c, const struct job *j, int cl, const struct ctl_settings *s)
{
    double alloc = j->alloc[cl];
    if (!j->up)
        return;
    if (s->policy == QOS_POLICY_STATIC && (j->asked.v[cl] == QOS_NOT_GIVEN ||
                                           j->asked.v[cl] == QOS_UNLIMITED)) {
        for (uint32_t k = 0; k < j->npairs; k++) {
            struct pair *p = &c->pairs[j->first + k];
            if (c->nodes[p->node].up)
                set_limit(p, cl, s->dflt.v[cl] == QOS_NOT_GIVEN ? QOS_UNLIMITED : s->dflt.v[cl]);
        }
        return;
    }
    double floor = alloc * CTL_NODE_FLOOR / j->up, sum = 0;
    for (uint32_t k = 0; k < j->npairs; k++) {
        struct pair *p = &c->pairs[j->first + k];
        if (!c->nodes[p->node].up)
            continue;
        double d = isinf(p->cl[cl].demand) ? alloc : p->cl[cl].demand;
        p->cl[cl].demand = (float)d;   /* from here on: this node's weight */
        sum += d > floor ? d : floor;
    }
    for (uint32_t k = 0; k < j->npairs; k++) {
        struct pair *p = &c->pairs[j->first + k];
        if (!c->nodes[p->node].up)
            continue;
        if (isinf(alloc)) {
            set_limit(p, cl, QOS_UNLIMITED);
            continue;
        }
        double w = p->cl[cl].demand > floor ? p->cl[cl].demand : floor;
        double v = sum > 0 ? alloc * w / sum : alloc / j->up;
        set_limit(p, cl, v < unit(cl) ? (uint64_t)unit(cl) : v > 1e18 ? (uint64_t)1e18 : (uint64_t)v);
    }
}

void ctl_compute(struct ctl *c, const struct ctl_settings *s, int64_t now_ms)
{
    for (size_t n = 0; n < c->nnodes; n++) {
        struct node *nd = &c->nodes[n];
        if (nd->npairs && !nd->first_ms) {
            /* Busy again: its agent is asked from now on, as a new one's. */
            nd->first_ms = now_ms;
            nd->last_ms = 0;
        }
        if (!nd->npairs)
            nd->first_ms = 0;
        /* Never reported yet: up until the timeout, so new jobs count. */
        nd->up = nd->last_ms ? now_ms - nd->last_ms <= s->agent_timeout_ms
                             : nd->first_ms && now_ms - nd->first_ms <= s->agent_timeout_ms;
    }
    /* A class nobody limits (no capacity, nothing asked, no static
     * default) needs no demand and no share: no limit on any node. The
     * work below goes over the limited classes only, and over each job's
     * pairs (contiguous) once per step with every such class, since the
     * pairs, not the arithmetic, are what a cycle's time goes to. */
    bool limited[QOS_NCLASSES];
    int lim[QOS_NCLASSES], nlim = 0;
    for (int cl = 0; cl < QOS_NCLASSES; cl++) {
        limited[cl] = s->policy == QOS_POLICY_STATIC ? !isinf(as_rate(s->dflt.v[cl]))
                                                     : !isinf(as_rate(s->capacity.v[cl]));
        /* Not a pass over every job for each class: that read a cache
         * line per job and class, a quarter of the cycle's compute. */
        limited[cl] = limited[cl] || (c->asked >> cl & 1);
        if (limited[cl])
            lim[nlim++] = cl;
    }
    for (size_t i = 0; i < c->njobs; i++) {
        struct job *j = &c->jobs[i];
        j->procs = j->up = 0;
        for (int cl = 0; cl < QOS_NCLASSES; cl++) {
            j->demand[cl] = limited[cl] ? 0 : INFINITY;
            j->grows[cl] = false;
            j->alloc[cl] = INFINITY;
            j->usage[cl] = 0;
        }
        for (uint32_t k = 0; k < j->npairs; k++) {
            struct pair *p = &c->pairs[j->first + k];
            if (!c->nodes[p->node].up)
                continue;
            j->up++;
            j->procs += p->procs;
            for (int x = 0; x < nlim; x++) {
                int cl = lim[x];
                p->cl[cl].demand = (float)pair_demand(p, cl, &j->grows[cl]);
                j->demand[cl] += p->cl[cl].demand;
            }
            if (p->samples >= 2)
                for (unsigned m = p->touched; m; m &= m - 1) {
                    int cl = __builtin_ctz(m);
                    j->usage[cl] += p->cl[cl].rate;
                }
        }
    }
    /* Limits of a class no longer limited are lifted on every node (one
     * that is down gets them when it is back); new pairs start lifted. */
    for (int cl = 0; cl < QOS_NCLASSES; cl++) {
        if (!limited[cl] && (c->was_limited[cl] || c->lift_all))
            for (size_t i = 0; i < c->npairs; i++)
                set_limit(&c->pairs[i], cl, QOS_UNLIMITED);
        c->was_limited[cl] = limited[cl];
    }
    c->lift_all = false;
    for (int x = 0; x < nlim; x++) {
        int cl = lim[x];
        double capacity = as_rate(s->capacity.v[cl]);
        for (size_t i = 0; i < c->njobs; i++) {
            const struct job *j = &c->jobs[i];
            uint64_t asked = j->asked.v[cl];
            c->pj[i] = (struct policy_job){
                .demand = j->demand[cl], .grows = j->grows[cl], .weight = j->weight, .usage = j->usage[cl],
                .asked = asked == QOS_NOT_GIVEN || asked == QOS_UNLIMITED ? 0 : (double)asked,
                .dflt = as_rate(s->dflt.v[cl]) * (j->up ? j->up : 1),
            };
            if (!j->up)
                c->pj[i].demand = 0;   /* nowhere to be seen: takes nothing */
        }
        policy_allocate(s->policy, capacity, c->pj, c->njobs, c->order, c->want);
        for (size_t i = 0; i < c->njobs; i++)
            c->jobs[i].alloc[cl] = (float)c->pj[i].alloc;
    }
    for (size_t i = 0; i < c->njobs; i++)
        for (int x = 0; x < nlim; x++)
            split(c, &c->jobs[i], lim[x], s);
}

bool ctl_node_busy(const struct ctl *c, uint32_t node)
{
    return node < c->nnodes && c->nodes[node].npairs > 0;
}

bool ctl_node_up(const struct ctl *c, uint32_t node)
{
    return node < c->nnodes && c->nodes[node].up;
}

void ctl_node_message(struct ctl *c, uint32_t node, uint64_t cycle, uint32_t answer_in_ms,
                      struct rpc_writer *w)
{
    const struct node *n = node < c->nnodes ? &c->nodes[node] : NULL;
    uint32_t count = n ? n->npairs : 0;
    /* qos_proto.h's cycle, written in place: no array to build. */
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, cycle);
    rpc_put_u32(w, answer_in_ms);
    rpc_put_u32(w, count);
    for (uint32_t k = 0; k < count; k++) {
        const struct pair *p = &c->pairs[n->pairs[k]];
        uint64_t limit[QOS_NCLASSES];
        for (int cl = 0; cl < QOS_NCLASSES; cl++)
            limit[cl] = limit_of(p, cl);
        rpc_put_u32(w, p->job_id);
        rpc_put_u32(w, p->uid);
        qos_classes_put(w, limit);
    }
}

static uint64_t as_u64(double v)
{
    return isinf(v) || v > 1e18 ? QOS_UNLIMITED : (uint64_t)(v + 0.5);
}

void ctl_status(const struct ctl *c, struct qos_status *s)
{
    s->njobs = (uint32_t)c->njobs;
    s->jobs = calloc(c->njobs ? c->njobs : 1, sizeof(*s->jobs));
    if (!s->jobs) {
        s->njobs = 0;
        return;
    }
    for (size_t i = 0; i < c->njobs; i++) {
        const struct job *j = &c->jobs[i];
        struct qos_job_status *o = &s->jobs[i];
        o->job_id = j->id;
        o->uid = j->uid;
        o->nodes = j->npairs;
        o->nodes_reporting = j->up;
        o->procs = j->procs;
        o->weight_milli = (uint32_t)(j->weight * 1000 > 4e9 ? 4e9 : j->weight * 1000);
        for (int cl = 0; cl < QOS_NCLASSES; cl++) {
            o->asked[cl] = j->asked.v[cl];
            o->demand[cl] = as_u64(j->demand[cl]);
            o->alloc[cl] = as_u64(j->alloc[cl]);
            o->usage[cl] = as_u64(j->usage[cl]);
        }
    }
}

void ctl_each_limit(const struct ctl *c, ctl_limit_fn fn, void *arg)
{
    for (size_t i = 0; i < c->npairs; i++) {
        struct qos_limits l;
        for (int cl = 0; cl < QOS_NCLASSES; cl++)
            l.v[cl] = limit_of(&c->pairs[i], cl);
        fn(arg, c->jobs[c->pairs[i].job].id, c->pairs[i].node, &l);
    }
}
