/* adafs_pread_pieces (lib/files.c, lib/direct.c): a read given as the
 * data files of this node's servers and as memory, for a caller that
 * splices them on (adafs-fuse's READ replies). The pieces must carry
 * exactly the bytes adafs_pread gives: the file's end inside the range,
 * holes as zeros, pieces of other nodes (here: TCP) in the caller's
 * buffer; and nothing of another file: a data file replaced or the file
 * removed while the caller holds the pieces gives -EAGAIN (the caller
 * throws away what it took), a data file shrunk under it gives the
 * caller a short piece, never other bytes. The caller here takes the
 * pieces as adafs-fuse does: the descriptors' pages spliced into a pipe,
 * the memory vmspliced, all read back out. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fstest.h"
#include "tap.h"

#define CHUNK 65536

/* What take got: the bytes, how many pieces of each kind, and whether
 * every memory piece lay within the caller's buffer. */
struct got {
    char *bytes;
    size_t len;
    int fds, mems, calls;
    int mem_outside;
    int fd_writable;
    const char *buf;
    size_t cap;
    void (*during)(void *);   /* run first, as if another process did it */
    void *during_arg;
};

/* Moves len bytes from a pipe's other end into g. */
static int drain(int rd, struct got *g, size_t len)
{
    while (len > 0) {
        ssize_t n = read(rd, g->bytes + g->len, len);
        if (n <= 0)
            return -EIO;
        g->len += (size_t)n;
        len -= (size_t)n;
    }
    return 0;
}

static int take(void *arg, const struct adafs_piece *p, size_t n)
{
    struct got *g = arg;
    g->calls++;
    if (g->during)
        g->during(g->during_arg);
    int pp[2];
    if (pipe(pp) < 0)
        return -errno;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t left = p[i].len;
        loff_t at = p[i].off;
        const char *mem = p[i].mem;
        if (p[i].fd >= 0) {
            g->fds++;
            g->fd_writable |= (fcntl(p[i].fd, F_GETFL) & O_ACCMODE) != O_RDONLY;
        } else {
            g->mems++;
            g->mem_outside |= mem < g->buf || mem + left > g->buf + g->cap;
        }
        while (left > 0 && rc == 0) {
            size_t step = left < 16384 ? left : 16384;   /* within the pipe */
            struct iovec v = { (void *)mem, step };
            ssize_t k = p[i].fd >= 0 ? splice(p[i].fd, &at, pp[1], NULL, step, 0)
                                     : vmsplice(pp[1], &v, 1, 0);
            if (k <= 0) {
                rc = -EIO;   /* a data file shorter than its piece: as adafs-fuse */
                break;
            }
            rc = drain(pp[0], g, (size_t)k);
            left -= (size_t)k;
            mem += k;
        }
    }
    close(pp[0]);
    close(pp[1]);
    return rc;
}

/* adafs_pread_pieces of count bytes at off into g (bytes: count). */
static ssize_t pieces(adafs *fs, int fd, struct got *g, char *buf, size_t count, off_t off)
{
    g->len = 0;
    g->fds = g->mems = g->calls = 0;
    g->mem_outside = g->fd_writable = 0;
    g->buf = buf;
    g->cap = count;
    return adafs_pread_pieces(fs, fd, buf, count, off, take, g);
}

struct change {
    adafs *fs;
    const char *path;
    const char *data;
    size_t len;
    off_t to;   /* truncate to this (-1: no) */
};

/* Empties the file (its data files unlinked) and writes data anew. */
static void rewrite(void *arg)
{
    struct change *c = arg;
    adafs_truncate(c->fs, c->path, 0);
    int fd = adafs_open(c->fs, c->path, O_WRONLY, 0);
    adafs_pwrite(c->fs, fd, c->data, c->len, 0);
    adafs_close(c->fs, fd);
}

static void shrink(void *arg)
{
    struct change *c = arg;
    adafs_truncate(c->fs, c->path, c->to);
}

/* Removes the file and makes another at its name. */
static void replace(void *arg)
{
    struct change *c = arg;
    adafs_unlink(c->fs, c->path);
    fstest_put(c->fs, c->path, c->data, c->len);
}

static void ranges(adafs *a, adafs *b, const char *mode, int local)
{
    const size_t size = 5 * CHUNK + 100;
    char *orig = malloc(size), *buf = malloc(4 * CHUNK), *bytes = malloc(4 * CHUNK);
    struct got g = { .bytes = bytes };
    fstest_fill(orig, size, 11);
    fstest_put(b, "/r", orig, size);
    int fd = adafs_open(a, "/r", O_RDONLY, 0);
    static const struct { size_t off, count; } r[] = {
        { 0, 3 * CHUNK }, { CHUNK - 10, 3 * CHUNK }, { 17, 100 }, { 4 * CHUNK, 2 * CHUNK },
        { 5 * CHUNK + 99, 4 * CHUNK },
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        size_t want = r[i].off + r[i].count <= size ? r[i].count : size - r[i].off;
        ssize_t n = pieces(a, fd, &g, buf, r[i].count, (off_t)r[i].off);
        tap_ok(n == (ssize_t)want && g.len == want && memcmp(bytes, orig + r[i].off, want) == 0,
               "[%s] %zu bytes at %zu: the file's %zu bytes (got %zd, pieces %zu bytes)", mode,
               r[i].count, r[i].off, want, n, g.len);
    }
    tap_ok(local ? g.fds > 0 : g.fds == 0,
           "[%s] pieces of this node's servers come as data files (%d), others' as memory (%d)",
           mode, g.fds, g.mems);
    tap_ok(!g.mem_outside, "[%s] memory pieces lie within the caller's buffer", mode);
    tap_ok(!g.fd_writable, "[%s] the data files given are read-only", mode);
    ssize_t n = pieces(a, fd, &g, buf, CHUNK, (off_t)size);
    tap_ok(n == 0 && g.calls == 0, "[%s] at the end: 0 bytes, take not called", mode);
    n = pieces(a, fd, &g, buf, CHUNK, (off_t)size + 5000);
    tap_ok(n == 0 && g.calls == 0, "[%s] past the end: 0 bytes", mode);
    adafs_close(a, fd);

    /* Holes read as zeros, up to the end of the file only. */
    char *sparse = calloc(1, 3 * CHUNK + 105);
    memcpy(sparse, orig, 100);
    memcpy(sparse + 3 * CHUNK + 5, orig + 200, 100);
    int wfd = adafs_open(b, "/s", O_CREAT | O_TRUNC | O_WRONLY, 0644);
    adafs_pwrite(b, wfd, orig, 100, 0);
    adafs_pwrite(b, wfd, orig + 200, 100, 3 * CHUNK + 5);
    adafs_close(b, wfd);
    fd = adafs_open(a, "/s", O_RDONLY, 0);
    memset(buf, 'x', 4 * CHUNK);
    n = pieces(a, fd, &g, buf, 4 * CHUNK, 0);
    tap_ok(n == 3 * CHUNK + 105 && g.len == (size_t)n && memcmp(bytes, sparse, (size_t)n) == 0,
           "[%s] a sparse file: its bytes, zeros for its holes, nothing past its end (%zd)",
           mode, n);
    adafs_close(a, fd);
    adafs_unlink(b, "/s");
    free(sparse);

    /* The file changed between the pieces and the caller taking them. */
    char *next = malloc(size);
    fstest_fill(next, size, 12);
    struct change c = { b, "/r", next, size, -1 };
    fd = adafs_open(a, "/r", O_RDONLY, 0);
    pieces(a, fd, &g, buf, 2 * CHUNK, 0);   /* the descriptors are had */
    g.during = rewrite;
    g.during_arg = &c;
    n = pieces(a, fd, &g, buf, 2 * CHUNK, 0);
    g.during = NULL;
    if (local)
        tap_ok(n == -EAGAIN, "[%s] a truncate to zero and rewrite under the caller: -EAGAIN "
               "(%zd)", mode, n);
    else
        tap_ok(n == 2 * CHUNK && memcmp(bytes, orig, 2 * CHUNK) == 0,
               "[%s] a rewrite after the bytes came: the bytes read before it", mode);
    n = pieces(a, fd, &g, buf, 2 * CHUNK, 0);
    tap_ok(n == 2 * CHUNK && memcmp(bytes, next, 2 * CHUNK) == 0,
           "[%s] the next read gives the new bytes", mode);

    /* Shrunk under the caller (the same data file, shorter): a piece the
     * caller takes from the data file after that is short, and the call
     * gives the caller's error; what it took before is the file's own
     * bytes (a read just before the truncate; past the new size also
     * zeros: a race with a truncate, as through adafs_pread). */
    c.to = CHUNK + 3;
    g.during = shrink;
    n = pieces(a, fd, &g, buf, 2 * CHUNK, 0);
    g.during = NULL;
    int own = g.len <= 2 * CHUNK && memcmp(bytes, next, g.len < CHUNK + 3 ? g.len : CHUNK + 3) == 0;
    for (size_t i = CHUNK + 3; i < g.len && own; i++)
        own = bytes[i] == next[i] || bytes[i] == 0;
    tap_ok(n == -EIO || n == 2 * CHUNK,
           "[%s] a truncate under the caller: the caller's error, or the bytes taken (%zd)",
           mode, n);
    tap_ok(own, "[%s] and what it took is the file's own bytes, or zeros past the new size",
           mode);
    n = pieces(a, fd, &g, buf, 2 * CHUNK, 0);
    tap_ok(n == CHUNK + 3 && memcmp(bytes, next, CHUNK + 3) == 0,
           "[%s] the next read ends at the new size (%zd)", mode, n);

    /* Removed, another file made at the name: none of its bytes. */
    c.data = orig;
    g.during = replace;
    n = pieces(a, fd, &g, buf, CHUNK, 0);
    g.during = NULL;
    tap_ok(n == -EAGAIN || (n == CHUNK && memcmp(bytes, next, CHUNK) == 0),
           "[%s] removed and replaced under the caller: -EAGAIN, or the bytes taken before "
           "(%zd)", mode, n);
    n = pieces(a, fd, &g, buf, CHUNK, 0);
    tap_ok(n <= 0 || memcmp(bytes, orig, g.len) != 0,
           "[%s] a removed file's reads give none of the new file's bytes (%zd)", mode, n);
    adafs_close(a, fd);
    adafs_unlink(b, "/r");
    free(next);
    free(orig);
    free(buf);
    free(bytes);
}

int main(void)
{
    static const int counts[] = { 1, 2 };
    for (size_t i = 0; i < 2; i++) {
        struct fstest t;
        char mode[64];
        fstest_start(&t, counts[i], "--chunk-size 64K");
        adafs *b = fstest_other_client(&t);
        snprintf(mode, sizeof mode, "%d servers, local", counts[i]);
        ranges(t.fs, b, mode, 1);
        setenv("ADAFS_TRANSPORT", "tcp", 1);
        adafs *tcp = fstest_other_client(&t);
        unsetenv("ADAFS_TRANSPORT");
        snprintf(mode, sizeof mode, "%d servers, TCP", counts[i]);
        ranges(tcp, b, mode, 0);
        adafs_disconnect(tcp);
        adafs_disconnect(b);
        fstest_stop(&t);
    }
    return tap_done();
}
