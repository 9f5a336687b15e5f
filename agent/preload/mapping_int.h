/* mapping_int: what mapping.c (the table of mappings, mapping.h) and
 * mapping_fill.c (filling a private mapping) share: page arithmetic and
 * the kernel's calls on memory, made directly (the wrappers would take
 * the table's lock). */
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

/* mapping.c: fresh pages over [from, to), of zeros or SIGBUS. */
int replace_pages(uintptr_t from, uintptr_t to, int prot, bool shared, bool sigbus);

/* mapping_fill.c: a private mapping of the file's bytes. */
void *map_private_copy(void *addr, size_t len, int prot, int flags, int lfd, off_t off,
                       uint64_t *data, bool *direct);

#endif
