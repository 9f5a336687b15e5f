/* burst_buffer_adafs.c: the burst_buffer/adafs plugin's Slurm shim.
 *
 * Only what must touch slurmctld lives here: the bb_p_* entry points, job
 * record fields, locks, node addresses and packing for scontrol. Parsing,
 * configuration, job records and the deploy/stage/teardown state machine are
 * plain modules (directive.c, bb_config.c, bb_job.c, lifecycle.c) that unit
 * tests use without slurmctld. Symbols such as info() and xmalloc() resolve
 * against slurmctld when it loads us: the plugin does not link libslurmfull.
 *
 * Slurm 22.05 only knows a job's nodes in bb_p_job_begin(), while adafs lives
 * on those very nodes. So nothing is staged before allocation:
 * bb_p_job_test_stage_in() reports "complete" at once, and bb_p_job_begin()
 * holds the job in CONFIGURING (prolog_running++) while the driver
 * (driver.h) deploys and stages in, then releases it (prolog_running_decr).
 *
 * Locking: slurmctld calls bb_p_* holding its job lock and we then take the
 * driver's lock (drv.lock), so every thread takes them in that order. Under
 * them the shim only records what happened (a new instance, an end, a
 * cancel: one record saved with a write, no fsync) and wakes the driver;
 * nothing waits on an agent or a disk. The driver applies outcomes with
 * the job lock taken here (apply_outcome). How long the plugin holds
 * slurmctld's job lock is measured (held_stats) and shown by bbstat. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/group_cache.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/pack.h"
#include "src/common/read_config.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/state_save.h"

#include "agent_link.h"
#include "bb_config.h"
#include "bb_job.h"
#include "bb_qos.h"
#include "bb_status.h"
#include "bb_store.h"
#include "directive.h"
#include "driver.h"
#include "instance.h"
#include "lifecycle.h"
#include "log_sink.h"
#include "munge_auth.h"
#include "persist_job.h"
#include "placement.h"
#include "predict.h"
#include "size.h"

/* What slurmctld looks up, the only symbols this plugin exports: the
 * plugin is built with hidden visibility, so a name we share with Slurm or
 * slurmctld (hostlist_push once) binds inside the plugin to our own
 * definition, never to theirs (burst_buffer_adafs.sym; the list is in
 * Slurm's src/common/plugin.c and src/slurmctld/burst_buffer.c). */
#pragma GCC visibility push(default)
extern const char plugin_name[], plugin_type[];
extern const uint32_t plugin_version;
extern int init(void);
extern int fini(void);
extern uint64_t bb_p_get_system_size(void);
extern int bb_p_load_state(bool init_config);
extern char *bb_p_get_status(uint32_t argc, char **argv);
extern int bb_p_reconfig(void);
extern int bb_p_state_pack(uid_t uid, buf_t *buffer, uint16_t protocol_version);
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg);
extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg);
extern void bb_p_job_set_tres_cnt(job_record_t *job_ptr, uint64_t *tres_cnt, bool locked);
extern time_t bb_p_job_get_est_start(job_record_t *job_ptr);
extern int bb_p_job_try_stage_in(List job_queue);
extern int bb_p_job_test_stage_in(job_record_t *job_ptr, bool test_only);
extern int bb_p_job_begin(job_record_t *job_ptr);
extern int bb_p_job_revoke_alloc(job_record_t *job_ptr);
extern int bb_p_job_start_stage_out(job_record_t *job_ptr);
extern int bb_p_job_test_post_run(job_record_t *job_ptr);
extern int bb_p_job_test_stage_out(job_record_t *job_ptr);
extern int bb_p_job_cancel(job_record_t *job_ptr);
extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv,
                           char **resp_msg);
extern char *bb_p_xlate_bb_2_tres_str(char *burst_buffer);
#pragma GCC visibility pop

const char plugin_name[] = "burst_buffer adafs plugin";
const char plugin_type[] = "burst_buffer/adafs";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* How Slurm names each phase (scontrol show job: BurstBufferState). */
static const uint16_t slurm_bb_states[] = {
    [PHASE_DEPLOYING] = BB_STATE_ALLOCATING, [PHASE_STAGING_IN] = BB_STATE_STAGING_IN,
    [PHASE_RUNNING] = BB_STATE_RUNNING, [PHASE_STAGING_OUT] = BB_STATE_STAGING_OUT,
    [PHASE_TEARDOWN] = BB_STATE_TEARDOWN, [PHASE_COMPLETE] = BB_STATE_COMPLETE,
};

/* The table, the configuration (drv.config) and the thread moving jobs on. */
static struct bb_driver drv;
static struct agent_link *agents;
static struct session_auth agents_auth;
static char *agents_munge_socket;   /* what agents_auth points to */
static char *state_file;

/* How long the plugin keeps slurmctld's job lock: each bb_p_* called with
 * it, and the plugin's own sections under it. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bb_lock_stats held_stats;

static uint64_t clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Called at the end of a section under slurmctld's job lock that began at
 * `since` (clock_us). */
static void held(const char *where, uint64_t since)
{
    uint64_t us = clock_us() - since;
    pthread_mutex_lock(&held_lock);
    uint64_t before = held_stats.max_us;
    driver_lock_note(&held_stats, where, us);
    pthread_mutex_unlock(&held_lock);
    /* Each new longest hold is logged (a few lines a run): the longest
     * over a slurmctld's life survives its kill -9, unlike bbstat's. */
    if (us > before)
        verbose("%s: slurmctld's job lock held %"PRIu64" us in %s, the longest yet",
                plugin_type, us, where);
}

/* A Slurm call made with slurmctld's job lock held: fn, timed (held). */
static int timed(const char *where, int (*fn)(job_record_t *job_ptr), job_record_t *job_ptr)
{
    uint64_t since = clock_us();
    int rc = fn(job_ptr);
    held(where, since);
    return rc;
}

/* The shared modules log through Slurm's log. */
static void log_to_slurm(int level, const char *line)
{
    if (level == LOG_SINK_ERROR)
        error("%s: %s", plugin_type, line);
    else if (level == LOG_SINK_DEBUG)
        debug("%s: %s", plugin_type, line);
    else
        info("%s: %s", plugin_type, line);
}

static int load_config(bool at_init)
{
    char *path = get_extra_conf_path("burst_buffer.conf");
    char err[1024];
    struct bb_config fresh;
    int rc = bb_config_load(path, &fresh, err, sizeof(err));
    if (rc < 0) {
        error("%s: %s", plugin_type, err);
        bb_config_free(&fresh);
        xfree(path);
        /* A typo must not run with silent defaults: refuse at start, keep the
         * running configuration on reconfigure. */
        return at_init ? SLURM_ERROR : SLURM_SUCCESS;
    }
    if (rc == 1)
        info("%s: %s not found, using built-in defaults", plugin_type, path);
    slurm_mutex_lock(&drv.lock);
    if (!at_init && (fresh.munge_socket ? !agents_munge_socket ||
                                          strcmp(fresh.munge_socket, agents_munge_socket) != 0
                                        : agents_munge_socket != NULL))
        error("%s: AdafsMungeSocket changed: the agents' sessions use the new socket only "
              "after slurmctld restarts", plugin_type);
    bb_config_free(&drv.config);
    drv.config = fresh;
    drv.persist.pool_capacity = drv.config.total_capacity;
    slurm_mutex_unlock(&drv.lock);
    xfree(path);
    return SLURM_SUCCESS;
}

/* --- applying a step's outcome to the Slurm job ----------------------- */

static void set_reason(job_record_t *job_ptr, const char *text)
{
    xfree(job_ptr->state_desc);
    job_ptr->state_desc = xstrdup_printf("%s: %s", plugin_type, text);
    job_ptr->state_reason = FAIL_BURST_BUFFER_OP;
    last_job_update = time(NULL);
}

/* Gives the nodes back and puts the job back in the queue, held when the
 * user must fix something first. Called with the job write lock. */
static void requeue_job(job_record_t *job_ptr, bool hold, const char *why)
{
    last_job_update = time(NULL);
    job_ptr->end_time = last_job_update;
    if (hold)
        job_ptr->priority = 0;
    /* Counted as Slurm's own requeues are: the next failure holds the job,
     * and the job sees SLURM_RESTART_COUNT. */
    job_ptr->restart_cnt++;
    build_cg_bitmap(job_ptr);
    job_ptr->exit_code = 1;
    set_reason(job_ptr, why);
    job_ptr->job_state = JOB_REQUEUE;
    job_completion_logger(job_ptr, true);
    job_ptr->job_state = JOB_PENDING | JOB_COMPLETING;
    deallocate_nodes(job_ptr, false, false, false);
    /* deallocate_nodes() may reset the reason; the user must see ours. */
    set_reason(job_ptr, why);
    schedule_job_save();   /* as release_job(): a restart must not undo it */
}

/* squeue and scontrol show what the job waits for: BurstBufferState, and
 * the reason BurstBufferStageIn until the job is released. Called with the
 * job write lock. */
static void show_phase(job_record_t *job_ptr, enum bb_phase phase, bool released)
{
    xfree(job_ptr->burst_buffer_state);
    job_ptr->burst_buffer_state = xstrdup(bb_state_string(slurm_bb_states[phase]));
    if (!released && (phase == PHASE_DEPLOYING || phase == PHASE_STAGING_IN)) {
        job_ptr->state_reason = WAIT_BURST_BUFFER_STAGING;
        xfree(job_ptr->state_desc);
    } else if (job_ptr->state_reason == WAIT_BURST_BUFFER_STAGING) {
        job_ptr->state_reason = WAIT_NO_REASON;
    }
    last_job_update = time(NULL);
}

/* Lets the job go: its batch script is launched at once. Slurm's own
 * scheduler asks for its job table to be saved when it starts jobs; a
 * release must too. Unsaved, the launch waits for some other change or the
 * 300 s checkpoint, and a slurmctld killed meanwhile brings the job back
 * pending (its running script aborted, the job run again) or configuring
 * (launched again: slurmd refuses the "Duplicate jobid", which drains the
 * node and requeues the job held). */
static void release_job(job_record_t *job_ptr)
{
    if (job_ptr->details && job_ptr->details->prolog_running) {
        prolog_running_decr(job_ptr);
        schedule_job_save();
    }
}

/* Applies a step's outcome to its job, under the job write lock (the
 * driver's hook, called without the driver's lock). */
static void apply_outcome(const struct bb_outcome *o, void *arg)
{
    (void)arg;
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK, .node = WRITE_LOCK, .fed = READ_LOCK };
    lock_slurmctld(job_write_lock);
    uint64_t since = clock_us();
    job_record_t *job_ptr = find_job_record(o->job_id);
    if (!job_ptr) {
        held("apply", since);
        unlock_slurmctld(job_write_lock);
        return;
    }
    bool release = o->events & LC_RELEASE;
    show_phase(job_ptr, o->phase, o->released || release);
    if (release) {
        info("%s: %pJ staged in, releasing it", plugin_type, job_ptr);
        release_job(job_ptr);
    }
    if ((o->events & LC_FINISHED) && !o->released && o->failure != FAIL_NONE &&
        o->failure != FAIL_CANCELLED && IS_JOB_CONFIGURING(job_ptr)) {
        job_ptr->job_state &= ~JOB_CONFIGURING;
        release_job(job_ptr);
        struct lc_verdict v = lifecycle_verdict(o->failure, job_ptr->restart_cnt);
        if (v.drain && o->node) {
            /* Its agent proved it cannot serve (lifecycle_classify): it
             * would fail every job. Nothing else drains a node. */
            char *reason = xstrdup_printf("adafs: %s", o->error);
            drain_nodes(o->node, reason, slurm_conf.slurm_user_id);
            schedule_node_save();
            xfree(reason);
        }
        info("%s: %pJ %s: %s", plugin_type, job_ptr, v.hold ? "held" : "requeued", o->error);
        requeue_job(job_ptr, v.hold, o->error);
    } else if ((o->events & LC_FINISHED) &&
               (o->failure == FAIL_USER || o->failure == FAIL_TRANSIENT) && o->error) {
        /* After the run (stage-out): the job keeps a note of what failed. */
        xfree(job_ptr->system_comment);
        job_ptr->system_comment = xstrdup_printf("%s: %s", plugin_type, o->error);
        last_job_update = time(NULL);
    }
    held("apply", since);
    unlock_slurmctld(job_write_lock);
}

/* --- walltime predictions ---------------------------------------------- */

static void walltime_job_of(const job_record_t *job_ptr, struct walltime_job *w)
{
    walltime_job_init(w);
    w->job_id = job_ptr->job_id;
    w->uid = job_ptr->user_id;
    w->gid = job_ptr->group_id;
    w->account = walltime_key(job_ptr->account);
    w->partition = walltime_key(job_ptr->partition);
    w->exe = walltime_key(job_ptr->name);
    if (job_ptr->time_limit != NO_VAL && job_ptr->time_limit != INFINITE)
        w->req_time = (int64_t)job_ptr->time_limit * 60;
    if (job_ptr->details) {
        w->submit_time = job_ptr->details->submit_time;
        w->procs = job_ptr->details->min_cpus;
        w->nodes = job_ptr->details->min_nodes;
    }
}

/* Jobs whose life moved on since the last look: started, finished, or
 * ended without running. */
enum job_event { EV_STARTED, EV_FINISHED, EV_CANCELLED };

struct finished {
    time_t since;
    struct walltime_job *jobs;
    enum job_event *event;
    size_t n, cap;
    size_t dropped;             /* events lost for want of memory */
};

static int collect_finished(void *x, void *arg)
{
    job_record_t *job_ptr = x;
    struct finished *f = arg;
    enum job_event ev;
    if (IS_JOB_FINISHED(job_ptr) && job_ptr->end_time > f->since)
        ev = job_ptr->start_time && job_ptr->end_time >= job_ptr->start_time ? EV_FINISHED
                                                                             : EV_CANCELLED;
    else if (IS_JOB_RUNNING(job_ptr) && job_ptr->start_time > f->since)
        ev = EV_STARTED;
    else
        return 0;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 64;
        struct walltime_job *grown = realloc(f->jobs, cap * sizeof(*grown));
        enum job_event *events = grown ? realloc(f->event, cap * sizeof(*events)) : NULL;
        if (grown)
            f->jobs = grown;
        if (!events) {
            f->dropped++;
            return 0;
        }
        f->event = events;
        f->cap = cap;
    }
    struct walltime_job *w = &f->jobs[f->n];
    f->event[f->n++] = ev;
    walltime_job_of(job_ptr, w);
    if (ev == EV_CANCELLED)
        return 0;
    if (w->submit_time >= 0 && job_ptr->start_time >= w->submit_time)
        w->wait_time = job_ptr->start_time - w->submit_time;
    if (ev == EV_FINISHED) {
        w->run_time = job_ptr->end_time - job_ptr->start_time;
        w->status = IS_JOB_COMPLETE(job_ptr) ? 1 : IS_JOB_CANCELLED(job_ptr) ? 5 : 0;
    }
    return 0;
}

/* The walltime thread: tells the model what happened to jobs, and
 * retrains it, apart from the driver (a training takes seconds: no job's
 * deploy waits for it) and from slurmctld's locks (the read lock is held
 * only to copy the jobs' events out). */
static pthread_t walltime_thread;
static bool walltime_running, walltime_stopping;
static pthread_mutex_t walltime_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t walltime_wake = PTHREAD_COND_INITIALIZER;

/* Until when the model has seen the jobs' lives: after a restart, what it
 * learned before is in its file and is not learned twice. Only the
 * walltime thread uses it once init has set it. */
static time_t observed_until;

/* Tells the model what happened to jobs since the last call. */
static void observe_finished_jobs(void)
{
    time_t now = time(NULL);
    struct finished f = { .since = observed_until };
    slurmctld_lock_t job_read_lock = { .job = READ_LOCK };
    lock_slurmctld(job_read_lock);
    uint64_t t0 = clock_us();
    list_for_each(job_list, collect_finished, &f);
    held("walltime: finished jobs", t0);
    unlock_slurmctld(job_read_lock);
    if (f.dropped)
        error("%s: out of memory: %zu job events not given to the walltime model",
              plugin_type, f.dropped);
    for (size_t i = 0; i < f.n; i++) {
        if (f.jobs[i].req_time <= 0)
            continue;
        if (f.event[i] == EV_STARTED)
            predict_started(&f.jobs[i]);
        else if (f.event[i] == EV_FINISHED)
            predict_observe(&f.jobs[i]);
        else
            predict_cancelled(&f.jobs[i]);
    }
    free(f.jobs);
    free(f.event);
    observed_until = now;
    predict_maintain(false);
}

static void *walltime_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&walltime_lock);
    while (!walltime_stopping) {
        pthread_mutex_unlock(&walltime_lock);
        if (predict_enabled())
            observe_finished_jobs();
        /* Read apart from walltime_lock: neither lock is taken inside the other. */
        slurm_mutex_lock(&drv.lock);
        time_t interval = drv.config.walltime_learn_interval;
        slurm_mutex_unlock(&drv.lock);
        pthread_mutex_lock(&walltime_lock);
        if (!walltime_stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += interval;
            pthread_cond_timedwait(&walltime_wake, &walltime_lock, &ts);
        }
    }
    pthread_mutex_unlock(&walltime_lock);
    return NULL;
}

/* --- after a restart: what the saved instances become ------------------
 *
 * The plugin's table is saved after every step; slurmctld saves its job
 * table on its own schedule. After a restart (kill -9 included) the two may
 * disagree, and Slurm itself forgets that we held a job: it zeroes
 * prolog_running and calls bb_p_job_begin() again for every job still
 * CONFIGURING (read_config.c, _sync_nodes_to_jobs), then launches any
 * CONFIGURING job whose prolog_running is 0 at its next periodic check.
 * So an instance loaded before its release is "unclaimed" until slurmctld
 * says where its job is: bb_p_job_begin() of the same allocation holds the
 * job again and the stage-in goes on (a stage in flight is polled again,
 * or started again if it was never acknowledged); otherwise the driver's
 * first look, which runs once slurmctld has finished loading (it waits
 * for the job lock that loading holds), settles the rest. */

static struct bb_job *new_instance(job_record_t *job_ptr, char *err, size_t errlen,
                                   bool *users_fault);
static void set_job_env(job_record_t *job_ptr, const struct bb_job *j);

/* Does the job hold the nodes j was deployed on, in the same order? */
static bool same_nodes(const struct bb_job *j, const job_record_t *job_ptr)
{
    if (!job_ptr->node_bitmap || (size_t)bit_set_count(job_ptr->node_bitmap) != j->nnodes)
        return false;
    size_t k = 0;
    for (int i = 0; i < node_record_count; i++) {
        node_record_t *node_ptr = node_record_table_ptr[i];
        if (!node_ptr || !bit_test(job_ptr->node_bitmap, i))
            continue;
        if (k >= j->nnodes || strcmp(node_ptr->name, j->nodes[k].name) != 0)
            return false;
        k++;
    }
    return k == j->nnodes;
}

/* Holds the job in CONFIGURING until the plugin releases it. */
static void hold_configuring(job_record_t *job_ptr, enum bb_phase phase)
{
    job_ptr->details->prolog_running++;
    job_ptr->job_state |= JOB_CONFIGURING;
    show_phase(job_ptr, phase, false);
}

/* Marks an instance of an earlier allocation of its job: torn down unless
 * it is staging out (its results are not lost), never acting on the job
 * again. drv.lock held. */
static void supersede(struct bb_job *old, const char *why)
{
    info("%s: JobId=%u: its instance from an earlier allocation (%s) %s: %s", plugin_type,
         old->job_id, bb_phase_name(old->phase),
         old->phase == PHASE_STAGING_OUT || old->phase == PHASE_RUNNING ?
             "stages out and is torn down first" : "is torn down first", why);
    old->superseded = true;
    old->unclaimed = false;
    lifecycle_job_ended(old, old->phase == PHASE_DEPLOYING || old->phase == PHASE_STAGING_IN);
    driver_save(&drv, old);
    driver_wake(&drv);
}

/* A job whose saved record could not be read, found still being set up: what
 * its instance left on its nodes is torn down and the job is held with the
 * reason (how far its stage-in got is unknown). Returns the teardown
 * record, or NULL (err) when even that cannot be made. drv.lock and the job
 * write lock held. */
static struct bb_job *unreadable_held(job_record_t *job_ptr, const char *why, char *err,
                                      size_t errlen)
{
    bool users_fault;
    struct bb_job *j = new_instance(job_ptr, err, errlen, &users_fault);
    if (!j)
        return NULL;
    bb_job_set_error(j, FAIL_USER, "the plugin's saved state of this job could not be read "
                     "after a slurmctld restart (%s); its stage-in is not known to be complete: "
                     "held, release it to run again", why);
    j->phase = PHASE_TEARDOWN;
    j->hurry = true;
    return j;
}

/* A running job whose saved record could not be read: rebuilt from Slurm's
 * record (request, nodes: all a stage-out and a teardown need; the agents
 * keep the instance file), so its results are still staged out. */
static struct bb_job *unreadable_rebuilt(job_record_t *job_ptr, const char *why)
{
    char err[1024];
    bool users_fault;
    struct bb_job *j = new_instance(job_ptr, err, sizeof(err), &users_fault);
    if (!j) {
        error("%s: %pJ: saved state unreadable (%s) and cannot be rebuilt: %s; its "
              "results are not staged out", plugin_type, job_ptr, why, err);
        xfree(job_ptr->system_comment);
        job_ptr->system_comment = xstrdup_printf("%s: saved state lost after a slurmctld "
                                                 "restart: no stage-out (%s)", plugin_type, why);
        return NULL;
    }
    error("%s: %pJ: saved state unreadable (%s): rebuilt from the job's record for its "
          "stage-out and teardown", plugin_type, job_ptr, why);
    j->phase = PHASE_RUNNING;
    j->released = true;
    for (size_t i = 0; i < j->nnodes; i++)
        j->nodes[i].started = true;
    return j;
}

static void replace_record(struct bb_job *old, struct bb_job *fresh)
{
    for (struct bb_job **p = &drv.jobs; *p; p = &(*p)->next)
        if (*p == old) {
            fresh->next = old->next;
            *p = fresh;
            if (drv.store)
                bb_store_drop(drv.store, old);
            driver_save(&drv, fresh);
            bb_job_free(old);
            return;
        }
}

/* A record saved released and not yet ended whose Slurm job has ended (or
 * is gone): the job ended while slurmctld was down, or just before a crash
 * that lost the record's last save. Slurm does not start its stage-out
 * again, so its end is applied here: without it the record would stay
 * "running" for ever (its instance never torn down, a destroy_persistent
 * of what it mounts refused as in use). Called with both locks. */
static void settle_released(struct bb_job *j)
{
    if (!j->released || j->persist || j->superseded || j->phase > PHASE_RUNNING)
        return;
    job_record_t *job_ptr = find_job_record(j->job_id);
    if (job_ptr && !IS_JOB_FINISHED(job_ptr))
        return;
    info("%s: JobId=%u ended while slurmctld was down (or its record's last save was lost): "
         "staging out and tearing down its instance", plugin_type, j->job_id);
    lifecycle_job_ended(j, false);
    driver_save(&drv, j);
}

/* The driver's first look after a restart (its hook): settles every saved
 * instance bb_p_job_begin() did not claim. Takes the job write lock, then
 * drv.lock. */
static void settle_saved(void *arg)
{
    (void)arg;
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK, .node = WRITE_LOCK, .fed = READ_LOCK };
    lock_slurmctld(job_write_lock);
    uint64_t since = clock_us();
    slurm_mutex_lock(&drv.lock);
    for (struct bb_job *j = drv.jobs, *next; j; j = next) {
        next = j->next;
        if (!j->unclaimed && !j->unreadable) {
            settle_released(j);
            continue;
        }
        job_record_t *job_ptr = find_job_record(j->job_id);
        bool configuring = job_ptr && IS_JOB_CONFIGURING(job_ptr) && job_ptr->details;
        bool running = job_ptr && (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)) &&
                       !configuring;
        if (j->unreadable) {
            struct bb_job *fresh = NULL;
            char err[1024];
            if (configuring && !(fresh = unreadable_held(job_ptr, j->unreadable, err, sizeof(err))))
                error("%s: %pJ: saved state unreadable (%s): %s", plugin_type, job_ptr,
                      j->unreadable, err);
            else if (configuring)
                hold_configuring(job_ptr, PHASE_TEARDOWN);
            else if (running)
                fresh = unreadable_rebuilt(job_ptr, j->unreadable);
            else
                info("%s: JobId=%u: saved state unreadable (%s); the job no longer holds "
                     "nodes: forgotten", plugin_type, j->job_id, j->unreadable);
            if (fresh)
                replace_record(j, fresh);
            else
                driver_forget(&drv, j);
            continue;
        }
        if (configuring && same_nodes(j, job_ptr)) {
            /* Still CONFIGURING, but bb_p_job_begin() was not called
             * (slurmctld's saved prolog_running was already 0). */
            info("%s: %pJ: held again after a slurmctld restart until its stage-in is done",
                 plugin_type, job_ptr);
            j->unclaimed = false;
            hold_configuring(job_ptr, j->phase);
            continue;
        }
        supersede(j, !job_ptr ? "the job is gone" :
                     IS_JOB_PENDING(job_ptr) ? "slurmctld restarted with the job pending" :
                     "slurmctld restarted with the job elsewhere or finished");
    }
    slurm_mutex_unlock(&drv.lock);
    held("settle saved instances", since);
    unlock_slurmctld(job_write_lock);
    driver_wake(&drv);
}

/* --- plugin entry points ---------------------------------------------- */

static void send_to_agents(void *ctx, struct agent_call *call)
{
    agent_link_send(ctx, call);
}

static void send_to_agents_many(void *ctx, struct agent_call **calls, size_t n)
{
    agent_link_send_many(ctx, calls, n);
}

extern int init(void)
{
    log_set_sink(log_to_slurm);
    driver_init(&drv);
    if (load_config(true) != SLURM_SUCCESS)
        return SLURM_ERROR;
    slurm_mutex_lock(&drv.lock);
    const char *dir = drv.config.state_dir ? drv.config.state_dir : slurm_conf.state_save_location;
    state_file = xstrdup_printf("%s/adafs_state", dir);
    /* adafs 0.x kept a JSON table: read once, then saved in the new form. */
    char *old_file = xstrdup_printf("%s/adafs_state.json", dir);
    bool from_old = access(state_file, F_OK) < 0 && access(old_file, F_OK) == 0;
    const char *load_from = from_old ? old_file : state_file;
    char err[1024];
    int lost = bb_job_load(load_from, &drv.jobs, err, sizeof(err));
    if (lost < 0) {
        /* Nothing in it could be read. Refusing to start would stop every
         * job on the cluster; the Epilogs still tear down what its
         * instances left on the nodes. */
        char *aside = xstrdup_printf("%s.bad.%ld", load_from, (long)time(NULL));
        error("%s: %s; moved it to %s and starting without saved instances", plugin_type,
              err, aside);
        if (rename(load_from, aside) < 0)
            error("%s: rename %s: %m", plugin_type, load_from);
        xfree(aside);
    } else if (lost > 0) {
        error("%s: %s", plugin_type, err);
    }
    size_t n = 0;
    for (struct bb_job *j = drv.jobs; j; j = j->next) {
        n++;
        if (j->unreadable)
            error("%s: JobId=%u: %s: the job is held if still being set up, rebuilt if "
                  "running", plugin_type, j->job_id, j->unreadable);
        else if (!j->released && !j->superseded &&
                 (j->phase == PHASE_DEPLOYING || j->phase == PHASE_STAGING_IN ||
                  j->phase == PHASE_TEARDOWN))
            j->unclaimed = true;
    }
    /* Persistent instances live on in their servers' records. */
    persist_job_adopt(&drv.persist, drv.jobs);
    /* The table is written afresh, compacted, as the journal from now on. */
    drv.store = bb_store_open(state_file, drv.jobs, err, sizeof(err));
    if (!drv.store) {
        error("%s: %s", plugin_type, err);
        slurm_mutex_unlock(&drv.lock);
        xfree(old_file);
        return SLURM_ERROR;
    }
    /* One kept session per agent, for all the requests to it. */
    agents_munge_socket = drv.config.munge_socket ? strdup(drv.config.munge_socket) : NULL;
    munge_auth_init(&agents_auth, agents_munge_socket);
    struct agent_link_config link_cfg = { .auth = &agents_auth };
    if (!(agents = agent_link_new(&link_cfg, err, sizeof(err)))) {
        error("%s: %s", plugin_type, err);
        slurm_mutex_unlock(&drv.lock);
        xfree(old_file);
        return SLURM_ERROR;
    }
    drv.transport = (struct lc_transport){ send_to_agents, agents, send_to_agents_many };
    drv.hooks = (struct bb_driver_hooks){ .first = settle_saved, .apply = apply_outcome };
    if (from_old && lost >= 0) {
        char *done = xstrdup_printf("%s.read", old_file);
        if (rename(old_file, done) < 0)
            error("%s: rename %s: %m", plugin_type, old_file);
        else
            info("%s: read %s (adafs 0.x) into %s; kept it as %s", plugin_type, old_file,
                 state_file, done);
        xfree(done);
    }
    xfree(old_file);
    if (drv.config.walltime_model &&
        predict_open(drv.config.walltime_model, drv.config.walltime_miss_rate, err, sizeof(err)) < 0)
        error("%s: walltime predictions are OFF: %s", plugin_type, err);
    observed_until = predict_enabled() ? predict_last_end() : 0;
    if (!drv.config.sysmap_db)
        info("%s: no AdafsSysmapDB: servers use AdafsStoragePath=%s and AdafsNodeCapacity",
             plugin_type, drv.config.storage_path);
    else if (placement_open(drv.config.sysmap_db, err, sizeof(err)) < 0)
        error("%s: sysmap database unusable, using AdafsStoragePath=%s: %s", plugin_type,
              drv.config.storage_path, err);
    slurm_mutex_unlock(&drv.lock);
    int rc = driver_start(&drv);
    if (rc != 0) {
        error("%s: cannot start the driver thread: %s", plugin_type, strerror(rc));
        return SLURM_ERROR;
    }
    walltime_stopping = false;
    walltime_running = pthread_create(&walltime_thread, NULL, walltime_main, NULL) == 0;
    info("%s: init: adafs %s, directive #%s, chunk %"PRIu64" bytes, agents on port %s%d, %zu saved instances",
         plugin_type, PACKAGE_VERSION_ADAFS, drv.config.directive, drv.config.chunk_size,
         drv.config.agent_port_offset ? "slurmd+" : "",
         drv.config.agent_port_offset ? drv.config.agent_port_offset : drv.config.agent_port, n);
    return SLURM_SUCCESS;
}

extern int fini(void)
{
    pthread_mutex_lock(&walltime_lock);
    walltime_stopping = true;
    pthread_cond_broadcast(&walltime_wake);
    pthread_mutex_unlock(&walltime_lock);
    if (walltime_running)
        pthread_join(walltime_thread, NULL);
    walltime_running = false;
    driver_stop(&drv);
    /* Requests in flight end (cancelled) before the records they belong to. */
    agent_link_free(agents);
    agents = NULL;
    slurm_mutex_lock(&drv.lock);
    bb_store_close(drv.store);
    drv.store = NULL;
    drv.persist.head = NULL;   /* its instances are freed with their records */
    while (drv.jobs) {
        struct bb_job *j = drv.jobs;
        drv.jobs = j->next;
        bb_job_free(j);
    }
    bb_config_free(&drv.config);
    xfree(state_file);
    free(agents_munge_socket);
    agents_munge_socket = NULL;
    slurm_mutex_unlock(&drv.lock);
    if (predict_enabled())
        predict_maintain(true);
    predict_close();
    placement_close();
    log_set_sink(NULL);
    return SLURM_SUCCESS;
}

extern uint64_t bb_p_get_system_size(void)
{
    return drv.config.total_capacity / (1024 * 1024);   /* MB, as Slurm expects */
}

extern int bb_p_load_state(bool init_config)
{
    return SLURM_SUCCESS;
}

/* scontrol show bbstat [JOBID]: the instances and their timings. */
extern char *bb_p_get_status(uint32_t argc, char **argv)
{
    uint32_t only = 0;
    if (argc > 0 && argv[0]) {
        char *end;
        unsigned long id = strtoul(argv[0], &end, 10);
        if (*end || id == 0)
            return xstrdup_printf("%s: '%s' is not a job id\n", plugin_type, argv[0]);
        only = (uint32_t)id;
    }
    slurm_mutex_lock(&drv.lock);
    if (drv.config.flags & BBCONF_PRIVATE_DATA) {
        /* Slurm does not say who asks for bbstat: with PrivateData nobody
         * sees other jobs' users, servers or errors (which name paths). */
        size_t active = 0;
        for (struct bb_job *j = drv.jobs; j; j = j->next)
            active += j->phase != PHASE_COMPLETE;
        char *out = xstrdup_printf("%s: per-job status is private (Flags=PrivateData); %zu "
                                   "instances active. Users: scontrol show job; administrators: "
                                   "%s and slurmctld's log\n", plugin_type, active,
                                   state_file ? state_file : "the plugin's state file");
        slurm_mutex_unlock(&drv.lock);
        return out;
    }
    uint64_t since = clock_us();
    char *text = bb_status_text(drv.jobs, only);
    char *persistent = only ? NULL : persist_status_text(&drv.persist);
    driver_lock_note(&drv.held, "bbstat", clock_us() - since);
    struct bb_lock_stats table = drv.held;
    /* qosd's status file is read off the table lock. */
    char *qos_dir = drv.config.qos.paths && drv.config.qos.state_dir ?
                    strdup(drv.config.qos.state_dir) : NULL;
    slurm_mutex_unlock(&drv.lock);
    char *qos = qos_dir ? bb_qos_text(qos_dir, only) : NULL;
    free(qos_dir);
    char *out = xstrdup(text ? text : "out of memory\n");
    free(text);
    if (persistent && persistent[0])
        xstrfmtcat(out, "Persistent instances:\n%s", persistent);
    free(persistent);
    if (qos)
        xstrcat(out, qos);
    free(qos);
    if (!only) {
        /* For administrators and the benchmarks: nothing of the plugin
         * should keep slurmctld's job lock long. */
        pthread_mutex_lock(&held_lock);
        struct bb_lock_stats job = held_stats;
        pthread_mutex_unlock(&held_lock);
        xstrfmtcat(out, "Plugin: JobLockHeldMaxUs=%"PRIu64"(%s) JobLockHolds=%"PRIu64
                   " JobLockHeldMeanUs=%"PRIu64" TableLockHeldMaxUs=%"PRIu64"(%s)\n",
                   job.max_us, job.max_where ? job.max_where : "-", job.holds,
                   job.holds ? job.total_us / job.holds : 0, table.max_us,
                   table.max_where ? table.max_where : "-");
    }
    struct walltime_prediction p;
    if (only && predict_lookup(only, &p))
        xstrfmtcat(out, "JobId=%u Walltime: Median=%.0fs Conservative=%.0fs Group=%s "
                   "MissProbability=%.3f\n", only, p.median_s, p.conservative_s,
                   walltime_group_name(p.group), p.miss_probability);
    return out;
}

extern int bb_p_reconfig(void)
{
    return load_config(false);
}

/* The layout scontrol's unpacking of a burst buffer plugin's state expects:
 * name, configuration, buffers, usage. adafs has one implicit pool. */
extern int bb_p_state_pack(uid_t uid, buf_t *buffer, uint16_t protocol_version)
{
    uint32_t flags = 0, count = 0;
    uint64_t used = 0;
    slurm_mutex_lock(&drv.lock);
    if (drv.config.flags & BBCONF_PRIVATE_DATA)
        flags |= BB_FLAG_PRIVATE_DATA;
    if (drv.config.flags & BBCONF_TEARDOWN_FAILURE)
        flags |= BB_FLAG_TEARDOWN_FAILURE;
    bool see_all = !(drv.config.flags & BBCONF_PRIVATE_DATA) || validate_operator(uid);
    /* Servers of jobs and persistent instances; a job that mounts an
     * instance reserves nothing of its own. */
    for (struct bb_job *j = drv.jobs; j; j = j->next)
        if (j->phase != PHASE_COMPLETE && j->node_capacity) {
            used += j->node_capacity * j->nnodes;
            if (see_all || j->uid == uid)
                count++;
        }
    uint64_t total = drv.config.total_capacity ? drv.config.total_capacity
                                               : drv.config.node_capacity * node_record_count;
    packstr("adafs", buffer);
    packstr(drv.config.allow_users_str, buffer);
    packstr(NULL, buffer);                      /* create_buffer */
    packstr(NULL, buffer);                      /* default_pool */
    packstr(drv.config.deny_users_str, buffer);
    packstr(NULL, buffer);                      /* destroy_buffer */
    pack32(flags, buffer);
    packstr(NULL, buffer);                      /* get_sys_state */
    packstr(NULL, buffer);                      /* get_sys_status */
    pack64(drv.config.chunk_size, buffer);          /* granularity */
    pack32(0, buffer);                          /* pool count */
    pack32(drv.config.other_timeout, buffer);
    packstr(NULL, buffer);                      /* start_stage_in */
    packstr(NULL, buffer);                      /* start_stage_out */
    packstr(NULL, buffer);                      /* stop_stage_in */
    packstr(NULL, buffer);                      /* stop_stage_out */
    pack32(drv.config.stage_in_timeout, buffer);
    pack32(drv.config.stage_out_timeout, buffer);
    pack64(total, buffer);                      /* total_space */
    pack64(used, buffer);                       /* unfree_space */
    pack64(used, buffer);                       /* used_space */
    pack32(drv.config.other_timeout, buffer);       /* validate_timeout */
    pack32(count, buffer);                      /* buffer records */
    for (struct bb_job *j = drv.jobs; j; j = j->next) {
        if (j->phase == PHASE_COMPLETE || !j->node_capacity || !(see_all || j->uid == uid))
            continue;
        const struct persist_instance *p = j->persist;
        /* A persistent instance shows as Name=NAME (scontrol prints a
         * buffer without a job id so), what its servers hold and how they
         * share themselves (default: each agent's --fair-policy) in its pool. */
        char pool[96];
        if (p) {
            char size[32];
            size_format(p->used, size, sizeof(size));
            snprintf(pool, sizeof(pool), "persistent(used=%s,fair_share=%s)", size,
                     p->fair_share[0] ? p->fair_share : "default");
        }
        packstr(NULL, buffer);                  /* account */
        pack32(0, buffer);                      /* array_job_id */
        pack32(p ? 0 : NO_VAL, buffer);         /* array_task_id */
        pack_time(j->t_begin, buffer);
        pack32(p ? 0 : j->job_id, buffer);
        char *name = p ? (char *)p->name : NULL, *pool_name = p ? pool : NULL;
        packstr(name, buffer);                  /* name */
        packstr(NULL, buffer);                  /* partition */
        packstr(pool_name, buffer);             /* pool */
        packstr(NULL, buffer);                  /* qos */
        pack64(p ? p->capacity : j->node_capacity * j->nnodes, buffer);
        pack16(slurm_bb_states[j->phase], buffer);
        pack32(j->uid, buffer);
    }
    pack32(0, buffer);                          /* usage records */
    slurm_mutex_unlock(&drv.lock);
    return SLURM_SUCCESS;
}

/* At submit: reject malformed directives with a message naming the token,
 * and requests that cannot fit; store the canonical form. */
/* Is group root among uid's groups (Slurm's cached lookup, as slurmd's)? */
static bool in_group_root(uid_t uid, gid_t gid)
{
    gid_t *gids = NULL;
    int n = group_cache_lookup(uid, gid, NULL, &gids);
    bool found = false;
    for (int i = 0; i < n && !found; i++)
        found = gids[i] == 0;
    xfree(gids);
    return found;
}

extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg)
{
    struct bb_request req = { 0 };
    char err[1024];

    slurm_mutex_lock(&drv.lock);
    char *prefix = xstrdup(drv.config.directive);
    uint64_t node_capacity = drv.config.node_capacity;
    uint64_t site_bw = drv.config.max_bandwidth, site_mdops = drv.config.max_mdops;
    struct qos_limits site_qos_max = drv.config.qos.max;
    bool site_qos = drv.config.qos.paths != NULL;
    slurm_mutex_unlock(&drv.lock);

    int found = directive_parse(prefix, job_desc->script, job_desc->burst_buffer,
                                &req, err, sizeof(err));
    int rc = SLURM_SUCCESS;
    if (found < 0) {
        *err_msg = xstrdup(err);
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
    if (found == 0) {
        if (job_desc->burst_buffer && job_desc->burst_buffer[0]) {
            *err_msg = xstrdup_printf("--bb given without a #%s request", prefix);
            rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        }
        goto out;
    }
    if (job_desc->user_id == 0) {
        *err_msg = xstrdup("user root can not use adafs burst buffers: submit as the job's user");
        rc = ESLURM_BURST_BUFFER_PERMISSION;
        goto out;
    }
    if (job_desc->group_id == 0) {
        /* The servers and stager run with the job's group: never root's. */
        *err_msg = xstrdup("group root (gid 0) can not use adafs burst buffers: submit with "
                           "another group (sbatch --gid or newgrp)");
        rc = ESLURM_BURST_BUFFER_PERMISSION;
        goto out;
    }
    if (in_group_root(job_desc->user_id, job_desc->group_id)) {
        /* The agent gives servers and stagers the user's groups and refuses
         * group root among them: the job would fail on every node. */
        char *name = uid_to_string(job_desc->user_id);
        *err_msg = xstrdup_printf("user %s is a member of group root (gid 0), which adafs "
                                  "servers and stagers never run with: such users can not use "
                                  "adafs burst buffers", name);
        xfree(name);
        rc = ESLURM_BURST_BUFFER_PERMISSION;
        goto out;
    }
    slurm_mutex_lock(&drv.lock);
    if (bb_config_check_user(&drv.config, job_desc->user_id, err, sizeof(err)) < 0) {
        *err_msg = xstrdup(err);
        rc = ESLURM_BURST_BUFFER_PERMISSION;
    }
    slurm_mutex_unlock(&drv.lock);
    if (rc != SLURM_SUCCESS)
        goto out;

    /* A job may stage more gently than the site allows, never harder. */
    if (site_bw && req.max_bw > site_bw) {
        *err_msg = xstrdup_printf("#%s max_bw=%"PRIu64" bytes/s is above this site's maximum of "
                                  "%"PRIu64" bytes/s per node (AdafsMaxBandwidth)",
                                  prefix, req.max_bw, site_bw);
        rc = ESLURM_BURST_BUFFER_LIMIT;
        goto out;
    }
    if (site_mdops && req.max_mdops > site_mdops) {
        *err_msg = xstrdup_printf("#%s max_mdops=%"PRIu64" is above this site's maximum of "
                                  "%"PRIu64" metadata operations/s per node "
                                  "(AdafsMaxMetadataRate)", prefix, req.max_mdops, site_mdops);
        rc = ESLURM_BURST_BUFFER_LIMIT;
        goto out;
    }
    /* A job may ask for its own I/O demand toward the PFS, up to the site's maximum. */
    if (qos_limits_any(&req.qos) &&
        (!site_qos || qos_limits_check_max(&req.qos, &site_qos_max, err, sizeof(err)) < 0)) {
        *err_msg = xstrdup_printf("#%s qos (%s line %d): %s", prefix, req.qos_origin, req.qos_line,
                                  site_qos ? err : "this site has no I/O quality of service "
                                  "(AdafsQosPaths is not set)");
        if (site_qos)
            xstrcat(*err_msg, " (AdafsQosMax)");
        rc = ESLURM_BURST_BUFFER_LIMIT;
        goto out;
    }
    /* A stage line may name an instance ($ADAFS_PERSISTENT_<NAME>/): one
     * the job must mount, in a request with no line of its own for it too. */
    if (req.npersist || req.nstages) {
        slurm_mutex_lock(&drv.lock);
        size_t persistent_nodes = drv.config.persistent_nodes.count;
        slurm_mutex_unlock(&drv.lock);
        if (directive_check_persistent(prefix, &req, persistent_nodes, err, sizeof(err)) < 0) {
            *err_msg = xstrdup(err);
            rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
            goto out;
        }
        /* Who may use, create or destroy what: the user's groups as
         * slurmd gives them to the job. */
        gid_t *gids = NULL;
        int ngids = group_cache_lookup(job_desc->user_id, job_desc->group_id, NULL, &gids);
        uint32_t *groups = calloc(ngids > 0 ? (size_t)ngids : 1, sizeof(*groups));
        for (int i = 0; groups && i < ngids; i++)
            groups[i] = gids[i];
        xfree(gids);
        slurm_mutex_lock(&drv.lock);
        enum bb_access access = req.access ? req.access : drv.config.access;
        int refused = persist_job_check_submit(&drv.persist, prefix, &req,
                                               access == BB_ACCESS_FUSE || access == BB_ACCESS_BOTH,
                                               job_desc->user_id, groups,
                                               groups && ngids > 0 ? (size_t)ngids : 0,
                                               err, sizeof(err));
        slurm_mutex_unlock(&drv.lock);
        free(groups);
        if (refused < 0) {
            *err_msg = xstrdup(err);
            rc = ESLURM_BURST_BUFFER_PERMISSION;
            goto out;
        }
    }
    uint32_t nodes = job_desc->min_nodes == NO_VAL || job_desc->min_nodes == 0 ? 1 : job_desc->min_nodes;
    if (req.capacity && (req.capacity + nodes - 1) / nodes > node_capacity) {
        *err_msg = xstrdup_printf("#%s capacity=%"PRIu64" bytes needs more than the %"PRIu64
                                  " bytes a node may give (AdafsNodeCapacity) on %u node(s)",
                                  prefix, req.capacity, node_capacity, nodes);
        rc = ESLURM_BURST_BUFFER_LIMIT;
        goto out;
    }
    if (req.capacity && placement_enabled()) {
        char *part_name = job_desc->partition ? xstrdup(job_desc->partition) : NULL;
        part_record_t *part = part_name ? find_part_record(part_name) : default_part_loc;
        if (part && placement_check_fit(part->nodes, part->name, req.capacity, err,
                                        sizeof(err)) < 0) {
            *err_msg = xstrdup_printf("#%s %s", prefix, err);
            rc = ESLURM_BURST_BUFFER_LIMIT;
            xfree(part_name);
            goto out;
        }
        xfree(part_name);
    }
    char *canonical = bb_request_format(prefix, &req);
    if (!canonical) {
        *err_msg = xstrdup("out of memory formatting the burst buffer request");
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
    xfree(job_desc->burst_buffer);
    job_desc->burst_buffer = xstrdup(canonical);
    free(canonical);
    debug("%s: accepted request for uid %u:\n%s", plugin_type, job_desc->user_id,
          job_desc->burst_buffer);
out:
    bb_request_free(&req);
    xfree(prefix);
    return rc;
}

/* Every job, with or without a burst buffer, gets run-time estimates. */
static int job_validate2(job_record_t *job_ptr, char **err_msg)
{
    if (!predict_enabled())
        return SLURM_SUCCESS;
    struct walltime_job w;
    walltime_job_of(job_ptr, &w);
    if (w.req_time <= 0)
        return SLURM_SUCCESS;   /* no limit asked: nothing to cap or improve */
    struct walltime_prediction p;
    char err[256];
    if (predict_job(&w, &p, err, sizeof(err)) < 0) {
        debug("%s: %pJ: no walltime prediction: %s", plugin_type, job_ptr, err);
        return SLURM_SUCCESS;
    }
    slurm_mutex_lock(&drv.lock);
    bool set_time_min = drv.config.walltime_set_time_min;
    uint32_t margin = drv.config.walltime_margin;
    char where = drv.config.walltime_comment[0];   /* 'a'dmin_comment, 'c'omment, 'n'one */
    slurm_mutex_unlock(&drv.lock);
    char *note = xstrdup_printf("adafs-walltime: median=%.0fs conservative=%.0fs group=%s",
                                p.median_s, p.conservative_s, walltime_group_name(p.group));
    char **field = where == 'a' ? &job_ptr->admin_comment : where == 'c' ? &job_ptr->comment : NULL;
    if (field && *field && **field)
        xstrfmtcat(*field, "; %s", note);
    else if (field)
        *field = xstrdup(note);
    /* Backfill may plan with the conservative estimate plus the admin's
     * margin; the limit that kills the job is never touched. */
    if (set_time_min && job_ptr->time_min == 0) {
        double seconds = p.conservative_s * (100.0 + margin) / 100.0;
        double minutes = floor((seconds + 59) / 60);
        if (minutes < 1)
            minutes = 1;
        /* Compared before converting: with a margin of up to 1000% the
         * minutes can exceed what a uint32_t holds. */
        if (minutes < (double)job_ptr->time_limit)
            job_ptr->time_min = (uint32_t)minutes;
    }
    debug("%s: %pJ %s", plugin_type, job_ptr, note);
    xfree(note);
    return SLURM_SUCCESS;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg)
{
    uint64_t since = clock_us();
    int rc = job_validate2(job_ptr, err_msg);
    held("bb_p_job_validate2", since);
    return rc;
}

extern void bb_p_job_set_tres_cnt(job_record_t *job_ptr, uint64_t *tres_cnt, bool locked)
{
}

extern time_t bb_p_job_get_est_start(job_record_t *job_ptr)
{
    return time(NULL);
}

extern int bb_p_job_try_stage_in(List job_queue)
{
    return SLURM_SUCCESS;
}

/* Nothing can be staged before the nodes are known: see the file comment. */
extern int bb_p_job_test_stage_in(job_record_t *job_ptr, bool test_only)
{
    return 1;
}

static bool has_bb(const job_record_t *job_ptr)
{
    return job_ptr->burst_buffer && job_ptr->burst_buffer[0];
}

/* Sets name=value in the job's extra environment, replacing an earlier
 * value (a job that begins again after a restart has them saved). */
static void add_env(job_record_t *job_ptr, const char *name, const char *value)
{
    struct job_details *d = job_ptr->details;
    size_t len = strlen(name);
    for (uint32_t i = 0; i < d->env_cnt; i++)
        if (d->env_sup[i] && strncmp(d->env_sup[i], name, len) == 0 && d->env_sup[i][len] == '=') {
            xfree(d->env_sup[i]);
            d->env_sup[i] = xstrdup_printf("%s=%s", name, value);
            return;
        }
    xrecalloc(d->env_sup, d->env_cnt + 2, sizeof(char *));
    d->env_sup[d->env_cnt++] = xstrdup_printf("%s=%s", name, value);
}

/* The job's processes under I/O quality of service (qos_conf.h): the
 * interposer's settings, and LD_PRELOAD for a job without a file system. */
static void add_qos_env(job_record_t *job_ptr, bool preload)
{
    char *env[3];
    int n = qos_conf_job_env(&drv.config.qos, env);
    for (int i = 0; i < n; i++) {
        char *eq = strchr(env[i], '=');
        *eq = '\0';
        add_env(job_ptr, env[i], eq + 1);
        free(env[i]);
    }
    if (n && preload && drv.config.preload && drv.config.preload[0])
        add_env(job_ptr, "LD_PRELOAD", drv.config.preload);
}

/* True when the job asks for I/O quality of service only. */
static bool qos_only(const job_record_t *job_ptr)
{
    struct bb_request req = { 0 };
    char err[256];
    bool only = directive_parse(drv.config.directive, NULL, job_ptr->burst_buffer, &req, err,
                                sizeof(err)) > 0 && bb_request_qos_only(&req);
    bb_request_free(&req);
    return only;
}

/* What the job's processes need to find their file system. */
static void set_job_env(job_record_t *job_ptr, const struct bb_job *j)
{
    if (!persist_job_mounts(j))
        return;   /* it only destroys a persistent instance */
    const struct persist_spec *persistent = persist_job_mount(&j->req);
    char name[PERSIST_ENV_MAX];
    if (persistent && !persist_job_own_servers(j)) {
        persist_env_name(persistent->name, name);
        add_env(job_ptr, name, j->mount);
    }
    /* Further mounts (its own and instances, or several instances): each
     * at <mount>.<NAME>, all listed for the interposer (preload/pathres.h). */
    char *mounts = NULL;
    for (size_t k = 0; persist_job_further(&j->req, k); k++) {
        const char *iname = persist_job_further(&j->req, k)->name;
        char *m = persist_job_further_mount(j->mount, iname);
        char file[PATH_MAX];
        if (!m || instance_named_file_path(file, sizeof(file), drv.config.mount_prefix,
                                           j->job_id, iname) < 0) {
            error("%s: %pJ: the mount or instance file of persistent instance %s does not "
                  "fit in a path under %s", plugin_type, job_ptr, iname, drv.config.mount_prefix);
            free(m);
            continue;
        }
        persist_env_name(iname, name);
        add_env(job_ptr, name, m);
        xstrfmtcat(mounts, "%s%s=%s", mounts ? ":" : "", m, file);
        free(m);
    }
    if (mounts)
        add_env(job_ptr, "ADAFS_MOUNTS", mounts);
    xfree(mounts);
    /* An instance's servers make every user but its owner prove their uid
     * with a munge credential: from the site's munged. */
    if (persistent && drv.config.munge_socket)
        add_env(job_ptr, "ADAFS_MUNGE_SOCKET", drv.config.munge_socket);
    add_env(job_ptr, "ADAFS_MOUNT", j->mount);
    add_env(job_ptr, "ADAFS_INSTANCE", j->instance_path);
    /* access=fuse: every program goes through the kernel mount. */
    if (drv.config.preload && drv.config.preload[0] && j->req.access != BB_ACCESS_FUSE)
        add_env(job_ptr, "LD_PRELOAD", drv.config.preload);
}

/* Expands %-symbols in every stage path of req for this job. */
static int expand_symbols(job_record_t *job_ptr, struct bb_request *req, const char *user,
                          const char *first_node)
{
    struct symbol_values v = {
        .job_id = job_ptr->job_id,
        .array_job_id = job_ptr->array_task_id != NO_VAL ? job_ptr->array_job_id : 0,
        .array_task_id = job_ptr->array_task_id != NO_VAL ? job_ptr->array_task_id : 0,
        .user = user, .job_name = job_ptr->name, .first_node = first_node,
    };
    for (size_t i = 0; i < req->nstages; i++) {
        char **fields[2] = { &req->stages[i].source, &req->stages[i].destination };
        for (int f = 0; f < 2; f++) {
            char *x = directive_expand(*fields[f], &v);
            if (!x)
                return -1;
            free(*fields[f]);
            *fields[f] = x;
        }
    }
    return 0;
}

/* The job's instance, from its request and nodes; NULL with err (and
 * *users_fault set when only the user can fix it) if it cannot have one. */
static struct bb_job *new_instance(job_record_t *job_ptr, char *err, size_t errlen,
                                   bool *users_fault)
{
    *users_fault = false;
    struct bb_job *j = bb_job_new(job_ptr->job_id);
    if (!j)
        return NULL;
    j->uid = job_ptr->user_id;
    j->gid = job_ptr->group_id;
    char *user = uid_to_string_or_null(job_ptr->user_id);
    j->user = strdup(user ? user : "");
    xfree(user);
    if (directive_parse(drv.config.directive, NULL, job_ptr->burst_buffer, &j->req, err, errlen) < 0) {
        *users_fault = true;
        bb_job_free(j);
        return NULL;
    }
    /* A job that mounts a persistent instance or only destroys one has no
     * servers of its own (persist_job.h). */
    bool own = persist_request_own_servers(&j->req);
    j->nnodes = bit_set_count(job_ptr->node_bitmap);
    j->nodes = calloc(j->nnodes ? j->nnodes : 1, sizeof(*j->nodes));
    size_t k = 0;
    for (int i = 0; j->nodes && i < node_record_count; i++) {
        node_record_t *node_ptr = node_record_table_ptr[i];
        if (!node_ptr || !bit_test(job_ptr->node_bitmap, i))
            continue;
        int port = drv.config.agent_port_offset ? node_ptr->port + drv.config.agent_port_offset
                                            : drv.config.agent_port;
        struct node_place place;
        char why[512];
        placement_node(node_ptr->name, drv.config.storage_path, &place, why, sizeof(why));
        if (why[0])
            info("%s: %pJ: %s", plugin_type, job_ptr, why);
        if (place.from_sysmap && place.available &&
            place.available < j->req.capacity / (uint64_t)bit_set_count(job_ptr->node_bitmap))
            info("%s: %pJ: node %s has %"PRIu64" bytes free by sysmap, less than the job's share",
                 plugin_type, job_ptr, node_ptr->name, place.available);
        /* The job's CPUs on the node: its stager's threads follow them
         * (bb_stage_threads). job_resrcs lists the allocation's nodes in
         * node_bitmap's order, as this loop walks them. */
        const job_resources_t *res = job_ptr->job_resrcs;
        unsigned cpus = res && res->cpus && k < res->nhosts ? res->cpus[k] : 0;
        j->nodes[k++] = (struct bb_node){ .name = strdup(node_ptr->name),
                                          .agent_host = strdup(node_ptr->comm_name),
                                          .agent_port = port, .storage = strdup(place.storage),
                                          .numa_node = place.numa_node, .cpus = cpus };
    }
    j->nnodes = k;
    uint64_t capacity = !own ? 0 : j->req.capacity ? j->req.capacity : drv.config.default_capacity;
    j->node_capacity = (capacity + k - 1) / (k ? k : 1);
    if (j->node_capacity > drv.config.node_capacity) {
        /* Checked at submit for the nodes asked then; the owner may have
         * shrunk the job since (scontrol update NumNodes). */
        snprintf(err, errlen, "capacity=%"PRIu64" on %zu node(s) needs %"PRIu64" bytes per node, "
                 "more than AdafsNodeCapacity=%"PRIu64, capacity, k, j->node_capacity,
                 drv.config.node_capacity);
        *users_fault = true;
        bb_job_free(j);
        return NULL;
    }
    j->chunk_size = j->req.chunk_size ? j->req.chunk_size : drv.config.chunk_size;
    /* Fixed now: a later change of the site's default leaves the job as it began. */
    if (!j->req.access && (own || persist_job_mount(&j->req)))
        j->req.access = drv.config.access;
    int rc = bb_job_make_secrets(j);
    if (rc < 0) {
        snprintf(err, errlen, "getrandom: %s", strerror(-rc));
        bb_job_free(j);
        return NULL;
    }
    j->storage = strdup(drv.config.storage_path);
    char path[PATH_MAX];
    if (instance_mount_path(path, sizeof(path), drv.config.mount_prefix, job_ptr->job_id) == 0)
        j->mount = strdup(path);
    if (instance_file_path(path, sizeof(path), drv.config.mount_prefix, job_ptr->job_id,
                           INSTANCE_FILE) == 0)
        j->instance_path = strdup(path);
    if (expand_symbols(job_ptr, &j->req, j->user, k ? j->nodes[0].name : "") < 0 ||
        !j->mount || !j->instance_path || !j->storage) {
        snprintf(err, errlen, "out of memory");
        bb_job_free(j);
        return NULL;
    }
    j->t_begin = time(NULL);
    j->phase = PHASE_DEPLOYING;
    return j;
}

/* --- persistent instances (persist_job.h) ------------------------------- */

/* AdafsPersistentNodes as this slurmctld knows them (malloc'd; their
 * names point into Slurm's node table). */
static size_t persistent_nodes(struct persist_node **out)
{
    const struct hostlist *hl = &drv.config.persistent_nodes;
    struct persist_node *v = calloc(hl->count ? hl->count : 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; v && i < hl->count; i++) {
        node_record_t *node_ptr = find_node_record(hl->names[i]);
        if (!node_ptr) {
            error("%s: AdafsPersistentNodes: node %s is not in slurm.conf", plugin_type,
                  hl->names[i]);
            continue;
        }
        v[n++] = (struct persist_node){
            .name = node_ptr->name, .agent_host = node_ptr->comm_name,
            .agent_port = drv.config.agent_port_offset ? node_ptr->port +
                          drv.config.agent_port_offset : drv.config.agent_port };
    }
    *out = v;
    return n;
}

/* The running or pending jobs, other than self, that mount instance name:
 * all counted, the first 8 named (persist_check_destroy names no more). */
struct users_of {
    const char *name;
    uint32_t self;
    uint32_t ids[8];
    size_t n;
};

static int find_users(void *x, void *arg)
{
    job_record_t *job_ptr = x;
    struct users_of *u = arg;
    if (job_ptr->job_id == u->self || !job_ptr->burst_buffer ||
        !(IS_JOB_PENDING(job_ptr) || IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)))
        return 0;
    struct bb_request req = { 0 };
    char err[256];
    if (directive_parse(drv.config.directive, NULL, job_ptr->burst_buffer, &req, err,
                        sizeof(err)) > 0) {
        if (persist_job_mounts_name(&req, u->name)) {
            if (u->n < sizeof(u->ids) / sizeof(u->ids[0]))
                u->ids[u->n] = job_ptr->job_id;
            u->n++;
        }
    }
    bb_request_free(&req);
    return 0;
}

/* At job begin, the job's persistent lines that act at once: a destroy
 * (refused while other jobs use the instance) and a create (the instance
 * and the record of its servers). The job itself then waits in the
 * driver until they are settled. 0, or -1 with the reason (the job is
 * held). drv.lock and the job write lock held. */
static int persist_begin(job_record_t *job_ptr, struct bb_job *j, char *err, size_t errlen)
{
    /* Destroys first: a refused one creates nothing. */
    for (size_t i = 0; i < j->req.npersist; i++) {
        const struct persist_spec *s = &j->req.persist[i];
        if (s->op != PERSIST_DESTROY)
            continue;
        struct users_of u = { .name = s->name, .self = job_ptr->job_id };
        list_for_each(job_list, find_users, &u);
        struct bb_job *servers = persist_job_destroy(&drv.persist, drv.jobs, s->name, j->uid,
                                                     u.ids, u.n, err, errlen);
        if (!servers)
            return -1;
        info("%s: %pJ destroys persistent instance %s: tearing down its servers", plugin_type,
             job_ptr, s->name);
        driver_save(&drv, servers);
    }
    for (size_t i = 0; i < j->req.npersist; i++) {
        const struct persist_spec *s = &j->req.persist[i];
        if (s->op != PERSIST_CREATE)
            continue;
        /* A requeued creator: the instance its earlier run created lives
         * on (it mounts it), one torn down is forgotten. */
        struct bb_job *old = persist_job_record(drv.jobs, s->name, j->job_id);
        if (old && old->phase != PHASE_COMPLETE)
            continue;
        if (old && old->phase == PHASE_COMPLETE)
            driver_forget(&drv, old);
        gid_t gid = 0;
        if (s->group && gid_from_string(s->group, &gid) < 0) {
            snprintf(err, errlen, "create_persistent name=%s access=group:%s: no such group",
                     s->name, s->group);
            return -1;
        }
        struct persist_node *nodes;
        size_t n = persistent_nodes(&nodes);
        struct bb_job *servers = nodes ?
            persist_job_servers(&drv.persist, drv.jobs, s, j, gid, nodes, n, drv.config.storage_path,
                                drv.config.chunk_size, time(NULL), err, errlen) : NULL;
        free(nodes);
        if (!servers) {
            if (!nodes)
                snprintf(err, errlen, "out of memory");
            return -1;
        }
        servers->next = drv.jobs;
        drv.jobs = servers;
        driver_save(&drv, servers);
        info("%s: %pJ creates persistent instance %s (id %u): deploying %zu servers of %"PRIu64
             " bytes", plugin_type, job_ptr, s->name, servers->job_id, servers->nnodes,
             servers->node_capacity);
    }
    return 0;
}

/* bb_p_job_begin() for a job that already has a record: 1 when that settled
 * it (held again, or let go on), 0 when a new instance is to be made, -1
 * (reason set) when the job cannot begin now. drv.lock held. */
static int begin_again(job_record_t *job_ptr, struct bb_job *old)
{
    /* Pending: a new allocation. Not pending: slurmctld restarted and
     * asks again for a job still CONFIGURING on the nodes it had. */
    bool restart = !IS_JOB_PENDING(job_ptr);
    char err[1024];
    if (old->unreadable && restart) {
        struct bb_job *j = unreadable_held(job_ptr, old->unreadable, err, sizeof(err));
        if (!j) {
            error("%s: %pJ: saved state unreadable (%s): %s", plugin_type, job_ptr,
                  old->unreadable, err);
            set_reason(job_ptr, err);
            return -1;
        }
        error("%s: %pJ: %s", plugin_type, job_ptr, j->error);
        replace_record(old, j);
        driver_wake(&drv);
        hold_configuring(job_ptr, PHASE_TEARDOWN);
        return 1;
    }
    if (old->unreadable) {
        info("%s: %pJ: its unreadable saved record (%s) is of an earlier allocation: "
             "starting afresh", plugin_type, job_ptr, old->unreadable);
        driver_forget(&drv, old);
        return 0;
    }
    if (restart && !old->superseded && same_nodes(old, job_ptr)) {
        if (old->released) {
            /* Staged in before the restart; slurmctld's saved state had
             * not caught up with the release. */
            info("%s: %pJ: staged in before the slurmctld restart: may run", plugin_type,
                 job_ptr);
            return 1;
        }
        if (old->phase == PHASE_DEPLOYING || old->phase == PHASE_STAGING_IN ||
            old->phase == PHASE_TEARDOWN) {
            /* In teardown before its release, it failed: held until then,
             * when the failure holds or requeues it. */
            info("%s: %pJ: still %s after a slurmctld restart: held until %s", plugin_type,
                 job_ptr, bb_phase_name(old->phase),
                 old->phase == PHASE_TEARDOWN ? "it is torn down" : "its stage-in is done");
            old->unclaimed = false;
            driver_wake(&drv);
            /* Slurm saved them with the job; set again all the same. */
            set_job_env(job_ptr, old);
            hold_configuring(job_ptr, old->phase);
            return 1;
        }
    }
    if (old->phase == PHASE_COMPLETE && !old->superseded) {
        driver_forget(&drv, old);   /* a requeued job's finished record */
        return 0;
    }
    if (old->phase != PHASE_COMPLETE && !old->superseded)
        supersede(old, restart ? "slurmctld restarted with the job on other nodes"
                               : "the job was given new nodes");
    return 0;
}

/* The nodes are known: hold the job while its file system deploys and
 * stages in. Called with the job write lock held. */
static int job_begin(job_record_t *job_ptr)
{
    if (!has_bb(job_ptr))
        return SLURM_SUCCESS;
    if (!job_ptr->job_resrcs || !job_ptr->node_bitmap || !job_ptr->details) {
        error("%s: %pJ has no node allocation", plugin_type, job_ptr);
        return SLURM_ERROR;
    }
    char err[1024];
    slurm_mutex_lock(&drv.lock);
    if (qos_only(job_ptr)) {
        /* No file system to deploy: only its processes' QoS settings. */
        add_qos_env(job_ptr, true);
        slurm_mutex_unlock(&drv.lock);
        info("%s: %pJ asks for I/O quality of service only: no file system", plugin_type, job_ptr);
        return SLURM_SUCCESS;
    }
    struct bb_job *old = bb_job_find(drv.jobs, job_ptr->job_id);
    int settled = old ? begin_again(job_ptr, old) : 0;
    if (settled) {
        slurm_mutex_unlock(&drv.lock);
        return settled > 0 ? SLURM_SUCCESS : SLURM_ERROR;
    }
    bool users_fault;
    struct bb_job *j = new_instance(job_ptr, err, sizeof(err), &users_fault);
    if (j && j->req.npersist && persist_begin(job_ptr, j, err, sizeof(err)) < 0) {
        bb_job_free(j);
        j = NULL;
        users_fault = true;   /* held: the user releases it once the instance is free */
    }
    if (!j) {
        slurm_mutex_unlock(&drv.lock);
        error("%s: %pJ: %s", plugin_type, job_ptr, err);
        if (users_fault)
            job_ptr->priority = 0;   /* held: retrying cannot help until the user changes it */
        set_reason(job_ptr, err);
        return SLURM_ERROR;
    }
    j->next = drv.jobs;
    drv.jobs = j;
    driver_save(&drv, j);
    set_job_env(job_ptr, j);
    add_qos_env(job_ptr, false);
    const struct persist_spec *mounted = persist_job_mount(&j->req);
    size_t further = persist_job_nfurther(&j->req);
    if (!persist_job_own_servers(j))
        info("%s: %pJ begins on %s: %s%s%s once its persistent lines are settled", plugin_type,
             job_ptr, job_ptr->job_resrcs->nodes, mounted ? "mounting instance " : "no mount",
             mounted ? mounted->name : "", further ? " and further instances" : "");
    else
        info("%s: %pJ begins on %s: deploying %zu servers of %"PRIu64" bytes%s", plugin_type,
             job_ptr, job_ptr->job_resrcs->nodes, j->nnodes, j->node_capacity,
             driver_waits_for_older(&drv, j) ? " once its earlier instance is gone" : "");
    driver_wake(&drv);
    slurm_mutex_unlock(&drv.lock);

    hold_configuring(job_ptr, PHASE_DEPLOYING);
    return SLURM_SUCCESS;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_begin(job_record_t *job_ptr)
{
    return timed(__func__, job_begin, job_ptr);
}

extern int bb_p_job_revoke_alloc(job_record_t *job_ptr)
{
    return SLURM_SUCCESS;
}

static void request(job_record_t *job_ptr, bool ended, bool hurry)
{
    slurm_mutex_lock(&drv.lock);
    struct bb_job *j = bb_job_find(drv.jobs, job_ptr->job_id);
    if (j && j->unreadable) {
        /* Not settled yet (the driver's first look after a restart). */
        info("%s: %pJ ended; its saved record was unreadable (%s): its nodes' Epilogs "
             "tear down what is left", plugin_type, job_ptr, j->unreadable);
        driver_forget(&drv, j);
    } else if (j) {
        /* Applied at once: requests in flight for the phase left are
         * dropped as they come back. */
        j->unclaimed = false;   /* ended before the driver's first look: just tear down */
        if (ended)
            lifecycle_job_ended(j, hurry);
        else
            lifecycle_cancel(j, hurry);
        driver_save(&drv, j);
        driver_wake(&drv);
    }
    slurm_mutex_unlock(&drv.lock);
}

static int job_start_stage_out(job_record_t *job_ptr)
{
    if (has_bb(job_ptr))
        request(job_ptr, true, false);
    return SLURM_SUCCESS;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_start_stage_out(job_record_t *job_ptr)
{
    return timed(__func__, job_start_stage_out, job_ptr);
}

extern int bb_p_job_test_post_run(job_record_t *job_ptr)
{
    return 1;
}

/* 1 when stage-out and teardown are over (or there was nothing), else 0. */
static int job_test_stage_out(job_record_t *job_ptr)
{
    if (!has_bb(job_ptr))
        return 1;
    slurm_mutex_lock(&drv.lock);
    struct bb_job *j = bb_job_find(drv.jobs, job_ptr->job_id);
    int rc = !j || j->phase == PHASE_COMPLETE ? 1 : 0;
    slurm_mutex_unlock(&drv.lock);
    return rc;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_test_stage_out(job_record_t *job_ptr)
{
    return timed(__func__, job_test_stage_out, job_ptr);
}

static int job_cancel(job_record_t *job_ptr)
{
    /* scancel --hurry: no stage-out. */
    if (has_bb(job_ptr))
        request(job_ptr, false, job_ptr->bit_flags & JOB_KILL_HURRY);
    return SLURM_SUCCESS;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_cancel(job_record_t *job_ptr)
{
    return timed(__func__, job_cancel, job_ptr);
}

extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv,
                           char **resp_msg)
{
    *resp_msg = xstrdup_printf("%s: scripts are not supported", plugin_type);
    return SLURM_ERROR;
}

extern char *bb_p_xlate_bb_2_tres_str(char *burst_buffer)
{
    return NULL;
}
