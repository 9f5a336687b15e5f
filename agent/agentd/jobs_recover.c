/* jobs_recover: what crashed agents left on this node, at start-up: a
 * job's orphaned server stopped and its directory wiped, a persistent
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

#include "fusemount.h"
#include "jobnodes.h"
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
        if (pid > 0 && is_server(pid)) {
            log_warn("recovery: job %u: stopping orphaned server pid %d", id, pid);
            kill(pid, SIGKILL);
        }
        log_warn("recovery: job %u: wiping leftover %s", id, j.dir);
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
