#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mountinfo.h"
#include "net.h"

/* mkfs of a large image with lazy inode tables takes well under a second;
 * a mount a few milliseconds. */
#define TOOL_TIMEOUT_MS 60000

/* The first of these that exists. */
static const char *find_tool(const char *const *candidates)
{
    for (; *candidates; candidates++)
        if (access(*candidates, X_OK) == 0)
            return *candidates;
    return NULL;
}

/* Runs argv as root with a clean environment, its output collected in
 * out. Returns its exit status, or -errno. The agent's reaper collects
 * the child; child_wait() gets its status. */
static int run_tool(char *const argv[], char *out, size_t outlen)
{
    out[0] = '\0';
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    static char *const env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(argv[0], argv, env);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        int rc = -errno;
        close(p[0]);
        return rc;
    }
    size_t got = 0;
    int64_t deadline = net_now_ms() + TOOL_TIMEOUT_MS;
    for (;;) {
        int64_t left = deadline - net_now_ms();
        struct pollfd pfd = { .fd = p[0], .events = POLLIN };
        if (left <= 0 || poll(&pfd, 1, (int)left) == 0)
            break;
        char buf[512];
        ssize_t n = read(p[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = (size_t)n < outlen - 1 - got ? (size_t)n : outlen - 1 - got;
        memcpy(out + got, buf, keep);
        got += keep;
        out[got] = '\0';
    }
    close(p[0]);
    int status = child_wait(pid, (int)(deadline - net_now_ms() > 0 ? deadline - net_now_ms() : 1));
    if (status == -ETIMEDOUT) {
        kill(pid, SIGKILL);
        child_wait(pid, -1);
        return -ETIMEDOUT;
    }
    if (status < 0)
        return status;
    /* Its first line says why. */
    out[strcspn(out, "\n")] = '\0';
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int failf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int failf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

bool store_mounted(const char *dir)
{
    /* mountinfo first: a FUSE mount the job's user stacked on dir answers
     * root's lstat EACCES, and the store underneath must not be taken for
     * absent (mounted twice, or left with its data at teardown). The look
     * at the devices serves a dir mountinfo writes otherwise ("//"). */
    if (mountinfo_count(dir, "ext4", NULL) > 0)
        return true;
    char parent[PATH_MAX];
    struct stat st, pst;
    if ((size_t)snprintf(parent, sizeof(parent), "%s/..", dir) >= sizeof(parent))
        return false;
    return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && stat(parent, &pst) == 0 &&
           st.st_dev != pst.st_dev;
}

int store_attach(const char *image, const char *dir, char *err, size_t errlen)
{
    static const char *const mount_paths[] = { "/usr/bin/mount", "/bin/mount", NULL };
    const char *mount = find_tool(mount_paths);
    if (!mount)
        return failf(err, errlen, -ENOENT, "mount not found (Debian: mount)");
    char out[512];
    /* noinit_itable: the kernel's lazy zeroing of the inode tables would
     * reach the loop device as WRITE_ZEROES, which punches holes in the
     * image and gives back its reserved blocks (store_create); a file
     * system that is never checked (wiped at teardown) needs none. */
    char *mount_argv[] = { (char *)mount, "-t", "ext4", "-o", "loop,nosuid,nodev,noexec,noatime,noinit_itable",
                           (char *)image, (char *)dir, NULL };
    int rc = run_tool(mount_argv, out, sizeof(out));
    if (rc != 0)
        return failf(err, errlen, rc < 0 ? rc : -EIO, "mount %s on %s: %s", image, dir,
                     rc < 0 ? strerror(-rc) : out[0] ? out : "failed");
    if (!store_mounted(dir))
        return failf(err, errlen, -EIO, "mount %s on %s: nothing is mounted there", image, dir);
    return 0;
}

/* Every block of image allocated (its size unchanged). 0 or -errno. */
static int reserve(const char *image)
{
    int fd = open(image, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 || fallocate(fd, 0, 0, st.st_size) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* Formats and mounts; the image exists, sized. */
static int format_and_mount(const char *image, const char *dir, const struct user_id *u,
                            bool journal, char *err, size_t errlen)
{
    static const char *const mkfs_paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", NULL };
    const char *mkfs = find_tool(mkfs_paths);
    if (!mkfs)
        return failf(err, errlen, -ENOENT, "mkfs.ext4 not found (Debian: e2fsprogs)");
    char owner[64], out[512];
    /* -m 0: no blocks kept for root, who never writes there. No journal:
     * the data lives as long as the job, and a crash wipes it anyway. No
     * blocks kept for growing it, and the default inode ratio whatever
     * its size (small file systems would get one per 4 KiB): instance_space()
     * counts on that overhead. */
    snprintf(owner, sizeof(owner), "lazy_itable_init=1,nodiscard,root_owner=%u:%u",
             (unsigned)u->uid, (unsigned)u->gid);
    char journal_size[32];
    snprintf(journal_size, sizeof(journal_size), "size=%u", STORE_JOURNAL_BYTES >> 20);
    /* 13 fixed, "-J size=" with a journal, the image, NULL. */
    char *mkfs_argv[13 + 2 + 2] = {
        (char *)mkfs, "-q", "-F", "-m", "0", "-b", "4096", "-i", "16384",
        "-O", journal ? "^resize_inode" : "^has_journal,^resize_inode", "-E", owner,
    };
    size_t n = 13;
    if (journal) {
        mkfs_argv[n++] = "-J";
        mkfs_argv[n++] = journal_size;
    }
    mkfs_argv[n++] = (char *)image;
    mkfs_argv[n] = NULL;
    int rc = run_tool(mkfs_argv, out, sizeof(out));
    if (rc != 0)
        return failf(err, errlen, rc < 0 ? rc : -EIO, "mkfs.ext4 %s: %s", image,
                     rc < 0 ? strerror(-rc) : out[0] ? out : "failed");
    /* mkfs "zeroes" ranges of a file (the journal's) by punching holes:
     * reserved again. */
    if ((rc = reserve(image)) < 0)
        return failf(err, errlen, rc, "cannot reserve %s after mkfs: %s", image, strerror(-rc));
    if ((rc = store_attach(image, dir, err, errlen)) < 0)
        return rc;
    /* Handed over empty: mkfs makes lost+found, which only fsck uses. */
    char lost[PATH_MAX];
    snprintf(lost, sizeof(lost), "%s/lost+found", dir);
    if ((rmdir(lost) < 0 && errno != ENOENT) || chmod(dir, 0700) < 0 ||
        lchown(dir, u->uid, u->gid) < 0)
        return failf(err, errlen, -errno, "preparing %s: %s", dir, strerror(errno));
    return 0;
}

int store_create(const char *image, const char *dir, uint64_t size, const struct user_id *u,
                 bool journal, char *err, size_t errlen)
{
    if (journal)
        size += STORE_JOURNAL_BYTES;
    int fd = open(image, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return failf(err, errlen, -errno, "cannot create %s: %s", image, strerror(errno));
    /* Every block reserved now, not sparse: on a node disk filled by
     * something else a sparse image's writes fail in the loop device under
     * the job's file system, which reports success to the job and loses the
     * data at writeback ("potential data loss" in the kernel log). Reserved,
     * a full disk is ENOSPC here, at deploy, and the job's own writes fail
     * with ENOSPC only at its capacity. */
    int rc = fallocate(fd, 0, 0, (off_t)size) < 0 ? -errno : 0;
    close(fd);
    if (rc < 0) {
        unlink(image);
        return failf(err, errlen, rc, "cannot reserve %s: %s", image, strerror(-rc));
    }
    rc = format_and_mount(image, dir, u, journal, err, errlen);
    if (rc < 0) {
        char ignored[256];
        store_destroy(image, dir, ignored, sizeof(ignored));
    }
    return rc;
}

int store_destroy(const char *image, const char *dir, char *err, size_t errlen)
{
    /* Everything stacked on dir goes, whoever mounted it: a FUSE mount of
     * the job's user on top once left the store mounted under it, with the
     * job's data and its loop device. */
    int rc = mountinfo_detach_all(dir);
    if (rc < 0)
        rc = failf(err, errlen, rc, "umount %s: %s", dir, strerror(-rc));
    else
        rc = 0;
    if (rc == 0 && store_mounted(dir) && umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
        rc = failf(err, errlen, -errno, "umount %s: %s", dir, strerror(errno));
    if (unlink(image) < 0 && errno != ENOENT && rc == 0)
        rc = failf(err, errlen, -errno, "cannot remove %s: %s", image, strerror(errno));
    return rc;
}
