#include "persistent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "size.h"

static int copy(char *dst, size_t len, const char *src)
{
    if (!src || strlen(src) >= len)
        return -ENAMETOOLONG;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int persistent_rec_from_start(struct persistent_rec *r, const struct agent_start *m)
{
    *r = (struct persistent_rec){ .id = m->job_id, .uid = m->uid, .gid = m->gid,
                                  .access_gid = m->access_gid, .index = m->index,
                                  .nservers = m->nservers, .chunk_size = m->chunk_size,
                                  .quota = m->quota, .numa_node = m->numa_node };
    if (copy(r->name, sizeof(r->name), m->persist_name) < 0 ||
        copy(r->listen_host, sizeof(r->listen_host), m->listen_host) < 0 ||
        copy(r->storage, sizeof(r->storage), m->storage) < 0 ||
        copy(r->secret_hex, sizeof(r->secret_hex), m->secret_hex) < 0 ||
        copy(r->server_key_hex, sizeof(r->server_key_hex),
             m->server_key_hex ? m->server_key_hex : "") < 0 ||
        copy(r->fair_policy, sizeof(r->fair_policy), m->fair_policy ? m->fair_policy : "") < 0)
        return -ENAMETOOLONG;
    return 0;
}

void persistent_rec_to_start(const struct persistent_rec *r, struct agent_start *m)
{
    *m = (struct agent_start){ .job_id = r->id, .uid = r->uid, .gid = r->gid, .index = r->index,
                               .nservers = r->nservers, .chunk_size = r->chunk_size,
                               .quota = r->quota, .listen_host = r->listen_host,
                               .storage = r->storage, .secret_hex = r->secret_hex,
                               .numa_node = r->numa_node, .flags = AGENT_START_PERSISTENT,
                               .persist_name = r->name, .access_gid = r->access_gid,
                               .server_key_hex = r->server_key_hex,
                               .fair_policy = r->fair_policy };
}

void persistent_parent(char *out, size_t len, const char *storage, const char *node)
{
    snprintf(out, len, "%s/%s/" PERSISTENT_DIR, storage, node);
}

void persistent_dir(char *out, size_t len, const char *storage, const char *node, const char *name)
{
    snprintf(out, len, "%s/%s/" PERSISTENT_DIR "/%s", storage, node, name);
}

int persistent_record_save(const char *dir, const struct persistent_rec *r)
{
    char path[PATH_MAX + 16], *text;
    snprintf(path, sizeof(path), "%s.record", dir);
    int len = asprintf(&text, "id=%" PRIu32 "\nname=%s\nuid=%" PRIu32 "\ngid=%" PRIu32
                              "\naccess_gid=%" PRIu32 "\nindex=%" PRIu32 "\nnservers=%" PRIu32
                              "\nchunk_size=%" PRIu64 "\nquota=%" PRIu64 "\nnuma_node=%" PRId32
                              "\nlisten_host=%s\nstorage=%s\nsecret=%s\nport=%d\nserver_key=%s\nfair_policy=%s\n",
                       r->id, r->name, r->uid, r->gid, r->access_gid, r->index, r->nservers,
                       r->chunk_size, r->quota, r->numa_node, r->listen_host, r->storage,
                       r->secret_hex, r->port, r->server_key_hex, r->fair_policy);
    if (len < 0)
        return -ENOMEM;
    int rc = fileio_replace(path, text, (size_t)len, 0600);
    free(text);
    return rc;
}

int persistent_record_load(const char *path, struct persistent_rec *r, char *err, size_t errlen)
{
    *r = (struct persistent_rec){ .numa_node = -1 };
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return rc;
    }
    char line[PATH_MAX + 64];
    unsigned seen = 0;
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        char *value = strchr(line, '=');
        if (!value) {
            rc = -EBADMSG;
            break;
        }
        *value++ = '\0';
        uint64_t v = 0;
        static const char *const keys[] = { "id", "name", "uid", "gid", "access_gid", "index",
                                            "nservers", "chunk_size", "quota", "numa_node",
                                            "listen_host", "storage", "secret", "port",
                                            "server_key", "fair_policy" };
        unsigned k = 0;
        while (k < sizeof(keys) / sizeof(keys[0]) && strcmp(keys[k], line) != 0)
            k++;
        switch (k) {
        case 0: rc = count_parse_max(value, UINT32_MAX, &v); r->id = (uint32_t)v; break;
        case 1: rc = copy(r->name, sizeof(r->name), value); break;
        case 2: rc = count_parse_max(value, UINT32_MAX, &v); r->uid = (uint32_t)v; break;
        case 3: rc = count_parse_max(value, UINT32_MAX, &v); r->gid = (uint32_t)v; break;
        case 4: rc = count_parse_max(value, UINT32_MAX, &v); r->access_gid = (uint32_t)v; break;
        case 5: rc = count_parse_max(value, UINT32_MAX, &v); r->index = (uint32_t)v; break;
        case 6: rc = count_parse_max(value, UINT32_MAX, &v); r->nservers = (uint32_t)v; break;
        case 7: rc = count_parse_max(value, UINT64_MAX, &r->chunk_size); break;
        case 8: rc = count_parse_max(value, UINT64_MAX, &r->quota); break;
        case 9: r->numa_node = strcmp(value, "-1") == 0 ? -1 : 0;
                if (r->numa_node == 0) { rc = count_parse_max(value, INT32_MAX, &v); r->numa_node = (int32_t)v; }
                break;
        case 10: rc = copy(r->listen_host, sizeof(r->listen_host), value); break;
        case 11: rc = copy(r->storage, sizeof(r->storage), value); break;
        case 12: rc = copy(r->secret_hex, sizeof(r->secret_hex), value); break;
        case 13: rc = count_parse_max(value, 65535, &v); r->port = (int)v; break;
        case 14: rc = copy(r->server_key_hex, sizeof(r->server_key_hex), value); break;
        case 15: rc = value[0] && fair_policy_parse(value) < 0 ? -1
                      : copy(r->fair_policy, sizeof(r->fair_policy), value);
                 break;
        default: rc = -1; break;
        }
        if (rc == 0)
            seen |= 1u << k;
    }
    fclose(f);
    if (rc != 0) {
        snprintf(err, errlen, "%s:%d: not a persistent instance's record", path, lineno);
        return -EBADMSG;
    }
    /* server_key and fair_policy may be missing: a record written before
     * there was one (its servers then run under the agent's policy). */
    if ((seen & ((1u << 14) - 1)) != (1u << 14) - 1 || !agent_id_is_persistent(r->id) || !agent_persist_name_ok(r->name) ||
        r->uid == 0 || r->gid == 0 || r->port <= 0 || r->nservers == 0 || r->index >= r->nservers) {
        snprintf(err, errlen, "%s: a field is missing or out of range", path);
        return -EBADMSG;
    }
    return 0;
}

/* /proc/<pid>/<what> into buf (NUL-terminated); its length or -1. */
static ssize_t proc_read(pid_t pid, const char *what, char *buf, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

bool persistent_server_alive(pid_t pid, const char *dir, uid_t uid)
{
    if (pid <= 0)
        return false;
    char buf[PATH_MAX * 2 + 4096];
    /* The state after the command's name: 'Z' is dead, not yet reaped. */
    if (proc_read(pid, "stat", buf, sizeof(buf)) < 0)
        return false;
    const char *paren = strrchr(buf, ')');
    if (!paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X')
        return false;
    struct stat st;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (stat(path, &st) < 0 || st.st_uid != uid)
        return false;
    /* Its arguments, NUL-separated: "--root" then dir, as spawn_server gives. */
    ssize_t n = proc_read(pid, "cmdline", buf, sizeof(buf));
    for (ssize_t at = 0; n > 0 && at < n;) {
        const char *arg = buf + at;
        size_t len = strlen(arg);
        if (strcmp(arg, "--root") == 0 && at + (ssize_t)len + 1 < n)
            return strcmp(arg + len + 1, dir) == 0;
        at += (ssize_t)len + 1;
    }
    return false;
}

void persistent_server_stop(pid_t pid, const char *dir, uid_t uid, int timeout_ms)
{
    int sig = SIGTERM;
    for (int waited = 0; persistent_server_alive(pid, dir, uid); waited += 10) {
        if (waited == 0 || (sig == SIGTERM && waited >= timeout_ms)) {
            if (waited)
                sig = SIGKILL;
            kill(pid, sig);
        }
        if (waited >= 2 * timeout_ms + 5000) {
            /* Stuck in the kernel (D state): the wipe goes on around it. */
            log_warn("server pid %d of %s still there %d ms after SIGKILL", (int)pid, dir,
                     waited - timeout_ms);
            return;
        }
        nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
    }
}

uint64_t persistent_used(const char *dir, bool own_fs)
{
    struct statvfs sv;
    if (!own_fs || statvfs(dir, &sv) < 0)
        return 0;
    return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

void persistent_scan(const char *storage, const char *node,
                     void (*found)(const char *record, void *arg),
                     void (*leftover)(const char *dir, void *arg), void *arg)
{
    char parent[PATH_MAX];
    persistent_parent(parent, sizeof(parent), storage, node);
    DIR *d = opendir(parent);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!agent_persist_name_ok(e->d_name))
            continue;   /* <name>.img, .record, .secret, .serverkey, .instance,
                          * .pid, .bw: with their directory */
        char dir[PATH_MAX], record[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", parent, e->d_name) >= sizeof(dir) ||
            (size_t)snprintf(record, sizeof(record), "%s.record", dir) >= sizeof(record))
            continue;
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (lstat(record, &st) == 0 && S_ISREG(st.st_mode))
            found(record, arg);
        else
            leftover(dir, arg);
    }
    closedir(d);
}
