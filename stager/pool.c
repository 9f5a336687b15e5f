#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct task {
    pool_fn fn;
    void *arg;
};

struct deque {
    pthread_mutex_t lock;
    struct task *ring;
    size_t cap, head, len;    /* ring[head] is the front */
};

struct pool_thread {
    struct pool *pool;
    unsigned index;
    unsigned seed;
    pthread_t tid;
    struct deque dq;
    void *scratch;
    int started;                  /* it has run a task */
};

struct pool {
    unsigned n;
    struct pool_thread *threads;
    _Atomic long outstanding;     /* queued + running tasks, and holds */
    _Atomic unsigned long steals;
    _Atomic unsigned next_outside; /* round robin for pushes from outside */
    pthread_mutex_t idle_lock;
    pthread_cond_t idle_cond;
    _Atomic int sleepers;
    _Atomic uint64_t idle_ns;     /* threads' time waiting for a task */
    _Atomic uint64_t idle_start_ns; /* of that, before a thread's first task */
};

/* At the back (the owner's next task) or the front (a thief's next). */
static int dq_push(struct deque *d, struct task t, int front)
{
    pthread_mutex_lock(&d->lock);
    if (d->len == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct task *r = malloc(cap * sizeof(*r));
        if (!r) {
            pthread_mutex_unlock(&d->lock);
            return -ENOMEM;
        }
        for (size_t i = 0; i < d->len; i++)
            r[i] = d->ring[(d->head + i) % d->cap];
        free(d->ring);
        d->ring = r;
        d->cap = cap;
        d->head = 0;
    }
    if (front) {
        d->head = (d->head + d->cap - 1) % d->cap;
        d->ring[d->head] = t;
        d->len++;
    } else {
        d->ring[(d->head + d->len++) % d->cap] = t;
    }
    pthread_mutex_unlock(&d->lock);
    return 0;
}

static int dq_pop(struct deque *d, int front, struct task *out)
{
    pthread_mutex_lock(&d->lock);
    int got = d->len > 0;
    if (got) {
        if (front) {
            *out = d->ring[d->head];
            d->head = (d->head + 1) % d->cap;
        } else {
            *out = d->ring[(d->head + d->len - 1) % d->cap];
        }
        d->len--;
    }
    pthread_mutex_unlock(&d->lock);
    return got;
}

struct pool *pool_create(unsigned threads, size_t scratch_size)
{
    struct pool *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->n = threads ? threads : 1;
    p->threads = calloc(p->n, sizeof(*p->threads));
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->idle_lock, NULL);
    pthread_cond_init(&p->idle_cond, NULL);
    for (unsigned i = 0; i < p->n; i++) {
        struct pool_thread *t = &p->threads[i];
        t->pool = p;
        t->index = i;
        t->seed = i * 2654435761u + 1;
        pthread_mutex_init(&t->dq.lock, NULL);
        if (scratch_size && !(t->scratch = malloc(scratch_size))) {
            pool_destroy(p);
            return NULL;
        }
    }
    return p;
}

int pool_push(struct pool *p, struct pool_thread *self, pool_fn fn, void *arg)
{
    struct pool_thread *t = self
        ? self : &p->threads[atomic_fetch_add(&p->next_outside, 1) % p->n];
    atomic_fetch_add(&p->outstanding, 1);
    int rc = dq_push(&t->dq, (struct task){ fn, arg }, self == NULL);
    if (rc < 0) {
        atomic_fetch_sub(&p->outstanding, 1);
        return rc;
    }
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->idle_lock);
        pthread_cond_signal(&p->idle_cond);
        pthread_mutex_unlock(&p->idle_lock);
    }
    return 0;
}

/* Removes up to max tasks of fn from d, front first; counts them only
 * (out NULL) if max is 0. */
static unsigned dq_take(struct deque *d, pool_fn fn, void **out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&d->lock);
    size_t keep = 0;
    for (size_t i = 0; i < d->len; i++) {
        struct task t = d->ring[(d->head + i) % d->cap];
        if (t.fn == fn && (max == 0 || n < max)) {
            if (max)
                out[n] = t.arg;
            n++;
            if (max)
                continue;
        }
        d->ring[(d->head + keep++) % d->cap] = t;
    }
    d->len = keep;
    pthread_mutex_unlock(&d->lock);
    return n;
}

unsigned pool_take_back(struct pool *p, pool_fn fn, void **out, unsigned max)
{
    unsigned queued = 0, got = 0;
    for (unsigned i = 0; i < p->n; i++)
        queued += dq_take(&p->threads[i].dq, fn, NULL, 0);
    unsigned want = (queued + 1) / 2 < max ? (queued + 1) / 2 : max;
    for (unsigned i = 0; i < p->n && got < want; i++)
        got += dq_take(&p->threads[i].dq, fn, out + got, want - got);
    for (unsigned i = 0; i < got; i++)
        pool_release(p);          /* the task's count in outstanding */
    return got;
}

void pool_hold(struct pool *p)
{
    atomic_fetch_add(&p->outstanding, 1);
}

void pool_release(struct pool *p)
{
    if (atomic_fetch_sub(&p->outstanding, 1) == 1) {
        pthread_mutex_lock(&p->idle_lock);
        pthread_cond_broadcast(&p->idle_cond);
        pthread_mutex_unlock(&p->idle_lock);
    }
}

static int find_task(struct pool_thread *self, struct task *out)
{
    struct pool *p = self->pool;
    if (dq_pop(&self->dq, 0, out))
        return 1;
    unsigned start = rand_r(&self->seed);
    for (unsigned i = 0; i < p->n; i++) {
        struct pool_thread *victim = &p->threads[(start + i) % p->n];
        if (victim != self && dq_pop(&victim->dq, 1, out)) {
            atomic_fetch_add(&p->steals, 1);
            return 1;
        }
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct pool_thread *self = arg;
    struct pool *p = self->pool;
    long nap_ns = 1000000;
    for (;;) {
        struct task t;
        if (find_task(self, &t)) {
            nap_ns = 1000000;
            self->started = 1;
            t.fn(self, t.arg);
            if (atomic_fetch_sub(&p->outstanding, 1) == 1) {
                pthread_mutex_lock(&p->idle_lock);   /* last task: wake all to exit */
                pthread_cond_broadcast(&p->idle_cond);
                pthread_mutex_unlock(&p->idle_lock);
            }
            continue;
        }
        if (atomic_load(&p->outstanding) == 0)
            break;
        /* Nothing to steal yet but work is running: it may push more. A
         * push wakes us; the timed wait (1 ms, backing off to 16 ms while
         * idle) only bounds a wake-up missed between check and sleep. */
        pthread_mutex_lock(&p->idle_lock);
        atomic_fetch_add(&p->sleepers, 1);
        if (atomic_load(&p->outstanding) != 0) {
            struct timespec ts, t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += nap_ns;
            if (nap_ns < 16000000)
                nap_ns *= 2;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&p->idle_cond, &p->idle_lock, &ts);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            uint64_t ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL +
                                     (t1.tv_nsec - t0.tv_nsec));
            atomic_fetch_add(&p->idle_ns, ns);
            if (!self->started)
                atomic_fetch_add(&p->idle_start_ns, ns);
        }
        atomic_fetch_sub(&p->sleepers, 1);
        pthread_mutex_unlock(&p->idle_lock);
    }
    return NULL;
}

int pool_run(struct pool *p)
{
    unsigned started = 0;
    int rc = 0;
    for (; started < p->n; started++) {
        int e = pthread_create(&p->threads[started].tid, NULL, worker_main,
                               &p->threads[started]);
        if (e) {
            rc = -e;
            break;
        }
    }
    if (started == 0)      /* no thread at all: run the work here */
        worker_main(&p->threads[0]);
    for (unsigned i = 0; i < started; i++)
        pthread_join(p->threads[i].tid, NULL);
    return started ? 0 : rc;
}

void pool_destroy(struct pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++) {
        free(p->threads[i].dq.ring);
        free(p->threads[i].scratch);
        pthread_mutex_destroy(&p->threads[i].dq.lock);
    }
    pthread_mutex_destroy(&p->idle_lock);
    pthread_cond_destroy(&p->idle_cond);
    free(p->threads);
    free(p);
}

void *pool_scratch(struct pool_thread *self)
{
    return self->scratch;
}

unsigned pool_thread_index(const struct pool_thread *self)
{
    return self->index;
}

double pool_idle_start_seconds(const struct pool *p)
{
    return (double)atomic_load(&((struct pool *)p)->idle_start_ns) / 1e9;
}

double pool_idle_seconds(const struct pool *p)
{
    return (double)atomic_load(&((struct pool *)p)->idle_ns) / 1e9;
}

unsigned long pool_steals(const struct pool *p)
{
    return atomic_load((_Atomic unsigned long *)&p->steals);
}
