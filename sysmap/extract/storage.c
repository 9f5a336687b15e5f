/* storage: mounted file systems from /proc/self/mounts with their size and
 * available bytes (statvfs), type, and whether they are local; users' FUSE
 * mounts are not the node's storage and are left out (users_fuse).
 *
 * In a fixture tree statvfs cannot be asked about mount points that do not
 * exist, so ROOT/sysmap-statvfs stands in for it: one line per mount point,
 * "MOUNTPOINT SIZE_BYTES AVAILABLE_BYTES", escaped as in /proc/self/mounts. */
#include "extract.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define REMOTE_STATVFS_TIMEOUT_MS 5000

static const char *const remote_types[] = {
    "nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "smbfs", "ceph",
    "glusterfs", "fuse.glusterfs", "fuse.sshfs", "panfs", "afs", "9p", "orangefs",
    "pvfs2", "wekafs", "fuse.beegfs", "fuse.cvmfs", "cvmfs",
};
static const char *const memory_types[] = { "tmpfs", "ramfs" };
/* Kernel interfaces, not storage: left out of the report. */
static const char *const pseudo_types[] = {
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs",
    "tracefs", "pstore", "bpf", "mqueue", "hugetlbfs", "configfs", "fusectl", "autofs",
    "binfmt_misc", "rpc_pipefs", "nsfs", "efivarfs", "selinuxfs", "nfsd", "rootfs",
};

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}
#define IN(s, list) in_list((s), (list), sizeof(list) / sizeof((list)[0]))

/* /proc/mounts escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
    char *out = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *out++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *out++ = *p;
        }
    }
    *out = '\0';
}

static int has_option(const char *options, const char *opt)
{
    size_t len = strlen(opt);
    for (const char *p = options; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, opt, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

/* A FUSE mount of a user (fusermount3, user_id= not root's): not the
 * node's storage, and nothing root should ask: its source is whatever
 * the user named (fsname=/dev/nvme0n1p1), its sizes what the user's
 * process answers (allow_other), if it answers at all. */
static int users_fuse(const char *fstype, const char *options)
{
    if (strcmp(fstype, "fuse") != 0 && strncmp(fstype, "fuse.", 5) != 0 &&
        strcmp(fstype, "fuseblk") != 0)
        return 0;
    for (const char *p = options; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, "user_id=", 8) == 0)
            return strtoul(p + 8, NULL, 10) != 0;
    return 0;
}

/* The whole disk under a mount source: /dev/nvme0n1p2 -> nvme0n1. */
static int backing_disk(const struct source *src, const char *source, char *disk, size_t len)
{
    if (strncmp(source, "/dev/", 5) != 0)
        return 0;
    char path[PATH_MAX], real[PATH_MAX];
    const char *name = strrchr(source, '/') + 1;
    /* /dev/mapper/x and /dev/disk/by-uuid/y are links to the kernel name. */
    if (strcmp(src->root, "/") == 0 && realpath(source, real))
        name = strrchr(real, '/') + 1;
    struct stat st;
    if (src_path(src, path, sizeof(path), "/sys/block/%s", name) == 0 && stat(path, &st) == 0) {
        snprintf(disk, len, "%s", name);
        return 1;
    }
    char **disks = src_list(src, "/sys/block");
    int found = 0;
    for (size_t i = 0; disks && disks[i] && !found; i++)
        if (src_path(src, path, sizeof(path), "/sys/block/%s/%s", disks[i], name) == 0 &&
            stat(path, &st) == 0) {
            snprintf(disk, len, "%s", disks[i]);
            found = 1;
        }
    names_free(disks);
    return found;
}

/* statvfs in a child so a hung NFS or Lustre server cannot hang the
 * collector; the child is killed and left to be reaped at exit. */
static int statvfs_bounded(const char *path, struct statvfs *sv, int timeout_ms)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (pid == 0) {
        close(fds[0]);
        struct { int rc; struct statvfs sv; } r = { 0 };
        r.rc = statvfs(path, &r.sv) == 0 ? 0 : -errno;
        ssize_t w = write(fds[1], &r, sizeof(r));
        _exit(w == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(fds[1]);
    struct pollfd p = { .fd = fds[0], .events = POLLIN };
    struct { int rc; struct statvfs sv; } r = { -ETIMEDOUT, { 0 } };
    if (poll(&p, 1, timeout_ms) == 1 && read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
        r.rc = -EIO;
    close(fds[0]);
    if (r.rc == -ETIMEDOUT) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, WNOHANG);
    } else {
        waitpid(pid, NULL, 0);
    }
    *sv = r.sv;
    return r.rc;
}

/* Size and available bytes of one mount, from statvfs or the fixture file. */
static int mount_space(const struct source *src, const char *mountpoint, int remote,
                       long long *size, long long *avail)
{
    if (strcmp(src->root, "/") == 0) {
        struct statvfs sv;
        int rc = remote ? statvfs_bounded(mountpoint, &sv, REMOTE_STATVFS_TIMEOUT_MS)
                        : (statvfs(mountpoint, &sv) == 0 ? 0 : -errno);
        if (rc)
            return rc;
        *size = (long long)sv.f_blocks * (long long)sv.f_frsize;
        *avail = (long long)sv.f_bavail * (long long)sv.f_frsize;
        return 0;
    }
    char path[PATH_MAX], line[PATH_MAX + 64], mp[PATH_MAX];
    src_path(src, path, sizeof(path), "/sysmap-statvfs");
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    int rc = -ENOENT;
    while (rc && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%4095s %lld %lld", mp, size, avail) != 3)
            continue;
        unescape(mp);
        if (strcmp(mp, mountpoint) == 0)
            rc = 0;
    }
    fclose(f);
    return rc;
}

static json_t *mount_json(const struct source *src, char *source, char *mountpoint,
                          const char *fstype, const char *options)
{
    int remote = IN(fstype, remote_types), memory = IN(fstype, memory_types);
    char disk[64];
    int has_disk = !remote && !memory && backing_disk(src, source, disk, sizeof(disk));
    json_t *m = json_object();
    json_set_str(m, "mountpoint", mountpoint);
    json_set_str(m, "source", source);
    json_set_str(m, "fstype", fstype);
    json_set_str(m, "kind", remote ? "remote" : memory ? "memory" : "local");
    json_set_str(m, "device", has_disk ? disk : NULL);
    json_object_set_new(m, "read_only", json_boolean(has_option(options, "ro")));
    long long size, avail;
    int rc = mount_space(src, mountpoint, remote, &size, &avail);
    json_object_set_new(m, "size_bytes", rc == 0 ? json_integer(size) : json_null());
    json_object_set_new(m, "available_bytes", rc == 0 ? json_integer(avail) : json_null());
    json_set_str(m, "error", rc == 0 ? NULL : strerror(-rc));
    return m;
}

json_t *extract_storage(const struct source *src, char *err, size_t errlen)
{
    char path[PATH_MAX];
    src_path(src, path, sizeof(path), "/proc/self/mounts");
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "storage: cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    json_t *mounts = json_array();
    char line[3 * PATH_MAX];
    while (fgets(line, sizeof(line), f)) {
        char *save, *source = strtok_r(line, " \n", &save), *mp = strtok_r(NULL, " \n", &save),
             *type = strtok_r(NULL, " \n", &save), *opts = strtok_r(NULL, " \n", &save);
        if (!opts || IN(type, pseudo_types) || users_fuse(type, opts))
            continue;
        unescape(source);
        unescape(mp);
        json_t *m = mount_json(src, source, mp, type, opts);
        /* A later mount on the same point hides the earlier one. */
        size_t i;
        json_t *old;
        json_array_foreach(mounts, i, old)
            if (json_equal(json_object_get(old, "mountpoint"), json_object_get(m, "mountpoint"))) {
                json_array_remove(mounts, i);
                break;
            }
        json_array_append_new(mounts, m);
    }
    fclose(f);
    return json_pack("{so}", "mounts", mounts);
}
