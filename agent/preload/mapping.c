/* mapping: see mapping.h. The table of mappings and what the kernel is
 * told of them; a private mapping's bytes are filled in mapping_fill.c, a
 * shared one's changes written back in mapping_sync.c. */
#include "preload.h"
#include "mapping.h"
#include "mapping_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct map *maps;
static size_t nmaps, capmaps;
static atomic_int live;
/* The process whose address space this is: fork's child handler updates
 * it, vfork runs no handler, so a vfork child sees its parent's pid. */
static pid_t space_pid;

int mapping_count(void)
{
    return atomic_load_explicit(&live, memory_order_relaxed);
}

/* The most one mapping may read into memory: half the node's memory, so a
 * program mapping a file larger than the node could hold gets ENOMEM
 * rather than filling memory until the OOM killer picks a process. */
static uint64_t map_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    return pages > 0 ? (uint64_t)pages * page_size() / 2 : UINT64_MAX;
}

static void close_lfd(int rfd)
{
    if (rfd < 0)
        return;
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_CLOSE, rfd, &lfd);
    if (fs)
        route_leave_raw(adafs_close(fs, lfd));
}

/* Replaces the pages [from, to) with a fresh mapping: of an empty memfd
 * (every access SIGBUS, as past the end of a file) or of zeros, shared
 * across fork or not as the mapping is. 0 or -errno. */
int replace_pages(uintptr_t from, uintptr_t to, int prot, bool shared, bool sigbus)
{
    if (from >= to)
        return 0;
    int flags = MAP_FIXED | (shared ? MAP_SHARED : MAP_PRIVATE);
    int fd = -1;
    if (sigbus) {
        fd = memfd_create("adafs-map-end", MFD_CLOEXEC);
        if (fd < 0)
            return -errno;
    } else {
        flags |= MAP_ANONYMOUS;
    }
    void *p = real.mmap((void *)from, to - from, prot, flags, fd, 0);
    int rc = p == MAP_FAILED ? -errno : 0;
    if (fd >= 0)
        real.close(fd);
    return rc;
}

/* A write-back that failed where nobody asked (munmap, exit) is logged. A
 * file another process removed (ENOENT) or replaced (ESTALE) is not: on a
 * local disk those writes would go to a file nobody can open any more. */
static void report(int rc)
{
    if (rc < 0 && rc != -ENOENT && rc != -ESTALE)
        pl_log("writing back a shared mapping of an adafs file: %s; its changes are lost",
               strerror(-rc));
}

static int grow_table(void)
{
    if (nmaps < capmaps)
        return 0;
    size_t cap = capmaps ? 2 * capmaps : 16;
    struct map *grown = realloc(maps, cap * sizeof *grown);
    if (!grown)
        return -ENOMEM;
    maps = grown;
    capmaps = cap;
    return 0;
}

/* Splits the mapping that straddles x (if any) in two at x: bookkeeping
 * only, the memory is untouched. */
static int split_at(uintptr_t x)
{
    for (size_t i = 0; i < nmaps; i++) {
        struct map *m = &maps[i];
        if (x <= m->start || x >= m->end)
            continue;
        if (grow_table() < 0)
            return -ENOMEM;
        m = &maps[i];
        struct map tail = *m;
        tail.start = x;
        tail.off = m->off + (off_t)(x - m->start);
        tail.data_end = m->data_end > x ? m->data_end : x;
        tail.pristine = NULL;
        if (m->pristine) {
            tail.pristine_len = m->end - x;
            if (!(tail.pristine = anon_alloc(tail.pristine_len)))
                return -ENOMEM;
            memcpy(tail.pristine, m->pristine + (x - m->start), tail.pristine_len);
        }
        int lfd;
        adafs *fs = route_enter_fd(ROUTE_FD, m->lfd, &lfd);
        int dup = fs ? adafs_dup(fs, lfd) : -EIO;
        tail.lfd = route_fd_of(route_fd_mount(m->lfd), dup);
        if (tail.lfd < 0 && dup >= 0)
            adafs_close(fs, dup);
        if (fs)
            route_leave_raw(0);
        if (tail.lfd < 0) {
            anon_free(tail.pristine, tail.pristine_len);
            return tail.lfd;
        }
        m->end = x;
        if (m->data_end > x)
            m->data_end = x;
        maps[nmaps++] = tail;
        atomic_store(&live, (int)nmaps);
        return 0;
    }
    return 0;
}

static void remove_at(size_t i)
{
    close_lfd(maps[i].lfd);
    anon_free(maps[i].pristine, maps[i].pristine_len);
    maps[i] = maps[--nmaps];
    atomic_store(&live, (int)nmaps);
}

static bool inside(const struct map *m, uintptr_t a, uintptr_t b)
{
    return m->start >= a && m->end <= b;
}

/* Reads the file's bytes [off, off + *data) into a fresh memfd of exactly
 * that size (less if the file shrinks meanwhile: *data says). */
static int read_into_memfd(adafs *fs, int lfd, off_t off, uint64_t *data, int *out)
{
    int memfd = memfd_create("adafs-map", MFD_CLOEXEC);
    if (memfd < 0)
        return -errno;
    int rc = real.ftruncate(memfd, (off_t)*data) < 0 ? -errno : 0;
    for (uint64_t done = 0; rc == 0 && done < *data;) {
        ssize_t n = adafs_pread_to_fd(fs, lfd, memfd, (off_t)done, *data - done,
                                      off + (off_t)done);
        if (n < 0) {
            rc = (int)n;
        } else if (n == 0) {    /* the file shrank meanwhile: it ends here */
            *data = done;
            if (real.ftruncate(memfd, (off_t)done) < 0)
                rc = -errno;
        } else {
            done += (uint64_t)n;
        }
    }
    if (rc < 0) {
        real.close(memfd);
        return rc;
    }
    *out = memfd;
    return 0;
}

/* Whether a mapping is served from private anonymous memory rather than
 * a memfd: when it can never be written through to the file (MAP_PRIVATE,
 * or MAP_SHARED of a file not open for reading and writing, which
 * mprotect keeps unwritable), so no other process needs its pages. Such
 * memory comes in the kernel's huge pages where it allows them
 * (MADV_HUGEPAGE): a 1 GiB file is 512 page faults and frees instead of
 * 262144 page-cache insertions, page table entries and frees of a memfd
 * (measured: doc/benchmarks.md, issue 26). MAP_HUGETLB keeps the memfd,
 * where the kernel refuses it as for any file. */
static bool private_memory(bool shared, int acc, int flags)
{
    return !(shared && acc == O_RDWR) && !(flags & MAP_HUGETLB);
}

/* With the kernel's own mount of the file system (access=both), the file
 * is mapped through it: pages come on demand and stay coherent between
 * processes, as on a local disk. NULL with errno when the kernel cannot
 * open it (a file removed while open here): then it is mapped from
 * memory as without the mount. */
static void *map_through_kernel(void *addr, size_t len, int prot, int flags, int rfd, off_t off)
{
    char inner[PATH_MAX], full[PATH_MAX];
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_FD, rfd, &lfd);
    int fl = fs ? (int)route_leave_raw(adafs_get_flags(fs, lfd)) : -EIO;
    if (fl < 0 || route_fd_path(rfd, inner, sizeof inner) < 0 ||
        pathres_full_path(route_fd_mount(rfd), inner, full, sizeof full) < 0)
        return NULL;
    int kfd = real.open(full, (fl & O_ACCMODE) | O_CLOEXEC);
    if (kfd < 0)
        return NULL;
    void *p = real.mmap(addr, len, prot, flags, kfd, off);
    int saved = errno;
    real.close(kfd);   /* the mapping holds the file */
    errno = saved;
    return p;
}

void *mapping_map(void *addr, size_t len, int prot, int flags, int rfd, off_t off)
{
    if (pathres_kernel_mount(route_fd_mount(rfd))) {
        void *p = map_through_kernel(addr, len, prot, flags, rfd, off);
        if (p)
            return p;
    }
    int type = flags & MAP_TYPE;
    /* A MAP_FIXED address off a page is the kernel's EINVAL: refused
     * before the mappings there are forgotten (mapping_forget_range), or
     * they stayed mapped but no longer written back. */
    bool fixed_off_page = (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) &&
                          ((uintptr_t)addr & (page_size() - 1));
    if (len == 0 || len > SIZE_MAX - page_size() || off < 0 || fixed_off_page ||
        ((uintptr_t)off & (page_size() - 1)) ||
        (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE)) {
        errno = len > SIZE_MAX - page_size() ? ENOMEM : EINVAL;
        return MAP_FAILED;
    }
    if (type == MAP_SHARED_VALIDATE && (flags & MAP_SYNC)) {
        errno = EOPNOTSUPP; /* mmap(2): MAP_SYNC needs a DAX file system */
        return MAP_FAILED;
    }
    bool shared = type != MAP_PRIVATE;
    int lfd;
    adafs *fs = route_enter_fd(ROUTE_READ, rfd, &lfd);
    if (!fs)
        return MAP_FAILED;
    struct stat st;
    int fl = adafs_get_flags(fs, lfd);
    int rc = fl < 0 ? fl : adafs_fstat(fs, lfd, &st);
    int acc = fl & O_ACCMODE;
    if (rc == 0 && S_ISDIR(st.st_mode))
        rc = -ENODEV;
    else if (rc == 0 && (acc == O_WRONLY || (shared && (prot & PROT_WRITE) && acc != O_RDWR)))
        rc = -EACCES;
    uint64_t data = 0;
    if (rc == 0 && st.st_size > off)
        data = (uint64_t)(st.st_size - off) < len ? (uint64_t)(st.st_size - off) : len;
    /* A writable shared mapping keeps a second copy (write-back diffs). */
    uint64_t need = shared && acc == O_RDWR ? 2 * data : data;
    if (rc == 0 && need > map_limit()) {
        pl_log("mmap of %llu bytes of an adafs file needs more than the mapping limit of "
               "%llu bytes (half the node's memory); a FUSE mount (access=fuse) maps it",
               (unsigned long long)data, (unsigned long long)map_limit());
        rc = -ENOMEM;
    }
    int memfd = -1, keep = -1;
    bool anon = private_memory(shared, acc, flags), direct = false;
    if (rc == 0 && !anon)
        rc = read_into_memfd(fs, lfd, off, &data, &memfd);
    int dup = rc == 0 ? adafs_dup(fs, lfd) : -1;
    if (rc == 0 && (keep = route_fd_of(route_fd_mount(rfd), dup)) < 0) {
        if (dup >= 0)
            adafs_close(fs, dup);
        rc = keep;
    }
    route_leave_raw(0);

    void *p = MAP_FAILED;
    if (rc == 0 && anon) {
        if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
            mapping_forget_range((uintptr_t)addr, len);
        p = map_private_copy(addr, len, prot, flags, keep, off, &data, &direct);
        if (p == MAP_FAILED)
            rc = -errno;
    } else if (rc == 0) {
        if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
            mapping_forget_range((uintptr_t)addr, len);
        int kflags = (flags & ~(MAP_TYPE | MAP_SYNC)) | (shared ? MAP_SHARED : MAP_PRIVATE);
        /* The bytes are all in memory already: their page table entries
         * are made in one go, not by one fault per page as they are
         * touched (a 1 GiB file: 262144 faults). Not for a writable
         * private mapping, where populating would copy every page. */
        if (shared || !(prot & PROT_WRITE))
            kflags |= MAP_POPULATE;
        p = real.mmap(addr, len, prot, kflags, memfd, 0);
        if (p == MAP_FAILED)
            rc = -errno;
    }
    if (memfd >= 0)
        real.close(memfd);   /* the mapping holds the memory */
    if (rc == 0) {
        uintptr_t start = (uintptr_t)p;
        struct map m = { .start = start, .end = start + round_up(len), .data_end = start + data,
                         .off = off, .ino = (uint64_t)st.st_ino, .lfd = keep, .prot = prot,
                         .shared = shared, .file_writable = acc == O_RDWR, .anon = anon,
                         .direct = direct };
        pthread_mutex_lock(&lock);
        if ((shared && (prot & PROT_WRITE) && (rc = make_pristine(&m)) < 0) ||
            (rc = grow_table()) < 0) {
            anon_free(m.pristine, m.pristine_len);
            syscall(SYS_munmap, p, len);
        } else {
            maps[nmaps++] = m;
            atomic_store(&live, (int)nmaps);
            keep = -1;
        }
        pthread_mutex_unlock(&lock);
    }
    close_lfd(keep);
    if (rc < 0) {
        errno = -rc;
        return MAP_FAILED;
    }
    return p;
}

void mapping_forget_range(uintptr_t addr, size_t len)
{
    uintptr_t a = round_down(addr), b = round_up(addr + len);
    pthread_mutex_lock(&lock);
    split_at(a);
    split_at(b);
    for (size_t i = 0; i < nmaps;) {
        if (!inside(&maps[i], a, b)) {
            i++;
            continue;
        }
        report(write_back(&maps[i], maps[i].start, maps[i].end));
        remove_at(i);
    }
    pthread_mutex_unlock(&lock);
}

int mapping_sync_range(uintptr_t addr, size_t len)
{
    uintptr_t a = addr, b = addr + len;
    int result = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++) {
        if (maps[i].end <= a || maps[i].start >= b)
            continue;
        int rc = write_back(&maps[i], a, b);
        if (rc < 0 && result == 0)
            result = rc;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

int mapping_advise(uintptr_t addr, size_t len, int advice)
{
    uintptr_t a = round_down(addr), b = round_up(addr + len);
    int rc = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].end > a && maps[i].start < b && maps[i].anon && advice == MADV_FREE)
            rc = -EINVAL;
    if (rc == 0 && syscall(SYS_madvise, (void *)addr, len, advice) < 0)
        rc = -errno;
    for (size_t i = 0; rc == 0 && i < nmaps; i++) {
        struct map *m = &maps[i];
        uintptr_t from = m->start > a ? m->start : a, to = m->data_end < b ? m->data_end : b;
        if (!m->anon || from >= to)
            continue;
        /* The kernel zeroed those pages: they get the file's bytes again,
         * as a file's mapping would. Pages mapped from a data file are
         * replaced first: one the data file no longer reaches (another
         * process shrank the file) would raise SIGBUS here. */
        if (m->direct)
            rc = replace_pages(from, round_up(to), PROT_READ | PROT_WRITE, false, false);
        else if (!(m->prot & PROT_WRITE))
            kernel_protect(from, to, m->prot | PROT_READ | PROT_WRITE);
        if (rc == 0)
            rc = read_file_into(m, from, to);
        if (!(m->prot & PROT_WRITE))
            kernel_protect(from, to, m->prot);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int flatten(struct map *m);

int mapping_protect(uintptr_t addr, size_t len, int prot)
{
    uintptr_t a = round_down(addr), b = round_up(addr + len);
    pthread_mutex_lock(&lock);
    int rc = 0;
    /* A shared mapping of a file not open for writing may not become
     * writable (mprotect(2): EACCES), whatever the memfd would allow. */
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].end > a && maps[i].start < b && maps[i].shared && !maps[i].file_writable &&
            (prot & PROT_WRITE))
            rc = -EACCES;
    if (rc == 0 && ((rc = split_at(a)) < 0 || (rc = split_at(b)) < 0))
        rc = -ENOMEM;
    for (size_t i = 0; rc == 0 && i < nmaps; i++) {
        struct map *m = &maps[i];
        if (!inside(m, a, b))
            continue;
        if (prot & PROT_WRITE)
            rc = make_pristine(m);
        /* Pages mapped from a data file on a noexec file system cannot
         * become executable (the kernel's EACCES): the range becomes
         * anonymous memory holding the same bytes first, as for mremap. */
        if (rc == 0 && (prot & PROT_EXEC) && !(m->prot & PROT_EXEC) && m->direct &&
            m->data_end > m->start)
            rc = flatten(m);
        m->prot = prot;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Makes a mapping with pieces mapped from data files one of anonymous
 * memory holding the same bytes (the program's writes to its private
 * pages included). Called with lock held. 0 or -errno. */
static int flatten(struct map *m)
{
    size_t len = round_up(m->data_end) - m->start;
    char *copy = anon_alloc(len);
    if (!copy)
        return -ENOMEM;
    syscall(SYS_madvise, copy, len, MADV_HUGEPAGE);
    if (!(m->prot & PROT_READ))
        kernel_protect(m->start, m->data_end, m->prot | PROT_READ);
    /* Not memcpy: a page past the end of a data file that another process
     * shrank raises SIGBUS; process_vm_readv stops there instead, and the
     * mapping ends there, as the file's own mapping would. */
    struct iovec local = { copy, m->data_end - m->start };
    struct iovec remote = { (void *)m->start, m->data_end - m->start };
    ssize_t got = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
    if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
        memcpy(copy, (void *)m->start, m->data_end - m->start);
        got = (ssize_t)(m->data_end - m->start);
    }
    int rc = got < 0 ? -errno : 0;
    if (rc == 0) {
        uintptr_t copied = m->start + (uintptr_t)got;
        void *q = (void *)syscall(SYS_mremap, copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
                                  m->start);
        rc = q == MAP_FAILED ? -errno : 0;
        if (rc == 0 && copied < m->data_end) {
            rc = replace_pages(round_up(copied), round_up(m->data_end), m->prot, false, true);
            m->data_end = copied;
        }
    }
    if (rc < 0)
        anon_free(copy, len);
    kernel_protect(m->start, round_up(m->data_end), m->prot);
    if (rc == 0)
        m->direct = false;
    return rc;
}

int mapping_before_remap(uintptr_t addr, size_t len)
{
    uintptr_t a = round_down(addr), b = round_up(addr + len);
    int rc = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; rc == 0 && i < nmaps; i++)
        if (maps[i].direct && maps[i].end > a && maps[i].start < b)
            rc = flatten(&maps[i]);
    pthread_mutex_unlock(&lock);
    return rc;
}

void mapping_moved(uintptr_t old, size_t old_len, uintptr_t new, size_t new_len)
{
    uintptr_t a = old, b = round_up(old + old_len), nb = new + round_up(new_len);
    pthread_mutex_lock(&lock);
    split_at(a);
    split_at(b);
    for (size_t i = 0; i < nmaps;) {
        struct map *m = &maps[i];
        if (!inside(m, a, b)) {
            i++;
            continue;
        }
        uintptr_t start = m->start - a + new;
        if (start >= nb) {   /* cut off by a shrink (written back before) */
            remove_at(i);
            continue;
        }
        uintptr_t data = m->data_end - m->start;
        size_t span = m->end == b ? nb - start : m->end - m->start;
        m->start = start;
        m->end = start + span;
        if (data > span)
            data = span;
        m->data_end = start + data;
        i++;
        if (m->pristine && span > m->pristine_len) {
            void *p = (void *)syscall(SYS_mremap, m->pristine, m->pristine_len, span, MREMAP_MAYMOVE);
            if (p == MAP_FAILED) {
                pl_log("cannot follow the growth of a mapping of an adafs file: %s",
                       strerror(errno));
                continue;
            }
            m->pristine = p;
            m->pristine_len = span;
        }
        /* Grown: pages the file now fills hold its bytes, not SIGBUS. */
        struct stat st;
        int lfd;
        adafs *fs = route_enter_fd(ROUTE_STAT, m->lfd, &lfd);
        int rc = fs ? (int)route_leave_raw(adafs_fstat(fs, lfd, &st)) : -EIO;
        uintptr_t file_end = rc == 0 && st.st_size > m->off
                           ? m->start + (uintptr_t)(st.st_size - m->off) : m->start;
        if (rc == 0 && file_end > m->end)
            file_end = m->end;
        if (rc == 0 && file_end > m->data_end)
            rc = fill_grown(m, file_end);
        if (rc < 0)
            pl_log("cannot read the grown part of a mapping of an adafs file: %s",
                   strerror(-rc));
    }
    pthread_mutex_unlock(&lock);
}

/* Zeros [from, to) of one page of m, mapped from a data file: not with
 * memset, since a page the data file no longer reaches (another process
 * shrank the file) raises SIGBUS; such a page holds zeros on the file too,
 * and becomes a page of zeros. 0 or -errno. */
static int zero_direct(struct map *m, uintptr_t from, uintptr_t to)
{
    static const char zeros[4096];
    for (uintptr_t x = from; x < to;) {
        size_t n = to - x < sizeof zeros ? to - x : sizeof zeros;
        struct iovec local = { (void *)zeros, n }, remote = { (void *)x, n };
        ssize_t put = syscall(SYS_process_vm_writev, getpid(), &local, 1, &remote, 1, 0);
        if (put < 0 && (errno == ENOSYS || errno == EPERM)) {
            memset((void *)x, 0, n);
            put = (ssize_t)n;
        }
        if (put <= 0)
            return replace_pages(round_down(x), round_up(to), PROT_READ | PROT_WRITE, m->shared,
                                 false);
        x += (size_t)put;
    }
    return 0;
}

void mapping_resized(int mount, uint64_t ino, uint64_t new_size)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++) {
        struct map *m = &maps[i];
        if (m->ino != ino || route_fd_mount(m->lfd) != mount)
            continue;
        uint64_t span = m->end - m->start;
        uint64_t keep = new_size > (uint64_t)m->off ? new_size - (uint64_t)m->off : 0;
        uintptr_t de = m->start + (keep < span ? keep : span);
        int rc = 0;
        if (de < m->data_end) {
            /* Cut: the rest of the last page reads as zeros, whole pages
             * beyond raise SIGBUS, as after ftruncate on a local disk. */
            uintptr_t cut_page = round_up(de);
            uintptr_t zero_to = m->data_end < cut_page ? m->data_end : cut_page;
            if (de < zero_to) {
                bool rw = (m->prot & (PROT_READ | PROT_WRITE)) == (PROT_READ | PROT_WRITE);
                if (!rw)
                    kernel_protect(de, zero_to, PROT_READ | PROT_WRITE);
                if (m->direct)
                    rc = zero_direct(m, de, zero_to);
                else
                    memset((void *)de, 0, zero_to - de);
                if (!rw)
                    kernel_protect(de, zero_to, m->prot);
            }
            if (m->pristine)
                memset(m->pristine + (de - m->start), 0, m->data_end - de);
            if (rc == 0)
                rc = replace_pages(cut_page, round_up(m->data_end), m->prot, m->shared, true);
        } else if (de > m->data_end) {
            /* Extended: pages that raised SIGBUS now read zeros. */
            rc = replace_pages(round_up(m->data_end), round_up(de), m->prot, m->shared, false);
        }
        if (rc < 0)
            pl_log("cannot follow a size change of a mapped adafs file: %s", strerror(-rc));
        else
            m->data_end = de;
    }
    pthread_mutex_unlock(&lock);
}

void mapping_tell_kernel(int m, const char *inner)
{
    char full[PATH_MAX];
    struct stat st;
    if (pathres_kernel_mount(m) && pathres_full_path(m, inner, full, sizeof full) >= 0)
        real.stat(full, &st);   /* a stat of a path is a lookup: this asks adafs-fuse */
}

void mapping_sync_all(void)
{
    if (!mapping_count())
        return;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps; i++)
        report(write_back(&maps[i], maps[i].start, maps[i].end));
    pthread_mutex_unlock(&lock);
}

void mapping_sync_before_exec(void)
{
    if (getpid() == space_pid)
        mapping_sync_all();
}

static void lock_for_fork(void)
{
    pthread_mutex_lock(&lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&lock);
}

static void unlock_in_child(void)
{
    space_pid = getpid();
    pthread_mutex_unlock(&lock);
}

void mapping_register_atfork(void)
{
    space_pid = getpid();
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_in_child);
}
