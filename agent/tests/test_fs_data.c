/* Data integrity and the POSIX error cases against 1, 2 and 4 servers:
 * random writes checked against a shadow copy, writes spanning chunk
 * boundaries, sparse files, truncate shrink and grow, append, rename,
 * unlink of an open file, create_write, attributes, and every errno the
 * library promises for bad input. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fstest.h"
#include "tap.h"

#define CHUNK 65536
static int nservers;
static char what[256];
#define W(...) (snprintf(what, sizeof(what), "[%d servers] ", nservers), \
                snprintf(what + strlen(what), sizeof(what) - strlen(what), __VA_ARGS__), what)

/* Reads the whole file at path into a fresh buffer; returns its length. */
static long slurp(adafs *fs, const char *path, char **out)
{
    struct stat st;
    if (adafs_stat(fs, path, &st) < 0)
        return -1;
    int fd = adafs_open(fs, path, O_RDONLY, 0);
    *out = malloc((size_t)st.st_size + 1);
    long n = adafs_pread(fs, fd, *out, (size_t)st.st_size + 1, 0);
    adafs_close(fs, fd);
    return n;
}

static void random_io(adafs *fs)
{
    const size_t max = 1 << 20;
    char *shadow = calloc(1, max), *buf = malloc(max), *back = malloc(max);
    size_t size = 0;
    int fd = adafs_open(fs, "/rand", O_CREAT | O_RDWR, 0600);
    srand(42 + (unsigned)nservers);
    int ok = 1;
    for (int i = 0; i < 40 && ok; i++) {
        size_t off = (size_t)rand() % (max - 200000), len = 1 + (size_t)rand() % 200000;
        fstest_fill(buf, len, (unsigned)i);
        ok = adafs_pwrite(fs, fd, buf, len, (off_t)off) == (ssize_t)len;
        memcpy(shadow + off, buf, len);
        if (off + len > size)
            size = off + len;
    }
    tap_ok(ok, "%s", W("40 random pwrites of up to 200000 bytes"));
    struct stat st;
    adafs_fstat(fs, fd, &st);
    tap_is_int(st.st_size, size, W("size is the furthest end written"));
    tap_is_int(adafs_pread(fs, fd, back, max, 0), size, W("pread of everything"));
    tap_ok(memcmp(shadow, back, size) == 0, "%s", W("random writes read back byte for byte"));
    ok = 1;
    for (int i = 0; i < 40 && ok; i++) {
        size_t off = (size_t)rand() % size, len = 1 + (size_t)rand() % 150000;
        size_t want = off + len > size ? size - off : len;
        ok = adafs_pread(fs, fd, back, len, (off_t)off) == (ssize_t)want &&
             memcmp(back, shadow + off, want) == 0;
    }
    tap_ok(ok, "%s", W("40 random preads match"));
    /* Exactly on chunk boundaries. */
    fstest_fill(buf, 2 * CHUNK, 99);
    adafs_pwrite(fs, fd, buf, 2 * CHUNK, CHUNK);
    memcpy(shadow + CHUNK, buf, 2 * CHUNK);
    adafs_pread(fs, fd, back, 3 * CHUNK + 1, CHUNK - 1);
    tap_ok(memcmp(back, shadow + CHUNK - 1, 3 * CHUNK + 1) == 0, "%s",
           W("write aligned to chunks, read straddling them"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/rand");
    free(shadow);
    free(buf);
    free(back);
}

static void sparse_and_truncate(adafs *fs)
{
    int fd = adafs_open(fs, "/sparse", O_CREAT | O_RDWR | O_TRUNC, 0600);
    const off_t far = 3 * CHUNK * 7 + 123;
    tap_is_int(adafs_pwrite(fs, fd, "x", 1, far), 1, W("write one byte far out"));
    char *back;
    long n = slurp(fs, "/sparse", &back);
    int zeros = 1;
    for (long i = 0; i < far; i++)
        zeros &= back[i] == 0;
    tap_ok(n == far + 1 && zeros && back[far] == 'x', "%s", W("the hole reads as zeros"));
    free(back);

    char *data = malloc(300000);
    fstest_fill(data, 300000, 7);
    adafs_pwrite(fs, fd, data, 300000, 0);
    tap_is_int(adafs_ftruncate(fs, fd, 100000), 0, W("ftruncate shrink to 100000"));
    tap_is_int(adafs_truncate(fs, "/sparse", 500000), 0, W("truncate grow to 500000"));
    n = slurp(fs, "/sparse", &back);
    zeros = 1;
    for (long i = 100000; i < n; i++)
        zeros &= back[i] == 0;
    tap_ok(n == 500000 && memcmp(back, data, 100000) == 0, "%s", W("shrink kept the head"));
    tap_ok(zeros, "%s", W("grow after shrink reads zeros, not the old bytes"));
    free(back);
    tap_is_int(adafs_truncate(fs, "/sparse", 0), 0, W("truncate to 0"));
    struct stat st;
    adafs_fstat(fs, fd, &st);
    tap_is_int(st.st_size, 0, W("size 0"));
    tap_is_int(adafs_read(fs, fd, data, 10), 0, W("read of an empty file is 0"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/sparse");
    free(data);
}

static void append_and_offsets(adafs *fs)
{
    int fd = adafs_open(fs, "/app", O_CREAT | O_WRONLY | O_APPEND, 0600);
    for (int i = 0; i < 5; i++)
        adafs_write(fs, fd, "0123456789", 10);
    int fd2 = adafs_open(fs, "/app", O_WRONLY | O_APPEND, 0600);
    adafs_write(fs, fd2, "abc", 3);
    adafs_write(fs, fd, "Z", 1);
    adafs_close(fs, fd2);
    tap_is_int(adafs_lseek(fs, fd, 0, SEEK_CUR), 54, W("offset after append is the end"));
    adafs_close(fs, fd);
    char *back;
    tap_is_int(slurp(fs, "/app", &back), 54, W("two appenders: size 54"));
    tap_ok(memcmp(back + 50, "abcZ", 4) == 0, "%s", W("appends landed in order"));
    free(back);
    fd = adafs_open(fs, "/app", O_RDWR, 0);
    tap_is_int(adafs_lseek(fs, fd, -4, SEEK_END), 50, W("SEEK_END"));
    tap_is_int(adafs_lseek(fs, fd, -100, SEEK_CUR), -EINVAL, W("seek before 0 is EINVAL"));
    tap_is_int(adafs_lseek(fs, fd, 0, 77), -EINVAL, W("bad whence is EINVAL"));
    tap_is_int(adafs_lseek(fs, fd, 60, SEEK_DATA), -ENXIO, W("SEEK_DATA past the end is ENXIO"));
    int d = adafs_dup(fs, fd);
    adafs_lseek(fs, d, 10, SEEK_SET);
    tap_is_int(adafs_lseek(fs, fd, 0, SEEK_CUR), 10, W("a dup shares the offset"));
    tap_is_int(adafs_set_flags(fs, d, O_APPEND), 0, W("set O_APPEND"));
    tap_ok(adafs_get_flags(fs, fd) & O_APPEND, "%s", W("flag visible through the original"));
    tap_is_str(adafs_fd_path(fs, fd), "/app", W("fd path"));
    adafs_close(fs, fd);
    adafs_close(fs, d);
    tap_ok(adafs_fd_path(fs, fd) == NULL, "%s", W("no path for a closed fd"));
    adafs_unlink(fs, "/app");
}

static void rename_cases(adafs *fs)
{
    char data[100000], *back;
    fstest_fill(data, sizeof(data), 3);
    adafs_create_write(fs, "/r1", 0644, data, sizeof(data));
    adafs_mkdir(fs, "/rd", 0755);
    tap_is_int(adafs_rename(fs, "/r1", "/rd/r2"), 0, W("rename a file into a directory"));
    struct stat st;
    tap_is_int(adafs_stat(fs, "/r1", &st), -ENOENT, W("old name gone"));
    tap_ok(slurp(fs, "/rd/r2", &back) == sizeof(data) && memcmp(back, data, sizeof(data)) == 0,
           "%s", W("data follows the new name"));
    free(back);
    adafs_create_write(fs, "/r3", 0644, "old", 3);
    tap_is_int(adafs_rename(fs, "/rd/r2", "/r3"), 0, W("rename over an existing file"));
    tap_ok(slurp(fs, "/r3", &back) == sizeof(data) && memcmp(back, data, 16) == 0, "%s",
           W("the target now has the source's data"));
    free(back);
    adafs_mkdir(fs, "/e1", 0755);
    tap_is_int(adafs_rename(fs, "/e1", "/e2"), 0, W("rename an empty directory"));
    tap_ok(adafs_stat(fs, "/e2", &st) == 0 && S_ISDIR(st.st_mode), "%s", W("it is there"));
    adafs_create_write(fs, "/rd/x", 0644, "x", 1);
    tap_is_int(adafs_rename(fs, "/rd", "/rd2"), -EXDEV, W("non-empty directory: EXDEV"));
    tap_is_int(adafs_rename(fs, "/r3", "/e2"), -EISDIR, W("file over a directory: EISDIR"));
    tap_is_int(adafs_rename(fs, "/e2", "/r3"), -ENOTDIR, W("directory over a file: ENOTDIR"));
    tap_is_int(adafs_rename(fs, "/e2", "/rd"), -ENOTEMPTY, W("directory over a full one: ENOTEMPTY"));
    tap_is_int(adafs_rename(fs, "/r3", "/nodir/r3"), -ENOENT, W("into a missing parent: ENOENT"));
    tap_is_int(adafs_rename(fs, "/missing", "/r9"), -ENOENT, W("missing source: ENOENT"));
    tap_is_int(adafs_rename(fs, "/e2", "/e2/sub"), -EINVAL, W("directory into itself: EINVAL"));
    tap_is_int(adafs_rename(fs, "/r3", "/r3"), 0, W("rename to itself is a no-op"));
    adafs_unlink(fs, "/r3");
    adafs_unlink(fs, "/rd/x");
    adafs_rmdir(fs, "/rd");
    adafs_rmdir(fs, "/e2");
}

static void unlink_open(adafs *fs)
{
    char data[200000], back[200000];
    fstest_fill(data, sizeof(data), 5);
    int fd = adafs_open(fs, "/tmpf", O_CREAT | O_RDWR, 0600);
    adafs_write(fs, fd, data, sizeof(data));
    tap_is_int(adafs_unlink(fs, "/tmpf"), 0, W("unlink an open file"));
    struct stat st;
    tap_is_int(adafs_stat(fs, "/tmpf", &st), -ENOENT, W("its name is gone"));
    tap_is_int(adafs_pread(fs, fd, back, sizeof(back), 0), sizeof(back), W("still readable"));
    tap_ok(memcmp(back, data, sizeof(data)) == 0, "%s", W("with its data"));
    tap_is_int(adafs_pwrite(fs, fd, "tail", 4, sizeof(data)), 4, W("and writable"));
    tap_ok(adafs_fstat(fs, fd, &st) == 0 && st.st_size == sizeof(data) + 4, "%s",
           W("fstat of the unlinked file sees the new size"));
    int fd2 = adafs_open(fs, "/tmpf", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_pread(fs, fd2, back, 10, 0), 0, W("a new file of that name is empty"));
    adafs_close(fs, fd2);
    adafs_unlink(fs, "/tmpf");
    tap_is_int(adafs_close(fs, fd), 0, W("last close drops it"));
}

static void small_files(adafs *fs)
{
    char big[3 * CHUNK + 5], *back;
    fstest_fill(big, sizeof(big), 11);
    tap_is_int(adafs_create_write(fs, "/cw", 0640, "hello", 5), 0, W("create_write small"));
    tap_ok(slurp(fs, "/cw", &back) == 5 && memcmp(back, "hello", 5) == 0, "%s", W("reads back"));
    free(back);
    tap_is_int(adafs_create_write(fs, "/cw", 0640, big, sizeof(big)), 0, W("create_write replaces, 4 chunks"));
    tap_ok(slurp(fs, "/cw", &back) == sizeof(big) && memcmp(back, big, sizeof(big)) == 0, "%s",
           W("multi-chunk create_write reads back"));
    free(back);
    tap_is_int(adafs_create_write(fs, "/cw", 0640, "", 0), 0, W("create_write empty"));
    struct stat st;
    tap_ok(adafs_stat(fs, "/cw", &st) == 0 && st.st_size == 0 && (st.st_mode & 0777) == 0640,
           "%s", W("empty, mode 0640"));
    tap_is_int(adafs_create_write(fs, "/nodir/cw", 0640, "x", 1), -ENOENT, W("create_write, no parent: ENOENT"));
    adafs_mkdir(fs, "/cwd", 0700);
    tap_is_int(adafs_create_write(fs, "/cwd", 0640, "x", 1), -EISDIR, W("create_write over a directory: EISDIR"));
    tap_is_int(adafs_chmod(fs, "/cw", 0600), 0, W("chmod"));
    struct timespec ts[2] = { { 1000, 5 }, { 2000, 7 } };
    tap_is_int(adafs_utimens(fs, "/cw", ts), 0, W("utimens"));
    adafs_stat(fs, "/cw", &st);
    tap_ok((st.st_mode & 0777) == 0600 && st.st_atim.tv_sec == 1000 && st.st_mtim.tv_sec == 2000 &&
           st.st_mtim.tv_nsec == 7, "%s", W("mode and times set"));
    struct timespec bad[2] = { { 0, 2000000000 }, { 0, 0 } };
    tap_is_int(adafs_utimens(fs, "/cw", bad), -EINVAL, W("utimens with bad nanoseconds: EINVAL"));
    tap_is_int(adafs_chmod(fs, "/none", 0600), -ENOENT, W("chmod of a missing path: ENOENT"));
    tap_is_int(adafs_access(fs, "/cw", R_OK | W_OK), 0, W("access R_OK|W_OK"));
    tap_is_int(adafs_access(fs, "/cw", X_OK), -EACCES, W("access X_OK on 0600: EACCES"));
    struct statvfs sv;
    tap_ok(adafs_statvfs(fs, &sv) == 0 && sv.f_bsize == 4096 && sv.f_blocks > 0, "%s", W("statvfs"));
    adafs_unlink(fs, "/cw");
    adafs_rmdir(fs, "/cwd");
}

static void errors(adafs *fs)
{
    struct stat st;
    adafs_create_write(fs, "/file", 0644, "abc", 3);
    adafs_mkdir(fs, "/dir", 0755);
    adafs_create_write(fs, "/dir/in", 0644, "abc", 3);
    tap_is_int(adafs_open(fs, "/missing", O_RDONLY, 0), -ENOENT, W("open missing: ENOENT"));
    tap_is_int(adafs_open(fs, "/no/such/x", O_CREAT | O_WRONLY, 0600), -ENOENT, W("create in a missing dir: ENOENT"));
    tap_is_int(adafs_open(fs, "/file/x", O_RDONLY, 0), -ENOTDIR, W("open below a file: ENOTDIR"));
    tap_is_int(adafs_open(fs, "/file/x", O_CREAT | O_WRONLY, 0600), -ENOTDIR, W("create below a file: ENOTDIR"));
    tap_is_int(adafs_stat(fs, "/file/x/y", &st), -ENOTDIR, W("stat below a file: ENOTDIR"));
    tap_is_int(adafs_mkdir(fs, "/file/x", 0755), -ENOTDIR, W("mkdir below a file: ENOTDIR"));
    tap_is_int(adafs_mkdir(fs, "/dir", 0755), -EEXIST, W("mkdir existing: EEXIST"));
    tap_is_int(adafs_mkdir(fs, "/file", 0755), -EEXIST, W("mkdir over a file: EEXIST"));
    tap_is_int(adafs_mkdir(fs, "/", 0755), -EEXIST, W("mkdir /: EEXIST"));
    tap_is_int(adafs_open(fs, "/file", O_CREAT | O_EXCL | O_WRONLY, 0600), -EEXIST, W("O_EXCL on existing: EEXIST"));
    tap_is_int(adafs_open(fs, "/dir", O_WRONLY, 0), -EISDIR, W("open a directory for writing: EISDIR"));
    tap_is_int(adafs_unlink(fs, "/dir"), -EISDIR, W("unlink a directory: EISDIR"));
    tap_is_int(adafs_rmdir(fs, "/dir"), -ENOTEMPTY, W("rmdir non-empty: ENOTEMPTY"));
    tap_is_int(adafs_rmdir(fs, "/file"), -ENOTDIR, W("rmdir a file: ENOTDIR"));
    tap_is_int(adafs_rmdir(fs, "/missing"), -ENOENT, W("rmdir missing: ENOENT"));
    tap_is_int(adafs_rmdir(fs, "/"), -EBUSY, W("rmdir /: EBUSY"));
    tap_is_int(adafs_unlink(fs, "/missing"), -ENOENT, W("unlink missing: ENOENT"));
    tap_is_int(adafs_truncate(fs, "/dir", 0), -EISDIR, W("truncate a directory: EISDIR"));
    tap_is_int(adafs_truncate(fs, "/file", -1), -EINVAL, W("truncate to -1: EINVAL"));
    tap_is_int(adafs_stat(fs, "/..", &st), -EINVAL, W("path leaving /: EINVAL"));
    tap_is_int(adafs_stat(fs, "relative", &st), -EINVAL, W("relative path: EINVAL"));
    tap_is_int(adafs_stat(fs, "//dir/./in/../in", &st), 0, W("., .. and // are normalised"));
    int fd = adafs_open(fs, "/file", O_RDONLY, 0);
    tap_is_int(adafs_write(fs, fd, "x", 1), -EBADF, W("write on O_RDONLY: EBADF"));
    tap_is_int(adafs_ftruncate(fs, fd, 0), -EINVAL, W("ftruncate on O_RDONLY: EINVAL"));
    tap_is_int(adafs_pread(fs, fd, &st, 1, -1), -EINVAL, W("negative offset: EINVAL"));
    adafs_close(fs, fd);
    fd = adafs_open(fs, "/file", O_WRONLY, 0);
    char c;
    tap_is_int(adafs_read(fs, fd, &c, 1), -EBADF, W("read on O_WRONLY: EBADF"));
    adafs_close(fs, fd);
    fd = adafs_open(fs, "/dir", O_RDONLY | O_DIRECTORY, 0);
    tap_ok(fd >= 0, "%s", W("open a directory O_RDONLY|O_DIRECTORY"));
    tap_is_int(adafs_read(fs, fd, &c, 1), -EISDIR, W("read a directory fd: EISDIR"));
    adafs_close(fs, fd);
    tap_is_int(adafs_open(fs, "/file", O_RDONLY | O_DIRECTORY, 0), -ENOTDIR, W("O_DIRECTORY on a file: ENOTDIR"));
    tap_is_int(adafs_read(fs, 999, &c, 1), -EBADF, W("read on a bad fd: EBADF"));
    tap_is_int(adafs_dup(fs, -1), -EBADF, W("dup of a bad fd: EBADF"));
    adafs_dir *d;
    tap_is_int(adafs_opendir(fs, "/file", &d), -ENOTDIR, W("opendir a file: ENOTDIR"));
    tap_is_int(adafs_opendir(fs, "/missing", &d), -ENOENT, W("opendir missing: ENOENT"));
    char longname[300];
    memset(longname, 'a', sizeof(longname));
    longname[0] = '/';
    longname[299] = '\0';
    tap_is_int(adafs_stat(fs, longname, &st), -ENAMETOOLONG, W("name of 298 bytes: ENAMETOOLONG"));
    /* A directory that was there a moment ago (servers remember checked
     * parents) must not take new files once removed or renamed. */
    adafs_mkdir(fs, "/gone", 0755);
    adafs_create_write(fs, "/gone/f", 0644, "x", 1);
    adafs_unlink(fs, "/gone/f");
    adafs_rmdir(fs, "/gone");
    tap_is_int(adafs_open(fs, "/gone/g", O_CREAT | O_WRONLY, 0600), -ENOENT, W("create in a removed directory: ENOENT"));
    tap_is_int(adafs_mkdir(fs, "/gone/d", 0755), -ENOENT, W("mkdir in a removed directory: ENOENT"));
    adafs_mkdir(fs, "/moved", 0755);
    int f2 = adafs_open(fs, "/moved/f", O_CREAT | O_WRONLY, 0600);
    adafs_close(fs, f2);
    adafs_unlink(fs, "/moved/f");
    adafs_rename(fs, "/moved", "/moved2");
    tap_is_int(adafs_create_write(fs, "/moved/x", 0644, "x", 1), -ENOENT, W("create in a renamed-away directory: ENOENT"));
    adafs_rmdir(fs, "/moved2");
    adafs_unlink(fs, "/dir/in");
    adafs_rmdir(fs, "/dir");
    adafs_unlink(fs, "/file");
}

int main(void)
{
    static const int counts[] = { 1, 2, 4 };
    for (size_t i = 0; i < 3; i++) {
        nservers = counts[i];
        struct fstest t;
        fstest_start(&t, nservers, "--chunk-size 64K");
        random_io(t.fs);
        sparse_and_truncate(t.fs);
        append_and_offsets(t.fs);
        rename_cases(t.fs);
        unlink_open(t.fs);
        small_files(t.fs);
        errors(t.fs);
        adafs_dir *d;
        struct adafs_dirent e;
        int left = 0;
        adafs_opendir(t.fs, "/", &d);
        while (adafs_readdir(d, &e) == 1)
            left += e.name[0] != '.';
        adafs_closedir(d);
        tap_is_int(left, 0, W("every test cleaned up after itself (/ is empty)"));
        fstest_stop(&t);
    }
    return tap_done();
}
