#include "driver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_watch.h"
#include "log.h"
#include "persist_job.h"

static time_t wall_clock(void)
{
    return time(NULL);
}

void driver_lock_note(struct bb_lock_stats *st, const char *where, uint64_t us)
{
    /* Under the lock measured (or slurmctld's): plain updates suffice. */
    st->holds++;
    st->total_us += us;
    if (us > st->max_us) {
        st->max_us = us;
        st->max_where = where;
    }
}

void driver_init(struct bb_driver *d)
{
    memset(d, 0, sizeof(*d));
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->wake_lock, NULL);
    pthread_cond_init(&d->wake_cond, NULL);
    d->call_ms = LC_CALL_MS;
    d->hold_ms = LC_HOLD_MS;
    d->clock = wall_clock;
}

void driver_wake(struct bb_driver *d)
{
    pthread_mutex_lock(&d->wake_lock);
    d->woken = true;
    pthread_cond_signal(&d->wake_cond);
    pthread_mutex_unlock(&d->wake_lock);
}

static void wake_cb(void *arg)
{
    driver_wake(arg);
}

int64_t driver_save(struct bb_driver *d, const struct bb_job *j)
{
    int64_t seq = d->store ? bb_store_put(d->store, j) : 0;
    if (seq < 0)
        log_error("job %u: cannot save its state in %s: %s (kept in memory; written whole at the "
                  "next compaction)", j->job_id, bb_store_path(d->store), strerror((int)-seq));
    return seq;
}

/* --- the index by job id (driver.h): each chain in the table's order --- */

static size_t id_bucket(uint32_t job_id)
{
    return (size_t)((job_id * 2654435761u) >> 20) & (DRIVER_INDEX_BUCKETS - 1);
}

static struct bb_job **index_chain(struct bb_driver *d, uint32_t job_id)
{
    return &d->by_id[id_bucket(job_id)];
}

static void index_remove(struct bb_driver *d, const struct bb_job *j)
{
    for (struct bb_job **p = index_chain(d, j->job_id); *p; p = &(*p)->id_next)
        if (*p == j) {
            *p = j->id_next;
            return;
        }
}

void driver_add(struct bb_driver *d, struct bb_job *j)
{
    j->next = d->jobs;
    d->jobs = j;
    struct bb_job **chain = index_chain(d, j->job_id);
    j->id_next = *chain;
    *chain = j;
}

struct bb_job *driver_find(const struct bb_driver *d, uint32_t job_id)
{
    for (struct bb_job *j = d->by_id[id_bucket(job_id)]; j; j = j->id_next)
        if (j->job_id == job_id)
            return j;
    return NULL;
}

void driver_reindex(struct bb_driver *d)
{
    memset(d->by_id, 0, sizeof(d->by_id));
    struct bb_job **tails[DRIVER_INDEX_BUCKETS];
    for (size_t i = 0; i < DRIVER_INDEX_BUCKETS; i++)
        tails[i] = &d->by_id[i];
    for (struct bb_job *j = d->jobs; j; j = j->next) {
        size_t b = id_bucket(j->job_id);
        j->id_next = NULL;
        *tails[b] = j;
        tails[b] = &j->id_next;
    }
}

/* The record at *at (in d->jobs) unlinked, unsaved and freed. */
static void forget_at(struct bb_driver *d, struct bb_job **at)
{
    struct bb_job *j = *at;
    int64_t seq = d->store ? bb_store_drop(d->store, j) : 0;
    if (seq < 0)
        log_error("job %u: cannot save its removal in %s: %s", j->job_id, bb_store_path(d->store),
                  strerror((int)-seq));
    if (j->persist)
        persist_unlink(&d->persist, j->persist);
    index_remove(d, j);
    *at = j->next;
    bb_job_free(j);
}

void driver_forget(struct bb_driver *d, struct bb_job *j)
{
    for (struct bb_job **at = &d->jobs; *at; at = &(*at)->next)
        if (*at == j) {
            forget_at(d, at);
            return;
        }
}

bool driver_job_end(struct bb_driver *d, uint32_t job_id, bool ended, bool hurry, char *why,
                    size_t whylen)
{
    pthread_mutex_lock(&d->lock);
    struct bb_job *j = driver_find(d, job_id);
    bool forgotten = j && j->unreadable;
    if (forgotten) {
        /* Not settled yet (the driver's first look after a restart). */
        snprintf(why, whylen, "%s", j->unreadable);
        driver_forget(d, j);
    } else if (j) {
        j->unclaimed = false;   /* ended before the driver's first look: just tear down */
        if (ended)
            lifecycle_job_ended(j, hurry);
        else
            lifecycle_cancel(j, hurry);
        driver_save(d, j);
        driver_wake(d);
    }
    pthread_mutex_unlock(&d->lock);
    return forgotten;
}

struct bb_outcome_plan driver_outcome_plan(const struct bb_outcome *o, bool configuring,
                                           unsigned restarts)
{
    struct bb_outcome_plan plan = { .release = o->events & LC_RELEASE };
    plan.released = o->released || plan.release;
    bool finished = o->events & LC_FINISHED;
    if (finished && !o->released && o->failure != FAIL_NONE && o->failure != FAIL_CANCELLED &&
        configuring) {
        struct lc_verdict v = lifecycle_verdict(o->failure, restarts);
        plan.requeue = true;
        plan.hold = v.hold;
        /* Its agent proved it cannot serve (lifecycle_classify): it would
         * fail every job. Nothing else drains a node. */
        plan.drain = v.drain && o->node;
    } else if (finished && (o->failure == FAIL_USER || o->failure == FAIL_TRANSIENT) &&
               o->error) {
        plan.comment = true;
    }
    /* stageout_keep.h: Slurm's convention (lua, datawarp) for a buffer
     * kept after a failed stage-out. */
    plan.kept = (o->events & LC_KEPT) && o->error;
    plan.out_over = finished;
    return plan;
}

/* fresh takes old's place in its chain too: a chain keeps the table's
 * order, so the newest instance of a job is found first. */
static void replace_indexed(struct bb_driver *d, struct bb_job *old, struct bb_job *fresh)
{
    if (fresh->job_id != old->job_id) {
        driver_reindex(d);
        return;
    }
    for (struct bb_job **at = index_chain(d, old->job_id); *at; at = &(*at)->id_next)
        if (*at == old) {
            fresh->id_next = old->id_next;
            *at = fresh;
            return;
        }
}

void driver_replace(struct bb_driver *d, struct bb_job *old, struct bb_job *fresh)
{
    for (struct bb_job **p = &d->jobs; *p; p = &(*p)->next)
        if (*p == old) {
            fresh->next = old->next;
            *p = fresh;
            replace_indexed(d, old, fresh);
            if (d->store)
                bb_store_drop(d->store, old);
            driver_save(d, fresh);
            bb_job_free(old);
            return;
        }
}

bool driver_waits_for_older(const struct bb_driver *d, const struct bb_job *j)
{
    if (j->phase != PHASE_DEPLOYING)
        return false;
    for (const struct bb_job *o = d->by_id[id_bucket(j->job_id)]; o; o = o->id_next)
        if (o != j && o->job_id == j->job_id && o->superseded && o->phase != PHASE_COMPLETE)
            return true;
    return false;
}

static bool needs_work(const struct bb_driver *d, const struct bb_job *j)
{
    if (j->unreadable || j->unclaimed || driver_waits_for_older(d, j))
        return false;
    /* A ready persistent instance is looked at too: its usage is polled. */
    return j->phase == PHASE_DEPLOYING || j->phase == PHASE_STAGING_IN ||
           j->phase == PHASE_STAGING_OUT || j->phase == PHASE_TEARDOWN ||
           (j->persist && j->phase == PHASE_RUNNING);
}

/* A record the driver listed, if still in the table. */
struct listed {
    uint64_t key;
    uint32_t job_id;
};

static struct bb_job *find_listed(struct bb_driver *d, struct listed l)
{
    for (struct bb_job *j = d->by_id[id_bucket(l.job_id)]; j; j = j->id_next)
        if (j->key == l.key)
            return j;
    return NULL;
}

struct outcomes {
    struct bb_outcome *o;
    size_t n, cap;
    int64_t seq;                   /* the last change they depend on */
};

static void add_outcome(struct outcomes *out, const struct bb_job *j, int events,
                        enum bb_phase before, bool released_before, int64_t seq)
{
    if (seq > out->seq)
        out->seq = seq;
    /* An instance of an older allocation never acts on the job: its newer
     * instance does. */
    if (j->superseded || !((events & (LC_RELEASE | LC_FINISHED | LC_KEPT)) || j->phase != before))
        return;
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        struct bb_outcome *grown = realloc(out->o, cap * sizeof(*grown));
        if (!grown) {
            log_error("job %u: out of memory: its %s is not shown to Slurm", j->job_id,
                      bb_phase_name(j->phase));
            return;
        }
        out->o = grown;
        out->cap = cap;
    }
    out->o[out->n++] = (struct bb_outcome){
        .job_id = j->job_id, .events = events, .phase = j->phase, .failure = j->failure,
        .error = j->error ? strdup(j->error) : NULL,
        .node = j->failure == FAIL_NODE ? lifecycle_failed_node(j->error) : NULL,
        .released = released_before,
    };
}

/* Takes the lock, counting how long the driver holds it. */
static uint64_t lock_driver(struct bb_driver *d)
{
    pthread_mutex_lock(&d->lock);
    return lock_watch_now_us();
}

static void unlock_driver(struct bb_driver *d, uint64_t since, const char *where)
{
    uint64_t us = lock_watch_now_us() - since, before = d->held.max_us;
    driver_lock_note(&d->held, where, us);
    pthread_mutex_unlock(&d->lock);
    /* slurmctld's threads may wait for this lock under its job lock: a
     * few lines a run, at info level (the plugin logs no debug). */
    if (us > before && us >= 1000)
        log_info("the driver held its lock %llu us in %s, the longest yet",
                  (unsigned long long)us, where);
}

int driver_pass(struct bb_driver *d)
{
    /* The keys to look at, then each job on its own under the lock. */
    uint64_t t = lock_driver(d);
    time_t now = d->clock();
    size_t n = 0, cap = 0;
    struct listed *keys = NULL;
    for (struct bb_job **at = &d->jobs; *at;) {
        struct bb_job *j = *at;
        if (j->phase == PHASE_COMPLETE && now - j->t_done > KEEP_COMPLETE_S && !j->calls) {
            forget_at(d, at);
            continue;
        }
        at = &j->next;
        if (!needs_work(d, j))
            continue;
        if (n == cap) {
            struct listed *grown = realloc(keys, (cap = cap ? cap * 2 : 64) * sizeof(*keys));
            if (!grown)
                break;
            keys = grown;
        }
        keys[n++] = (struct listed){ .key = j->key, .job_id = j->job_id };
    }
    unlock_driver(d, t, "driver: listing jobs");

    struct outcomes out = { 0 };
    struct lc_outbox box = { 0 };
    int stepped = 0;
    bool again = false;
    for (size_t i = 0; i < n; i++) {
        t = lock_driver(d);
        struct bb_job *j = find_listed(d, keys[i]);
        if (!j || !needs_work(d, j)) {
            unlock_driver(d, t, "driver: step");
            continue;
        }
        struct lc_env env = { .cfg = &d->config, .transport = &d->transport, .ready = wake_cb,
                              .ready_arg = d, .now = d->clock(), .call_ms = d->call_ms,
                              .hold_ms = d->hold_ms, .outbox = &box };
        enum bb_phase before = j->phase;
        bool released_before = j->released;
        int events = persist_job_step(&d->persist, d->jobs, j, &env);
        stepped++;
        if (events & LC_RELEASE)
            j->released = true;
        int64_t seq = events & (LC_CHANGED | LC_RELEASE) ? driver_save(d, j) : 0;
        add_outcome(&out, j, events, before, released_before, seq);
        /* A newer instance of the job may have waited for this one. */
        again |= (events & LC_FINISHED) && j->superseded;
        /* A step that moved on without sending anything (a phase with
         * nothing to do, as a stage-out without lines) is followed at
         * once, not at the next tick; one waiting for a retry is not. */
        again |= (events & LC_CHANGED || j->phase != before) && !lifecycle_waiting(j) &&
                 needs_work(d, j) && !(j->retry_at && env.now < j->retry_at);
        unlock_driver(d, t, "driver: step");
        /* The set the step built goes out off the lock (lifecycle.h). */
        lc_outbox_flush(&box, &d->transport);
    }
    lc_outbox_free(&box);
    free(keys);
    /* What Slurm is told must be durable first: a machine crash must not
     * leave Slurm running a job the saved state has not released. */
    int synced = out.seq > 0 && d->store ? bb_store_sync(d->store, out.seq) : 0;
    if (synced < 0)   /* -errno: errno is not the sync's by now */
        log_error("cannot make the saved state durable in %s: %s (Slurm is told anyway; a "
                  "crash before it is written loses those changes)", bb_store_path(d->store),
                  strerror(-synced));
    for (size_t i = 0; i < out.n; i++) {
        if (d->hooks.apply)
            d->hooks.apply(&out.o[i], d->hooks.arg);
        free(out.o[i].error);
        free(out.o[i].node);
    }
    free(out.o);
    if (again)
        driver_wake(d);
    return stepped;
}

static void *driver_main(void *arg)
{
    struct bb_driver *d = arg;
    if (d->hooks.first)
        d->hooks.first(d->hooks.arg);
    for (;;) {
        pthread_mutex_lock(&d->wake_lock);
        bool stop = d->stopping;
        pthread_mutex_unlock(&d->wake_lock);
        if (stop)
            break;
        driver_pass(d);
        pthread_mutex_lock(&d->wake_lock);
        if (!d->woken && !d->stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;   /* retries and stage deadlines are looked at once a second */
            pthread_cond_timedwait(&d->wake_cond, &d->wake_lock, &ts);
        }
        d->woken = false;
        pthread_mutex_unlock(&d->wake_lock);
    }
    return NULL;
}

int driver_start(struct bb_driver *d)
{
    d->stopping = false;
    int rc = pthread_create(&d->thread, NULL, driver_main, d);
    d->running = rc == 0;
    return rc;
}

void driver_stop(struct bb_driver *d)
{
    pthread_mutex_lock(&d->wake_lock);
    d->stopping = true;
    pthread_cond_signal(&d->wake_cond);
    pthread_mutex_unlock(&d->wake_lock);
    if (d->running)
        pthread_join(d->thread, NULL);
    d->running = false;
}

void driver_free_table(struct bb_driver *d)
{
    bb_store_close(d->store);
    d->store = NULL;
    d->persist.head = NULL;   /* its instances are freed with their records */
    memset(d->by_id, 0, sizeof(d->by_id));
    while (d->jobs) {
        struct bb_job *j = d->jobs;
        d->jobs = j->next;
        bb_job_free(j);
    }
    bb_config_free(&d->config);
}
