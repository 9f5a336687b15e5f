/* source: reading /proc and /sys below the collector's root directory. */
#include "extract.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int vpath(const struct source *src, char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static int vpath(const struct source *src, char *buf, size_t len, const char *fmt, va_list ap)
{
    const char *root = strcmp(src->root, "/") == 0 ? "" : src->root;
    int n = snprintf(buf, len, "%s", root);
    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
    if (m < 0 || (size_t)(n + m) >= len)
        return -ENAMETOOLONG;
    return 0;
}

int src_path(const struct source *src, char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, buf, len, fmt, ap);
    va_end(ap);
    return rc;
}

static int read_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int saved = errno;
    close(fd);
    if (n < 0)
        return -saved;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return (int)n;
}

int src_read(const struct source *src, char *buf, size_t len, const char *fmt, ...)
{
    char path[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, path, sizeof(path), fmt, ap);
    va_end(ap);
    return rc ? rc : read_text(path, buf, len);
}

static int parse_ll(const char *text, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    if (end == text || *end || errno)
        return -EINVAL;
    *out = v;
    return 0;
}

int src_read_ll(const struct source *src, long long *out, const char *fmt, ...)
{
    char path[PATH_MAX], text[64];
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, path, sizeof(path), fmt, ap);
    va_end(ap);
    if (rc || (rc = read_text(path, text, sizeof(text))) < 0)
        return rc;
    return parse_ll(text, out);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **src_list(const struct source *src, const char *fmt, ...)
{
    char path[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, path, sizeof(path), fmt, ap);
    va_end(ap);
    if (rc) {
        errno = -rc;
        return NULL;
    }
    DIR *d = opendir(path);
    if (!d)
        return NULL;
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof(*names));
    struct dirent *e;
    while (names && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 1 == cap) {
            char **grown = realloc(names, (cap *= 2) * sizeof(*names));
            if (!grown) {
                names[n] = NULL;
                names_free(names);
                names = NULL;
                break;
            }
            names = grown;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (!names) {
        errno = ENOMEM;
        return NULL;
    }
    names[n] = NULL;
    qsort(names, n, sizeof(*names), name_cmp);
    return names;
}

void names_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

int src_numa_node(const struct source *src, const char *sysfs_dir)
{
    char path[PATH_MAX], resolved[PATH_MAX], sys_root[PATH_MAX];
    if (src_path(src, path, sizeof(path), "%s", sysfs_dir) ||
        src_path(src, sys_root, sizeof(sys_root), "/sys") ||
        !realpath(path, resolved))
        return -1;
    char real_sys[PATH_MAX];
    if (!realpath(sys_root, real_sys))
        return -1;
    size_t sys_len = strlen(real_sys);
    /* Walk up from the device to /sys, never above it: the links in a
     * fixture tree must not lead the collector out of its root. */
    while (strncmp(resolved, real_sys, sys_len) == 0 && strlen(resolved) > sys_len) {
        char file[PATH_MAX + 16], text[32];
        long long node;
        snprintf(file, sizeof(file), "%s/numa_node", resolved);
        if (read_text(file, text, sizeof(text)) > 0 && parse_ll(text, &node) == 0)
            return node < 0 ? -1 : (int)node;
        char *slash = strrchr(resolved, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return -1;
}

/* Text that is not UTF-8 (a vendor's model string) becomes null rather
 * than making the whole report unencodable. */
void json_set_str(json_t *o, const char *key, const char *value)
{
    json_t *s = value ? json_string(value) : NULL;
    json_object_set_new(o, key, s ? s : json_null());
}

void json_set_file_int(json_t *o, const char *key, const struct source *src, const char *fmt, ...)
{
    char path[PATH_MAX], text[64];
    long long v;
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, path, sizeof(path), fmt, ap);
    va_end(ap);
    if (rc == 0 && read_text(path, text, sizeof(text)) >= 0 && parse_ll(text, &v) == 0)
        json_object_set_new(o, key, json_integer(v));
    else
        json_object_set_new(o, key, json_null());
}

void json_set_file_str(json_t *o, const char *key, const struct source *src, const char *fmt, ...)
{
    char path[PATH_MAX], text[512];
    va_list ap;
    va_start(ap, fmt);
    int rc = vpath(src, path, sizeof(path), fmt, ap);
    va_end(ap);
    json_set_str(o, key, rc == 0 && read_text(path, text, sizeof(text)) >= 0 ? text : NULL);
}

char **src_list_for(const struct source *src, const char *who, const char *dir, int missing_ok,
                    char *err, size_t errlen)
{
    char **names = src_list(src, "%s", dir);
    if (names)
        return names;
    if (errno == ENOENT && missing_ok && (names = calloc(1, sizeof(*names))))
        return names;
    char path[PATH_MAX];
    src_path(src, path, sizeof(path), "%s", dir);
    snprintf(err, errlen, "%s: cannot list %s: %s", who, path, strerror(errno));
    return NULL;
}

void json_set_numa(json_t *o, const struct source *src, const char *fmt, ...)
{
    char dir[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dir, sizeof(dir), fmt, ap);
    va_end(ap);
    int numa = n > 0 && (size_t)n < sizeof(dir) ? src_numa_node(src, dir) : -1;
    json_object_set_new(o, "numa_node", numa >= 0 ? json_integer(numa) : json_null());
}
