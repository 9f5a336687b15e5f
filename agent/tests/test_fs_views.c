/* What one client's open descriptors see of another client's changes, and
 * the servers' open data files behind them, against 1, 2 and 4 servers:
 * a read asks for the size only past what its descriptor knows (or after a
 * short read), so appends, truncates, rewrites, removes and renames by
 * another client must still show at the next read; a server keeps data
 * files open across requests, so a file unlinked by a truncate, remove or
 * rename-over must never be read or written through a stale descriptor,
 * nor stay open once gone. Also reads across holes, the cache beyond its
 * 1,024 files, a server short of descriptors, and the cost of a read
 * against the offset and the file's size (a generous bound: the exact
 * figures are bench/fs's). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fstest.h"
#include "tap.h"

#define CHUNK 65536
static int nservers;
static char what[256];
#define W(...) (snprintf(what, sizeof(what), "[%d servers] ", nservers), \
                snprintf(what + strlen(what), sizeof(what) - strlen(what), __VA_ARGS__), what)

/* Data files of the servers that are open though unlinked: each is a
 * descriptor the cache should have dropped. */
static int deleted_open(const struct fstest *t)
{
    int count = 0;
    for (int i = 0; i < nservers; i++) {
        char dir[64], link[400], target[4200];
        snprintf(dir, sizeof(dir), "/proc/%d/fd", fstest_server_pid(t, i));
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
            ssize_t n = readlink(link, target, sizeof(target) - 1);
            if (n < 0)
                continue;
            target[n] = '\0';
            count += strstr(target, "/data/") && strstr(target, "(deleted)");
        }
        if (d)
            closedir(d);
    }
    return count;
}

static void others_changes(const struct fstest *t, adafs *b)
{
    adafs *a = t->fs;
    const size_t size = 3 * CHUNK + 100;
    char *orig = malloc(size + 8192), *back = malloc(size + 8192), *more = malloc(8192);
    fstest_fill(orig, size, 1);
    fstest_fill(more, 8192, 2);
    fstest_put(a, "/f", orig, size);
    int fd = adafs_open(a, "/f", O_RDONLY, 0);
    tap_ok(adafs_pread(a, fd, back, size, 0) == (ssize_t)size && !memcmp(back, orig, size),
           "%s", W("a reads the file whole"));

    /* Appends past what a's descriptor knows. */
    int bfd = adafs_open(b, "/f", O_WRONLY | O_APPEND, 0);
    tap_is_int(adafs_write(b, bfd, more, 5000), 5000, W("b appends 5000 bytes"));
    tap_is_int(adafs_pread(a, fd, back, 8192, (off_t)size), 5000,
               W("a's read past the size it knew sees the append"));
    tap_ok(!memcmp(back, more, 5000), "%s", W("with b's bytes"));
    tap_is_int(adafs_pread(a, fd, back, size + 8192, 0), size + 5000, W("and the whole file"));

    /* Overwrites inside what it knows. */
    adafs_close(b, bfd);
    bfd = adafs_open(b, "/f", O_WRONLY, 0);
    tap_is_int(adafs_pwrite(b, bfd, more, 3000, CHUNK - 1000), 3000, W("b overwrites 3000 bytes"));
    tap_is_int(adafs_pread(a, fd, back, 4000, CHUNK - 1500), 4000, W("a reads across b's overwrite"));
    tap_ok(!memcmp(back, orig + CHUNK - 1500, 500) && !memcmp(back + 500, more, 3000) &&
           !memcmp(back + 3500, orig + CHUNK + 2000, 500), "%s", W("old, new, old bytes"));
    memcpy(orig + CHUNK - 1000, more, 3000);

    /* Truncates below what it knows. */
    tap_is_int(adafs_ftruncate(b, bfd, CHUNK + 10), 0, W("b truncates to a chunk + 10"));
    tap_is_int(adafs_pread(a, fd, back, 100, CHUNK), 10, W("a's read across the new end: 10 bytes"));
    tap_is_int(adafs_pread(a, fd, back, 100, 2 * CHUNK), 0, W("a's read past it: end of file"));
    tap_is_int(adafs_ftruncate(b, bfd, 3 * CHUNK), 0, W("b extends it to 3 chunks"));
    memset(orig + CHUNK + 10, 0, 2 * CHUNK);
    tap_is_int(adafs_pread(a, fd, back, 3 * CHUNK, 0), 3 * CHUNK, W("a reads 3 chunks"));
    tap_ok(!memcmp(back, orig, 3 * CHUNK), "%s", W("the data, then zeros where b's truncate dropped it"));

    /* Emptied and written again: a new local file on the servers. */
    fstest_fill(more, 8192, 3);
    tap_is_int(adafs_ftruncate(b, bfd, 0), 0, W("b truncates to 0"));
    tap_is_int(adafs_pwrite(b, bfd, more, 8192, 2 * CHUNK), 8192, W("b writes 8 KiB at 2 chunks"));
    tap_is_int(adafs_pread(a, fd, back, 8192, 2 * CHUNK), 8192, W("a reads them"));
    tap_ok(!memcmp(back, more, 8192), "%s", W("b's new bytes, not the old file's"));
    tap_is_int(adafs_pread(a, fd, back, 100, 0), 100, W("a reads the hole before them"));
    tap_ok(back[0] == 0 && back[99] == 0, "%s", W("as zeros"));
    adafs_close(b, bfd);

    /* Replaced under its name: a's descriptor is stale, a new open is not. */
    tap_is_int(fstest_put(b, "/g", orig, 2 * CHUNK), 0, W("b writes /g"));
    tap_is_int(adafs_rename(b, "/g", "/f"), 0, W("b renames /g over /f"));
    tap_is_int(adafs_pread(a, fd, back, 100, 2 * CHUNK), -ESTALE,
               W("a's descriptor of the old /f: ESTALE"));
    adafs_close(a, fd);
    fd = adafs_open(a, "/f", O_RDONLY, 0);
    tap_ok(adafs_pread(a, fd, back, size, 0) == 2 * CHUNK && !memcmp(back, orig, 2 * CHUNK),
           "%s", W("a new open of /f reads what b wrote as /g"));
    tap_is_int(adafs_unlink(b, "/f"), 0, W("b removes /f"));
    tap_is_int(fstest_put(b, "/f", more, 100), 0, W("and makes a new /f"));
    tap_is_int(adafs_pread(a, fd, back, 100, 0), -ESTALE, W("a's descriptor of the removed one: ESTALE"));
    adafs_close(a, fd);
    adafs_unlink(a, "/f");
    /* Removed without a successor: ENOENT (adafs.h). */
    fstest_put(b, "/r", orig, CHUNK + 1);
    fd = adafs_open(a, "/r", O_RDONLY, 0);
    tap_is_int(adafs_pread(a, fd, back, 40, CHUNK - 50), 40, W("a reads /r"));
    tap_is_int(adafs_unlink(b, "/r"), 0, W("b removes /r"));
    tap_is_int(adafs_pread(a, fd, back, 40, CHUNK - 50), -ENOENT, W("a's read of it: ENOENT"));
    adafs_close(a, fd);
    tap_is_int(deleted_open(t), 0, W("no server holds an unlinked data file open"));
    free(orig);
    free(back);
    free(more);
}

/* Holes in the middle, across chunks, and at the end, read in pieces that
 * start and end inside them; the reader's size goes stale in between. */
static void holes(const struct fstest *t, adafs *b)
{
    adafs *a = t->fs;
    const size_t size = 6 * CHUNK;
    char *want = calloc(1, size), *back = malloc(size), *data = malloc(CHUNK);
    fstest_fill(data, CHUNK, 4);
    int wfd = adafs_open(b, "/h", O_CREAT | O_RDWR, 0644);
    adafs_pwrite(b, wfd, data, 1000, 100);                /* chunk 0, around a hole */
    memcpy(want + 100, data, 1000);
    adafs_pwrite(b, wfd, data, 5000, 3 * CHUNK - 2000);   /* across chunks 2 and 3 */
    memcpy(want + 3 * CHUNK - 2000, data, 5000);
    adafs_ftruncate(b, wfd, (off_t)size);                 /* chunks 4 and 5: a hole */
    int fd = adafs_open(a, "/h", O_RDONLY, 0);
    int ok = 1;
    static const size_t lens[] = { 1, 99, 4096, CHUNK - 1, CHUNK + 7, 3 * CHUNK };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t off = 0; off < size && ok; off += lens[i] / 2 + 777) {
            size_t n = off + lens[i] > size ? size - off : lens[i];
            memset(back, 0x55, n);
            ok = adafs_pread(a, fd, back, lens[i], (off_t)off) == (ssize_t)n &&
                 !memcmp(back, want + off, n);
            if (!ok)
                printf("# read of %zu at %zu\n", lens[i], off);
        }
    tap_ok(ok, "%s", W("reads of 1 byte to 3 chunks at 1,400 offsets across holes"));
    tap_is_int(adafs_pread(a, fd, back, 10, (off_t)size), 0, W("at the end: 0"));
    /* b fills a hole, then shrinks and grows the file: a knows none of it. */
    adafs_pwrite(b, wfd, data, 10, 4 * CHUNK);
    tap_is_int(adafs_pread(a, fd, back, 20, 4 * CHUNK - 5), 20, W("a reads into the hole b filled"));
    tap_ok(!memcmp(back, want + 4 * CHUNK - 5, 5) && !memcmp(back + 5, data, 10) &&
           back[15] == 0, "%s", W("zeros, b's bytes, zeros"));
    adafs_ftruncate(b, wfd, 150);
    adafs_ftruncate(b, wfd, (off_t)size);
    memset(want + 150, 0, size - 150);
    tap_ok(adafs_pread(a, fd, back, size, 0) == (ssize_t)size && !memcmp(back, want, size),
           "%s", W("after b shrank it to 150 bytes and grew it back: 150 bytes, then zeros"));
    adafs_close(b, wfd);
    adafs_close(a, fd);
    adafs_unlink(a, "/h");
    free(want);
    free(back);
    free(data);
}

/* More files than a server keeps open: each read back from its own. */
static void many_files(const struct fstest *t)
{
    adafs *fs = t->fs;
    enum { N = 1300 };
    char path[64], data[CHUNK + 100];
    adafs_mkdir(fs, "/many", 0755);
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        snprintf(path, sizeof(path), "/many/%d", i);
        fstest_fill(data, sizeof(data), (unsigned)i);
        ok = fstest_put(fs, path, data, sizeof(data)) == 0;   /* over the inline size: a local file */
    }
    for (int round = 0; round < 2 && ok; round++)
        for (int i = 0; i < N && ok; i++) {
            snprintf(path, sizeof(path), "/many/%d", (i * 7 + round) % N);
            fstest_fill(data, sizeof(data), (unsigned)((i * 7 + round) % N));
            ok = fstest_holds(fs, path, data, sizeof(data));
        }
    tap_ok(ok, "%s", W("1,300 files of 64 KiB + 100 written and read back twice"));
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof(path), "/many/%d", i);
        ok &= adafs_unlink(fs, path) == 0;
    }
    tap_ok(ok && adafs_rmdir(fs, "/many") == 0, "%s", W("and removed"));
    tap_is_int(deleted_open(t), 0, W("none of them left open on a server"));
}

/* Median time of 64 KiB reads at off. */
static double read_time(adafs *fs, int fd, off_t off)
{
    static char buf[65536];
    double t[15];
    for (int i = 0; i < 15; i++) {
        double t0 = fstest_now();
        if (adafs_pread(fs, fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
            return -1;
        t[i] = fstest_now() - t0;
    }
    for (int i = 0; i < 15; i++)
        for (int j = i + 1; j < 15; j++)
            if (t[j] < t[i]) {
                double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    return t[7];
}

/* A 64 KiB read of a file of 1 GiB + 64 KiB, at 0 and at 1 GiB, against
 * one of a small file: on tmpfs where there is one (a hole search there
 * walks the file from the offset: 13 ms per read at 0 before). */
static void offset_cost(void)
{
    if (access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    nservers = 1;
    struct fstest t;
    fstest_start(&t, 1, NULL);
    adafs *fs = t.fs;
    char *buf = malloc(1 << 20);
    memset(buf, 'x', 1 << 20);
    int fd = adafs_open(fs, "/big", O_CREAT | O_RDWR, 0644);
    int ok = fd >= 0;
    for (int i = 0; i <= 1024 && ok; i++)
        ok = adafs_pwrite(fs, fd, buf, i < 1024 ? 1 << 20 : 65536, (off_t)i << 20) > 0;
    int sfd = adafs_open(fs, "/small", O_CREAT | O_RDWR, 0644);
    ok = ok && adafs_pwrite(fs, sfd, buf, 2 * 65536, 0) == 2 * 65536;
    tap_ok(ok, "a file of 1 GiB + 64 KiB and one of 128 KiB on %s", getenv("TMPDIR"));
    double small = 1, at0 = 1, at1g = 1;
    for (int round = 0; round < 3; round++) {
        double s = read_time(fs, sfd, 65536), a = read_time(fs, fd, 0),
               b = read_time(fs, fd, (off_t)1 << 30);
        small = round == 0 || s < small ? s : small;
        at0 = round == 0 || a < at0 ? a : at0;
        at1g = round == 0 || b < at1g ? b : at1g;
    }
    printf("# 64 KiB read: small file %.0f us, big file at 0 %.0f us, at 1 GiB %.0f us\n",
           small * 1e6, at0 * 1e6, at1g * 1e6);
    /* Generous: a shared machine; the offset or size costing time shows as
     * milliseconds. */
    tap_ok(small > 0 && at0 > 0 && at0 < 3 * small + 300e-6,
           "a read at offset 0 of the big file costs what one of the small file does");
    tap_ok(at1g > 0 && at1g < 3 * small + 300e-6, "and one at 1 GiB too");
    /* Issue 21 asks for 1.2 x; bench/fs/run.sh data1g measures that. */
    tap_ok(at1g < 2 * at0 + 100e-6, "a read at 1 GiB costs what one at 0 does (%.2f x)",
           at1g / at0);
    adafs_close(fs, fd);
    adafs_close(fs, sfd);
    free(buf);
    fstest_stop(&t);
    unsetenv("TMPDIR");
}

/* A server allowed few descriptors: it closes cached files when out of
 * them and serves on. Last: the limit cannot be raised again. */
static void few_descriptors(void)
{
    struct rlimit rl = { 48, 48 };
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
        tap_skip(2, "cannot lower the descriptor limit");
        return;
    }
    nservers = 1;
    struct fstest t;
    fstest_start(&t, 1, NULL);
    char path[64], data[CHUNK + 10];
    int ok = 1;
    for (int i = 0; i < 100 && ok; i++) {
        snprintf(path, sizeof(path), "/d%d", i);
        fstest_fill(data, sizeof(data), (unsigned)i);
        ok = fstest_put(t.fs, path, data, sizeof(data)) == 0;
    }
    for (int i = 0; i < 100 && ok; i++) {
        snprintf(path, sizeof(path), "/d%d", i);
        fstest_fill(data, sizeof(data), (unsigned)i);
        ok = fstest_holds(t.fs, path, data, sizeof(data));
    }
    tap_ok(ok, "a server limited to 48 descriptors writes and reads 100 local files");
    char log[400];
    snprintf(log, sizeof(log), "grep -q 'out of descriptors' %s/server.0.log", t.base);
    tap_is_int(fstest_sh("%s", log), 0, "and says in its log that it closed cached ones");
    fstest_stop(&t);
}

int main(void)
{
    static const int counts[] = { 1, 2, 4 };
    for (size_t i = 0; i < 3; i++) {
        nservers = counts[i];
        struct fstest t;
        fstest_start(&t, nservers, "--chunk-size 64K");
        adafs *b = fstest_other_client(&t);
        others_changes(&t, b);
        holes(&t, b);
        adafs_disconnect(b);
        if (nservers == 1)
            many_files(&t);
        fstest_stop(&t);
    }
    offset_cost();
    few_descriptors();
    return tap_done();
}
