/* mapping_int: what mapping.c (the table of mappings, mapping.h),
 * mapping_sync.c (a mapping's memory and its file) and mapping_fill.c
 * (filling a private mapping) share: page arithmetic, the kernel's calls
 * on memory, made directly (the wrappers would take the table's lock),
 * and the table's entries. */
#ifndef ADAFS_PRELOAD_MAPPING_INT_H
#define ADAFS_PRELOAD_MAPPING_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline uintptr_t page_size(void)
{
    static uintptr_t page;
    if (!page)
        page = (uintptr_t)sysconf(_SC_PAGESIZE);
    return page;
}

static inline uintptr_t round_up(uintptr_t x)
{
    return (x + page_size() - 1) & ~(page_size() - 1);
}

static inline uintptr_t round_down(uintptr_t x)
{
    return x & ~(page_size() - 1);
}

/* The kernel's calls on memory: our wrappers would take the table lock. */
static inline int kernel_protect(uintptr_t from, uintptr_t to, int prot)
{
    return (int)syscall(SYS_mprotect, (void *)round_down(from), round_up(to) - round_down(from),
                        prot);
}

/* Private anonymous memory of our own (a pristine copy), made directly. */
static inline void *anon_alloc(size_t len)
{
    void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void anon_free(void *p, size_t len)
{
    if (p)
        syscall(SYS_munmap, p, len);
}

/* One mapping of an adafs file in the table (mapping.c). */
struct map {
    uintptr_t start, end;   /* page-aligned */
    uintptr_t data_end;     /* start + the bytes of the file behind it; SIGBUS past its page */
    off_t off;              /* file offset of start */
    uint64_t ino;           /* the file's identity (st_ino: its data key) */
    int lfd;                /* a descriptor of the file (route.h's), kept with the mapping */
    int prot;
    bool shared;
    bool file_writable;     /* the file was open for reading and writing */
    bool anon;              /* private anonymous memory, not a memfd (private_memory) */
    bool direct;            /* anon, with pieces mapped from data files (map_data_file) */
    /* A shared mapping made writable: its bytes as last read from or
     * written to the file (anonymous memory, end - start bytes), so that
     * write-back sends only what this process changed. NULL otherwise. */
    char *pristine;
    size_t pristine_len;
};

/* mapping_sync.c, called with the table's lock held. make_pristine: gives
 * m its pristine copy (it may be written from now on). write_back: writes
 * what this process changed in [a, b) of a shared mapping back to its file,
 * up to the file's present size. fill_grown: reads the file's bytes into
 * [m->data_end, upto) of a grown mapping; read_file_into: the file's bytes
 * behind [from, to) of m into it. Each 0 or -errno. */
int make_pristine(struct map *m);
int write_back(struct map *m, uintptr_t a, uintptr_t b);
int fill_grown(struct map *m, uintptr_t upto);
int read_file_into(const struct map *m, uintptr_t from, uintptr_t to);

/* mapping.c: fresh pages over [from, to), of zeros or SIGBUS. */
int replace_pages(uintptr_t from, uintptr_t to, int prot, bool shared, bool sigbus);

/* mapping_fill.c: a private mapping of the file's bytes. */
void *map_private_copy(void *addr, size_t len, int prot, int flags, int lfd, off_t off,
                       uint64_t *data, bool *direct);

#endif
