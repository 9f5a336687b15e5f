/* fusemount: see fusemount.h. */
#include "fusemount.h"
#include "fuse/max_read.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mountinfo.h"
#include "net.h"

#define FSTYPE "fuse.adafs"
#define NODES_MAX 256
#define NODE_MAX 64

/* How many adafs mounts are at path (stacked). *minor (if not NULL) gets
 * the device minor of the topmost one, its FUSE connection's number. */
static int mounts_at(const char *path, unsigned *minor)
{
    return mountinfo_count(path, FSTYPE, minor);
}

bool fusemount_present(const char *path)
{
    return mounts_at(path, NULL) > 0;
}

/* Is pid an adafs-fuse of uid? Only then may it be stopped: the pid in a
 * record may have been reused since. */
static bool is_fuse_of(pid_t pid, uid_t uid)
{
    if (pid <= 0)
        return false;
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strncmp(base, "adafs-fuse", 10) != 0 && strncmp(base, "lt-adafs-fuse", 13) != 0)
        return false;
    struct stat st;
    snprintf(link, sizeof link, "/proc/%d", (int)pid);
    return stat(link, &st) == 0 && st.st_uid == uid;
}

/* Gone: no such process, or a zombie its parent has yet to reap. */
static bool gone(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] == 'Z';
}

static bool wait_gone(pid_t pid, int ms)
{
    int64_t deadline = net_now_ms() + ms;
    while (!gone(pid)) {
        if (net_now_ms() >= deadline)
            return false;
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    return true;
}

/* Ends a FUSE connection whatever holds it, when fusectl is mounted: every
 * request waiting on it fails at once. */
static void abort_connection(unsigned minor)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/fs/fuse/connections/%u/abort", minor);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    if (write(fd, "1", 1) < 0)
        log_warn("cannot abort FUSE connection %u: %s", minor, strerror(errno));
    close(fd);
}

/* Once unmounted, adafs-fuse has nothing left to finish: this long to end
 * after SIGTERM, or it is killed. */
#define STOP_GRACE_MS 2000

/* Takes every adafs mount off path (lazily: busy or hung, it goes at once)
 * and stops adafs-fuse pid (if it is uid's): SIGTERM (and SIGCONT, for one
 * that was stopped), SIGKILL after ms (at most STOP_GRACE_MS). */
static void stop_mount(const char *path, pid_t pid, uid_t uid, int ms)
{
    unsigned minor = 0;
    for (int i = 0; i < 16 && mounts_at(path, &minor) > 0; i++) {
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
            log_warn("umount2 %s: %s", path, strerror(errno));
            break;
        }
        abort_connection(minor);
        log_info("unmounted %s (FUSE connection %u)", path, minor);
    }
    if (!is_fuse_of(pid, uid))
        return;
    if (ms > STOP_GRACE_MS)
        ms = STOP_GRACE_MS;
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    if (!wait_gone(pid, ms)) {
        log_warn("adafs-fuse pid %d ignored SIGTERM for %d ms, killing it", (int)pid, ms);
        kill(pid, SIGKILL);
        wait_gone(pid, 1000);
    }
    child_wait(pid, 0);   /* forget its status if it was this agent's child */
}

struct record {
    pid_t pid;
    int n;
    char nodes[NODES_MAX][NODE_MAX + 1];
};

/* Opens and locks the record; -errno (-ENOENT: none, unless create). A
 * record unlinked by its last user while we waited for the lock is not
 * the path's any more: open it again. */
static int record_lock(const char *path, bool create)
{
    for (;;) {
        int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
        if (fd < 0)
            return -errno;
        struct stat held, now;
        if (flock(fd, LOCK_EX) < 0 || fstat(fd, &held) < 0) {
            int rc = -errno;
            close(fd);
            return rc;
        }
        if (stat(path, &now) == 0 && now.st_ino == held.st_ino && now.st_dev == held.st_dev)
            return fd;
        close(fd);
    }
}

static void record_read(int fd, struct record *r)
{
    r->pid = 0;
    r->n = 0;
    FILE *f = fdopen(dup(fd), "r");
    if (!f)
        return;
    char line[128], node[NODE_MAX + 1];
    int pid;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "pid %d", &pid) == 1)
            r->pid = pid;
        else if (sscanf(line, "node %64s", node) == 1 && r->n < NODES_MAX)
            snprintf(r->nodes[r->n++], sizeof r->nodes[0], "%s", node);
    }
    fclose(f);
}

static int record_write(int fd, const struct record *r)
{
    char buf[64 + NODES_MAX * (NODE_MAX + 8)];
    int len = snprintf(buf, sizeof buf, "pid %d\n", (int)r->pid);
    for (int i = 0; i < r->n; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "node %s\n", r->nodes[i]);
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len || fsync(fd) < 0)
        return -errno;
    return 0;
}

static int find_node(const struct record *r, const char *node)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->nodes[i], node) == 0)
            return i;
    return -1;
}

/* Reads "ready" from a starting adafs-fuse within ms. */
static int await_ready(int fd, int ms)
{
    char line[16];
    int got = child_read_ready(fd, ms, line, sizeof line);
    if (got <= 0)
        return got < 0 ? got : -ECHILD;   /* it exited (its log says why) */
    return strcmp(line, "ready") == 0 ? 0 : -EIO;
}

/* Mounts /dev/fuse at j->mount for the job's user and runs adafs-fuse on
 * it; 0 and its pid, or -errno with a message. */
/* A mapped file is read through the page cache, by readahead: requests of
 * the mount's read_ahead_kb (128 KiB by default), each a round trip to the
 * servers. One request of the largest size FUSE sends (1 MiB) instead.
 * Set once adafs-fuse has answered INIT, which would otherwise lower it to
 * what the kernel offered then. */
static void set_readahead(const struct fusemount_job *j)
{
    unsigned minor = 0;
    char path[96];
    if (mounts_at(j->mount, &minor) <= 0)
        return;
    snprintf(path, sizeof path, "/sys/class/bdi/0:%u/read_ahead_kb", minor);
    static const char kb[] = "1024\n";
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : write(fd, kb, strlen(kb));
    if (n != (ssize_t)strlen(kb))
        log_warn("job %u: cannot set %s to 1024 (mapped files are read in smaller requests): %s",
                 j->id, path, n < 0 ? strerror(errno) : "short write");
    if (fd >= 0)
        close(fd);
}

static int start(const struct fusemount_job *j, pid_t *pid, char *err, size_t errlen)
{
    /* The mount point through a descriptor: the path is checked once. */
    int dirfd = open(j->mount, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (dirfd < 0 || fstat(dirfd, &st) < 0) {
        snprintf(err, errlen, "cannot open mount point %s: %s", j->mount, strerror(errno));
        if (dirfd >= 0)
            close(dirfd);
        return -errno;
    }
    if (st.st_uid != j->user.uid) {
        close(dirfd);
        snprintf(err, errlen, "mount point %s is not the job user's", j->mount);
        return -EPERM;
    }
    int dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (dev < 0) {
        int rc = -errno;
        close(dirfd);
        snprintf(err, errlen, "cannot open /dev/fuse: %s (is the fuse module loaded?)",
                 strerror(-rc));
        return rc;
    }
    char opts[160], target[64], max_read[32];
    /* max_read for the pipes the job's user may make (fuse/max_read.h:
     * adafs-fuse's READ replies are spliced through a pipe that must hold
     * them whole), given to adafs-fuse too: libfuse refuses an INIT
     * answer whose max_read is not the mount's. */
    snprintf(max_read, sizeof max_read, "max_read=%u", adafs_fuse_max_read());
    snprintf(opts, sizeof opts, "fd=%d,rootmode=%o,user_id=%u,group_id=%u,%s", dev,
             (unsigned)S_IFDIR, (unsigned)j->user.uid, (unsigned)j->user.gid, max_read);
    snprintf(target, sizeof target, "/proc/self/fd/%d", dirfd);
    int rc = mount("adafs", target, FSTYPE, MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
    close(dirfd);
    if (rc < 0) {
        close(dev);
        snprintf(err, errlen, "cannot mount FUSE at %s: %s", j->mount, strerror(-rc));
        return rc;
    }
    /* adafs-fuse takes the descriptor as /dev/fd/N (N >= 3, kept over exec)
     * and says "ready" on its standard output once it answers. */
    int child_dev = fcntl(dev, F_DUPFD, 3);
    close(dev);
    int ready[2] = { -1, -1 };
    if (child_dev < 0 || pipe2(ready, O_CLOEXEC) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot pass the FUSE descriptor on: %s", strerror(-rc));
        if (child_dev >= 0)
            close(child_dev);
        stop_mount(j->mount, 0, j->user.uid, 0);
        return rc;
    }
    int logfd = open(j->log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
    char devpath[32];
    snprintf(devpath, sizeof devpath, "/dev/fd/%d", child_dev);
    char *argv[] = { (char *)j->fuse_path, "--instance", (char *)j->instance, "--foreground",
                     "--ready-fd", "1", "-o", max_read, devpath, NULL };
    *pid = child_spawn(&j->user, argv, ready[1], logfd, child_dev, NULL);
    close(child_dev);
    close(ready[1]);
    if (logfd >= 0)
        close(logfd);
    rc = *pid < 0 ? *pid : await_ready(ready[0], j->timeout_ms);
    close(ready[0]);
    if (rc < 0) {
        snprintf(err, errlen, "%s did not %s at %s: %s (see %s)", j->fuse_path,
                 *pid < 0 ? "start" : "answer", j->mount,
                 rc == -ETIMEDOUT ? "timed out" : rc == -ECHILD ? "it exited" : strerror(-rc),
                 j->log_path);
        stop_mount(j->mount, *pid, j->user.uid, 0);
        if (*pid > 0)
            child_kill(*pid, SIGKILL);
        return rc;
    }
    set_readahead(j);
    log_info("job %u: adafs-fuse pid %d serves %s as uid %u", j->id, (int)*pid, j->mount,
             (unsigned)j->user.uid);
    return 0;
}

int fusemount_attach(const struct fusemount_job *j, char *err, size_t errlen)
{
    int fd = record_lock(j->record, true);
    if (fd < 0) {
        snprintf(err, errlen, "cannot lock %s: %s", j->record, strerror(-fd));
        return fd;
    }
    struct record *r = calloc(1, sizeof *r);
    int rc = r ? 0 : -ENOMEM;
    if (r)
        record_read(fd, r);
    /* Another node of this host may serve the job already. Anything else
     * at the mount point is stale: a dead adafs-fuse's mount. */
    if (rc == 0 && !(is_fuse_of(r->pid, j->user.uid) && fusemount_present(j->mount))) {
        stop_mount(j->mount, r->pid, j->user.uid, j->timeout_ms);
        r->pid = 0;
        r->n = 0;
        rc = start(j, &r->pid, err, errlen);
    }
    if (rc == 0 && find_node(r, j->node) < 0 && r->n < NODES_MAX)
        snprintf(r->nodes[r->n++], sizeof r->nodes[0], "%s", j->node);
    if (rc == 0 && (rc = record_write(fd, r)) < 0)
        snprintf(err, errlen, "cannot write %s: %s", j->record, strerror(-rc));
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    free(r);
    close(fd);
    return rc;
}

void fusemount_detach(const struct fusemount_job *j)
{
    int fd = record_lock(j->record, false);
    if (fd < 0) {
        /* No record: nothing of ours, but a stale mount never stays. */
        if (fusemount_present(j->mount))
            stop_mount(j->mount, 0, j->user.uid, 0);
        return;
    }
    struct record *r = calloc(1, sizeof *r);
    if (r) {
        record_read(fd, r);
        int i = find_node(r, j->node);
        if (i >= 0)
            memmove(r->nodes[i], r->nodes[i + 1], (size_t)(r->n - i - 1) * sizeof r->nodes[0]);
        r->n -= i >= 0;
    }
    if (!r || r->n == 0) {
        stop_mount(j->mount, r ? r->pid : 0, j->user.uid, j->timeout_ms);
        unlink(j->record);
    } else if (record_write(fd, r) < 0) {
        log_warn("cannot write %s: %s", j->record, strerror(errno));
    }
    free(r);
    close(fd);
}
