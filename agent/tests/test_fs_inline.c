/* Small files kept inline in the metadata store (chunk 0 up to 64 KiB, or
 * the chunk size if smaller, see agent/fsd/chunks.c): no local file is made
 * for them, they move into one when they grow past the threshold, and
 * truncate, rename, unlink of an open file, sparse writes and the quota
 * behave exactly as for data in local files. Also create_write_attr's
 * mtime and adafs_open_read (open, stat and read of a small file in one
 * round trip). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "fstest.h"
#include "tap.h"

#define INLINE_MAX 65536

/* How many local data files server 0 of the instance holds. */
static int data_files(const struct fstest *t)
{
    return fstest_sh("exit $(ls -A %s/root.0/data | wc -l)", t->base);
}

static void grow_and_shrink(void)
{
    struct fstest t;
    fstest_start(&t, 1, NULL);   /* 512 KiB chunks: the threshold is 64 KiB */
    adafs *fs = t.fs;
    static char shadow[INLINE_MAX + 10000], buf[INLINE_MAX + 10000];
    fstest_fill(shadow, 4096, 1);
    tap_is_int(adafs_create_write(fs, "/s", 0600, shadow, 4096), 0, "create_write of 4 KiB");
    tap_is_int(data_files(&t), 0, "a 4 KiB file makes no local data file");
    tap_ok(fstest_holds(fs, "/s", shadow, 4096), "it reads back");

    int fd = adafs_open(fs, "/s", O_RDWR, 0);
    fstest_fill(buf, 100, 2);
    tap_is_int(adafs_pwrite(fs, fd, buf, 100, 10000), 100, "a sparse write inside the threshold");
    memcpy(shadow + 10000, buf, 100);
    tap_is_int(data_files(&t), 0, "still no local data file");
    tap_ok(fstest_holds(fs, "/s", shadow, 10100), "the hole reads as zeros, the data as written");

    fstest_fill(buf, 2000, 3);
    tap_is_int(adafs_pwrite(fs, fd, buf, 2000, INLINE_MAX - 1000), 2000,
               "a write across the threshold");
    memcpy(shadow + INLINE_MAX - 1000, buf, 2000);
    tap_is_int(data_files(&t), 1, "the file moved into a local data file");
    tap_ok(fstest_holds(fs, "/s", shadow, INLINE_MAX + 1000), "all of it reads back after the move");

    tap_is_int(adafs_ftruncate(fs, fd, 100), 0, "truncate back below the threshold");
    tap_ok(fstest_holds(fs, "/s", shadow, 100), "the first 100 bytes remain");
    tap_is_int(adafs_ftruncate(fs, fd, 5000), 0, "and grow again by truncate");
    memset(shadow + 100, 0, 4900);
    tap_ok(fstest_holds(fs, "/s", shadow, 5000), "the grown part reads as zeros");
    tap_is_int(adafs_ftruncate(fs, fd, 0), 0, "truncate to 0");
    tap_is_int(data_files(&t), 0, "drops the local data file");
    tap_is_int(adafs_pwrite(fs, fd, "again", 5, 0), 5, "a small write after it");
    tap_is_int(data_files(&t), 0, "is inline again");
    tap_ok(fstest_holds(fs, "/s", "again", 5), "and reads back");
    adafs_close(fs, fd);

    fstest_fill(shadow, 3000, 4);
    adafs_create_write(fs, "/r", 0600, shadow, 3000);
    tap_is_int(adafs_rename(fs, "/r", "/renamed"), 0, "rename of an inline file");
    tap_ok(fstest_holds(fs, "/renamed", shadow, 3000), "its data follows the new name");
    tap_ok(adafs_rename(fs, "/renamed", "/s") == 0 && fstest_holds(fs, "/s", shadow, 3000),
           "rename over another inline file replaces its data");

    fd = adafs_open(fs, "/s", O_RDONLY, 0);
    tap_is_int(adafs_unlink(fs, "/s"), 0, "unlink of an open inline file");
    tap_ok(adafs_pread(fs, fd, buf, sizeof(buf), 0) == 3000 && memcmp(buf, shadow, 3000) == 0,
           "the open descriptor still reads its data");
    adafs_close(fs, fd);

    struct timespec mt = { 1234567, 89 };
    tap_is_int(adafs_create_write_attr(fs, "/m", 0640, "m", 1, &mt, 0), 0, "create_write_attr");
    struct stat st;
    tap_ok(adafs_stat(fs, "/m", &st) == 0 && st.st_mtim.tv_sec == 1234567 &&
           st.st_mtim.tv_nsec == 89 && (st.st_mode & 0777) == 0640 && st.st_size == 1,
           "sets mode, size and mtime in one request");
    struct timespec bad = { 1, 1000000000 };
    tap_is_int(adafs_create_write_attr(fs, "/m2", 0640, "m", 1, &bad, 0), -EINVAL,
               "create_write_attr with bad nanoseconds: EINVAL");
    tap_is_int(adafs_create_write_attr(fs, "/m2", 0640, "m", 1, &mt, 2), -EINVAL,
               "create_write_attr with an unknown flag: EINVAL");
    tap_is_int(adafs_stat(fs, "/m2", &st), -ENOENT, "and creates nothing");
    fstest_stop(&t);
}

/* Chunk 0 inline, then a write to another chunk that lives on the same
 * (only) server: the local file is made for it and chunk 0 moves in too. */
static void other_chunk(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--chunk-size 64K");
    adafs *fs = t.fs;
    static char shadow[70000 + 100];
    fstest_fill(shadow, 500, 5);
    adafs_create_write(fs, "/c", 0600, shadow, 500);
    tap_is_int(data_files(&t), 0, "[64K chunks] a 500-byte file is inline");
    int fd = adafs_open(fs, "/c", O_RDWR, 0);
    fstest_fill(shadow + 70000, 100, 6);
    tap_is_int(adafs_pwrite(fs, fd, shadow + 70000, 100, 70000), 100, "[64K chunks] a write to chunk 1");
    adafs_close(fs, fd);
    tap_is_int(data_files(&t), 1, "[64K chunks] makes one local file for both chunks");
    tap_ok(fstest_holds(fs, "/c", shadow, 70100), "[64K chunks] chunk 0 moved into it intact");
    fstest_stop(&t);
}

static void quota(void)
{
    struct fstest t;
    fstest_start(&t, 1, "--quota 100000");
    adafs *fs = t.fs;
    static char data[20000];
    struct statvfs sv;
    int ok = 1;
    char name[32];
    for (int i = 0; i < 5 && ok; i++) {
        fstest_fill(data, sizeof(data), 10 + (unsigned)i);
        snprintf(name, sizeof(name), "/q%d", i);
        ok = adafs_create_write(fs, name, 0600, data, sizeof(data)) == 0;
    }
    tap_ok(ok, "five inline files of 20000 bytes fill a 100000-byte quota");
    tap_is_int(data_files(&t), 0, "all inline");
    int src = adafs_statvfs(fs, &sv);
    tap_ok(src == 0 && sv.f_bavail == 0,
           "inline bytes count against the quota (%lu blocks free)", (unsigned long)sv.f_bavail);
    tap_is_int(adafs_create_write(fs, "/q5", 0600, "x", 1), -ENOSPC, "one more byte: ENOSPC");
    int fd = adafs_open(fs, "/q0", O_WRONLY, 0);
    tap_is_int(adafs_pwrite(fs, fd, "y", 1, 20000), -ENOSPC, "growing an inline file: ENOSPC");
    adafs_close(fs, fd);
    ok = 1;
    for (int i = 0; i < 5 && ok; i++) {
        fstest_fill(data, sizeof(data), 10 + (unsigned)i);
        snprintf(name, sizeof(name), "/q%d", i);
        ok = fstest_holds(fs, name, data, sizeof(data));
    }
    tap_ok(ok, "nothing already written is lost");
    adafs_unlink(fs, "/q1");
    tap_is_int(adafs_create_write(fs, "/q5", 0600, data, 15000), 0, "unlink gives the space back");
    fd = adafs_open(fs, "/q5", O_WRONLY, 0);
    tap_is_int(adafs_ftruncate(fs, fd, 1000), 0, "truncate of an inline file");
    adafs_close(fs, fd);
    tap_is_int(adafs_create_write(fs, "/q6", 0600, data, 14000), 0, "gives back what it cut");
    fstest_stop(&t);
}

/* adafs_open_read: open, stat and the first bytes in one round trip when
 * the record's server holds them; 0 bytes (read with pread) when not. */
static void open_read(void)
{
    struct fstest t;
    fstest_start(&t, 4, "--chunk-size 64K");
    adafs *fs = t.fs;
    static char data[3000], buf[65536];
    fstest_fill(data, sizeof(data), 7);
    adafs_create_write(fs, "/o", 0600, data, sizeof(data));
    struct stat st;
    size_t got = 1;
    int fd = adafs_open_read(fs, "/o", &st, buf, sizeof(buf), &got);
    tap_ok(fd >= 0 && st.st_size == 3000 && S_ISREG(st.st_mode) && got == 3000 &&
           memcmp(buf, data, 3000) == 0, "[4 servers] open_read of a small file brings all of it");
    adafs_close(fs, fd);
    fd = adafs_open_read(fs, "/o", &st, buf, 100, &got);
    tap_ok(fd >= 0 && st.st_size == 3000 && got == 100 && memcmp(buf, data, 100) == 0,
           "[4 servers] with a smaller buffer: its first bytes");
    adafs_close(fs, fd);

    fd = adafs_open(fs, "/sp", O_CREAT | O_RDWR, 0600);
    adafs_pwrite(fs, fd, "tail", 4, 30000);
    adafs_ftruncate(fs, fd, 40000);
    adafs_close(fs, fd);
    memset(buf, 'x', sizeof(buf));
    fd = adafs_open_read(fs, "/sp", &st, buf, sizeof(buf), &got);
    int zeros = 1;
    for (size_t i = 0; i < 40000; i++)
        zeros &= i >= 30000 && i < 30004 ? 1 : buf[i] == 0;
    tap_ok(fd >= 0 && got == 40000 && zeros && memcmp(buf + 30000, "tail", 4) == 0,
           "[4 servers] a sparse file: holes as zeros, also at the end");
    adafs_close(fs, fd);

    /* A renamed file's record moves, its data does not: find a name whose
     * record lands on another server than chunk 0. */
    int moved = 0;
    char name[32];
    for (int i = 0; i < 40 && !moved; i++) {
        snprintf(name, sizeof(name), "/moved%d", i);
        adafs_rename(fs, i ? "/prev" : "/o", name);
        fd = adafs_open_read(fs, name, &st, buf, sizeof(buf), &got);
        moved = fd >= 0 && got == 0;
        if (moved)
            moved = adafs_pread(fs, fd, buf, sizeof(buf), 0) == 3000 && memcmp(buf, data, 3000) == 0;
        adafs_close(fs, fd);
        if (!moved)
            adafs_rename(fs, name, "/prev");
    }
    tap_ok(moved, "[4 servers] data on another server: 0 bytes with the open, pread reads it");
    adafs_mkdir(fs, "/dir", 0700);
    fd = adafs_open_read(fs, "/dir", &st, buf, sizeof(buf), &got);
    tap_ok(fd >= 0 && S_ISDIR(st.st_mode) && got == 0, "[4 servers] a directory: opened, no bytes");
    adafs_close(fs, fd);
    tap_is_int(adafs_open_read(fs, "/none", &st, buf, sizeof(buf), &got), -ENOENT,
               "[4 servers] a missing file: ENOENT");
    tap_is_int(adafs_open_read(fs, "/none/x", &st, buf, sizeof(buf), &got), -ENOENT,
               "[4 servers] below a missing directory: ENOENT");
    tap_is_int(adafs_open_read(fs, "/sp/x", &st, buf, sizeof(buf), &got), -ENOTDIR,
               "[4 servers] below a file: ENOTDIR");
    /* A caller that knows the parent is there (a mailbox it polls): a
     * missing file is ENOENT without the ancestors' stats; the file, when
     * it comes, opens as ever. */
    tap_is_int(adafs_open_read_flags(fs, "/dir/next", &st, buf, sizeof(buf), &got,
                                     ADAFS_PARENT_KNOWN), -ENOENT,
               "[4 servers] parent known, a missing file: ENOENT");
    tap_is_int(adafs_open_read_flags(fs, "/sp/x", &st, buf, sizeof(buf), &got,
                                     ADAFS_PARENT_KNOWN), -ENOENT,
               "[4 servers] parent known: ENOENT as is, no ancestor asked");
    adafs_create_write(fs, "/dir/next", 0600, "msg", 3);
    fd = adafs_open_read_flags(fs, "/dir/next", &st, buf, sizeof(buf), &got, ADAFS_PARENT_KNOWN);
    tap_ok(fd >= 0 && got == 3 && !memcmp(buf, "msg", 3),
           "[4 servers] parent known, the file there: opened with its bytes");
    adafs_close(fs, fd);
    tap_is_int(adafs_open_read_flags(fs, "/dir/next", &st, buf, sizeof(buf), &got, 8), -EINVAL,
               "[4 servers] an unknown flag: EINVAL");
    /* Files in a directory whose record is on another server than theirs:
     * with the flag no check of it travels, the files are made all the
     * same; without it, a missing parent is still ENOENT. */
    adafs_mkdir(fs, "/known", 0700);
    int ok = 1;
    for (int i = 0; i < 20 && ok; i++) {
        snprintf(name, sizeof(name), "/known/f%d", i);
        ok = adafs_create_write_attr(fs, name, 0600, data, 100, NULL, ADAFS_PARENT_KNOWN) == 0 &&
             fstest_holds(fs, name, data, 100);
    }
    tap_ok(ok, "[4 servers] create_write_attr with ADAFS_PARENT_KNOWN makes 20 files");
    tap_is_int(adafs_create_write_attr(fs, "/gone/f", 0600, data, 100, NULL, 0), -ENOENT,
               "[4 servers] without it, a missing parent: ENOENT");
    fstest_stop(&t);
}

int main(void)
{
    open_read();
    grow_and_shrink();
    other_chunk();
    quota();
    return tap_done();
}
