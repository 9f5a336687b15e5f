/* mountinfo: see mountinfo.h. */
#include "mountinfo.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

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

int mountinfo_count(const char *path, const char *fstype, unsigned *minor)
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
        if (strcmp(field[4], path) != 0)
            continue;
        count++;
        unsigned major, mnr;
        if (minor && sscanf(field[2], "%u:%u", &major, &mnr) == 2)
            *minor = mnr;
    }
    fclose(f);
    return count;
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
