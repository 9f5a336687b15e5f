/* uring-standin: a stand-in FUSE daemon (not the product) that serves one
 * read-only file, /big, for measuring how a READ's reply gets to the
 * kernel (doc/fuse.md, "What the goal of 60% would take"; doc/benchmarks.md,
 * issue 26, session 21). No libfuse: it mounts /dev/fuse itself (root).
 *
 *   uring-standin [--instance X] [-o OPTIONS] MOUNTPOINT
 *
 * called as bench/fuse's scripts call adafs-fuse (--instance ignored); it
 * returns once the mount answers. OPTIONS, comma-separated:
 *   transport=uring|dev  requests over io_uring (FUSE_IO_URING_CMD_REGISTER
 *                        per queue, COMMIT_AND_FETCH; needs the fuse
 *                        module's enable_uring) or read from /dev/fuse
 *   data=none|pread|mmap|splice
 *                        what a READ's reply holds: nothing fetched (the
 *                        buffer as it is: the transport's ceiling); a pread
 *                        of the backing file into the reply's buffer (two
 *                        copies); (uring) the entry's payload buffer mapped
 *                        over the backing file's pages (MAP_FIXED|
 *                        MAP_PRIVATE: one copy, by the kernel); (dev) the
 *                        file's pages spliced into a pipe and the pipe into
 *                        /dev/fuse (one copy, adafs-fuse's design)
 *   backing=PATH         the file served (its size is /big's)
 *   max_read=N           the mount's (default 1048576)
 *   max_pages=N          asked in INIT (default 257; the kernel grants at
 *                        most fs.fuse.max_pages_limit)
 *   entries=N            ring entries per queue (default 2)
 *   threads=N            /dev/fuse reader threads (default 2)
 *   pin=0|1              pin queue q's thread to CPU q (default 1)
 *   populate=0|1|2       the mapping of data=mmap: faulted in by the kernel's
 *                        copy (0), MAP_POPULATE (1, default), MADV_POPULATE_READ (2)
 * It exits when the mount goes (umount; ENODEV/ENOTCONN). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uring_abi.h"

#define PAGE 4096u
#define FILE_INO 2

enum data_mode { DATA_NONE, DATA_PREAD, DATA_MMAP, DATA_SPLICE };

static struct {
    bool uring;
    enum data_mode data;
    const char *backing;
    unsigned max_read, max_pages, entries, threads;
    bool pin;
    int populate;
} opt = { true, DATA_NONE, NULL, 1048576, 257, 2, 2, true, true };

static int fuse_fd = -1, backing_fd = -1;
static uint64_t file_size;
static size_t payload_bytes;   /* a ring entry's payload buffer */

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "uring-standin: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void parse_options(char *s)
{
    for (char *kv = strtok(s, ","); kv; kv = strtok(NULL, ",")) {
        char *v = strchr(kv, '=');
        if (!v)
            die("option '%s' has no value", kv);
        *v++ = '\0';
        if (strcmp(kv, "transport") == 0)
            opt.uring = strcmp(v, "uring") == 0;
        else if (strcmp(kv, "data") == 0)
            opt.data = strcmp(v, "pread") == 0 ? DATA_PREAD : strcmp(v, "mmap") == 0 ? DATA_MMAP
                       : strcmp(v, "splice") == 0 ? DATA_SPLICE : DATA_NONE;
        else if (strcmp(kv, "backing") == 0)
            opt.backing = v;
        else if (strcmp(kv, "max_read") == 0)
            opt.max_read = (unsigned)atoi(v);
        else if (strcmp(kv, "max_pages") == 0)
            opt.max_pages = (unsigned)atoi(v);
        else if (strcmp(kv, "entries") == 0)
            opt.entries = (unsigned)atoi(v);
        else if (strcmp(kv, "threads") == 0)
            opt.threads = (unsigned)atoi(v);
        else if (strcmp(kv, "pin") == 0)
            opt.pin = atoi(v) != 0;
        else if (strcmp(kv, "populate") == 0)
            opt.populate = atoi(v);
        else
            die("unknown option '%s'", kv);
    }
}

/* ---- the file system: / and /big ---- */

static void fill_attr(uint64_t ino, struct fuse_attr *a)
{
    memset(a, 0, sizeof *a);
    a->ino = ino;
    a->mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
    a->nlink = ino == FUSE_ROOT_ID ? 2 : 1;
    a->size = ino == FUSE_ROOT_ID ? 0 : file_size;
    a->blocks = (a->size + 511) / 512;
    a->blksize = PAGE;
}

/* Answers one request other than READ: the reply's arguments into out
 * (room for 512 bytes); returns their length, or -errno. */
static int answer(const struct fuse_in_header *in, const void *op_in, const char *name, void *out)
{
    switch (in->opcode) {
    case FUSE_LOOKUP: {
        if (in->nodeid != FUSE_ROOT_ID || strcmp(name, "big") != 0)
            return -ENOENT;
        struct fuse_entry_out *e = out;
        memset(e, 0, sizeof *e);
        e->nodeid = FILE_INO;
        e->attr_valid = e->entry_valid = 3600;
        fill_attr(FILE_INO, &e->attr);
        return sizeof *e;
    }
    case FUSE_GETATTR: {
        struct fuse_attr_out *a = out;
        memset(a, 0, sizeof *a);
        a->attr_valid = 3600;
        fill_attr(in->nodeid, &a->attr);
        return sizeof *a;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR: {
        struct fuse_open_out *o = out;
        memset(o, 0, sizeof *o);
        o->open_flags = in->opcode == FUSE_OPEN ? FOPEN_DIRECT_IO : 0;   /* as adafs-fuse */
        return sizeof *o;
    }
    case FUSE_FLUSH:
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_ACCESS:
        return 0;
    case FUSE_READDIR:
        return 0;   /* empty: nobody lists it */
    default:
        (void)op_in;
        return -ENOSYS;
    }
}

/* ---- INIT, through /dev/fuse in either transport ---- */

static void answer_init(void)
{
    static char buf[1 << 16];
    ssize_t n = read(fuse_fd, buf, sizeof buf);
    if (n < (ssize_t)(sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in)))
        die("reading INIT: %s", n < 0 ? strerror(errno) : "short");
    struct fuse_in_header *h = (void *)buf;
    struct fuse_init_in *in = (void *)(h + 1);
    if (h->opcode != FUSE_INIT)
        die("first request is opcode %u, not INIT", h->opcode);
    struct {
        struct fuse_out_header h;
        struct fuse_init_out o;
    } r;
    memset(&r, 0, sizeof r);
    r.h.len = sizeof r;
    r.h.unique = h->unique;
    r.o.major = FUSE_KERNEL_VERSION;
    r.o.minor = FUSE_KERNEL_MINOR_VERSION;
    r.o.max_readahead = in->max_readahead;
    r.o.flags = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_INIT_EXT;
    if (opt.uring) {
        if (!(in->flags & FUSE_INIT_EXT) || !(in->flags2 & ADAFS_FUSE_OVER_IO_URING_FLAGS2))
            die("the kernel does not offer FUSE over io_uring (fuse.enable_uring is off?)");
        r.o.flags2 = ADAFS_FUSE_OVER_IO_URING_FLAGS2;
    }
    r.o.max_background = 12;
    r.o.congestion_threshold = 9;
    r.o.max_write = 1 << 20;
    r.o.time_gran = 1;
    r.o.max_pages = (uint16_t)opt.max_pages;
    if (write(fuse_fd, &r, sizeof r) != (ssize_t)sizeof r)
        die("answering INIT: %s", strerror(errno));
}

/* ---- transport 1: io_uring ---- */

struct ring {
    int fd;
    unsigned *sq_head, *sq_tail, sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, cq_mask;
    struct io_uring_cqe *cqes;
    char *sqes;   /* 128 bytes each */
    unsigned to_submit;
};

struct entry {
    struct adafs_fuse_uring_req_header hdr __attribute__((aligned(64)));
    char *payload;
    struct iovec iov[2];
};

static void ring_init(struct ring *r, unsigned depth)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    r->fd = (int)syscall(__NR_io_uring_setup, depth, &p);
    if (r->fd < 0)
        die("io_uring_setup: %s", strerror(errno));
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (!(p.features & IORING_FEAT_SINGLE_MMAP))
        die("io_uring without IORING_FEAT_SINGLE_MMAP");
    size_t len = sq_len > cq_len ? sq_len : cq_len;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    r->sqes = mmap(NULL, p.sq_entries * 128, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                   IORING_OFF_SQES);
    if (m == MAP_FAILED || r->sqes == MAP_FAILED)
        die("mapping the ring: %s", strerror(errno));
    r->sq_head = (unsigned *)(m + p.sq_off.head);
    r->sq_tail = (unsigned *)(m + p.sq_off.tail);
    r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(m + p.sq_off.array);
    r->cq_head = (unsigned *)(m + p.cq_off.head);
    r->cq_tail = (unsigned *)(m + p.cq_off.tail);
    r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);
    r->to_submit = 0;
}

static void ring_cmd(struct ring *r, unsigned op, uint16_t qid, uint64_t commit_id, struct entry *e, uint64_t data)
{
    unsigned tail = *r->sq_tail, idx = tail & r->sq_mask;
    struct io_uring_sqe *sqe = (void *)(r->sqes + (size_t)idx * 128);
    memset(sqe, 0, 128);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = fuse_fd;
    sqe->cmd_op = op;
    sqe->user_data = data;
    if (op == ADAFS_FUSE_IO_URING_CMD_REGISTER) {
        sqe->addr = (uint64_t)(uintptr_t)e->iov;
        sqe->len = 2;
    }
    struct adafs_fuse_uring_cmd_req *c = (void *)sqe->cmd;
    c->qid = qid;
    c->commit_id = commit_id;
    r->sq_array[idx] = idx;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
    r->to_submit++;
}

/* Submits what is queued and waits for one completion. */
static int ring_enter(struct ring *r)
{
    for (;;) {
        int n = (int)syscall(__NR_io_uring_enter, r->fd, r->to_submit, 1, IORING_ENTER_GETEVENTS, NULL, 0);
        if (n >= 0) {
            r->to_submit -= (unsigned)n;
            return 0;
        }
        if (errno != EINTR)
            return -errno;
    }
}

/* The READ's data into the entry's payload; its length. */
static int uring_read(struct entry *e, const struct fuse_read_in *rd)
{
    uint64_t off = rd->offset, size = rd->size;
    if (off >= file_size)
        return 0;
    if (size > file_size - off)
        size = file_size - off;
    if (opt.data == DATA_PREAD) {
        ssize_t n = pread(backing_fd, e->payload, size, (off_t)off);
        return n < 0 ? -errno : (int)n;
    }
    if (opt.data == DATA_MMAP && off % PAGE == 0) {
        size_t len = (size + PAGE - 1) / PAGE * PAGE;
        /* private: the kernel's next request written here (a LOOKUP's name)
         * copies a page, never touches the file */
        void *p = mmap(e->payload, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_FIXED | (opt.populate == 1 ? MAP_POPULATE : 0), backing_fd, (off_t)off);
        if (p == MAP_FAILED)
            return -errno;
        /* populate=1 write-faults every page of the private mapping (a copy
         * each); MADV_POPULATE_READ maps the page cache's pages as they are */
        if (opt.populate == 2 && madvise(p, len, MADV_POPULATE_READ) < 0)
            return -errno;
        return (int)size;
    }
    if (opt.data == DATA_MMAP) {
        ssize_t n = pread(backing_fd, e->payload, size, (off_t)off);
        return n < 0 ? -errno : (int)n;
    }
    return (int)size;   /* DATA_NONE: whatever the buffer holds */
}

struct queue {
    unsigned qid;
    pthread_t thread;
};

static int ready_pipe[2];

static void *queue_main(void *arg)
{
    struct queue *q = arg;
    if (opt.pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(q->qid, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    struct ring r;
    ring_init(&r, opt.entries * 2 < 8 ? 8 : opt.entries * 2);
    struct entry *ents = calloc(opt.entries, sizeof *ents);
    if (!ents)
        die("calloc");
    for (unsigned i = 0; i < opt.entries; i++) {
        struct entry *e = &ents[i];
        e->payload = mmap(NULL, payload_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (e->payload == MAP_FAILED)
            die("mmap: %s", strerror(errno));
        memset(e->payload, 'u', payload_bytes);
        e->iov[0] = (struct iovec){ &e->hdr, sizeof e->hdr };
        e->iov[1] = (struct iovec){ e->payload, payload_bytes };
        ring_cmd(&r, ADAFS_FUSE_IO_URING_CMD_REGISTER, (uint16_t)q->qid, 0, e, i);
    }
    /* REGISTER is only queued by io_uring_enter's submit; it completes
     * when a request arrives */
    int n = (int)syscall(__NR_io_uring_enter, r.fd, r.to_submit, 0, 0, NULL, 0);
    if (n < 0)
        die("registering queue %u: %s", q->qid, strerror(errno));
    r.to_submit = 0;
    char one = 1;
    if (write(ready_pipe[1], &one, 1) != 1)
        die("ready pipe");
    for (;;) {
        int err = ring_enter(&r);
        if (err < 0)
            die("io_uring_enter: %s", strerror(-err));
        unsigned head = *r.cq_head, tail = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            struct io_uring_cqe *cqe = &r.cqes[head & r.cq_mask];
            if (cqe->res < 0) {
                if (cqe->res == -ENOTCONN || cqe->res == -ECANCELED || cqe->res == -ENODEV)
                    exit(0);   /* the mount went */
                die("queue %u: a ring command failed: %s", q->qid, strerror(-cqe->res));
            }
            struct entry *e = &ents[cqe->user_data];
            struct fuse_in_header *in = (void *)e->hdr.in_out;
            struct fuse_out_header *out = (void *)e->hdr.in_out;
            uint64_t unique = in->unique;
            int len;
            if (in->opcode == FUSE_READ)
                len = uring_read(e, (const struct fuse_read_in *)e->hdr.op_in);
            else
                len = answer(in, e->hdr.op_in, e->payload, e->payload);
            memset(out, 0, sizeof *out);
            out->unique = unique;
            out->error = len < 0 ? len : 0;
            out->len = (uint32_t)(sizeof *out + (len > 0 ? (unsigned)len : 0));
            e->hdr.ring_ent_in_out.payload_sz = len > 0 ? (uint32_t)len : 0;
            ring_cmd(&r, ADAFS_FUSE_IO_URING_CMD_COMMIT_AND_FETCH, (uint16_t)q->qid, unique, e, cqe->user_data);
        }
        __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* ---- transport 2: /dev/fuse ---- */

static void *dev_main(void *arg)
{
    (void)arg;
    size_t bufsize = (size_t)opt.max_pages * PAGE + PAGE;
    char *buf = aligned_alloc(PAGE, bufsize);
    char *data = aligned_alloc(PAGE, bufsize);
    int pipefd[2] = { -1, -1 };
    if (!buf || !data)
        die("malloc");
    memset(data, 'd', bufsize);
    if (opt.data == DATA_SPLICE) {
        /* a reply and its header whole in one pipe (doc/fuse.md) */
        int bytes = opt.max_read > 1032192 ? 2 << 20 : 1 << 20;
        if (pipe(pipefd) < 0 || fcntl(pipefd[1], F_SETPIPE_SZ, bytes) < 0)
            die("a pipe of %d bytes: %s (fs.pipe-max-size?)", bytes, strerror(errno));
    }
    for (;;) {
        ssize_t n = read(fuse_fd, buf, bufsize);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
                continue;
            if (errno == ENODEV)
                exit(0);
            die("reading /dev/fuse: %s", strerror(errno));
        }
        struct fuse_in_header *in = (void *)buf;
        if (in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET)
            continue;
        struct fuse_out_header out = { .unique = in->unique };
        char small[512];
        struct iovec iov[2] = { { &out, sizeof out }, { small, 0 } };
        if (in->opcode == FUSE_READ) {
            const struct fuse_read_in *rd = (void *)(in + 1);
            uint64_t off = rd->offset, size = rd->size;
            if (off >= file_size)
                size = 0;
            else if (size > file_size - off)
                size = file_size - off;
            out.len = (uint32_t)(sizeof out + size);
            if (opt.data == DATA_SPLICE && size > 0) {
                loff_t o = (loff_t)off;
                if (write(pipefd[1], &out, sizeof out) != sizeof out)
                    die("pipe: %s", strerror(errno));
                for (size_t done = 0; done < size;) {
                    ssize_t s = splice(backing_fd, &o, pipefd[1], NULL, size - done, SPLICE_F_MOVE);
                    if (s <= 0)
                        die("splice from the file: %s", s < 0 ? strerror(errno) : "EOF");
                    done += (size_t)s;
                }
                ssize_t s = splice(pipefd[0], NULL, fuse_fd, NULL, out.len, SPLICE_F_MOVE);
                if (s != (ssize_t)out.len)
                    die("splice to /dev/fuse: %s", s < 0 ? strerror(errno) : "short");
                continue;
            }
            if (opt.data == DATA_PREAD && size > 0) {
                ssize_t r = pread(backing_fd, data, size, (off_t)off);
                if (r < 0)
                    die("pread: %s", strerror(errno));
            }
            iov[1] = (struct iovec){ data, size };
        } else {
            const char *name = buf + sizeof *in;
            int len = answer(in, in + 1, name, small);
            out.error = len < 0 ? len : 0;
            iov[1].iov_len = len > 0 ? (size_t)len : 0;
            out.len = (uint32_t)(sizeof out + iov[1].iov_len);
        }
        if (writev(fuse_fd, iov, 2) < 0 && errno != ENOENT)
            die("answering opcode %u: %s", in->opcode, strerror(errno));
    }
    return NULL;
}

/* The /dev/fuse reader of a ring mount: FORGETs (and INTERRUPTs) still
 * come this way. */
static void drain_dev(void)
{
    /* the kernel wants room for a request of max_write */
    size_t bufsize = (size_t)opt.max_pages * PAGE + PAGE;
    char *buf = malloc(bufsize);
    if (!buf)
        die("malloc");
    for (;;) {
        ssize_t n = read(fuse_fd, buf, bufsize);
        if (n < 0 && errno == ENODEV)
            exit(0);
        if (n < 0 && errno != EINTR && errno != EAGAIN && errno != ENOENT)
            die("reading /dev/fuse: %s", strerror(errno));
    }
}

int main(int argc, char **argv)
{
    const char *mnt = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc)
            i++;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            parse_options(argv[++i]);
        else
            mnt = argv[i];
    }
    if (!mnt || !opt.backing)
        die("usage: uring-standin [--instance X] -o backing=PATH[,...] MOUNTPOINT");
    backing_fd = open(opt.backing, O_RDONLY);
    struct stat st;
    if (backing_fd < 0 || fstat(backing_fd, &st) < 0)
        die("%s: %s", opt.backing, strerror(errno));
    file_size = (uint64_t)st.st_size;
    long cpus = sysconf(_SC_NPROCESSORS_CONF);   /* the kernel's queues: possible CPUs */
    payload_bytes = (size_t)(opt.max_pages > 256 ? opt.max_pages : 256) * PAGE;
    fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fuse_fd < 0)
        die("/dev/fuse: %s", strerror(errno));
    char mopts[256];
    snprintf(mopts, sizeof mopts, "fd=%d,rootmode=40000,user_id=%u,group_id=%u,max_read=%u", fuse_fd, getuid(),
             getgid(), opt.max_read);
    if (mount("uring-standin", mnt, "fuse.uring-standin", MS_NOSUID | MS_NODEV, mopts) < 0)
        die("mount %s: %s", mnt, strerror(errno));
    if (pipe(ready_pipe) < 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid > 0) {   /* returns once every queue is registered */
        close(ready_pipe[1]);
        unsigned want = opt.uring ? (unsigned)cpus : 1;
        char c;
        for (unsigned got = 0; got < want; got++)
            if (read(ready_pipe[0], &c, 1) != 1)
                die("the daemon failed before the mount was ready");
        return 0;
    }
    close(ready_pipe[0]);
    setsid();
    answer_init();
    if (opt.uring) {
        struct queue *qs = calloc((size_t)cpus, sizeof *qs);
        for (long i = 0; i < cpus; i++) {
            qs[i].qid = (unsigned)i;
            if (pthread_create(&qs[i].thread, NULL, queue_main, &qs[i]) != 0)
                die("pthread_create");
        }
        drain_dev();
    }
    char one = 1;
    if (write(ready_pipe[1], &one, 1) != 1)
        die("ready pipe");
    pthread_t t;
    for (unsigned i = 1; i < opt.threads; i++)
        if (pthread_create(&t, NULL, dev_main, NULL) != 0)
            die("pthread_create");
    dev_main(NULL);
    return 0;
}
