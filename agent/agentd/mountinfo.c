/* mountinfo: see mountinfo.h. */
#include "mountinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

/* Decodes the octal escapes mountinfo writes for blanks and backslashes. */
static void unescape(char *s)
{
    char *out = s;
    for (char *p = s; *p;) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *out++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
            p += 4;
        } else {
            *out++ = *p++;
        }
    }
    *out = '\0';
}

/* Is mount point mp at path, or (under) below it? */
static bool at_or_below(const char *mp, const char *path, bool under)
{
    size_t len = strlen(path);
    if (strcmp(mp, path) == 0)
        return true;
    return under && strncmp(mp, path, len) == 0 && (mp[len] == '/' || strcmp(path, "/") == 0);
}

/* Counts the mounts at (or below) path of fstype (NULL: any); *minor gets
 * the device minor of the topmost, shallowest (if not NULL) the mount point
 * nearest to path, of the topmost there (listed last): what is mounted
 * deeper may be under it, out of reach until it goes. */
static int scan(const char *path, bool under, const char *fstype, unsigned *minor,
                char *shallowest, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return 0;
    char line[4096 + 2 * PATH_MAX];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        /* ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE ... */
        char *save, *field[5];
        int i = 0;
        for (char *t = strtok_r(line, " ", &save); t && i < 5; t = strtok_r(NULL, " ", &save))
            field[i++] = t;
        if (i < 5)
            continue;
        char *t;
        while ((t = strtok_r(NULL, " ", &save)) && strcmp(t, "-") != 0)
            ;
        char *type = t ? strtok_r(NULL, " ", &save) : NULL;
        if (!type || (fstype && strcmp(type, fstype) != 0))
            continue;
        unescape(field[4]);
        if (!at_or_below(field[4], path, under))
            continue;
        if (shallowest && (count == 0 || strlen(field[4]) <= strlen(shallowest)))
            snprintf(shallowest, len, "%s", field[4]);
        count++;
        unsigned major, mnr;
        if (minor && sscanf(field[2], "%u:%u", &major, &mnr) == 2)
            *minor = mnr;
    }
    fclose(f);
    return count;
}

int mountinfo_count(const char *path, const char *fstype, unsigned *minor)
{
    return scan(path, false, fstype, minor, NULL, 0);
}

/* Detaches the topmost mount at mp, reached from / without following a
 * symbolic link at any step (below a job's mount point its user may swap
 * a directory for a link to anywhere between the scan and here): each
 * component opened O_PATH|O_NOFOLLOW, then the mount the last descriptor
 * is on detached through its /proc/self/fd link (not a mount root:
 * EINVAL). */
static int detach_nofollow(const char *mp)
{
    char buf[PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", mp) >= sizeof buf)
        return -ENAMETOOLONG;
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    char *save;
    for (char *c = strtok_r(buf, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
        int next = openat(fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        fd = next;
        errno = e;
    }
    if (fd < 0)
        return -errno;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int rc = umount2(link, MNT_DETACH) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

int mountinfo_detach_tree(const char *path)
{
    char mp[PATH_MAX];
    int n = 0, failed = 0, rc = 0;
    /* The shallowest first: what is mounted inside it goes along, what
     * it hid comes within reach. One renamed under us is read again. */
    while (n < 64 && failed < 3 && scan(path, true, NULL, NULL, mp, sizeof mp) > 0) {
        if ((rc = detach_nofollow(mp)) < 0)
            failed++;
        else
            n++;
    }
    return failed >= 3 ? rc : n;
}

int mountinfo_detach_all(const char *path)
{
    int n = 0;
    while (n < 16 && mountinfo_count(path, NULL, NULL) > 0) {
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
            return -errno;
        n++;
    }
    return n;
}
