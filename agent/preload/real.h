/* real: the C library's own versions of the functions the interposer
 * replaces, looked up once with dlsym(RTLD_NEXT).
 *
 * Every call that is not for adafs goes to these pointers untouched. The
 * table is filled by real_resolve() from the interposer's one-time
 * initialisation, before any wrapper can use it. On LP64 Linux the *64
 * variants (open64, stat64, pread64...) are the same functions as their
 * plain names, so only the plain names are kept here. */
#ifndef ADAFS_PRELOAD_REAL_H
#define ADAFS_PRELOAD_REAL_H

#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <utime.h>

#define REAL_FUNCTIONS(X) \
    X(int, open, (const char *, int, ...)) \
    X(int, openat, (int, const char *, int, ...)) \
    X(int, close, (int)) \
    X(ssize_t, read, (int, void *, size_t)) \
    X(ssize_t, write, (int, const void *, size_t)) \
    X(ssize_t, pread, (int, void *, size_t, off_t)) \
    X(ssize_t, pwrite, (int, const void *, size_t, off_t)) \
    X(ssize_t, readv, (int, const struct iovec *, int)) \
    X(ssize_t, writev, (int, const struct iovec *, int)) \
    X(ssize_t, preadv, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, pwritev, (int, const struct iovec *, int, off_t)) \
    X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
    X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
    X(off_t, lseek, (int, off_t, int)) \
    X(int, stat, (const char *, struct stat *)) \
    X(int, lstat, (const char *, struct stat *)) \
    X(int, fstat, (int, struct stat *)) \
    X(int, fstatat, (int, const char *, struct stat *, int)) \
    X(int, statx, (int, const char *, int, unsigned int, struct statx *)) \
    X(int, __xstat, (int, const char *, struct stat *)) \
    X(int, __lxstat, (int, const char *, struct stat *)) \
    X(int, __fxstat, (int, int, struct stat *)) \
    X(int, __fxstatat, (int, int, const char *, struct stat *, int)) \
    X(int, access, (const char *, int)) \
    X(int, faccessat, (int, const char *, int, int)) \
    X(int, euidaccess, (const char *, int)) \
    X(int, mkdir, (const char *, mode_t)) \
    X(int, mkdirat, (int, const char *, mode_t)) \
    X(int, rmdir, (const char *)) \
    X(int, unlink, (const char *)) \
    X(int, unlinkat, (int, const char *, int)) \
    X(int, rename, (const char *, const char *)) \
    X(int, renameat, (int, const char *, int, const char *)) \
    X(int, renameat2, (int, const char *, int, const char *, unsigned int)) \
    X(DIR *, opendir, (const char *)) \
    X(DIR *, fdopendir, (int)) \
    X(struct dirent *, readdir, (DIR *)) \
    X(int, readdir_r, (DIR *, struct dirent *, struct dirent **)) \
    X(int, closedir, (DIR *)) \
    X(void, rewinddir, (DIR *)) \
    X(int, dirfd, (DIR *)) \
    X(long, telldir, (DIR *)) \
    X(void, seekdir, (DIR *, long)) \
    X(ssize_t, getdents64, (int, void *, size_t)) \
    X(int, scandir, (const char *, struct dirent ***, int (*)(const struct dirent *), \
                     int (*)(const struct dirent **, const struct dirent **))) \
    X(int, truncate, (const char *, off_t)) \
    X(int, ftruncate, (int, off_t)) \
    X(int, fsync, (int)) \
    X(int, fdatasync, (int)) \
    X(int, syncfs, (int)) \
    X(int, dup, (int)) \
    X(int, dup2, (int, int)) \
    X(int, dup3, (int, int, int)) \
    X(int, fcntl, (int, int, ...)) \
    X(int, flock, (int, int)) \
    X(int, lockf, (int, int, off_t)) \
    X(int, chdir, (const char *)) \
    X(int, fchdir, (int)) \
    X(char *, getcwd, (char *, size_t)) \
    X(char *, get_current_dir_name, (void)) \
    X(int, statfs, (const char *, struct statfs *)) \
    X(int, fstatfs, (int, struct statfs *)) \
    X(int, statvfs, (const char *, struct statvfs *)) \
    X(int, fstatvfs, (int, struct statvfs *)) \
    X(int, chmod, (const char *, mode_t)) \
    X(int, fchmod, (int, mode_t)) \
    X(int, fchmodat, (int, const char *, mode_t, int)) \
    X(int, chown, (const char *, uid_t, gid_t)) \
    X(int, lchown, (const char *, uid_t, gid_t)) \
    X(int, fchown, (int, uid_t, gid_t)) \
    X(int, fchownat, (int, const char *, uid_t, gid_t, int)) \
    X(int, utimensat, (int, const char *, const struct timespec *, int)) \
    X(int, futimens, (int, const struct timespec *)) \
    X(int, utimes, (const char *, const struct timeval *)) \
    X(int, lutimes, (const char *, const struct timeval *)) \
    X(int, futimes, (int, const struct timeval *)) \
    X(int, futimesat, (int, const char *, const struct timeval *)) \
    X(int, utime, (const char *, const struct utimbuf *)) \
    X(int, link, (const char *, const char *)) \
    X(int, linkat, (int, const char *, int, const char *, int)) \
    X(int, symlink, (const char *, const char *)) \
    X(int, symlinkat, (const char *, int, const char *)) \
    X(ssize_t, readlink, (const char *, char *, size_t)) \
    X(ssize_t, readlinkat, (int, const char *, char *, size_t)) \
    X(int, mknod, (const char *, mode_t, dev_t)) \
    X(int, mknodat, (int, const char *, mode_t, dev_t)) \
    X(int, mkfifo, (const char *, mode_t)) \
    X(int, mkfifoat, (int, const char *, mode_t)) \
    X(int, remove, (const char *)) \
    X(char *, realpath, (const char *, char *)) \
    X(void *, mmap, (void *, size_t, int, int, int, off_t)) \
    X(int, posix_fadvise, (int, off_t, off_t, int)) \
    X(ssize_t, readahead, (int, off_t, size_t)) \
    X(int, posix_fallocate, (int, off_t, off_t)) \
    X(int, fallocate, (int, int, off_t, off_t)) \
    X(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned int)) \
    X(ssize_t, sendfile, (int, int, off_t *, size_t)) \
    X(ssize_t, splice, (int, off_t *, int, off_t *, size_t, unsigned int)) \
    X(int, ioctl, (int, unsigned long, ...)) \
    X(ssize_t, getxattr, (const char *, const char *, void *, size_t)) \
    X(ssize_t, lgetxattr, (const char *, const char *, void *, size_t)) \
    X(ssize_t, fgetxattr, (int, const char *, void *, size_t)) \
    X(ssize_t, listxattr, (const char *, char *, size_t)) \
    X(ssize_t, llistxattr, (const char *, char *, size_t)) \
    X(ssize_t, flistxattr, (int, char *, size_t)) \
    X(int, setxattr, (const char *, const char *, const void *, size_t, int)) \
    X(int, lsetxattr, (const char *, const char *, const void *, size_t, int)) \
    X(int, fsetxattr, (int, const char *, const void *, size_t, int)) \
    X(int, removexattr, (const char *, const char *)) \
    X(int, lremovexattr, (const char *, const char *)) \
    X(int, fremovexattr, (int, const char *)) \
    X(FILE *, fopen, (const char *, const char *)) \
    X(FILE *, fdopen, (int, const char *)) \
    X(FILE *, freopen, (const char *, const char *, FILE *)) \
    X(int, fileno, (FILE *)) \
    X(int, fileno_unlocked, (FILE *)) \
    X(int, close_range, (unsigned int, unsigned int, int)) \
    X(void, closefrom, (int)) \
    X(int, execve, (const char *, char *const *, char *const *)) \
    X(int, execvpe, (const char *, char *const *, char *const *)) \
    X(int, fexecve, (int, char *const *, char *const *)) \
    X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                         const posix_spawnattr_t *, char *const *, char *const *)) \
    X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
                          const posix_spawnattr_t *, char *const *, char *const *)) \
    X(mode_t, umask, (mode_t)) \
    X(int, socket, (int, int, int)) \
    X(ssize_t, recvmsg, (int, struct msghdr *, int)) \
    X(int, pipe, (int *)) \
    X(int, pipe2, (int *, int)) \
    X(int, mkostemps, (char *, int, int)) \
    X(char *, mkdtemp, (char *))

struct real_functions {
#define REAL_MEMBER(ret, name, params) ret (*name) params;
    REAL_FUNCTIONS(REAL_MEMBER)
#undef REAL_MEMBER
};

extern struct real_functions real;

/* Fills the table. Returns 0, or -1 after writing one line per function
 * the C library does not provide (those stay NULL). */
int real_resolve(void);

#endif
