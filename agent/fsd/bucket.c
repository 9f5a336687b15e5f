/* bucket: per-job token buckets (see bucket.h). A handful of jobs share a
 * server: a list under one lock is enough. */
#include "bucket.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct bucket {
    struct bucket *next;
    uint64_t job;
    double rate;                     /* bytes per ns; 0: unbounded */
    double tokens;                   /* bytes; below 0: a debt */
    int64_t at_ns;                   /* when tokens was computed */
    uint64_t bytes;                  /* moved so far */
    int64_t waited_ns;
    int listed;                      /* in the last rates file */
};

struct buckets {
    pthread_mutex_t lock;
    struct bucket *list;
    struct bucket *all;              /* "*": the jobs without a line of their own */
};

struct buckets *buckets_new(void)
{
    struct buckets *b = calloc(1, sizeof(*b));
    if (b)
        pthread_mutex_init(&b->lock, NULL);
    return b;
}

void buckets_free(struct buckets *b)
{
    if (!b)
        return;
    for (struct bucket *k = b->list, *n; k; k = n) {
        n = k->next;
        free(k);
    }
    pthread_mutex_destroy(&b->lock);
    free(b);
}

static struct bucket *find(struct buckets *b, uint64_t job, int create, int64_t now_ns)
{
    for (struct bucket *k = b->list; k; k = k->next)
        if (k->job == job)
            return k;
    if (!create)
        return NULL;
    struct bucket *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->job = job;
    k->at_ns = now_ns;
    k->next = b->list;
    b->list = k;
    return k;
}

/* Brings the tokens up to now, capped at one period's worth. */
static void refill(struct bucket *k, int64_t now_ns)
{
    if (now_ns > k->at_ns && k->rate > 0) {
        k->tokens += k->rate * (double)(now_ns - k->at_ns);
        double burst = k->rate * BUCKET_PERIOD_NS;
        if (k->tokens > burst)
            k->tokens = burst;
    }
    if (now_ns > k->at_ns)
        k->at_ns = now_ns;
}

int buckets_set(struct buckets *b, uint64_t job, double rate, int64_t now_ns)
{
    pthread_mutex_lock(&b->lock);
    struct bucket *k = find(b, job, 1, now_ns);
    if (k) {
        if (job == BUCKETS_ALL)
            b->all = k;
        refill(k, now_ns);
        double old = k->rate;
        k->rate = rate > 0 ? rate / 1e9 : 0;
        if (old == 0 && k->rate > 0)
            k->tokens = k->rate * BUCKET_PERIOD_NS;   /* a new bound starts full */
        k->listed = 1;
    }
    pthread_mutex_unlock(&b->lock);
    return k ? 0 : -ENOMEM;
}

int64_t buckets_charge(struct buckets *b, uint64_t job, uint64_t bytes, int64_t now_ns)
{
    int64_t wait = 0;
    pthread_mutex_lock(&b->lock);
    /* Jobs without a rate are counted too: the agent needs their use. */
    struct bucket *k = find(b, job, 1, now_ns);
    if (k) {
        refill(k, now_ns);
        k->bytes += bytes;
        /* Its own bound, else the shared one of the jobs without theirs. */
        struct bucket *g = k->rate > 0 ? k : b->all && b->all->rate > 0 ? b->all : NULL;
        if (g) {
            if (g != k)
                refill(g, now_ns);
            g->tokens -= (double)bytes;
            if (g->tokens < 0)
                wait = (int64_t)(-g->tokens / g->rate);
            k->waited_ns += wait;
        }
    }
    pthread_mutex_unlock(&b->lock);
    return wait;
}

size_t buckets_usage(struct buckets *b, struct bucket_usage *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&b->lock);
    for (struct bucket *k = b->list; k; k = k->next) {
        if (n < max && (k->bytes || k->waited_ns))
            out[n++] = (struct bucket_usage){ k->job, k->bytes, k->waited_ns };
    }
    pthread_mutex_unlock(&b->lock);
    return n;
}

int buckets_load(struct buckets *b, const char *path, int64_t now_ns)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return -errno;
    pthread_mutex_lock(&b->lock);
    for (struct bucket *k = b->list; k; k = k->next)
        k->listed = 0;
    pthread_mutex_unlock(&b->lock);
    char line[256];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), fp)) {
        uint64_t job = BUCKETS_ALL;
        double rate;
        int end = 0;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if ((line[0] == '*' ? sscanf(line + 1, " %lf %n", &rate, &end) != 1 || line[1 + end]
                            : sscanf(line, "%" SCNu64 " %lf %n", &job, &rate, &end) != 2 ||
                                  line[end] || job == BUCKETS_ALL) ||
            !(rate >= 0 && rate < 1e15))
            rc = -EINVAL;
        else
            rc = buckets_set(b, job, rate, now_ns);
    }
    fclose(fp);
    /* Jobs the file no longer lists are no longer bounded. */
    pthread_mutex_lock(&b->lock);
    for (struct bucket *k = b->list; k && rc == 0; k = k->next)
        if (!k->listed)
            k->rate = 0;
    pthread_mutex_unlock(&b->lock);
    return rc;
}
