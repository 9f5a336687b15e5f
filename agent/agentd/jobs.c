/* jobs: the table of this node's jobs (jobs.h) and its lock; the settings,
 * the error message every request answers with, and LIST. Each request's
 * work is in a file of its own (jobs_internal.h names them). */
#include "jobs.h"
#include "jobs_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobnodes.h"
#include "log.h"
#include "persistent.h"
#include "rpc.h"

const struct agent_settings *cfg;

void pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}
pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t jobs_changed = PTHREAD_COND_INITIALIZER;
struct job *jobs;

/* Formats "node N: <message>" into e with whose fault it is (agent_proto.h:
 * the node's only where it is proven, since the plugin drains the node for
 * it) and returns rc (a -errno). */
int failf(struct agent_error *e, enum agent_fault fault, int rc, const char *fmt, ...)
{
    int n = snprintf(e->text, sizeof(e->text), "node %s: ", cfg->node);
    if (n >= 0 && (size_t)n < sizeof(e->text)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->text + n, sizeof(e->text) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    e->fault = fault;
    log_error("%s", e->text);
    return rc;
}

/* A program that cannot be executed is the node's fault (missing, not
 * executable); a fork or a drop that failed may pass. */
enum agent_fault exec_fault(int rc)
{
    return rc == -ENOENT || rc == -EACCES || rc == -ENOEXEC ? AGENT_FAULT_NODE
                                                            : AGENT_FAULT_TRANSIENT;
}

int jobs_init(const struct agent_settings *settings, char *err, size_t errlen)
{
    cfg = settings;
    char why[PATH_MAX + 128];
    if (strlen(cfg->node) > 64 || strchr(cfg->node, '/') || cfg->node[0] == '.') {
        snprintf(err, errlen, "--node %s: must be a plain name of at most 64 characters", cfg->node);
        return -EINVAL;
    }
    for (size_t i = 0; i < cfg->nroots; i++) {
        const char *root = cfg->storage_roots[i];
        if (strlen(root) + PATH_SLACK >= PATH_MAX) {
            snprintf(err, errlen, "--storage-root %s: longer than PATH_MAX - %d", root, PATH_SLACK);
            return -ENAMETOOLONG;
        }
        int rc = check_root_path(root, false, why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "--storage-root %s: %s", root, why);
            return rc;
        }
    }
    int rc = check_root_path(cfg->mount_prefix, false, why, sizeof(why));
    if (rc < 0) {
        snprintf(err, errlen, "--mount-prefix %s: %s", cfg->mount_prefix, why);
        return rc;
    }
    if (strlen(cfg->log_dir) + PATH_SLACK >= PATH_MAX) {
        snprintf(err, errlen, "--log-dir %s: longer than PATH_MAX - %d", cfg->log_dir, PATH_SLACK);
        return -ENAMETOOLONG;
    }
    /* Root creates the servers' logs there and hands them to job users: a
     * user who could write in it could plant a name there first. */
    rc = check_root_path(cfg->log_dir, false, why, sizeof(why));
    if (rc < 0) {
        snprintf(err, errlen, "--log-dir %s: %s", cfg->log_dir, why);
        return rc;
    }
    /* Root's like the log directory, so no user can plant the name. */
    char nodes[PATH_MAX];
    pathf(nodes, sizeof(nodes), "%s/jobs.%s.nodes", cfg->log_dir, cfg->node);
    jobnodes_init(nodes);
    return 0;
}

/* The job's record on this node, unless it is torn down. */
struct job *find_locked(uint32_t id)
{
    for (struct job *j = jobs; j; j = j->next)
        if (j->id == id && !j->torn_down)
            return j;
    return NULL;
}

/* Takes j for work on it, waiting (jobs_lock released meanwhile) while
 * another thread has it. False if it was torn down meanwhile. */
bool job_take_locked(struct job *j)
{
    j->waiters++;
    while (j->busy)
        pthread_cond_wait(&jobs_changed, &jobs_lock);
    j->waiters--;
    if (j->torn_down)
        return false;
    j->busy = true;
    return true;
}

void job_give_locked(struct job *j)
{
    j->busy = false;
    pthread_cond_broadcast(&jobs_changed);
}

/* Frees the records of torn-down jobs, except one whose stager's watcher
 * still runs (it holds the record until the stager's output ends) or that
 * a thread has or waits for: an agent serves jobs for months, and a record
 * each would add up. */
void forget_torn_down_locked(void)
{
    for (struct job **p = &jobs; *p;) {
        struct job *j = *p;
        if (j->torn_down && j->stage.state != AGENT_OP_RUNNING && !j->busy && !j->waiters) {
            *p = j->next;
            free(j->stage.out);
            free(j->stage.errors);
            free(j->persist);
            free(j);
        } else {
            p = &j->next;
        }
    }
}

int jobs_list_persistent(struct rpc_writer *w)
{
    pthread_mutex_lock(&jobs_lock);
    uint32_t n = 0;
    for (struct job *j = jobs; j; j = j->next)
        n += j->persist && !j->torn_down && j->persist->port > 0;
    rpc_put_u32(w, n);
    for (struct job *j = jobs; j; j = j->next) {
        if (!j->persist || j->torn_down || j->persist->port == 0)
            continue;   /* (port 0: its first start is still under way) */
        const struct persistent_rec *p = j->persist;
        agent_instance_put(w, &(struct agent_instance){
            .id = j->id, .name = p->name, .uid = p->uid, .access_gid = p->access_gid,
            .port = (uint32_t)p->port, .pid = server_up(j) ? (uint32_t)j->server_pid : 0,
            .used = persistent_used(j->dir, j->image[0] != '\0'), .quota = p->quota,
            .root = j->dir });
    }
    pthread_mutex_unlock(&jobs_lock);
    return rpc_writer_ok(w) ? 0 : -ENOMEM;
}

void jobs_wake(void)
{
    pthread_mutex_lock(&jobs_lock);
    pthread_cond_broadcast(&jobs_changed);
    pthread_mutex_unlock(&jobs_lock);
}
