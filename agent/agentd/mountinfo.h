/* mountinfo: what is mounted at a path, read from /proc/self/mountinfo, so
 * that root never looks into a mount to find out: a FUSE mount of a user
 * (fusermount3 lets a user mount on any directory they own, such as a
 * job's server root or mount point) answers root EACCES, and one that
 * nobody serves may hang whoever asks it. */
#ifndef ADAFS_AGENTD_MOUNTINFO_H
#define ADAFS_AGENTD_MOUNTINFO_H

#include <stdbool.h>

/* How many mounts are stacked at path (fstype NULL: of any type, else only
 * of that type, as "fuse.adafs" or "ext4"). *minor (if not NULL) gets the
 * device minor of the topmost one counted (a FUSE mount's connection). */
int mountinfo_count(const char *path, const char *fstype, unsigned *minor);

/* Detaches (MNT_DETACH) every mount stacked at path, whoever made it, the
 * topmost first; at most 16. Returns how many were detached, or -errno of
 * the umount2 that failed. */
int mountinfo_detach_all(const char *path);

/* Detaches every mount at path or below it, whoever made it (a job's user
 * may mount on any directory they own inside their mount point), never
 * following a link on the way (a user's directory may become one); at
 * most 64. Returns how many were detached, or -errno when three tries
 * failed. */
int mountinfo_detach_tree(const char *path);

#endif
