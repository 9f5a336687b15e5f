/* walltime_observer.c: the walltime thread and the estimates' use at
 * submit (walltime_observer.h). */
#include "walltime_observer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "predict.h"

struct walltime_job *wt_events_add(struct wt_events *e, enum wt_event ev)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        struct walltime_job *grown = realloc(e->jobs, cap * sizeof(*grown));
        enum wt_event *events = grown ? realloc(e->event, cap * sizeof(*events)) : NULL;
        if (grown)
            e->jobs = grown;
        if (!events) {
            e->dropped++;
            return NULL;
        }
        e->event = events;
        e->cap = cap;
    }
    struct walltime_job *w = &e->jobs[e->n];
    e->event[e->n++] = ev;
    walltime_job_init(w);
    return w;
}

void wt_events_teach(const struct wt_events *e)
{
    for (size_t i = 0; i < e->n; i++) {
        if (e->jobs[i].req_time <= 0)
            continue;
        if (e->event[i] == WT_STARTED)
            predict_started(&e->jobs[i]);
        else if (e->event[i] == WT_FINISHED)
            predict_observe(&e->jobs[i]);
        else
            predict_cancelled(&e->jobs[i]);
    }
}

void wt_events_free(struct wt_events *e)
{
    free(e->jobs);
    free(e->event);
    *e = (struct wt_events){ 0 };
}

bool wt_event_of(const struct wt_job_state *s, time_t since, enum wt_event *ev)
{
    if (s->finished && s->end_time > since)
        *ev = s->start_time && s->end_time >= s->start_time ? WT_FINISHED : WT_CANCELLED;
    else if (s->running && s->start_time > since)
        *ev = WT_STARTED;
    else
        return false;
    return true;
}

void wt_event_times(struct walltime_job *w, enum wt_event ev, const struct wt_job_state *s)
{
    if (ev == WT_CANCELLED)
        return;
    if (w->submit_time >= 0 && s->start_time >= w->submit_time)
        w->wait_time = s->start_time - w->submit_time;
    if (ev == WT_FINISHED) {
        w->run_time = s->end_time - s->start_time;
        w->status = s->complete ? 1 : s->cancelled ? 5 : 0;
    }
}

void wt_observe(struct wt_observer *o)
{
    time_t now = time(NULL);
    struct wt_events e = { 0 };
    o->collect(o->arg, o->observed_until, &e);
    if (e.dropped)
        log_error("out of memory: %zu job events not given to the walltime model", e.dropped);
    wt_events_teach(&e);
    wt_events_free(&e);
    o->observed_until = now;
    predict_maintain(false);
}

static void *observer_main(void *arg)
{
    struct wt_observer *o = arg;
    pthread_mutex_lock(&o->lock);
    while (!o->stopping) {
        pthread_mutex_unlock(&o->lock);
        if (predict_enabled())
            wt_observe(o);
        /* Asked apart from o->lock: neither lock is taken inside the other. */
        time_t interval = o->interval(o->arg);
        pthread_mutex_lock(&o->lock);
        if (!o->stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += interval;
            pthread_cond_timedwait(&o->wake, &o->lock, &ts);
        }
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

int wt_observer_start(struct wt_observer *o)
{
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->wake, NULL);
    o->stopping = false;
    int rc = pthread_create(&o->thread, NULL, observer_main, o);
    o->running = rc == 0;
    return rc;
}

void wt_observer_stop(struct wt_observer *o)
{
    if (!o->running)
        return;
    pthread_mutex_lock(&o->lock);
    o->stopping = true;
    pthread_cond_broadcast(&o->wake);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    o->running = false;
    pthread_cond_destroy(&o->wake);
    pthread_mutex_destroy(&o->lock);
}

char *wt_note(const struct walltime_prediction *p)
{
    char *note;
    if (asprintf(&note, "adafs-walltime: median=%.0fs conservative=%.0fs group=%s",
                 p->median_s, p->conservative_s, walltime_group_name(p->group)) < 0)
        return NULL;
    return note;
}

uint32_t wt_time_min(double conservative_s, uint32_t margin, uint32_t time_limit)
{
    double seconds = conservative_s * (100.0 + margin) / 100.0;
    double minutes = floor((seconds + 59) / 60);
    if (minutes < 1)
        minutes = 1;
    /* Compared before converting: with a margin of up to 1000% the
     * minutes can exceed what a uint32_t holds. */
    return minutes < (double)time_limit ? (uint32_t)minutes : 0;
}
