#include "listfile.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest line accepted: longer is certainly not a path pair (PATH_MAX*2). */
#define LIST_MAX_LINE 8192

static int add_error(struct list *l, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int add_error(struct list *l, unsigned line, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    struct list_error *e = realloc(l->errors, (l->error_count + 1) * sizeof(*e));
    if (!e)
        return -ENOMEM;
    l->errors = e;
    char *msg;
    if (asprintf(&msg, "line %u: %s", line, reason) < 0)
        return -ENOMEM;
    l->errors[l->error_count++] = (struct list_error){ line, msg };
    return 0;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Reads one field starting at *p (blanks already skipped) into out (which
 * has room for the whole line). Returns 0, or a static reason on error. */
static const char *read_field(const char **p, const char *end, char *out)
{
    const char *s = *p;
    size_t n = 0;
    if (s < end && *s == '"') {
        for (s++;; s++) {
            if (s >= end)
                return "unterminated quote";
            if (*s == '"') {
                s++;
                break;
            }
            if (*s == '\\' && s + 1 < end && (s[1] == '"' || s[1] == '\\'))
                s++;
            out[n++] = *s;
        }
        if (s < end && !is_blank(*s))
            return "text right after a closing quote";
    } else {
        for (; s < end && !is_blank(*s); s++) {
            if (*s == '\\') {
                if (s + 1 >= end)
                    return "backslash at end of line";
                s++;
            } else if (*s == '"') {
                return "quote inside an unquoted field";
            }
            out[n++] = *s;
        }
    }
    out[n] = '\0';
    *p = s;
    if (n == 0)
        return "empty path";
    if (memchr(out, '\0', n))
        return "NUL byte in path";
    return NULL;
}

static int parse_line(struct list *l, unsigned lineno, const char *s, const char *end)
{
    while (s < end && is_blank(*s))
        s++;
    if (s == end || *s == '#')
        return 0;
    if (end - s > LIST_MAX_LINE)
        return add_error(l, lineno, "line longer than %d bytes", LIST_MAX_LINE);

    char *fields[2] = { NULL, NULL };
    size_t cap = (size_t)(end - s) + 1;
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        while (s < end && is_blank(*s))
            s++;
        if (s == end) {
            rc = add_error(l, lineno, "missing destination (expected `source destination`)");
            goto out;
        }
        fields[i] = malloc(cap);
        if (!fields[i]) {
            rc = -ENOMEM;
            goto out;
        }
        const char *why = read_field(&s, end, fields[i]);
        if (why) {
            rc = add_error(l, lineno, "%s %s", i == 0 ? "source:" : "destination:", why);
            goto out;
        }
    }
    while (s < end && is_blank(*s))
        s++;
    if (s != end) {
        rc = add_error(l, lineno, "unexpected third field (quote names with blanks)");
        goto out;
    }
    if ((l->count & (l->count - 1)) == 0) {     /* grow at powers of two */
        struct list_entry *e = realloc(l->entries, (l->count ? l->count * 2 : 1) * sizeof(*e));
        if (!e) {
            rc = -ENOMEM;
            goto out;
        }
        l->entries = e;
    }
    l->entries[l->count++] = (struct list_entry){ fields[0], fields[1], lineno };
    return 0;
out:
    free(fields[0]);
    free(fields[1]);
    return rc;
}

int list_parse(const char *text, size_t len, struct list *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = text, *end = text + len;
    unsigned lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        lineno++;
        int rc;
        if (memchr(p, '\0', (size_t)(eol - p)))
            rc = add_error(out, lineno, "NUL byte in line");
        else
            rc = parse_line(out, lineno, p, eol);
        if (rc < 0) {
            list_free(out);
            return rc;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int list_load(const char *path, struct list *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = fstat(fd, &st) < 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (err) {
        close(fd);
        return -err;
    }
    char *buf;
    size_t got;
    int rc = fileio_read_all(fd, (size_t)st.st_size, &buf, &got);
    close(fd);
    if (rc < 0)
        return rc;
    rc = list_parse(buf, got, out);
    free(buf);
    return rc;
}

void list_free(struct list *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free(l->entries[i].src);
        free(l->entries[i].dst);
    }
    for (size_t i = 0; i < l->error_count; i++)
        free(l->errors[i].message);
    free(l->entries);
    free(l->errors);
    memset(l, 0, sizeof(*l));
}
