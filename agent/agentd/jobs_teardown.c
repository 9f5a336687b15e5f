/* jobs_teardown: TEARDOWN and the Epilog's RELEASE: a job's stager and
 * server stopped, its kernel mount taken off first, its storage and files
 * on this node wiped; also what an agent going away stops. */
#include "jobs_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "fusemount.h"
#include "instance.h"
#include "jobnodes.h"
#include "jobrecord.h"
#include "log.h"
#include "mountinfo.h"
#include "net.h"
#include "persistent.h"
#include "store.h"
#include "tbf_loop.h"

/* Frees a stage's output and drops whatever still comes. */
static void discard_output(struct stage_op *op)
{
    free(op->out);
    free(op->errors);
    op->out = op->errors = NULL;
    op->out_len = op->err_len = op->out_dropped = op->err_dropped = 0;
    op->discard = true;
}

/* Waits up to ms for a running stager to end (its watcher says so). */
static void await_stager_locked(struct job *j, int ms)
{
    int64_t deadline = net_now_ms() + ms;
    while (j->stage.state == AGENT_OP_RUNNING && net_now_ms() < deadline) {
        struct timespec ts = net_wall_after_ms(100);
        pthread_cond_timedwait(&jobs_changed, &jobs_lock, &ts);
    }
}

/* The job leaves the node's bandwidth sharing; its directory goes (also
 * at recovery, whatever --node-bandwidth is now). */
static void tbf_forget(struct job *j)
{
    char dir[PATH_MAX];
    struct stat st;
    if (cfg->tbf)
        tbf_loop_remove(cfg->tbf, j->id);
    pathf(dir, sizeof(dir), "%s.bw", j->dir);
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != j->user.uid)
        return;
    if (child_run_as(&j->user, wipe_as_user, dir, 60000) != 0 ||
        (rmdir(dir) < 0 && errno != ENOENT))
        log_warn("job %u: could not remove %s", j->id, dir);
}

/* Stops a running stager, then the server, and wipes this node's data.
 * Called with jobs_lock held and j taken (or not yet shared: recovery);
 * the lock is released while waiting for the processes and wiping. Not
 * in a hurry, a stager is given stop_timeout_ms to end after SIGTERM
 * before it is killed. */
int teardown_taken(struct job *j, bool hurry, struct agent_error *e)
{
    if (j->torn_down)
        return 0;
    if (j->stage.state == AGENT_OP_RUNNING && !hurry) {
        child_kill(j->stage.pid, SIGTERM);
        await_stager_locked(j, cfg->stop_timeout_ms);
        if (j->stage.state == AGENT_OP_RUNNING)
            log_warn("job %u: stager pid %d still running %d ms after SIGTERM, killing it",
                     j->id, (int)j->stage.pid, cfg->stop_timeout_ms);
    }
    if (j->stage.state == AGENT_OP_RUNNING)
        child_kill(j->stage.pid, SIGKILL);
    discard_output(&j->stage);
    j->tearing_down = true;
    pthread_mutex_unlock(&jobs_lock);
    int rc = 0;
    char path[PATH_MAX];
    if (j->persist) {
        /* The record goes first: whatever stops the destroy halfway, an
         * agent that starts finds a leftover to wipe, not one to re-adopt. */
        pathf(path, sizeof(path), "%s.record", j->dir);
        if (unlink(path) < 0 && errno != ENOENT)
            log_warn("persistent %s: cannot remove %s: %s", j->persist->name, path, strerror(errno));
    }
    if (!j->persist && j->dir[0])
        job_record_remove(j);   /* first, as a persistent instance's */
    if (j->pinned) {
        jobrec_stop_pinned(j->pidfd, cfg->stop_timeout_ms);
        j->pinned = false;
        j->server_pid = 0;
    } else if (j->adopted && j->server_pid > 0) {
        persistent_server_stop(j->server_pid, j->dir, j->user.uid, cfg->stop_timeout_ms);
        j->server_pid = 0;
    }
    /* First the kernel mount: it goes at once, busy or hung, before any
     * data does. Recovery does not know whether there was one: it asks. */
    if (j->fuse || (j->mount[0] && fusemount_present(j->mount))) {
        struct fuse_bufs b;
        struct fusemount_job fj = fuse_job(j, j->mount, &b);
        fusemount_detach(&fj);
        j->fuse = false;
    }
    if (j->server_pid > 0) {
        child_kill(j->server_pid, SIGTERM);
        if (child_wait(j->server_pid, cfg->stop_timeout_ms) == -ETIMEDOUT) {
            log_warn("job %u: server pid %d ignored SIGTERM for %d ms, killing it",
                     j->id, (int)j->server_pid, cfg->stop_timeout_ms);
            child_kill(j->server_pid, SIGKILL);
            child_wait(j->server_pid, -1);
        }
        j->server_pid = 0;
    }
    /* Its own file system: detached and removed, the data goes with it.
     * If that fails the wipe below still empties it through the mount. */
    if (j->image[0] && j->dir[0]) {
        char why[PATH_MAX + 128];
        if (store_destroy(j->image, j->dir, why, sizeof(why)) < 0)
            log_warn("job %u: %s", j->id, why);
    }
    /* A job that only mounts a persistent instance here has no storage. */
    int wiped = 0;
    if (j->dir[0]) {
        jobnodes_remove(j->id);
        tbf_forget(j);
        wiped = child_run_as(&j->user, wipe_as_user, j->dir, 60000);
    }
    if (wiped != 0)
        rc = failf(e, AGENT_FAULT_TRANSIENT, -EIO, "job %u: could not wipe %s (status %d)", j->id, j->dir, wiped);
    else if (j->dir[0] && rmdir(j->dir) < 0 && errno != ENOENT)
        rc = failf(e, AGENT_FAULT_NODE, -errno, "job %u: rmdir %s: %s", j->id, j->dir, strerror(errno));
    /* Another node of this host may still serve its mount there. */
    if (j->mount[0] && !fusemount_present(j->mount)) {
        /* A FUSE mount of the user's own there or on a directory inside
         * (fusermount3) would keep the mount point: they go first. Real
         * files there came from a process without the interposer. */
        int n = mountinfo_detach_tree(j->mount);
        if (n != 0)
            log_warn("job %u: %s: %s", j->id, j->mount, n > 0 ? "detached a mount of the "
                     "job's user" : strerror(-n));
        child_run_as(&j->user, wipe_as_user, j->mount, 60000);
        if (rmdir(j->mount) < 0 && errno != ENOENT)
            log_warn("job %u: rmdir %s: %s", j->id, j->mount, strerror(errno));
    }
    if (!j->persist && j->user.uid != 0)
        remove_further_mounts(j);
    char pidfile[PATH_MAX];
    pidfile_path(pidfile, sizeof(pidfile), j);
    if (j->dir[0])
        unlink(pidfile);
    if (j->persist) {
        secret_path(path, sizeof(path), j);
        unlink(path);
        beside_secret(path, sizeof(path), j, INSTANCE_SERVER_KEY);
        unlink(path);
        beside_secret(path, sizeof(path), j, INSTANCE_FILE);
        unlink(path);
    } else if (j->dir[0]) {
        remove_job_files_if_last(j->storage, j->id);
    } else {
        /* Another node of this host may still use it: a job's instance file
         * has one path per host (instance.h). */
        job_file_path(path, sizeof(path), j->id, INSTANCE_FILE);
        if (!j->mount[0] || !fusemount_present(j->mount))
            unlink(path);
    }
    pthread_mutex_lock(&jobs_lock);
    if (rc == 0) {
        j->torn_down = true;
        log_info("job %u: torn down, %s wiped", j->id, j->dir[0] ? j->dir : "its mount");
    }
    pthread_cond_broadcast(&jobs_changed);
    return rc;
}

/* TEARDOWN of a job this agent does not list: one that only mounted a
 * persistent instance here (no storage, so recovery did not find it) under
 * an agent that since restarted leaves its mount point and instance file;
 * they go now, as that job's user. A job with storage here is recovery's. */
static void teardown_unlisted_locked(uint32_t job_id, struct agent_error *e)
{
    char mount[PATH_MAX], file[PATH_MAX];
    struct stat st;
    job_file_path(file, sizeof(file), job_id, INSTANCE_FILE);
    if (agent_id_is_persistent(job_id) || lstat(file, &st) < 0 || !S_ISREG(st.st_mode) ||
        st.st_uid == 0)
        return;
    for (size_t i = 0; i < cfg->nroots; i++) {
        char dir[PATH_MAX];
        pathf(dir, sizeof(dir), "%s/%s/job.%u", cfg->storage_roots[i], cfg->node, job_id);
        if (lstat(dir, &st) == 0)
            return;
    }
    struct job j = { .id = job_id, .user = { st.st_uid, st.st_gid } };
    pathf(mount, sizeof(mount), "%s/%u", cfg->mount_prefix, job_id);
    if (fusemount_present(mount) || (lstat(mount, &st) == 0 && S_ISDIR(st.st_mode) &&
                                     st.st_uid == j.user.uid))
        pathf(j.mount, sizeof(j.mount), "%s", mount);
    log_warn("job %u: not listed here (the agent restarted): taking off its leftover mount", job_id);
    teardown_taken(&j, true, e);
}

int jobs_teardown(uint32_t job_id, bool hurry, struct agent_error *e)
{
    pthread_mutex_lock(&jobs_lock);
    struct job *j = find_locked(job_id);
    int rc = 0;
    if (j && job_take_locked(j)) {
        rc = teardown_taken(j, hurry, e);
        job_give_locked(j);
    } else if (!j) {
        teardown_unlisted_locked(job_id, e);
    }
    forget_torn_down_locked();
    pthread_mutex_unlock(&jobs_lock);
    return rc;
}

int jobs_release(uint32_t job_id, int timeout_s, struct agent_error *e)
{
    int64_t deadline = net_now_ms() + (int64_t)timeout_s * 1000;
    pthread_mutex_lock(&jobs_lock);
    for (;;) {
        struct job *j = find_locked(job_id);
        if (!j)
            break;
        if (net_now_ms() >= deadline) {
            log_warn("job %u: not torn down %d s after the job ended: tearing down now",
                     job_id, timeout_s);
            int rc = 0;
            if (job_take_locked(j)) {
                rc = teardown_taken(j, true, e);
                job_give_locked(j);
            }
            forget_torn_down_locked();
            pthread_mutex_unlock(&jobs_lock);
            return rc;
        }
        struct timespec ts = net_wall_after_ms(1000);
        pthread_cond_timedwait(&jobs_changed, &jobs_lock, &ts);
    }
    pthread_mutex_unlock(&jobs_lock);
    return 0;
}

void jobs_shutdown(void)
{
    pthread_mutex_lock(&jobs_lock);
    for (struct job *j = jobs; j; j = j->next) {
        struct agent_error err;
        /* A persistent instance's server stays up: the next agent keeps it. */
        if (!j->persist && job_take_locked(j)) {
            teardown_taken(j, true, &err);
            job_give_locked(j);
        }
    }
    pthread_mutex_unlock(&jobs_lock);
}
