/* mapping_fill: a private mapping's bytes (mapping.h): read into fresh
 * anonymous memory in slices, the pieces a server of this node holds
 * mapped from its data files instead where whole pages allow, and the
 * result moved into place for MAP_FIXED. */
#include "preload.h"
#include "mapping_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Bytes read per library call when filling a private mapping. */
#define MAP_FILL_SLICE (64u << 20)

/* Pieces of a private mapping that a server of this node holds are not
 * copied: they are mapped MAP_PRIVATE from that server's data file, the
 * read-only descriptor of it that short-circuit reads hold (adafs_pread_
 * pieces, doc/filesystem.md), so their pages are the page cache's, with
 * no fresh memory to zero and no copy in. A data file holds chunk i at
 * i x chunk size, so its offsets are the file's, and a page of the mapping
 * is a page of the data file. Only whole pages of a piece are mapped; the
 * parts of a page a piece shares with another (a chunk size that is not a
 * multiple of the page size), the other nodes' pieces and holes are
 * copied into the anonymous memory around them, as before. */
struct seg {
    uintptr_t from, to;
};

struct direct_fill {
    uintptr_t base;   /* where the bytes of the slice being read go */
    int kflags;       /* the caller's flags that a data file's mapping keeps */
    bool exec;        /* PROT_EXEC asked: a noexec data directory's pieces are copied */
    struct seg *segs; /* the pieces mapped from data files, in address order */
    size_t nsegs, capsegs;
};

/* Why a piece that could have been mapped was copied: said once per
 * process (it costs speed, not correctness). */
static void copied_because(const char *why, int err)
{
    static atomic_bool told;
    if (!atomic_exchange(&told, true))
        pl_log("mmap of an adafs file: copying the pieces this node's server holds instead of "
               "mapping them (%s%s%s); such mappings are slower", why, err ? ": " : "",
               err ? strerror(err) : "");
}

/* Reads len bytes of data file fd from off into to; a data file that
 * shrank meanwhile leaves the rest zeros (as a pread of it would). */
static int pread_data_file(int fd, uintptr_t to, size_t len, off_t off)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = syscall(SYS_pread64, fd, (char *)to + done, len - done, off + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return 0;
}

/* Maps [from, to) (whole pages) from data file fd at off. 1: mapped, 0:
 * not (the pages are fresh anonymous memory again, to be copied into),
 * -errno: neither. */
static int map_data_file(struct direct_fill *df, int fd, off_t off, uintptr_t from, uintptr_t to)
{
    /* A mapping of a noexec file system cannot be executable (the
     * kernel's EPERM): one that asks for PROT_EXEC is copied, by design
     * and without a word (a job's store is noexec, agentd/store.c). Any
     * other is mapped, and a later mprotect adding PROT_EXEC turns its
     * range into anonymous memory first (mapping_protect). */
    struct statfs sfs;
    if (df->exec && syscall(SYS_fstatfs, fd, &sfs) < 0) {
        copied_because("fstatfs of the data file", errno);
        return 0;
    }
    if (df->exec && (sfs.f_flags & ST_NOEXEC))
        return 0;
    if (df->nsegs == df->capsegs) {
        size_t cap = df->capsegs ? 2 * df->capsegs : 16;
        struct seg *grown = realloc(df->segs, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        df->segs = grown;
        df->capsegs = cap;
    }
    /* Populated now (PROT_READ: the page cache's pages, no copy), as the
     * copy would have been; a write to them later copies the page. */
    void *p = real.mmap((void *)from, to - from, PROT_READ,
                        MAP_PRIVATE | MAP_FIXED | MAP_POPULATE | df->kflags, fd, off);
    if (p == MAP_FAILED) {
        copied_because("mapping the data file", errno);
        /* A MAP_FIXED that failed may have unmapped the range. */
        return replace_pages(from, to, PROT_READ | PROT_WRITE, false, false);
    }
    df->segs[df->nsegs++] = (struct seg){ from, to };
    return 1;
}

/* One piece of data file fd (bytes [a, a + pc->len) of the mapping):
 * its whole pages mapped, the rest read into the memory around them.
 * last: nothing of the read follows it, so its last page may be mapped
 * where the data file ends in it (the rest of that page reads zeros). */
static int take_file_piece(struct direct_fill *df, const struct adafs_piece *pc, uintptr_t a,
                           bool last)
{
    uintptr_t e = a + pc->len, ma = round_up(a), me = round_down(e);
    struct stat st;
    if (last && me < e && syscall(SYS_fstat, pc->fd, &st) == 0 &&
        st.st_size == pc->off + (off_t)pc->len)
        me = round_up(e);
    int mapped = 0;
    if (ma < me) {
        /* The data file's offsets are the file's, and the mapping's offset
         * is a page multiple: a page of one is a page of the other. */
        if (((uintptr_t)pc->off - a) & (page_size() - 1))
            copied_because("a data file offset not in step with the mapping's pages", 0);
        else
            mapped = map_data_file(df, pc->fd, pc->off + (off_t)(ma - a), ma, me);
    }
    if (mapped < 0)
        return mapped;
    if (!mapped)
        return pread_data_file(pc->fd, a, pc->len, pc->off);
    int rc = pread_data_file(pc->fd, a, ma - a, pc->off);
    if (rc == 0 && me < e)
        rc = pread_data_file(pc->fd, me, e - me, pc->off + (off_t)(me - a));
    return rc;
}

/* adafs_pieces_fn: the other pieces are in the memory already. */
static int take_pieces(void *arg, const struct adafs_piece *pc, size_t n)
{
    struct direct_fill *df = arg;
    uintptr_t a = df->base;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; a += pc[i].len, i++)
        if (pc[i].fd >= 0)
            rc = take_file_piece(df, &pc[i], a, i == n - 1);
    return rc;
}

/* Reads want bytes of the file from off into the mapping at df->base
 * (fresh anonymous memory), mapping what it can (above). The bytes read
 * (fewer: the file ends there; the caller reads no further, since a page
 * mapped at that end is read-only), or -errno. */
static ssize_t fill_slice(adafs *fs, int lfd, struct direct_fill *df, size_t want, off_t off)
{
    size_t nsegs = df->nsegs;
    ssize_t n = adafs_pread_pieces(fs, lfd, (void *)df->base, want, off, take_pieces, df);
    if (n != -EAGAIN)
        return n;
    /* A data file given was replaced (the file removed or truncated to
     * zero meanwhile: it may be another file's now): nothing of it stays. */
    df->nsegs = nsegs;
    int rc = replace_pages(df->base, round_up(df->base + want), PROT_READ | PROT_WRITE, false,
                           false);
    return rc < 0 ? rc : adafs_pread(fs, lfd, (void *)df->base, want, off);
}

/* Moves the mapping [from, from + len) to [to, to + len), replacing what
 * is there: piece by piece, since mremap moves one kernel mapping at a
 * time (data files' pieces and the memory between them are several).
 * 0 or -errno (then nothing of it is left at from, nor at to). */
static int move_mapping(uintptr_t from, size_t len, uintptr_t to, const struct seg *segs,
                        size_t nsegs)
{
    uintptr_t end = from + len, x = from;
    size_t i = 0;
    while (x < end) {
        uintptr_t y = end;
        if (i < nsegs && segs[i].from <= x)
            y = segs[i++].to;
        else if (i < nsegs)
            y = segs[i].from;
        void *q = (void *)syscall(SYS_mremap, x, y - x, y - x, MREMAP_MAYMOVE | MREMAP_FIXED,
                                  to + (x - from));
        if (q == MAP_FAILED) {
            int rc = -errno;
            syscall(SYS_munmap, (void *)x, end - x);
            syscall(SYS_munmap, (void *)to, x - from);
            return rc;
        }
        x = y;
    }
    return 0;
}

/* Maps len bytes of anonymous memory as mmap would for flags (MAP_FIXED:
 * at addr, replacing what is there only once the bytes are in), filled
 * with the file's bytes [off, off + *data) (less if the file shrinks
 * meanwhile: *data says), the rest of the last page zeros and pages past
 * it SIGBUS; protection prot. The address, or MAP_FAILED with errno. */
void *map_private_copy(void *addr, size_t len, int prot, int flags, int lfd, off_t off,
                       uint64_t *data, bool *direct)
{
    bool fixed = (flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE);
    int aflags = (flags & ~(MAP_TYPE | MAP_SYNC | MAP_FIXED | MAP_POPULATE)) | MAP_PRIVATE |
                 MAP_ANONYMOUS;
    void *p = real.mmap(fixed ? NULL : addr, len, PROT_READ | PROT_WRITE, aflags, -1, 0);
    if (p == MAP_FAILED)
        return MAP_FAILED;
    uintptr_t start = (uintptr_t)p;
    syscall(SYS_madvise, p, len, MADV_HUGEPAGE);   /* where THP is off: small pages */
    int rc = 0, flfd;
    adafs *fs = route_enter_fd(ROUTE_READ, lfd, &flfd);
    if (!fs)
        rc = -EIO;
    struct direct_fill df = { .kflags = flags & (MAP_LOCKED | MAP_NORESERVE),
                              .exec = prot & PROT_EXEC };
    /* In slices: a batch of requests to the servers per slice, not one
     * per chunk of the whole file at once. */
    for (uint64_t done = 0; rc == 0 && done < *data;) {
        size_t want = *data - done < MAP_FILL_SLICE ? (size_t)(*data - done) : MAP_FILL_SLICE;
        df.base = start + done;
        ssize_t n = fill_slice(fs, flfd, &df, want, off + (off_t)done);
        if (n < 0) {
            rc = (int)n;
        } else if ((size_t)n < want) {
            *data = done + (uint64_t)n;   /* the file shrank meanwhile: it ends here */
            break;
        } else {
            done += (uint64_t)n;
        }
    }
    if (fs)
        route_leave_raw(0);
    if (rc == 0 && fixed) {
        rc = move_mapping(start, round_up(len), (uintptr_t)addr, df.segs, df.nsegs);
        if (rc < 0) {
            free(df.segs);
            errno = -rc;
            return MAP_FAILED;
        }
        start = (uintptr_t)addr;
    }
    *direct = df.nsegs > 0;
    free(df.segs);
    if (rc == 0)
        rc = replace_pages(start + round_up(*data), start + round_up(len), prot, false, true);
    if (rc == 0 && kernel_protect(start, start + round_up(*data), prot) < 0)
        rc = -errno;
    if (rc < 0) {
        syscall(SYS_munmap, (void *)start, len);
        errno = -rc;
        return MAP_FAILED;
    }
    return (void *)start;
}
