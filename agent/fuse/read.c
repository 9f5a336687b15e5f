/* read.c: READs: answered with a reply spliced from the servers' chunk
 * files through one of a few pipes (below), or from libfuse's buffer when
 * a reply cannot be spliced. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse/fuse_int.h"

struct read_args {
    char *buf;
    size_t size;
    off_t off;
};

/* The kernel takes a short read for the end of the file: read it all. */
static ssize_t read_io(struct handle *h, void *arg)
{
    struct read_args *a = arg;
    size_t done = 0;
    while (done < a->size) {
        ssize_t n = adafs_pread(h->fs, h->lfd, a->buf + done, a->size - done,
                                a->off + (off_t)done);
        if (n < 0)
            return done ? (ssize_t)done : n;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* Into libfuse's buffer, which it writes to the kernel as it is: the
 * bytes are copied twice (from the sockets, into the reader's pages).
 * What a READ falls back to when its reply cannot be spliced (below). */
static ssize_t read_copied(struct handle *h, char *buf, size_t size, off_t off)
{
    struct read_args a = { buf, size, off };
    return handle_io(h, read_io, &a);
}

/* READs answered with a reply spliced from the servers' chunk files
 * (doc/fuse.md, Speed): the pieces a server of this node holds go into a
 * pipe by reference to their page-cache pages (splice), the others from
 * libfuse's buffer, into which libadafs read them from the sockets
 * (vmsplice), after the reply's header; the pipe then goes to /dev/fuse
 * whole, and the kernel copies the bytes once, into the reader's pages, as
 * a pread through the interposer does. libfuse's own answer to the
 * request is dropped (io_writev). The kernel takes a reply only whole from
 * one pipe: the mount's max_read (fuse/max_read.h) keeps a READ within
 * one, and its pipes are sized for it (adafs_fuse_pipe_bytes: 1 MiB, or
 * 2 MiB for a max_read of 1 MiB). A few pipes are shared by the threads
 * (each user may have only so many pipe pages:
 * fs.pipe-user-pages-soft); a READ that finds
 * none free, or whose reply does not fit, or whose chunk file was replaced
 * under it, is answered as before, from libfuse's buffer: each reason is
 * logged once. */
#define READ_PIPES 8
/* The pipes' size, for the mount's max_read: set by x_init, before the
 * INIT answer that lets the kernel send READs (kernel_order). */
size_t read_pipe_bytes;
struct read_pipes {
    pthread_mutex_t lock;
    int made;                    /* pipes that exist (free or in use) */
    int nfree;
    int free[READ_PIPES][2];
    bool off;                    /* cannot make pipes of read_pipe_bytes */
};
static struct read_pipes read_pipes = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* Slots of each pipe (pages of read_pipe_bytes): set under read_pipes.lock
 * when a pipe is made, read by fill_reply without it. */
static _Atomic size_t read_pipe_pages;

enum splice_miss { MISS_PIPE, MISS_BUSY, MISS_SLOTS, MISS_FILL, MISS_REPLACED, MISS_SEND, MISS_N };
static atomic_bool miss_said[MISS_N];

/* Says once per reason why READs are answered from libfuse's buffer. */
static void splice_missed(enum splice_miss why, const char *what, int err)
{
    if (!atomic_exchange(&miss_said[why], true))
        fprintf(stderr, "adafs-fuse: a READ is answered from its buffer, one copy more than "
                "spliced (said once): %s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
}

static bool pipe_take(int p[2])
{
    pthread_mutex_lock(&read_pipes.lock);
    bool got = false;
    if (read_pipes.nfree > 0) {
        read_pipes.nfree--;
        p[0] = read_pipes.free[read_pipes.nfree][0];
        p[1] = read_pipes.free[read_pipes.nfree][1];
        got = true;
    } else if (!read_pipes.off && read_pipes.made < READ_PIPES) {
        /* A size past INT_MAX (a -o max_read of GiBs) is not asked for: cast
         * to F_SETPIPE_SZ's int it was 0 (the smallest pipe, taken for a
         * success) or negative (EINVAL, -1 above it: a success too, and
         * every READ then failed in the middle of its splice). */
        int fl = -1;
        if (pipe2(p, O_CLOEXEC) < 0) {
            splice_missed(MISS_PIPE, "cannot make a pipe", errno);
        } else if (read_pipe_bytes > INT_MAX ||
                   (fl = fcntl(p[1], F_SETPIPE_SZ, (int)read_pipe_bytes)) < 0 ||
                   (size_t)fl < read_pipe_bytes) {
            /* EPERM: past fs.pipe-max-size, or the user's pipe pages spent */
            static char why[160];
            snprintf(why, sizeof why, "cannot make a pipe of %zu KiB for the mount's max_read "
                     "of %u bytes (fs.pipe-max-size, fs.pipe-user-pages-soft)",
                     read_pipe_bytes >> 10, mount_max_read);
            splice_missed(MISS_PIPE, why, fl < 0 && read_pipe_bytes <= INT_MAX ? errno : 0);
            close(p[0]);
            close(p[1]);
            read_pipes.off = read_pipes.made == 0;   /* none ever: stop trying */
        } else {
            atomic_store(&read_pipe_pages, (size_t)fl / (size_t)sysconf(_SC_PAGESIZE));
            read_pipes.made++;
            got = true;
        }
    } else if (!read_pipes.off) {
        splice_missed(MISS_BUSY, "every pipe is in use by other READs", 0);
    }
    pthread_mutex_unlock(&read_pipes.lock);
    return got;
}

/* Gives p back: empty, or (dirty) closed, since what it holds is not to be
 * sent (a new one is made when needed). */
static void pipe_give(int p[2], bool dirty)
{
    pthread_mutex_lock(&read_pipes.lock);
    if (dirty) {
        close(p[0]);
        close(p[1]);
        read_pipes.made--;
    } else {
        read_pipes.free[read_pipes.nfree][0] = p[0];
        read_pipes.free[read_pipes.nfree][1] = p[1];
        read_pipes.nfree++;
    }
    pthread_mutex_unlock(&read_pipes.lock);
}

/* A reply being put together in a pipe (fill_reply). */
struct reply {
    int pipe[2];
    bool taken;       /* fill_reply was called: the read itself worked */
    bool filled;      /* and put something in the pipe */
};

static size_t pages_spanned(uintptr_t at, size_t len, size_t page)
{
    return (at % page + len + page - 1) / page;
}

/* libadafs's take (adafs_pread_pieces): the header, then each piece. The
 * pipe is never waited on (SPLICE_F_NONBLOCK): what does not fit fails. */
static int fill_reply(void *arg, const struct adafs_piece *p, size_t n)
{
    struct reply *r = arg;
    r->taken = true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0, slots = 1;
    for (size_t i = 0; i < n; i++) {
        total += p[i].len;
        slots += pages_spanned(p[i].fd >= 0 ? (uintptr_t)p[i].off : (uintptr_t)p[i].mem,
                               p[i].len, page);
    }
    if (slots > atomic_load(&read_pipe_pages)) {
        splice_missed(MISS_SLOTS, "the reply needs more pipe slots than a pipe has "
                      "(a max_read other than fuse/max_read.h's?)", 0);
        return -E2BIG;
    }
    struct fuse_out_header oh = { .len = (uint32_t)(sizeof oh + total), .error = 0,
                                  .unique = req_unique };
    r->filled = true;
    if (write(r->pipe[1], &oh, sizeof oh) != (ssize_t)sizeof oh) {
        splice_missed(MISS_FILL, "cannot write a reply's header into its pipe", errno);
        return -EIO;
    }
    for (size_t i = 0; i < n; i++) {
        loff_t at = p[i].off;
        struct iovec v = { (void *)p[i].mem, p[i].len };
        while (v.iov_len > 0) {
            ssize_t k = p[i].fd >= 0
                ? splice(p[i].fd, &at, r->pipe[1], NULL, v.iov_len, SPLICE_F_NONBLOCK)
                : vmsplice(r->pipe[1], &v, 1, SPLICE_F_NONBLOCK);
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                /* 0: the chunk file shrank under the read (a truncate) */
                splice_missed(MISS_FILL, "cannot splice a piece into the reply's pipe",
                              k < 0 ? errno : ENODATA);
                return -EIO;
            }
            if (p[i].fd < 0)
                v.iov_base = (char *)v.iov_base + k;
            v.iov_len -= (size_t)k;
        }
    }
    return 0;
}

/* h's READ answered with a spliced reply: its size (the reply is sent),
 * an error for libfuse to send (nothing spliced), or 1 + size (> size):
 * not spliced, to be answered from buf by read_copied. */
static ssize_t read_spliced(struct handle *h, char *buf, size_t size, off_t off)
{
    struct reply r = { .taken = false };
    if (!pipe_take(r.pipe))
        return (ssize_t)size + 1;
    pthread_mutex_lock(&h->io);
    ssize_t n = h->failed ? -EIO : adafs_pread_pieces(h->fs, h->lfd, buf, size, off,
                                                      fill_reply, &r);
    if (n == -EIO && !r.taken)
        h->failed = true;
    pthread_mutex_unlock(&h->io);
    if (n == -EAGAIN && r.taken)
        splice_missed(MISS_REPLACED, "a chunk file was replaced under the read", 0);
    if (n <= 0) {
        /* r.taken: the read worked, its reply did not fit or was stale */
        pipe_give(r.pipe, r.filled);
        return r.taken ? (ssize_t)size + 1 : n;
    }
    size_t len = sizeof(struct fuse_out_header) + (size_t)n;
    before_reply();
    ssize_t sent = splice(r.pipe[0], NULL, fuse_fd, NULL, len, 0);
    if (sent != (ssize_t)len) {
        /* The request may have ended with EIO (the kernel could not copy
         * the pipe's pages): libfuse's answer then finds it gone. */
        splice_missed(MISS_SEND, "the kernel refused a spliced reply", sent < 0 ? errno : EIO);
        pipe_give(r.pipe, true);
        return (ssize_t)size + 1;
    }
    pipe_give(r.pipe, false);
    answered = req_unique;
    return n;
}

int x_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    struct handle *h = handle_of(fi);
    if (req_opcode == FUSE_READ && fuse_fd >= 0 && size > 0) {
        ssize_t n = read_spliced(h, buf, size, off);
        if (n <= (ssize_t)size)
            return (int)n;
    }
    return (int)read_copied(h, buf, size, off);
}
