/* walltime_observer: the plugin's walltime thread, without Slurm.
 *
 * Every AdafsWalltimeLearnInterval seconds it asks the shim what happened
 * to jobs since its last look (started, finished, ended without running:
 * the shim copies them out of slurmctld's job table under its read lock,
 * nothing more), tells the model (predict.h) and lets it retrain, apart
 * from the driver (a training takes seconds: no job's deploy waits for it)
 * and from slurmctld's locks. Also the note and the planning time a job
 * gets from its estimates at submit. Unit tests drive it with made-up
 * events (test_predict.c). */
#ifndef ADAFS_WALLTIME_OBSERVER_H
#define ADAFS_WALLTIME_OBSERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "walltime.h"

/* Jobs whose life moved on since the last look. */
enum wt_event { WT_STARTED, WT_FINISHED, WT_CANCELLED };

struct wt_events {
    struct walltime_job *jobs;
    enum wt_event *event;
    size_t n, cap;
    size_t dropped;             /* events lost for want of memory */
};
/* Room for one more event of kind ev: the job to fill in (initialised),
 * or NULL (counted as dropped) when out of memory. */
struct walltime_job *wt_events_add(struct wt_events *e, enum wt_event ev);
/* Tells the model each event of a job that asked for a time limit. */
void wt_events_teach(const struct wt_events *e);
void wt_events_free(struct wt_events *e);

/* What the shim copies of a job's record for the walltime thread. */
struct wt_job_state {
    bool finished, running;        /* IS_JOB_FINISHED, IS_JOB_RUNNING */
    bool complete, cancelled;      /* IS_JOB_COMPLETE, IS_JOB_CANCELLED */
    time_t start_time, end_time;   /* 0 until it started, ended */
};
/* The event of a job whose life moved on since `since`: it finished (or
 * ended without running: WT_CANCELLED), or it started; false if none. */
bool wt_event_of(const struct wt_job_state *s, time_t since, enum wt_event *ev);
/* What an event of ev tells the model of the job, into w (its submit_time
 * already set): the wait, and for WT_FINISHED the run time and status;
 * nothing for WT_CANCELLED. */
void wt_event_times(struct walltime_job *w, enum wt_event ev, const struct wt_job_state *s);

struct wt_observer {
    /* The events since `since` (the shim's, under slurmctld's job lock). */
    void (*collect)(void *arg, time_t since, struct wt_events *out);
    /* Seconds until the next look (AdafsWalltimeLearnInterval). */
    uint32_t (*interval)(void *arg);
    void *arg;
    /* Until when the model has seen the jobs' lives: after a restart, what
     * it learned before is in its file and is not learned twice. Only the
     * thread uses it once started. */
    time_t observed_until;
    /* The observer's own. */
    pthread_t thread;
    bool running, stopping;
    pthread_mutex_t lock;
    pthread_cond_t wake;
};

/* One look: collect, teach, retrain if due (predict_maintain). */
void wt_observe(struct wt_observer *o);
/* Starts the thread (looking only while predict_enabled()); 0 or an
 * errno. o's hooks set, observed_until from predict_last_end(). */
int wt_observer_start(struct wt_observer *o);
/* Stops and joins it (nothing if it never started). */
void wt_observer_stop(struct wt_observer *o);

/* The note a job gets ("adafs-walltime: median=...s ..."), malloc'd. */
char *wt_note(const struct walltime_prediction *p);
/* The time_min (minutes) backfill may plan a job with: its conservative
 * estimate plus margin percent, at least 1; 0 when that is not below the
 * job's time limit (minutes), which is never touched. */
uint32_t wt_time_min(double conservative_s, uint32_t margin, uint32_t time_limit);

#endif
