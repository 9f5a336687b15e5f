/* fdmap: which kernel descriptors stand for open adafs files.
 *
 * Every open adafs file holds a real kernel descriptor (an O_PATH descriptor
 * of /dev/null) so its number can never collide with a kernel file, and so
 * close-on-exec, dup2 targets and descriptor limits behave as usual. This
 * table maps that number to the library's own descriptor (route.h's: the
 * mount and libadafs's descriptor in it, one int), plus an optional
 * directory-reading state owned by dir.c (for getdents64).
 *
 * Lookups are lock-free (two atomic loads) because every read() and write()
 * of the process, adafs or not, asks "is this fd ours?". Blocks of the
 * table are allocated on first use and never freed. */
#ifndef ADAFS_PRELOAD_FDMAP_H
#define ADAFS_PRELOAD_FDMAP_H

/* Largest kernel descriptor number the map can hold, plus one. */
#define FDMAP_MAX_FD (1 << 22)

/* Returns the library descriptor behind kfd, or -1 if kfd is not adafs. */
int fdmap_get(int kfd);

/* Records kfd -> lfd. Returns 0, -EMFILE if kfd is beyond FDMAP_MAX_FD or
 * -ENOMEM if a table block cannot be allocated. */
int fdmap_set(int kfd, int lfd);

/* Removes kfd; returns its library descriptor (or -1 if kfd was not adafs)
 * and hands back its directory state in *dirstate (NULL if none). */
int fdmap_take(int kfd, void **dirstate);

/* The directory state of kfd (NULL if none). fdmap_set_dir returns 0, or
 * -EBUSY if another thread installed one first (the caller frees its own). */
void *fdmap_get_dir(int kfd);
int fdmap_set_dir(int kfd, void *dirstate);

/* The smallest adafs kfd >= from, or -1: for close_range() and exec. */
int fdmap_next(int from);

#endif
