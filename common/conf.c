#include "conf.h"
#include "fileio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONF_MAX_SIZE (1 << 20)

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int add_entry(struct conf *conf, const char *key, const char *value, int line)
{
    struct conf_entry *grown = realloc(conf->entries, (conf->count + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    conf->entries = grown;
    struct conf_entry *e = &conf->entries[conf->count];
    e->key = strdup(key);
    e->value = strdup(value);
    e->line = line;
    conf->count++;
    return e->key && e->value ? 0 : -ENOMEM;
}

int conf_parse(const char *name, const char *text, struct conf *out,
               char *err, size_t errlen)
{
    *out = (struct conf){ .path = strdup(name) };
    char *copy = strdup(text);
    if (!copy || !out->path) {
        free(copy);
        snprintf(err, errlen, "%s: out of memory", name);
        return -ENOMEM;
    }
    int line = 0, rc = 0;
    for (char *s = copy, *next; s && !rc; s = next) {
        next = strchr(s, '\n');
        if (next)
            *next++ = '\0';
        line++;
        char *hash = strchr(s, '#');
        if (hash)
            *hash = '\0';
        char *body = trim(s);
        if (!*body)
            continue;
        char *eq = strchr(body, '=');
        if (!eq) {
            snprintf(err, errlen, "%s line %d: expected Key=Value, got '%s'", name, line, body);
            rc = -EINVAL;
            break;
        }
        *eq = '\0';
        char *key = trim(body), *value = trim(eq + 1);
        if (!*key) {
            snprintf(err, errlen, "%s line %d: a value without a key", name, line);
            rc = -EINVAL;
            break;
        }
        rc = add_entry(out, key, value, line);
        if (rc)
            snprintf(err, errlen, "%s: out of memory", name);
    }
    free(copy);
    if (rc)
        conf_free(out);
    return rc;
}

int conf_load(const char *path, struct conf *out, char *err, size_t errlen)
{
    *out = (struct conf){ 0 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    int rc = fd < 0 || fstat(fd, &st) < 0 ? -errno
           : !S_ISREG(st.st_mode) ? -EINVAL
           : st.st_size > CONF_MAX_SIZE ? -EFBIG : 0;
    char *text = NULL;
    size_t len = 0;
    if (rc == 0)
        rc = fileio_read_all(fd, (size_t)st.st_size, &text, &len);
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path,
                 rc == -EINVAL ? "not a regular file" : rc == -EFBIG ? "larger than 1 MiB"
                                                      : strerror(-rc));
        return rc;
    }
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s: contains a NUL byte, not a text file", path);
        free(text);
        return -EINVAL;
    }
    rc = conf_parse(path, text, out, err, errlen);
    free(text);
    return rc;
}

void conf_free(struct conf *conf)
{
    for (size_t i = 0; i < conf->count; i++) {
        free(conf->entries[i].key);
        free(conf->entries[i].value);
    }
    free(conf->entries);
    free(conf->path);
    *conf = (struct conf){ 0 };
}
