/* fsbench: the file system benchmarks and the transport limits they are
 * measured against, in one program so that one run measures all of them.
 *
 *   fsbench pingpong [--seconds S]       64-byte request/response over TCP
 *   fsbench bulk [--mib N]               1 MiB messages, one direction
 *   fsbench mdtest --dir D [--files N] [--procs P] [--unique] [--api]
 *   fsbench ior --dir D [--procs P] [--xfer SIZE] [--block SIZE]
 *               [--random] [--shared] [--api] [--write-only] [--read-seconds S]
 *               [--buffer-offset B]
 *   fsbench offsets --dir D [--xfer SIZE] [--block SIZE] [--api]
 *   fsbench floor --dir D [--servers N] [--mib M] [--window W] [--stripe]
 *   fsbench readfloor --dir D [--xfer SIZE] [--block SIZE]
 *   fsbench connect --dir D [--seconds S]
 *   fsbench statloop --dir D [--files N]
 *
 * mdtest and ior use plain POSIX calls, so the same binary measures the
 * backing directory directly and adafs through the LD_PRELOAD interposer;
 * --api uses libadafs instead ($ADAFS_INSTANCE, paths below $ADAFS_MOUNT).
 * mdtest's processes share D unless --unique gives each its own
 * subdirectory (mdtest -u), made before the timed phases.
 * connect (libadafs only) measures what a short-lived client pays: a new
 * handle, its connection to D's server with the handshake, one stat.
 * statloop stats one file of D N times, then opens and closes it N times:
 * under the interposer, what a call costs the client (D outside the
 * mount: the path check alone every program's calls pay).
 * Every result is one line "name value unit" on stdout. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adafs.h"
#include "hash.h"
#include "net.h"
#include "size.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "fsbench: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- transport limits ------------------------------------------------ */

/* Forks a peer process listening on a fresh loopback port: returns its
 * pid in the parent, 0 in the child with *fd its accepted connection. */
static pid_t fork_peer(int *port, int *fd)
{
    char err[256];
    int lfd = net_listen("127.0.0.1", 0, 4, port, err, sizeof(err));
    if (lfd < 0) {
        fprintf(stderr, "fsbench: %s\n", err);
        exit(1);
    }
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid != 0) {
        close(lfd);
        return pid;
    }
    *fd = accept(lfd, NULL, NULL);
    if (*fd < 0)
        _exit(1);
    close(lfd);
    net_set_nodelay(*fd);
    return 0;
}

/* A child process that answers each 64-byte message, or swallows bulk
 * data: a separate process, as adafsd is. */
static pid_t start_peer(int bulk, int *port)
{
    int fd;
    pid_t pid = fork_peer(port, &fd);
    if (pid != 0)
        return pid;
    static char buf[1 << 20];
    for (;;) {
        if (bulk) {
            if (recv(fd, buf, sizeof(buf), 0) <= 0)
                _exit(0);
        } else {
            if (net_read_full(fd, buf, 64, 0) < 0 || net_write_full(fd, buf, 64, 0) < 0)
                _exit(0);
        }
    }
}

static int connect_peer(int port)
{
    char err[256];
    int fd = net_connect("127.0.0.1", port, 5000, err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, "fsbench: %s\n", err);
        exit(1);
    }
    net_set_timeouts(fd, 0);
    return fd;
}

static int pingpong(double seconds)
{
    int port;
    pid_t pid = start_peer(0, &port);
    int fd = connect_peer(port);
    char msg[64] = "ping";
    long n = 0;
    double t0 = now(), t;
    do {
        for (int i = 0; i < 1000; i++)
            if (net_write_full(fd, msg, 64, 0) < 0 || net_read_full(fd, msg, 64, 0) < 0)
                die("ping-pong");
        n += 1000;
    } while ((t = now() - t0) < seconds);
    close(fd);
    waitpid(pid, NULL, 0);
    printf("pingpong %.0f round_trips/s\n", n / t);
    printf("pingpong_latency %.2f us\n", t / n * 1e6);
    return 0;
}

static int bulk(long mib)
{
    int port;
    pid_t pid = start_peer(1, &port);
    int fd = connect_peer(port);
    char *buf = malloc(1 << 20);
    memset(buf, 'b', 1 << 20);
    double t0 = now();
    for (long i = 0; i < mib; i++)
        if (net_write_full(fd, buf, 1 << 20, 0) < 0)
            die("bulk send");
    shutdown(fd, SHUT_WR);
    waitpid(pid, NULL, 0);   /* the peer has read everything */
    double t = now() - t0;
    close(fd);
    free(buf);
    printf("bulk %.0f MiB/s\n", mib / t);
    return 0;
}

/* ---- file system operations: POSIX or libadafs ----------------------- */

static adafs *fs;          /* non-NULL: --api */
static size_t mount_len;

static const char *inner(const char *path)
{
    return path + mount_len;
}

static void api_connect(void)
{
    char err[512];
    if (adafs_connect(&fs, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "fsbench: %s\n", err);
        exit(1);
    }
    mount_len = strlen(adafs_mount_point(fs));
}

static int x_open(const char *p, int flags, mode_t mode)
{
    if (!fs)
        return open(p, flags, mode);
    int rc = adafs_open(fs, inner(p), flags, mode);
    return rc < 0 ? (errno = -rc, -1) : rc;
}

static int x_close(int fd)
{
    return fs ? adafs_close(fs, fd) : close(fd);
}

static int x_stat(const char *p, struct stat *st)
{
    if (!fs)
        return stat(p, st);
    int rc = adafs_stat(fs, inner(p), st);
    return rc < 0 ? (errno = -rc, -1) : 0;
}

static int x_unlink(const char *p)
{
    if (!fs)
        return unlink(p);
    int rc = adafs_unlink(fs, inner(p));
    return rc < 0 ? (errno = -rc, -1) : 0;
}

static int x_mkdir(const char *p)
{
    if (!fs)
        return mkdir(p, 0755);
    int rc = adafs_mkdir(fs, inner(p), 0755);
    return rc < 0 ? (errno = -rc, -1) : 0;
}

static ssize_t x_pwrite(int fd, const void *b, size_t n, off_t off)
{
    if (!fs)
        return pwrite(fd, b, n, off);
    ssize_t rc = adafs_pwrite(fs, fd, b, n, off);
    return rc < 0 ? (errno = (int)-rc, -1) : rc;
}

static ssize_t x_pread(int fd, void *b, size_t n, off_t off)
{
    if (!fs)
        return pread(fd, b, n, off);
    ssize_t rc = adafs_pread(fs, fd, b, n, off);
    return rc < 0 ? (errno = (int)-rc, -1) : rc;
}

/* ---- phases over several processes ----------------------------------- */

/* Runs fn(rank) in procs processes phase by phase; the parent times each
 * phase from the moment all children are released until all are done, so
 * the slowest process counts, as in mdtest and IOR. */
typedef void (*phase_fn)(int rank, int phase);

static void run_phases(int procs, int nphases, phase_fn fn, double *times)
{
    int go[2], done[2];
    if (pipe(go) < 0 || pipe(done) < 0)
        die("pipe");
    for (int r = 0; r < procs; r++) {
        if (fork() == 0) {
            close(go[1]);
            close(done[0]);
            if (fs)
                api_connect();   /* each process has its own connections */
            for (int ph = 0; ph < nphases; ph++) {
                char c;
                if (read(go[0], &c, 1) != 1)
                    _exit(1);
                fn(r, ph);
                if (write(done[1], "d", 1) != 1)
                    _exit(1);
            }
            _exit(0);
        }
    }
    close(go[0]);
    close(done[1]);
    for (int ph = 0; ph < nphases; ph++) {
        double t0 = now();
        for (int r = 0; r < procs; r++)
            if (write(go[1], "g", 1) != 1)
                die("release");
        for (int r = 0; r < procs; r++) {
            char c;
            if (read(done[0], &c, 1) != 1) {
                fprintf(stderr, "fsbench: a worker died in phase %d\n", ph);
                exit(1);
            }
        }
        times[ph] = now() - t0;
    }
    int st, ok = 1;
    while (wait(&st) > 0)
        ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
        fprintf(stderr, "fsbench: a worker failed\n");
        exit(1);
    }
}

static const char *bench_dir;
static long md_files;
static int md_unique;   /* each process in its own directory (mdtest -u) */

/* Where rank's files go: D, or D/u.RANK with --unique. */
static void md_dir(int rank, char *dir, size_t cap)
{
    if (md_unique)
        snprintf(dir, cap, "%s/u.%d", bench_dir, rank);
    else
        snprintf(dir, cap, "%s", bench_dir);
}

static void md_phase(int rank, int phase)
{
    char dir[4100], path[4200];
    struct stat st;
    md_dir(rank, dir, sizeof(dir));
    for (long i = 0; i < md_files; i++) {
        snprintf(path, sizeof(path), "%s/f.%d.%ld", dir, rank, i);
        if (phase == 0) {
            int fd = x_open(path, O_CREAT | O_WRONLY | O_EXCL, 0644);
            if (fd < 0 || x_close(fd) < 0)
                die(path);
        } else if (phase == 1) {
            if (x_stat(path, &st) < 0)
                die(path);
        } else if (x_unlink(path) < 0) {
            die(path);
        }
    }
}

static int mdtest(int procs)
{
    if (x_mkdir(bench_dir) < 0 && errno != EEXIST)
        die(bench_dir);
    char dir[4100];
    for (int r = 0; md_unique && r < procs; r++) {
        md_dir(r, dir, sizeof(dir));
        if (x_mkdir(dir) < 0 && errno != EEXIST)
            die(dir);
    }
    double t[3];
    run_phases(procs, 3, md_phase, t);
    static const char *names[] = { "create", "stat", "remove" };
    for (int i = 0; i < 3; i++)
        printf("mdtest_%s %.0f ops/s\n", names[i], procs * md_files / t[i]);
    return 0;
}

/* New handles, each connecting to the server of dir and stating it, for
 * seconds: a short-lived process's cost of connecting. */
static int connect_stat(double seconds)
{
    char err[512];
    long n = 0;
    double t0 = now(), t = t0;
    while (t - t0 < seconds) {
        adafs *h;
        struct stat st;
        if (adafs_connect(&h, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "fsbench: %s\n", err);
            return 1;
        }
        mount_len = strlen(adafs_mount_point(h));
        int rc = adafs_stat(h, inner(bench_dir), &st);
        adafs_disconnect(h);
        if (rc < 0 && rc != -ENOENT) {
            fprintf(stderr, "fsbench: stat %s: %s\n", bench_dir, strerror(-rc));
            return 1;
        }
        n++;
        t = now();
    }
    printf("connect_stat %.0f conns/s\n", n / (t - t0));
    return 0;
}

static int statloop(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/statloop.f", bench_dir);
    if (mkdir(bench_dir, 0755) < 0 && errno != EEXIST)
        die(bench_dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0 || close(fd) < 0)
        die(path);
    struct stat st;
    double t0 = now();
    for (long i = 0; i < md_files; i++)
        if (stat(path, &st) < 0)
            die(path);
    double t1 = now();
    for (long i = 0; i < md_files; i++)
        if ((fd = open(path, O_RDONLY)) < 0 || close(fd) < 0)
            die(path);
    double t2 = now();
    printf("statloop_stat %.0f ops/s\nstatloop_open %.0f ops/s\n", md_files / (t1 - t0),
           md_files / (t2 - t1));
    return 0;
}

static uint64_t ior_xfer, ior_block;
static int ior_random, ior_shared, ior_write_only;
/* The read phase stops after this long (0: never) and its rate is that
 * of what it read: an old build whose reads slow down with the file's
 * size would otherwise take hours. */
static double ior_read_seconds;
static int ior_pipe[2];              /* each rank tells how much it read */
/* Where ior's transfer buffer starts: a page boundary, as IOR's own
 * (aligned_buffer_alloc), or --buffer-offset bytes past one (16: where
 * glibc's malloc puts a 1 MiB buffer). Through a FUSE mount with direct
 * I/O a buffer off a page spans one page more than its size, and the
 * kernel splits a 1 MiB transfer into two requests (its 256 pages per
 * request; doc/fuse.md, Speed). */
static size_t ior_buffer_offset;

static void ior_phase(int rank, int phase)
{
    char path[4200];
    if (ior_shared)
        snprintf(path, sizeof(path), "%s/ior.shared", bench_dir);
    else
        snprintf(path, sizeof(path), "%s/ior.%d", bench_dir, rank);
    int fd = x_open(path, phase == 0 ? O_CREAT | O_WRONLY : O_RDONLY, 0644);
    if (fd < 0)
        die(path);
    size_t n = (size_t)(ior_block / ior_xfer);
    uint64_t base = ior_shared ? (uint64_t)rank * ior_block : 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *mem = aligned_alloc(page, (ior_xfer + ior_buffer_offset + page - 1) / page * page);
    if (!mem)
        die("malloc");
    char *buf = mem + ior_buffer_offset;
    memset(buf, 'a' + rank, ior_xfer);
    /* Random: a permutation of the transfer slots, the same in both
     * phases, different per rank. */
    size_t *order = malloc(n * sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    if (ior_random) {
        unsigned seed = (unsigned)rank * 7919 + 1;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)rand_r(&seed) % (i + 1), k = order[i];
            order[i] = order[j];
            order[j] = k;
        }
    }
    double t0 = now();
    size_t i = 0;
    for (; i < n; i++) {
        off_t off = (off_t)(base + order[i] * ior_xfer);
        ssize_t got = phase == 0 ? x_pwrite(fd, buf, ior_xfer, off) : x_pread(fd, buf, ior_xfer, off);
        if (got != (ssize_t)ior_xfer)
            die(phase == 0 ? "write" : "read");
        if (phase == 1 && ior_read_seconds > 0 && (i & 15) == 15 && now() - t0 > ior_read_seconds) {
            i++;
            break;
        }
    }
    if (phase == 1) {
        /* What this rank read, for the parent: ranks are processes. */
        uint64_t msg[2] = { (uint64_t)rank, (uint64_t)i * ior_xfer };   /* < PIPE_BUF: atomic */
        if (write(ior_pipe[1], msg, sizeof(msg)) != sizeof(msg))
            die("report");
    }
    x_close(fd);
    free(order);
    free(mem);
}

static int ior(int procs)
{
    if (x_mkdir(bench_dir) < 0 && errno != EEXIST)
        die(bench_dir);
    if (pipe(ior_pipe) < 0)
        die("pipe");
    double t[2];
    run_phases(procs, ior_write_only ? 1 : 2, ior_phase, t);
    double mib = (double)procs * (double)ior_block / (1 << 20);
    printf("ior_write %.0f MiB/s\n", mib / t[0]);
    if (!ior_write_only) {
        double got = 0;
        for (int r = 0; r < procs; r++) {
            uint64_t msg[2];
            if (read(ior_pipe[0], msg, sizeof(msg)) != sizeof(msg))
                die("report");
            got += (double)msg[1] / (1 << 20);
        }
        printf("ior_read %.0f MiB/s\n", got / t[1]);
    }
    close(ior_pipe[0]);
    close(ior_pipe[1]);
    char path[4200];
    for (int r = 0; r < (ior_shared ? 1 : procs); r++) {
        if (ior_shared)
            snprintf(path, sizeof(path), "%s/ior.shared", bench_dir);
        else
            snprintf(path, sizeof(path), "%s/ior.%d", bench_dir, r);
        x_unlink(path);
    }
    return 0;
}

/* ---- the cost of a read against its offset --------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A file of --block + --xfer bytes, then reads of --xfer bytes at offset
 * 0 and at offset --block in turns, 101 of each: the median time of each
 * and their ratio. No read may cost more for a larger offset or file
 * (issue 21: each read had cost time in proportion to the rest of the
 * file on a tmpfs storage root). */
#define OFFSET_READS 101

static int offsets(void)
{
    if (x_mkdir(bench_dir) < 0 && errno != EEXIST)
        die(bench_dir);
    char path[4200];
    snprintf(path, sizeof(path), "%s/offsets", bench_dir);
    int fd = x_open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    char *buf = malloc(1 << 20);
    if (fd < 0 || !buf)
        die(path);
    memset(buf, 'o', 1 << 20);
    for (uint64_t at = 0, end = ior_block + ior_xfer; at < end;) {
        size_t n = end - at < (1 << 20) ? (size_t)(end - at) : (1 << 20);
        if (x_pwrite(fd, buf, n, (off_t)at) != (ssize_t)n)
            die("write");
        at += n;
    }
    char *rbuf = malloc(ior_xfer);
    double t[2][OFFSET_READS];
    for (int i = 0; i < OFFSET_READS; i++)
        for (int k = 0; k < 2; k++) {
            double t0 = now();
            if (x_pread(fd, rbuf, ior_xfer, k ? (off_t)ior_block : 0) != (ssize_t)ior_xfer)
                die("read");
            t[k][i] = now() - t0;
        }
    x_close(fd);
    x_unlink(path);
    for (int k = 0; k < 2; k++)
        qsort(t[k], OFFSET_READS, sizeof(double), cmp_double);
    double at0 = t[0][OFFSET_READS / 2], atb = t[1][OFFSET_READS / 2];
    printf("read_at_0 %.1f us\n", at0 * 1e6);
    printf("read_at_block %.1f us\n", atb * 1e6);
    printf("read_offset_ratio %.3f x\n", atb / at0);
    free(buf);
    free(rbuf);
    return 0;
}

/* ---- the floor of issue 3's write path ------------------------------- */

/* What any implementation of issue 3's design must do for a 1 MiB write,
 * and nothing more: the client sends each 512 KiB chunk over loopback TCP
 * to the server hash_place_chunk() names (or round robin with --stripe),
 * each server (a process, as adafsd is) splices it from its socket into
 * one local file, as adafsd does, and answers 8 bytes. No metadata, no
 * quota, no request headers beyond offset and length, files kept open.
 * --window 0: a write waits for its answers before the next starts, as
 * write(2) must when errors are to reach the caller; --window W: up to W
 * writes go unanswered (write-behind). The result bounds from above what
 * adafs can reach on this machine. */
#define FLOOR_CHUNK (512u << 10)
#define FLOOR_MAX_SERVERS 16

static void sink_serve(int fd, const char *path)
{
    int file = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    int pfd[2];
    if (file < 0 || pipe(pfd) < 0)
        _exit(1);
    /* As adafsd's: failing leaves the default pipe, which only costs
     * more splice calls. */
    (void)fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
    uint64_t head[2];
    while (net_read_full(fd, head, sizeof(head), 0) == 0) {
        loff_t off = (loff_t)head[0];
        for (size_t left = head[1]; left > 0;) {
            ssize_t got = splice(fd, NULL, pfd[1], NULL, left, SPLICE_F_MOVE | SPLICE_F_MORE);
            if (got <= 0)
                _exit(1);
            left -= (size_t)got;
            while (got > 0) {
                ssize_t put = splice(pfd[0], NULL, file, &off, (size_t)got, SPLICE_F_MOVE);
                if (put <= 0)
                    _exit(1);
                got -= put;
            }
        }
        if (net_write_full(fd, &head[1], sizeof(head[1]), 0) < 0)
            _exit(1);
    }
    _exit(0);
}

static int floor_write(int nservers, long mib, int window, int stripe)
{
    if (nservers < 1 || nservers > FLOOR_MAX_SERVERS || window < 0) {
        fprintf(stderr, "fsbench: floor needs 1-%d servers and a window >= 0\n", FLOOR_MAX_SERVERS);
        return 2;
    }
    if (mkdir(bench_dir, 0755) < 0 && errno != EEXIST)
        die(bench_dir);
    int fd[FLOOR_MAX_SERVERS];
    pid_t pid[FLOOR_MAX_SERVERS];
    char path[FLOOR_MAX_SERVERS][4200];
    for (int s = 0; s < nservers; s++) {
        int port;
        snprintf(path[s], sizeof(path[s]), "%s/floor.%d", bench_dir, s);
        int cfd;
        pid[s] = fork_peer(&port, &cfd);
        if (pid[s] == 0)
            sink_serve(cfd, path[s]);
        fd[s] = connect_peer(port);
    }
    char *buf = malloc(1 << 20);
    /* Which servers each write in flight went to, oldest first. */
    unsigned char (*to)[2] = calloc((size_t)mib, sizeof(*to));
    if (!buf || !to)
        die("malloc");
    memset(buf, 'f', 1 << 20);
    uint64_t key = hash_bytes(bench_dir, strlen(bench_dir));
    long answered = 0;
    double t0 = now();
    for (long i = 0; i < mib + window; i++) {
        for (int j = 0; i < mib && j < 2; j++) {
            uint64_t index = (uint64_t)i * 2 + (uint64_t)j;
            unsigned s = stripe ? (unsigned)(index % (uint64_t)nservers)
                                : hash_place_chunk(key, index, (unsigned)nservers);
            uint64_t head[2] = { index * FLOOR_CHUNK, FLOOR_CHUNK };
            struct iovec iov[2] = { { head, sizeof(head) }, { buf + j * FLOOR_CHUNK, FLOOR_CHUNK } };
            if (net_writev_full(fd[s], iov, 2, 0) < 0)
                die("floor send");
            to[i][j] = (unsigned char)s;
        }
        for (; answered <= i - window && answered < mib; answered++)
            for (int j = 0; j < 2; j++) {
                uint64_t len;
                if (net_read_full(fd[to[answered][j]], &len, sizeof(len), 0) < 0)
                    die("floor answer");
            }
    }
    double t = now() - t0;
    /* Each sink inherited the client's ends of the sockets made before it,
     * so no sink sees its EOF until every socket is closed. */
    for (int s = 0; s < nservers; s++)
        close(fd[s]);
    for (int s = 0; s < nservers; s++) {
        waitpid(pid[s], NULL, 0);
        unlink(path[s]);
    }
    free(to);
    free(buf);
    printf("floor_write %.0f MiB/s\n", mib / t);
    return 0;
}

/* ---- the floor of a read ----------------------------------------------- */

/* What any synchronous read from a server process on this node must do,
 * and nothing more: the client sends a 64-byte request (offset, length)
 * over a Unix socket, the server (a process, as adafsd is) answers a
 * 64-byte header and the bytes from a --block file under --dir with
 * sendfile, and the client takes the header and the bytes with one
 * recvmsg where they have arrived, as libadafs does. No metadata, no
 * request decoding, the file kept open. The file is read once, in --xfer
 * pieces; the rate bounds from above what an adafs read of that size can
 * reach here (issue 21). */
static void read_serve(int fd, int file)
{
    uint64_t req[8], head[8] = { 0 };
    while (net_read_full(fd, req, sizeof(req), 0) == 0) {
        off_t off = (off_t)req[0];
        if (net_write_full(fd, head, sizeof(head), 0) < 0)
            _exit(1);
        for (size_t left = req[1]; left > 0;) {
            ssize_t n = sendfile(fd, file, &off, left);
            if (n <= 0)
                _exit(1);
            left -= (size_t)n;
        }
    }
    _exit(0);
}

static int floor_read(void)
{
    if (mkdir(bench_dir, 0755) < 0 && errno != EEXIST)
        die(bench_dir);
    char path[4200];
    snprintf(path, sizeof(path), "%s/readfloor", bench_dir);
    int file = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
    char *buf = malloc(1 << 20), *rbuf = malloc(ior_xfer);   /* as ior's */
    if (file < 0 || !buf || !rbuf)
        die(path);
    memset(buf, 'r', 1 << 20);
    for (uint64_t at = 0; at < ior_block; at += 1 << 20)
        if (pwrite(file, buf, (size_t)(ior_block - at < (1 << 20) ? ior_block - at : (1 << 20)),
                   (off_t)at) < 0)
            die("write");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair");
    net_set_unix_sndbuf(sv[1]);   /* as adafsd's, for its answers */
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(sv[0]);
        read_serve(sv[1], file);
    }
    close(sv[1]);
    double t0 = now();
    for (uint64_t at = 0; at + ior_xfer <= ior_block; at += ior_xfer) {
        uint64_t req[8] = { at, ior_xfer }, head[8];
        if (net_write_full(sv[0], req, sizeof(req), 0) < 0)
            die("request");
        struct iovec iov[2] = { { head, sizeof(head) }, { rbuf, ior_xfer } };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
        size_t got = 0, want = sizeof(head) + ior_xfer;
        while (got < want) {
            ssize_t n = recvmsg(sv[0], &msg, 0);
            if (n <= 0)
                die("answer");
            got += (size_t)n;
            for (size_t left = (size_t)n; left > 0;) {
                size_t take = left < msg.msg_iov->iov_len ? left : msg.msg_iov->iov_len;
                msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + take;
                msg.msg_iov->iov_len -= take;
                left -= take;
                if (msg.msg_iov->iov_len == 0) {
                    msg.msg_iov++;
                    msg.msg_iovlen--;
                }
            }
        }
    }
    double t = now() - t0;
    close(sv[0]);
    waitpid(pid, NULL, 0);
    close(file);
    unlink(path);
    free(buf);
    free(rbuf);
    printf("floor_read %.0f MiB/s\n", (double)(ior_block / ior_xfer * ior_xfer) / (1 << 20) / t);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "seconds", required_argument, NULL, 's' }, { "mib", required_argument, NULL, 'm' },
        { "dir", required_argument, NULL, 'd' },     { "files", required_argument, NULL, 'n' },
        { "procs", required_argument, NULL, 'p' },   { "xfer", required_argument, NULL, 'x' },
        { "block", required_argument, NULL, 'b' },   { "random", no_argument, NULL, 'r' },
        { "shared", no_argument, NULL, 'S' },        { "api", no_argument, NULL, 'a' },
        { "write-only", no_argument, NULL, 'w' },    { "servers", required_argument, NULL, 'N' },
        { "window", required_argument, NULL, 'W' },  { "stripe", no_argument, NULL, 'T' },
        { "read-seconds", required_argument, NULL, 'R' },
        { "unique", no_argument, NULL, 'u' },
        { "buffer-offset", required_argument, NULL, 'B' },
        { NULL, 0, NULL, 0 },
    };
    if (argc < 2) {
        fprintf(stderr, "usage: fsbench pingpong|bulk|mdtest|ior|offsets|floor|readfloor|connect|"
                "statloop [options]\n");
        return 2;
    }
    const char *cmd = argv[1];
    double seconds = 2;
    long mib = 2048;
    int procs = 1, api = 0, servers = 2, window = 0, stripe = 0;
    md_files = 10000;
    ior_xfer = 1 << 20;
    ior_block = 256 << 20;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': seconds = atof(optarg); break;
        case 'm': mib = atol(optarg); break;
        case 'd': bench_dir = optarg; break;
        case 'n': md_files = atol(optarg); break;
        case 'p': procs = atoi(optarg); break;
        case 'r': ior_random = 1; break;
        case 'S': ior_shared = 1; break;
        case 'a': api = 1; break;
        case 'w': ior_write_only = 1; break;
        case 'N': servers = atoi(optarg); break;
        case 'W': window = atoi(optarg); break;
        case 'T': stripe = 1; break;
        case 'R': ior_read_seconds = atof(optarg); break;
        case 'u': md_unique = 1; break;
        case 'B': ior_buffer_offset = (size_t)atol(optarg); break;
        case 'x':
        case 'b':
            if (size_parse(optarg, c == 'x' ? &ior_xfer : &ior_block) < 0) {
                fprintf(stderr, "fsbench: '%s' is not a size\n", optarg);
                return 2;
            }
            break;
        default: return 2;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(cmd, "pingpong") == 0)
        return pingpong(seconds);
    if (strcmp(cmd, "bulk") == 0)
        return bulk(mib);
    if (!bench_dir || procs < 1 || ior_xfer == 0 || ior_block % ior_xfer) {
        fprintf(stderr, "fsbench: --dir is required, --block a multiple of --xfer\n");
        return 2;
    }
    if (strcmp(cmd, "floor") == 0)
        return floor_write(servers, mib, window, stripe);
    if (strcmp(cmd, "readfloor") == 0)
        return floor_read();
    if (strcmp(cmd, "connect") == 0)
        return connect_stat(seconds);
    if (strcmp(cmd, "statloop") == 0)
        return statloop();
    if (api) {
        api_connect();
        /* Children connect themselves; the parent only makes the dir. */
    }
    if (strcmp(cmd, "mdtest") == 0)
        return mdtest(procs);
    if (strcmp(cmd, "ior") == 0)
        return ior(procs);
    if (strcmp(cmd, "offsets") == 0)
        return offsets();
    fprintf(stderr, "fsbench: unknown benchmark '%s'\n", cmd);
    return 2;
}
