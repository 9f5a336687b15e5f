/* adafs-fuse: a job's adafs file system as a kernel mount, through FUSE.
 *
 *   adafs-fuse [--instance FILE] [--connections N] [--foreground]
 *              [--ready-fd N] [-o OPTION[,OPTION...]] MOUNTPOINT
 *
 * The LD_PRELOAD interposer reaches adafs from dynamically linked programs
 * only. A kernel mount serves the rest: static binaries, programs the
 * kernel itself runs (srun steps, exec), and mmap with the kernel's full
 * coherence. Every request goes to libadafs, so the file system keeps its
 * guarantees: the instance's secret, quotas (ENOSPC), EIO after the
 * instance's timeout when a server is gone (a process waiting on the mount
 * is never stuck for longer), and what the preload and every other node
 * see.
 *
 * The mount and the interposer stay consistent (doc/fuse.md): the kernel
 * caches no file's name and no absence (entry_timeout and
 * negative_timeout are 0 by default; only directories' names are kept,
 * for a second, see keep_directory_name), and attributes only for the
 * clock tick of the lookup that fetched them (attr_timeout is 0; see
 * keep_lookup_attributes), so every lookup and stat of a path asks the
 * servers as the interposer does; file data is read and written directly
 * (no page cache) where the kernel lets such files be mapped (below), and
 * otherwise cached while a file is open here, dropped at every open (no
 * keep_cache) and whenever a read finds the size or modification time
 * changed (auto_inval_data); writes go through to the servers before
 * write() returns (no writeback cache). Record locks are the kernel's, per
 * node.
 *
 * MOUNTPOINT may be /dev/fd/N, a /dev/fuse descriptor already mounted by a
 * privileged parent: the node agent mounts as root for the job and runs
 * this program as the job's user (libfuse's "mount by parent"). */
#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "adafs.h"
#include "fuse/max_read.h"

/* Open flags libadafs understands; the rest are the kernel's business. */
#define LIB_OPEN_FLAGS (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NONBLOCK)
#define CONNECTIONS_MAX 64

/* Several handles, each with its own connection to every server: one
 * handle's requests to a server are answered in order, so files used by
 * different processes at once go through different handles. */
static adafs *pool[CONNECTIONS_MAX];
static int npool;
static atomic_uint next_handle;
static int ready_fd = -1;   /* told "ready" once the kernel's INIT is answered */

/* Direct I/O with mmap allowed (the kernel's FUSE_DIRECT_IO_ALLOW_MMAP,
 * Linux 6.6; libfuse 3.14 cannot ask for it, so the INIT answer is amended
 * on its way out, below). With it every open file is FOPEN_DIRECT_IO: a
 * read or write goes to adafs as one request of its size, with no page
 * cache between, exactly as through the interposer (and two copies of the
 * data instead of three); mmap still works, through the page cache.
 * Without it, files go through the page cache (see the header). */
#define ALLOW_MMAP_FLAGS2 (1u << (36 - 32))
/* Pages of a request (the INIT answer's max_pages, also amended on its
 * way out): libfuse asks for 256, max_write's; a 1 MiB buffer that does
 * not start on a page (malloc's) spans 257, and with 256 the kernel split
 * every such 1 MiB read() or write() into two requests, of 1 MiB less
 * the offset and of the offset. The kernel grants at most
 * fs.fuse.max_pages_limit (256 by default, a site may raise it; Linux
 * 6.13 and later) and silently keeps to it. */
#define REQUEST_PAGES 257
static uint64_t init_unique;   /* the INIT request being answered */
static bool init_offers;       /* the kernel offered ALLOW_MMAP */
static bool direct_io;         /* and we asked for it */

/* The kernel hands requests to threads in an order: a thread's reply to
 * a request comes before the kernel sends any request that follows from
 * it (a write of the file a create opened, any request after INIT). What
 * a thread did before replying is therefore complete when another thread
 * takes such a request: the open file's handle, the INIT state above.
 * The kernel's order is made the program's own: a release before each
 * reply, an acquire after each request taken, on one counter (a few
 * nanoseconds a request), so the C memory model, and ThreadSanitizer,
 * know it too. */
static atomic_uint kernel_order;

static void before_reply(void)
{
    atomic_fetch_add_explicit(&kernel_order, 1, memory_order_release);
}

static void after_request(void)
{
    (void)atomic_load_explicit(&kernel_order, memory_order_acquire);
}

static void say_ready(void);

/* A stat of a path through the mount is two requests: the kernel looks
 * the name up (LOOKUP, which libfuse answers with a getattr), then asks
 * for the attributes again (GETATTR), since none are cached. The second
 * is answered with what the first fetched when it comes from the same
 * caller thread as its very next request to the mount, for the same
 * path, within HANDOFF_NS: the stat then shows the file as it was during
 * the syscall, at its lookup, as one request to the servers would.
 * A thread's slot is emptied by any other request of that thread. Only a
 * syscall that ends with a lookup (open with O_PATH, chdir) followed by
 * an fstat of that file within HANDOFF_NS can see the lookup's
 * attributes instead of newer ones (doc/fuse.md). */
#define HANDOFF_SLOTS 64
#define HANDOFF_NS 10000000   /* 10 ms */
struct handoff {
    pthread_mutex_t lock;
    atomic_uint pid;   /* the caller thread whose lookup this is, or 0 */
    uint64_t when;     /* CLOCK_MONOTONIC ns */
    char *path;
    struct stat st;
};
static struct handoff handoffs[HANDOFF_SLOTS];
static int fuse_fd = -1;   /* /dev/fuse: a request spliced from it is not seen */
static atomic_bool handoff_off;   /* some requests went unseen (spliced) */
/* The request this thread serves: its opcode, caller and inode (io_read),
 * its id, and (answered) the id of a request this thread has answered
 * itself (a spliced READ reply: libfuse's own answer is then dropped). */
static __thread uint32_t req_opcode, req_pid;
static __thread uint64_t req_nodeid, req_unique, answered;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static struct handoff *handoff_of(uint32_t pid)
{
    return &handoffs[pid % HANDOFF_SLOTS];
}

/* Keeps path's attributes st as pid's lookup, or (path NULL) empties pid's slot. */
static void handoff_set(uint32_t pid, const char *path, const struct stat *st)
{
    struct handoff *h = handoff_of(pid);
    if (!path && atomic_load_explicit(&h->pid, memory_order_relaxed) != pid)
        return;   /* nothing of this thread's there: no lock taken */
    char *copy = path ? strdup(path) : NULL;
    pthread_mutex_lock(&h->lock);
    if (path || atomic_load_explicit(&h->pid, memory_order_relaxed) == pid) {
        free(h->path);
        h->path = copy;
        copy = NULL;
        atomic_store_explicit(&h->pid, h->path ? pid : 0, memory_order_relaxed);
        if (h->path) {
            h->st = *st;
            h->when = now_ns();
        }
    }
    pthread_mutex_unlock(&h->lock);
    free(copy);
}

/* The attributes pid's lookup of path fetched, taken once. */
static bool handoff_take(uint32_t pid, const char *path, struct stat *st)
{
    struct handoff *h = handoff_of(pid);
    if (atomic_load_explicit(&h->pid, memory_order_relaxed) != pid ||
        atomic_load_explicit(&handoff_off, memory_order_relaxed))
        return false;
    bool hit = false;
    pthread_mutex_lock(&h->lock);
    if (atomic_load_explicit(&h->pid, memory_order_relaxed) == pid && h->path &&
        strcmp(h->path, path) == 0 && now_ns() - h->when < HANDOFF_NS) {
        *st = h->st;
        hit = true;
    }
    free(h->path);
    h->path = NULL;
    atomic_store_explicit(&h->pid, 0, memory_order_relaxed);
    pthread_mutex_unlock(&h->lock);
    return hit;
}

/* A WRITE's data is received straight into a memfd of the thread's (one
 * copy, from the writer's pages), and the servers take it from there: a
 * server of this node copies it into its chunk file (one copy more,
 * copy_file_range), a remote one is sent it with sendfile. Through
 * libfuse's buffer it was copied twice more (into the buffer, into the
 * socket). The request's headers go to libfuse's buffer, what follows
 * them to the mapped memfd: back into the buffer unless it is a WRITE's
 * data (a few bytes of a path, for other requests). libfuse hands a
 * thread's buffer to one request at a time, taken and answered by that
 * thread before it reads the next, so one memfd per thread is enough. */
#define WRITE_HEAD (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))
struct write_map {
    int fd;
    char *mem;
    size_t len;
};
static __thread struct write_map wmap = { .fd = -1 };
static __thread bool write_in_map;   /* this thread's request is a WRITE, its data in wmap */
/* libfuse ends threads it has too many of: each thread's map goes with it. */
static pthread_key_t wmap_key;

static void write_map_free(void *arg)
{
    struct write_map *m = arg;
    if (m->mem)
        munmap(m->mem, m->len);
    if (m->fd >= 0)
        close(m->fd);
    *m = (struct write_map){ .fd = -1 };
}

static bool write_map_ready(size_t len)
{
    if (wmap.len >= len)
        return true;
    if (wmap.fd < 0 && pthread_setspecific(wmap_key, &wmap) != 0)
        return false;
    if (wmap.mem) {
        munmap(wmap.mem, wmap.len);
        wmap.mem = NULL;
        wmap.len = 0;
    }
    if (wmap.fd < 0 && (wmap.fd = memfd_create("adafs-fuse-write", MFD_CLOEXEC)) < 0)
        return false;
    if (ftruncate(wmap.fd, (off_t)len) < 0)
        return false;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, wmap.fd, 0);
    if (p == MAP_FAILED)
        return false;
    wmap.mem = p;
    wmap.len = len;
    return true;
}

static ssize_t receive(int fd, char *buf, size_t len)
{
    write_in_map = false;
    if (len <= WRITE_HEAD || !write_map_ready(len - WRITE_HEAD)) {
        static atomic_bool said;
        if (len > WRITE_HEAD && !atomic_exchange(&said, true))
            fprintf(stderr, "adafs-fuse: no memfd to receive writes into (%s): "
                    "they are received into libfuse's buffer and copied once more\n",
                    strerror(errno));
        return read(fd, buf, len);
    }
    struct iovec iov[2] = { { buf, WRITE_HEAD }, { wmap.mem, len - WRITE_HEAD } };
    ssize_t n = readv(fd, iov, 2);
    if (n <= (ssize_t)WRITE_HEAD)
        return n;
    const struct fuse_in_header *h = (const void *)buf;
    const struct fuse_write_in *w = (const void *)(h + 1);
    if (h->opcode == FUSE_WRITE && (size_t)n - WRITE_HEAD == w->size)
        write_in_map = true;
    else
        memcpy(buf + WRITE_HEAD, wmap.mem, (size_t)n - WRITE_HEAD);
    return n;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    ssize_t n = receive(fd, buf, len);
    after_request();
    const struct fuse_in_header *h = buf;
    req_opcode = 0;
    if (n >= (ssize_t)sizeof *h) {
        req_opcode = h->opcode;
        req_pid = h->pid;
        req_nodeid = h->nodeid;
        req_unique = h->unique;
        if (h->pid && h->opcode != FUSE_GETATTR)
            handoff_set(h->pid, NULL, NULL);
    }
    if (n >= (ssize_t)sizeof *h && h->opcode == FUSE_INIT) {
        const struct fuse_init_in *in = (const void *)(h + 1);
        init_unique = h->unique;
        init_offers = n >= (ssize_t)(sizeof *h + offsetof(struct fuse_init_in, flags2) + 4) &&
                      (in->flags & FUSE_INIT_EXT) && (in->flags2 & ALLOW_MMAP_FLAGS2);
    }
    return n;
}

static ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                         unsigned int flags, void *userdata)
{
    (void)userdata;
    before_reply();   /* to the kernel (a reply) or from it (a request) */
    ssize_t n = splice(fdin, offin, fdout, offout, len, flags);
    after_request();
    if (fdin == fuse_fd) {   /* a request this program does not see whole */
        req_opcode = 0;
        write_in_map = false;
        atomic_store(&handoff_off, true);
    }
    return n;
}

/* The kernel may keep the name of a directory for DIR_ENTRY_SECONDS,
 * never its attributes, nor any file's name or attributes: a path's
 * directories are then not looked up again at every request (a stat of
 * dir/file is one request to the servers, not two). libfuse works on
 * paths, so a request under a kept name still goes to whatever the
 * servers hold at that path now: a directory removed or renamed
 * elsewhere gives ENOENT, one made again at the name is the new one. Only
 * a directory replaced by a file elsewhere is seen as it was for up to
 * DIR_ENTRY_SECONDS: a stat of the name gives EIO once, and the kernel
 * looks it up afresh after that (doc/fuse.md). Set only when the user
 * did not choose entry_timeout. */
#define DIR_ENTRY_SECONDS 1
static void keep_directory_name(struct fuse_entry_out *e)
{
    if (S_ISDIR(e->attr.mode) && e->entry_valid == 0 && e->entry_valid_nsec == 0)
        e->entry_valid = DIR_ENTRY_SECONDS;
}

/* A lookup's attributes are the file as the servers hold it at that
 * moment. The kernel may use them for the clock tick it is in and the
 * next (attr_valid of 1 ns: one jiffy, rounded up; 4-8 ms at HZ=250), so
 * a stat of a path is one request, its LOOKUP, where a GETATTR would
 * follow and ask the servers again. Every stat of a path still asks the
 * servers (entry_timeout=0: each is a lookup), and an open takes back
 * what its lookup left (open_forgets_lookup), so an open file's fstat
 * asks them too, unless another lookup of the file was answered after
 * the open, within that tick (doc/fuse.md; tests/fuse_views.py). Not
 * when the user chose attr_timeout. */
static void keep_lookup_attributes(struct fuse_entry_out *e)
{
    if (e->attr_valid == 0 && e->attr_valid_nsec == 0)
        e->attr_valid_nsec = 1;
}

/* The opened file's (or directory's) inode forgets the attributes its
 * lookup left (above), so its first fstat asks the servers: a
 * notification written before the OPEN is answered, no request of the
 * kernel's more. (What else the kernel drops at an open is its own
 * business: without this, an fstat right after an open got its lookup's
 * size once in test_fuse_mount on Linux 6.18, though not every time.) */
static void open_forgets_lookup(void)
{
    if (!req_nodeid || (req_opcode != FUSE_OPEN && req_opcode != FUSE_OPENDIR))
        return;
    int rc = fuse_lowlevel_notify_inval_inode(fuse_get_session(fuse_get_context()->fuse),
                                              req_nodeid, -1, 0);
    if (rc < 0 && rc != -ENOENT) {
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            fprintf(stderr, "adafs-fuse: cannot tell the kernel to forget a lookup's "
                    "attributes at an open (%s): an fstat right after an open may get "
                    "them instead of the servers' (said once)\n", strerror(-rc));
    }
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    bool init_reply = false;
    struct fuse_out_header *h = count >= 1 && iov[0].iov_len >= sizeof *h ? iov[0].iov_base : NULL;
    if (h && answered && h->unique == answered) {
        /* x_read answered it with a spliced reply: libfuse's is not sent */
        answered = 0;
        ssize_t all = 0;
        for (int i = 0; i < count; i++)
            all += (ssize_t)iov[i].iov_len;
        return all;
    }
    if (init_unique && h && h->unique == init_unique) {
        struct fuse_init_out *out = count >= 2 &&
            iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + 4 ? iov[1].iov_base : NULL;
        if (out && h->error == 0 && init_offers && (out->flags & FUSE_INIT_EXT)) {
            out->flags2 |= ALLOW_MMAP_FLAGS2;
            direct_io = true;
        }
        if (out && h->error == 0 && (out->flags & FUSE_MAX_PAGES))
            out->max_pages = REQUEST_PAGES;
        init_unique = 0;
        init_reply = true;
    }
    if (h && h->error == 0 && (req_opcode == FUSE_LOOKUP || req_opcode == FUSE_MKDIR) &&
        count >= 2 && iov[1].iov_len >= sizeof(struct fuse_entry_out))
        keep_directory_name(iov[1].iov_base);
    if (h && h->error == 0 && req_opcode == FUSE_LOOKUP && count >= 2 &&
        iov[1].iov_len >= sizeof(struct fuse_entry_out))
        keep_lookup_attributes(iov[1].iov_base);
    before_reply();
    ssize_t n = writev(fd, iov, count);
    /* The kernel has applied the INIT answer (its limits, the mount's
     * readahead) when writev returns: only now is the mount ready. */
    if (init_reply)
        say_ready();
    return n;
}

/* The handle for path operations of this thread, and for a new open file. */
static adafs *thread_fs(void)
{
    static __thread int slot = -1;
    if (slot < 0)
        slot = (int)(atomic_fetch_add(&next_handle, 1) % (unsigned)npool);
    return pool[slot];
}

static adafs *spread_fs(void)
{
    return pool[atomic_fetch_add(&next_handle, 1) % (unsigned)npool];
}

/* An open file (fi->fh). The stat of a file just created is kept for the
 * getattr libfuse asks right after: one round trip less per create.
 *
 * The kernel sends many reads of one file at once (readahead), which the
 * library serves one after the other. When a server is gone, each would
 * wait out the instance's timeout in turn: after the first EIO, the
 * others, and every later read or write of this open file, fail at once,
 * so a reader gets EIO after one timeout, not after one per read queued. */
struct handle {
    pthread_mutex_t io;
    adafs *fs;
    int lfd;
    bool append;
    atomic_bool fresh;   /* st is still the file's: taken by one getattr */
    bool failed;       /* an I/O gave EIO: a server is gone */
    struct stat st;
};

/* An open directory: a snapshot of its entries, with their stat. */
struct entry {
    char *name;
    struct stat st;
};
struct dir {
    struct entry *e;
    size_t n, cap;
    struct stat self;
};

static struct handle *handle_of(const struct fuse_file_info *fi)
{
    return (struct handle *)(uintptr_t)fi->fh;
}

static int x_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi && fi->fh) {
        struct handle *h = handle_of(fi);
        if (atomic_exchange(&h->fresh, false)) {
            *st = h->st;
            return 0;
        }
        return adafs_fstat(h->fs, h->lfd, st);
    }
    if (!path)
        return -ENOENT;
    if (req_opcode == FUSE_GETATTR && handoff_take(req_pid, path, st))
        return 0;
    /* A lookup is of a name in a directory the kernel holds: a missing
     * name is ENOENT without asking about the ancestors (doc/fuse.md). */
    int rc = req_opcode == FUSE_LOOKUP ? adafs_stat_entry(thread_fs(), path, st)
                                       : adafs_stat(thread_fs(), path, st);
    if (rc == 0 && req_opcode == FUSE_LOOKUP && req_pid &&
        !atomic_load_explicit(&handoff_off, memory_order_relaxed))
        handoff_set(req_pid, path, st);
    return rc;
}

static int x_access(const char *path, int mask)
{
    return adafs_access(thread_fs(), path, mask);
}

static int x_mkdir(const char *path, mode_t mode)
{
    return adafs_mkdir(thread_fs(), path, mode);
}

/* A regular file is created; FIFOs, devices and sockets do not exist in
 * adafs (EPERM, as mknod(2) documents for such a file system). */
static int x_mknod(const char *path, mode_t mode, dev_t dev)
{
    (void)dev;
    if (!S_ISREG(mode))
        return -EPERM;
    adafs *fs = thread_fs();
    int fd = adafs_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, mode & 07777);
    return fd < 0 ? fd : adafs_close(fs, fd);
}

static int x_unlink(const char *path)
{
    return adafs_unlink(thread_fs(), path);
}

static int x_rmdir(const char *path)
{
    return adafs_rmdir(thread_fs(), path);
}

/* No symbolic or hard links in adafs: EPERM, as link(2) and symlink(2)
 * document for a file system without them (git, cp -l then copy). */
static int x_symlink(const char *target, const char *path)
{
    (void)target;
    (void)path;
    return -EPERM;
}

static int x_link(const char *from, const char *to)
{
    (void)from;
    (void)to;
    return -EPERM;
}

static int x_rename(const char *from, const char *to, unsigned int flags)
{
    adafs *fs = thread_fs();
    if (flags & ~RENAME_NOREPLACE)
        return -EINVAL;   /* RENAME_EXCHANGE, RENAME_WHITEOUT */
    if (flags & RENAME_NOREPLACE) {
        /* checked, then renamed: not atomic against a concurrent creator */
        struct stat st;
        int rc = adafs_stat(fs, to, &st);
        if (rc == 0)
            return -EEXIST;
        if (rc != -ENOENT)
            return rc;
    }
    return adafs_rename(fs, from, to);
}

static int x_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)fi;
    return path ? adafs_chmod(thread_fs(), path, mode) : -ENOENT;
}

/* Files belong to the job's user: chown succeeds when it changes nothing
 * (the owner, or a group of the caller), else EPERM, as the interposer. */
static int x_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct stat st;
    int rc = x_getattr(path, &st, fi);
    if (rc < 0)
        return rc;
    if (uid != (uid_t)-1 && uid != st.st_uid)
        return -EPERM;
    if (gid == (gid_t)-1 || gid == st.st_gid || gid == getgid())
        return 0;
    gid_t groups[NGROUPS_MAX];
    int n = getgroups(NGROUPS_MAX, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return 0;
    return -EPERM;
}

static int x_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi && fi->fh)
        return adafs_ftruncate(handle_of(fi)->fs, handle_of(fi)->lfd, size);
    return path ? adafs_truncate(thread_fs(), path, size) : -ENOENT;
}

static int x_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (!path)
        return -ENOENT;
    struct timespec t[2] = { tv[0], tv[1] };
    struct stat st;
    bool omit = t[0].tv_nsec == UTIME_OMIT || t[1].tv_nsec == UTIME_OMIT;
    if (omit) {
        int rc = x_getattr(path, &st, fi);
        if (rc < 0)
            return rc;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < 2; i++) {
        if (t[i].tv_nsec == UTIME_NOW)
            t[i] = now;
        else if (t[i].tv_nsec == UTIME_OMIT)
            t[i] = i == 0 ? st.st_atim : st.st_mtim;
    }
    return adafs_utimens(thread_fs(), path, t);
}

static int open_with(const char *path, struct fuse_file_info *fi, int flags, mode_t mode,
                     bool created)
{
    struct handle *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->fs = spread_fs();
    h->lfd = adafs_open_stat(h->fs, path, flags & LIB_OPEN_FLAGS, mode, &h->st);
    if (h->lfd < 0) {
        int rc = h->lfd;
        free(h);
        return rc;
    }
    pthread_mutex_init(&h->io, NULL);
    h->append = flags & O_APPEND;
    atomic_init(&h->fresh, created);
    fi->fh = (uintptr_t)h;
    fi->direct_io = direct_io;
    fi->keep_cache = 0;   /* the page cache starts afresh at each open */
    return 0;
}

static int x_open(const char *path, struct fuse_file_info *fi)
{
    int rc = open_with(path, fi, fi->flags, 0, false);
    if (rc == 0)
        open_forgets_lookup();
    return rc;
}

static int x_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return open_with(path, fi, fi->flags | O_CREAT, mode, true);
}

/* A write's data that libfuse spliced from /dev/fuse (FUSE_CAP_SPLICE_READ:
 * the writer's pages, no copy) is spliced into a memfd of the thread's
 * (one copy), and a server copies it from there into its chunk file.
 * libfuse uses a thread's buffer before the thread takes its next
 * request, so one memfd per thread is enough. libfuse 3.14 does not
 * splice a 1 MiB write (its pipe cannot hold a request of 1 MiB and a
 * header): such data is received into the thread's write map (receive,
 * above) and sent from there. A read goes into libfuse's buffer from the
 * sockets and from there to the kernel (two copies): libfuse 3.14
 * answered a read given as a memfd by copying it into a buffer first
 * (pread, then writev: three), slower on this machine (1 MiB reads
 * through the mount, 4 alternating pairs: 404-837 MiB/s from memory
 * against 370-518 from a memfd). */
static int thread_memfd(size_t size)
{
    static __thread int fd = -1;
    static __thread size_t have;
    if (fd < 0 && (fd = memfd_create("adafs-fuse-io", MFD_CLOEXEC)) < 0)
        return -errno;
    if (size > have) {
        if (ftruncate(fd, (off_t)size) < 0)
            return -errno;
        have = size;
    }
    return fd;
}

/* Runs one I/O of h under its lock: after the first EIO of an open file,
 * its others fail at once (see struct handle). */
static ssize_t handle_io(struct handle *h, ssize_t (*io)(struct handle *, void *), void *arg)
{
    pthread_mutex_lock(&h->io);
    ssize_t n = h->failed ? -EIO : io(h, arg);
    if (n == -EIO)
        h->failed = true;
    pthread_mutex_unlock(&h->io);
    return n;
}

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
static size_t read_pipe_bytes;
/* The mount's max_read: set by main from its options. */
static unsigned mount_max_read;

/* The last max_read=N of a -o list, into *max_read; false if one is not a
 * number of at least a page. */
static bool option_max_read(const char *opts, unsigned *max_read)
{
    for (const char *o = opts; o; o = strchr(o, ',') ? strchr(o, ',') + 1 : NULL) {
        if (strncmp(o, "max_read=", 9) != 0)
            continue;
        char *end;
        errno = 0;
        unsigned long v = strtoul(o + 9, &end, 10);
        if (errno || (*end && *end != ',') || v < 4096 || v > UINT_MAX)
            return false;
        *max_read = (unsigned)v;
    }
    return true;
}
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

static int x_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
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

struct write_args {
    struct fuse_bufvec *data;
    size_t size;
    off_t off;
    bool in_map;   /* data is the thread's write map (receive) */
};

/* Smaller writes are sent from the map's memory like any buffer: passing
 * the descriptor to a server costs about what copying that much does. */
#define FD_WRITE_MIN (64u << 10)

/* Sends count bytes of fd's data at its offset 0 to the servers at off. */
static ssize_t pwrite_fd(struct handle *h, int fd, size_t count, off_t off)
{
    size_t done = 0;
    while (done < count) {
        ssize_t w = adafs_pwrite_from_fd(h->fs, h->lfd, fd, (off_t)done, count - done,
                                         off + (off_t)done);
        if (w <= 0)
            return done ? (ssize_t)done : (w < 0 ? w : -EIO);
        done += (size_t)w;
    }
    return (ssize_t)done;
}

/* From the thread's write map (receive), from libfuse's buffer, or
 * through the thread's memfd when libfuse spliced the data, to the
 * servers; O_APPEND from memory: the library appends at the end the
 * servers know (another node may have grown the file), not where the
 * kernel thinks it is. */
static ssize_t write_io(struct handle *h, void *arg)
{
    struct write_args *a = arg;
    atomic_store(&h->fresh, false);
    if (h->append) {
        char *mem = malloc(a->size ? a->size : 1);
        struct fuse_bufvec dst = FUSE_BUFVEC_INIT(a->size);
        dst.buf[0].mem = mem;
        ssize_t n = mem ? fuse_buf_copy(&dst, a->data, 0) : -ENOMEM;
        size_t done = 0;
        while (n >= 0 && done < (size_t)n) {
            ssize_t w = adafs_write(h->fs, h->lfd, mem + done, (size_t)n - done);
            if (w <= 0) {
                n = done ? (ssize_t)done : (w < 0 ? w : -EIO);
                break;
            }
            done += (size_t)w;
        }
        free(mem);
        return n;
    }
    if (a->in_map)
        return pwrite_fd(h, wmap.fd, a->size, a->off);
    const struct fuse_buf *b = &a->data->buf[0];
    if (a->data->count == 1 && a->data->idx == 0 && a->data->off == 0 &&
        !(b->flags & FUSE_BUF_IS_FD)) {
        size_t done = 0;
        while (done < a->size) {
            ssize_t w = adafs_pwrite(h->fs, h->lfd, (const char *)b->mem + done, a->size - done,
                                     a->off + (off_t)done);
            if (w <= 0)
                return done ? (ssize_t)done : (w < 0 ? w : -EIO);
            done += (size_t)w;
        }
        return (ssize_t)done;
    }
    int memfd = thread_memfd(a->size);
    if (memfd < 0)
        return memfd;
    struct fuse_bufvec dst = FUSE_BUFVEC_INIT(a->size);
    dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    dst.buf[0].fd = memfd;
    dst.buf[0].pos = 0;
    ssize_t n = fuse_buf_copy(&dst, a->data, 0);
    return n > 0 ? pwrite_fd(h, memfd, (size_t)n, a->off) : n;
}

static int x_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
                       struct fuse_file_info *fi)
{
    (void)path;
    struct write_args a = { .data = buf, .size = fuse_buf_size(buf), .off = off };
    struct fuse_bufvec mapped = FUSE_BUFVEC_INIT(a.size);
    if (write_in_map && a.size <= wmap.len) {
        mapped.buf[0].mem = wmap.mem;
        a.data = &mapped;
        a.in_map = a.size >= FD_WRITE_MIN;
    }
    return (int)handle_io(handle_of(fi), write_io, &a);
}

static int x_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return adafs_statvfs(thread_fs(), st);
}

static int x_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct handle *h = handle_of(fi);
    int rc = adafs_close(h->fs, h->lfd);
    pthread_mutex_destroy(&h->io);
    free(h);
    return rc;
}

static int x_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    (void)datasync;
    struct handle *h = handle_of(fi);
    return adafs_fsync(h->fs, h->lfd);
}

static int dir_add(void *arg, const struct adafs_listed *l)
{
    struct dir *d = arg;
    if (l->status < 0)
        return 0;   /* a file whose data could not be read: listed anyway below */
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct entry *grown = realloc(d->e, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        d->e = grown;
        d->cap = cap;
    }
    if (!(d->e[d->n].name = strdup(l->name)))
        return -ENOMEM;
    d->e[d->n++].st = l->st;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void dir_free(struct dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->e[i].name);
    free(d->e);
    free(d);
}

/* The listing is taken once, at opendir, and served by offset: the entries
 * in name order, as the interposer lists them. */
static int x_opendir(const char *path, struct fuse_file_info *fi)
{
    struct dir *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    adafs *fs = thread_fs();
    int rc = adafs_stat(fs, path, &d->self);
    if (rc == 0 && !S_ISDIR(d->self.st_mode))
        rc = -ENOTDIR;
    if (rc == 0)
        rc = adafs_list_plus(fs, path, 0, dir_add, d);
    if (rc < 0) {
        dir_free(d);
        return rc;
    }
    if (d->n)   /* an empty directory has no array: qsort must not see NULL */
        qsort(d->e, d->n, sizeof *d->e, by_name);
    fi->fh = (uintptr_t)d;
    open_forgets_lookup();
    return 0;
}

static int x_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path;
    struct dir *d = (struct dir *)(uintptr_t)fi->fh;
    enum fuse_fill_dir_flags plus = flags & FUSE_READDIR_PLUS ? FUSE_FILL_DIR_PLUS : 0;
    /* Offsets: 1 after ".", 2 after "..", 3 + i after entry i. */
    for (off_t at = off; at < (off_t)d->n + 2; at++) {
        const char *name = at == 0 ? "." : at == 1 ? ".." : d->e[at - 2].name;
        const struct stat *st = at < 2 ? &d->self : &d->e[at - 2].st;
        if (fill(buf, name, st, at + 1, at < 2 ? 0 : plus))
            break;
    }
    return 0;
}

static int x_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    dir_free((struct dir *)(uintptr_t)fi->fh);
    return 0;
}

/* Preallocation: mode 0 extends the size (no space is reserved, so a later
 * write can still fail with ENOSPC); KEEP_SIZE does nothing; other modes
 * (punch hole, zero range...) EOPNOTSUPP. As the interposer. */
static int x_fallocate(const char *path, int mode, off_t off, off_t len,
                       struct fuse_file_info *fi)
{
    (void)path;
    if (off < 0 || len <= 0)
        return -EINVAL;
    if (mode == FALLOC_FL_KEEP_SIZE)
        return 0;
    if (mode != 0)
        return -EOPNOTSUPP;
    if (off > INT64_MAX - len)
        return -EFBIG;
    struct handle *h = handle_of(fi);
    struct stat st;
    int rc = adafs_fstat(h->fs, h->lfd, &st);
    if (rc == 0 && st.st_size < off + len)
        rc = adafs_ftruncate(h->fs, h->lfd, off + len);
    return rc;
}

/* SEEK_DATA and SEEK_HOLE (the kernel handles the others): the whole file
 * is data. */
static off_t x_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    (void)path;
    struct handle *h = handle_of(fi);
    struct stat st;
    int rc = adafs_fstat(h->fs, h->lfd, &st);
    if (rc < 0)
        return rc;
    if (whence != SEEK_DATA && whence != SEEK_HOLE)
        return -EINVAL;
    if (off < 0 || off >= st.st_size)
        return -ENXIO;
    return whence == SEEK_DATA ? off : st.st_size;
}

static void *x_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    /* Inode numbers are adafs's (git keeps them in its index); a file
     * removed while open keeps its data in adafs, not as a hidden name. */
    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->hard_remove = 1;
    cfg->nullpath_ok = 1;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
        conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS;
    /* No splicing by libfuse: 3.14 splices neither a request nor a reply
     * of 1 MiB (its pipe cannot hold one), yet grows a pipe of 1 MiB per
     * thread trying, pipe pages the user has only so many of; and READ
     * replies are spliced by x_read, which drops libfuse's answer written
     * with writev (io_writev), not spliced. */
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    conn->max_background = 64;
    /* The kernel sets the mount's readahead to at most this when it takes
     * the answer: 1 MiB, what the agent sets once told "ready" (after
     * the answer, see io_writev), so neither undoes the other. */
    conn->max_readahead = 1 << 20;
    /* The mount's (main's default, or the last -o max_read: the agent's,
     * fuse/max_read.h), which libfuse requires here; the READ pipes are
     * sized to hold its replies. */
    conn->max_read = mount_max_read;
    read_pipe_bytes = adafs_fuse_pipe_bytes(mount_max_read);
    return NULL;
}

/* The mount answers from now on: tell whoever waits for it (once the
 * INIT answer is written, see io_writev). */
static void say_ready(void)
{
    if (ready_fd < 0)
        return;
    if (write(ready_fd, "ready\n", 6) != 6)
        fprintf(stderr, "adafs-fuse: cannot write to --ready-fd %d: %s\n", ready_fd,
                strerror(errno));
    close(ready_fd);
    if (ready_fd <= 2)
        open("/dev/null", O_WRONLY);   /* takes its number back */
    ready_fd = -1;
}

static const struct fuse_operations ops = {
    .init = x_init,
    .getattr = x_getattr,
    .access = x_access,
    .mknod = x_mknod,
    .mkdir = x_mkdir,
    .unlink = x_unlink,
    .rmdir = x_rmdir,
    .symlink = x_symlink,
    .link = x_link,
    .rename = x_rename,
    .chmod = x_chmod,
    .chown = x_chown,
    .truncate = x_truncate,
    .utimens = x_utimens,
    .open = x_open,
    .create = x_create,
    .read = x_read,
    .write_buf = x_write_buf,
    .statfs = x_statfs,
    .release = x_release,
    .fsync = x_fsync,
    .opendir = x_opendir,
    .readdir = x_readdir,
    .releasedir = x_releasedir,
    .fallocate = x_fallocate,
    .lseek = x_lseek,
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-fuse [--instance FILE] [--connections N] [--foreground]\n"
            "                  [--ready-fd N] [-o OPTION[,OPTION...]] MOUNTPOINT\n"
            "Mounts an adafs instance at MOUNTPOINT (a directory, or /dev/fd/N: a\n"
            "/dev/fuse descriptor a privileged parent mounted).\n"
            "  --instance FILE   the instance file (default $ADAFS_INSTANCE)\n"
            "  --connections N   handles to the servers, each with its own\n"
            "                    connections (default 4, at most %d)\n"
            "  --foreground, -f  stay in the foreground (otherwise detach once mounted)\n"
            "  --ready-fd N      write \"ready\" to descriptor N once the mount answers\n"
            "  -o OPTIONS        FUSE options, e.g. entry_timeout=SECONDS,\n"
            "                    attr_timeout=SECONDS (both 0 by default), ro,\n"
            "                    max_read=BYTES (by default 1 MiB where fs.pipe-max-size\n"
            "                    allows pipes of 2 MiB, else 1032192)\n"
            "  --help, -h        this text\n", CONNECTIONS_MAX);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "connections", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "ready-fd", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *instance = NULL;
    int connections = 4, foreground = 0, opt;
    /* No caching of names, attributes or absence by default: every lookup
     * and stat reaches the servers, as from the interposer. Options the
     * user gives with -o come after, and win. */
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    char defaults[160];
    mount_max_read = adafs_fuse_max_read();
    snprintf(defaults, sizeof defaults, "fsname=adafs,subtype=adafs,entry_timeout=0,"
             "attr_timeout=0,negative_timeout=0,max_read=%u", mount_max_read);
    if (fuse_opt_add_arg(&args, argv[0]) < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
        fuse_opt_add_arg(&args, defaults) < 0) {
        fprintf(stderr, "adafs-fuse: out of memory\n");
        return 1;
    }
    while ((opt = getopt_long(argc, argv, "fho:", longopts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'i':
            instance = optarg;
            break;
        case 'c':
            connections = (int)strtol(optarg, &end, 10);
            if (*end || connections < 1 || connections > CONNECTIONS_MAX) {
                fprintf(stderr, "adafs-fuse: --connections %s: a number from 1 to %d\n", optarg,
                        CONNECTIONS_MAX);
                fuse_opt_free_args(&args);
                return 2;
            }
            break;
        case 'f':
            foreground = 1;
            break;
        case 'r':
            ready_fd = (int)strtol(optarg, &end, 10);
            if (*end || ready_fd < 0 || fcntl(ready_fd, F_GETFD) < 0) {
                fprintf(stderr, "adafs-fuse: --ready-fd %s: not an open descriptor\n", optarg);
                fuse_opt_free_args(&args);
                return 2;
            }
            break;
        case 'o':
            if (!option_max_read(optarg, &mount_max_read)) {
                fprintf(stderr, "adafs-fuse: -o %s: max_read must be a number of bytes, "
                        "at least 4096\n", optarg);
                fuse_opt_free_args(&args);
                return 2;
            }
            if (fuse_opt_add_arg(&args, "-o") < 0 || fuse_opt_add_arg(&args, optarg) < 0) {
                fprintf(stderr, "adafs-fuse: out of memory\n");
                fuse_opt_free_args(&args);
                return 1;
            }
            break;
        case 'h':
            usage(stdout);
            fuse_opt_free_args(&args);
            return 0;
        default:
            usage(stderr);
            fuse_opt_free_args(&args);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        fuse_opt_free_args(&args);
        return 2;
    }
    const char *mountpoint = argv[optind];
    for (npool = 0; npool < connections; npool++) {
        char err[512] = "";
        int rc = adafs_connect(&pool[npool], instance, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "adafs-fuse: %s\n", err[0] ? err : strerror(-rc));
            fuse_opt_free_args(&args);
            return 1;
        }
    }
    struct fuse *f = fuse_new(&args, &ops, sizeof ops, NULL);
    if (!f) {
        fprintf(stderr, "adafs-fuse: bad FUSE options (see above)\n");
        fuse_opt_free_args(&args);
        return 2;
    }
    int rc = 1;
    if (fuse_mount(f, mountpoint) != 0) {
        fprintf(stderr, "adafs-fuse: cannot mount at %s (see above)\n", mountpoint);
        goto out;
    }
    static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev,
                                              .splice_receive = io_splice,
                                              .splice_send = io_splice };
    struct fuse_session *se = fuse_get_session(f);
    for (int i = 0; i < HANDOFF_SLOTS; i++)
        pthread_mutex_init(&handoffs[i].lock, NULL);
    if (pthread_key_create(&wmap_key, write_map_free) != 0) {
        fprintf(stderr, "adafs-fuse: cannot make a thread key\n");
        goto unmount;
    }
    fuse_fd = fuse_session_fd(se);
    if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) {
        fprintf(stderr, "adafs-fuse: cannot set up its I/O on /dev/fuse\n");
        goto unmount;
    }
    /* Reads and writes of up to 1 MiB each take a buffer that size: from
     * the heap, reused, not a fresh mapping faulted in every time. */
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    if (fuse_daemonize(foreground) != 0 || fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
        fprintf(stderr, "adafs-fuse: cannot detach or set signal handlers\n");
        goto unmount;
    }
    struct fuse_loop_config *loop = fuse_loop_cfg_create();
    if (!loop) {
        fprintf(stderr, "adafs-fuse: out of memory\n");
        goto unmount;
    }
    fuse_loop_cfg_set_max_threads(loop, 32);
    fuse_loop_cfg_set_idle_threads(loop, 4);
    rc = fuse_loop_mt(f, loop) == 0 ? 0 : 1;
    fuse_loop_cfg_destroy(loop);
    fuse_remove_signal_handlers(fuse_get_session(f));
unmount:
    fuse_unmount(f);
out:
    fuse_destroy(f);
    fuse_opt_free_args(&args);
    for (int i = 0; i < npool; i++)
        adafs_disconnect(pool[i]);
    return rc;
}
