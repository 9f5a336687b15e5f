#include "jobrecord.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "size.h"

void jobrec_path(char *out, size_t len, const char *dir)
{
    snprintf(out, len, "%s.record", dir);
}

int jobrec_save(const char *path, const struct job_rec *r)
{
    char *text;
    int len = asprintf(&text, "id=%" PRIu32 "\nuid=%" PRIu32 "\ngid=%" PRIu32 "\nindex=%" PRIu32
                              "\nnservers=%" PRIu32 "\nport=%d\npid=%d\npid_start=%llu\nboot_id=%s"
                              "\nsecret=%s\nstorage=%s\nimage=%s\nmount=%s\nfuse=%d\nstaging=%d\n",
                       r->id, r->uid, r->gid, r->index, r->nservers, r->port, r->pid, r->pid_start,
                       r->boot_id, r->secret_hex, r->storage, r->image, r->mount, r->fuse ? 1 : 0,
                       r->staging ? 1 : 0);
    if (len < 0)
        return -ENOMEM;
    int rc = fileio_replace(path, text, (size_t)len, 0600);
    free(text);
    return rc;
}

static int copy(char *dst, size_t len, const char *src)
{
    if (strlen(src) >= len)
        return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

static int parse_line(char *line, struct job_rec *r, unsigned *seen)
{
    static const char *const keys[] = { "id", "uid", "gid", "index", "nservers", "port", "pid",
                                        "pid_start", "boot_id", "secret", "storage", "image",
                                        "mount", "fuse", "staging" };
    char *value = strchr(line, '=');
    if (!value)
        return -1;
    *value++ = '\0';
    unsigned k = 0;
    while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(keys[k], line) != 0)
        k++;
    uint64_t v = 0;
    int rc;
    switch (k) {
    case 0: rc = count_parse_max(value, UINT32_MAX, &v); r->id = (uint32_t)v; break;
    case 1: rc = count_parse_max(value, UINT32_MAX, &v); r->uid = (uint32_t)v; break;
    case 2: rc = count_parse_max(value, UINT32_MAX, &v); r->gid = (uint32_t)v; break;
    case 3: rc = count_parse_max(value, UINT32_MAX, &v); r->index = (uint32_t)v; break;
    case 4: rc = count_parse_max(value, UINT32_MAX, &v); r->nservers = (uint32_t)v; break;
    case 5: rc = count_parse_max(value, 65535, &v); r->port = (int)v; break;
    case 6: rc = count_parse_max(value, INT32_MAX, &v); r->pid = (int)v; break;
    case 7: rc = count_parse_max(value, UINT64_MAX, &v); r->pid_start = v; break;
    case 8: rc = copy(r->boot_id, sizeof(r->boot_id), value); break;
    case 9: rc = copy(r->secret_hex, sizeof(r->secret_hex), value); break;
    case 10: rc = copy(r->storage, sizeof(r->storage), value); break;
    case 11: rc = copy(r->image, sizeof(r->image), value); break;
    case 12: rc = copy(r->mount, sizeof(r->mount), value); break;
    case 13: rc = count_parse_max(value, 1, &v); r->fuse = v; break;
    case 14: rc = count_parse_max(value, 1, &v); r->staging = v; break;
    default: return -1;
    }
    if (rc == 0)
        *seen |= 1u << k;
    return rc;
}

int jobrec_load(const char *path, struct job_rec *r, char *err, size_t errlen)
{
    *r = (struct job_rec){ 0 };
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return rc;
    }
    struct stat st;
    char *text = NULL;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) ||
                    st.st_nlink != 1 || st.st_size > 4 * PATH_MAX)) {
        snprintf(err, errlen, "%s is not this agent's (a regular file of root's, 0600, one link)", path);
        close(fd);
        return -EPERM;
    }
    if (rc == 0)
        rc = fileio_read_all(fd, (size_t)st.st_size, &text, NULL);
    close(fd);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return rc;
    }
    unsigned seen = 0;
    int lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (parse_line(line, r, &seen) < 0) {
            snprintf(err, errlen, "%s:%d: not a job's record", path, lineno);
            free(text);
            return -EBADMSG;
        }
    }
    free(text);
    if (seen != (1u << 15) - 1 || r->uid == 0 || r->gid == 0 || r->nservers == 0 ||
        r->index >= r->nservers || r->pid <= 1 || r->port <= 0) {
        snprintf(err, errlen, "%s: a field is missing or out of range", path);
        return -EBADMSG;
    }
    return 0;
}

int jobrec_boot_id(char *out, size_t len)
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, out, len - 1);
    int rc = n < 0 ? -errno : 0;
    close(fd);
    if (rc < 0)
        return rc;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return out[0] ? 0 : -EIO;
}

int jobrec_proc_start(pid_t pid, unsigned long long *start, uid_t *uid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -ESRCH;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    close(fd);
    if (n <= 0)
        return -ESRCH;
    buf[n] = '\0';
    /* The name in parentheses is the process's own (prctl PR_SET_NAME): the
     * fields are counted after its last ')'. State is field 3, start time 22. */
    const char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
        return -ESRCH;
    p += 2;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -ESRCH;
        p++;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno || end == p || *end != ' ')
        return -ESRCH;
    *start = v;
    *uid = st.st_uid;
    return 0;
}

bool jobrec_runs_server(pid_t pid)
{
    char link[64], exe[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strncmp(base, "adafsd", 6) == 0 || strncmp(base, "lt-adafsd", 9) == 0;
}

int jobrec_pin_server(const struct job_rec *r, char *err, size_t errlen)
{
    char boot[JOBREC_BOOT_ID_MAX];
    if (jobrec_boot_id(boot, sizeof(boot)) < 0 || strcmp(boot, r->boot_id) != 0) {
        snprintf(err, errlen, "its server was started in another boot");
        return -ESRCH;
    }
    unsigned long long before, after;
    uid_t uid;
    if (jobrec_proc_start(r->pid, &before, &uid) < 0 || before != r->pid_start) {
        snprintf(err, errlen, "its server pid %d is gone (or is another process now)", r->pid);
        return -ESRCH;
    }
    int fd = (int)pidfd_open(r->pid, 0);
    if (fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "pidfd_open of its server pid %d: %s", r->pid, strerror(-rc));
        return rc;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* Same start time after the pidfd was opened: the pidfd holds the
     * process the record names, not one that took its pid meanwhile. */
    if (jobrec_proc_start(r->pid, &after, &uid) < 0 || after != before) {
        close(fd);
        snprintf(err, errlen, "its server pid %d ended while it was checked", r->pid);
        return -ESRCH;
    }
    if (uid != r->uid || !jobrec_runs_server(r->pid)) {
        close(fd);
        snprintf(err, errlen, "its server pid %d runs as uid %u or another program, not the "
                 "server as uid %u", r->pid, (unsigned)uid, (unsigned)r->uid);
        return -EPERM;
    }
    return fd;
}

void jobrec_stop_pinned(int pidfd, int timeout_ms)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    if (pidfd_send_signal(pidfd, SIGTERM, NULL, 0) == 0 && poll(&p, 1, timeout_ms) == 0) {
        pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        poll(&p, 1, timeout_ms > 1000 ? timeout_ms : 1000);   /* gone before its data goes */
    }
    close(pidfd);
}
