/* jobs_recover: what crashed agents left on this node, at start-up: a job
 * whose record and server prove it intact re-adopted (jobrecord.h), any
 * other job's orphaned server stopped and its directory wiped (one log
 * line says why), a persistent
 * instance listed again with its server (kept, or started again), and a
 * persistent directory without a record wiped. */
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
#include <dirent.h>
#include <fcntl.h>

#include "fusemount.h"
#include "jobnodes.h"
#include "jobrecord.h"
#include "log.h"
#include "mountinfo.h"
#include "persistent.h"
#include "tbf_loop.h"

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

/* The jobs recovery wiped, and when: written at start-up, before requests
 * are served, and only read afterwards. */
static uint32_t *wiped_ids;
static size_t nwiped, wiped_cap;
static time_t agent_started;

static void note_wiped(uint32_t id)
{
    if (nwiped == wiped_cap) {
        size_t cap = wiped_cap ? wiped_cap * 2 : 16;
        uint32_t *ids = realloc(wiped_ids, cap * sizeof(*ids));
        if (!ids)
            return;   /* only the refusals' text is poorer */
        wiped_ids = ids;
        wiped_cap = cap;
    }
    wiped_ids[nwiped++] = id;
}

bool jobs_wiped_at_start(uint32_t id)
{
    for (size_t i = 0; i < nwiped; i++)
        if (wiped_ids[i] == id)
            return true;
    return false;
}

const char *jobs_unknown_note(uint32_t id, char *buf, size_t len)
{
    char at[32];
    struct tm tm;
    time_t t = agent_started ? agent_started : time(NULL);
    strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
    if (jobs_wiped_at_start(id))
        snprintf(buf, len, " (wiped when this agent started at %s: its predecessor stopped "
                 "without tearing it down)", at);
    else
        snprintf(buf, len, " (this agent runs since %s)", at);
    return buf;
}

/* This boot's id, for the records (read once, at start-up). */
static char boot_id[JOBREC_BOOT_ID_MAX];

void job_record_write_locked(const struct job *j, bool staging)
{
    if (j->tearing_down)
        return;   /* its record is gone for good */
    char path[PATH_MAX + 16];
    jobrec_path(path, sizeof(path), j->dir);
    if (!boot_id[0] && jobrec_boot_id(boot_id, sizeof(boot_id)) < 0)
        boot_id[0] = '\0';
    if (!boot_id[0] || j->server_start == 0 || j->server_pid <= 0) {
        log_warn("job %u: no record written (%s): an agent that restarts wipes the job", j->id,
                 !boot_id[0] ? "this boot's id is unknown" : "its server's start time is unknown");
        return;
    }
    struct job_rec r = { .id = j->id, .uid = j->user.uid, .gid = j->user.gid, .index = j->index,
                         .nservers = j->nservers, .port = j->port, .pid = j->server_pid,
                         .pid_start = j->server_start, .fuse = j->fuse, .staging = staging };
    pathf(r.boot_id, sizeof(r.boot_id), "%s", boot_id);
    pathf(r.secret_hex, sizeof(r.secret_hex), "%s", j->secret_hex);
    pathf(r.storage, sizeof(r.storage), "%s", j->storage);
    pathf(r.image, sizeof(r.image), "%s", j->image);
    pathf(r.mount, sizeof(r.mount), "%s", j->mount);
    int rc = jobrec_save(path, &r);
    if (rc < 0)
        log_warn("job %u: cannot write %s: %s: an agent that restarts wipes the job", j->id, path,
                 strerror(-rc));
}

void job_record_remove(const struct job *j)
{
    char path[PATH_MAX + 16];
    jobrec_path(path, sizeof(path), j->dir);
    if (unlink(path) < 0 && errno != ENOENT)
        log_warn("job %u: cannot remove %s: %s", j->id, path, strerror(errno));
}

/* Does the job's secret file (the user's: read, never trusted further)
 * hold the record's secret? */
static bool secret_matches(const struct job *j, const char *secret_hex)
{
    char path[PATH_MAX], text[2 * INSTANCE_SECRET_HEX];
    secret_path(path, sizeof(path), j);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == j->user.uid
                    ? read(fd, text, sizeof(text) - 1) : -1;
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    return strcmp(text, secret_hex) == 0;
}

/* The job at dir (the user's directory st) as its record proves it:
 * re-adopted and listed, 0; else -1 with why, *recorded whether a record
 * of this agent's was there, and *pidfd the server's if it is still the
 * one the record names (to stop it by). */
static int adopt_job(const char *storage, uint32_t id, const char *dir, const struct stat *st,
                     int *pidfd, bool *recorded, char *why, size_t len)
{
    char path[PATH_MAX + 16], err[PATH_MAX + 128];
    struct job_rec r;
    *pidfd = -1;
    jobrec_path(path, sizeof(path), dir);
    int rc = jobrec_load(path, &r, err, sizeof(err));
    *recorded = rc == 0;
    if (rc == -ENOENT) {
        pathf(why, len, "no record of it (its start did not finish, or an older agent's)");
        return -1;
    }
    if (rc < 0) {
        pathf(why, len, "%s", err);
        return -1;
    }
    char image[PATH_MAX + 8], mount[PATH_MAX];
    pathf(image, sizeof(image), "%s.img", dir);
    pathf(mount, sizeof(mount), "%s/%u", cfg->mount_prefix, id);
    struct job probe = { .id = id, .user = { r.uid, r.gid } };
    struct stat ist;
    int mounts = mountinfo_count(dir, NULL, NULL);
    if (r.id != id || strcmp(r.storage, storage) != 0)
        pathf(why, len, "its record names job %u on %s", r.id, r.storage);
    else if (st->st_uid != r.uid || st->st_uid == 0)
        pathf(why, len, "%s belongs to uid %u, its record to uid %u", dir, (unsigned)st->st_uid,
                 (unsigned)r.uid);
    else if (r.staging)
        pathf(why, len, "a stage ran when its agent stopped: how it ended is unknown");
    else if (!secret_matches(&probe, r.secret_hex))
        pathf(why, len, "its secret file does not hold its record's secret");
    else if (r.image[0] && (strcmp(r.image, image) != 0 || lstat(image, &ist) < 0 ||
                            !S_ISREG(ist.st_mode) || ist.st_uid != 0))
        pathf(why, len, "its store image %s is not root's file %s", r.image, image);
    else if (r.image[0] && (mounts != 1 || mountinfo_count(dir, "ext4", NULL) != 1))
        pathf(why, len, "%d mounts on %s, not its store alone", mounts, dir);
    else if (!r.image[0] && mounts != 0)
        pathf(why, len, "%d mounts on %s, which has no store", mounts, dir);
    else if (r.mount[0] && strcmp(r.mount, mount) != 0)
        pathf(why, len, "its record's mount %s is not %s", r.mount, mount);
    else if (r.mount[0] && r.fuse && !fusemount_present(mount))
        pathf(why, len, "its FUSE mount on %s is gone", mount);
    else if (r.mount[0] && !r.fuse && (lstat(mount, &ist) < 0 || !S_ISDIR(ist.st_mode) ||
                                       ist.st_uid != r.uid))
        pathf(why, len, "its mount point %s is not the user's directory", mount);
    else if ((*pidfd = jobrec_pin_server(&r, err, sizeof(err))) < 0)
        pathf(why, len, "%s", err);
    else
        why[0] = '\0';
    if (why[0]) {
        /* Not adopted: its server is stopped, but only if it is still the
         * process the record names. */
        if (*pidfd < 0)
            *pidfd = jobrec_pin_server(&r, err, sizeof(err));
        return -1;
    }
    struct job *j = calloc(1, sizeof(*j));
    if (!j) {
        pathf(why, len, "out of memory");
        return -1;
    }
    j->id = id;
    j->user = (struct user_id){ r.uid, r.gid };
    j->index = r.index;
    j->nservers = r.nservers;
    pathf(j->secret_hex, sizeof(j->secret_hex), "%s", r.secret_hex);
    pathf(j->storage, sizeof(j->storage), "%s", storage);
    pathf(j->dir, sizeof(j->dir), "%s", dir);
    pathf(j->image, sizeof(j->image), "%s", r.image);
    pathf(j->mount, sizeof(j->mount), "%s", r.mount);
    j->fuse = r.fuse;
    j->server_pid = r.pid;
    j->server_start = r.pid_start;
    j->port = r.port;
    j->adopted = true;
    j->pinned = true;
    j->pidfd = *pidfd;
    *pidfd = -1;
    jobnodes_set(id, r.nservers);
    char bwdir[PATH_MAX];
    if (cfg->tbf && tbf_dir(j, bwdir, sizeof(bwdir)) == 0)
        tbf_loop_add(cfg->tbf, id, r.nservers, bwdir);
    j->next = jobs;
    jobs = j;
    log_info("recovery: job %u: re-adopted: its server pid %d (started by the agent before) is up "
             "on port %d as uid %u, %s%s", id, r.pid, r.port, (unsigned)r.uid, dir,
             r.mount[0] ? (r.fuse ? ", FUSE mount kept" : ", mount kept") : "");
    return 0;
}

static void recover_dir(const char *storage)
{
    char nodedir[PATH_MAX];
    pathf(nodedir, sizeof(nodedir), "%s/%s", storage, cfg->node);
    DIR *d = opendir(nodedir);
    if (!d)
        return;
    /* Records are proof only in a directory no user can write. */
    char untrusted[PATH_MAX + 160] = "";
    if (check_root_path(nodedir, false, untrusted, sizeof(untrusted)) == 0)
        untrusted[0] = '\0';
    else if (!untrusted[0])
        pathf(untrusted, sizeof(untrusted), "%s is not root's alone", nodedir);
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned id;
        char tail;
        int n = sscanf(e->d_name, "job.%u%c", &id, &tail);
        size_t nlen = strlen(e->d_name);
        if (n == 2 && tail == '.' && nlen > 7 && strcmp(e->d_name + nlen - 7, ".record") == 0) {
            /* A record whose directory is gone (a crash mid-teardown). */
            char rec[PATH_MAX], dir[PATH_MAX];
            struct stat st;
            pathf(rec, sizeof(rec), "%s/%s", nodedir, e->d_name);
            pathf(dir, sizeof(dir), "%s/job.%u", nodedir, id);
            if (lstat(dir, &st) < 0 && errno == ENOENT && unlink(rec) < 0 && errno != ENOENT)
                log_warn("recovery: job %u: cannot remove leftover %s: %s", id, rec, strerror(errno));
            continue;
        }
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
        /* Before anything is detached: a job its record proves intact is
         * kept, with its store and mounts. */
        struct stat dst;
        char why[PATH_MAX + 256];
        int pinned = -1;
        bool recorded = false;
        if (find_locked(id))
            continue;   /* listed already (on another storage root) */
        errno = 0;
        if (untrusted[0]) {
            pathf(why, sizeof(why), "its records are not trusted: %s", untrusted);
        } else if (lstat(j.dir, &dst) == 0 && S_ISDIR(dst.st_mode)) {
            if (adopt_job(storage, id, j.dir, &dst, &pinned, &recorded, why, sizeof(why)) == 0)
                continue;
        } else {
            pathf(why, sizeof(why), "%s: %s", j.dir,
                     errno ? strerror(errno) : "not a directory");
        }
        /* A FUSE mount the job's user stacked on its root (fusermount3)
         * answers root's lstat EACCES: the job would never be wiped. What
         * is mounted there goes first (the store too: wiped anyway). */
        int detached = mountinfo_detach_all(j.dir);
        if (detached < 0)
            log_warn("recovery: job %u: cannot detach what is mounted on %s: %s", id, j.dir,
                     strerror(-detached));
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
        char stopped[64] = "";
        if (pinned >= 0) {
            /* The server its record names, held by a pidfd: that one. */
            snprintf(stopped, sizeof(stopped), ", its server stopped");
            jobrec_stop_pinned(pinned, 0);
        } else if (recorded) {
            /* Its record names no live server: the pid file's pid is
             * another process now, never signalled. */
        } else if (pid > 0 && jobrec_runs_server(pid)) {   /* only an adafsd is killed */
            snprintf(stopped, sizeof(stopped), ", orphaned server pid %d stopped", pid);
            kill(pid, SIGKILL);
        }
        log_warn("recovery: job %u: not re-adopted (%s): wiping %s%s", id, why, j.dir, stopped);
        note_wiped(id);
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
    agent_started = time(NULL);
    for (size_t i = 0; i < cfg->nroots; i++) {
        recover_dir(cfg->storage_roots[i]);
        persistent_scan(cfg->storage_roots[i], cfg->node, adopt_persistent,
                        wipe_persistent_leftover, NULL);
    }
    pthread_mutex_unlock(&jobs_lock);
}
