/* fairshare: the draw for adafsd's service slots (see fairshare.h). */
#include "fairshare.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS 256
/* The weight of a request's cost in its entity's mean (1/8: the mean
 * follows a change of an entity's mix within a few dozen requests). */
#define COST_EWMA 0.125
/* A cross-server correction never weighs an entity more than this many
 * times its share, or less than its inverse: one bad report cannot starve
 * anybody. */
#define CORRECTION_MAX 64.0
/* Entities neither active nor used for this many periods are forgotten. */
#define IDLE_PERIODS 20

struct fair_waiter {
    struct fair_waiter *next;
    pthread_cond_t cv;
    int granted;
    int heap;                        /* fair_try_enter's: freed by fair_leave */
};

struct fair_entity {
    struct fair_entity *next;        /* hash chain */
    uint64_t key;
    uint32_t uid, nodes;
    unsigned active;                 /* requests in service or waiting */
    struct fair_waiter *head, *tail; /* waiting, oldest first */
    size_t wait_at;                  /* index in f->waiting while it has waiters */
    double mean_cost;                /* 0: nothing charged yet */
    double correction;
    double share;                    /* at the last draw it took part in */
    uint64_t used;                   /* cost charged since the last usage take */
    uint64_t taken;                  /* what that take reported */
    unsigned idle;                   /* usage takes without activity */
};

struct fair {
    pthread_mutex_t lock;
    enum fair_policy policy;
    unsigned slots, busy;
    unsigned nactive;                /* entities with active > 0 */
    size_t nwaiters;                 /* requests waiting, all entities */
    struct fair_entity **waiting;    /* entities with waiters */
    size_t nwaiting, waiting_cap;
    double *weights;                 /* scratch of the draw, waiting_cap long */
    /* The deployer's word on jobs' node counts (fair_jobs_load). */
    struct fair_job_nodes { uint64_t job; uint32_t nodes; } *jobs;
    size_t njobs;
    int64_t jobs_mtime_ns;
    uint64_t rng;
    struct fair_entity *buckets[BUCKETS];
};

struct fair *fair_new(enum fair_policy policy, unsigned slots, uint64_t seed)
{
    struct fair *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    pthread_mutex_init(&f->lock, NULL);
    f->policy = policy;
    f->slots = slots ? slots : 1;
    if (!seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)f;
    }
    f->rng = seed ? seed : 1;
    return f;
}

void fair_free(struct fair *f)
{
    if (!f)
        return;
    for (size_t b = 0; b < BUCKETS; b++)
        for (struct fair_entity *e = f->buckets[b], *n; e; e = n) {
            n = e->next;
            free(e);
        }
    free(f->waiting);
    free(f->weights);
    free(f->jobs);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

enum fair_policy fair_get_policy(const struct fair *f)
{
    return f->policy;
}

uint64_t fair_key(const struct fair *f, const struct fair_who *who)
{
    /* The kind in the top bits, so a uid never meets a job id. */
    switch (f->policy) {
    case FAIR_USER: return 1ull << 62 | who->uid;
    case FAIR_GROUP: return 2ull << 62 | who->gid;
    default: return who->job & ~(3ull << 62);
    }
}

static struct fair_entity *lookup(struct fair *f, uint64_t key)
{
    for (struct fair_entity *e = f->buckets[(key * 0x9e3779b97f4a7c15ull) >> 56]; e; e = e->next)
        if (e->key == key)
            return e;
    return NULL;
}

static struct fair_entity *entity_for(struct fair *f, const struct fair_who *who)
{
    uint64_t key = fair_key(f, who);
    struct fair_entity *e = lookup(f, key);
    if (!e) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
        e->key = key;
        e->correction = 1.0;
        size_t b = (key * 0x9e3779b97f4a7c15ull) >> 56;
        e->next = f->buckets[b];
        f->buckets[b] = e;
    }
    /* What the server learnt last is what counts (a job's node count is
     * the deployer's word, not a request's). */
    e->uid = who->uid;
    e->nodes = who->nodes ? who->nodes : 1;
    for (size_t i = 0; who->job && i < f->njobs; i++)
        if (f->jobs[i].job == who->job)
            e->nodes = f->jobs[i].nodes;
    return e;
}

static uint64_t next_random(struct fair *f)
{
    /* xorshift64*: enough for a draw, and cheap under the lock. */
    f->rng ^= f->rng >> 12;
    f->rng ^= f->rng << 25;
    f->rng ^= f->rng >> 27;
    return f->rng * 2685821657736338717ull;
}

/* Each waiting entity's share under the policy, among the waiting ones. */
static void shares(struct fair *f)
{
    for (size_t i = 0; i < f->nwaiting; i++) {
        struct fair_entity *e = f->waiting[i];
        switch (f->policy) {
        case FAIR_SIZE: e->share = e->nodes; break;
        case FAIR_USER_THEN_SIZE: {
            /* users equal: 1 per user, split among its waiting jobs by size */
            double user_nodes = 0;
            for (size_t j = 0; j < f->nwaiting; j++)
                if (f->waiting[j]->uid == e->uid)
                    user_nodes += f->waiting[j]->nodes;
            e->share = e->nodes / user_nodes;
            break;
        }
        default: e->share = 1; break;
        }
    }
}

/* Draws an entity among the waiting ones: weight share x correction /
 * mean cost. One that has not been charged yet is taken at the mean of
 * those that have (or 1). */
static struct fair_entity *draw(struct fair *f)
{
    if (f->nwaiting == 1)
        return f->waiting[0];
    shares(f);
    double known = 0;
    size_t nknown = 0;
    for (size_t i = 0; i < f->nwaiting; i++)
        if (f->waiting[i]->mean_cost > 0) {
            known += f->waiting[i]->mean_cost;
            nknown++;
        }
    double unknown_cost = nknown ? known / (double)nknown : 1;
    double total = 0;
    for (size_t i = 0; i < f->nwaiting; i++) {
        struct fair_entity *e = f->waiting[i];
        double cost = e->mean_cost > 0 ? e->mean_cost : unknown_cost;
        f->weights[i] = e->share * e->correction / cost;
        total += f->weights[i];
    }
    double x = (double)(next_random(f) >> 11) * 0x1.0p-53 * total;
    for (size_t i = 0; i < f->nwaiting; i++) {
        if (x < f->weights[i])
            return f->waiting[i];
        x -= f->weights[i];
    }
    return f->waiting[f->nwaiting - 1];
}

static int queue(struct fair *f, struct fair_entity *e, struct fair_waiter *w)
{
    if (!e->head) {
        if (f->nwaiting == f->waiting_cap) {
            size_t cap = f->waiting_cap ? 2 * f->waiting_cap : 16;
            struct fair_entity **wt = realloc(f->waiting, cap * sizeof(*wt));
            if (!wt)
                return -ENOMEM;
            f->waiting = wt;
            double *ws = realloc(f->weights, cap * sizeof(*ws));
            if (!ws)
                return -ENOMEM;
            f->weights = ws;
            f->waiting_cap = cap;
        }
        e->wait_at = f->nwaiting;
        f->waiting[f->nwaiting++] = e;
        e->head = w;
    } else {
        e->tail->next = w;
    }
    e->tail = w;
    w->next = NULL;
    f->nwaiters++;
    return 0;
}

/* Gives the slot to the oldest waiter of e. */
static void grant(struct fair *f, struct fair_entity *e)
{
    struct fair_waiter *w = e->head;
    e->head = w->next;
    if (!e->head) {
        e->tail = NULL;
        struct fair_entity *last = f->waiting[--f->nwaiting];
        f->waiting[e->wait_at] = last;
        last->wait_at = e->wait_at;
    }
    f->nwaiters--;
    f->busy++;
    w->granted = 1;
    if (!w->heap)
        pthread_cond_signal(&w->cv);
}

/* Hands free slots to drawn waiters. */
static void hand_out(struct fair *f)
{
    while (f->nwaiters > 0 && f->busy < f->slots)
        grant(f, draw(f));
}

/* Counts the request in and takes a slot if one is free (1), or queues w
 * (0). Under the lock. */
static int arrive(struct fair *f, const struct fair_who *who, struct fair_pass *pass,
                  struct fair_waiter *w)
{
    struct fair_entity *e = entity_for(f, who);
    if (!e)
        return -ENOMEM;
    pass->entity = e;
    pass->waiter = NULL;
    if (e->active++ == 0)
        f->nactive++;
    if (f->nwaiters == 0 && f->busy < f->slots) {
        f->busy++;
        return 1;
    }
    if (queue(f, e, w) < 0) {
        if (--e->active == 0)
            f->nactive--;
        return -ENOMEM;
    }
    pass->waiter = w;
    return 0;
}

int fair_enter(struct fair *f, const struct fair_who *who, struct fair_pass *pass)
{
    struct fair_waiter w = { .granted = 0 };
    pthread_mutex_lock(&f->lock);
    int rc = arrive(f, who, pass, &w);
    if (rc == 0) {
        pthread_cond_init(&w.cv, NULL);
        while (!w.granted)
            pthread_cond_wait(&w.cv, &f->lock);
        pthread_cond_destroy(&w.cv);
        pass->waiter = NULL;
    }
    pthread_mutex_unlock(&f->lock);
    return rc < 0 ? rc : 0;
}

int fair_try_enter(struct fair *f, const struct fair_who *who, struct fair_pass *pass)
{
    struct fair_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->heap = 1;
    pthread_mutex_lock(&f->lock);
    int rc = arrive(f, who, pass, w);
    pthread_mutex_unlock(&f->lock);
    if (rc != 0)
        free(w);
    return rc;
}

int fair_granted(struct fair *f, const struct fair_pass *pass)
{
    pthread_mutex_lock(&f->lock);
    int g = !pass->waiter || pass->waiter->granted;
    pthread_mutex_unlock(&f->lock);
    return g;
}

void fair_leave(struct fair *f, struct fair_pass *pass, uint64_t cost)
{
    struct fair_entity *e = pass->entity;
    if (!e)
        return;
    double c = cost ? (double)cost : 1;
    pthread_mutex_lock(&f->lock);
    e->mean_cost = e->mean_cost > 0 ? e->mean_cost + COST_EWMA * (c - e->mean_cost) : c;
    e->used += cost;
    if (--e->active == 0)
        f->nactive--;
    f->busy--;
    hand_out(f);
    pthread_mutex_unlock(&f->lock);
    free(pass->waiter);   /* fair_try_enter's, served */
    pass->entity = NULL;
    pass->waiter = NULL;
}

size_t fair_usage_take(struct fair *f, struct fair_usage *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&f->lock);
    for (size_t b = 0; b < BUCKETS; b++) {
        for (struct fair_entity **p = &f->buckets[b]; *p;) {
            struct fair_entity *e = *p;
            if (e->used == 0 && e->active == 0) {
                e->correction = 1.0;   /* gone quiet: starts afresh */
                if (++e->idle > IDLE_PERIODS) {
                    *p = e->next;
                    free(e);
                    continue;
                }
            } else {
                e->idle = 0;
            }
            if (e->used > 0 && n < max) {
                /* The share it would have with every entity here waiting. */
                double share = f->policy == FAIR_SIZE ? e->nodes : 1;
                if (f->policy == FAIR_USER_THEN_SIZE) {
                    double user_nodes = 0;
                    for (size_t b2 = 0; b2 < BUCKETS; b2++)
                        for (struct fair_entity *o = f->buckets[b2]; o; o = o->next)
                            if (o->uid == e->uid && (o->used > 0 || o->active > 0))
                                user_nodes += o->nodes;
                    share = e->nodes / user_nodes;
                }
                out[n++] = (struct fair_usage){ .key = e->key, .share = share, .used = e->used };
            }
            e->taken = e->used;
            e->used = 0;
            p = &e->next;
        }
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const struct fair_usage *)a)->key, y = ((const struct fair_usage *)b)->key;
    return x < y ? -1 : x > y;
}

void fair_usage_apply(struct fair *f, const struct fair_usage *all, size_t n)
{
    /* Sum by key: entries of one entity come from several servers (sorted
     * first: every server's reports of every entity, n log n). Shares
     * should agree; the largest report wins if they do not. */
    struct fair_usage *sum = malloc((n ? n : 1) * sizeof(*sum));
    if (!sum)
        return;
    if (n) {
        memcpy(sum, all, n * sizeof(*sum));
        qsort(sum, n, sizeof(*sum), by_key);
    }
    size_t m = 0;
    double total_share = 0, total_used = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && sum[m - 1].key == sum[i].key) {
            sum[m - 1].used += sum[i].used;
            if (sum[i].share > sum[m - 1].share)
                sum[m - 1].share = sum[i].share;
        } else {
            sum[m++] = sum[i];
        }
    }
    for (size_t j = 0; j < m; j++) {
        total_share += sum[j].share;
        total_used += (double)sum[j].used;
    }
    /* Each entity's due over the instance is its share of what all used;
     * what it got on other servers counts against it, so its due here is
     * the rest (at least a token of it). The correction turns the local
     * shares into these dues. It is computed from use, not from earlier
     * corrections, so it settles in one period instead of creeping. */
    pthread_mutex_lock(&f->lock);
    double here_share = 0, here_due = 0;
    size_t nhere = 0;
    struct fair_entity **here = malloc((m ? m : 1) * sizeof(*here));
    double *due = malloc((m ? m : 1) * sizeof(*due));
    double *share = malloc((m ? m : 1) * sizeof(*share));
    for (size_t j = 0; here && due && share && j < m && total_used > 0; j++) {
        struct fair_entity *e = lookup(f, sum[j].key);
        if (!e || e->taken == 0)
            continue;
        double global_due = sum[j].share / total_share * total_used;
        double elsewhere = (double)(sum[j].used - (e->taken < sum[j].used ? e->taken
                                                                          : sum[j].used));
        double d = global_due - elsewhere;
        double floor = global_due / CORRECTION_MAX;
        here[nhere] = e;
        due[nhere] = d > floor ? d : floor;
        share[nhere] = sum[j].share;
        here_share += share[nhere];
        here_due += due[nhere];
        nhere++;
    }
    for (size_t k = 0; k < nhere; k++) {
        double c = (due[k] / here_due) / (share[k] / here_share);
        here[k]->correction = c > CORRECTION_MAX ? CORRECTION_MAX
                              : c < 1 / CORRECTION_MAX ? 1 / CORRECTION_MAX : c;
    }
    pthread_mutex_unlock(&f->lock);
    free(here);
    free(due);
    free(share);
    free(sum);
}

double fair_correction(struct fair *f, uint64_t key)
{
    pthread_mutex_lock(&f->lock);
    struct fair_entity *e = lookup(f, key);
    double c = e ? e->correction : 1.0;
    pthread_mutex_unlock(&f->lock);
    return c;
}

uint64_t fair_job_of_cgroup(const char *path, uint32_t uid)
{
    unsigned long long job = 0;
    unsigned u;
    int n = -1;
    const char *rest;
    if (strncmp(path, "/slurm", 6) == 0 && (path[6] == '/' || path[6] == '_')) {
        rest = strchr(path + 6, '/');
        if (!rest || sscanf(rest, "/uid_%u/job_%llu%n", &u, &job, &n) != 2 || n < 0 || u != uid)
            return 0;
    } else if (strncmp(path, "/system.slice/", 14) == 0) {
        const char *scope = strchr(path + 14, '/');
        size_t len = scope ? (size_t)(scope - (path + 14)) : 0;
        static const char unit[] = "slurmstepd.scope";
        if (len < sizeof(unit) - 1 || strncmp(scope - (sizeof(unit) - 1), unit, sizeof(unit) - 1) ||
            (len > sizeof(unit) - 1 && scope[-(int)sizeof(unit)] != '_') ||
            sscanf(scope, "/job_%llu%n", &job, &n) != 1 || n < 0)
            return 0;
        rest = scope;
    } else {
        return 0;
    }
    /* job_ID must be a whole component, its digits only */
    if (rest[n] != '/' && rest[n] != '\0')
        return 0;
    const char *digits = strstr(rest, "/job_") + 5;
    if (digits[0] < '0' || digits[0] > '9')
        return 0;
    return job;
}

int fair_jobs_load(struct fair *f, const char *path)
{
    /* Root's file: a link or another owner's file is not the deployer's. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & 022)) {
        close(fd);
        return -EPERM;
    }
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    pthread_mutex_lock(&f->lock);
    int same = f->jobs_mtime_ns == mtime && f->jobs;
    pthread_mutex_unlock(&f->lock);
    if (same) {
        close(fd);
        return 0;
    }
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        return -ENOMEM;
    }
    struct fair_job_nodes *jobs = NULL;
    size_t n = 0, cap = 0;
    char line[128];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), fp)) {
        uint64_t job;
        unsigned nodes;
        int end = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%" SCNu64 " %u %n", &job, &nodes, &end) != 2 || line[end] || !job ||
            !nodes || nodes > 1000000) {
            rc = -EINVAL;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            struct fair_job_nodes *grown = realloc(jobs, cap * sizeof(*grown));
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            jobs = grown;
        }
        jobs[n++] = (struct fair_job_nodes){ job, nodes };
    }
    fclose(fp);
    if (rc < 0) {
        free(jobs);
        return rc;
    }
    pthread_mutex_lock(&f->lock);
    free(f->jobs);
    f->jobs = jobs ? jobs : calloc(1, sizeof(*jobs));
    f->njobs = n;
    f->jobs_mtime_ns = mtime;
    pthread_mutex_unlock(&f->lock);
    return 0;
}
