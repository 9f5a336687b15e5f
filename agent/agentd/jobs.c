#include "jobs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "fusemount.h"
#include "handshake.h"
#include "instance.h"
#include "jobnodes.h"
#include "log.h"
#include "net.h"
#include "persistent.h"
#include "store.h"
#include "tbf_loop.h"

/* What is kept of a stager's stdout and of its stderr for STATUS: the
 * start of each, so that both, the note on what was dropped and the rest
 * of the reply stay well under AGENT_MAX_BODY. */
#define OUTPUT_MAX (4u << 20)

struct stage_op {
    pid_t pid;
    int state;                 /* enum agent_op_state */
    int exit_status;
    int out_fd, err_fd;
    char *out, *errors;
    size_t out_len, err_len;
    size_t out_dropped, err_dropped;   /* bytes beyond OUTPUT_MAX */
    bool discard;              /* torn down: nobody will ask for output */
};

struct job {
    uint32_t id;
    struct user_id user;
    uint32_t index;
    char secret_hex[2 * INSTANCE_SECRET_SIZE + 1];   /* which instance: a START again must match */
    char storage[PATH_MAX];
    char dir[PATH_MAX];        /* S/<node>/job.<id> */
    char image[PATH_MAX];      /* S/<node>/job.<id>.img, its file system ("": none) */
    char mount[PATH_MAX];      /* "" until CONFIGURE */
    bool fuse;                 /* access=fuse|both: a kernel mount there (fusemount.h) */
    pid_t server_pid;
    int port;
    struct stage_op stage;
    bool torn_down;
    /* A thread works on the job without jobs_lock (starting it, tearing it
     * down: seconds of waiting on a server or a wipe), so the agent serves
     * other jobs meanwhile; others wait for it (job_take_locked). */
    bool busy;
    int waiters;               /* threads waiting to take it: keep the record */
    /* A persistent instance (persistent.h): what restarts its server; NULL
     * for a job. adopted: its server was started by an agent before this
     * one, so it is no child of ours (stopped through /proc, not reaped). */
    struct persistent_rec *persist;
    bool adopted;
    struct job *next;
};

static const struct agent_settings *cfg;

/* Paths are built from a storage root, a node name and a job id, all checked
 * for length before use (jobs_start, jobs_init), so they always fit. */
#define PATH_SLACK 512

static void pathf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_changed = PTHREAD_COND_INITIALIZER;
static struct job *jobs;

static int failf(struct agent_error *e, enum agent_fault fault, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Formats "node N: <message>" into e with whose fault it is (agent_proto.h:
 * the node's only where it is proven, since the plugin drains the node for
 * it) and returns rc (a -errno). */
static int failf(struct agent_error *e, enum agent_fault fault, int rc, const char *fmt, ...)
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
static enum agent_fault exec_fault(int rc)
{
    return rc == -ENOENT || rc == -EACCES || rc == -ENOEXEC ? AGENT_FAULT_NODE
                                                            : AGENT_FAULT_TRANSIENT;
}

static int check_root_path(const char *path, bool create, char *why, size_t whylen);

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
static struct job *find_locked(uint32_t id)
{
    for (struct job *j = jobs; j; j = j->next)
        if (j->id == id && !j->torn_down)
            return j;
    return NULL;
}

/* Takes j for work on it, waiting (jobs_lock released meanwhile) while
 * another thread has it. False if it was torn down meanwhile. */
static bool job_take_locked(struct job *j)
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

static void job_give_locked(struct job *j)
{
    j->busy = false;
    pthread_cond_broadcast(&jobs_changed);
}

/* Frees the records of torn-down jobs, except one whose stager's watcher
 * still runs (it holds the record until the stager's output ends) or that
 * a thread has or waits for: an agent serves jobs for months, and a record
 * each would add up. */
static void forget_torn_down_locked(void)
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

/* A storage path from the plugin must be absolute, free of "..", and one of
 * this agent's storage roots or below one. */
static bool storage_allowed(const char *path)
{
    if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") ||
        (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0))
        return false;
    for (size_t i = 0; i < cfg->nroots; i++) {
        size_t len = strlen(cfg->storage_roots[i]);
        if (strncmp(path, cfg->storage_roots[i], len) == 0 &&
            (path[len] == '\0' || path[len] == '/'))
            return true;
    }
    return false;
}

/* Checks one component of a path root writes below (last: the path
 * itself). Returns 0 or -errno with why filled. */
static int check_root_component(const char *dir, bool last, char *why, size_t whylen)
{
    struct stat st;
    int rc = 0;
    if (lstat(dir, &st) < 0)
        rc = -errno;
    else if (S_ISLNK(st.st_mode))
        rc = -ELOOP;
    else if (!S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    else if (st.st_uid != 0)
        rc = -EPERM;
    else if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
        rc = -EPERM;
    if (rc == 0)
        return 0;
    if (rc == -ELOOP)
        snprintf(why, whylen, "%s is a symbolic link", dir);
    else if (rc == -EPERM && st.st_uid != 0)
        snprintf(why, whylen, "%s is owned by uid %u, not root", dir, (unsigned)st.st_uid);
    else if (rc == -EPERM)
        snprintf(why, whylen, "%s is group/world-writable%s", dir, last ? "" : " and not sticky");
    else
        snprintf(why, whylen, "%s: %s", dir, strerror(-rc));
    return rc;
}

/* Root makes and writes files below the storage paths and the mount
 * prefix, so no user may be able to change any directory on the way
 * there (a user-owned /var/tmp/adafs would let them plant links): every
 * component from / must be a real directory of root's, not writable by
 * others unless sticky (so /tmp may be on the way; the path itself may
 * not be writable at all). create: mkdir -p what is missing, 0755;
 * otherwise a missing component ends the check (it is made, and checked,
 * when first used). Returns 0 or -errno with why naming the component. */
static int check_root_path(const char *path, bool create, char *why, size_t whylen)
{
    char buf[PATH_MAX];
    pathf(buf, sizeof(buf), "%s", path);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    int rc = check_root_component("/", len == 1, why, whylen);
    for (size_t i = 1; rc == 0 && i <= len; i++) {
        if ((buf[i] != '/' && buf[i] != '\0') || buf[i - 1] == '/')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (create && mkdir(buf, 0755) == 0) {
            if (chmod(buf, 0755) < 0)   /* whatever the umask */
                rc = -errno;
        } else if (create && errno != EEXIST) {
            rc = -errno;
        }
        if (rc < 0)
            snprintf(why, whylen, "cannot create %s: %s", buf, strerror(-rc));
        else
            rc = check_root_component(buf, i == len, why, whylen);
        buf[i] = saved;
        if (rc == -ENOENT && !create)
            return 0;
    }
    return rc;
}

/* Creates dir (in a root-owned parent) for the job user, 0700. An existing
 * directory is accepted only if it is a real directory of that user. The
 * directory appears with its owner already set (made under a temporary
 * name, then renamed without replacing), because agents sharing a mount
 * prefix create a job's mount point at the same moment and one must never
 * see the other's directory while it still belongs to root. */
static int make_user_dir(const char *dir, const struct user_id *u)
{
    char tmp[PATH_MAX];
    pathf(tmp, sizeof(tmp), "%s.tmp.%d.%lu", dir, (int)getpid(), (unsigned long)pthread_self());
    if (mkdir(tmp, 0700) < 0)
        return -errno;
    int rc = 0;
    if (lchown(tmp, u->uid, u->gid) < 0 || renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
        rc = -errno;
    if (rc == 0)
        return 0;
    rmdir(tmp);
    if (rc != -EEXIST)
        return rc;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != u->uid)
        return -EEXIST;
    return 1;
}

/* Writes text to path (in a root-owned directory) as a private file of the
 * job user: temporary name, owner set before any byte is written, rename. */
static int write_user_file(const char *path, const char *text, const struct user_id *u)
{
    char tmp[PATH_MAX];
    pathf(tmp, sizeof(tmp), "%s.tmp.%d.%lu", path, (int)getpid(),
             (unsigned long)pthread_self());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (fchown(fd, u->uid, u->gid) < 0 || net_write_full(fd, text, strlen(text), 0) < 0 ||
        fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (!rc && rename(tmp, path) < 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (ftw->level == 0)
        return 0;   /* the top directory stays: it lives in a root-owned parent */
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

#define WIPE_WALK (FTW_PHYS | FTW_MOUNT)   /* never follow a link, never leave the file system */

/* Gives the user rwx on every directory, before anything is removed: a
 * directory the job made read-only or unreadable must not stop the wipe
 * (a failed teardown drains the node). Pre-order, so each directory is
 * opened up before its entries are visited; one that could not even be
 * read is opened up, then walked on its own. A chmod that fails shows up
 * as a failed removal. */
static int open_up_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_D && (st->st_mode & 0700) != 0700)
        chmod(path, 0700);
    if (flag == FTW_DNR && chmod(path, 0700) == 0)
        return nftw(path, open_up_entry, 16, WIPE_WALK) == 0 ? 0 : -1;
    return 0;
}

/* Runs as the job user: empties the job's server root (or mount point). */
static int wipe_as_user(void *dir)
{
    if (nftw(dir, open_up_entry, 16, WIPE_WALK) != 0)
        return 1;
    return nftw(dir, remove_entry, 32, FTW_DEPTH | WIPE_WALK) == 0 ? 0 : 1;
}

static void path_join(char *out, size_t len, const char *a, const char *b)
{
    if ((size_t)snprintf(out, len, "%s/%s", a, b) >= len)
        out[0] = '\0';
}

/* The instance file and the secret: in the mount prefix, so their path is
 * the same on every node whatever storage each node uses. */
static void job_file_path(char *out, size_t len, uint32_t id, const char *what)
{
    instance_file_path(out, len, cfg->mount_prefix, id, what);
}

/* Removes the instance and secret files of a job once no node directory of
 * it is left under storage (several agents may share a host). */
static void remove_job_files_if_last(const char *storage, uint32_t id)
{
    char lockpath[PATH_MAX], path[PATH_MAX], name[64];
    path_join(lockpath, sizeof(lockpath), storage, ".lock");
    int lock = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock >= 0)
        flock(lock, LOCK_EX);
    bool others = false;
    DIR *d = opendir(storage);
    snprintf(name, sizeof(name), "job.%u", id);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR)
            continue;
        char nodedir[PATH_MAX];
        path_join(nodedir, sizeof(nodedir), storage, e->d_name);
        path_join(path, sizeof(path), nodedir, name);
        struct stat st;
        if (lstat(path, &st) == 0)
            others = true;
    }
    if (d)
        closedir(d);
    if (!others) {
        job_file_path(path, sizeof(path), id, INSTANCE_FILE);
        unlink(path);
        job_file_path(path, sizeof(path), id, INSTANCE_SECRET);
        unlink(path);
        job_file_path(path, sizeof(path), id, INSTANCE_SERVER_KEY);
        unlink(path);
    }
    if (lock >= 0)
        close(lock);
}

/* Frees a stage's output and drops whatever still comes. */
static void discard_output(struct stage_op *op)
{
    free(op->out);
    free(op->errors);
    op->out = op->errors = NULL;
    op->out_len = op->err_len = op->out_dropped = op->err_dropped = 0;
    op->discard = true;
}

static void pidfile_path(char *out, size_t len, const struct job *j)
{
    pathf(out, len, "%s.pid", j->dir);
}

/* The server's --secret-file: a job's in the mount prefix (the same path
 * on every node), a persistent instance's next to its storage, which
 * outlives the mount prefix's contents (persistent.h). */
static void secret_path(char *out, size_t len, const struct job *j)
{
    if (j->persist)
        pathf(out, len, "%s.secret", j->dir);
    else
        job_file_path(out, len, j->id, INSTANCE_SECRET);
}

/* Beside the secret (adafsd finds them there, by the secret's name): the
 * servers' key (their usage exchange) and, for a persistent instance, the
 * instance file of its servers (a job's is in the mount prefix already). */
static void beside_secret(char *out, size_t len, const struct job *j, const char *what)
{
    if (j->persist)
        pathf(out, len, "%s.%s", j->dir, what);
    else
        job_file_path(out, len, j->id, what);
}

/* Writes the servers' key beside the secret, the server's user's like the
 * secret (doc/fairshare.md says who may read it and why that is enough);
 * without one (hex ""), removes a key an earlier run left, so the server
 * does not take it. 0 or -errno. */
static int write_server_key(const struct job *j, const char *hex, char *path, size_t len)
{
    beside_secret(path, len, j, INSTANCE_SERVER_KEY);
    if (!hex[0])
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
    char text[80];
    snprintf(text, sizeof(text), "%s\n", hex);
    return write_user_file(path, text, &j->user);
}

/* What fusemount needs of a job; the strings live in the caller's bufs. */
struct fuse_bufs {
    char record[PATH_MAX], instance[PATH_MAX], log[PATH_MAX];
};
static struct fusemount_job fuse_job(const struct job *j, const char *mount, struct fuse_bufs *b)
{
    job_file_path(b->record, sizeof(b->record), j->id, "fuse");
    job_file_path(b->instance, sizeof(b->instance), j->id, "instance");
    pathf(b->log, sizeof(b->log), "%s/adafs-fuse.job%u.%s.log", cfg->log_dir, j->id, cfg->node);
    return (struct fusemount_job){ .id = j->id, .node = cfg->node, .mount = mount,
                                   .record = b->record, .instance = b->instance,
                                   .fuse_path = cfg->fuse_path, .log_path = b->log,
                                   .user = j->user, .timeout_ms = cfg->stop_timeout_ms };
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

/* The directory of a job's server's rates and usage (tbf_loop.h): next to
 * its root, the job user's (the server writes its usage there). */
static int tbf_dir(const struct job *j, char *dir, size_t len)
{
    pathf(dir, len, "%s.bw", j->dir);
    int rc = make_user_dir(dir, &j->user);
    return rc < 0 ? rc : 0;
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
static void remove_further_mounts(const struct job *j);

static int teardown_taken(struct job *j, bool hurry, struct agent_error *e)
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
    if (j->adopted && j->server_pid > 0) {
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
        /* Real files there came from a process without the interposer. */
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
static bool server_up(const struct job *j)
{
    return j->server_pid > 0 && persistent_server_alive(j->server_pid, j->dir, j->user.uid);
}

/* Starts a persistent instance's server again, on its storage as it is and
 * the port its record keeps. j is taken, jobs_lock not held. */
static int restart_persistent(struct job *j, struct agent_error *e)
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
    log_info("job %u: server %u of %u up as uid %u on port %d (pid %d), root %s", j->id,
             j->index, m->nservers, (unsigned)m->uid, j->port, (int)j->server_pid, j->dir);
    job_give_locked(j);
    pthread_mutex_unlock(&jobs_lock);
    return 0;
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
static void remove_further_mounts(const struct job *j)
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
        rc = failf(e, AGENT_FAULT_TRANSIENT, -ENOENT, "job %u: not deployed here", m->job_id);
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
        return failf(e, AGENT_FAULT_TRANSIENT, -ENOENT, "job %u: not deployed here", m->job_id);
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

/* The pid a server's pid file names (0: none). */
static int read_pid(const char *pidfile)
{
    FILE *f = fopen(pidfile, "re");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

/* Is pid an adafsd? Only then may recovery kill it. */
static bool is_server(pid_t pid)
{
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strncmp(base, "adafsd", 6) == 0 || strstr(base, "lt-adafsd") != NULL;
}

static void recover_dir(const char *storage)
{
    char nodedir[PATH_MAX];
    pathf(nodedir, sizeof(nodedir), "%s/%s", storage, cfg->node);
    DIR *d = opendir(nodedir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned id;
        char tail;
        int n = sscanf(e->d_name, "job.%u%c", &id, &tail);
        if (n == 2 && tail == '.' && strcmp(e->d_name + strlen(e->d_name) - 4, ".img") == 0) {
            /* An image whose server root is gone (a crash mid-teardown). */
            char image[PATH_MAX], dir[PATH_MAX];
            pathf(image, sizeof(image), "%s/%s", nodedir, e->d_name);
            pathf(dir, sizeof(dir), "%s/job.%u", nodedir, id);
            struct stat st;
            if (lstat(dir, &st) < 0 && errno == ENOENT) {
                log_warn("recovery: job %u: removing leftover %s", id, image);
                unlink(image);
            }
            continue;
        }
        if (n != 1)
            continue;
        struct job j = { .id = id };
        pathf(j.storage, sizeof(j.storage), "%s", storage);
        pathf(j.dir, sizeof(j.dir), "%s/%s", nodedir, e->d_name);
        pathf(j.image, sizeof(j.image), "%s.img", j.dir);
        struct stat st;
        if (lstat(j.dir, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        j.user = (struct user_id){ st.st_uid, st.st_gid };
        struct stat mst;
        pathf(j.mount, sizeof(j.mount), "%s/%u", cfg->mount_prefix, id);
        /* A FUSE mount left there is taken off (teardown_taken); root may
         * not look inside it. */
        if (!fusemount_present(j.mount) &&
            (lstat(j.mount, &mst) < 0 || !S_ISDIR(mst.st_mode) || mst.st_uid != st.st_uid))
            j.mount[0] = '\0';
        char pidfile[PATH_MAX];
        pidfile_path(pidfile, sizeof(pidfile), &j);
        int pid = read_pid(pidfile);
        if (pid > 0 && is_server(pid)) {
            log_warn("recovery: job %u: stopping orphaned server pid %d", id, pid);
            kill(pid, SIGKILL);
        }
        log_warn("recovery: job %u: wiping leftover %s", id, j.dir);
        struct agent_error err;
        if (st.st_uid == 0) {
            rmdir(j.dir);   /* never filled: a user's files are never root's */
            unlink(pidfile);
            remove_job_files_if_last(storage, id);
        } else {
            teardown_taken(&j, true, &err);   /* not listed: nobody else sees it */
        }
    }
    closedir(d);
}

/* A persistent instance an agent before this one served: listed again,
 * its server kept if alive, else started again on the same storage and
 * port. Never wiped: only its TEARDOWN does that. */
static void adopt_persistent(const char *record, void *arg)
{
    (void)arg;
    struct persistent_rec r;
    char err[PATH_MAX + 128];
    if (persistent_record_load(record, &r, err, sizeof(err)) < 0) {
        log_error("recovery: %s: its instance is left as it is, not served", err);
        return;
    }
    struct job *j = calloc(1, sizeof(*j));
    struct persistent_rec *copy = malloc(sizeof(*copy));
    if (!j || !copy) {
        free(j);
        free(copy);
        log_error("recovery: persistent %s: out of memory", r.name);
        return;
    }
    *copy = r;
    j->persist = copy;
    j->id = r.id;
    j->user = (struct user_id){ r.uid, r.gid };
    j->index = r.index;
    pathf(j->secret_hex, sizeof(j->secret_hex), "%s", r.secret_hex);
    pathf(j->storage, sizeof(j->storage), "%s", r.storage);
    persistent_dir(j->dir, sizeof(j->dir), r.storage, cfg->node, r.name);
    char want[PATH_MAX + 16], pidfile[PATH_MAX];
    pathf(want, sizeof(want), "%s.record", j->dir);
    struct stat st;
    if (strcmp(want, record) != 0 || find_locked(r.id) || lstat(j->dir, &st) < 0 ||
        st.st_uid != r.uid) {
        log_error("recovery: %s: not the record of instance %u's storage %s, or it is served "
                  "already: left as it is", record, r.id, j->dir);
        free(copy);
        free(j);
        return;
    }
    pathf(j->image, sizeof(j->image), "%s.img", j->dir);
    if (lstat(j->image, &st) < 0)
        j->image[0] = '\0';
    pidfile_path(pidfile, sizeof(pidfile), j);
    int pid = read_pid(pidfile);
    struct agent_error e;
    if (persistent_server_alive(pid, j->dir, r.uid)) {
        j->server_pid = pid;
        j->port = r.port;
        j->adopted = true;
        jobnodes_set(j->id, r.nservers);
        char bwdir[PATH_MAX];
        if (cfg->tbf && tbf_dir(j, bwdir, sizeof(bwdir)) == 0)
            tbf_loop_add(cfg->tbf, j->id, r.nservers, bwdir);
        log_info("recovery: persistent %s (instance %u): its server is up on port %d (pid %d): kept",
                 r.name, r.id, r.port, pid);
    } else if (restart_persistent(j, &e) < 0) {
        log_error("recovery: persistent %s (instance %u): its server is down and did not start "
                  "again; a START of it tries again: %s", r.name, r.id, e.text);
    }
    j->next = jobs;
    jobs = j;
}

/* A directory under S/<node>/persistent without a record: a start or a
 * destroy that did not finish. Wiped as a crashed job's is. */
static void wipe_persistent_leftover(const char *dir, void *arg)
{
    (void)arg;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return;
    const char *name = strrchr(dir, '/') + 1;
    struct persistent_rec r = { .uid = st.st_uid };
    pathf(r.name, sizeof(r.name), "%s", name);
    struct job j = { .id = 0, .persist = &r, .user = { st.st_uid, st.st_gid } };
    pathf(j.dir, sizeof(j.dir), "%s", dir);
    pathf(j.image, sizeof(j.image), "%s.img", dir);
    char pidfile[PATH_MAX];
    pidfile_path(pidfile, sizeof(pidfile), &j);
    int pid = read_pid(pidfile);
    if (persistent_server_alive(pid, dir, st.st_uid)) {
        j.server_pid = pid;
        j.adopted = true;
    }
    log_warn("recovery: %s has no record (a start or destroy cut short): wiping it", dir);
    struct agent_error err;
    if (st.st_uid == 0) {
        rmdir(dir);
        unlink(pidfile);
    } else if (teardown_taken(&j, true, &err) < 0) {
        log_warn("recovery: %s", err.text);
    }
}

void jobs_recover(void)
{
    pthread_mutex_lock(&jobs_lock);
    for (size_t i = 0; i < cfg->nroots; i++) {
        recover_dir(cfg->storage_roots[i]);
        persistent_scan(cfg->storage_roots[i], cfg->node, adopt_persistent,
                        wipe_persistent_leftover, NULL);
    }
    pthread_mutex_unlock(&jobs_lock);
}
