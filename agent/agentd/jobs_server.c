/* jobs_server: START, a job's server on this node (adafsd run as the job
 * user, ready on its pipe, its pid file), a START again after a lost reply,
 * and a persistent instance's server started again on its storage and port. */
#include "jobs_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "instance.h"
#include "jobnodes.h"
#include "jobrecord.h"
#include "log.h"
#include "persistent.h"
#include "store.h"
#include "tbf_loop.h"

/* Reads "ready port=P pid=N" or "error ..." from a starting server. */
static int await_ready(int fd, int *port, char *line, size_t len)
{
    int got = child_read_ready(fd, cfg->start_timeout_ms, line, len);
    if (got < 0)
        return got;
    int pid;
    if (instance_ready_parse(line, port, &pid) == 0)
        return 0;
    return got ? -EIO : -ECHILD;
}

static int spawn_server(struct job *j, const struct agent_start *m, struct agent_error *e)
{
    char secret_file[PATH_MAX], logpath[PATH_MAX], listen[INSTANCE_HOST_MAX + 8], idx[16];
    char servers[16], chunk[32], quota[32];
    char fdtext[16], owner[16], access[16];
    secret_path(secret_file, sizeof(secret_file), j);
    pathf(logpath, sizeof(logpath), "%s/adafsd.job%u.%s.log", cfg->log_dir, m->job_id, cfg->node);
    /* The server needs its own address and the instance's size, nothing of
     * the other servers: the command line is the same length for 1 server
     * or 4,096. */
    if (strlen(m->listen_host) >= INSTANCE_HOST_MAX || strchr(m->listen_host, ','))
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "job %u: listen host '%s' is not a host name",
                     m->job_id, m->listen_host);
    if (m->nservers > INSTANCE_MAX_SERVERS)
        return failf(e, AGENT_FAULT_JOB, -E2BIG,
                     "job %u: %u servers, more than the %d an instance may have",
                     m->job_id, m->nservers, INSTANCE_MAX_SERVERS);
    /* A persistent instance's server comes back on the port its jobs know. */
    snprintf(listen, sizeof(listen), "%s:%d", m->listen_host, j->persist ? j->persist->port : 0);
    snprintf(servers, sizeof(servers), "%u", m->nservers);
    snprintf(idx, sizeof(idx), "%u", m->index);
    snprintf(chunk, sizeof(chunk), "%llu", (unsigned long long)m->chunk_size);
    snprintf(quota, sizeof(quota), "%llu", (unsigned long long)m->quota);

    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return failf(e, AGENT_FAULT_TRANSIENT, -errno, "pipe: %s", strerror(errno));
    /* The write end must survive exec in the child. */
    int child_end = fcntl(ready[1], F_DUPFD, 3);
    close(ready[1]);
    snprintf(fdtext, sizeof(fdtext), "%d", child_end);
    int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (logfd >= 0)
        fchmod(logfd, 0600);   /* it names the job's paths: root's only, whatever made it */
    char *argv[40] = { (char *)cfg->adafsd_path, "--index", idx, "--listen", listen, "--servers", servers,
                       "--root", j->dir, "--secret-file", secret_file, "--chunk-size", chunk,
                       "--quota", quota, "--ready-fd", fdtext, "--foreground", NULL };
    if (j->persist) {
        /* Shared by the owner's jobs (and the access group's): clients
         * prove their uid at connect, with this agent's munged over TCP. */
        size_t n = 0;
        while (argv[n])
            n++;
        snprintf(owner, sizeof(owner), "%u", (unsigned)j->persist->uid);
        argv[n++] = "--owner";
        argv[n++] = owner;
        argv[n++] = "--keep-root";   /* its data outlives every run of it */
        if (j->persist->access_gid) {
            snprintf(access, sizeof(access), "%u", (unsigned)j->persist->access_gid);
            argv[n++] = "--access-group";
            argv[n++] = access;
        }
        if (cfg->munge_socket) {
            argv[n++] = "--munge-socket";
            argv[n++] = (char *)cfg->munge_socket;
        }
        /* Its users' jobs share it fairly, across its servers too (they
         * exchange usage under the key beside the secret): by the
         * instance's own policy (create_persistent fair_share=, even
         * off), else by the agent's --fair-policy. */
        const char *policy = j->persist->fair_policy[0] ? j->persist->fair_policy : cfg->fair_policy;
        if (policy) {
            argv[n++] = "--fair-policy";
            argv[n++] = (char *)policy;
        }
        argv[n] = NULL;
    }
    char bwdir[PATH_MAX], bwfile[PATH_MAX];
    if (cfg->tbf) {
        /* The node's bandwidth is shared (--node-bandwidth): the agent's
         * AdapTBF loop sets this server's rate (tbf_loop.h). */
        int rc = tbf_dir(j, bwdir, sizeof(bwdir));
        if (rc < 0) {
            close(ready[0]);
            close(child_end);
            if (logfd >= 0)
                close(logfd);
            return failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot make %s: %s", m->job_id, bwdir,
                         strerror(-rc));
        }
        pathf(bwfile, sizeof(bwfile), "%s/%s", bwdir, TBF_RATES_FILE);
        size_t n = 0;
        while (argv[n])
            n++;
        argv[n++] = "--bandwidth-file";
        argv[n++] = bwfile;
        argv[n] = NULL;
    }
    if (jobnodes_path()) {
        /* Weighs nothing unless the server shares itself (--fair-policy). */
        size_t n = 0;
        while (argv[n])
            n++;
        argv[n++] = "--fair-jobs";
        argv[n++] = (char *)jobnodes_path();
        argv[n] = NULL;
    }
    /* The server runs next to its storage device (sysmap tells the plugin). */
    cpu_set_t cpus;
    bool pin = m->numa_node >= 0 && child_numa_cpus(m->numa_node, &cpus) == 0;
    if (m->numa_node >= 0 && !pin)
        log_warn("job %u: NUMA node %d not found here: the server is not pinned",
                 m->job_id, (int)m->numa_node);
    pid_t pid = child_spawn(&j->user, argv, logfd, logfd, child_end, pin ? &cpus : NULL);
    close(child_end);
    if (logfd >= 0)
        close(logfd);
    if (pid < 0) {
        close(ready[0]);
        return failf(e, exec_fault(pid), pid, "job %u: cannot start %s as uid %u: %s", m->job_id,
                     cfg->adafsd_path, (unsigned)m->uid, strerror(-pid));
    }
    char line[512];
    int rc = await_ready(ready[0], &j->port, line, sizeof(line));
    close(ready[0]);
    if (rc < 0) {
        child_kill(pid, SIGKILL);
        child_wait(pid, -1);
        return failf(e, AGENT_FAULT_TRANSIENT, rc == -ECHILD ? -EIO : rc,
                     "job %u: server did not start%s%s (see %s)", m->job_id,
                     line[0] ? ": " : (rc == -ETIMEDOUT ? ": timed out" : ": it exited"),
                     line, logpath);
    }
    j->server_pid = pid;
    j->nservers = m->nservers;
    /* Its start time names it in the job's record (jobrecord.h): an agent
     * that restarts adopts this process, never one that took its pid. */
    uid_t running_as;
    if (jobrec_proc_start(pid, &j->server_start, &running_as) < 0)
        j->server_start = 0;
    jobnodes_set(m->job_id, m->nservers);
    if (cfg->tbf && (rc = tbf_loop_add(cfg->tbf, m->job_id, m->nservers, bwdir)) < 0)
        log_warn("job %u: %s: its bandwidth is not shared: %s", m->job_id, bwdir, strerror(-rc));
    char pidfile[PATH_MAX], text[32];
    pidfile_path(pidfile, sizeof(pidfile), j);
    snprintf(text, sizeof(text), "%d\n", (int)pid);
    int pfd = open(pidfile, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (pfd >= 0) {
        if (write(pfd, text, strlen(text)) < 0)
            log_warn("cannot write %s: %s", pidfile, strerror(errno));
        close(pfd);
    }
    return 0;
}

/* Is j's server running (a child of ours, or one an agent before us started)? */
bool server_up(const struct job *j)
{
    if (j->pinned) {
        /* Re-adopted: its pidfd turns readable when it ends (its command
         * line is the user's to change, its pidfd is not). */
        struct pollfd p = { .fd = j->pidfd, .events = POLLIN };
        return poll(&p, 1, 0) == 0;
    }
    return j->server_pid > 0 && persistent_server_alive(j->server_pid, j->dir, j->user.uid);
}

/* Starts a persistent instance's server again, on its storage as it is and
 * the port its record keeps. j is taken, jobs_lock not held. */
int restart_persistent(struct job *j, struct agent_error *e)
{
    const struct persistent_rec *r = j->persist;
    char why[PATH_MAX + 128], secret[PATH_MAX], text[80];
    if (j->server_pid > 0 && j->adopted)
        persistent_server_stop(j->server_pid, j->dir, j->user.uid, cfg->stop_timeout_ms);
    j->server_pid = 0;
    j->adopted = false;
    /* After a reboot its file system is an image no longer mounted. */
    if (j->image[0] && !store_mounted(j->dir) && store_attach(j->image, j->dir, why, sizeof(why)) < 0)
        return failf(e, AGENT_FAULT_NODE, -EIO, "persistent %s: %s", r->name, why);
    secret_path(secret, sizeof(secret), j);
    snprintf(text, sizeof(text), "%s\n", r->secret_hex);
    int rc = write_user_file(secret, text, &j->user);
    if (rc < 0)
        return failf(e, AGENT_FAULT_NODE, rc, "persistent %s: cannot write %s: %s", r->name, secret,
                     strerror(-rc));
    if ((rc = write_server_key(j, r->server_key_hex, secret, sizeof(secret))) < 0)
        return failf(e, AGENT_FAULT_NODE, rc, "persistent %s: cannot write %s: %s", r->name, secret,
                     strerror(-rc));
    struct agent_start m;
    persistent_rec_to_start(r, &m);
    rc = spawn_server(j, &m, e);
    if (rc == 0)
        log_info("persistent %s: server started again on port %d (pid %d), root %s", r->name,
                 j->port, (int)j->server_pid, j->dir);
    return rc;
}

/* START of a job already listed. The same instance (user, place and
 * secret) gets the answer of the start before, once that is done: a
 * plugin whose reply was lost (a timeout, a connection cut) asks again.
 * Anything else is refused. Called with jobs_lock held; releases it. */
static int start_again_locked(struct job *j, const struct agent_start *m, int *port, pid_t *pid,
                              struct agent_error *e)
{
    bool same = j->user.uid == m->uid && j->user.gid == m->gid && j->index == m->index &&
                strcmp(j->secret_hex, m->secret_hex) == 0 &&
                (!j->persist || (strcmp(j->persist->name, m->persist_name) == 0 &&
                                 j->persist->access_gid == m->access_gid));
    bool up = false;
    if (same && job_take_locked(j)) {
        if (j->persist && !server_up(j)) {
            /* Its server died, or did not come back when this agent
             * started: START again is how the plugin asks for it. */
            pthread_mutex_unlock(&jobs_lock);
            restart_persistent(j, e);
            pthread_mutex_lock(&jobs_lock);
        }
        up = j->server_pid > 0;
        *port = j->port;
        *pid = j->server_pid;
        job_give_locked(j);
    }
    forget_torn_down_locked();
    pthread_mutex_unlock(&jobs_lock);
    if (!up)
        return failf(e, AGENT_FAULT_TRANSIENT, -EEXIST, "job %u: already deployed here%s", m->job_id,
                     same ? " (its start failed: try again)" : " for another user or secret");
    log_info("job %u: started again: its server is up on port %d (pid %d)", m->job_id, *port,
             (int)*pid);
    return 0;
}

int jobs_start(const struct agent_start *m, int *port, pid_t *pid, struct agent_error *e)
{
    bool persistent = m->flags & AGENT_START_PERSISTENT;
    /* Two id spaces (agent_proto.h): a job's START never reaches an instance. */
    if (agent_id_is_persistent(m->job_id) && !persistent)
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "job %u: ids from %u on are persistent instances', "
                     "not jobs': refused in a job's START", m->job_id, AGENT_PERSIST_ID_BASE);
    if (persistent && !agent_id_is_persistent(m->job_id))
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "persistent %s: id %u is a job's, not an "
                     "instance id (from %u on)", m->persist_name, m->job_id, AGENT_PERSIST_ID_BASE);
    if (m->uid == 0 || m->gid == 0)
        return failf(e, AGENT_FAULT_JOB, -EPERM, "job %u: refusing to run a server as root", m->job_id);
    if (strlen(m->storage) + strlen(cfg->node) + PATH_SLACK >= PATH_MAX)
        return failf(e, AGENT_FAULT_NODE, -ENAMETOOLONG, "job %u: storage path too long", m->job_id);
    uint8_t secret[INSTANCE_SECRET_SIZE];
    if (secret_from_hex(m->secret_hex, secret) < 0)
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "job %u: the secret is not %d hex digits", m->job_id,
                     2 * INSTANCE_SECRET_SIZE);
    const char *key_hex = m->server_key_hex ? m->server_key_hex : "";
    uint8_t key[INSTANCE_SECRET_SIZE];
    if (key_hex[0] && (secret_from_hex(key_hex, key) < 0 || strcmp(key_hex, m->secret_hex) == 0))
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "job %u: the servers' key is not %d hex digits "
                     "other than the secret", m->job_id, 2 * INSTANCE_SECRET_SIZE);
    if (!storage_allowed(m->storage))
        return failf(e, AGENT_FAULT_NODE, -EPERM, "job %u: storage %s is not under this agent's storage roots",
                     m->job_id, m->storage);
    if (m->index >= m->nservers)
        return failf(e, AGENT_FAULT_JOB, -EINVAL, "job %u: server index %u of %u", m->job_id, m->index,
                     m->nservers);

    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return failf(e, AGENT_FAULT_TRANSIENT, -ENOMEM, "out of memory");
    j->id = m->job_id;
    j->user = (struct user_id){ m->uid, m->gid };
    j->index = m->index;
    pathf(j->storage, sizeof(j->storage), "%s", m->storage);
    char nodedir[PATH_MAX];
    pathf(nodedir, sizeof(nodedir), "%s/%s", m->storage, cfg->node);
    pathf(j->dir, sizeof(j->dir), "%s/job.%u", nodedir, m->job_id);
    pathf(j->secret_hex, sizeof(j->secret_hex), "%s", m->secret_hex);
    if (persistent) {
        j->persist = calloc(1, sizeof(*j->persist));
        if (!j->persist || persistent_rec_from_start(j->persist, m) < 0) {
            free(j->persist);
            free(j);
            return failf(e, AGENT_FAULT_JOB, -EINVAL, "persistent %s: a field is too long",
                         m->persist_name);
        }
        persistent_parent(nodedir, sizeof(nodedir), m->storage, cfg->node);
        persistent_dir(j->dir, sizeof(j->dir), m->storage, cfg->node, m->persist_name);
    }
    /* Listed at once, taken: a second START of the job waits for this one
     * and a TEARDOWN too, while the slow part below runs without the lock. */
    pthread_mutex_lock(&jobs_lock);
    struct job *listed = find_locked(m->job_id);
    if (listed) {
        free(j->persist);
        free(j);
        return start_again_locked(listed, m, port, pid, e);
    }
    for (struct job *o = jobs; persistent && o; o = o->next) {
        if (!o->torn_down && strcmp(o->dir, j->dir) == 0) {
            pthread_mutex_unlock(&jobs_lock);
            free(j->persist);
            free(j);
            return failf(e, AGENT_FAULT_JOB, -EEXIST, "persistent %s: served here already as "
                         "instance %u, not %u", m->persist_name, o->id, m->job_id);
        }
    }
    char record[PATH_MAX + 16];
    struct stat rst;
    pathf(record, sizeof(record), "%s.record", j->dir);
    if (persistent && lstat(record, &rst) == 0) {
        /* A record this agent did not take at start-up (its log says why):
         * the data is never wiped to start the instance afresh. */
        pthread_mutex_unlock(&jobs_lock);
        free(j->persist);
        free(j);
        return failf(e, AGENT_FAULT_JOB, -EEXIST, "persistent %s: %s is there but was not taken "
                     "when this agent started (see its log): refusing to start the instance "
                     "afresh over its data", m->persist_name, record);
    }
    j->busy = true;
    j->next = jobs;
    jobs = j;
    pthread_mutex_unlock(&jobs_lock);

    char secret_file[PATH_MAX], text[80];
    secret_path(secret_file, sizeof(secret_file), j);
    snprintf(text, sizeof(text), "%s\n", m->secret_hex);
    char why[PATH_MAX + 128];
    int rc = check_root_path(nodedir, true, why, sizeof(why));
    if (rc < 0)
        rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: storage %s: %s", m->job_id, nodedir, why);
    else if ((rc = check_root_path(cfg->mount_prefix, true, why, sizeof(why))) < 0)
        rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: mount prefix %s: %s", m->job_id, cfg->mount_prefix,
                   why);
    if (rc == 0 && (rc = make_user_dir(j->dir, &j->user)) < 0)
        rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot create %s: %s", m->job_id, j->dir,
                   rc == -EEXIST ? "exists and is not the job user's directory" : strerror(-rc));
    if (rc == 1 && m->quota) {
        /* A requeued job's leftovers, maybe its old file system. */
        pathf(j->image, sizeof(j->image), "%s.img", j->dir);
        if (store_destroy(j->image, j->dir, why, sizeof(why)) < 0)
            rc = failf(e, AGENT_FAULT_TRANSIENT, -EIO, "job %u: cannot remove old %s: %s", m->job_id,
                       j->dir, why);
        j->image[0] = '\0';
    }
    if (rc == 1)   /* a requeued job's leftovers: start empty */
        rc = child_run_as(&j->user, wipe_as_user, j->dir, 60000) == 0 ? 0 :
             failf(e, AGENT_FAULT_TRANSIENT, -EIO, "job %u: cannot empty old %s", m->job_id, j->dir);
    if (rc == 0 && m->quota) {
        /* Everything the job puts on this node goes into a file system of
         * its own, sized by its quota (store.h). */
        struct instance_space space;
        instance_space(m->quota, &space);
        pathf(j->image, sizeof(j->image), "%s.img", j->dir);
        if ((rc = store_create(j->image, j->dir, space.image, &j->user, j->persist != NULL, why,
                               sizeof(why))) < 0) {
            j->image[0] = '\0';   /* store_create removed it */
            /* Out of space may pass when other jobs end; anything else
             * (no loop device, mkfs failing) is this node's. */
            rc = failf(e, rc == -ENOSPC ? AGENT_FAULT_TRANSIENT : AGENT_FAULT_NODE, rc,
                       "job %u: storage of %llu bytes: %s", m->job_id,
                       (unsigned long long)space.image, why);
        }
    }
    if (rc == 0 && (rc = write_user_file(secret_file, text, &j->user)) < 0)
        rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot write %s: %s", m->job_id, secret_file,
                   strerror(-rc));
    char key_file[PATH_MAX];
    if (rc == 0 && (rc = write_server_key(j, key_hex, key_file, sizeof(key_file))) < 0)
        rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot write %s: %s", m->job_id, key_file,
                   strerror(-rc));
    if (rc == 0)
        rc = spawn_server(j, m, e);
    if (rc == 0 && j->persist) {
        /* Only now is it one an agent that starts must keep. */
        j->persist->port = j->port;
        if ((rc = persistent_record_save(j->dir, j->persist)) < 0)
            rc = failf(e, AGENT_FAULT_NODE, rc, "persistent %s: cannot write %s.record: %s",
                       j->persist->name, j->dir, strerror(-rc));
    }
    pthread_mutex_lock(&jobs_lock);
    if (rc < 0) {
        struct agent_error ignored;
        teardown_taken(j, true, &ignored);
        j->torn_down = true;    /* forgotten even if the wipe failed (logged) */
        job_give_locked(j);
        forget_torn_down_locked();
        pthread_mutex_unlock(&jobs_lock);
        return rc;
    }
    *port = j->port;
    *pid = j->server_pid;
    if (!j->persist)
        job_record_write_locked(j, false);
    log_info("job %u: server %u of %u up as uid %u on port %d (pid %d), root %s", j->id,
             j->index, m->nservers, (unsigned)m->uid, j->port, (int)j->server_pid, j->dir);
    job_give_locked(j);
    pthread_mutex_unlock(&jobs_lock);
    return 0;
}
