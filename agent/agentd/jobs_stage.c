/* jobs_stage: STAGE, a job's stager (adafs-stage run as the job user, its
 * output collected by a watcher thread), and STATUS and WATCH, which answer
 * with the stage's state and output and a persistent instance's server. */
#include "jobs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "handshake.h"
#include "instance.h"
#include "log.h"
#include "persistent.h"

/* What is kept of a stager's stdout and of its stderr for STATUS: the
 * start of each, so that both, the note on what was dropped and the rest
 * of the reply stay well under AGENT_MAX_BODY. */
#define OUTPUT_MAX (4u << 20)

/* Collects a stager's stdout and stderr, then its exit status. */
static void *stage_watcher(void *arg)
{
    struct job *j = arg;   /* kept while the stage runs (forget_torn_down_locked) */
    pthread_mutex_lock(&jobs_lock);
    uint32_t id = j->id;
    struct stage_op *op = &j->stage;
    int fds[2] = { op->out_fd, op->err_fd };
    pid_t pid = op->pid;
    pthread_mutex_unlock(&jobs_lock);

    char buf[65536];
    struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN }, { .fd = fds[1], .events = POLLIN } };
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof(buf));
            if (n <= 0) {
                close(p[i].fd);
                p[i].fd = -1;
                open_fds--;
                continue;
            }
            pthread_mutex_lock(&jobs_lock);
            char **dst = i == 0 ? &op->out : &op->errors;
            size_t *len = i == 0 ? &op->out_len : &op->err_len;
            size_t *dropped = i == 0 ? &op->out_dropped : &op->err_dropped;
            size_t keep = OUTPUT_MAX - *len < (size_t)n ? OUTPUT_MAX - *len : (size_t)n;
            char *grown = keep && !op->discard ? realloc(*dst, *len + keep + 1) : NULL;
            if (grown) {
                memcpy(grown + *len, buf, keep);
                *len += keep;
                grown[*len] = '\0';
                *dst = grown;
            }
            if (!op->discard)
                *dropped += (size_t)n - (grown ? keep : 0);
            pthread_mutex_unlock(&jobs_lock);
        }
    }
    int status = child_wait(pid, -1);
    pthread_mutex_lock(&jobs_lock);
    op->exit_status = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    op->state = AGENT_OP_DONE;
    /* Its summary's first line (the JSON of --json: files, seconds, the
     * threads' idle time) with it: what each node's worker did, for the
     * admin comparing a job's workers. */
    const char *sum = op->out ? op->out : "";
    int sum_len = (int)strcspn(sum, "\n");
    log_info("job %u: stager pid %d finished with status %d%s%.*s", id, (int)pid, op->exit_status,
             sum_len ? ": " : "", sum_len > 2000 ? 2000 : sum_len, sum);
    pthread_cond_broadcast(&jobs_changed);
    forget_torn_down_locked();
    pthread_mutex_unlock(&jobs_lock);
    return NULL;
}

int jobs_stage(const struct agent_stage *m, struct agent_error *e)
{
    pthread_mutex_lock(&jobs_lock);
    struct job *j = find_locked(m->job_id);
    int rc = 0;
    if (!j || !job_take_locked(j)) {
        forget_torn_down_locked();
        pthread_mutex_unlock(&jobs_lock);
        char note[128];
        return failf(e, jobs_wiped_at_start(m->job_id) ? AGENT_FAULT_JOB : AGENT_FAULT_TRANSIENT, -ENOENT,
                   "job %u: not deployed here%s", m->job_id,
                   jobs_unknown_note(m->job_id, note, sizeof(note)));
    }
    /* Taken only to wait for a start or teardown in progress: what
     * follows is quick and holds the lock. */
    job_give_locked(j);
    if (j->stage.state == AGENT_OP_RUNNING) {
        pthread_mutex_unlock(&jobs_lock);
        return failf(e, AGENT_FAULT_TRANSIENT, -EBUSY, "job %u: a stage is already running", m->job_id);
    }
    char instance[PATH_MAX], worker[32], threads[16], mdops[32], bw[32];
    /* Its first mount's instance, or the further one the stage names. */
    instance_named_file_path(instance, sizeof(instance), cfg->mount_prefix, j->id, m->name);
    snprintf(worker, sizeof(worker), "%u/%u", m->worker, m->nworkers);
    /* What the plugin gives the job here (its CPUs there by Slurm), but no
     * more per CPU than this node has: nodes sharing a host's cores (the
     * mini-cluster) are told their share with --cpus. */
    uint64_t nthreads = m->threads ? m->threads : 4;
    if (m->threads_per_cpu && cfg->cpus &&
        nthreads > (uint64_t)m->threads_per_cpu * cfg->cpus)
        nthreads = (uint64_t)m->threads_per_cpu * cfg->cpus;
    snprintf(threads, sizeof(threads), "%llu", (unsigned long long)nthreads);
    snprintf(mdops, sizeof(mdops), "%llu", (unsigned long long)m->max_mdops);
    snprintf(bw, sizeof(bw), "%llu", (unsigned long long)m->max_bandwidth);
    char *argv[28];
    int n = 0;
    argv[n++] = (char *)cfg->stage_path;
    argv[n++] = m->direction == AGENT_STAGE_IN ? "in" : "out";
    argv[n++] = "--instance"; argv[n++] = instance;
    argv[n++] = "--type"; argv[n++] = (char *)stage_type_name((enum stage_type)m->type);
    argv[n++] = "--worker"; argv[n++] = worker;
    argv[n++] = "--threads"; argv[n++] = threads;
    if (m->max_mdops) { argv[n++] = "--max-mdops"; argv[n++] = mdops; }
    if (m->max_bandwidth) { argv[n++] = "--max-bw"; argv[n++] = bw; }
    /* The job's I/O budget toward the PFS is charged for the copies too. */
    char qos_job[16];
    snprintf(qos_job, sizeof(qos_job), "%u", j->id);
    if (cfg->qos_socket) {
        argv[n++] = "--qos-socket"; argv[n++] = (char *)cfg->qos_socket;
        argv[n++] = "--qos-job"; argv[n++] = qos_job;
    }
    if (m->flags & AGENT_STAGE_FINALIZE)
        argv[n++] = "--finalize";
    else if (m->flags & AGENT_STAGE_VERIFY)
        argv[n++] = "--verify";
    argv[n++] = "--json";
    argv[n++] = "--";
    argv[n++] = (char *)m->source;
    argv[n++] = (char *)m->destination;
    argv[n] = NULL;

    /* A persistent instance's servers ask every user but the owner to
     * prove its uid with munge over TCP: the stager, once it runs as the
     * job's user, gets a credential of that uid from this node's munged
     * (no more than the user's own processes can get). */
    char munge_env[sizeof(HANDSHAKE_ENV_MUNGE_SOCKET "=") + PATH_MAX];
    const char *extra_env[2] = { NULL, NULL };
    if (cfg->munge_socket) {
        snprintf(munge_env, sizeof(munge_env), "%s=%s", HANDSHAKE_ENV_MUNGE_SOCKET,
                 cfg->munge_socket);
        extra_env[0] = munge_env;
    }
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        pthread_mutex_unlock(&jobs_lock);
        return failf(e, AGENT_FAULT_TRANSIENT, -errno, "pipe: %s", strerror(errno));
    }
    pid_t pid = child_spawn_env(&j->user, argv, extra_env, out[1], errp[1], -1, NULL);
    close(out[1]);
    close(errp[1]);
    if (pid < 0) {
        close(out[0]);
        close(errp[0]);
        pthread_mutex_unlock(&jobs_lock);
        return failf(e, exec_fault(pid), pid, "job %u: cannot start %s: %s", j->id, cfg->stage_path,
                     strerror(-pid));
    }
    free(j->stage.out);
    free(j->stage.errors);
    j->stage = (struct stage_op){ .pid = pid, .state = AGENT_OP_RUNNING,
                                  .out_fd = out[0], .err_fd = errp[0] };
    log_info("job %u: stage-%s worker %s started (pid %d, %s threads): %s -> %s", j->id,
             argv[1], worker, (int)pid, threads, m->source, m->destination);
    pthread_t t;
    if ((rc = pthread_create(&t, NULL, stage_watcher, j)) != 0) {
        child_kill(pid, SIGKILL);
        close(out[0]);
        close(errp[0]);
        j->stage.state = AGENT_OP_DONE;   /* no watcher: nothing holds the record */
        j->stage.exit_status = -1;
        pthread_mutex_unlock(&jobs_lock);
        return failf(e, AGENT_FAULT_TRANSIENT, -rc, "cannot start a thread: %s", strerror(rc));
    }
    pthread_detach(t);
    pthread_mutex_unlock(&jobs_lock);
    return 0;
}

/* A copy of kept output, with a note on how much was dropped. */
static char *output_text(const char *kept, size_t dropped)
{
    char *text;
    if (!dropped)
        return strdup(kept ? kept : "");
    return asprintf(&text, "%s\n... %zu bytes dropped\n", kept ? kept : "", dropped) < 0 ? NULL : text;
}

/* A persistent instance whose server died while this agent runs: started
 * again (same storage, same port) when the plugin next asks for its STATUS. */
static void heal_persistent(uint32_t job_id)
{
    pthread_mutex_lock(&jobs_lock);
    struct job *j = find_locked(job_id);
    if (j && j->persist && !server_up(j) && job_take_locked(j)) {
        if (!server_up(j)) {
            struct agent_error e;
            log_warn("persistent %s (instance %u): its server is gone: starting it again",
                     j->persist->name, j->id);
            pthread_mutex_unlock(&jobs_lock);
            restart_persistent(j, &e);
            pthread_mutex_lock(&jobs_lock);
        }
        job_give_locked(j);
    }
    forget_torn_down_locked();
    pthread_mutex_unlock(&jobs_lock);
}

int jobs_status(uint32_t job_id, struct stage_status *st)
{
    if (agent_id_is_persistent(job_id))
        heal_persistent(job_id);
    /* A watch of a state no stage has, held for no time: answered at once. */
    return jobs_watch(job_id, -1, 0, NULL, st);
}

int jobs_watch(uint32_t job_id, int known, int hold_ms, const atomic_bool *cancel,
               struct stage_status *st)
{
    *st = (struct stage_status){ .state = AGENT_OP_NONE, .exit_status = -1 };
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += hold_ms / 1000;
    until.tv_nsec += (long)(hold_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&jobs_lock);
    /* Found again after each wait: a job torn down meanwhile is freed. */
    struct job *j;
    for (bool late = false;;) {
        j = find_locked(job_id);
        if (!j || j->stage.state != known || late || (cancel && atomic_load(cancel)))
            break;
        late = pthread_cond_timedwait(&jobs_changed, &jobs_lock, &until) == ETIMEDOUT;
    }
    if (j) {
        st->state = j->stage.state;
        st->exit_status = j->stage.exit_status;
        if (j->persist) {
            st->persistent = true;
            st->port = j->persist->port;
            st->pid = server_up(j) ? (int)j->server_pid : 0;
            st->used = persistent_used(j->dir, j->image[0] != '\0');
        }
        st->summary = output_text(j->stage.out, j->stage.out_dropped);
        st->errors = output_text(j->stage.errors, j->stage.err_dropped);
    }
    pthread_mutex_unlock(&jobs_lock);
    if (j && (!st->summary || !st->errors)) {
        stage_status_free(st);
        return -ENOMEM;
    }
    return j ? 0 : -ENOENT;
}

void stage_status_free(struct stage_status *st)
{
    free(st->summary);
    free(st->errors);
    st->summary = st->errors = NULL;
}
