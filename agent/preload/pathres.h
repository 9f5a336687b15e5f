/* pathres: decides whether a path names something inside the adafs mount,
 * and keeps the working directory the program believes it has.
 *
 * The mount point does not exist for the kernel. A chdir() into it leaves
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

struct pathres {
    bool adafs;         /* true: inner is the path inside the file system */
    const char *kpath;  /* false: the path to give the C library */
    const char *inner;
    char buf[PATH_MAX];
};

/* Reads the mount point (from $ADAFS_MOUNT, else from mount_from_instance,
 * which may be NULL) and the working directories. Returns 0 when the
 * interposer is active, 1 when there is no mount (everything passes
 * through), -EINVAL for an unusable mount point (logged). */
int pathres_init(const char *mount_from_instance);

/* Whether a mount point is configured. */
bool pathres_active(void);
const char *pathres_mount(void);

/* Whether the kernel has the file system mounted at the mount point too
 * (adafs-fuse: a job's access=both): exec and mmap then go through the
 * kernel. Read from /proc/self/mountinfo once per process (asking the
 * mount itself would be a request to adafs-fuse); jobs are mounted before
 * they start and unmounted after they end. */
bool pathres_kernel_mount(void);

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
 * directory in adafs; pathres_kernel_chdir_done records that the kernel's
 * working directory changed (and the virtual one ended). getcwd text for
 * the virtual directory goes into buf; returns its length, 0 when the
 * working directory is the kernel's, or -ERANGE. */
void pathres_set_virtual_cwd(const char *inner);
void pathres_kernel_chdir_done(void);
int pathres_virtual_cwd(char *buf, size_t len);

/* Keeps the working-directory lock consistent across fork(). */
void pathres_register_atfork(void);

/* Builds mount + inner into out; returns length or -ENAMETOOLONG. */
int pathres_full_path(const char *inner, char *out, size_t outlen);

#endif
