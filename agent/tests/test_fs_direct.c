/* Short-circuit reads (lib/direct.c; DATA_FD in proto.h): a client on the
 * server's node reads that server's chunks through a read-only descriptor
 * of the server's data file. What another client writes, truncates,
 * replaces or removes must show at the next read, as with READs; and no
 * one but the job's own user, over the node's socket and after the
 * handshake, may ever get a descriptor: not over TCP, not another uid
 * that holds the secret, not a peer without the secret. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fstest.h"
#include "handshake.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "tap.h"

#define CHUNK 65536

/* Descriptors of this process that name a data file of the instance:
 * how many, how many of those are unlinked, and one of them. */
static int data_fds(const struct fstest *t, int *deleted, int *one)
{
    int count = 0;
    *deleted = 0;
    *one = -1;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char link[300], target[4200];
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (!strstr(target, t->base) || !strstr(target, "/data/"))
            continue;
        count++;
        *deleted += strstr(target, "(deleted)") != NULL;
        *one = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return count;
}

/* Reads len bytes at off in pieces of 64 KiB; the count. */
static ssize_t read_pieces(adafs *fs, int fd, char *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        size_t want = len - done < CHUNK ? len - done : CHUNK;
        ssize_t n = adafs_pread(fs, fd, buf + done, want, off + done);
        if (n < 0)
            return n;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static void reads_and_changes(const struct fstest *t, int nservers)
{
    adafs *a = t->fs, *b = fstest_other_client(t);
    const size_t size = 16 * CHUNK + 100;
    char *orig = malloc(size), *back = malloc(size), *next = malloc(size);
    fstest_fill(orig, size, 7);
    fstest_fill(next, size, 8);
    tap_ok(fstest_put(b, "/d", orig, size) == 0, "[%d servers] a file of 16 chunks written", nservers);
    int fd = adafs_open(a, "/d", O_RDONLY, 0);
    tap_ok(read_pieces(a, fd, back, size, 0) == (ssize_t)size && memcmp(back, orig, size) == 0,
           "[%d servers] read back in 64 KiB reads", nservers);
    int deleted, one;
    tap_ok(data_fds(t, &deleted, &one) == 1,
           "[%d servers] the reader holds one data file descriptor", nservers);
    if (one >= 0) {
        tap_ok((fcntl(one, F_GETFL) & O_ACCMODE) == O_RDONLY,
               "[%d servers] it is open read-only", nservers);
        tap_ok(write(one, "x", 1) < 0 && errno == EBADF,
               "[%d servers] and cannot be written", nservers);
    }

    /* Another client overwrites part of it. */
    int wfd = adafs_open(b, "/d", O_WRONLY, 0);
    adafs_pwrite(b, wfd, next, 3 * CHUNK, 5 * CHUNK + 17);
    adafs_close(b, wfd);
    memcpy(orig + 5 * CHUNK + 17, next, 3 * CHUNK);
    tap_ok(read_pieces(a, fd, back, size, 0) == (ssize_t)size && memcmp(back, orig, size) == 0,
           "[%d servers] another client's overwrite is seen at once", nservers);

    /* ... shrinks it (the same data file, shorter) ... */
    adafs_truncate(b, "/d", 3 * CHUNK + 5);
    ssize_t n = read_pieces(a, fd, back, size, 0);
    tap_ok(n == 3 * CHUNK + 5 && memcmp(back, orig, (size_t)n) == 0,
           "[%d servers] its truncate is seen (read %zd)", nservers, n);

    /* ... empties it (the data file unlinked) and writes it anew (a new
     * data file under the same key). */
    adafs_truncate(b, "/d", 0);
    wfd = adafs_open(b, "/d", O_WRONLY, 0);
    adafs_pwrite(b, wfd, next, size, 0);
    adafs_close(b, wfd);
    for (int round = 0; round < 3; round++)
        n = read_pieces(a, fd, back, size, 0);
    tap_ok(n == (ssize_t)size && memcmp(back, next, size) == 0,
           "[%d servers] a truncate to zero and rewrite is seen", nservers);
    data_fds(t, &deleted, &one);
    tap_ok(deleted == 0, "[%d servers] no descriptor of the unlinked data file is kept",
           nservers);

    /* ... removes it and makes another file there. */
    adafs_unlink(b, "/d");
    fstest_put(b, "/d", orig, size);
    n = adafs_pread(a, fd, back, CHUNK, 0);
    tap_ok(n <= 0, "[%d servers] a removed file's data is not read through the old descriptor "
           "(read %zd)", nservers, n);
    adafs_close(a, fd);
    int left = data_fds(t, &deleted, &one);
    tap_ok(left == 0, "[%d servers] close drops the data file descriptor", nservers);
    adafs_unlink(b, "/d");
    adafs_disconnect(b);
    free(orig);
    free(back);
    free(next);
}

/* A DATA_FD written straight to an authenticated connection: the answer's
 * status (1: the exchange failed) and the descriptor that came with it. */
static int raw_data_fd(int sock, const void *payload, size_t len, int *got_fd)
{
    *got_fd = -1;
    uint8_t hdr[RPC_HEADER_SIZE];
    struct rpc_header h = { .opcode = FS_DATA_FD, .id = 1, .length = (uint32_t)len };
    rpc_header_encode(&h, hdr);
    if (net_write_full(sock, hdr, sizeof(hdr), net_now_ms() + FSTEST_IO_MS) < 0 ||
        (len && net_write_full(sock, payload, len, net_now_ms() + FSTEST_IO_MS) < 0))
        return 1;
    size_t got = 0;
    while (got < sizeof(hdr)) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = { hdr + got, sizeof(hdr) - got };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                              .msg_controllen = sizeof(ctl.buf) };
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n <= 0)
            return 1;
        got += (size_t)n;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
                memcpy(got_fd, CMSG_DATA(cm), sizeof(int));
    }
    if (rpc_header_decode(hdr, &h) < 0)
        return 1;
    return h.status;
}

static int raw_for_key(int sock, uint64_t key, int *got_fd)
{
    uint8_t buf[8];
    struct rpc_writer w;
    rpc_writer_init(&w, buf, sizeof(buf));
    rpc_put_u64(&w, key);
    return raw_data_fd(sock, buf, sizeof(buf), got_fd);
}

/* In a child running as uid/gid: connects to server 0's local socket (of
 * a server running as server_uid) with the given secret and asks for the
 * descriptor of key. Exit status: 0 refused (EPERM), 3 refused at the
 * handshake, 1 a descriptor came, 2 the test itself failed. */
static int as_other_user(const struct instance *in, const uint8_t *secret, uid_t uid, gid_t gid,
                         uid_t server_uid, uint64_t key)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
            _exit(2);
        char name[INSTANCE_LOCAL_NAME_MAX], err[512];
        instance_local_name(in->servers[0].host, in->servers[0].port, name);
        int sock = net_connect_abstract(name, server_uid, FSTEST_IO_MS);
        if (sock < 0)
            _exit(2);
        if (handshake_client(sock, 0, secret, net_now_ms() + FSTEST_IO_MS, "server", err,
                             sizeof(err)) < 0)
            _exit(3);   /* refused at the handshake: nothing to ask */
        int fd;
        int st = raw_for_key(sock, key, &fd);
        _exit(fd >= 0 ? 1 : st == -EPERM || st == 1 ? 0 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

static void refusals(const struct fstest *t)
{
    char data[3 * CHUNK];
    fstest_fill(data, sizeof(data), 3);
    fstest_put(t->fs, "/secret", data, sizeof(data));
    struct stat st;
    adafs_stat(t->fs, "/secret", &st);
    uint64_t key = (uint64_t)st.st_ino;
    struct instance in;
    char err[512];
    instance_read(t->instance, &in, err, sizeof(err));

    int sock = fstest_connect(&in, 0, 0), fd;
    tap_is_int(raw_for_key(sock, key, &fd), -EPERM, "DATA_FD over TCP is refused");
    tap_ok(fd < 0, "and no descriptor comes");
    close(sock);

    sock = fstest_connect(&in, 0, 1);
    tap_is_int(raw_data_fd(sock, "", 0, &fd), -EBADMSG, "a DATA_FD without its key: EBADMSG");
    tap_is_int(raw_for_key(sock, key ^ 0x5a5a5a5a00000000ull, &fd), -ENOENT,
               "the key of no file: ENOENT");
    int st_rc = raw_for_key(sock, key, &fd);
    if (!tap_ok(st_rc == 0 && fd >= 0, "the job's own user on the node's socket gets the descriptor"))
        printf("# DATA_FD answered %d (1: the test's own I/O failed), descriptor %d\n", st_rc, fd);
    if (fd >= 0) {
        char back[16];
        tap_ok(pread(fd, back, sizeof(back), CHUNK) == (ssize_t)sizeof(back) &&
               memcmp(back, data + CHUNK, sizeof(back)) == 0, "which reads the file's chunks");
        tap_is_int(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY, "read-only");
        close(fd);
    }
    close(sock);

    struct passwd *pw = geteuid() == 0 ? getpwnam("adafs-test2") : NULL;
    if (!pw) {
        tap_skip(2, "another uid needs root and the user adafs-test2");
    } else {
        tap_is_int(as_other_user(&in, in.secret, pw->pw_uid, pw->pw_gid, geteuid(), key), 0,
                   "another user holding the secret passes the handshake, gets EPERM");
        uint8_t wrong[INSTANCE_SECRET_SIZE];
        memcpy(wrong, in.secret, sizeof(wrong));
        wrong[0] ^= 1;
        tap_is_int(as_other_user(&in, wrong, pw->pw_uid, pw->pw_gid, geteuid(), key), 3,
                   "without the secret, the handshake refuses it");
    }
    instance_free(&in);
    adafs_unlink(t->fs, "/secret");
}

int main(void)
{
    static const int counts[] = { 1, 2 };
    for (size_t i = 0; i < 2; i++) {
        struct fstest t;
        fstest_start(&t, counts[i], "--chunk-size 64K");
        reads_and_changes(&t, counts[i]);
        if (counts[i] == 1)
            refusals(&t);
        fstest_stop(&t);
    }
    return tap_done();
}
