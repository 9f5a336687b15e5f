/* fusemount: the kernel mount of a job's file system on this host, for
 * jobs that asked for access=fuse or access=both.
 *
 * The agent mounts as root and hands the mount to adafs-fuse running as
 * the job's user, as mount.fuse3's drop_privileges does: it opens
 * /dev/fuse, mounts it at the job's mount point (nosuid, nodev, the job
 * user's user_id/group_id and no allow_other: only that user may enter,
 * not even root), and starts adafs-fuse on the descriptor (MOUNTPOINT
 * /dev/fd/N), waiting until it answers. Neither /dev/fuse's mode nor
 * fusermount3 and its limits matter then, and nothing runs setuid.
 *
 * Unmounting never waits for the file system: umount2(MNT_DETACH) takes
 * the mount out of the namespace at once, even while processes sit in it
 * or adafs-fuse hangs; the FUSE connection is then aborted (fusectl, when
 * mounted) and adafs-fuse stopped (SIGTERM, SIGKILL after a grace time),
 * which ends the connection too: whatever still waits on it gets an error
 * at once. Nothing here stats a path inside a mount (it would wait for
 * adafs-fuse, and root may not enter anyway): mounts are found in
 * /proc/self/mountinfo.
 *
 * Agents sharing a host (the mini-cluster) share one mount per job: a
 * record beside the mount point, <prefix>/.job.<id>.fuse (root's, 0600,
 * locked while used), names adafs-fuse's pid and the nodes using the
 * mount; the first node mounts, the last unmounts. */
#ifndef ADAFS_AGENT_FUSEMOUNT_H
#define ADAFS_AGENT_FUSEMOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "child.h"

struct fusemount_job {
    uint32_t id;
    const char *node;          /* this agent's node */
    const char *mount;         /* the mount point: a directory of the user */
    const char *record;        /* <prefix>/.job.<id>.fuse */
    const char *instance;      /* the instance file adafs-fuse reads */
    const char *fuse_path;     /* absolute path of adafs-fuse */
    const char *log_path;      /* its standard error */
    struct user_id user;
    int timeout_ms;            /* to answer once started, to stop once told */
};

/* Mounts the job's file system at j->mount for this node, or joins the
 * mount another node of this host made. 0, or -errno with a message for
 * the plugin in err. */
int fusemount_attach(const struct fusemount_job *j, char *err, size_t errlen);

/* This node no longer uses the mount; the last one unmounts it and stops
 * adafs-fuse. Never blocks on the file system. Idempotent. */
void fusemount_detach(const struct fusemount_job *j);

/* Whether an adafs mount is at path (any node's, live or stale). */
bool fusemount_present(const char *path);

#endif
