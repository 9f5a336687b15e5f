/* driver: the plugin's table of instances and the thread that moves them
 * on, without Slurm.
 *
 * The shim (burst_buffer_adafs.c) turns Slurm's calls into changes of the
 * table, under driver.lock, which it takes after slurmctld's job lock (as
 * every thread does), and applies to Slurm what the driver reports back
 * (hooks.apply, called without the driver's lock: it takes slurmctld's job
 * lock itself). Everything between is here:
 *
 * - stepping each job whose answers came, whose retry is due or whose
 *   stage may be overdue (lifecycle.h: a step never waits on a node, so a
 *   job's slow or dead node delays that job only), one job at a time
 *   under the lock, so nothing waits on a whole table's work; the set a
 *   step builds is handed to the transport after the lock (lc_outbox);
 * - saving each record a step changed (bb_store.h: one write under the
 *   lock), and making those changes durable (one fsync for a pass, off
 *   every lock) before Slurm is told of them;
 * - forgetting finished records after KEEP_COMPLETE_S.
 *
 * A set's last answer wakes the driver (driver_wake); otherwise it passes
 * over the table once a second. */
#ifndef ADAFS_DRIVER_H
#define ADAFS_DRIVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "bb_config.h"
#include "bb_job.h"
#include "bb_store.h"
#include "lifecycle.h"
#include "persist.h"

/* Finished instances stay visible in bbstat this long. */
#define KEEP_COMPLETE_S 3600

/* The table's index by job id: slurmctld asks for one job's record under
 * its job lock (bb_p_job_begin, bb_p_job_test_stage_out for every finished
 * job at each purge), and the driver for each job it steps. Fixed: chains
 * stay a few records long up to tens of thousands of live instances, and
 * the index needs no allocation that could fail. */
#define DRIVER_INDEX_BUCKETS 4096

/* What a step means for the Slurm job. */
struct bb_outcome {
    uint32_t job_id;
    int events;                /* LC_* */
    enum bb_phase phase;
    enum bb_failure failure;
    char *error;               /* a copy of the record's */
    char *node;                /* the node a FAIL_NODE names, if any */
    bool released;             /* released by an earlier step */
};

/* What the shim does to the Slurm job for an outcome (configuring: the
 * job is still CONFIGURING; restarts: its restart count). */
struct bb_outcome_plan {
    bool released;     /* shown released (BurstBufferState, no staging reason) */
    bool release;      /* staged in just now: let it start */
    bool requeue;      /* failed before its release: requeued ... */
    bool hold;         /* ... and held (priority 0) */
    bool drain;        /* drain o->node: its agent proved it cannot serve */
    bool comment;      /* failed after its run (stage-out): o->error in its system comment */
    bool kept;         /* a failed stage-out kept: o->error its reason, the job in StageOut */
    bool out_over;     /* torn down: the job is no longer in StageOut */
};
struct bb_outcome_plan driver_outcome_plan(const struct bb_outcome *o, bool configuring,
                                           unsigned restarts);

struct bb_driver_hooks {
    void (*first)(void *arg);                               /* once, before any step */
    void (*apply)(const struct bb_outcome *o, void *arg);   /* without the driver's lock */
    void *arg;
};

/* How long the plugin held locks slurmctld's threads wait for (its job
 * lock, through the shim, and the driver's, which they take under it):
 * the longest hold seen, for bbstat and the benchmarks. */
struct bb_lock_stats {
    uint64_t holds, max_us, total_us;
    const char *max_where;
};
void driver_lock_note(struct bb_lock_stats *st, const char *where, uint64_t us);

struct bb_driver {
    pthread_mutex_t lock;          /* jobs, config: after slurmctld's job lock */
    struct bb_job *jobs;           /* newest instance of a job first */
    /* jobs by job id, chained through id_next: kept by driver_add,
     * driver_forget, driver_replace and driver_reindex, which alone change
     * the table. */
    struct bb_job *by_id[DRIVER_INDEX_BUCKETS];
    struct persist_table persist;  /* persistent instances, owned by their records in jobs */
    struct bb_config config;
    struct bb_store *store;        /* NULL: nothing saved (tests) */
    struct lc_transport transport;
    struct bb_driver_hooks hooks;
    int call_ms, hold_ms;          /* lifecycle's timeouts */
    time_t (*clock)(void);         /* time(NULL), or a test's */
    struct bb_lock_stats held;     /* the driver's lock, as taken by the driver */
    /* The driver's own. */
    pthread_t thread;
    bool running, stopping;
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    bool woken;
};

/* Zeroes d and sets the defaults (LC_CALL_MS, LC_HOLD_MS, time()). */
void driver_init(struct bb_driver *d);
/* Starts the thread: hooks.first, then passes until driver_stop. 0 or an
 * errno. */
int driver_start(struct bb_driver *d);
void driver_stop(struct bb_driver *d);
/* After driver_stop, with d->lock held if d is shared: the journal
 * closed, the records freed (and with them the persistent instances
 * they own), the configuration freed. */
void driver_free_table(struct bb_driver *d);
/* Something changed (a new job, an end, answers): pass soon. Any thread,
 * any lock. */
void driver_wake(struct bb_driver *d);

/* One pass over the table: steps every job that can go on, saves what
 * changed, syncs and applies the outcomes. Returns how many jobs were
 * stepped. For the thread and for tests (without the thread). */
int driver_pass(struct bb_driver *d);

/* Slurm ended the job (ended) or cancelled it (hurry: --hurry, no
 * stage-out): its record goes on to stage-out or teardown at once
 * (lifecycle_job_ended, lifecycle_cancel; requests in flight for the
 * phase left are dropped as they come back), is saved, and the driver
 * woken. A record unreadable after a restart and not yet settled is
 * forgotten instead (its nodes' Epilogs tear down what is left): true,
 * with its reason in why. Takes d->lock. */
bool driver_job_end(struct bb_driver *d, uint32_t job_id, bool ended, bool hurry, char *why,
                    size_t whylen);

/* With d->lock held: */
/* A new record (the newest instance of its job) joins the table, first. */
void driver_add(struct bb_driver *d, struct bb_job *j);
/* The newest record of job_id, or NULL: a few records looked at, however
 * large the table. */
struct bb_job *driver_find(const struct bb_driver *d, uint32_t job_id);
/* d->jobs was set whole (loaded after a restart, or by a test): indexed. */
void driver_reindex(struct bb_driver *d);
/* The record changed: saved (appended). Returns the change's number. */
int64_t driver_save(struct bb_driver *d, const struct bb_job *j);
/* Unlinks, unsaves and frees a record. */
void driver_forget(struct bb_driver *d, struct bb_job *j);
/* Puts fresh in old's place in the table (saved), and frees old. */
void driver_replace(struct bb_driver *d, struct bb_job *old, struct bb_job *fresh);
/* Is an older instance of j's job still on its nodes? A new allocation's
 * instance deploys only once the older ones are gone. */
bool driver_waits_for_older(const struct bb_driver *d, const struct bb_job *j);

#endif
