#include "fstest.h"

#include "handshake.h"
#include "net.h"
#include "rpc_io.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

static const char *ctl(void)
{
    const char *c = getenv("ADAFS_CTL");
    return c ? c : "./adafs-ctl";
}

void fstest_start(struct fstest *t, int nservers, const char *extra)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(t->base, sizeof(t->base), "%s/adafs-test.XXXXXX", tmp);
    if (!mkdtemp(t->base)) {
        perror("mkdtemp");
        exit(99);
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "%s start --servers %d --base %s --mount /mnt/adafs %s", ctl(),
             nservers, t->base, extra ? extra : "");
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(t->instance, sizeof(t->instance), p)) {
        fprintf(stderr, "fstest: '%s' gave no instance file\n", cmd);
        exit(99);
    }
    t->instance[strcspn(t->instance, "\n")] = '\0';
    if (pclose(p) != 0) {
        fprintf(stderr, "fstest: '%s' failed\n", cmd);
        exit(99);
    }
    char err[512];
    if (adafs_connect(&t->fs, t->instance, err, sizeof(err)) < 0) {
        fprintf(stderr, "fstest: adafs_connect: %s\n", err);
        exit(99);
    }
}

void fstest_stop(struct fstest *t)
{
    if (t->fs)
        adafs_disconnect(t->fs);
    t->fs = NULL;
    fstest_sh("%s stop --base %s 2>/dev/null && rm -rf %s", ctl(), t->base, t->base);
}

int fstest_sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int fstest_server_pid(const struct fstest *t, int index)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/servers", t->base);
    FILE *f = fopen(path, "r");
    int i, pid, port, found = -1;
    while (f && fscanf(f, "%d %d %d", &i, &pid, &port) == 3)
        if (i == index)
            found = pid;
    if (f)
        fclose(f);
    return found;
}

void fstest_fill(void *buf, size_t len, unsigned seed)
{
    unsigned char *p = buf;
    unsigned long long x = seed * 2654435761ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

double fstest_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int fstest_stop_process(int pid)
{
    if (pid <= 0 || kill(pid, SIGSTOP) < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    for (int i = 0; i < 200; i++) {
        char buf[512] = "";
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(buf, sizeof(buf), f))
                buf[0] = '\0';
            fclose(f);
        }
        const char *state = strrchr(buf, ')');
        if (state && state[1] == ' ' && state[2] == 'T')
            return 0;
        usleep(10000);
    }
    return -1;
}

int fstest_holds(adafs *fs, const char *path, const void *want, size_t len)
{
    struct stat st;
    if (adafs_stat(fs, path, &st) < 0 || (size_t)st.st_size != len)
        return 0;
    char *back = malloc(len + 1);
    int fd = adafs_open(fs, path, O_RDONLY, 0);
    ssize_t n = back ? adafs_pread(fs, fd, back, len + 1, 0) : -1;
    adafs_close(fs, fd);
    int ok = n == (ssize_t)len && memcmp(back, want, len) == 0;
    free(back);
    return ok;
}

int fstest_connect(const struct instance *in, int index, int local)
{
    char err[512];
    const struct instance_server *s = &in->servers[index];
    int fd;
    if (local) {
        char name[INSTANCE_LOCAL_NAME_MAX];
        instance_local_name(s->host, s->port, name);
        fd = net_connect_abstract(name, geteuid(), FSTEST_IO_MS);
    } else {
        fd = net_connect(s->host, s->port, FSTEST_IO_MS, err, sizeof(err));
    }
    if (fd < 0)
        return fd;
    int rc = handshake_client(fd, (uint32_t)index, in->secret, net_now_ms() + FSTEST_IO_MS,
                              "server", err, sizeof(err));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

int fstest_raw_call(int fd, uint16_t op, const struct rpc_writer *w, struct rpc_reader *ans,
                    uint8_t **payload)
{
    struct rpc_header h = { .opcode = op, .id = 1 };
    if (rpc_send(fd, &h, w ? w->data : NULL, w ? w->len : 0, net_now_ms() + FSTEST_IO_MS) < 0)
        return 1;
    uint8_t *body = NULL;
    if (rpc_recv(fd, &h, &body, 1 << 20, net_now_ms() + FSTEST_IO_MS) < 0) {
        free(body);
        return 1;
    }
    if (payload) {
        *payload = body;
        rpc_reader_init(ans, body, h.length);
    } else {
        free(body);
    }
    return h.status;
}

adafs *fstest_other_client(const struct fstest *t)
{
    adafs *fs;
    char err[512];
    if (adafs_connect(&fs, t->instance, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs_connect: %s\n", err);
        exit(99);
    }
    return fs;
}

int fstest_put(adafs *fs, const char *path, const void *data, size_t len)
{
    int fd = adafs_open(fs, path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ssize_t n = fd >= 0 ? adafs_pwrite(fs, fd, data, len, 0) : fd;
    if (fd >= 0)
        adafs_close(fs, fd);
    return n == (ssize_t)len ? 0 : -1;
}

