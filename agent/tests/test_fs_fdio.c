/* adafs_pwrite_from_fd, adafs_create_write_fd and adafs_pread_to_fd: integrity across chunk
 * boundaries and batches, short sources, holes, every bad descriptor with
 * its errno, a destination that refuses data; the connection's pipe (a
 * forked child's own, close-on-exec); a stopped or killed server (EIO in
 * bounded time, no SIGPIPE). All of it both ways a client reaches the
 * servers of its node: their Unix sockets (the servers copy from the
 * caller's files into their chunk files, FS_BULK_FD) and TCP
 * (ADAFS_TRANSPORT=tcp); and what the Unix socket refuses. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fstest.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "tap.h"

#define CHUNK 65536
static int nservers;
static const char *transport = "local";
static char what[256];
#define W(...) (snprintf(what, sizeof(what), "[%d servers, %s] ", nservers, transport), \
                snprintf(what + strlen(what), sizeof(what) - strlen(what), __VA_ARGS__), what)

static char tmpdir[256];
/* Pipes open before the library made any: the test's own (make's...). */
static unsigned char fifo_before[1024];

static int is_fifo(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

/* A local file holding len pseudo-random bytes (seed); returns an fd open
 * for reading and writing, and the bytes in *data (caller frees). */
static int local_file(const char *name, size_t len, unsigned seed, char **data)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    *data = malloc(len ? len : 1);
    fstest_fill(*data, len, seed);
    if (fd < 0 || pwrite(fd, *data, len, 0) != (ssize_t)len) {
        fprintf(stderr, "cannot make %s\n", path);
        exit(1);
    }
    return fd;
}

/* Reads back len bytes of path from adafs at off and compares them. */
static int adafs_holds(adafs *fs, const char *path, uint64_t off, const char *want, size_t len)
{
    char *back = malloc(len + 1);
    int fd = adafs_open(fs, path, O_RDONLY, 0);
    int ok = adafs_pread(fs, fd, back, len + 1, (off_t)off) >= (ssize_t)len &&
             memcmp(back, want, len) == 0;
    adafs_close(fs, fd);
    free(back);
    return ok;
}

static int local_holds(int fd, uint64_t off, const char *want, size_t len)
{
    char *back = malloc(len);
    int ok = pread(fd, back, len, (off_t)off) == (ssize_t)len && memcmp(back, want, len) == 0;
    free(back);
    return ok;
}

static void from_fd(adafs *fs)
{
    /* 3 MiB + a bit: more than one batch of 32 chunks. */
    const size_t len = 3 * (1 << 20) + 4321;
    char *data;
    int src = local_file("src", len, 7, &data);
    int fd = adafs_open(fs, "/from", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 0, len, 0), len,
               W("pwrite_from_fd of a whole 3 MiB file"));
    tap_ok(adafs_holds(fs, "/from", 0, data, len), "%s", W("it reads back byte for byte"));
    struct stat st;
    adafs_fstat(fs, fd, &st);
    tap_is_int(st.st_size, len, W("the size is the file's"));
    tap_is_int(lseek(src, 0, SEEK_CUR), 0, W("the source's offset did not move"));
    /* Unaligned on both sides, straddling chunk boundaries. */
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 12345, 3 * CHUNK, CHUNK - 100), 3 * CHUNK,
               W("unaligned source and target offsets"));
    tap_ok(adafs_holds(fs, "/from", CHUNK - 100, data + 12345, 3 * CHUNK), "%s",
           W("the range landed where asked"));
    tap_ok(adafs_holds(fs, "/from", 0, data, CHUNK - 100), "%s", W("and nothing before it moved"));
    /* Short source. */
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, (off_t)len - 1000, 50000, 0), 1000,
               W("a source shorter than asked: the bytes it holds"));
    tap_ok(adafs_holds(fs, "/from", 0, data + len - 1000, 1000), "%s", W("those bytes"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, (off_t)len, 10, 0), 0, W("at the source's end: 0"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, (off_t)len + 5, 10, 0), 0, W("past it: 0"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 0, 0, 0), 0, W("count 0: 0"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/from");
    close(src);
    free(data);
}

static uint64_t used_blocks(adafs *fs)
{
    struct statvfs sv;
    return adafs_statvfs(fs, &sv) == 0 ? sv.f_blocks - sv.f_bfree : (uint64_t)-1;
}

static void create_from_fd(adafs *fs)
{
    /* Several chunks, each past the size from which servers splice a
     * request's data into the file instead of reading it into memory. */
    const size_t len = 5 * CHUNK + 123, skip = 1000;
    char *data;
    int src = local_file("create", len + skip, 21, &data);
    struct timespec mt = { .tv_sec = 1234567890, .tv_nsec = 42 };
    tap_is_int(adafs_create_write_fd(fs, "/created", 0640, src, (off_t)skip, len, &mt, 0), 0,
               W("create_write_fd of 5 chunks and a bit from offset %zu", skip));
    tap_ok(adafs_holds(fs, "/created", 0, data + skip, len), "%s", W("it reads back byte for byte"));
    struct stat st;
    adafs_stat(fs, "/created", &st);
    tap_ok(st.st_size == (off_t)len && (st.st_mode & 07777) == 0640 &&
           st.st_mtim.tv_sec == mt.tv_sec && st.st_mtim.tv_nsec == mt.tv_nsec,
           "%s", W("size, mode and mtime are the ones asked for"));
    tap_is_int(lseek(src, 0, SEEK_CUR), 0, W("the source's offset did not move"));
    tap_is_int(adafs_create_write_fd(fs, "/created", 0600, src, 0, 2 * CHUNK, NULL, 0), 0,
               W("again over the same name, shorter"));
    tap_ok(adafs_holds(fs, "/created", 0, data, 2 * CHUNK), "%s", W("the new data replaced the old"));
    adafs_stat(fs, "/created", &st);
    tap_is_int(st.st_size, 2 * CHUNK, W("and the new size"));
    tap_is_int(adafs_create_write_fd(fs, "/empty", 0600, src, 0, 0, NULL, 0), 0, W("an empty file"));
    tap_ok(adafs_stat(fs, "/empty", &st) == 0 && st.st_size == 0, "%s", W("exists, empty"));

    /* Refused before anything is sent. */
    tap_is_int(adafs_create_write_fd(fs, "/short", 0600, src, (off_t)skip, len + 1, NULL, 0),
               -ENODATA, W("a source holding fewer bytes than asked: ENODATA"));
    tap_is_int(adafs_create_write_fd(fs, "/big", 0600, src, 0,
                                     ADAFS_CREATE_FD_CHUNKS * (size_t)CHUNK + 1, NULL, 0),
               -EFBIG, W("more than ADAFS_CREATE_FD_CHUNKS chunks: EFBIG"));
    tap_is_int(adafs_create_write_fd(fs, "/bad", 0600, src, -1, 10, NULL, 0), -EINVAL,
               W("a negative source offset: EINVAL"));
    tap_is_int(adafs_create_write_fd(fs, "/bad", 0600, src, 0, 10, NULL, 99), -EINVAL,
               W("unknown flags: EINVAL"));
    char path[512];
    snprintf(path, sizeof(path), "%s/create", tmpdir);
    int wronly = open(path, O_WRONLY);
    tap_is_int(adafs_create_write_fd(fs, "/bad", 0600, wronly, 0, 10, NULL, 0), -EBADF,
               W("a write-only source: EBADF"));
    close(wronly);
    int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
    tap_is_int(adafs_create_write_fd(fs, "/bad", 0600, dirfd, 0, 10, NULL, 0), -EISDIR,
               W("a directory as the source: EISDIR"));
    close(dirfd);
    tap_ok(adafs_stat(fs, "/short", &st) == -ENOENT && adafs_stat(fs, "/bad", &st) == -ENOENT,
           "%s", W("none of the refused names exists"));

    /* Over a directory: the streamed data is refused and not kept. */
    adafs_mkdir(fs, "/dir", 0700);
    uint64_t used = used_blocks(fs);
    tap_is_int(adafs_create_write_fd(fs, "/dir", 0600, src, 0, 3 * CHUNK, NULL, 0), -EISDIR,
               W("over a directory: EISDIR"));
    tap_ok(adafs_stat(fs, "/dir", &st) == 0 && S_ISDIR(st.st_mode), "%s",
           W("the directory is still one"));
    tap_is_int(used_blocks(fs), used, W("and no data of the refused file stays behind"));
    tap_is_int(adafs_create_write_fd(fs, "/nodir/f", 0600, src, 0, 3 * CHUNK, NULL, 0), -ENOENT,
               W("in a missing directory: ENOENT"));
    tap_is_int(used_blocks(fs), used, W("nothing of it stays behind either"));
    adafs_rmdir(fs, "/dir");
    adafs_unlink(fs, "/created");
    adafs_unlink(fs, "/empty");
    close(src);
    free(data);
}

static void to_fd(adafs *fs)
{
    const size_t len = 3 * (1 << 20) + 777;
    char *data = malloc(len), *ones = malloc(len);
    fstest_fill(data, len, 11);
    adafs_create_write(fs, "/to", 0600, data, len);
    char *junk;
    int dst = local_file("dst", len + 1000, 12, &junk);
    int fd = adafs_open(fs, "/to", O_RDONLY, 0);
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 999, len, 0), len, W("pread_to_fd of a 3 MiB file"));
    tap_ok(local_holds(dst, 999, data, len), "%s", W("the local file holds it at dst_off"));
    tap_ok(local_holds(dst, 0, junk, 999), "%s", W("and nothing before dst_off changed"));
    tap_is_int(lseek(dst, 0, SEEK_CUR), 0, W("the destination's offset did not move"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, 3 * CHUNK, CHUNK - 1), 3 * CHUNK,
               W("an unaligned range straddling chunks"));
    tap_ok(local_holds(dst, 0, data + CHUNK - 1, 3 * CHUNK), "%s", W("is that range"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, 100000, (off_t)len - 10), 10,
               W("near the end: short, the bytes there"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, 100, (off_t)len), 0, W("at the end: 0"));
    adafs_close(fs, fd);
    /* Holes read as zeros into the file, over what it held. */
    fd = adafs_open(fs, "/sparse", O_CREAT | O_RDWR, 0600);
    adafs_pwrite(fs, fd, "head", 4, 0);
    adafs_pwrite(fs, fd, "tail", 4, 5 * CHUNK);
    memset(ones, 0xff, len);
    pwrite(dst, ones, len, 0);
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, len, 0), 5 * CHUNK + 4, W("a sparse file"));
    memset(ones, 0, 5 * CHUNK + 4);
    memcpy(ones, "head", 4);
    memcpy(ones + 5 * CHUNK, "tail", 4);
    tap_ok(local_holds(dst, 0, ones, 5 * CHUNK + 4), "%s", W("its holes arrive as zeros"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/sparse");
    adafs_unlink(fs, "/to");
    close(dst);
    free(junk);
    free(ones);
    free(data);
}

/* adafs_pread_to_fd_sparse: what no server holds is not written. */
static void to_fd_sparse(adafs *fs)
{
    const size_t size = 200 * CHUNK;
    int fd = adafs_open(fs, "/holes", O_CREAT | O_RDWR, 0600);
    adafs_pwrite(fs, fd, "head", 4, 0);
    adafs_pwrite(fs, fd, "tail", 4, CHUNK - 4);
    adafs_ftruncate(fs, fd, (off_t)size);
    char *want = calloc(1, size), *junk;
    memcpy(want, "head", 4);
    memcpy(want + CHUNK - 4, "tail", 4);
    /* A fresh destination extended to the size afterwards keeps the hole. */
    int dst = local_file("holes", 0, 0, &junk);
    int zeros = 0;
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, dst, 0, size, 0, &zeros), size,
               W("pread_to_fd_sparse: the count includes the hole"));
    tap_is_int(zeros, 1, W("chunk 0 (inline, a gap inside) may have written zeros"));
    tap_is_int(ftruncate(dst, (off_t)size), 0, W("the destination extended to the size"));
    struct stat st;
    fstat(dst, &st);
    tap_ok(st.st_size == (off_t)size && st.st_blocks * 512 < 1024 * 1024, "%s",
           W("199 chunks of hole stay a hole (%lld of %zu bytes allocated)",
             (long long)st.st_blocks * 512, size));
    tap_ok(local_holds(dst, 0, want, size), "%s", W("and the data around it is exact"));
    close(dst);
    free(junk);
    /* Over data: the bytes of the hole are left as they were. */
    char *ones;
    dst = local_file("holes", size, 13, &ones);
    memset(ones, 0xff, size);
    pwrite(dst, ones, size, 0);
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, dst, 0, size, 0, NULL), size,
               W("pread_to_fd_sparse over old data (zeros not asked for)"));
    memcpy(ones, want, CHUNK);
    tap_ok(local_holds(dst, 0, ones, size), "%s",
           W("the data written, the hole past it left untouched"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, size, 0), size, W("pread_to_fd of the same"));
    tap_ok(local_holds(dst, 0, want, size), "%s", W("writes the hole as zeros"));
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, -1, 0, size, 0, NULL), -EBADF,
               W("pread_to_fd_sparse: dst_fd -1: EBADF"));
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, dst, -1, size, 0, NULL), -EINVAL,
               W("pread_to_fd_sparse: negative dst_off: EINVAL"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/holes");

    /* Whether zeros of holes may have been written: servers look at their
     * extents. Dense chunks past chunk 0 (which may be inline): no. */
    char *data = malloc(4 * CHUNK);
    fstest_fill(data, 4 * CHUNK, 5);
    adafs_create_write(fs, "/dense", 0600, data, 4 * CHUNK);
    fd = adafs_open(fs, "/dense", O_RDONLY, 0);
    zeros = 0;
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, dst, 0, 3 * CHUNK, CHUNK, &zeros), 3 * CHUNK,
               W("chunks 1-3 of a dense file"));
    tap_is_int(zeros, 0, W("no zeros of holes written"));
    adafs_close(fs, fd);
    /* A hole of a block inside chunk 1, and one of chunks 2-3 before 4. */
    fd = adafs_open(fs, "/gaps", O_CREAT | O_RDWR, 0600);
    adafs_pwrite(fs, fd, data, 4096, CHUNK);
    adafs_pwrite(fs, fd, data, CHUNK - 8192, CHUNK + 8192);
    adafs_pwrite(fs, fd, data, 100, 4 * CHUNK);
    zeros = 0;
    tap_is_int(adafs_pread_to_fd_sparse(fs, fd, dst, 0, CHUNK, CHUNK, &zeros), CHUNK,
               W("chunk 1, a block of hole inside"));
    tap_is_int(zeros, 1, W("zeros of a hole may have been written"));
    memset(data + 4096, 0, 4096);
    tap_ok(local_holds(dst, 0, data, 4096) && local_holds(dst, 4096, data + 4096, 4096), "%s",
           W("the data and the zeros of the hole"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/dense");
    adafs_unlink(fs, "/gaps");
    close(dst);
    free(data);
    free(ones);
    free(want);
}

/* The number of a descriptor that was just closed. */
static int closed_fd(void)
{
    int fd = dup(0);
    close(fd);
    return fd;
}

static void bad_fds(adafs *fs)
{
    char *data, dirpath[300];
    int src = local_file("bsrc", 1000, 3, &data);
    int fd = adafs_open(fs, "/bad", O_CREAT | O_RDWR, 0600);
    adafs_pwrite(fs, fd, data, 1000, 0);
    int ro = adafs_open(fs, "/bad", O_RDONLY, 0), wo = adafs_open(fs, "/bad", O_WRONLY, 0);
    adafs_mkdir(fs, "/bdir", 0700);
    int dfd = adafs_open(fs, "/bdir", O_RDONLY | O_DIRECTORY, 0);
    snprintf(dirpath, sizeof(dirpath), "%s/bsrc", tmpdir);
    int src_wo = open(dirpath, O_WRONLY), src_path = open(dirpath, O_PATH);
    int app = open(dirpath, O_WRONLY | O_APPEND), local_dir = open(tmpdir, O_RDONLY);
    int p[2];
    if (pipe(p) < 0)
        exit(1);

    tap_is_int(adafs_pwrite_from_fd(fs, 999, src, 0, 10, 0), -EBADF, W("from_fd: adafs fd not open: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, ro, src, 0, 10, 0), -EBADF, W("from_fd: adafs fd read-only: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, dfd, src, 0, 10, 0), -EISDIR, W("from_fd: adafs directory: EISDIR"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, -1, 0, 10, 0), -EBADF, W("from_fd: src_fd -1: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, closed_fd(), 0, 10, 0), -EBADF, W("from_fd: src_fd closed: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src_wo, 0, 10, 0), -EBADF, W("from_fd: src_fd write-only: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src_path, 0, 10, 0), -EBADF, W("from_fd: src_fd O_PATH: EBADF"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, local_dir, 0, 10, 0), -EISDIR, W("from_fd: src_fd a directory: EISDIR"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, p[0], 0, 10, 0), -EINVAL, W("from_fd: src_fd a pipe: EINVAL"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, -1, 10, 0), -EINVAL, W("from_fd: negative src_off: EINVAL"));
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 0, 10, -1), -EINVAL, W("from_fd: negative offset: EINVAL"));

    char *dd;
    int dst = local_file("bdst", 10, 4, &dd);
    free(dd);
    tap_is_int(adafs_pread_to_fd(fs, 999, dst, 0, 10, 0), -EBADF, W("to_fd: adafs fd not open: EBADF"));
    tap_is_int(adafs_pread_to_fd(fs, wo, dst, 0, 10, 0), -EBADF, W("to_fd: adafs fd write-only: EBADF"));
    tap_is_int(adafs_pread_to_fd(fs, dfd, dst, 0, 10, 0), -EISDIR, W("to_fd: adafs directory: EISDIR"));
    tap_is_int(adafs_pread_to_fd(fs, fd, -1, 0, 10, 0), -EBADF, W("to_fd: dst_fd -1: EBADF"));
    tap_is_int(adafs_pread_to_fd(fs, fd, closed_fd(), 0, 10, 0), -EBADF, W("to_fd: dst_fd closed: EBADF"));
    tap_is_int(adafs_pread_to_fd(fs, fd, local_dir, 0, 10, 0), -EBADF, W("to_fd: dst_fd read-only (a directory): EBADF"));
    tap_is_int(adafs_pread_to_fd(fs, fd, app, 0, 10, 0), -EINVAL, W("to_fd: dst_fd O_APPEND: EINVAL"));
    tap_is_int(adafs_pread_to_fd(fs, fd, p[1], 0, 10, 0), -EINVAL, W("to_fd: dst_fd a pipe: EINVAL"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, -1, 10, 0), -EINVAL, W("to_fd: negative dst_off: EINVAL"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, 10, -1), -EINVAL, W("to_fd: negative offset: EINVAL"));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, 10, 0), 10, W("and with good arguments it works"));

    close(dst);
    close(p[0]);
    close(p[1]);
    close(src);
    close(src_wo);
    close(src_path);
    close(app);
    close(local_dir);
    adafs_close(fs, fd);
    adafs_close(fs, ro);
    adafs_close(fs, wo);
    adafs_close(fs, dfd);
    adafs_unlink(fs, "/bad");
    adafs_rmdir(fs, "/bdir");
    free(data);
}

/* A destination that refuses the data part way: its error, and the
 * connection stays in step for the next call. */
static void dst_refuses(adafs *fs)
{
    const size_t len = 1 << 20;
    char *data = malloc(len), *dd;
    fstest_fill(data, len, 21);
    adafs_create_write(fs, "/refused", 0600, data, len);
    int dst = local_file("rdst", 0, 1, &dd);
    free(dd);
    int fd = adafs_open(fs, "/refused", O_RDONLY, 0);
    struct rlimit old, small = { 300000, 300000 };
    getrlimit(RLIMIT_FSIZE, &old);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &small);
    ssize_t n = adafs_pread_to_fd(fs, fd, dst, 0, len, 0);
    setrlimit(RLIMIT_FSIZE, &old);
    tap_ok(n > 0 && n < 300000 && n % CHUNK == 0,
           "%s", W("a file size limit of 300000: the whole chunks before it (%zd)", n));
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, len, 0), len, W("the limit gone, the same call works"));
    tap_ok(local_holds(dst, 0, data, len), "%s", W("with the right bytes: the connection kept in step"));
    setrlimit(RLIMIT_FSIZE, &small);
    n = adafs_pread_to_fd(fs, fd, dst, 400000, 1000, 0);
    setrlimit(RLIMIT_FSIZE, &old);
    tap_is_int(n, -EFBIG, W("nothing fits: the file's own error, EFBIG"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/refused");
    close(dst);
    free(data);
}

/* Data bound for a file goes through a pipe per connection: a forked
 * child must get its own (a shared one would mix both processes' data),
 * and exec must not inherit it. */
static void pipes_and_fork(adafs *fs)
{
    const size_t len = 4 << 20;
    char *a, *b;
    int src_a = local_file("fa", len, 31, &a), src_b = local_file("fb", len, 32, &b);
    int fa = adafs_open(fs, "/fork.a", O_CREAT | O_RDWR, 0600);
    int fb = adafs_open(fs, "/fork.b", O_CREAT | O_RDWR, 0600);
    tap_ok(adafs_pwrite_from_fd(fs, fa, src_a, 0, len, 0) == (ssize_t)len &&
           adafs_pwrite_from_fd(fs, fb, src_b, 0, len, 0) == (ssize_t)len, "%s",
           W("two 4 MiB files from local files"));
    char *da;
    int dst_a = local_file("da", 0, 1, &da);
    free(da);
    tap_is_int(adafs_pread_to_fd(fs, fa, dst_a, 0, len, 0), len, W("one read into a local file (pipes opened)"));
    int cloexec = 1, pipes = 0;
    for (int i = 0; i < 1024; i++) {
        if (!fifo_before[i] && is_fifo(i)) {
            pipes++;
            cloexec &= (fcntl(i, F_GETFD) & FD_CLOEXEC) != 0;
        }
    }
    tap_ok(pipes >= 2 && cloexec, "%s", W("the library's %d pipe ends are close-on-exec", pipes));
    pid_t pid = fork();
    if (pid == 0) {
        char *dd;
        int dst_b = local_file("db", 0, 1, &dd);
        int ok = 1;
        for (int i = 0; i < 8 && ok; i++)
            ok = adafs_pread_to_fd(fs, fb, dst_b, 0, len, 0) == (ssize_t)len &&
                 local_holds(dst_b, 0, b, len);
        _exit(ok ? 0 : 1);
    }
    int ok = 1;
    for (int i = 0; i < 8 && ok; i++)
        ok = adafs_pread_to_fd(fs, fa, dst_a, 0, len, 0) == (ssize_t)len &&
             local_holds(dst_a, 0, a, len);
    int status;
    waitpid(pid, &status, 0);
    tap_ok(ok, "%s", W("the parent reads its file 8 times, right each time"));
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s",
           W("and so does a forked child at the same time, through its own pipes"));
    adafs_close(fs, fa);
    adafs_close(fs, fb);
    adafs_unlink(fs, "/fork.a");
    adafs_unlink(fs, "/fork.b");
    close(src_a);
    close(src_b);
    close(dst_a);
    free(a);
    free(b);
}

/* A server that stops or dies while the *_fd calls stream to or from it:
 * EIO in bounded time, never a hang, and no SIGPIPE for the caller. */
static void faults(void)
{
    struct fstest t;
    nservers = 2;
    fstest_start(&t, 2, "--chunk-size 512K --timeout-ms 1000");
    adafs *fs = t.fs;
    signal(SIGPIPE, SIG_DFL);   /* a SIGPIPE would kill the test */
    const size_t len = 8 << 20;
    char *a, *dd;
    int src = local_file("fault", len, 41, &a), dst = local_file("fdst", 0, 1, &dd);
    int fd = adafs_open(fs, "/fault", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 0, len, 0), len, "8 MiB over 2 servers (connections up)");
    tap_is_int(adafs_pread_to_fd(fs, fd, dst, 0, len, 0), len, "and back into a local file");
    int pid1 = fstest_server_pid(&t, 1);
    tap_is_int(fstest_stop_process(pid1), 0, "server 1 is stopped (SIGSTOP)");
    double t0 = fstest_now();
    ssize_t n = adafs_pwrite_from_fd(fs, fd, src, 0, len, 0);
    double waited = fstest_now() - t0;
    tap_ok(n == -EIO || (n >= 0 && n < (ssize_t)len), "pwrite_from_fd to it fails (%zd)", n);
    tap_ok(waited < 4.0, "within the bounded time (%.2f s for a 1 s timeout)", waited);
    t0 = fstest_now();
    n = adafs_pread_to_fd(fs, fd, dst, 0, len, 0);
    waited = fstest_now() - t0;
    tap_ok(n == -EIO || (n >= 0 && n < (ssize_t)len), "pread_to_fd from it fails (%zd)", n);
    tap_ok(waited < 4.0, "within the bounded time (%.2f s)", waited);
    kill(pid1, SIGKILL);
    kill(pid1, SIGCONT);
    /* The failed calls dropped the connection: these reconnect, refused. */
    t0 = fstest_now();
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        n = adafs_pwrite_from_fd(fs, fd, src, 0, len, 0);
        failed += n == -EIO || (n >= 0 && n < (ssize_t)len);
    }
    tap_is_int(failed, 4, "4 calls after it was killed fail, and the process lives");
    tap_ok(fstest_now() - t0 < 2.0, "at once: connection refused (%.3f s)", fstest_now() - t0);
    adafs_close(fs, fd);
    close(src);
    close(dst);
    free(a);
    free(dd);
    fstest_stop(&t);
}

/* A server killed while the client holds a live connection to it: the
 * next sendfile goes out on that connection and meets a closed peer. */
static void killed_under_connection(void)
{
    struct fstest t;
    nservers = 2;
    fstest_start(&t, 2, "--chunk-size 512K --timeout-ms 1000");
    adafs *fs = t.fs;
    signal(SIGPIPE, SIG_DFL);
    const size_t len = 8 << 20;
    char *a;
    int src = local_file("killed", len, 51, &a);
    int fd = adafs_open(fs, "/killed", O_CREAT | O_RDWR, 0600);
    tap_is_int(adafs_pwrite_from_fd(fs, fd, src, 0, len, 0), len, "8 MiB over 2 servers (connections up)");
    int pid1 = fstest_server_pid(&t, 1);
    kill(pid1, SIGKILL);
    for (int i = 0; i < 200 && kill(pid1, 0) == 0; i++)
        usleep(10000);
    double t0 = fstest_now();
    ssize_t n = adafs_pwrite_from_fd(fs, fd, src, 0, len, 0);
    double waited = fstest_now() - t0;
    tap_ok(n == -EIO || (n >= 0 && n < (ssize_t)len),
           "pwrite_from_fd on the connection of a killed server fails (%zd), no SIGPIPE", n);
    tap_ok(waited < 2.0, "at once (%.3f s)", waited);
    sigset_t pending;
    sigpending(&pending);
    tap_ok(!sigismember(&pending, SIGPIPE), "and no SIGPIPE is left pending");
    adafs_close(fs, fd);
    close(src);
    free(a);
    fstest_stop(&t);
}

/* Data moved between adafs and files on another file system (tmpfs):
 * the servers' copy_file_range refuses across file systems (EXDEV), so
 * they splice instead. */
static void other_fs(adafs *fs)
{
    const char *shm = "/dev/shm";
    if (access(shm, W_OK) != 0) {
        tap_skip(2, "%s", W("no writable /dev/shm"));
        return;
    }
    const size_t len = 2 * (1 << 20) + 777;
    char path[128], *data = malloc(len), *back = malloc(len);
    fstest_fill(data, len, 61);
    snprintf(path, sizeof(path), "%s/adafs-fdio.%d", shm, (int)getpid());
    int src = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    unlink(path);
    int ok = src >= 0 && pwrite(src, data, len, 0) == (ssize_t)len;
    int fd = adafs_open(fs, "/other", O_CREAT | O_RDWR, 0600);
    tap_ok(ok && adafs_pwrite_from_fd(fs, fd, src, 0, len, 0) == (ssize_t)len &&
           adafs_holds(fs, "/other", 0, data, len), "%s",
           W("pwrite_from_fd from a tmpfs file: every byte"));
    ftruncate(src, 0);
    tap_ok(adafs_pread_to_fd(fs, fd, src, 0, len, 0) == (ssize_t)len &&
           pread(src, back, len, 0) == (ssize_t)len && memcmp(back, data, len) == 0, "%s",
           W("pread_to_fd into a tmpfs file: every byte"));
    adafs_close(fs, fd);
    adafs_unlink(fs, "/other");
    if (src >= 0)
        close(src);
    free(data);
    free(back);
}

/* Sends op with payload w on a server connection, passing the descriptors
 * pass[0..npass) with it (none: plain); returns the answer's status, or 1
 * if the exchange failed (the server hung up). */
static int passing_call(int sock, uint16_t op, const struct rpc_writer *w, const int *pass,
                        int npass)
{
    struct rpc_header h = { .opcode = op, .id = 7, .length = (uint32_t)w->len };
    uint8_t hdr[RPC_HEADER_SIZE];
    rpc_header_encode(&h, hdr);
    struct iovec iov[2] = { { hdr, sizeof(hdr) }, { w->data, w->len } };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 32)];
    } control;
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
    if (npass > 0) {
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)npass);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)npass);
        memcpy(CMSG_DATA(c), pass, sizeof(int) * (size_t)npass);
    }
    if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)(sizeof(hdr) + w->len))
        return 1;
    uint8_t ans[RPC_HEADER_SIZE];
    struct rpc_header a;
    if (net_read_full(sock, ans, sizeof(ans), net_now_ms() + FSTEST_IO_MS) < 0 ||
        rpc_header_decode(ans, &a) < 0)
        return 1;
    uint8_t body[64];
    if (a.length > sizeof(body) ||
        net_read_full(sock, body, a.length, net_now_ms() + FSTEST_IO_MS) < 0)
        return 1;
    return a.status;
}

/* The payload of a WRITE by descriptor as libadafs sends it (FS_BULK_FD):
 * len bytes for chunk 0 of key 5 from offset 0 of the passed file. */
static void write_by_fd(struct rpc_writer *w, uint32_t len)
{
    w->len = 0;
    rpc_put_u64(w, 0);
    rpc_put_u32(w, len);
    rpc_put_u64(w, 5);
    rpc_put_u64(w, 0);
    rpc_put_u32(w, 0);
    rpc_put_u32(w, len);
    fs_cap_put(w, &(struct fs_cap){ 0 });
}
#define WRITE_BY_FD (FS_WRITE | FS_BULK_FD)

/* The Unix socket: where each server listens, what it refuses (data by
 * descriptor without one, over TCP, for a request without data, with one
 * that is not a
 * regular file; a flood of descriptors), and that nobody else's process
 * holding the name is ever sent the secret. */
static void local_socket(void)
{
    struct fstest t;
    nservers = 1;
    transport = "local";
    fstest_start(&t, 1, "--chunk-size 64K");
    char err[256], name[INSTANCE_LOCAL_NAME_MAX];
    struct instance in;
    instance_read(t.instance, &in, err, sizeof(err));
    instance_local_name(in.servers[0].host, in.servers[0].port, name);
    tap_ok(fstest_sh("grep -q ' @%s$' /proc/net/unix", name) == 0, "the server listens on @%s",
           name);
    int sock = fstest_connect(&in, 0, 1);
    tap_ok(sock >= 0, "a process of the same user connects to it and authenticates");
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    char *data;
    int file = local_file("passed", 1000, 71, &data);
    int pfd[2];
    if (pipe(pfd) < 0)
        pfd[0] = pfd[1] = -1;
    write_by_fd(&w, 1000);
    tap_is_int(passing_call(sock, WRITE_BY_FD, &w, NULL, 0), -EBADMSG,
               "a write by descriptor without one: EBADMSG");
    tap_is_int(passing_call(sock, WRITE_BY_FD, &w, &pfd[0], 1), -EINVAL,
               "passing a pipe: EINVAL");
    tap_is_int(passing_call(sock, FS_STAT | FS_BULK_FD, &w, &file, 1), -EBADMSG,
               "data by descriptor for a request that takes none (STAT): EBADMSG");
    tap_is_int(passing_call(sock, WRITE_BY_FD, &w, &file, 1), 0,
               "passing a regular file: done");
    write_by_fd(&w, 2000);
    tap_is_int(passing_call(sock, WRITE_BY_FD, &w, &file, 1), -ENODATA,
               "more than the file holds: ENODATA");
    close(sock);
    struct instance wrong = in;
    memset(wrong.secret, 0x5a, sizeof(wrong.secret));
    tap_is_int(fstest_connect(&wrong, 0, 1), -EACCES,
               "a client with the wrong secret is refused here too (EACCES)");
    sock = fstest_connect(&in, 0, 1);
    int many[NET_FDS_MAX + 1];
    for (int i = 0; i <= NET_FDS_MAX; i++)
        many[i] = file;
    tap_ok(passing_call(sock, FS_PING, &w, many, NET_FDS_MAX + 1) == 1,
           "%d descriptors with one request: the server hangs up", NET_FDS_MAX + 1);
    close(sock);
    int tcp = fstest_connect(&in, 0, 0);
    write_by_fd(&w, 1000);
    struct rpc_reader r;
    uint8_t *p = NULL;
    tap_is_int(fstest_raw_call(tcp, WRITE_BY_FD, &w, &r, &p), -EBADMSG,
               "a write by descriptor over TCP (none can come): EBADMSG");
    free(p);
    close(tcp);
    tap_is_int(fstest_sh("grep -q 'passed more descriptors than requests' %s/server.0.log", t.base),
               0, "the server log names the flood");
    tap_is_int(fstest_sh("grep -q 'bad write (data by descriptor) request.*from local pid' "
                         "%s/server.0.log", t.base),
               0, "and the local client that sent a write by descriptor without one");

    /* Someone else holding the name gets nothing: the client looks at who
     * listens before it sends a byte. */
    if (geteuid() == 0) {
        char squat[64];
        snprintf(squat, sizeof(squat), "adafs-test-squat.%d", (int)getpid());
        int ready[2];
        if (pipe(ready) < 0)
            ready[0] = ready[1] = -1;
        pid_t child = fork();
        if (child == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(1);
            int l = net_listen_abstract(squat, 4);
            if (write(ready[1], "r", 1) < 0 || l < 0)
                _exit(1);
            pause();
            _exit(0);
        }
        char c;
        int up = read(ready[0], &c, 1) == 1;
        tap_ok(up && net_connect_abstract(squat, geteuid(), 1000) == -EPERM,
               "a name held by another user's process: EPERM, nothing sent");
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        close(ready[0]);
        close(ready[1]);
    } else {
        tap_skip(1, "not root: cannot run a process as another user");
    }
    rpc_writer_free(&w);
    close(file);
    close(pfd[0]);
    close(pfd[1]);
    free(data);
    instance_free(&in);
    fstest_stop(&t);
}

int main(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "%s/fdio.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    for (int i = 0; i < 1024; i++)
        fifo_before[i] = (unsigned char)is_fifo(i);
    static const int counts[] = { 1, 2 };
    static const char *transports[] = { "local", "tcp" };
    for (size_t k = 0; k < 2; k++) {
        transport = transports[k];
        if (strcmp(transport, "tcp") == 0)
            setenv(ADAFS_ENV_TRANSPORT, "tcp", 1);
        for (size_t i = 0; i < 2; i++) {
            nservers = counts[i];
            struct fstest t;
            fstest_start(&t, nservers, "--chunk-size 64K");
            from_fd(t.fs);
            create_from_fd(t.fs);
            to_fd(t.fs);
            to_fd_sparse(t.fs);
            bad_fds(t.fs);
            dst_refuses(t.fs);
            pipes_and_fork(t.fs);
            other_fs(t.fs);
            fstest_stop(&t);
        }
        faults();
        killed_under_connection();
        unsetenv(ADAFS_ENV_TRANSPORT);
    }
    local_socket();
    adafs *fs;
    char err[256];
    struct fstest t;
    fstest_start(&t, 1, NULL);
    setenv(ADAFS_ENV_TRANSPORT, "udp", 1);
    tap_is_int(adafs_connect(&fs, t.instance, err, sizeof(err)), -EINVAL,
               "ADAFS_TRANSPORT=udp: EINVAL");
    tap_ok(strstr(err, "ADAFS_TRANSPORT") && strstr(err, "'udp'"), "naming the variable and value: %s",
           err);
    setenv(ADAFS_ENV_TRANSPORT, "", 1);
    int fd = -1;
    tap_is_int(adafs_connect(&fs, t.instance, err, sizeof(err)), 0,
               "ADAFS_TRANSPORT set but empty: the default");
    tap_ok((fd = adafs_open(fs, "/e", O_CREAT | O_RDWR, 0600)) >= 0 &&
           adafs_pwrite(fs, fd, "abc", 3, 0) == 3, "and the instance is used");
    /* Accepted connections carry the listener's name in /proc/net/unix. */
    char err2[256], name[INSTANCE_LOCAL_NAME_MAX];
    struct instance in;
    instance_read(t.instance, &in, err2, sizeof(err2));
    instance_local_name(in.servers[0].host, in.servers[0].port, name);
    tap_is_int(fstest_sh("test $(grep -c ' @%s$' /proc/net/unix) = 2", name), 0,
               "through the server's Unix socket, as when it is unset");
    instance_free(&in);
    adafs_close(fs, fd);
    adafs_disconnect(fs);
    unsetenv(ADAFS_ENV_TRANSPORT);
    fstest_stop(&t);
    fstest_sh("rm -rf %s", tmpdir);
    return tap_done();
}
