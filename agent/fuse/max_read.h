/* max_read.h: the largest READ the kernel sends adafs-fuse, in the agent's
 * mount options (agentd/fusemount.c) and adafs-fuse's INIT answer and own
 * mount (libfuse refuses to mount when the two differ).
 *
 * adafs-fuse answers a READ with a reply spliced from the servers' chunk
 * files through a pipe (doc/fuse.md, Speed); the kernel takes a reply
 * only whole from one pipe, and an unprivileged process's pipe holds at
 * most fs.pipe-max-size, 1 MiB by default: 256 pages. 252 pages of data
 * leave room for the header's slot and for pieces that do not start on a
 * page (one slot more each). A 1 MiB read() is then two requests, of 1008
 * and 16 KiB. */
#ifndef ADAFS_FUSE_MAX_READ_H
#define ADAFS_FUSE_MAX_READ_H

#define ADAFS_FUSE_MAX_READ 1032192u   /* 252 pages */
#define ADAFS_FUSE_MAX_READ_OPT "max_read=1032192"

#endif
