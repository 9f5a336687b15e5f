#include "instance.h"

#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net.h"
#include "size.h"

#define INSTANCE_FILE_MAX (1u << 20)

/* Reads a whole small secret-bearing file into a NUL-terminated heap buffer
 * after checking that only its owner can read it. */
static int read_private_file(const char *path, char **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        close(fd);
        return -EINVAL;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s holds a secret but has mode %04o; it must be 0600",
                 path, (unsigned)(st.st_mode & 07777));
        close(fd);
        return -EPERM;
    }
    if ((size_t)st.st_size > INSTANCE_FILE_MAX) {
        snprintf(err, errlen, "%s is too large (%lld bytes)", path, (long long)st.st_size);
        close(fd);
        return -EFBIG;
    }
    int rc = fileio_read_all(fd, (size_t)st.st_size, out, NULL);
    if (rc < 0)
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
    close(fd);
    return rc;
}

/* Writes text to path through a temporary file and rename, mode 0600. */
static int write_private_file(const char *path, const char *text, char *err, size_t errlen)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp)) {
        snprintf(err, errlen, "path too long: %s", path);
        return -ENAMETOOLONG;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = 0;
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return rc;
    }
    size_t len = strlen(text), done = 0;
    while (rc == 0 && done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n > 0)
            done += (size_t)n;
    }
    if (rc < 0 || fchmod(fd, 0600) < 0 || fsync(fd) < 0) {
        rc = rc < 0 ? rc : -errno;
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-rc));
    }
    close(fd);
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    }
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int secret_generate(uint8_t secret[INSTANCE_SECRET_SIZE])
{
    size_t got = 0;
    while (got < INSTANCE_SECRET_SIZE) {
        ssize_t n = getrandom(secret + got, INSTANCE_SECRET_SIZE - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)n;
    }
    return 0;
}

void instance_local_name(const char *host, int port, char name[INSTANCE_LOCAL_NAME_MAX])
{
    snprintf(name, INSTANCE_LOCAL_NAME_MAX, "adafsd/%s:%d", host, port);
}

void secret_to_hex(const uint8_t secret[INSTANCE_SECRET_SIZE], char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < INSTANCE_SECRET_SIZE; i++) {
        hex[2 * i] = digits[secret[i] >> 4];
        hex[2 * i + 1] = digits[secret[i] & 15];
    }
    hex[2 * INSTANCE_SECRET_SIZE] = '\0';
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int secret_from_hex(const char *hex, uint8_t secret[INSTANCE_SECRET_SIZE])
{
    if (strlen(hex) != 2 * INSTANCE_SECRET_SIZE)
        return -EINVAL;
    for (int i = 0; i < INSTANCE_SECRET_SIZE; i++) {
        int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        secret[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int secret_read_file(const char *path, uint8_t secret[INSTANCE_SECRET_SIZE], char *err, size_t errlen)
{
    char *text;
    int rc = read_private_file(path, &text, err, errlen);
    if (rc < 0)
        return rc;
    text[strcspn(text, "\r\n")] = '\0';
    rc = secret_from_hex(text, secret);
    if (rc < 0)
        snprintf(err, errlen, "%s does not hold a secret (want 64 hex digits)", path);
    free(text);
    return rc;
}

int secret_write_file(const char *path, const uint8_t secret[INSTANCE_SECRET_SIZE], char *err, size_t errlen)
{
    char hex[INSTANCE_SECRET_HEX + 1];
    secret_to_hex(secret, hex);
    strcat(hex, "\n");
    return write_private_file(path, hex, err, errlen);
}

/* Handles one "key=value" line of an instance file. */
static int parse_line(struct instance *in, char *key, char *value, int *cap,
                      const char *path, int lineno, char *err, size_t errlen)
{
    if (strcmp(key, "mount") == 0) {
        if (value[0] != '/' || strlen(value) >= sizeof(in->mount))
            goto bad;
        strcpy(in->mount, value);
        size_t len = strlen(in->mount);
        while (len > 1 && in->mount[len - 1] == '/')
            in->mount[--len] = '\0';
    } else if (strcmp(key, "chunk_size") == 0) {
        if (size_parse(value, &in->chunk_size) < 0 || in->chunk_size < INSTANCE_CHUNK_MIN ||
            in->chunk_size > INSTANCE_CHUNK_MAX)
            goto bad;
    } else if (strcmp(key, "timeout_ms") == 0) {
        char *end;
        long ms = strtol(value, &end, 10);
        if (*end || end == value || ms < 1 || ms > 3600000)
            goto bad;
        in->timeout_ms = (int)ms;
    } else if (strcmp(key, "secret") == 0) {
        if (secret_from_hex(value, in->secret) < 0)
            goto bad;
    } else if (strcmp(key, "server") == 0) {
        if (in->nservers == INSTANCE_MAX_SERVERS)
            goto bad;
        if (in->nservers == *cap) {
            *cap = *cap ? *cap * 2 : 8;
            void *p = realloc(in->servers, (size_t)*cap * sizeof(*in->servers));
            if (!p)
                return -ENOMEM;
            in->servers = p;
        }
        struct instance_server *s = &in->servers[in->nservers];
        if (net_parse_hostport(value, s->host, sizeof(s->host), &s->port) < 0 || s->port == 0)
            goto bad;
        in->nservers++;
    } else {
        snprintf(err, errlen, "%s:%d: unknown key '%s'", path, lineno, key);
        return -EINVAL;
    }
    return 0;
bad:
    snprintf(err, errlen, "%s:%d: bad value for %s: '%s'", path, lineno, key, value);
    return -EINVAL;
}

int instance_parse(const char *source, const char *path, struct instance *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->chunk_size = 512 * 1024;
    out->timeout_ms = 5000;
    char *text = strdup(source);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int cap = 0, lineno = 0, have_secret = 0, rc = 0;
    for (char *line = text, *next; line && rc == 0; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        line[strcspn(line, "#\r")] = '\0';
        char *key = line + strspn(line, " \t");
        if (*key == '\0')
            continue;
        char *eq = strchr(key, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected key=value", path, lineno);
            rc = -EINVAL;
            break;
        }
        *eq = '\0';
        char *value = eq + 1, *end = value + strlen(value);
        while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (strcmp(key, "secret") == 0)
            have_secret = 1;
        rc = parse_line(out, key, value, &cap, path, lineno, err, errlen);
    }
    free(text);
    if (rc == 0 && out->nservers == 0) {
        snprintf(err, errlen, "%s: no server= line", path);
        rc = -EINVAL;
    } else if (rc == 0 && !have_secret) {
        snprintf(err, errlen, "%s: no secret= line", path);
        rc = -EINVAL;
    } else if (rc == 0 && out->mount[0] == '\0') {
        snprintf(err, errlen, "%s: no mount= line", path);
        rc = -EINVAL;
    }
    if (rc < 0)
        instance_free(out);
    return rc;
}

int instance_read(const char *path, struct instance *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char *text;
    int rc = read_private_file(path, &text, err, errlen);
    if (rc < 0)
        return rc;
    rc = instance_parse(text, path, out, err, errlen);
    free(text);
    return rc;
}

char *instance_format(const struct instance *in, uint32_t job_id)
{
    size_t cap = 512 + (size_t)in->nservers * (INSTANCE_HOST_MAX + 32) + strlen(in->mount);
    char *text = malloc(cap), hex[INSTANCE_SECRET_HEX], job[32] = "";
    if (!text)
        return NULL;
    secret_to_hex(in->secret, hex);
    if (job_id)
        snprintf(job, sizeof(job), " of job %u", job_id);
    size_t len = (size_t)snprintf(text, cap,
                                  "# adafs instance%s: keep private (0600)\n"
                                  "mount=%s\nchunk_size=%llu\ntimeout_ms=%d\nsecret=%s\n",
                                  job, in->mount, (unsigned long long)in->chunk_size,
                                  in->timeout_ms, hex);
    for (int i = 0; i < in->nservers; i++)
        len += (size_t)snprintf(text + len, cap - len, "server=%s:%d\n",
                                in->servers[i].host, in->servers[i].port);
    return text;
}

int instance_write(const char *path, const struct instance *in, char *err, size_t errlen)
{
    char *text = instance_format(in, 0);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = write_private_file(path, text, err, errlen);
    free(text);
    return rc;
}

/* 0 when snprintf's n bytes fitted in len; else out emptied, -ENAMETOOLONG. */
static int fitted(char *out, size_t len, int n)
{
    if (n >= 0 && (size_t)n < len)
        return 0;
    out[0] = '\0';
    return -ENAMETOOLONG;
}

int instance_mount_path(char *out, size_t len, const char *prefix, uint32_t job_id)
{
    return fitted(out, len, snprintf(out, len, "%s/%u", prefix, job_id));
}

int instance_file_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                       const char *what)
{
    return fitted(out, len, snprintf(out, len, "%s/.job.%u.%s", prefix, job_id, what));
}

int instance_named_mount_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                              const char *name)
{
    if (!name || !name[0])
        return instance_mount_path(out, len, prefix, job_id);
    return fitted(out, len, snprintf(out, len, "%s/%u.%s", prefix, job_id, name));
}

int instance_named_file_path(char *out, size_t len, const char *prefix, uint32_t job_id,
                             const char *name)
{
    if (!name || !name[0])
        return instance_file_path(out, len, prefix, job_id, INSTANCE_FILE);
    return fitted(out, len, snprintf(out, len, "%s/.job.%u.%s.%s", prefix, job_id, name,
                                     INSTANCE_FILE));
}

void instance_free(struct instance *in)
{
    free(in->servers);
    in->servers = NULL;
    in->nservers = 0;
}

/* A decimal number in [1, max] at *p, advancing *p past it. */
static int ready_number(const char **p, long max, int *out)
{
    char *end;
    if (**p < '0' || **p > '9')
        return -EINVAL;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (errno || v < 1 || v > max)
        return -EINVAL;
    *out = (int)v;
    *p = end;
    return 0;
}

void instance_space(uint64_t quota, struct instance_space *s)
{
    const uint64_t MiB = 1 << 20;
    /* As large as a headroom of a quarter of the quota allows (12 of
     * them: quota/48), up to RocksDB's own default of 64 MiB. Smaller
     * memtables make RocksDB rewrite what it holds through more levels,
     * and small files' data lives there: with quota/256, a 768 MiB share
     * (3 MiB memtables) cost its server 2.5 x the CPU of 64 MiB ones on a
     * stage-in of 100,000 small files (doc/benchmarks.md, issue 22 run 14). */
    uint64_t wb = quota / 48;
    wb = wb < MiB ? MiB : wb > 64 * MiB ? 64 * MiB : wb & ~(MiB - 1);
    s->write_buffer = wb;
    s->headroom = 12 * wb;
    /* Metadata beyond the data: RocksDB's records and its own small files,
     * 1/64 of the data or 16 MiB. ext4 (no journal, no resize reserve, one
     * 256-byte inode per 16 KiB) keeps 1/64 for inodes and up to 2% for
     * its own allocations: 1/24 more covers both. */
    uint64_t meta = quota / 64 > 16 * MiB ? quota / 64 : 16 * MiB;
    uint64_t want = quota + s->headroom + meta;
    uint64_t image = want + want / 24;
    s->image = (image + MiB - 1) & ~(MiB - 1);
}

int instance_ready_parse(const char *line, int *port, int *pid)
{
    const char *p = line;
    int pt, pd;
    if (strncmp(p, "ready port=", 11) != 0)
        return -EINVAL;
    p += 11;
    if (ready_number(&p, 65535, &pt) < 0 || strncmp(p, " pid=", 5) != 0)
        return -EINVAL;
    p += 5;
    if (ready_number(&p, 0x7fffffffL, &pd) < 0 || (*p && strcmp(p, "\n") != 0))
        return -EINVAL;
    *port = pt;
    *pid = pd;
    return 0;
}
