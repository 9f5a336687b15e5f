/* pathres: decides whether a path names something inside an adafs mount,
 * and which one, and keeps the working directory the program believes it
 * has.
 *
 * A process serves up to PATHRES_MOUNTS_MAX mounts, each a mount point
 * prefix and the instance file of its file system: the job's own
 * ($ADAFS_MOUNT, $ADAFS_INSTANCE) and those listed in $ADAFS_MOUNTS
 * ("MOUNT=INSTANCE_FILE" entries separated by ':', as the plugin gives a
 * job that also uses persistent instances). A path belongs to the mount
 * with the longest prefix it lies under. Mount 0 is $ADAFS_MOUNT's (the
 * first of $ADAFS_MOUNTS when there is none).
 *
 * A mount point does not exist for the kernel. A chdir() into it leaves
 * the kernel's working directory where it was and records a "virtual"
 * working directory here; relative paths are then resolved against it (and
 * those that leave the mount with ".." are handed to libc as absolute
 * paths). Paths are compared lexically ("a/../b" is "b"): there are no
 * symbolic links inside adafs, and kernel symbolic links that point into the
 * mount are not followed (see doc/preload.md). */
#ifndef ADAFS_PRELOAD_PATHRES_H
#define ADAFS_PRELOAD_PATHRES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* Mounts one process serves; a mount's number fits in route.h's descriptors. */
#define PATHRES_MOUNTS_MAX 16

struct pathres {
    bool adafs;         /* true: inner is the path inside the file system */
    int mount;          /* adafs: which mount (pathres_mount) */
    const char *kpath;  /* false: the path to give the C library */
    const char *inner;
    char buf[PATH_MAX];
};

/* Reads the mount points (mount 0 from $ADAFS_MOUNT, else from
 * mount_from_instance, which may be NULL; then $ADAFS_MOUNTS) and the
 * working directories. Returns 0 when the interposer is active, 1 when
 * there is no mount (everything passes through), -EINVAL when no mount is
 * usable (each unusable one is logged and left out). */
int pathres_init(const char *mount_from_instance);

/* Whether a mount point is configured. */
bool pathres_active(void);
int pathres_nmounts(void);
/* Mount m's prefix, and the instance file of its file system (mount 0's:
 * $ADAFS_INSTANCE as the process started, NULL if unset). */
const char *pathres_mount(int m);
const char *pathres_instance(int m);
/* The variable that named it: "ADAFS_INSTANCE" or "ADAFS_MOUNTS" (for messages). */
const char *pathres_instance_var(int m);

/* Whether the kernel has mount m's file system mounted at its mount point
 * too (adafs-fuse: a job's access=both): exec and mmap then go through the
 * kernel. Read from /proc/self/mountinfo once per process and mount
 * (asking the mount itself would be a request to adafs-fuse); jobs are
 * mounted before they start and unmounted after they end. */
bool pathres_kernel_mount(int m);

/* Resolves path relative to dirfd (AT_FDCWD, a kernel or an adafs
 * descriptor). Returns 0 and fills *res, or -errno: -EFAULT for NULL,
 * -ENOENT for "", -ENAMETOOLONG, -EBADF when an adafs dirfd vanished. */
int pathres_resolve(int dirfd, const char *path, struct pathres *res);

/* The program opened kernel directory fd as (dirfd, path): if that is one
 * of the mount point's ancestors, names relative to fd are resolved (a walk
 * from "/" with openat reaches the mount). pathres_note_kernel_close
 * forgets fd when the program closes it. */
void pathres_note_kernel_open(int dirfd, const char *path, int fd);
void pathres_note_kernel_close(int fd);

/* Working directory. pathres_set_virtual_cwd takes the inner path of a
 * directory in adafs mount m; pathres_kernel_chdir_done records that the kernel's
 * working directory changed (and the virtual one ended). getcwd text for
 * the virtual directory goes into buf; returns its length, 0 when the
 * working directory is the kernel's, or -ERANGE. */
void pathres_set_virtual_cwd(int m, const char *inner);
void pathres_kernel_chdir_done(void);
int pathres_virtual_cwd(char *buf, size_t len);

/* Keeps the working-directory lock consistent across fork(). */
void pathres_register_atfork(void);

/* Builds mount m's prefix + inner into out; returns length or -ENAMETOOLONG. */
int pathres_full_path(int m, const char *inner, char *out, size_t outlen);

#endif
