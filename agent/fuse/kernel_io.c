/* kernel_io.c: adafs-fuse's own I/O on /dev/fuse (libfuse's custom I/O).
 * Each request is read here (WRITE data into the thread's write map,
 * write.c), its opcode, caller and inode noted for the operations; each
 * reply is written here, amended on its way out: the INIT answer asks for
 * direct I/O with mmap and for requests of 257 pages, a lookup's answer
 * keeps a directory's name and the attributes for a clock tick, and a
 * READ already answered with a spliced reply (read.c) is not sent again.
 * The mount's cache rules are in adafs-fuse.c's header and doc/fuse.md. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse/fuse_int.h"

/* Direct I/O with mmap allowed (the kernel's FUSE_DIRECT_IO_ALLOW_MMAP,
 * Linux 6.6; libfuse 3.14 cannot ask for it, so the INIT answer is amended
 * on its way out, below). With it every open file is FOPEN_DIRECT_IO: a
 * read or write goes to adafs as one request of its size, with no page
 * cache between, exactly as through the interposer (and two copies of the
 * data instead of three); mmap still works, through the page cache.
 * Without it, files go through the page cache (see adafs-fuse.c's header). */
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
bool direct_io;                /* and we asked for it */

/* The kernel hands requests to threads in an order: a thread's reply to
 * a request comes before the kernel sends any request that follows from
 * it (a write of the file a create opened, any request after INIT). What
 * a thread did before replying is therefore complete when another thread
 * takes such a request: the open file's handle, the INIT state above.
 * The kernel's order is made the program's own: a release before each
 * reply, an acquire after each request taken, on one counter (a few
 * nanoseconds a request), so the C memory model, and ThreadSanitizer,
 * know it too (before_reply and after_request, fuse_int.h). */
atomic_uint kernel_order;

int fuse_fd = -1;   /* /dev/fuse: a request spliced from it is not seen */
/* The request this thread serves: its opcode, caller and inode (io_read),
 * its id, and (answered) the id of a request this thread has answered
 * itself (a spliced READ reply: libfuse's own answer is then dropped). */
__thread uint32_t req_opcode, req_pid;
__thread uint64_t req_nodeid, req_unique, answered;

ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
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

ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
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
void open_forgets_lookup(void)
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

ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
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
