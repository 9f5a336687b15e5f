/* burst_buffer_adafs.c: the burst_buffer/adafs plugin's Slurm shim.
 *
 * Only what must touch slurmctld lives here: the bb_p_* entry points, job
 * record fields, locks, node addresses and packing for scontrol. The shim
 * copies what it needs out of Slurm's structures and hands it to plain
 * modules that unit tests drive without slurmctld, which decide and give
 * back what to do (some through hooks the shim answers): the checks at
 * submit (bb_submit.h), a job's instance and environment at its begin
 * (bb_begin.h), what saved instances become after a restart
 * (bb_restart.h), what an outcome does to the job (driver.h), bbstat and
 * show burst (bb_status.h), the walltime thread (walltime_observer.h); the
 * table, the driver and the deploy/stage/teardown state machine
 * (bb_job.h, driver.h, lifecycle.h). Symbols such as info() and xmalloc()
 * resolve against slurmctld when it loads us: the plugin does not link
 * libslurmfull.
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
 * slurmctld's job lock is measured (job_lock_watch, lock_watch.h) and
 * shown by bbstat. */
#include <ctype.h>
#include <errno.h>
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
#include "bb_begin.h"
#include "bb_config.h"
#include "bb_job.h"
#include "bb_qos.h"
#include "bb_restart.h"
#include "bb_status.h"
#include "bb_submit.h"
#include "bb_store.h"
#include "directive.h"
#include "driver.h"
#include "instance.h"
#include "lifecycle.h"
#include "lock_watch.h"
#include "log_sink.h"
#include "munge_auth.h"
#include "persist_job.h"
#include "placement.h"
#include "predict.h"
#include "size.h"
#include "stageout_bounds.h"
#include "walltime_observer.h"

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
static struct lock_watch job_lock_watch = LOCK_WATCH_INIT;

/* When a section under slurmctld's job lock began: wall and CPU time. */
struct hold_start {
    uint64_t wall, cpu;
};

static struct hold_start hold_start(void)
{
    return (struct hold_start){ lock_watch_now_us(), lock_watch_cpu_us() };
}

/* Called at the end of a section under slurmctld's job lock that began at
 * `since`. */
static void held(const char *where, struct hold_start since)
{
    uint64_t us = lock_watch_now_us() - since.wall, cpu = lock_watch_cpu_us() - since.cpu;
    /* Each new longest hold is logged (a few lines a run): the longest
     * over a slurmctld's life survives its kill -9, unlike bbstat's. Its
     * CPU time says how much of it was work: the rest the thread waited
     * while holding the lock (for a CPU on a busy host, for I/O). */
    if (lock_watch_note(&job_lock_watch, where, us))
        verbose("%s: slurmctld's job lock held %"PRIu64" us in %s, the longest yet (%"PRIu64
                " us of it on CPU)", plugin_type, us, where, cpu);
}

/* A Slurm call made with slurmctld's job lock held: fn, timed (held). */
static int timed(const char *where, int (*fn)(job_record_t *job_ptr), job_record_t *job_ptr)
{
    struct hold_start since = hold_start();
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
        error("%s: %s%s", plugin_type, err, at_init ? "" : "; the running configuration is kept");
        bb_config_free(&fresh);
        xfree(path);
        /* A typo must not run with silent defaults: refuse at start, keep the
         * running configuration on reconfigure. */
        return at_init ? SLURM_ERROR : SLURM_SUCCESS;
    }
    if (rc == 1)
        info("%s: %s not found, using built-in defaults", plugin_type, path);
    uint64_t release_s = bb_config_release_needed_s(&fresh);
    if (release_s > STAGEOUT_RELEASE_DEFAULT_S)
        info("%s: StageOutTimeout + AdafsStageOutKeep + %d s = %" PRIu64 " s is longer than "
             "adafs-epilog's default --timeout (%d s): give the Epilog --timeout %" PRIu64
             " or more, or the node agents tear down a job's data before stage-out is done "
             "with it", plugin_type, STAGEOUT_RELEASE_SLACK_S, release_s,
             STAGEOUT_RELEASE_DEFAULT_S, release_s);
    slurm_mutex_lock(&drv.lock);
    if (!at_init && bb_config_munge_socket_changed(agents_munge_socket, &fresh))
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
    struct hold_start since = hold_start();
    job_record_t *job_ptr = find_job_record(o->job_id);
    if (!job_ptr) {
        held("apply", since);
        unlock_slurmctld(job_write_lock);
        return;
    }
    struct bb_outcome_plan plan = driver_outcome_plan(o, IS_JOB_CONFIGURING(job_ptr),
                                                      job_ptr->restart_cnt);
    show_phase(job_ptr, o->phase, plan.released);
    /* The release is logged before Slurm launches the job (its own lines
     * follow; test_cluster_restart.sh times the job table's save from it);
     * a requeue once the lock is let go (a log line is a write to
     * slurmctld's log file). */
    char *job_name = plan.requeue ? xstrdup_printf("%pJ", job_ptr) : NULL;
    if (plan.release) {
        info("%s: %pJ staged in, releasing it", plugin_type, job_ptr);
        release_job(job_ptr);
    }
    if (plan.requeue) {
        job_ptr->job_state &= ~JOB_CONFIGURING;
        release_job(job_ptr);
        if (plan.drain) {
            char *reason = xstrdup_printf("adafs: %s", o->error);
            drain_nodes(o->node, reason, slurm_conf.slurm_user_id);
            schedule_node_save();
            xfree(reason);
        }
        requeue_job(job_ptr, plan.hold, o->error);
    } else if (plan.comment) {
        /* After the run (stage-out): the job keeps a note of what failed. */
        xfree(job_ptr->system_comment);
        job_ptr->system_comment = xstrdup_printf("%s: %s", plugin_type, o->error);
        last_job_update = time(NULL);
    }
    /* A failed stage-out kept (stageout_keep.h), as Slurm's lua and datawarp
     * plugins keep one: the job stays in StageOut (scancel --hurry) with why. */
    if (plan.kept) {
        job_ptr->job_state |= JOB_STAGE_OUT;
        set_reason(job_ptr, o->error);
        schedule_job_save();
    } else if (plan.out_over && IS_JOB_STAGE_OUT(job_ptr)) {
        job_ptr->job_state &= ~JOB_STAGE_OUT;
        if (o->error && o->failure != FAIL_NONE) {
            set_reason(job_ptr, o->error);
        } else {
            job_ptr->state_reason = WAIT_NO_REASON;
            xfree(job_ptr->state_desc);
        }
        schedule_job_save();
    }
    held("apply", since);
    unlock_slurmctld(job_write_lock);
    if (plan.requeue)
        info("%s: %s %s: %s", plugin_type, job_name, plan.hold ? "held" : "requeued", o->error);
    xfree(job_name);
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

struct collect {
    struct wt_events *events;
    time_t since;
};

/* A job whose life moved on since c->since (wt_event_of): started,
 * finished, or ended without running. */
static int collect_event(void *x, void *arg)
{
    job_record_t *job_ptr = x;
    const struct collect *c = arg;
    struct wt_job_state s = {
        .finished = IS_JOB_FINISHED(job_ptr), .running = IS_JOB_RUNNING(job_ptr),
        .complete = IS_JOB_COMPLETE(job_ptr), .cancelled = IS_JOB_CANCELLED(job_ptr),
        .start_time = job_ptr->start_time, .end_time = job_ptr->end_time,
    };
    enum wt_event ev;
    if (!wt_event_of(&s, c->since, &ev))
        return 0;
    struct walltime_job *w = wt_events_add(c->events, ev);
    if (!w)
        return 0;
    walltime_job_of(job_ptr, w);
    wt_event_times(w, ev, &s);
    return 0;
}

/* The walltime thread's look at the job table: under the read lock only
 * to copy the jobs' events out. */
static void collect_events(void *arg, time_t since, struct wt_events *out)
{
    (void)arg;
    struct collect c = { out, since };
    slurmctld_lock_t job_read_lock = { .job = READ_LOCK };
    lock_slurmctld(job_read_lock);
    struct hold_start t0 = hold_start();
    list_for_each(job_list, collect_event, &c);
    held("walltime: finished jobs", t0);
    unlock_slurmctld(job_read_lock);
}

/* Read apart from the observer's lock: neither lock is taken inside the
 * other. */
static uint32_t learn_interval(void *arg)
{
    (void)arg;
    slurm_mutex_lock(&drv.lock);
    uint32_t interval = drv.config.walltime_learn_interval;
    slurm_mutex_unlock(&drv.lock);
    return interval;
}

static struct wt_observer walltime = { .collect = collect_events, .interval = learn_interval };

/* --- after a restart (bb_restart.h) ------------------------------------ */

static struct bb_job *new_instance(job_record_t *job_ptr, char *err, size_t errlen,
                                   bool *users_fault);
static void set_job_env(job_record_t *job_ptr, const struct bb_job *j);
static void say_of_job(void *arg, int level, const char *line);

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

static struct bb_job *restart_instance(void *job, char *err, size_t errlen)
{
    bool users_fault;
    return new_instance(job, err, errlen, &users_fault);
}

static bool restart_same_nodes(void *job, const struct bb_job *j)
{
    return same_nodes(j, job);
}

static void restart_hold(void *job, enum bb_phase phase)
{
    hold_configuring(job, phase);
}

static void restart_set_env(void *job, const struct bb_job *j)
{
    set_job_env(job, j);
}

static void restart_note(void *job, const char *text)
{
    job_record_t *job_ptr = job;
    xfree(job_ptr->system_comment);
    job_ptr->system_comment = xstrdup_printf("%s: %s", plugin_type, text);
}

/* What slurmctld says of a job: s->job is its record, or NULL. */
static void job_state(job_record_t *job_ptr, struct bb_restart_job *s)
{
    bool configuring = job_ptr && IS_JOB_CONFIGURING(job_ptr) && job_ptr->details;
    *s = (struct bb_restart_job){
        .job = job_ptr, .pending = job_ptr && IS_JOB_PENDING(job_ptr),
        .configuring = configuring,
        .running = job_ptr && (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)) &&
                   !configuring,
        .finished = job_ptr && IS_JOB_FINISHED(job_ptr),
    };
}

static void restart_state(void *arg, const struct bb_job *j, struct bb_restart_job *s)
{
    (void)arg;
    job_state(find_job_record(j->job_id), s);
}

static const struct bb_restart_hooks restart_hooks = {
    .instance = restart_instance, .hold = restart_hold, .set_env = restart_set_env,
    .note = restart_note, .say = say_of_job, .same_nodes = restart_same_nodes,
    .state = restart_state,
};

/* The driver's first look after a restart (its hook): settles every saved
 * instance bb_p_job_begin() did not claim. Takes the job write lock, then
 * drv.lock. */
static void settle_saved(void *arg)
{
    (void)arg;
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK, .node = WRITE_LOCK, .fed = READ_LOCK };
    lock_slurmctld(job_write_lock);
    struct hold_start since = hold_start();
    slurm_mutex_lock(&drv.lock);
    bb_restart_settle(&drv, &restart_hooks);
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
    char err[1024];
    char *saved_path = NULL;
    long n = bb_restart_load(&drv, dir, &saved_path, err, sizeof(err));
    state_file = saved_path ? xstrdup(saved_path) : NULL;
    free(saved_path);
    if (n < 0) {
        error("%s: %s", plugin_type, err);
        slurm_mutex_unlock(&drv.lock);
        return SLURM_ERROR;
    }
    /* One kept session per agent, for all the requests to it. */
    agents_munge_socket = drv.config.munge_socket ? strdup(drv.config.munge_socket) : NULL;
    munge_auth_init(&agents_auth, agents_munge_socket);
    struct agent_link_config link_cfg = { .auth = &agents_auth };
    if (!(agents = agent_link_new(&link_cfg, err, sizeof(err)))) {
        error("%s: %s", plugin_type, err);
        slurm_mutex_unlock(&drv.lock);
        return SLURM_ERROR;
    }
    drv.transport = (struct lc_transport){ send_to_agents, agents, send_to_agents_many };
    drv.hooks = (struct bb_driver_hooks){ .first = settle_saved, .apply = apply_outcome };
    if (drv.config.walltime_model &&
        predict_open(drv.config.walltime_model, drv.config.walltime_miss_rate, err, sizeof(err)) < 0)
        error("%s: walltime predictions are OFF: %s", plugin_type, err);
    walltime.observed_until = predict_enabled() ? predict_last_end() : 0;
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
    rc = wt_observer_start(&walltime);
    if (rc != 0)
        error("%s: cannot start the walltime thread: %s", plugin_type, strerror(rc));
    info("%s: init: adafs %s, directive #%s, chunk %"PRIu64" bytes, agents on port %s%d, %ld saved instances",
         plugin_type, PACKAGE_VERSION_ADAFS, drv.config.directive, drv.config.chunk_size,
         drv.config.agent_port_offset ? "slurmd+" : "",
         drv.config.agent_port_offset ? drv.config.agent_port_offset : drv.config.agent_port, n);
    return SLURM_SUCCESS;
}

extern int fini(void)
{
    wt_observer_stop(&walltime);
    driver_stop(&drv);
    /* Requests in flight end (cancelled) before the records they belong to. */
    agent_link_free(agents);
    agents = NULL;
    slurm_mutex_lock(&drv.lock);
    driver_free_table(&drv);
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

/* scontrol show bbstat [JOBID]: the instances and their timings
 * (bb_status_report). */
extern char *bb_p_get_status(uint32_t argc, char **argv)
{
    struct bb_lock_stats job_lock = lock_watch_stats(&job_lock_watch);
    char *text = bb_status_report(&drv, argc > 0 ? argv[0] : NULL, plugin_type, state_file,
                                  &job_lock);
    char *out = xstrdup(text ? text : "out of memory\n");
    free(text);
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
    uint32_t flags = 0;
    slurm_mutex_lock(&drv.lock);
    if (drv.config.flags & BBCONF_PRIVATE_DATA)
        flags |= BB_FLAG_PRIVATE_DATA;
    if (drv.config.flags & BBCONF_TEARDOWN_FAILURE)
        flags |= BB_FLAG_TEARDOWN_FAILURE;
    bool see_all = !(drv.config.flags & BBCONF_PRIVATE_DATA) || validate_operator(uid);
    struct bb_pool_view pool;
    bb_status_pool(drv.jobs, &drv.config, node_record_count, see_all, uid, &pool);
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
    pack64(pool.total, buffer);                 /* total_space */
    pack64(pool.used, buffer);                  /* unfree_space */
    pack64(pool.used, buffer);                  /* used_space */
    pack32(drv.config.other_timeout, buffer);       /* validate_timeout */
    pack32(pool.count, buffer);                 /* buffer records */
    for (struct bb_job *j = drv.jobs; j; j = j->next) {
        if (!bb_status_shown(j, see_all, uid))
            continue;
        struct bb_buffer_view b;
        bb_status_buffer(j, &b);
        packstr(NULL, buffer);                  /* account */
        pack32(0, buffer);                      /* array_job_id */
        pack32(b.persistent ? 0 : NO_VAL, buffer);  /* array_task_id */
        pack_time(b.t_begin, buffer);
        pack32(b.job_id, buffer);
        /* packstr is a macro: its arguments must be plain names. */
        char *name = (char *)b.name, *pool_name = b.pool[0] ? b.pool : NULL;
        packstr(name, buffer);                  /* name */
        packstr(NULL, buffer);                  /* partition */
        packstr(pool_name, buffer);             /* pool */
        packstr(NULL, buffer);                  /* qos */
        pack64(b.size, buffer);
        pack16(slurm_bb_states[b.phase], buffer);
        pack32(b.uid, buffer);
    }
    pack32(0, buffer);                          /* usage records */
    slurm_mutex_unlock(&drv.lock);
    return SLURM_SUCCESS;
}

/* --- at submit (bb_submit.h) ------------------------------------------- */

/* The user's groups as slurmd gives them to a job (Slurm's cached lookup). */
static int submit_groups(void *arg, uint32_t uid, uint32_t gid, uint32_t **out)
{
    (void)arg;
    gid_t *gids = NULL;
    int n = group_cache_lookup(uid, gid, NULL, &gids);
    *out = calloc(n > 0 ? (size_t)n : 1, sizeof(**out));
    for (int i = 0; *out && i < n; i++)
        (*out)[i] = gids[i];
    xfree(gids);
    return *out ? n : -1;
}

static char *submit_user_name(void *arg, uint32_t uid)
{
    (void)arg;
    char *name = uid_to_string(uid);
    char *copy = name ? strdup(name) : NULL;
    xfree(name);
    return copy;
}

static bool submit_partition(void *arg, const char *name, const char **nodes, const char **pname)
{
    (void)arg;
    char *part_name = name ? xstrdup(name) : NULL;
    part_record_t *part = part_name ? find_part_record(part_name) : default_part_loc;
    xfree(part_name);
    if (!part)
        return false;
    *nodes = part->nodes;
    *pname = part->name;
    return true;
}

static const struct bb_submit_hooks submit_hooks = {
    .groups = submit_groups, .user_name = submit_user_name, .partition = submit_partition,
};

/* At submit: reject malformed directives with a message naming the token,
 * and requests that cannot fit; store the canonical form. */
static int job_validate(job_desc_msg_t *job_desc, char **err_msg)
{
    struct bb_submit_job job = {
        .script = job_desc->script, .burst_buffer = job_desc->burst_buffer,
        .uid = job_desc->user_id, .gid = job_desc->group_id,
        .nodes = job_desc->min_nodes == NO_VAL || job_desc->min_nodes == 0 ? 1
                                                                           : job_desc->min_nodes,
        .partition = job_desc->partition,
    };
    char *canonical, *why;
    enum bb_submit_verdict v = bb_submit_check(&drv, &job, &submit_hooks, &canonical, &why);
    static const int slurm_rc[] = {
        [BB_SUBMIT_OK] = SLURM_SUCCESS, [BB_SUBMIT_INVALID] = ESLURM_INVALID_BURST_BUFFER_REQUEST,
        [BB_SUBMIT_PERMISSION] = ESLURM_BURST_BUFFER_PERMISSION,
        [BB_SUBMIT_LIMIT] = ESLURM_BURST_BUFFER_LIMIT,
    };
    if (why)
        *err_msg = xstrdup(why);
    free(why);
    if (canonical) {
        xfree(job_desc->burst_buffer);
        job_desc->burst_buffer = xstrdup(canonical);
        free(canonical);
        /* Under the job lock: at most its first 4 KiB (a request may
         * have 64). */
        int len = (int)strlen(job_desc->burst_buffer);
        debug("%s: accepted request for uid %u (%d bytes):\n%.*s%s", plugin_type,
              job_desc->user_id, len, len > 4096 ? 4096 : len, job_desc->burst_buffer,
              len > 4096 ? "\n[...]" : "");
    }
    return slurm_rc[v];
}

/* Called with slurmctld's job write lock (job_allocate, _job_create):
 * timed. */
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg)
{
    struct hold_start since = hold_start();
    int rc = job_validate(job_desc, err_msg);
    held(__func__, since);
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
    char *note = wt_note(&p);
    if (!note) {
        error("%s: %pJ: out of memory noting its walltime estimates", plugin_type, job_ptr);
        return SLURM_SUCCESS;
    }
    char **field = where == 'a' ? &job_ptr->admin_comment : where == 'c' ? &job_ptr->comment : NULL;
    if (field && *field && **field)
        xstrfmtcat(*field, "; %s", note);
    else if (field)
        *field = xstrdup(note);
    /* Backfill may plan with the conservative estimate plus the admin's
     * margin; the limit that kills the job is never touched. */
    uint32_t time_min = set_time_min && job_ptr->time_min == 0 ?
                        wt_time_min(p.conservative_s, margin, job_ptr->time_limit) : 0;
    if (time_min)
        job_ptr->time_min = time_min;
    debug("%s: %pJ %s", plugin_type, job_ptr, note);
    free(note);
    return SLURM_SUCCESS;
}

/* Called with slurmctld's job lock: timed. */
extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg)
{
    struct hold_start since = hold_start();
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

/* Sets env's variables in the job, in order. */
static void set_env(job_record_t *job_ptr, const struct bb_env *env)
{
    for (size_t i = 0; i < env->n; i++)
        add_env(job_ptr, env->names[i], env->values[i]);
}

/* A line of the plain modules' about the job, in slurmctld's log: line
 * goes on from the job's name (": what happened", or " verb ..."). */
static void say_of_job(void *arg, int level, const char *line)
{
    job_record_t *job_ptr = arg;
    if (level == LOG_SINK_ERROR)
        error("%s: %pJ%s", plugin_type, job_ptr, line);
    else
        info("%s: %pJ%s", plugin_type, job_ptr, line);
}

/* The job's processes under I/O quality of service (bb_begin.h): the
 * interposer's settings, and LD_PRELOAD for a job without a file system. */
static void add_qos_env(job_record_t *job_ptr, bool preload)
{
    struct bb_env env = { 0 };
    if (bb_begin_qos_env(&drv.config, preload, &env) < 0)
        error("%s: %pJ: out of memory setting its I/O quality of service environment",
              plugin_type, job_ptr);
    set_env(job_ptr, &env);
    bb_env_free(&env);
}

/* What the job's processes need to find their file system (bb_begin.h). */
static void set_job_env(job_record_t *job_ptr, const struct bb_job *j)
{
    struct bb_env env = { 0 };
    struct bb_begin_job log_only = { .say = say_of_job, .say_arg = job_ptr };
    if (bb_begin_fs_env(&log_only, j, &drv.config, &env) < 0)
        error("%s: %pJ: out of memory setting its environment", plugin_type, job_ptr);
    set_env(job_ptr, &env);
    bb_env_free(&env);
}

/* The job's instance, from its request and nodes (bb_begin.h); NULL with
 * err (and *users_fault set when only the user can fix it) if it cannot
 * have one. */
static struct bb_job *new_instance(job_record_t *job_ptr, char *err, size_t errlen,
                                   bool *users_fault)
{
    *users_fault = false;
    size_t n = bit_set_count(job_ptr->node_bitmap), k = 0;
    struct bb_begin_node *nodes = calloc(n ? n : 1, sizeof(*nodes));
    if (!nodes) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* The job's CPUs on each node: its stager's threads follow them
     * (bb_stage_threads). job_resrcs lists the allocation's nodes in
     * node_bitmap's order, as this loop walks them. */
    const job_resources_t *res = job_ptr->job_resrcs;
    for (int i = 0; i < node_record_count && k < n; i++) {
        node_record_t *node_ptr = node_record_table_ptr[i];
        if (node_ptr && bit_test(job_ptr->node_bitmap, i)) {
            unsigned cpus = res && res->cpus && k < res->nhosts ? res->cpus[k] : 0;
            nodes[k++] = (struct bb_begin_node){ node_ptr->name, node_ptr->comm_name,
                                                 node_ptr->port, cpus };
        }
    }
    char *user = uid_to_string_or_null(job_ptr->user_id);
    bool array = job_ptr->array_task_id != NO_VAL;
    struct bb_begin_job b = {
        .job_id = job_ptr->job_id, .uid = job_ptr->user_id, .gid = job_ptr->group_id,
        .user = user, .name = job_ptr->name, .burst_buffer = job_ptr->burst_buffer,
        .array_job_id = array ? job_ptr->array_job_id : 0,
        .array_task_id = array ? job_ptr->array_task_id : 0,
        .nodes = nodes, .nnodes = k, .say = say_of_job, .say_arg = job_ptr,
    };
    struct bb_job *j = bb_begin_instance(&b, &drv.config, err, errlen, users_fault);
    xfree(user);
    free(nodes);
    return j;
}

/* --- persistent instances (persist_job.h) ------------------------------- */

/* AdafsPersistentNodes as this slurmctld knows them (malloc'd; their
 * names point into Slurm's node table). */
static struct persist_node *persistent_nodes(void *arg, size_t *n)
{
    (void)arg;
    const struct hostlist *hl = &drv.config.persistent_nodes;
    struct persist_node *v = calloc(hl->count ? hl->count : 1, sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < hl->count; i++) {
        node_record_t *node_ptr = find_node_record(hl->names[i]);
        if (!node_ptr) {
            error("%s: AdafsPersistentNodes: node %s is not in slurm.conf", plugin_type,
                  hl->names[i]);
            continue;
        }
        v[(*n)++] = (struct persist_node){
            .name = node_ptr->name, .agent_host = node_ptr->comm_name,
            .agent_port = bb_begin_agent_port(&drv.config, node_ptr->port) };
    }
    return v;
}

struct users_of {
    const char *name;
    uint32_t self;
    uint32_t *ids;
    size_t *n;
};

static int find_users(void *x, void *arg)
{
    job_record_t *job_ptr = x;
    struct users_of *u = arg;
    if (job_ptr->job_id == u->self || !job_ptr->burst_buffer ||
        !(IS_JOB_PENDING(job_ptr) || IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr)))
        return 0;
    if (bb_begin_request_mounts(&drv.config, job_ptr->burst_buffer, u->name)) {
        if (*u->n < 8)
            u->ids[*u->n] = job_ptr->job_id;
        (*u->n)++;
    }
    return 0;
}

/* The running or pending jobs, other than self, that mount instance name
 * (bb_begin.h). */
static void users_of(void *arg, const char *name, uint32_t self, uint32_t ids[8], size_t *n)
{
    (void)arg;
    struct users_of u = { .name = name, .self = self, .ids = ids, .n = n };
    *n = 0;
    list_for_each(job_list, find_users, &u);
}

static int group_id(void *arg, const char *group, uint32_t *gid)
{
    (void)arg;
    gid_t g = 0;
    if (gid_from_string(group, &g) < 0)
        return -1;
    *gid = g;
    return 0;
}

static const struct bb_begin_persist_hooks persist_hooks = {
    .users_of = users_of, .group_id = group_id, .nodes = persistent_nodes,
};

/* At job begin, the job's persistent lines that act at once
 * (bb_begin_persistent). drv.lock and the job write lock held. */
static int persist_begin(job_record_t *job_ptr, struct bb_job *j, char *err, size_t errlen)
{
    struct bb_begin_job log_only = { .job_id = job_ptr->job_id, .say = say_of_job,
                                     .say_arg = job_ptr };
    return bb_begin_persistent(&drv, &log_only, j, &persist_hooks, err, errlen);
}

/* bb_p_job_begin() for a job that already has a record (bb_restart.h): 1
 * when that settled it, 0 when a new instance is to be made, -1 (reason
 * set) when the job cannot begin now. drv.lock held. */
static int begin_again(job_record_t *job_ptr, struct bb_job *old)
{
    struct bb_restart_job s;
    job_state(job_ptr, &s);
    char err[1024];
    int rc = bb_restart_begin_again(&drv, old, &s, &restart_hooks, err, sizeof(err));
    if (rc < 0)
        set_reason(job_ptr, err);
    return rc;
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
    if (bb_begin_qos_only(&drv.config, job_ptr->burst_buffer)) {
        /* No file system to deploy: only its processes' QoS settings. */
        add_qos_env(job_ptr, true);
        slurm_mutex_unlock(&drv.lock);
        info("%s: %pJ asks for I/O quality of service only: no file system", plugin_type, job_ptr);
        return SLURM_SUCCESS;
    }
    struct bb_job *old = driver_find(&drv, job_ptr->job_id);
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
    driver_add(&drv, j);
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

/* The job ended or was cancelled (driver_job_end). */
static void request(job_record_t *job_ptr, bool ended, bool hurry)
{
    char why[1024];
    if (driver_job_end(&drv, job_ptr->job_id, ended, hurry, why, sizeof(why)))
        info("%s: %pJ ended; its saved record was unreadable (%s): its nodes' Epilogs "
             "tear down what is left", plugin_type, job_ptr, why);
}

static int job_start_stage_out(job_record_t *job_ptr)
{
    if (!has_bb(job_ptr))
        return SLURM_SUCCESS;
    request(job_ptr, true, false);
    /* Slurm's convention (lua, datawarp): the job is in StageOut while its
     * data is copied out. slurmctld hands scancel --hurry to the plugin
     * (bb_g_job_cancel) only for a job in StageOut: without it, --hurry
     * would not stop a stage-out under way. apply_outcome takes it off once
     * torn down; it cannot come first, as it needs the job lock held here. */
    slurm_mutex_lock(&drv.lock);
    struct bb_job *j = driver_find(&drv, job_ptr->job_id);
    bool staging_out = j && j->phase == PHASE_STAGING_OUT;
    slurm_mutex_unlock(&drv.lock);
    if (staging_out) {
        job_ptr->job_state |= JOB_STAGE_OUT;
        xfree(job_ptr->state_desc);
        job_ptr->state_desc = xstrdup_printf("%s: stage-out in progress (scancel --hurry "
                                             "skips the rest)", plugin_type);
        last_job_update = time(NULL);
    }
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
    struct bb_job *j = driver_find(&drv, job_ptr->job_id);
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
