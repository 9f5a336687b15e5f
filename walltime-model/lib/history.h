/* history: each user's most recent finished jobs, the model's memory.
 *
 * A fixed ring of HIST_LEN entries per user, in the order the jobs were
 * observed (their end order), in an open-addressing table keyed by uid. */
#ifndef WALLTIME_HISTORY_H
#define WALLTIME_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#define HIST_LEN 64

struct hist_entry {
    int64_t submit, end, req, run, procs, mem;
    uint32_t exe, partition;
    int32_t status;
    double log_margin;      /* the user's margin after learning from this job */
    double price_offset;    /* the user's offset to the site's price of a
                               miss (log) after it */
    double recent;          /* the user's finished jobs, decayed (RECENT_S) */
};

/* A job of the user that was submitted and has not finished yet, with the
 * estimates it was given (ratios of its request), so that its outcome
 * teaches the model what it really told the job. */
struct pending_job {
    int64_t job_id, submit, start;  /* start: -1 until it starts */
    int64_t req, procs;
    double conservative, base, trees; /* the estimate and the median's two experts */
};

/* Pending jobs kept per user: beyond it the oldest submission is dropped
 * (it is then learned from without its record, like a job the model never
 * saw submitted). */
#define PENDING_MAX 1024

struct user_hist {
    int64_t uid;            /* -1: free slot */
    int count;              /* entries held, <= HIST_LEN */
    int head;               /* slot the next entry goes to */
    struct hist_entry e[HIST_LEN];
    struct pending_job *pending;    /* in submission order */
    int npending, pending_cap;
};

struct history {
    struct user_hist *slots;
    size_t cap, used;       /* cap is 0 or a power of two */
};

void history_init(struct history *h);
void history_free(struct history *h);
/* NULL if the user has no history (or uid < 0). */
const struct user_hist *history_find(const struct history *h, int64_t uid);
struct user_hist *history_find_mut(struct history *h, int64_t uid);
/* The user's record, created empty if new; NULL when out of memory or for
 * an unknown user (uid < 0), who has no history. */
struct user_hist *history_get(struct history *h, int64_t uid);
void user_hist_add(struct user_hist *u, const struct hist_entry *e);
/* The user's jobs that had finished by time t (end <= t), newest first: up
 * to max entry pointers into out; returns how many. u may be NULL. This is
 * the one place that decides what "known at submit time" means. */
int user_hist_as_of(const struct user_hist *u, int64_t t,
                    const struct hist_entry **out, int max);
/* The k-th newest entry (k = 0 is the newest), k < u->count. */
const struct hist_entry *user_hist_at(const struct user_hist *u, int k);

/* Adds a pending job (dropping the oldest beyond PENDING_MAX, or a record of
 * the same job id); 0 or -1 when out of memory. */
int user_pending_add(struct user_hist *u, const struct pending_job *p);
/* The pending record of job_id, or NULL. */
struct pending_job *user_pending_find(struct user_hist *u, int64_t job_id);
/* Removes the record p points to. */
void user_pending_remove(struct user_hist *u, struct pending_job *p);

#endif
