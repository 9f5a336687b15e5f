/* max_read.h: the largest READ the kernel sends adafs-fuse, chosen once
 * per mount: by the node agent for its mount options (agentd/fusemount.c,
 * which passes the same -o max_read to adafs-fuse), by adafs-fuse for a
 * mount of its own. libfuse refuses to mount when the two differ.
 *
 * adafs-fuse answers a READ with a reply spliced from the servers' chunk
 * files through a pipe (doc/fuse.md, Speed); the kernel takes a reply
 * only whole from one pipe, and an unprivileged process's pipe holds at
 * most fs.pipe-max-size, 1 MiB (256 pages) by default. A 1 MiB READ and
 * its header are 257 pages: with such pipes max_read is 252 pages (room
 * for the header's slot and for pieces that do not start on a page), and
 * a 1 MiB read() is two requests, of 1008 and 16 KiB. Where the host lets
 * a user make pipes of 2 MiB (fs.pipe-max-size >= 2097152, the site's
 * choice), max_read is 1 MiB and a 1 MiB read() is one request. */
#ifndef ADAFS_FUSE_MAX_READ_H
#define ADAFS_FUSE_MAX_READ_H

#include <stddef.h>

#define ADAFS_FUSE_MAX_READ_SMALL 1032192u   /* 252 pages: fits a 1 MiB pipe */
#define ADAFS_FUSE_MAX_READ_LARGE 1048576u   /* 256 pages: needs a 2 MiB pipe */

/* The max_read for a new mount: LARGE when fs.pipe-max-size allows the
 * pipe it needs (adafs_fuse_pipe_bytes), SMALL otherwise (also when the
 * sysctl cannot be read). */
unsigned adafs_fuse_max_read(void);

/* The pipe that holds a READ reply of max_read bytes whole: the header's
 * slot and 3 more for pieces off a page, as a power of two of pages (what
 * F_SETPIPE_SZ gives). */
size_t adafs_fuse_pipe_bytes(unsigned max_read);

#endif
