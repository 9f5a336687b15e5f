/* Several processes and threads on one file system: shared-file writes from
 * forked processes keep the right size and data, concurrent O_APPEND writers
 * never overlap, a forked child keeps using its parent's open files, threads
 * share a handle, and a directory of 10,000 files lists completely. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fstest.h"
#include "tap.h"

#define NPROC 4
#define REGION 150000   /* bytes each process writes, crossing chunk boundaries */
#define RECORD 64
#define RECORDS 50

static int wait_all(int n)
{
    int ok = 1, st;
    for (int i = 0; i < n; i++)
        ok &= wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return ok;
}

/* A forked worker's own handle (not the inherited one). */
static adafs *child_connect(const struct fstest *t)
{
    adafs *fs;
    char err[256];
    if (adafs_connect(&fs, t->instance, err, sizeof(err)) < 0) {
        fprintf(stderr, "child: %s\n", err);
        _exit(1);
    }
    return fs;
}

/* Each child interleaves small writes into its own stripe of one file:
 * sizes merge as the maximum, whatever order the updates arrive in. */
static void shared_file(struct fstest *t)
{
    int fd = adafs_open(t->fs, "/shared", O_CREAT | O_RDWR | O_TRUNC, 0644);
    adafs_close(t->fs, fd);
    for (int p = 0; p < NPROC; p++) {
        if (fork() == 0) {
            adafs *fs = child_connect(t);
            int f = adafs_open(fs, "/shared", O_WRONLY, 0);
            char *buf = malloc(REGION);
            fstest_fill(buf, REGION, (unsigned)p + 100);
            int ok = f >= 0;
            /* Process p writes stripes p, p+NPROC, ... of 10000 bytes. */
            for (size_t off = 0; off < REGION && ok; off += 10000) {
                size_t len = REGION - off < 10000 ? REGION - off : 10000;
                off_t at = (off_t)(off * NPROC + (size_t)p * 10000);
                ok = adafs_pwrite(fs, f, buf + off, len, at) == (ssize_t)len;
            }
            adafs_close(fs, f);
            adafs_disconnect(fs);
            _exit(ok ? 0 : 1);
        }
    }
    tap_ok(wait_all(NPROC), "4 processes wrote interleaved stripes of one file");
    struct stat st;
    adafs_stat(t->fs, "/shared", &st);
    tap_is_int(st.st_size, (off_t)REGION * NPROC, "shared file size is the furthest end of any writer");
    char *all = malloc((size_t)REGION * NPROC), *want = malloc(REGION);
    fd = adafs_open(t->fs, "/shared", O_RDONLY, 0);
    adafs_pread(t->fs, fd, all, (size_t)REGION * NPROC, 0);
    adafs_close(t->fs, fd);
    int ok = 1;
    for (int p = 0; p < NPROC; p++) {
        fstest_fill(want, REGION, (unsigned)p + 100);
        for (size_t off = 0; off < REGION; off += 10000) {
            size_t len = REGION - off < 10000 ? REGION - off : 10000;
            ok &= memcmp(all + off * NPROC + (size_t)p * 10000, want + off, len) == 0;
        }
    }
    tap_ok(ok, "every stripe holds its writer's bytes");
    free(all);
    free(want);
    adafs_unlink(t->fs, "/shared");
}

static void appenders(struct fstest *t)
{
    int fd = adafs_open(t->fs, "/log", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    adafs_close(t->fs, fd);
    for (int p = 0; p < NPROC; p++) {
        if (fork() == 0) {
            adafs *fs = child_connect(t);
            int f = adafs_open(fs, "/log", O_WRONLY | O_APPEND, 0);
            int ok = f >= 0;
            for (int i = 0; i < RECORDS && ok; i++) {
                char rec[RECORD];
                memset(rec, '.', sizeof(rec));
                snprintf(rec, sizeof(rec), "p%d r%03d", p, i);
                rec[RECORD - 1] = '\n';
                ok = adafs_write(fs, f, rec, RECORD) == RECORD;
            }
            adafs_disconnect(fs);
            _exit(ok ? 0 : 1);
        }
    }
    tap_ok(wait_all(NPROC), "4 processes appended 50 records each");
    struct stat st;
    adafs_stat(t->fs, "/log", &st);
    tap_is_int(st.st_size, NPROC * RECORDS * RECORD, "appends reserved disjoint ranges: size adds up");
    char *all = malloc((size_t)st.st_size);
    fd = adafs_open(t->fs, "/log", O_RDONLY, 0);
    adafs_pread(t->fs, fd, all, (size_t)st.st_size, 0);
    adafs_close(t->fs, fd);
    int seen[NPROC][RECORDS] = { { 0 } }, ok = 1;
    for (int r = 0; r < NPROC * RECORDS; r++) {
        int p, i;
        char *rec = all + r * RECORD;
        if (sscanf(rec, "p%d r%d", &p, &i) != 2 || p < 0 || p >= NPROC || i < 0 || i >= RECORDS ||
            rec[RECORD - 1] != '\n') {
            ok = 0;
            continue;
        }
        seen[p][i]++;
    }
    for (int p = 0; p < NPROC; p++)
        for (int i = 0; i < RECORDS; i++)
            ok &= seen[p][i] == 1;
    tap_ok(ok, "every record is there exactly once and whole");
    free(all);
    adafs_unlink(t->fs, "/log");
}

/* A child inherits the handle and its open descriptor: it reconnects on
 * its own and its writes are visible to the parent. */
static void fork_child(struct fstest *t)
{
    int fd = adafs_open(t->fs, "/forked", O_CREAT | O_RDWR | O_TRUNC, 0644);
    adafs_write(t->fs, fd, "parent;", 7);   /* the parent's connections are open now */
    pid_t pid = fork();
    if (pid == 0) {
        int ok = adafs_write(t->fs, fd, "child;", 6) == 6;
        struct stat st;
        ok &= adafs_stat(t->fs, "/forked", &st) == 0 && st.st_size == 13;
        _exit(ok ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child writes through the inherited fd");
    char back[32] = "";
    tap_is_int(adafs_pread(t->fs, fd, back, sizeof(back), 0), 13, "the parent sees both writes");
    tap_ok(memcmp(back, "parent;child;", 13) == 0, "in order");
    tap_is_int(adafs_write(t->fs, fd, "again", 5), 5, "the parent's connection still works");
    adafs_close(t->fs, fd);
    adafs_unlink(t->fs, "/forked");
}

struct thread_arg {
    adafs *fs;
    int id, ok;
};

static void *thread_main(void *p)
{
    struct thread_arg *a = p;
    char path[64], buf[70000], back[70000];
    a->ok = 1;
    for (int i = 0; i < 20 && a->ok; i++) {
        snprintf(path, sizeof(path), "/t%d.%d", a->id, i);
        fstest_fill(buf, sizeof(buf), (unsigned)(a->id * 100 + i));
        int fd = adafs_open(a->fs, path, O_CREAT | O_RDWR, 0600);
        a->ok = fd >= 0 && adafs_write(a->fs, fd, buf, sizeof(buf)) == sizeof(buf) &&
                adafs_pread(a->fs, fd, back, sizeof(back), 0) == sizeof(back) &&
                memcmp(buf, back, sizeof(buf)) == 0 && adafs_close(a->fs, fd) == 0 &&
                adafs_unlink(a->fs, path) == 0;
    }
    return NULL;
}

static void threads(struct fstest *t)
{
    pthread_t th[4];
    struct thread_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct thread_arg){ .fs = t->fs, .id = i };
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ok &= args[i].ok;
    }
    tap_ok(ok, "4 threads sharing one handle create, write, read and unlink 20 files each");
}

static void many_files(struct fstest *t, int n)
{
    adafs_mkdir(t->fs, "/many", 0755);
    double t0 = fstest_now();
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/many/f%05d", i);
        int fd = adafs_open(t->fs, path, O_CREAT | O_WRONLY | O_EXCL, 0644);
        ok = fd >= 0 && adafs_close(t->fs, fd) == 0;
    }
    double t1 = fstest_now();
    tap_ok(ok, "created %d files in one directory (%.0f creates/s)", n, n / (t1 - t0));
    adafs_dir *d;
    struct adafs_dirent e;
    int count = 0, sorted = 1;
    char prev[64] = "";
    tap_is_int(adafs_opendir(t->fs, "/many", &d), 0, "opendir");
    while (adafs_readdir(d, &e) == 1) {
        if (e.name[0] == '.')
            continue;
        sorted &= strcmp(prev, e.name) < 0 && e.type == DT_REG;
        snprintf(prev, sizeof(prev), "%s", e.name);
        count++;
    }
    long pos = adafs_telldir(d);
    adafs_rewinddir(d);
    adafs_readdir(d, &e);
    tap_ok(strcmp(e.name, ".") == 0, "rewinddir starts over at '.'");
    adafs_seekdir(d, pos);
    tap_is_int(adafs_readdir(d, &e), 0, "seekdir to the end: nothing more");
    adafs_closedir(d);
    tap_is_int(count, n, "the listing has every file");
    tap_ok(sorted, "once, in name order, as regular files");
    ok = 1;
    for (int i = 0; i < n && ok; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/many/f%05d", i);
        ok = adafs_unlink(t->fs, path) == 0;
    }
    tap_ok(ok && adafs_rmdir(t->fs, "/many") == 0, "all removed, then the directory");
}

#include <dirent.h>

int main(void)
{
    struct fstest t;
    fstest_start(&t, 2, "--chunk-size 64K");
    shared_file(&t);
    appenders(&t);
    fork_child(&t);
    threads(&t);
    fstest_stop(&t);
    fstest_start(&t, 4, NULL);
    many_files(&t, 10000);
    fstest_stop(&t);
    return tap_done();
}
