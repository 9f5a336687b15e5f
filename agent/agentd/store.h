/* store: the file system of one job's server on this node.
 *
 * Each server gets a file system of its own, so that everything the job
 * puts on the node's storage (chunk files, RocksDB, and whatever its user
 * writes into the server root by hand) is bounded by what the job asked
 * for: an image file S/<node>/job.<id>.img of instance_space()'s size,
 * its blocks reserved at creation (fallocate: a node disk that fills up
 * fails the deploy with ENOSPC, never the job's writes under the loop
 * device, which would lose data the job was told was written; mounted
 * noinit_itable, as the kernel's lazy zeroing would punch holes), formatted ext4 without a journal (the data lives as long as the
 * job; a crash wipes it anyway; a persistent instance's, which outlives
 * crashes, has one) and loop-mounted nosuid, nodev, noexec on
 * the server root S/<node>/job.<id>. When it is full, writes and creates
 * fail with ENOSPC there and nowhere else. Unmounting it and removing the
 * image wipes it at once, whatever the job left.
 *
 * Root does all of it, in root-owned directories (jobs.c checks them):
 * the image is root's, 0600; the file system's root is handed to the job
 * user empty and 0700. mkfs.ext4 (e2fsprogs) and mount (util-linux) run as
 * root with a clean environment. */
#ifndef ADAFS_AGENT_STORE_H
#define ADAFS_AGENT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "child.h"

/* Creates image (it must not exist) of size bytes, formats it and mounts
 * it on dir (an empty directory), whose root then belongs to u, 0700.
 * Returns 0, or -errno with a message naming the step and path in err;
 * on failure nothing is left mounted and the image is removed. */
int store_create(const char *image, const char *dir, uint64_t size, const struct user_id *u,
                 bool journal, char *err, size_t errlen);
/* The journal a file system that outlives its server gets (journal true: a
 * persistent instance's, which a crash must not lose): its size is added
 * to the image's. */
#define STORE_JOURNAL_BYTES (4u << 20)

/* Mounts an existing image on dir again, as it was (a persistent
 * instance's after a reboot). Returns 0 or -errno with err. */
int store_attach(const char *image, const char *dir, char *err, size_t errlen);

/* Is a file system mounted on dir (an ext4 mount there by mountinfo, or
 * its device differs from its parent's)? */
bool store_mounted(const char *dir);

/* Detaches everything mounted on dir, mounts others stacked on it too
 * (processes still holding files there keep them until they close them,
 * and the space is freed then), and removes image (if it exists). Returns
 * 0 or -errno with err. */
int store_destroy(const char *image, const char *dir, char *err, size_t errlen);

#endif
