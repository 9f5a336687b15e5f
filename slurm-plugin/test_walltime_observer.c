/* walltime_observer: the walltime thread tells the model what the shim
 * collected (jobs without a time limit left out) and moves its mark on;
 * the note and planning time a job gets from its estimates; which event a
 * job's record is since the last look, and what it tells of the job. */
#include "predict.h"
#include "walltime_observer.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int collects;
static time_t last_since;
static int64_t req_time;

/* One finished job each look, asking req_time. */
static void collect(void *arg, time_t since, struct wt_events *out)
{
    (void)arg;
    __atomic_add_fetch(&collects, 1, __ATOMIC_SEQ_CST);
    last_since = since;
    struct walltime_job *w = wt_events_add(out, WT_FINISHED);
    w->job_id = (uint32_t)collects;
    w->uid = 1000;
    w->gid = 100;
    w->req_time = req_time;
    w->submit_time = 1000000;
    w->wait_time = 10;
    w->run_time = 600;
    w->status = 1;
}

static uint32_t interval(void *arg)
{
    (void)arg;
    return 1;
}

int main(void)
{
    tap_is_int(wt_time_min(600, 10, 30), 11, "time_min: 600 s + 10% is 11 minutes");
    tap_is_int(wt_time_min(600, 10, 11), 0, "not below the limit: left alone");
    tap_is_int(wt_time_min(1, 0, 30), 1, "at least a minute");
    tap_is_int(wt_time_min(4e9 * 60, 1000, 4000000000u), 0, "beyond a uint32_t: left alone");
    struct walltime_prediction p = { .median_s = 120.4, .conservative_s = 300.6 };
    char *note = wt_note(&p);
    tap_ok(note && strncmp(note, "adafs-walltime: median=120s conservative=301s group=", 51) == 0,
           "the note (%s)", note ? note : "");
    free(note);

    struct wt_events e = { 0 };
    bool all = true;
    for (int i = 0; i < 200; i++) {
        struct walltime_job *w = wt_events_add(&e, i % 2 ? WT_STARTED : WT_CANCELLED);
        all &= w && w->req_time <= 0;
    }
    tap_ok(all && e.n == 200 && e.event[199] == WT_STARTED && !e.dropped,
           "200 events kept, each job initialised");
    wt_events_free(&e);

    /* A job's record, as the shim copies it, since the look at 100. */
    enum wt_event ev = WT_STARTED;
    struct wt_job_state s = { .running = true, .start_time = 150 };
    tap_ok(wt_event_of(&s, 100, &ev) && ev == WT_STARTED, "started since the last look");
    s.start_time = 100;
    tap_ok(!wt_event_of(&s, 100, &ev), "started at the last look: already told");
    s = (struct wt_job_state){ .finished = true, .complete = true, .start_time = 90,
                               .end_time = 200 };
    tap_ok(wt_event_of(&s, 100, &ev) && ev == WT_FINISHED, "finished since, though started before");
    struct walltime_job w;
    walltime_job_init(&w);
    w.submit_time = 60;
    wt_event_times(&w, ev, &s);
    tap_ok(w.wait_time == 30 && w.run_time == 110 && w.status == 1,
           "its wait 30 s, run 110 s, completed");
    s.complete = false;
    s.cancelled = true;
    wt_event_times(&w, ev, &s);
    tap_is_int(w.status, 5, "a cancelled run: status 5");
    s.cancelled = false;
    wt_event_times(&w, ev, &s);
    tap_is_int(w.status, 0, "a failed one: 0");
    walltime_job_init(&w);
    w.submit_time = 100;
    wt_event_times(&w, WT_FINISHED, &s);
    tap_ok(w.wait_time == -1 && w.run_time == 110, "started before its submit time: no wait told");
    s = (struct wt_job_state){ .finished = true, .cancelled = true, .end_time = 200 };
    tap_ok(wt_event_of(&s, 100, &ev) && ev == WT_CANCELLED, "ended without starting: cancelled");
    walltime_job_init(&w);
    w.submit_time = 60;
    wt_event_times(&w, ev, &s);
    tap_ok(w.wait_time == -1 && w.run_time == -1 && w.status == -1,
           "and nothing told of its times");
    s = (struct wt_job_state){ .finished = true, .start_time = 300, .end_time = 200 };
    tap_ok(wt_event_of(&s, 100, &ev) && ev == WT_CANCELLED, "an end before its start: cancelled");
    s.end_time = 100;
    tap_ok(!wt_event_of(&s, 100, &ev), "ended at the last look: already told");
    s = (struct wt_job_state){ .start_time = 150, .end_time = 200 };
    tap_ok(!wt_event_of(&s, 100, &ev), "neither running nor finished (requeued): nothing");

    char path[] = "/tmp/test_walltime_observer.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    unlink(path);
    char err[256];
    tap_is_int(predict_open(path, 0.05, err, sizeof(err)), 0, "a new model");
    struct wt_observer o = { .collect = collect, .interval = interval, .observed_until = 77 };
    req_time = 0;
    wt_observe(&o);
    tap_ok(collects == 1 && last_since == 77 && o.observed_until >= time(NULL) - 1,
           "a look collects since the mark and moves it to now");
    tap_is_int(predict_last_end(), 0, "a job without a time limit is not taught");
    req_time = 3600;
    wt_observe(&o);
    tap_is_int(predict_last_end(), 1000000 + 10 + 600, "one with a limit is");

    tap_is_int(wt_observer_start(&o), 0, "the thread starts");
    for (int i = 0; i < 300 && __atomic_load_n(&collects, __ATOMIC_SEQ_CST) < 4; i++)
        usleep(10000);
    wt_observer_stop(&o);
    int seen = collects;
    tap_ok(seen >= 3, "and looks at once, then every interval (%d looks)", seen);
    usleep(50000);
    tap_ok(collects == seen && !o.running, "stopped, it looks no more");
    wt_observer_stop(&o);
    tap_ok(true, "stopping twice is harmless");
    predict_close();
    unlink(path);
    return tap_done();
}
