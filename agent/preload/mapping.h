/* mapping: mmap of adafs files, served from memory.
 *
 * The kernel cannot map an adafs file (it has none of its pages), so a
 * mapping is built from the file's bytes: the range [off, off + len) that
 * the file holds is read into private anonymous memory (in huge pages
 * where the kernel allows) when the mapping can never write to the file,
 * else into a memfd of exactly that size, mapped with the caller's flags
 * and protection. In the first kind, the pieces a server of this node
 * holds are mapped MAP_PRIVATE from its data file instead (the page
 * cache's pages, no copy; doc/preload.md, mmap). What follows is what a
 * local disk gives:
 *  - MAP_PRIVATE, any protection: copy on write of those bytes;
 *  - MAP_SHARED: one set of pages, which fork() shares with the child;
 *  - pages wholly beyond the end of the file raise SIGBUS (the memfd ends
 *    where the file did), the rest of the last page reads as zeros;
 *  - a writable MAP_SHARED mapping is written back to the file by msync,
 *    munmap (of any part of it), a MAP_FIXED mapping over it, exec and
 *    exit: the bytes this process changed, found by comparing with a copy
 *    kept from the mmap (or the last write-back), so two processes writing
 *    different parts of one file through their mappings both get them in;
 *  - madvise MADV_DONTNEED gives the file's bytes again, not zeros;
 *  - a truncate, ftruncate or O_TRUNC of the file by this process shrinks
 *    its mappings (SIGBUS beyond the new end, the cut page zeroed) or
 *    extends them (zeros); an mremap that grows a mapping reads the bytes
 *    the file now has there.
 * What is not as on a local disk (doc/preload.md): a mapping is a snapshot
 * taken at mmap time (but for the pages mapped from a data file), so
 * writes by write() or by other processes do not show through it, and its writes reach the file only at the points above
 * (as on NFS); a size change by another process is not seen; a writable
 * shared mapping costs twice its size in memory; a mapping larger than
 * half the node's memory fails with ENOMEM, since it is read whole.
 *
 * With the kernel's own mount of the file system (access=both), files
 * are mapped through it instead: all of the above, coherent and on
 * demand, is then the kernel's.
 *
 * Mappings are kept in a small table (locked; a lock-free count lets the
 * many munmap/mprotect calls of programs that map no adafs file go
 * straight to the kernel). */
#ifndef ADAFS_PRELOAD_MAPPING_H
#define ADAFS_PRELOAD_MAPPING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Maps descriptor rfd (route.h's: an open adafs file) as mmap(2) would:
 * the address, or MAP_FAILED with errno. */
void *mapping_map(void *addr, size_t len, int prot, int flags, int rfd, off_t off);

/* Whether any adafs mapping exists (cheap: for the fast paths). */
int mapping_count(void);

/* Before the kernel acts on [addr, addr + len) (munmap, a MAP_FIXED
 * mapping over it): writes back what of it is shared and writable and
 * forgets it. */
void mapping_forget_range(uintptr_t addr, size_t len);

/* msync: writes back what of the range is shared and writable. 0 or -errno. */
int mapping_sync_range(uintptr_t addr, size_t len);

/* mprotect: notes that the range may now be written (PROT_WRITE).
 * -EACCES when a shared mapping in it is of a file not opened for writing. */
int mapping_protect(uintptr_t addr, size_t len, int prot);

/* madvise: the kernel's, except on mappings served from private
 * anonymous memory, which act as a file's mapping would: MADV_DONTNEED
 * gives the file's bytes again (not zeros), MADV_FREE is EINVAL. Only
 * called for those two (and MADV_DONTNEED_LOCKED). 0 or -errno. */
int mapping_advise(uintptr_t addr, size_t len, int advice);

/* Before mremap of [addr, addr + len): a mapping there with pieces mapped
 * from data files (several kernel mappings, which mremap would refuse to
 * resize) becomes one of memory with the same bytes. 0 or -errno. */
int mapping_before_remap(uintptr_t addr, size_t len);

/* mremap moved or resized [old, old + old_len) to [new, new + new_len). */
void mapping_moved(uintptr_t old, size_t old_len, uintptr_t new, size_t new_len);

/* The file with inode number ino in mount m now has new_size bytes (this
 * process truncated or extended it): its mappings follow. */
void mapping_resized(int m, uint64_t ino, uint64_t new_size);

/* This process truncated or extended the file inner of mount m (ftruncate,
 * truncate): with the kernel's own mount, the kernel is made to look at
 * the file again, so mappings through it follow the new size. */
void mapping_tell_kernel(int m, const char *inner);

/* Writes back every shared writable mapping: at exit. */
void mapping_sync_all(void);
/* The same before an exec, unless this is the child of a vfork: its
 * mappings are its parent's and live on after the exec. */
void mapping_sync_before_exec(void);

void mapping_register_atfork(void);

#endif
