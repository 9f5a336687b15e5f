/* jobs_mount: CONFIGURE, where a job's programs find its instance: the
 * instance file, the mount point (its first and its further mounts) and,
 * for access=fuse|both, the kernel mount (fusemount.h); a job that only
 * mounts a persistent instance here is listed without storage. */
#include "jobs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "fusemount.h"
#include "instance.h"
#include "log.h"
#include "mountinfo.h"
#include "persistent.h"

struct fusemount_job fuse_job(const struct job *j, const char *mount, struct fuse_bufs *b)
{
    job_file_path(b->record, sizeof(b->record), j->id, "fuse");
    job_file_path(b->instance, sizeof(b->instance), j->id, "instance");
    pathf(b->log, sizeof(b->log), "%s/adafs-fuse.job%u.%s.log", cfg->log_dir, j->id, cfg->node);
    return (struct fusemount_job){ .id = j->id, .node = cfg->node, .mount = mount,
                                   .record = b->record, .instance = b->instance,
                                   .fuse_path = cfg->fuse_path, .log_path = b->log,
                                   .user = j->user, .timeout_ms = cfg->stop_timeout_ms };
}

/* The mount point is where instance.h's layout puts the job's (its first
 * mount, or its further mount of instance name). */
static int make_mount(struct job *j, const char *mount, const char *name, struct agent_error *e)
{
    char want[PATH_MAX];
    if (instance_named_mount_path(want, sizeof(want), cfg->mount_prefix, j->id, name) < 0 ||
        strcmp(mount, want) != 0 || strlen(mount) + PATH_SLACK >= PATH_MAX)
        return failf(e, AGENT_FAULT_NODE, -EPERM, "job %u: mount point %s is not %s, where "
                     "this agent's --mount-prefix puts it", j->id, mount, want[0] ? want : "?");
    char why[PATH_MAX + 128];
    int rc = check_root_path(cfg->mount_prefix, true, why, sizeof(why));
    if (rc < 0)
        return failf(e, AGENT_FAULT_NODE, rc, "job %u: mount prefix %s: %s", j->id, cfg->mount_prefix, why);
    rc = make_user_dir(mount, &j->user);
    /* Mounted already by another node of this host, root may not look
     * inside (EACCES): fusemount_attach checks it is the job's. */
    if (rc < 0 && fusemount_present(mount))
        rc = 1;
    if (rc < 0)
        return failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot create mount point %s: %s", j->id, mount,
                     rc == -EEXIST ? "exists and is not the job user's" : strerror(-rc));
    if (!name[0])
        pathf(j->mount, sizeof(j->mount), "%s", mount);
    return 0;
}

/* Takes off the job's further mounts (agent_configure.name): each mount
 * point and instance file under the mount prefix named after the job, so
 * that a teardown after an agent restart finds them too. */
void remove_further_mounts(const struct job *j)
{
    DIR *d = opendir(cfg->mount_prefix);
    if (!d)
        return;
    char mhead[32], fhead[48];
    size_t ml = (size_t)snprintf(mhead, sizeof(mhead), "%u.", j->id);
    size_t fl = (size_t)snprintf(fhead, sizeof(fhead), ".job.%u.", j->id);
    const char suffix[] = "." INSTANCE_FILE;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        char path[PATH_MAX], name[AGENT_PERSIST_NAME_MAX + 1];
        struct stat st;
        path_join(path, sizeof(path), cfg->mount_prefix, n);
        if (strncmp(n, mhead, ml) == 0 && agent_persist_name_ok(n + ml)) {
            /* Further mounts are preload only (agent_configure): what is
             * mounted there or inside is the job user's own (fusermount3),
             * which root cannot lstat through (EACCES) and the wipe does
             * not cross: it goes first. */
            int det = mountinfo_detach_tree(path);
            if (det != 0)
                log_warn("job %u: %s: %s", j->id, path,
                         det > 0 ? "detached a mount of the job's user" : strerror(-det));
            if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != j->user.uid)
                continue;
            /* Real files there came from a process without the interposer. */
            child_run_as(&j->user, wipe_as_user, path, 60000);
            if (rmdir(path) < 0 && errno != ENOENT)
                log_warn("job %u: rmdir %s: %s", j->id, path, strerror(errno));
        } else if (strncmp(n, fhead, fl) == 0 && len > fl + sizeof(suffix) - 1 &&
                   len - fl - (sizeof(suffix) - 1) < sizeof(name) &&
                   strcmp(n + len - (sizeof(suffix) - 1), suffix) == 0) {
            memcpy(name, n + fl, len - fl - (sizeof(suffix) - 1));
            name[len - fl - (sizeof(suffix) - 1)] = '\0';
            if (agent_persist_name_ok(name) && unlink(path) < 0 && errno != ENOENT)
                log_warn("job %u: cannot remove %s: %s", j->id, path, strerror(errno));
        }
    }
    closedir(d);
}

/* A job that runs no server here, only uses a persistent instance: listed
 * with no storage (dir ""), so that its TEARDOWN and the Epilog's RELEASE
 * find it and take its mount and instance file off. */
static struct job *list_mount_only_locked(const struct agent_configure *m)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->id = m->job_id;
    j->user = (struct user_id){ m->uid, m->gid };
    j->next = jobs;
    jobs = j;
    log_info("job %u: no server here: its instance file and mount only, as uid %u", j->id,
             (unsigned)m->uid);
    return j;
}

int jobs_configure(const struct agent_configure *m, struct agent_error *e)
{
    pthread_mutex_lock(&jobs_lock);
    struct job *j = find_locked(m->job_id);
    int rc;
    if (j && m->uid && (j->user.uid != m->uid || j->user.gid != m->gid)) {
        pthread_mutex_unlock(&jobs_lock);
        return failf(e, AGENT_FAULT_JOB, -EPERM, "job %u: CONFIGURE for uid %u, but its server "
                     "here runs as uid %u", m->job_id, (unsigned)m->uid, (unsigned)j->user.uid);
    }
    if (!j && m->uid && !agent_id_is_persistent(m->job_id))
        j = list_mount_only_locked(m);
    if (!j || !job_take_locked(j)) {
        forget_torn_down_locked();   /* one we waited for may be done with */
        char note[128];
        rc = failf(e, jobs_wiped_at_start(m->job_id) ? AGENT_FAULT_JOB : AGENT_FAULT_TRANSIENT, -ENOENT,
                   "job %u: not deployed here%s", m->job_id,
                   jobs_unknown_note(m->job_id, note, sizeof(note)));
    } else {
        /* A persistent instance's servers: their file beside their secret
         * (the exchange's peers), no mount (no job runs on their behalf). */
        char path[PATH_MAX];
        const char *name = m->name ? m->name : "";
        if (j->persist)
            beside_secret(path, sizeof(path), j, INSTANCE_FILE);
        else
            instance_named_file_path(path, sizeof(path), cfg->mount_prefix, j->id, name);
        rc = write_user_file(path, m->instance_text, &j->user);
        if (rc < 0)
            rc = failf(e, AGENT_FAULT_NODE, rc, "job %u: cannot write %s: %s", j->id, path, strerror(-rc));
        if (rc == 0 && j->persist)
            log_info("persistent %s: its servers' instance file is %s", j->persist->name, path);
        if (rc == 0 && !j->persist)
            rc = make_mount(j, m->mount, name, e);
        if (rc == 0 && !j->persist && m->access != AGENT_ACCESS_PRELOAD) {
            /* Waits for adafs-fuse to answer: the job is taken, others
             * are served meanwhile. */
            struct fuse_bufs b;
            struct fusemount_job fj = fuse_job(j, j->mount, &b);
            char why[1024];
            pthread_mutex_unlock(&jobs_lock);
            rc = fusemount_attach(&fj, why, sizeof(why));
            pthread_mutex_lock(&jobs_lock);
            if (rc < 0)
                rc = failf(e, AGENT_FAULT_TRANSIENT, rc, "job %u: %s", j->id, why);
            j->fuse = rc == 0;
        }
        job_give_locked(j);
    }
    pthread_mutex_unlock(&jobs_lock);
    return rc;
}
