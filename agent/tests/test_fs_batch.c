/* adafs_create_batch, adafs_read_batch and adafs_list_plus (CREATE_BATCH,
 * READ_BATCH, LIST_PLUS):
 * many small files per request, against real servers. Each entry has its
 * own status, an ENOSPC in the middle loses nothing, batches bigger than one
 * request are cut correctly, and malformed batch messages are refused with
 * EBADMSG and a log line that says what was wrong. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstest.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc.h"
#include "rpc_io.h"
#include "tap.h"

static struct adafs_create_entry entry(const char *path, const void *data, size_t len)
{
    return (struct adafs_create_entry){ .path = path, .mode = 0640, .data = data, .len = len,
                                        .mtime = { .tv_nsec = UTIME_NOW } };
}

static void round_trip(void)
{
    struct fstest t;
    fstest_start(&t, 4, NULL);
    adafs *fs = t.fs;
    enum { N = 300 };
    static char data[N][4096];
    static char names[N][32];
    struct adafs_create_entry e[N];
    for (int d = 0; d < 3; d++) {
        snprintf(names[0], sizeof(names[0]), "/d%d", d);
        adafs_mkdir(fs, names[0], 0755);
    }
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "/d%d/f%03d", i % 3, i);
        fstest_fill(data[i], sizeof(data[i]), (unsigned)i);
        e[i] = entry(names[i], data[i], (size_t)(i * 13) % sizeof(data[i]));
        e[i].mode = 0600 | (unsigned)(i % 8) << 3;
        e[i].mtime = (struct timespec){ .tv_sec = 1000000 + i, .tv_nsec = i * 1000 + 7 };
    }
    tap_is_int(adafs_create_batch(fs, e, N, 0), 0, "300 files in 3 directories over 4 servers");
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        struct stat st;
        ok = e[i].status == 0 && fstest_holds(fs, names[i], data[i], e[i].len) &&
             adafs_stat(fs, names[i], &st) == 0 && (st.st_mode & 07777) == e[i].mode &&
             st.st_mtim.tv_sec == 1000000 + i && st.st_mtim.tv_nsec == i * 1000 + 7;
        if (!ok)
            printf("# file %d: status %d\n", i, e[i].status);
    }
    tap_ok(ok, "each reads back with its data, mode and mtime (ns)");
    adafs_dir *dir;
    struct adafs_dirent de;
    int listed = 0;
    if (adafs_opendir(fs, "/d1", &dir) == 0) {
        while (adafs_readdir(dir, &de) == 1)
            listed++;
        adafs_closedir(dir);
    }
    tap_is_int(listed, N / 3 + 2, "the directory lists them (and . ..)");

    struct adafs_read_entry r[N];
    static char back[N][4096];
    for (int i = 0; i < N; i++)
        r[i] = (struct adafs_read_entry){ .path = names[i], .buf = back[i], .cap = 4096 };
    tap_is_int(adafs_read_batch(fs, r, N), 0, "read_batch of the 300 files");
    ok = 1;
    for (int i = 0; i < N && ok; i++)
        ok = r[i].status == 0 && r[i].got == e[i].len && (size_t)r[i].st.st_size == e[i].len &&
             memcmp(back[i], data[i], e[i].len) == 0 && (r[i].st.st_mode & 07777) == e[i].mode &&
             r[i].st.st_mtim.tv_sec == 1000000 + i && S_ISREG(r[i].st.st_mode);
    tap_ok(ok, "each answer has the file's stat and all of its data");

    /* Replacing files: the old data, also chunks on other servers, goes. */
    static char big[3 << 19];
    fstest_fill(big, sizeof(big), 99);
    adafs_create_write(fs, "/d0/f000", 0600, big, sizeof(big));
    struct adafs_create_entry again[2] = { entry("/d0/f000", "new", 3), entry("/d1/f001", "", 0) };
    tap_is_int(adafs_create_batch(fs, again, 2, ADAFS_PARENT_KNOWN), 0,
               "a batch replacing existing files (one of 1.5 MiB)");
    tap_ok(fstest_holds(fs, "/d0/f000", "new", 3) && fstest_holds(fs, "/d1/f001", "", 0),
           "they hold the new data");
    fstest_stop(&t);
}

static void per_entry_errors(void)
{
    struct fstest t;
    fstest_start(&t, 4, NULL);
    adafs *fs = t.fs;
    adafs_mkdir(fs, "/dir", 0755);
    adafs_mkdir(fs, "/dir/sub", 0755);
    adafs_create_write(fs, "/file", 0600, "f", 1);
    static char toobig[(512 << 10) + 1];
    struct adafs_create_entry e[] = {
        entry("/dir/a", "a", 1),
        entry("/dir/sub", "x", 1),            /* a directory */
        entry("/nodir/b", "b", 1),            /* no parent */
        entry("/file/c", "c", 1),             /* parent is a file */
        entry("relative", "r", 1),
        entry("/", "r", 1),
        entry("/dir/a", "again", 5),          /* twice in one batch */
        entry("/dir/big", toobig, sizeof(toobig)),
        entry("/dir/badtime", "t", 1),
        entry("/dir/z", "z", 1),
    };
    e[8].mtime.tv_nsec = 1000000000;
    int n = (int)(sizeof(e) / sizeof(e[0]));
    tap_is_int(adafs_create_batch(fs, e, (size_t)n, 0), 8, "a batch with 8 bad entries of 10");
    tap_is_int(e[0].status, 0, "good entry: created");
    tap_is_int(e[1].status, -EISDIR, "over a directory: EISDIR");
    tap_is_int(e[2].status, -ENOENT, "missing parent: ENOENT");
    tap_is_int(e[3].status, -ENOTDIR, "parent is a file: ENOTDIR");
    tap_is_int(e[4].status, -EINVAL, "relative path: EINVAL");
    tap_is_int(e[5].status, -EISDIR, "the root: EISDIR");
    tap_is_int(e[6].status, -EINVAL, "the same path again: EINVAL");
    tap_is_int(e[7].status, -EFBIG, "more than a chunk: EFBIG");
    tap_is_int(e[8].status, -EINVAL, "tv_nsec of 1e9: EINVAL");
    tap_is_int(e[9].status, 0, "the entry after the bad ones: created");
    tap_ok(fstest_holds(fs, "/dir/a", "a", 1) && fstest_holds(fs, "/dir/z", "z", 1),
           "the good files hold their data (the first of a repeated path wins)");
    struct stat st;
    tap_is_int(adafs_stat(fs, "/dir/big", &st), -ENOENT, "nothing was made for a refused entry");
    tap_ok(adafs_stat(fs, "/dir/sub", &st) == 0 && S_ISDIR(st.st_mode),
           "the directory is untouched");
    tap_is_int(adafs_create_batch(fs, e, 1, 2), -EINVAL, "unknown flags: EINVAL for the call");
    tap_is_int(adafs_create_batch(fs, e, 0, 0), 0, "an empty batch does nothing");

    /* ADAFS_PARENT_KNOWN: no parent check, as with create_write_attr. */
    struct adafs_create_entry k[] = { entry("/dir/k", "k", 1), entry("/dir/sub", "x", 1) };
    tap_is_int(adafs_create_batch(fs, k, 2, ADAFS_PARENT_KNOWN), 1,
               "ADAFS_PARENT_KNOWN: one failure of two");
    tap_ok(k[0].status == 0 && k[1].status == -EISDIR, "the file made, the directory refused");

    struct adafs_read_entry r[5];
    char b[5][16];
    const char *paths[] = { "/dir/a", "/missing", "/dir", "/dir/z", "/file/x" };
    for (int i = 0; i < 5; i++)
        r[i] = (struct adafs_read_entry){ .path = paths[i], .buf = b[i], .cap = sizeof(b[i]) };
    tap_is_int(adafs_read_batch(fs, r, 5), 2, "read_batch: two of five fail");
    tap_ok(r[0].status == 0 && r[0].got == 1 && b[0][0] == 'a', "a file: its data");
    tap_is_int(r[1].status, -ENOENT, "a missing path: ENOENT");
    tap_ok(r[2].status == 0 && S_ISDIR(r[2].st.st_mode) && r[2].got == 0,
           "a directory: its stat, no data");
    tap_ok(r[3].status == 0 && r[3].got == 1 && b[3][0] == 'z', "the entry after: its data");
    tap_is_int(r[4].status, -ENOTDIR, "below a file: ENOTDIR");
    /* The server looks the batch's keys up together: a key asked twice
     * must still answer both entries. */
    const char *twice[] = { "/dir/a", "/dir/z", "/dir/a" };
    for (int i = 0; i < 3; i++)
        r[i] = (struct adafs_read_entry){ .path = twice[i], .buf = b[i], .cap = sizeof(b[i]) };
    tap_is_int(adafs_read_batch(fs, r, 3), 0, "read_batch naming a path twice");
    tap_ok(r[0].got == 1 && b[0][0] == 'a' && r[1].got == 1 && b[1][0] == 'z' &&
               r[2].got == 1 && b[2][0] == 'a',
           "both entries of the repeated path get its data");
    fstest_stop(&t);
}

static void quota(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--quota 100000");
    adafs *fs = t.fs;
    static char d[8][20000];
    for (int i = 0; i < 8; i++)
        fstest_fill(d[i], sizeof(d[i]), 40 + (unsigned)i);
    tap_is_int(adafs_create_write(fs, "/before", 0600, d[7], 10000), 0, "10000 bytes written first");
    struct adafs_create_entry e[] = {
        entry("/q0", d[0], 20000), entry("/q1", d[1], 20000), entry("/q2", d[2], 20000),
        entry("/q3", d[3], 20000), entry("/q4", d[4], 20000), entry("/q5", d[5], 5000),
        entry("/q6", d[6], 20000),
    };
    tap_is_int(adafs_create_batch(fs, e, 7, 0), 2, "quota of 100000 bytes: 2 of 7 entries fail");
    tap_ok(e[0].status == 0 && e[1].status == 0 && e[2].status == 0 && e[3].status == 0,
           "the four that fit are created");
    tap_is_int(e[4].status, -ENOSPC, "the fifth of 20000 bytes: ENOSPC");
    tap_is_int(e[5].status, 0, "a smaller one after it still fits");
    tap_is_int(e[6].status, -ENOSPC, "the next of 20000: ENOSPC");
    int ok = fstest_holds(fs, "/before", d[7], 10000);
    for (int i = 0; i < 4 && ok; i++)
        ok = fstest_holds(fs, e[i].path, d[i], 20000);
    tap_ok(ok && fstest_holds(fs, "/q5", d[5], 5000), "nothing written before or in the batch is lost");
    struct stat st;
    tap_is_int(adafs_stat(fs, "/q4", &st), -ENOENT, "a refused file does not exist");
    adafs_unlink(fs, "/q0");
    struct adafs_create_entry again = entry("/q4", d[4], 20000);
    tap_is_int(adafs_create_batch(fs, &again, 1, 0), 0, "after an unlink the space is there again");
    fstest_stop(&t);
}

static void limits(void)
{
    struct fstest t;
    fstest_start(&t, 2, NULL);   /* 512 KiB chunks, 64 KiB inline */
    adafs *fs = t.fs;
    enum { MANY = 2500, SIZES = 4 };
    static char tiny[MANY][24];
    static char names[MANY][24];
    static struct adafs_create_entry e[MANY];
    adafs_mkdir(fs, "/m", 0755);
    for (int i = 0; i < MANY; i++) {
        snprintf(names[i], sizeof(names[i]), "/m/%d", i);
        snprintf(tiny[i], sizeof(tiny[i]), "file %d", i);
        e[i] = entry(names[i], tiny[i], strlen(tiny[i]));
    }
    tap_is_int(adafs_create_batch(fs, e, MANY, ADAFS_PARENT_KNOWN), 0,
               "2500 files on 2 servers: more than FS_BATCH_MAX per server");
    int ok = 1;
    for (int i = 0; i < MANY && ok; i++)
        ok = fstest_holds(fs, names[i], tiny[i], strlen(tiny[i]));
    tap_ok(ok, "all 2500 read back");

    /* Past the request's byte limit (4 MiB) and across the inline limit. */
    static char blob[100][65536];
    static char bnames[100][24];
    for (int i = 0; i < 100; i++) {
        snprintf(bnames[i], sizeof(bnames[i]), "/m/b%d", i);
        fstest_fill(blob[i], sizeof(blob[i]), 200 + (unsigned)i);
        e[i] = entry(bnames[i], blob[i], sizeof(blob[i]));
    }
    tap_is_int(adafs_create_batch(fs, e, 100, 0), 0, "100 files of 64 KiB: 6.4 MiB, several requests");
    ok = 1;
    for (int i = 0; i < 100 && ok; i++)
        ok = fstest_holds(fs, bnames[i], blob[i], sizeof(blob[i]));
    tap_ok(ok, "all read back");
    static char chunk[(512 << 10) + 1];
    fstest_fill(chunk, sizeof(chunk), 7);
    size_t sizes[SIZES] = { 65536, 65537, 512 << 10, (512 << 10) + 1 };
    const char *sn[SIZES] = { "/m/inline", "/m/over", "/m/chunk", "/m/toobig" };
    for (int i = 0; i < SIZES; i++)
        e[i] = entry(sn[i], chunk, sizes[i]);
    tap_is_int(adafs_create_batch(fs, e, SIZES, 0), 1, "64 KiB, 64 KiB + 1, 512 KiB, 512 KiB + 1");
    tap_ok(e[0].status == 0 && e[1].status == 0 && e[2].status == 0 && e[3].status == -EFBIG,
           "up to one chunk is taken, one byte more is EFBIG");
    ok = 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = fstest_holds(fs, sn[i], chunk, sizes[i]);
    tap_ok(ok, "inline, local-file and whole-chunk files read back");

    static char rb[3][512 << 10];
    struct adafs_read_entry r[4] = {
        { .path = "/m/inline", .buf = rb[0], .cap = 65536 },
        { .path = "/m/chunk", .buf = rb[1], .cap = 1000 },
        { .path = "/m/over", .buf = rb[2], .cap = 512 << 10 },
        { .path = "/m/inline", .buf = rb[0], .cap = (512 << 10) + 1 },
    };
    tap_is_int(adafs_read_batch(fs, r, 4), 1, "read_batch with caps 64 KiB, 1000, 512 KiB, too big");
    tap_ok(r[0].got == 65536 && memcmp(rb[0], chunk, 65536) == 0, "a whole inline file");
    tap_ok(r[1].got == 0 && r[1].st.st_size == 512 << 10,
           "a file bigger than its cap: no data, its size");
    /* Opened as the batch saw it, without a round trip. */
    int fd = adafs_open_known(fs, "/m/chunk", &r[1].st);
    static char back[512 << 10];
    tap_ok(fd >= 0 && adafs_pread(fs, fd, back, sizeof(back), 0) == (ssize_t)sizeof(back) &&
           memcmp(back, chunk, sizeof(back)) == 0, "open_known of it reads it back");
    struct stat bad = r[1].st;
    bad.st_mode = S_IFDIR | 0700;
    tap_is_int(adafs_open_known(fs, "/m/chunk", &bad), -EINVAL, "open_known of a directory: EINVAL");
    bad = r[1].st;
    bad.st_dev++;
    tap_is_int(adafs_open_known(fs, "/m/chunk", &bad), -EINVAL,
               "open_known with a stat not of this file system: EINVAL");
    e[0] = entry("/m/chunk", "new", 3);
    adafs_create_batch(fs, e, 1, 0);
    tap_is_int(adafs_pread(fs, fd, back, 10, 0), -ESTALE,
               "its name given to another file: reads fail with ESTALE");
    adafs_close(fs, fd);
    struct stat now;
    adafs_stat(fs, "/m/chunk", &now);
    fd = adafs_open_known(fs, "/m/chunk", &now);
    adafs_unlink(fs, "/m/chunk");
    tap_is_int(adafs_pread(fs, fd, back, 10, 0), 3,
               "removed by this client while open: still readable, as any open file");
    adafs_close(fs, fd);
    tap_ok(r[2].got == 65537 && memcmp(rb[2], chunk, 65537) == 0, "a file in a local data file");
    tap_is_int(r[3].status, -EINVAL, "a cap over the chunk size: EINVAL");
    fstest_stop(&t);
}

/* Sends one request; returns the status, the answer in *w. */
static int bad_batch(int fd, uint16_t op, struct rpc_writer *w)
{
    struct rpc_reader r;
    uint8_t *p = NULL;
    int rc = fstest_raw_call(fd, op, w, &r, &p);
    free(p);
    w->len = 0;
    return rc;
}

static void put_entry(struct rpc_writer *w, const char *path, uint32_t flags, uint64_t key,
                      const char *data)
{
    rpc_put_str(w, path);
    rpc_put_u32(w, 0600);
    rpc_put_u32(w, flags);
    rpc_put_u64(w, key);
    rpc_put_i64(w, 0);
    fs_cap_put(w, &(struct fs_cap){ 0 });
    rpc_put_bytes(w, data, strlen(data));
}

static void malformed(void)
{
    struct fstest t;
    fstest_start(&t, 1, NULL);
    char err[256];
    struct instance in;
    instance_read(t.instance, &in, err, sizeof(err));
    int fd = fstest_connect(&in, 0, 0);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    tap_is_int(bad_batch(fd, FS_CREATE_BATCH, &w), -EBADMSG,
               "create_batch without a count: EBADMSG");
    rpc_put_u32(&w, FS_BATCH_MAX + 1);
    tap_is_int(bad_batch(fd, FS_CREATE_BATCH, &w), -EBADMSG,
               "more than FS_BATCH_MAX entries: EBADMSG");
    rpc_put_u32(&w, 3);
    put_entry(&w, "/one", 0, 11, "1");
    rpc_put_str(&w, "/two");
    rpc_put_u32(&w, 0600);
    tap_is_int(bad_batch(fd, FS_CREATE_BATCH, &w), -EBADMSG,
               "an entry cut short: EBADMSG");
    rpc_put_u32(&w, 1);
    put_entry(&w, "/one", 0, 11, "1");
    rpc_put_u32(&w, 0);
    tap_is_int(bad_batch(fd, FS_CREATE_BATCH, &w), -EBADMSG,
               "bytes after the last entry: EBADMSG");
    rpc_put_u32(&w, 1);
    rpc_put_bytes(&w, "/x", 2);      /* a path without its NUL */
    rpc_put_u32(&w, 0600);
    rpc_put_u32(&w, 0);
    rpc_put_u64(&w, 11);
    rpc_put_i64(&w, 0);
    rpc_put_bytes(&w, "", 0);
    tap_is_int(bad_batch(fd, FS_CREATE_BATCH, &w), -EBADMSG,
               "a path that is not a string: EBADMSG");
    struct stat st;
    tap_is_int(adafs_stat(t.fs, "/one", &st), -ENOENT, "nothing of a refused message was created");

    /* Well-formed messages with bad entries: per-entry errors. */
    rpc_put_u32(&w, 3);
    put_entry(&w, "/one", 0, 11, "1");
    put_entry(&w, "/two", 0x100, 12, "2");      /* unknown flag */
    put_entry(&w, "/three", 0, 11, "3");        /* the key of /one again */
    struct rpc_reader r;
    uint8_t *p = NULL;
    int rc = fstest_raw_call(fd, FS_CREATE_BATCH, &w, &r, &p);
    w.len = 0;
    uint32_t n = rpc_get_u32(&r);
    int st1 = (int)rpc_get_u32(&r);
    rpc_get_u64(&r), rpc_get_u64(&r), fs_cap_get(&r, &(struct fs_cap){ 0 }), rpc_get_u64(&r);
    int st2 = (int)rpc_get_u32(&r);
    rpc_get_u64(&r), rpc_get_u64(&r), fs_cap_get(&r, &(struct fs_cap){ 0 }), rpc_get_u64(&r);
    int st3 = (int)rpc_get_u32(&r);
    rpc_get_u64(&r), rpc_get_u64(&r), fs_cap_get(&r, &(struct fs_cap){ 0 }), rpc_get_u64(&r);
    tap_ok(rc == 0 && n == 3 && rpc_reader_done(&r), "a raw batch of 3 is answered with 3 statuses");
    tap_ok(st1 == 0 && st2 == -EINVAL && st3 == -EEXIST,
           "created / unknown flag EINVAL / a data key already in use EEXIST (%d %d %d)", st1, st2,
           st3);
    free(p);
    tap_ok(adafs_stat(t.fs, "/three", &st) == -ENOENT && adafs_stat(t.fs, "/one", &st) == 0,
           "only the good entry exists");

    /* Keys in use across batches: one with inline data (/one's), one with
     * a local file (a file of 100 KiB; its st_ino is its data key). */
    static char big[100 << 10];
    int bfd = adafs_open(t.fs, "/big", O_CREAT | O_WRONLY, 0600);
    adafs_pwrite(t.fs, bfd, big, sizeof(big), 0);
    adafs_close(t.fs, bfd);
    struct stat bst;
    adafs_stat(t.fs, "/big", &bst);
    rpc_put_u32(&w, 3);
    put_entry(&w, "/five", 0, 11, "5");
    put_entry(&w, "/six", 0, (uint64_t)bst.st_ino, "6");
    put_entry(&w, "/seven", 0, 13, "7");
    rc = fstest_raw_call(fd, FS_CREATE_BATCH, &w, &r, &p);
    w.len = 0;
    int sts[3] = { 1, 1, 1 };
    n = rpc_get_u32(&r);
    for (int i = 0; i < 3; i++) {
        sts[i] = (int)rpc_get_u32(&r);
        rpc_get_u64(&r), rpc_get_u64(&r), fs_cap_get(&r, &(struct fs_cap){ 0 }), rpc_get_u64(&r);
    }
    tap_ok(rc == 0 && n == 3 && sts[0] == -EEXIST && sts[1] == -EEXIST && sts[2] == 0,
           "a key holding inline data / a local file in an earlier batch: EEXIST (%d %d %d)",
           sts[0], sts[1], sts[2]);
    free(p);
    tap_ok(fstest_holds(t.fs, "/big", big, sizeof(big)) && adafs_stat(t.fs, "/six", &st) == -ENOENT,
           "the file whose key it was keeps its data");

    rpc_put_u32(&w, 2);
    rpc_put_u32(&w, 100);
    rpc_put_str(&w, "/one");
    tap_is_int(bad_batch(fd, FS_READ_BATCH, &w), -EBADMSG,
               "read_batch naming fewer paths than its count: EBADMSG");
    rpc_put_u32(&w, 1000);
    rpc_put_u32(&w, 512 << 10);
    tap_is_int(bad_batch(fd, FS_READ_BATCH, &w), -EBADMSG,
               "read_batch asking for 500 MiB: EBADMSG");
    rpc_put_u32(&w, 0);
    tap_is_int(bad_batch(fd, FS_READ_BATCH, &w), -EBADMSG,
               "read_batch without a size: EBADMSG");
    rpc_put_str(&w, "/");
    rpc_put_str(&w, "");
    rpc_put_u32(&w, 4096);
    tap_is_int(bad_batch(fd, FS_LIST_PLUS, &w), -EBADMSG,
               "list_plus without a data size: EBADMSG");
    rpc_writer_free(&w);
    struct rpc_writer none;
    rpc_writer_init(&none, NULL, 0);
    tap_is_int(bad_batch(fd, FS_PING, &none), 0, "the connection still serves");
    close(fd);
    instance_free(&in);
    const char *said[] = {
        "create_batch: no entry count",
        "create_batch: 1025 entries, more than the 1024 allowed",
        "create_batch: entry 2 of 3 is truncated",
        "create_batch: 4 bytes after the last of 1 entries",
        "create_batch: entry 1 of 1 is truncated or its path is not a string",
        "read_batch: entry 2 of 2 is truncated",
        "read_batch: 1000 entries of up to 524288 bytes",
        "read_batch: no entry count or size",
        "list_plus: not a directory, a name, an entry count and a size, then a capability",
    };
    int logged = 1;
    for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
        if (fstest_sh("grep -qF '%s' %s/server.0.log", said[i], t.base) != 0) {
            printf("# not in the server log: %s\n", said[i]);
            logged = 0;
        }
    tap_ok(logged, "the server log says what was wrong with each refused message");
    fstest_stop(&t);
}

/* adafs_list_plus: every entry once, in pages, small files with their
 * data (a short chunk completed with zeros), bigger ones and directories
 * without; the caller can stop it; bad arguments are refused. */
struct listed_seen {
    int count, wrong, with_data, moved_without_data, stop_after;
    char (*names)[32];
    char (*data)[4096];
    size_t *len;
    int n;
};

static int check_listed(void *arg, const struct adafs_listed *e)
{
    struct listed_seen *w = arg;
    w->count++;
    int i;
    if (e->status != 0) {
        w->wrong++;
    } else if (sscanf(e->name, "f%d", &i) == 1 && i >= 0 && i < w->n) {
        if (e->st.st_size != (off_t)w->len[i] || !S_ISREG(e->st.st_mode) || !e->data ||
            memcmp(e->data, w->data[i], w->len[i]) != 0) {
            printf("# %s: size %lld, data %p\n", e->name, (long long)e->st.st_size, e->data);
            w->wrong++;
        }
        w->with_data++;
    } else if (strcmp(e->name, "big") == 0) {
        w->wrong += e->st.st_size != 100000 || e->data != NULL;
    } else if (strcmp(e->name, "sub") == 0) {
        w->wrong += !S_ISDIR(e->st.st_mode) || e->data != NULL;
    } else if (strncmp(e->name, "moved", 5) == 0) {
        /* Its data stayed with its data key: here only by chance. */
        w->wrong += e->st.st_size != 5 || (e->data && memcmp(e->data, "moved", 5) != 0);
        w->moved_without_data += !e->data;
    } else if (strcmp(e->name, "holey") == 0) {
        static const char zeros[8192 - 100];
        w->wrong += e->st.st_size != 8192 || !e->data || memcmp(e->data, "x", 1) != 0 ||
                    memcmp((const char *)e->data + 100, zeros, sizeof(zeros)) != 0;
        w->with_data++;
    } else {
        w->wrong++;
    }
    return w->stop_after && w->count == w->stop_after ? 7 : 0;
}

static void list_plus(void)
{
    struct fstest t;
    fstest_start(&t, 4, NULL);
    adafs *fs = t.fs;
    enum { N = 3000 };
    static char data[N][4096];
    static char names[N][32];
    static size_t len[N];
    static struct adafs_create_entry e[N];
    adafs_mkdir(fs, "/lp", 0755);
    adafs_mkdir(fs, "/lp/sub", 0755);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "/lp/f%d", i);
        fstest_fill(data[i], sizeof(data[i]), (unsigned)i + 7);
        len[i] = i % 5 == 0 ? 0 : 4096 - (size_t)(i % 7);
        e[i] = entry(names[i], data[i], len[i]);
    }
    tap_is_int(adafs_create_batch(fs, e, N, 0), 0, "3,000 small files in one directory");
    static char big[100000], holey[100];
    memset(holey, 'x', sizeof(holey));
    struct adafs_create_entry h = entry("/lp/holey", holey, sizeof(holey));
    adafs_create_batch(fs, &h, 1, 0);
    adafs_truncate(fs, "/lp/holey", 8192);
    /* Renamed in: their records moved, their data did not. */
    adafs_mkdir(fs, "/elsewhere", 0755);
    for (int i = 0; i < 8; i++) {
        char from[32], to[32];
        snprintf(from, sizeof(from), "/elsewhere/m%d", i);
        snprintf(to, sizeof(to), "/lp/moved%d", i);
        struct adafs_create_entry m = entry(from, "moved", 5);
        adafs_create_batch(fs, &m, 1, 0);
        adafs_rename(fs, from, to);
    }
    int fd = adafs_open(fs, "/lp/big", O_CREAT | O_WRONLY, 0644);
    adafs_pwrite(fs, fd, big, sizeof(big), 0);
    adafs_close(fs, fd);
    for (int i = 0; i < N; i++)
        snprintf(names[i], sizeof(names[i]), "f%d", i);
    struct listed_seen w = { .names = names, .data = data, .len = len, .n = N };
    tap_is_int(adafs_list_plus(fs, "/lp", 64 << 10, check_listed, &w), 0, "listed /lp");
    tap_is_int(w.count, N + 11, "every entry once (3,011; pages of 4 MiB from 4 servers)");
    tap_is_int(w.with_data, N + 1, "each small file with its data, a short chunk zero-filled");
    tap_is_int(w.wrong, 0, "no entry with a wrong stat or data, none of the others with data");
    tap_ok(w.moved_without_data > 0 && w.moved_without_data < 8,
           "files renamed in come with their data only where it is (%d of 8 without)",
           w.moved_without_data);
    w = (struct listed_seen){ .names = names, .data = data, .len = len, .n = N, .stop_after = 10 };
    tap_is_int(adafs_list_plus(fs, "/lp", 64 << 10, check_listed, &w), 7,
               "the function's nonzero answer stops the listing and is returned");
    tap_is_int(w.count, 10, "no entry after it");
    tap_is_int(adafs_list_plus(fs, "/lp/big", 4096, check_listed, &w), -ENOTDIR, "a file: ENOTDIR");
    tap_is_int(adafs_list_plus(fs, "/nope", 4096, check_listed, &w), -ENOENT, "missing: ENOENT");
    tap_is_int(adafs_list_plus(fs, "/lp", adafs_chunk_size(fs) + 1, check_listed, &w), -EINVAL,
               "max above the chunk size: EINVAL");
    fstest_stop(&t);
}

int main(void)
{
    round_trip();
    list_plus();
    per_entry_errors();
    quota();
    limits();
    malformed();
    return tap_done();
}
