/* mmap_check: what mmap of files in DIR gives, checked against what a
 * local disk gives.
 *
 *   mmap_check DIR MODE        MODE: local, preload, fuse or both
 *
 * A plain program: run on a local directory (MODE local) it checks the
 * expectations themselves; under libadafs_preload.so (MODE preload) the
 * interposer's mappings served from memory; on an adafs-fuse mount (MODE
 * fuse) the kernel's page cache over FUSE; under the interposer with the
 * mount there too (MODE both, a job's access=both) the interposer mapping
 * through the kernel. Every check holds in every mode, except the few
 * that doc/preload.md lists as not coherent through the interposer (a
 * mapping is a snapshot taken at mmap time; with both, a write() through
 * the interposer reaches a mapping when the kernel next looks at the
 * file): those check the documented behaviour. Prints TAP. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static const char *dir;
static bool preload, both, fuse;
static size_t page;

static char *path_of(const char *name)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, 4096, "%s/%s", dir, name);
    return b;
}

static char pattern(size_t i)
{
    return (char)('a' + (i * 7 + i / 4096) % 26);
}

/* A file of size bytes of pattern(); returns 0 on success. */
static int make_file(const char *name, size_t size)
{
    int fd = open(path_of(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return -1;
    char *buf = malloc(size ? size : 1);
    for (size_t i = 0; i < size; i++)
        buf[i] = pattern(i);
    ssize_t n = write(fd, buf, size);
    free(buf);
    return close(fd) == 0 && n == (ssize_t)size ? 0 : -1;
}

/* The byte at off of the file, read with pread (-1: beyond its end). */
static int file_byte(const char *name, off_t off)
{
    int fd = open(path_of(name), O_RDONLY);
    unsigned char c;
    ssize_t n = fd < 0 ? -1 : pread(fd, &c, 1, off);
    if (fd >= 0)
        close(fd);
    return n == 1 ? c : -1;
}

static off_t file_size(const char *name)
{
    struct stat st;
    return stat(path_of(name), &st) == 0 ? st.st_size : -1;
}

static sigjmp_buf probe_env;
static volatile sig_atomic_t probe_sig;

static void on_fault(int sig)
{
    probe_sig = sig;
    siglongjmp(probe_env, 1);
}

/* Reads the byte at p: returns it, or -SIGBUS / -SIGSEGV. */
static int probe(volatile const char *p)
{
    struct sigaction sa = { .sa_handler = on_fault }, old_bus, old_segv;
    sigaction(SIGBUS, &sa, &old_bus);
    sigaction(SIGSEGV, &sa, &old_segv);
    int result;
    probe_sig = 0;
    if (sigsetjmp(probe_env, 1) == 0)
        result = (unsigned char)*p;
    else
        result = -probe_sig;
    sigaction(SIGBUS, &old_bus, NULL);
    sigaction(SIGSEGV, &old_segv, NULL);
    return result;
}

static bool matches(const char *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (p[i - from] != pattern(i))
            return false;
    return true;
}

static void test_private(void)
{
    size_t size = 3 * page + 100;
    tap_ok(make_file("priv", size) == 0, "a file of 3 pages and 100 bytes");
    int fd = open(path_of("priv"), O_RDONLY);
    char *p = mmap(NULL, 5 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (!tap_ok(p != MAP_FAILED, "MAP_PRIVATE PROT_READ of 5 pages of it")) {
        printf("#   %s\n", strerror(errno));
        close(fd);
        return;
    }
    close(fd);   /* the mapping outlives its descriptor */
    tap_ok(matches(p, 0, size), "the mapping holds the file's bytes after close()");
    tap_is_int(probe(p + size), 0, "the rest of the last page reads zeros");
    tap_is_int(probe(p + 4 * page - 1), 0, "up to the page's end");
    tap_is_int(probe(p + 4 * page), -SIGBUS, "a page wholly beyond the end raises SIGBUS");
    munmap(p, 5 * page);

    fd = open(path_of("priv"), O_RDONLY);
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    tap_ok(p != MAP_FAILED, "MAP_PRIVATE PROT_WRITE of a read-only descriptor");
    if (p != MAP_FAILED) {
        memset(p + page, 'Z', page);
        tap_ok(p[page] == 'Z' && p[0] == pattern(0), "writes land in the private copy");
        tap_is_int(munmap(p, size), 0, "munmap of a private mapping");
    }
    close(fd);
    tap_is_int(file_byte("priv", (off_t)page), (unsigned char)pattern(page),
               "a private mapping's writes never reach the file");

    fd = open(path_of("priv"), O_RDONLY);
    p = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, (off_t)page);
    tap_ok(p != MAP_FAILED && matches(p, page, 3 * page), "a mapping at an offset of one page");
    if (p != MAP_FAILED)
        munmap(p, 2 * page);
    errno = 0;
    tap_ok(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED && errno == EINVAL,
           "an offset that is not a multiple of the page size: EINVAL");
    p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, (off_t)(8 * page));
    tap_ok(p != MAP_FAILED && probe(p) == -SIGBUS,
           "a mapping wholly beyond the end maps, and raises SIGBUS");
    if (p != MAP_FAILED)
        munmap(p, page);
    close(fd);
}

/* madvise discarding pages, and a mapping MAP_FIXED over another: as on a
 * local disk (the interposer's mappings from anonymous memory give the
 * file's bytes again, not zeros). */
static void test_advise_fixed(void)
{
    size_t size = 2 * page + 50;
    make_file("adv", size);
    int fd = open(path_of("adv"), O_RDONLY);
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (!tap_ok(p != MAP_FAILED, "MAP_PRIVATE PROT_WRITE for madvise")) {
        close(fd);
        return;
    }
    memset(p + page, 'Z', page);
    tap_is_int(madvise(p, size, MADV_DONTNEED), 0, "MADV_DONTNEED of a written private mapping");
    tap_ok(matches(p, 0, size), "it reads the file's bytes again, not the writes or zeros");
    errno = 0;
    tap_ok(madvise(p, page, MADV_FREE) == -1 && errno == EINVAL,
           "MADV_FREE of a file's mapping: EINVAL");
    munmap(p, size);
    p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    tap_ok(p != MAP_FAILED && madvise(p, size, MADV_DONTNEED) == 0 && matches(p, 0, size),
           "MADV_DONTNEED of a read-only shared mapping: the file's bytes");
    if (p != MAP_FAILED)
        munmap(p, size);

    char *area = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(area, 'q', 4 * page);
    p = mmap(area + page, 2 * page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)page);
    tap_ok(p == area + page && matches(p, page, size) && probe(p + size - page) == 0 &&
           area[0] == 'q' && area[3 * page] == 'q',
           "MAP_FIXED over anonymous memory: the file's bytes there, the rest untouched");
    char *q = p == area + page ? mmap(p, page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) : MAP_FAILED;
    tap_ok(q == p && matches(q, 0, page) && matches(p + page, 2 * page, size),
           "MAP_FIXED over a mapping of the file: replaces just that page");
    munmap(area, 4 * page);
    close(fd);
}

static void test_access_modes(void)
{
    make_file("modes", 2 * page);
    int ro = open(path_of("modes"), O_RDONLY), wo = open(path_of("modes"), O_WRONLY);
    errno = 0;
    tap_ok(mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0) == MAP_FAILED &&
           errno == EACCES, "MAP_SHARED PROT_WRITE of a read-only descriptor: EACCES");
    errno = 0;
    tap_ok(mmap(NULL, page, PROT_READ, MAP_SHARED, wo, 0) == MAP_FAILED && errno == EACCES,
           "mmap of a write-only descriptor: EACCES");
    char *p = mmap(NULL, page, PROT_READ, MAP_SHARED, ro, 0);
    tap_ok(p != MAP_FAILED && matches(p, 0, page), "MAP_SHARED PROT_READ of a read-only descriptor");
    errno = 0;
    tap_ok(p != MAP_FAILED && mprotect(p, page, PROT_READ | PROT_WRITE) == -1 && errno == EACCES,
           "mprotect PROT_WRITE of it: EACCES");
    if (p != MAP_FAILED)
        munmap(p, page);
    close(ro);
    close(wo);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    errno = 0;
    tap_ok(mmap(NULL, page, PROT_READ, MAP_PRIVATE, dfd, 0) == MAP_FAILED && errno == ENODEV,
           "mmap of a directory: ENODEV");
    close(dfd);
}

static void test_shared_write(void)
{
    make_file("shared", 2 * page);
    int fd = open(path_of("shared"), O_RDWR);
    char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!tap_ok(p != MAP_FAILED, "MAP_SHARED PROT_READ|PROT_WRITE")) {
        close(fd);
        return;
    }
    memcpy(p + 10, "msync", 5);
    tap_is_int(msync(p, 2 * page, MS_SYNC), 0, "msync");
    tap_is_int(file_byte("shared", 10), 'm', "msync wrote the change to the file");
    memcpy(p + page + 20, "munmap", 6);
    close(fd);
    tap_is_int(munmap(p, 2 * page), 0, "munmap after the descriptor was closed");
    tap_is_int(file_byte("shared", (off_t)page + 20), 'm', "munmap wrote the change to the file");
    tap_is_int(file_size("shared"), (long long)(2 * page), "the size is unchanged");

    /* a part of a mapping unmapped: the rest stays, and both parts write back */
    fd = open(path_of("shared"), O_RDWR);
    p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    p[5] = 'F';
    p[page + 5] = 'S';
    tap_is_int(munmap(p, page), 0, "munmap of the first page only");
    tap_is_int(file_byte("shared", 5), 'F', "the unmapped page was written back");
    p[page + 6] = 'T';
    tap_is_int(munmap(p + page, page), 0, "munmap of the second page");
    tap_ok(file_byte("shared", (off_t)page + 5) == 'S' && file_byte("shared", (off_t)page + 6) == 'T',
           "and it was written back too");

    /* exit() writes back what was never synced */
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(path_of("shared"), O_RDWR);
        char *c = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
        if (c == MAP_FAILED)
            _exit(2);
        memcpy(c + 100, "exit", 4);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && file_byte("shared", 100) == 'e',
           "a process's exit writes back its shared mapping");

    /* a shared mapping forked: the child sees what the parent wrote before
     * the fork, and the parent what the child writes (one set of pages) */
    fd = open(path_of("shared"), O_RDWR);
    p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    p[200] = 'P';
    pid = fork();
    if (pid == 0) {
        int saw = p[200] == 'P';
        p[201] = 'C';
        _exit(saw ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child sees the parent's writes");
    tap_is_int(p[201], 'C', "and the parent sees the child's");
    munmap(p, page);
    tap_ok(file_byte("shared", 200) == 'P' && file_byte("shared", 201) == 'C',
           "both reach the file");

    /* MAP_FIXED at an address off a page: EINVAL, and the mapping there is
     * untouched, its later writes still reaching the file. */
    fd = open(path_of("shared"), O_RDWR);
    p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    errno = 0;
    void *off_page = mmap(p + 1, page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    tap_ok(off_page == MAP_FAILED && errno == EINVAL,
           "MAP_FIXED at an address off a page: EINVAL (errno %d)", errno);
    off_page = mmap(p + 1, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    tap_ok(off_page == MAP_FAILED, "shared too");
    close(fd);
    errno = 0;
    off_page = mmap(p + 1, page, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
    tap_ok(off_page == MAP_FAILED && errno == EINVAL, "anonymous too (errno %d)", errno);
    errno = 0;
    tap_ok(munmap(p + 1, page) < 0 && errno == EINVAL, "munmap off a page: EINVAL (errno %d)",
           errno);
    errno = 0;
    off_page = mremap(p + 1, page, page, 0);
    tap_ok(off_page == MAP_FAILED && errno == EINVAL, "mremap off a page: EINVAL (errno %d)",
           errno);
    p[400] = 'Y';
    munmap(p, 2 * page);
    tap_is_int(file_byte("shared", 400), 'Y', "the mapping there still writes back at munmap");

    /* mprotect to writable, then a MAP_FIXED mapping over it */
    fd = open(path_of("shared"), O_RDWR);
    p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    tap_is_int(mprotect(p, page, PROT_READ | PROT_WRITE), 0, "mprotect PROT_WRITE of a shared mapping");
    p[300] = 'X';
    void *q = mmap(p, page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tap_ok(q == p && file_byte("shared", 300) == 'X',
           "an anonymous MAP_FIXED mapping over it writes it back first");
    munmap(q, page);
}

/* ftruncate while mapped: pages beyond the new end raise SIGBUS, the rest
 * of the cut page reads zeros; extended again, the pages read zeros. */
static void test_truncate(void)
{
    make_file("trunc", 3 * page);
    int fd = open(path_of("trunc"), O_RDWR);
    char *p = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *q = mmap(NULL, 3 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (!tap_ok(p != MAP_FAILED && q != MAP_FAILED, "a shared and a private mapping of 3 pages")) {
        close(fd);
        return;
    }
    tap_is_int(ftruncate(fd, (off_t)(page + page / 2)), 0, "ftruncate to 1.5 pages while mapped");
    tap_is_int(probe(p + 2 * page), -SIGBUS, "shared: the page beyond the new end raises SIGBUS");
    tap_is_int(probe(q + 2 * page), -SIGBUS, "private: likewise");
    tap_is_int(probe(p + page + page / 2), 0, "shared: the cut page reads zeros beyond the end");
    tap_is_int(probe(q + page + page / 2), 0, "private: likewise");
    tap_is_int(probe(p + page + 10), (unsigned char)pattern(page + 10),
               "the bytes before the new end are kept");
    tap_is_int(ftruncate(fd, (off_t)(3 * page)), 0, "ftruncate back to 3 pages");
    tap_is_int(probe(p + 2 * page), 0, "shared: the page is back, reading zeros");
    p[2 * page + 1] = 'E';
    munmap(p, 3 * page);
    munmap(q, 3 * page);
    tap_is_int(file_byte("trunc", (off_t)(2 * page + 1)), 'E',
               "a write into the extended page reaches the file");

    /* another process truncates: a local disk (and FUSE) raise SIGBUS at
     * once; through the interposer the mapping is a snapshot */
    p = mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, fd, 0);
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(path_of("trunc"), O_RDWR);
        _exit(ftruncate(cfd, (off_t)page) == 0 ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process truncates it to one page");
    if (preload)
        tap_is_int(probe(p + 2 * page), 0,
                   "through the interposer the mapping keeps its bytes (documented)");
    else
        tap_is_int(probe(p + 2 * page), -SIGBUS, "the page beyond the new end raises SIGBUS");
    munmap(p, 3 * page);
    close(fd);
}

/* Two mappings of one file, and write(): coherent on a local disk and on
 * FUSE; through the interposer only after msync and a new mmap. */
static void test_coherence(void)
{
    make_file("coh", page);
    int fd = open(path_of("coh"), O_RDWR);
    char *a = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *b = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!tap_ok(a != MAP_FAILED && b != MAP_FAILED, "two shared mappings of one file")) {
        close(fd);
        return;
    }
    a[0] = 'A';
    tap_is_int(pwrite(fd, "W", 1, 1), 1, "a pwrite to the file");
    if (preload) {
        tap_ok(b[0] == pattern(0) && a[1] == pattern(1),
               "through the interposer each mapping is a snapshot (documented)");
    } else if (both) {
        tap_ok(b[0] == 'A', "a write through one mapping shows in the other (the pwrite went "
               "around the kernel: documented)");
    } else {
        tap_ok(b[0] == 'A' && a[1] == 'W', "a write through one mapping and pwrite show in both");
    }
    msync(a, page, MS_SYNC);
    munmap(a, page);
    munmap(b, page);
    char *c = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    tap_ok(c != MAP_FAILED && c[0] == 'A', "after msync and munmap, a new mapping sees the write");
    if (c != MAP_FAILED)
        munmap(c, page);
    close(fd);
}

/* Python's mmap.resize and others: ftruncate, then mremap the mapping. */
static void test_mremap(void)
{
    make_file("grow", page);
    int fd = open(path_of("grow"), O_RDWR);
    char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    tap_ok(p != MAP_FAILED && ftruncate(fd, (off_t)(3 * page)) == 0, "a mapped file grown to 3 pages");
    char *q = mremap(p, page, 3 * page, MREMAP_MAYMOVE);
    if (!tap_ok(q != MAP_FAILED, "mremap of the mapping to 3 pages")) {
        close(fd);
        return;
    }
    tap_ok(q[0] == pattern(0) && probe(q + 2 * page) == 0, "it keeps its bytes and maps the new pages");
    q[2 * page + 7] = 'G';
    munmap(q, 3 * page);
    close(fd);
    tap_is_int(file_byte("grow", (off_t)(2 * page + 7)), 'G', "a write into the new part reaches the file");
}

/* Whether the page at p is a file's page (/proc/self/maps names a file
 * for it): a local disk's and the kernel mount's mappings are; through
 * the interposer, the pieces of a private mapping that a server of this
 * node holds are mapped from its data file. */
static bool from_file(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    bool file = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long from, to;
        int path = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &from, &to, &path) < 2 ||
            (uintptr_t)p < from || (uintptr_t)p >= to)
            continue;
        file = path > 0 && line[path] == '/' && !strstr(line, "/memfd:");
        break;
    }
    if (f)
        fclose(f);
    return file;
}

/* A private mapping of a file of several chunks (the tests' instances
 * have 64 KiB chunks, spread over the servers), read-only and then
 * written: through the interposer its pieces are mapped from the
 * servers' data files (doc/preload.md); fork, MAP_FIXED, mprotect, a
 * partial munmap, mremap, MADV_DONTNEED, and another process's write,
 * truncate and replacement of the file give what a local disk gives. */
static void test_large_private(void)
{
    size_t size = 75 * page + 100, mlen = 77 * page;
    tap_ok(make_file("large", size) == 0, "a file of 75 pages and 100 bytes");
    int fd = open(path_of("large"), O_RDONLY);
    char *p = mmap(NULL, mlen, PROT_READ, MAP_PRIVATE, fd, 0);
    if (!tap_ok(p != MAP_FAILED, "MAP_PRIVATE PROT_READ of 77 pages of it")) {
        close(fd);
        return;
    }
    tap_ok(matches(p, 0, size), "the mapping holds the file's bytes");
    tap_ok(probe(p + size) == 0 && probe(p + 76 * page - 1) == 0,
           "the rest of the last page reads zeros");
    tap_is_int(probe(p + 76 * page), -SIGBUS, "the page beyond the end raises SIGBUS");
    tap_ok(from_file(p) && from_file(p + 40 * page), "its pages are a file's pages");
    pid_t pid = fork();
    if (pid == 0)
        _exit(matches(p, 0, size) && probe(p + 76 * page) == -SIGBUS ? 0 : 1);
    int status;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child sees the same");

    tap_is_int(mprotect(p + 10 * page, 20 * page, PROT_READ | PROT_WRITE), 0,
               "mprotect of 20 pages inside it to PROT_WRITE");
    memset(p + 10 * page, 'Z', 20 * page);
    tap_ok(p[10 * page] == 'Z' && p[30 * page - 1] == 'Z' && matches(p, 0, 10 * page) &&
           matches(p + 30 * page, 30 * page, size), "writes land there, the rest is the file's");
    tap_is_int(file_byte("large", (off_t)(10 * page)), (unsigned char)pattern(10 * page),
               "the writes do not reach the file");
    tap_is_int(madvise(p + 10 * page, 20 * page, MADV_DONTNEED), 0, "MADV_DONTNEED of them");
    tap_ok(matches(p, 0, size), "the file's bytes are back");
    tap_is_int(munmap(p + 5 * page, page), 0, "munmap of one page in the middle");
    tap_ok(matches(p, 0, 5 * page) && matches(p + 6 * page, 6 * page, size),
           "the pages around it keep their bytes");
    tap_is_int(munmap(p, mlen), 0, "munmap of the rest");

    p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    char *q = p == MAP_FAILED ? MAP_FAILED : mremap(p, size, size + 2 * page, MREMAP_MAYMOVE);
    tap_ok(q != MAP_FAILED && matches(q, 0, size), "mremap growing it: it keeps its bytes");
    char *r = q == MAP_FAILED ? MAP_FAILED : mremap(q, size + 2 * page, 30 * page, 0);
    tap_ok(r == q && matches(r, 0, 30 * page), "mremap shrinking it in place");
    if (r != MAP_FAILED)
        munmap(r, 30 * page);

    char *area = mmap(NULL, 80 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(area, 'q', 80 * page);
    p = mmap(area + page, 60 * page, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, (off_t)(8 * page));
    tap_ok(p == area + page && matches(p, 8 * page, 68 * page) && area[0] == 'q' &&
           area[61 * page] == 'q', "MAP_FIXED over anonymous memory at an offset of 8 pages");
    munmap(area, 80 * page);

    /* This process truncates and extends the file under it: as on a
     * local disk (doc/preload.md, mmap). */
    int wfd = open(path_of("large"), O_RDWR);
    p = mmap(NULL, 76 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (tap_ok(p != MAP_FAILED && wfd >= 0 && ftruncate(wfd, (off_t)(20 * page + page / 2)) == 0,
               "ftruncate to 20.5 pages under a private mapping")) {
        tap_ok(probe(p + 21 * page) == -SIGBUS && probe(p + 60 * page) == -SIGBUS,
               "the pages beyond the new end raise SIGBUS");
        tap_ok(probe(p + 20 * page + page / 2) == 0 && matches(p, 0, 20 * page + page / 2),
               "the cut page reads zeros beyond the end, the bytes before it are kept");
        tap_ok(ftruncate(wfd, (off_t)size) == 0 && probe(p + 30 * page) == 0,
               "extended again, the pages read zeros");
    }
    if (p != MAP_FAILED)
        munmap(p, 76 * page);
    if (wfd >= 0)
        close(wfd);
    make_file("large", size);

    /* Another process writes and truncates under a private mapping: the
     * pages it has not written follow the file on a local disk, and so
     * do the pages mapped from a data file through the interposer (the
     * rest is a snapshot, doc/preload.md). The kernel mount's views of
     * writes made around it are test_fuse_mount.sh's concern. */
    p = mmap(NULL, 76 * page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED && !fuse && !both) {
        bool file = from_file(p + 50 * page);
        pid = fork();
        if (pid == 0) {
            int cfd = open(path_of("large"), O_RDWR);
            _exit(cfd >= 0 && pwrite(cfd, "W", 1, (off_t)(50 * page + 3)) == 1 &&
                  ftruncate(cfd, (off_t)(40 * page)) == 0 ? 0 : 1);
        }
        waitpid(pid, &status, 0);
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "another process writes into page 50, then truncates the file to 40 pages");
        if (file)
            tap_is_int(probe(p + 50 * page), -SIGBUS, "the page beyond the new end raises SIGBUS");
        else
            tap_is_int(probe(p + 50 * page), (unsigned char)pattern(50 * page),
                       "copied through the interposer: the page keeps its bytes (documented)");
        tap_ok(matches(p, 0, 40 * page), "the pages before it keep the file's bytes");
    }
    if (p != MAP_FAILED)
        munmap(p, 76 * page);
    close(fd);

    /* The file removed and another made under its name: the mapping keeps
     * the bytes of the file it maps. Not through the kernel mount, which
     * reaches files by their path (doc/fuse.md): there the pages of the
     * removed file raise SIGBUS. */
    if (fuse || both) {
        unlink(path_of("large"));
        return;
    }
    make_file("large", size);
    fd = open(path_of("large"), O_RDONLY);
    p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    bool replaced = unlink(path_of("large")) == 0;
    fd = open(path_of("large"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    char *other = malloc(size);
    memset(other, 'x', size);
    replaced = replaced && fd >= 0 && write(fd, other, size) == (ssize_t)size && close(fd) == 0;
    free(other);
    tap_ok(replaced, "the file removed and another of its size written under its name");
    tap_ok(p != MAP_FAILED && matches(p, 0, size), "the mapping keeps the removed file's bytes");
    if (p != MAP_FAILED)
        munmap(p, size);
    unlink(path_of("large"));
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "local") && strcmp(argv[2], "preload") &&
                      strcmp(argv[2], "fuse") && strcmp(argv[2], "both"))) {
        fprintf(stderr, "usage: mmap_check DIR local|preload|fuse|both\n");
        return 2;
    }
    dir = argv[1];
    preload = strcmp(argv[2], "preload") == 0;
    both = strcmp(argv[2], "both") == 0;
    fuse = strcmp(argv[2], "fuse") == 0;
    page = (size_t)sysconf(_SC_PAGESIZE);
    test_private();
    test_advise_fixed();
    test_access_modes();
    test_shared_write();
    test_truncate();
    test_coherence();
    test_mremap();
    test_large_private();
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}
