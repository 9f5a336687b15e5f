/* preload_api: run under libadafs_preload.so by test_preload_api.sh.
 *
 *   preload_api MOUNT OUTSIDE
 *
 * A plain program (not linked to libadafs): every call below goes through
 * the interposer exactly as in any unmodified program. MOUNT is the adafs
 * mount point of an empty file system, which the kernel sees as an empty
 * regular file DIR/X/mnt; OUTSIDE is a local directory DIR/Y. Checks the
 * descriptor plumbing (reserved kernel fds, dup, fcntl, close_range),
 * fork and exec, working directories, stdio, directory streams, the
 * documented errors (links EPERM/EXDEV, xattrs ENOTSUP...)
 * and that paths outside the mount are left to the kernel. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tap.h"

extern char **environ;

static const char *mnt, *outside;

static char *in_mnt(const char *rel)
{
    static char bufs[8][PATH_MAX];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, PATH_MAX, "%s/%s", mnt, rel);
    return b;
}

static char *in_out(const char *rel)
{
    static char bufs[4][PATH_MAX];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, PATH_MAX, "%s/%s", outside, rel);
    return b;
}

/* Checks that call failed (returned bad: -1, NULL or MAP_FAILED) with
 * errno want. */
#define fails_with(call, bad, want, what) do {                                \
        errno = 0;                                                             \
        long r_ = (long)(call);                                                \
        int e_ = errno;                                                        \
        if (!tap_ok(r_ == (long)(bad) && e_ == (want), "%s", what))            \
            printf("#   got %ld errno %d (%s), want errno %d (%s)\n", r_,      \
                   e_, strerror(e_), (want), strerror(want));                  \
    } while (0)
#define is_err(call, want, what) fails_with(call, -1, want, what)
#define is_null_err(call, want, what) fails_with(call, 0, want, what)

static void fill(char *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)((i * 131 + seed) % 251);
}

static void test_descriptors(void)
{
    enum { N = 200000 };
    static char data[N], back[N];
    fill(data, N, 1);
    int fd = open(in_mnt("data"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (!tap_ok(fd > 2, "open O_CREAT in the mount gives a descriptor"))
        printf("#   open gave %d (%s)\n", fd, strerror(errno));
    tap_is_int(write(fd, data, N), N, "write 200000 bytes across chunks");
    struct stat st;
    tap_ok(fstat(fd, &st) == 0 && st.st_size == N && S_ISREG(st.st_mode), "fstat size");

    char link[64], target[PATH_MAX] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t tl = readlink(link, target, sizeof target - 1);
    target[tl > 0 ? tl : 0] = '\0';
    tap_is_str(target, "/dev/null", "the kernel holds a reserved /dev/null descriptor");
    int kflags = (int)syscall(SYS_fcntl, fd, F_GETFL);
    tap_ok(kflags >= 0 && (kflags & O_PATH), "the reserved descriptor is O_PATH");
    char c;
    tap_ok(syscall(SYS_read, fd, &c, 1) == -1 && errno == EBADF,
           "a read that bypasses the interposer fails (EBADF), not silent");

    tap_is_int(lseek(fd, 0, SEEK_SET), 0, "lseek to 0");
    tap_is_int(read(fd, back, N), N, "read back");
    tap_ok(memcmp(data, back, N) == 0, "read returns what was written");
    tap_is_int(pread(fd, back, 1000, 65000), 1000, "pread across a chunk boundary");
    tap_ok(memcmp(back, data + 65000, 1000) == 0, "pread data");
    tap_is_int(pwrite(fd, "ABCDEF", 6, 65534), 6, "pwrite across a chunk boundary");
    tap_ok(pread(fd, back, 6, 65534) == 6 && memcmp(back, "ABCDEF", 6) == 0, "pwrite data");

    struct iovec iov[3] = { { "one-", 4 }, { "two-", 4 }, { "three", 5 } };
    tap_is_int(pwritev(fd, iov, 3, 10), 13, "pwritev");
    char a[4], b[4], d[5];
    struct iovec riov[3] = { { a, 4 }, { b, 4 }, { d, 5 } };
    tap_ok(preadv(fd, riov, 3, 10) == 13 && memcmp(a, "one-", 4) == 0 &&
           memcmp(b, "two-", 4) == 0 && memcmp(d, "three", 5) == 0, "preadv scatters");

    /* dup shares the offset */
    int fd2 = dup(fd);
    tap_ok(fd2 > fd, "dup gives a new descriptor");
    lseek(fd, 100, SEEK_SET);
    tap_is_int(lseek(fd2, 0, SEEK_CUR), 100, "dup shares the offset");
    int fd3 = dup2(fd, 100);
    tap_is_int(fd3, 100, "dup2 onto 100");
    tap_is_int(fcntl(100, F_GETFD), 0, "dup2 target has no close-on-exec");
    tap_is_int(fcntl(100, F_SETFD, FD_CLOEXEC), 0, "F_SETFD");
    tap_is_int(fcntl(100, F_GETFD), FD_CLOEXEC, "F_GETFD sees FD_CLOEXEC");
    tap_is_int(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR, "F_GETFL access mode");
    int fd4 = fcntl(fd, F_DUPFD_CLOEXEC, 50);
    tap_ok(fd4 >= 50 && fcntl(fd4, F_GETFD) == FD_CLOEXEC, "F_DUPFD_CLOEXEC >= 50");
    int fd5 = fcntl(fd, F_DUPFD, 60);
    tap_ok(fd5 >= 60 && fcntl(fd5, F_GETFD) == 0, "F_DUPFD >= 60");
    tap_is_int(fcntl(fd5, F_SETFL, O_APPEND), 0, "F_SETFL O_APPEND");
    tap_ok(fcntl(fd5, F_GETFL) & O_APPEND, "F_GETFL sees O_APPEND");
    tap_is_int(write(fd5, "tail", 4), 4, "write with O_APPEND");
    tap_ok(fstat(fd, &st) == 0 && st.st_size == N + 4, "O_APPEND wrote at the end");
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    tap_is_int(fcntl(fd, F_SETLK, &fl), 0, "F_SETLK is accepted (advisory no-op)");
    fl.l_type = F_WRLCK;
    tap_ok(fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type == F_UNLCK, "F_GETLK reports unlocked");
    tap_is_int(flock(fd, LOCK_EX), 0, "flock is accepted");
    is_err(fcntl(fd, F_SETPIPE_SZ, 4096), EINVAL, "F_SETPIPE_SZ on adafs is EINVAL");
    char *mapped = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    tap_ok(mapped != MAP_FAILED && pread(fd, back, 4096, 0) == 4096 &&
           memcmp(mapped, back, 4096) == 0,
           "mmap of an adafs file holds its bytes (tests/mmap_check.c checks the rest)");
    if (mapped != MAP_FAILED)
        munmap(mapped, 4096);
    void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    tap_ok(anon != MAP_FAILED, "anonymous mmap still works");
    munmap(anon, 4096);
    tap_is_int(posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL), 0, "posix_fadvise is accepted");
    tap_is_int(posix_fallocate(fd, 0, 300000), 0, "posix_fallocate");
    tap_ok(fstat(fd, &st) == 0 && st.st_size == 300000, "posix_fallocate extended the size");
    is_err(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10), EOPNOTSUPP,
           "fallocate punch hole is EOPNOTSUPP");
    tap_is_int(ftruncate(fd, 1000), 0, "ftruncate shrink");
    tap_ok(fstat(fd2, &st) == 0 && st.st_size == 1000, "size seen through a dup");
    tap_is_int(fsync(fd), 0, "fsync");
    tap_is_int(fdatasync(fd), 0, "fdatasync");

    /* close one, the others stay usable */
    tap_is_int(close(fd), 0, "close");
    is_err(fcntl(fd, F_GETFD), EBADF, "closed descriptor is gone for the kernel too");
    tap_is_int(pread(fd2, back, 4, 10), 4, "a dup survives closing the original");
    close(fd2);
    close(fd4);
    close(fd5);
    tap_is_int(close_range(100, 100, 0), 0, "close_range over an adafs descriptor");
    is_err(fcntl(100, F_GETFD), EBADF, "close_range closed it");
    int again = open(in_out("kernel-file"), O_CREAT | O_RDWR, 0644);
    tap_is_int(write(again, "kernel", 6), 6, "a kernel file reusing a freed number is the kernel's");
    close(again);

    is_err(open(in_mnt("missing/x"), O_RDONLY), ENOENT, "open in a missing directory: ENOENT");
    is_err(open(in_mnt("data"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST, "O_EXCL: EEXIST");
    is_err(open(in_mnt("data"), O_RDONLY | O_DIRECTORY), ENOTDIR, "O_DIRECTORY on a file: ENOTDIR");
    is_err(open(mnt, O_TMPFILE | O_RDWR, 0600), EOPNOTSUPP, "O_TMPFILE: EOPNOTSUPP");
    is_err(read(12345, back, 1), EBADF, "read on a descriptor nobody opened: EBADF");
}

/* The entry points programs reach through other names: 64-bit, fortified
 * and pre-2.33 stat, each checked to reach adafs. */
int __open_2(const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
int __xstat(int ver, const char *path, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);
int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags);

static void test_entry_points(void)
{
    struct stat st;
    struct stat64 st64;
    int fd = open64(in_mnt("data"), O_RDONLY);
    tap_ok(fd >= 0 && fstat64(fd, &st64) == 0 && st64.st_size == 1000, "open64 and fstat64");
    close(fd);
    fd = __open_2(in_mnt("data"), O_RDONLY);
    tap_ok(fd >= 0 && __fxstat64(1, fd, &st64) == 0 && st64.st_size == 1000,
           "__open_2 and __fxstat64");
    close(fd);
    fd = __openat64_2(AT_FDCWD, in_mnt("data"), O_RDONLY);
    tap_ok(fd >= 0 && close(fd) == 0, "__openat64_2");
    tap_ok(__xstat(1, in_mnt("data"), &st) == 0 && st.st_size == 1000, "__xstat");
    tap_ok(__fxstatat(1, AT_FDCWD, in_mnt("data"), &st, 0) == 0 && st.st_size == 1000,
           "__fxstatat");
    tap_ok(lstat64(in_mnt("data"), &st64) == 0 && st64.st_size == 1000, "lstat64");
    is_err(__xstat(1, in_mnt("none"), &st), ENOENT, "__xstat of nothing: ENOENT");
}

static void test_refusals(void)
{
    is_err(link(in_mnt("data"), in_mnt("hard")), EPERM, "link inside adafs: EPERM");
    is_err(linkat(AT_FDCWD, in_mnt("data"), AT_FDCWD, in_out("hard"), 0), EXDEV,
           "link from adafs to outside: EXDEV");
    is_err(symlink("data", in_mnt("soft")), EPERM, "symlink inside adafs: EPERM");
    is_err(mkfifo(in_mnt("fifo"), 0600), EPERM, "mkfifo in adafs: EPERM");
    char buf[64];
    is_err(readlink(in_mnt("data"), buf, sizeof buf), EINVAL, "readlink of a file: EINVAL");
    is_err(readlink(in_mnt("nothing"), buf, sizeof buf), ENOENT, "readlink of nothing: ENOENT");
    is_err(rename(in_mnt("data"), in_out("data")), EXDEV, "rename out of adafs: EXDEV");
    is_err(getxattr(in_mnt("data"), "user.x", buf, sizeof buf), ENOTSUP, "getxattr: ENOTSUP");
    is_err(lgetxattr(in_mnt("nothing"), "user.x", buf, sizeof buf), ENOENT,
           "lgetxattr of nothing: ENOENT");
    is_err(listxattr(in_mnt("data"), buf, sizeof buf), ENOTSUP, "listxattr: ENOTSUP");
    is_err(setxattr(in_mnt("data"), "user.x", "v", 1, 0), ENOTSUP, "setxattr: ENOTSUP");
    tap_is_int(chown(in_mnt("data"), geteuid(), getegid()), 0, "chown to oneself is a no-op");
    is_err(chown(in_mnt("data"), geteuid() + 1, (gid_t)-1), EPERM, "chown to another user: EPERM");
    is_err(chown(in_mnt("nothing"), geteuid(), (gid_t)-1), ENOENT, "chown of nothing: ENOENT");
}

static void test_namespace(void)
{
    struct stat st;
    tap_is_int(mkdir(in_mnt("dir"), 0755), 0, "mkdir");
    is_err(mkdir(in_mnt("dir"), 0755), EEXIST, "mkdir again: EEXIST");
    tap_ok(stat(in_mnt("dir"), &st) == 0 && S_ISDIR(st.st_mode), "stat a directory");
    tap_ok(stat(in_mnt("dir/./../dir//"), &st) == 0 && S_ISDIR(st.st_mode),
           "stat through ., .. and //");
    tap_ok(stat(mnt, &st) == 0 && S_ISDIR(st.st_mode), "stat the mount point itself");
    int fd = creat(in_mnt("dir/f"), 0600);
    tap_ok(fd >= 0 && close(fd) == 0, "creat");
    is_err(rmdir(in_mnt("dir")), ENOTEMPTY, "rmdir of a non-empty directory: ENOTEMPTY");
    is_err(unlink(in_mnt("dir")), EISDIR, "unlink of a directory: EISDIR");
    tap_is_int(access(in_mnt("dir/f"), R_OK | W_OK), 0, "access");
    is_err(access(in_mnt("dir/none"), F_OK), ENOENT, "access of nothing: ENOENT");
    tap_is_int(rename(in_mnt("dir/f"), in_mnt("dir/g")), 0, "rename a file");
    tap_ok(stat(in_mnt("dir/f"), &st) == -1 && stat(in_mnt("dir/g"), &st) == 0,
           "rename moved it");
    is_err(renameat2(AT_FDCWD, in_mnt("data"), AT_FDCWD, in_mnt("dir/g"), RENAME_NOREPLACE),
           EEXIST, "RENAME_NOREPLACE onto an existing file: EEXIST");
    tap_is_int(truncate(in_mnt("dir/g"), 70000), 0, "truncate to grow");
    tap_ok(stat(in_mnt("dir/g"), &st) == 0 && st.st_size == 70000, "truncate size");
    tap_is_int(chmod(in_mnt("dir/g"), 0640), 0, "chmod");
    tap_ok(stat(in_mnt("dir/g"), &st) == 0 && (st.st_mode & 07777) == 0640, "chmod mode");
    mode_t old = umask(027);
    fd = open(in_mnt("dir/masked"), O_CREAT | O_WRONLY, 0666);
    umask(old);
    tap_ok(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0640,
           "the umask applies to created files");
    tap_is_int(fchmod(fd, 0600), 0, "fchmod");
    struct timespec ts[2] = { { 1000000, 5 }, { 2000000, 7 } };
    tap_is_int(futimens(fd, ts), 0, "futimens");
    tap_ok(fstat(fd, &st) == 0 && st.st_mtim.tv_sec == 2000000 && (st.st_mode & 0777) == 0600,
           "futimens and fchmod took effect");
    struct timespec omit[2] = { { 0, UTIME_OMIT }, { 3000000, 0 } };
    tap_is_int(utimensat(AT_FDCWD, in_mnt("dir/masked"), omit, 0), 0, "utimensat with UTIME_OMIT");
    tap_ok(stat(in_mnt("dir/masked"), &st) == 0 && st.st_mtim.tv_sec == 3000000 &&
           st.st_atim.tv_sec == 1000000, "UTIME_OMIT kept the access time");
    tap_is_int(fchown(fd, geteuid(), (gid_t)-1), 0, "fchown to oneself");
    is_err(fchown(fd, geteuid() + 7, (gid_t)-1), EPERM, "fchown to another user: EPERM");
    close(fd);

    struct statx sx;
    tap_ok(statx(AT_FDCWD, in_mnt("dir/g"), 0, STATX_BASIC_STATS, &sx) == 0 &&
           sx.stx_size == 70000 && S_ISREG(sx.stx_mode), "statx");
    struct statfs sf;
    tap_ok(statfs(in_mnt("dir"), &sf) == 0 && sf.f_type == 0xADAF5, "statfs reports adafs");
    struct statvfs sv;
    tap_ok(statvfs(mnt, &sv) == 0 && sv.f_bsize > 0, "statvfs");
    is_err(statfs(in_mnt("none"), &sf), ENOENT, "statfs of nothing: ENOENT");

    char rp[PATH_MAX];
    tap_ok(realpath(in_mnt("dir/../dir/g"), rp) && strcmp(rp, in_mnt("dir/g")) == 0,
           "realpath inside the mount");
    char tmpl[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s", in_mnt("dir/tmpXXXXXX"));
    fd = mkstemp(tmpl);
    tap_ok(fd >= 0 && stat(tmpl, &st) == 0 && (st.st_mode & 0777) == 0600, "mkstemp in adafs");
    close(fd);
    tap_is_int(remove(tmpl), 0, "remove a file");
    tap_is_int(mkdir(in_mnt("dir/sub"), 0755), 0, "mkdir sub");
    tap_is_int(remove(in_mnt("dir/sub")), 0, "remove an empty directory");
}

static void test_cwd(void)
{
    char cwd[PATH_MAX], saved[PATH_MAX];
    struct stat st;
    tap_ok(getcwd(saved, sizeof saved) != NULL, "getcwd outside");
    tap_is_int(chdir(in_mnt("dir")), 0, "chdir into the mount");
    tap_ok(getcwd(cwd, sizeof cwd) && strcmp(cwd, in_mnt("dir")) == 0, "getcwd in the mount");
    char *dyn = getcwd(NULL, 0);
    tap_ok(dyn && strcmp(dyn, in_mnt("dir")) == 0, "getcwd(NULL, 0) allocates");
    free(dyn);
    is_null_err(getcwd(cwd, 3), ERANGE, "getcwd into a small buffer: ERANGE");
    int fd = open("rel", O_CREAT | O_WRONLY, 0644);
    tap_ok(fd >= 0 && close(fd) == 0 && stat(in_mnt("dir/rel"), &st) == 0,
           "a relative open lands in the mount");
    tap_ok(stat("../dir/rel", &st) == 0, "relative path with ..");
    tap_is_int(mkdir("rsub", 0755), 0, "relative mkdir");
    tap_is_int(chdir("rsub"), 0, "relative chdir");
    tap_ok(getcwd(cwd, sizeof cwd) && strcmp(cwd, in_mnt("dir/rsub")) == 0, "getcwd after it");
    char rel_out[PATH_MAX]; /* from DIR/X/mnt/dir/rsub up to DIR, then Y */
    snprintf(rel_out, sizeof rel_out, "../../../../%s", strrchr(outside, '/') + 1);
    tap_ok(stat(rel_out, &st) == 0 && S_ISDIR(st.st_mode),
           "a relative path leaving the mount reaches the kernel");
    int dfd = open(in_mnt("dir"), O_RDONLY | O_DIRECTORY);
    tap_is_int(fchdir(dfd), 0, "fchdir to an adafs directory");
    tap_ok(getcwd(cwd, sizeof cwd) && strcmp(cwd, in_mnt("dir")) == 0, "getcwd after fchdir");
    tap_ok(fstatat(dfd, "rel", &st, 0) == 0 && S_ISREG(st.st_mode), "fstatat relative to an adafs dirfd");
    int rfd = openat(dfd, "rsub/../rel", O_RDONLY);
    tap_ok(rfd >= 0 && close(rfd) == 0, "openat relative to an adafs dirfd");
    tap_is_int(unlinkat(dfd, "rsub", AT_REMOVEDIR), 0, "unlinkat AT_REMOVEDIR");
    close(dfd);
    is_err(chdir(in_mnt("dir/g")), ENOTDIR, "chdir to a file: ENOTDIR");
    tap_is_int(chdir(saved), 0, "chdir back out");
    tap_ok(getcwd(cwd, sizeof cwd) && strcmp(cwd, saved) == 0, "getcwd is the kernel's again");
    fd = open("preload-api-rel", O_CREAT | O_WRONLY, 0644);
    tap_ok(fd >= 0 && close(fd) == 0 && unlink("preload-api-rel") == 0,
           "relative paths outside go to the kernel again");
}

static void test_dirs(void)
{
    DIR *d = opendir(in_mnt("dir"));
    tap_ok(d != NULL, "opendir");
    int dots = 0, g = 0, other = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            dots++;
        else if (!strcmp(e->d_name, "g") && e->d_type == DT_REG)
            g++;
        else
            other++;
    }
    if (!tap_ok(dots == 2 && g == 1 && other == 2, "readdir: . .. g masked rel"))
        printf("#   %d dot entries, %d g, %d others\n", dots, g, other);
    struct stat st;
    tap_ok(fstatat(dirfd(d), "g", &st, 0) == 0 && st.st_size == 70000, "fstatat on dirfd()");
    rewinddir(d);
    long pos0 = telldir(d);
    e = readdir(d);
    tap_ok(e && !strcmp(e->d_name, "."), "rewinddir starts over");
    readdir(d);
    long pos2 = telldir(d);
    char name[256];
    e = readdir(d);
    snprintf(name, sizeof name, "%s", e ? e->d_name : "");
    seekdir(d, pos2);
    e = readdir(d);
    tap_ok(e && !strcmp(e->d_name, name), "seekdir returns to a telldir position");
    seekdir(d, pos0);
    tap_is_int(closedir(d), 0, "closedir");
    is_null_err(opendir(in_mnt("dir/g")), ENOTDIR, "opendir of a file: ENOTDIR");
    is_null_err(opendir(in_mnt("nothing")), ENOENT, "opendir of nothing: ENOENT");

    struct dirent **names;
    int n_names = scandir(in_mnt("dir"), &names, NULL, alphasort);
    tap_ok(n_names == 5 && !strcmp(names[0]->d_name, ".") && !strcmp(names[2]->d_name, "g") &&
           !strcmp(names[4]->d_name, "rel"), "scandir with alphasort");
    for (int i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    is_err(scandir(in_mnt("nothing"), &names, NULL, alphasort), ENOENT, "scandir of nothing: ENOENT");

    int fd = open(in_mnt("dir"), O_RDONLY | O_DIRECTORY);
    char buf[4096];
    is_err(getdents64(fd, buf, 8), EINVAL, "getdents64 into a tiny buffer: EINVAL");
    int total = 0;
    ssize_t n;
    while ((n = getdents64(fd, buf, 64)) > 0)
        for (ssize_t off = 0; off < n; total++)
            off += ((struct dirent64 *)(void *)(buf + off))->d_reclen;
    if (!tap_ok(n == 0 && total == 5, "getdents64 in small pieces lists all 5 entries"))
        printf("#   %d entries, last call gave %zd\n", total, n);
    d = fdopendir(fd);
    tap_ok(d != NULL, "fdopendir on an adafs descriptor");
    int count = 0;
    while (readdir(d))
        count++;
    tap_is_int(count, 5, "readdir after fdopendir");
    tap_is_int(closedir(d), 0, "closedir closes the descriptor");
    is_err(fcntl(fd, F_GETFD), EBADF, "the descriptor is closed");
}

static void test_stdio(void)
{
    FILE *f = fopen(in_mnt("stdio.txt"), "w");
    tap_ok(f != NULL, "fopen w");
    for (int i = 0; i < 5000; i++)
        fprintf(f, "line %d\n", i);
    struct stat st;
    tap_ok(fflush(f) == 0 && fstat(fileno(f), &st) == 0 && st.st_size > 30000,
           "fileno of an adafs stream is its descriptor");
    tap_is_int(fclose(f), 0, "fclose");
    f = fopen(in_mnt("stdio.txt"), "a+");
    fputs("last line\n", f);
    tap_is_int(fseek(f, 0, SEEK_SET), 0, "fseek");
    char line[64];
    tap_ok(fgets(line, sizeof line, f) && !strcmp(line, "line 0\n"), "fgets after fseek");
    fseek(f, -10, SEEK_END);
    tap_ok(fgets(line, sizeof line, f) && !strcmp(line, "last line\n"), "append mode wrote at the end");
    tap_ok(ftell(f) == st.st_size + 10, "ftell");
    fclose(f);
    f = fopen(in_mnt("stdio.txt"), "r");
    int n = 0;
    while (fgets(line, sizeof line, f))
        n++;
    tap_is_int(n, 5001, "reading every line back");
    tap_ok(freopen(in_mnt("dir/g"), "r", f) == f, "freopen of an adafs stream in place");
    tap_ok(fread(line, 1, 10, f) == 10, "reading after freopen");
    fclose(f);
    int fd = open(in_mnt("fd.txt"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    f = fdopen(fd, "w+");
    tap_ok(f && fprintf(f, "via fdopen\n") == 11 && fflush(f) == 0 &&
           pread(fd, line, 11, 0) == 11 && !memcmp(line, "via fdopen\n", 11), "fdopen");
    fclose(f);
    is_null_err(fopen(in_mnt("nothing/x"), "r"), ENOENT, "fopen of nothing: ENOENT");
    is_null_err(fopen(in_mnt("stdio.txt"), "q"), EINVAL, "fopen with a bad mode: EINVAL");
    f = fopen(in_out("plain.txt"), "w");
    tap_ok(f && fileno(f) > 2 && fputs("x", f) >= 0 && fclose(f) == 0, "fopen outside is glibc's");
    FILE *k = fopen(in_out("plain2.txt"), "w");
    is_null_err(freopen(in_mnt("x"), "w", k), EOPNOTSUPP,
                "freopen of a glibc stream other than stdin/out/err onto adafs: EOPNOTSUPP");
    tap_ok(k && fputs("still", k) >= 0 && fclose(k) == 0, "which stays open and usable");
}

static void test_copies(void)
{
    int src = open(in_mnt("data"), O_RDONLY);
    int out = open(in_out("copy"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    off_t off = 0;
    tap_is_int(copy_file_range(src, &off, out, NULL, 1000, 0), 1000,
               "copy_file_range from adafs to a kernel file");
    tap_is_int(off, 1000, "copy_file_range advanced the offset");
    close(out);
    struct stat st;
    tap_ok(stat(in_out("copy"), &st) == 0 && st.st_size == 1000, "the copy has the bytes");
    int back = open(in_mnt("copy2"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int kin = open(in_out("copy"), O_RDONLY);
    tap_is_int(sendfile(back, kin, NULL, 1000), 1000, "sendfile from a kernel file into adafs");
    close(kin);
    close(back);
    tap_ok(stat(in_mnt("copy2"), &st) == 0 && st.st_size == 1000, "sendfile wrote it");
    close(src);
}

static void test_fork_exec(void)
{
    int fd = open(in_mnt("forked"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    tap_is_int(write(fd, "parent;", 7), 7, "write before fork");
    pid_t pid = fork();
    if (pid == 0) {
        char buf[7];
        int good = pread(fd, buf, 7, 0) == 7 && !memcmp(buf, "parent;", 7) &&
                   pwrite(fd, "child;", 6, 7) == 6 && close(fd) == 0;
        _exit(good ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child used the inherited descriptor");
    char buf[32] = "";
    tap_ok(pread(fd, buf, sizeof buf, 0) == 13 && !memcmp(buf, "parent;child;", 13),
           "the parent sees the child's write");
    close(fd);

    /* exec: a child process reads the file by path, and writes to an adafs
     * descriptor it inherited as its standard output */
    int p[2];
    if (!tap_ok(pipe(p) == 0, "pipe"))
        return;
    pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        execlp("cat", "cat", in_mnt("forked"), (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    ssize_t n = read(p[0], buf, sizeof buf);
    close(p[0]);
    waitpid(pid, &status, 0);
    tap_ok(n == 13 && !memcmp(buf, "parent;child;", 13) && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0, "an exec'ed program sees the mount");
    /* posix_spawnp with an environment that lacks everything adafs needs,
     * reading through an inherited (non close-on-exec) adafs descriptor */
    int in = open(in_mnt("forked"), O_RDONLY);
    if (!tap_ok(in >= 0 && dup2(in, 7) == 7 && (in == 7 || close(in) == 0) && pipe(p) == 0,
                "setting up descriptor 7 and a pipe for posix_spawnp (%s)", strerror(errno)))
        return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    char *spawn_argv[] = { "sh", "-c", "cat <&7", NULL };
    char *spawn_env[] = { "PATH=/usr/bin:/bin", NULL };
    int rc = posix_spawnp(&pid, "sh", &fa, NULL, spawn_argv, spawn_env);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    memset(buf, 0, sizeof buf);
    n = rc == 0 ? read(p[0], buf, sizeof buf) : -1;
    close(p[0]);
    if (rc == 0)
        waitpid(pid, &status, 0);
    close(7);
    tap_ok(rc == 0 && n == 13 && !memcmp(buf, "parent;child;", 13),
           "posix_spawnp with a bare environment reads an inherited adafs descriptor");

    /* programs in adafs run (test_preload_programs.sh runs real ones); the
     * kernel's errors are kept: an empty file is no program (ENOEXEC), a
     * file without an x bit may not be run (EACCES) */
    int script = open(in_mnt("script.sh"), O_CREAT | O_WRONLY | O_TRUNC, 0755);
    close(script);
    char *script_argv[] = { "script.sh", NULL };
    is_err(execv(in_mnt("script.sh"), script_argv), ENOEXEC,
           "execv of an empty file in adafs: ENOEXEC, as the kernel gives");
    pid_t spid;
    tap_is_int(posix_spawn(&spid, in_mnt("script.sh"), NULL, NULL, script_argv, environ), ENOEXEC,
               "posix_spawn of it: ENOEXEC");
    script = open(in_mnt("noexec.sh"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    tap_ok(script >= 0 && write(script, "#!/bin/sh\nexit 5\n", 18) == 18 && close(script) == 0,
           "a script without execute permission in adafs");
    is_err(execv(in_mnt("noexec.sh"), script_argv), EACCES, "execv of it: EACCES");
    tap_is_int(posix_spawn(&spid, in_mnt("noexec.sh"), NULL, NULL, script_argv, environ), EACCES,
               "posix_spawn of it: EACCES");
    is_err(execv(mnt, script_argv), EACCES, "execv of a directory in adafs: EACCES");
    tap_is_int(chmod(in_mnt("noexec.sh"), 0755), 0, "chmod +x");
    tap_ok(posix_spawn(&spid, in_mnt("noexec.sh"), NULL, NULL, script_argv, environ) == 0 &&
           waitpid(spid, &status, 0) == spid && WIFEXITED(status) && WEXITSTATUS(status) == 5,
           "posix_spawn of the script in adafs runs it");
    pid = fork();
    if (pid == 0) {
        execv(in_mnt("noexec.sh"), script_argv);
        _exit(127);
    }
    tap_ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 5,
           "so does execv");
    /* a script in OUTSIDE (DIR/Y), run as ../../Y/run.sh from the mount
     * (DIR/X/mnt): the path only exists from the working directory the
     * program sees, not from the kernel's */
    char cwd_saved[PATH_MAX], rel_prog[PATH_MAX];
    int sfd = open(in_out("run.sh"), O_CREAT | O_WRONLY | O_TRUNC, 0755);
    tap_ok(sfd >= 0 && write(sfd, "#!/bin/sh\nexit 7\n", 18) == 18 && close(sfd) == 0,
           "a script outside the mount");
    snprintf(rel_prog, sizeof rel_prog, "../../%s/run.sh", strrchr(outside, '/') + 1);
    if (getcwd(cwd_saved, sizeof cwd_saved) && chdir(mnt) == 0) {
        pid = fork();
        if (pid == 0) {
            execl(rel_prog, "run.sh", (char *)NULL);
            _exit(127);
        }
        waitpid(pid, &status, 0);
        tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 7,
               "a relative program path from a working directory in adafs");
        if (chdir(cwd_saved) != 0)
            tap_ok(0, "chdir back to %s", cwd_saved);
    }

    pid = fork();
    if (pid == 0) {
        int o = open(in_mnt("exec-out"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        dup2(o, 1);
        close(o);
        execlp("echo", "echo", "hello from exec", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    fd = open(in_mnt("exec-out"), O_RDONLY);
    memset(buf, 0, sizeof buf);
    n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (!tap_ok(n == 16 && !strcmp(buf, "hello from exec\n") && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0, "an adafs descriptor crosses exec as standard output"))
        printf("#   open gave %d, read %zd (%s), echo exit status %d\n", fd, n,
               n < 0 ? strerror(errno) : buf, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    close(fd);
}

/* A program that redirects its own stdout into adafs, prints with stdio and
 * closes stdout: the text lands in the file and descriptor 1 is closed. */
static void test_stdout_redirect(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(in_mnt("stdout.txt"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (o < 0 || dup2(o, 1) != 1 || close(o) != 0)
            _exit(2);
        printf("printed %d\n", 42);
        if (fclose(stdout) != 0 || fcntl(1, F_GETFD) != -1 || errno != EBADF)
            _exit(3);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "fclose(stdout) on a redirected stdout closes descriptor 1 (status %d)",
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char buf[32] = "";
    int fd = open(in_mnt("stdout.txt"), O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (!tap_ok(n == 11 && !strcmp(buf, "printed 42\n"),
                "printf to stdout dup2'ed onto an adafs file lands in it"))
        printf("#   open gave %d, read %zd (%s)\n", fd, n, n < 0 ? strerror(errno) : buf);
    close(fd);
}

/* freopen() of stdout and stdin onto adafs files, in a child that then
 * exits normally (glibc flushes stdout at exit). */
static void test_freopen_std(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        char line[64];
        if (!freopen(in_mnt("stdio.txt"), "r", stdin) || !fgets(line, sizeof line, stdin) ||
            strcmp(line, "line 0\n") != 0)
            _exit(2);
        if (!freopen(in_mnt("freopen.txt"), "w", stdout))
            _exit(3);
        printf("via freopen %s", line);
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (!tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "freopen of stdin and stdout onto adafs files"))
        printf("#   child exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char buf[64] = "";
    int fd = open(in_mnt("freopen.txt"), O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    if (!tap_ok(n == 19 && !strcmp(buf, "via freopen line 0\n"),
                "what the program printed after freopen(stdout) is in the file"))
        printf("#   open gave %d, read %zd (%s)\n", fd, n, n < 0 ? strerror(errno) : buf);
    close(fd);
}

static void *thread_io(void *arg)
{
    long id = (long)arg, bad = 0;
    for (int i = 0; i < 100; i++) {
        char path[PATH_MAX], buf[64], back[64];
        snprintf(path, sizeof path, "%s/thr%ld-%d", id % 2 ? mnt : outside, id, i);
        int len = snprintf(buf, sizeof buf, "thread %ld file %d", id, i);
        const char *failed = NULL;
        int err = 0;
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
        if (fd < 0)
            failed = "open", err = errno;
        else if (write(fd, buf, (size_t)len) != len)
            failed = "write", err = errno;
        else if (pread(fd, back, (size_t)len, 0) != len || memcmp(buf, back, (size_t)len))
            failed = "pread", err = errno;
        if (fd >= 0 && close(fd) != 0 && !failed)
            failed = "close", err = errno;
        if (fd >= 0 && unlink(path) != 0 && !failed)
            failed = "unlink", err = errno;
        if (failed) {
            printf("# thread %ld: %s of %s failed: %s\n", id, failed, path, strerror(err));
            bad++;
        }
    }
    return (void *)bad;
}

static void test_threads(void)
{
    pthread_t t[6];
    long bad = 0;
    for (long i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, thread_io, (void *)i);
    for (int i = 0; i < 6; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    tap_is_int(bad, 0, "6 threads opening, writing, reading, closing inside and outside");
}

static void test_outside(void)
{
    struct stat st;
    int fd = open(in_out("outside.txt"), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    tap_ok(fd >= 0 && write(fd, "k", 1) == 1 && close(fd) == 0, "a file outside the mount");
    tap_ok(syscall(SYS_newfstatat, AT_FDCWD, in_out("outside.txt"), &st, 0) == 0 &&
           st.st_size == 1, "it is in the kernel file system");
    tap_ok(syscall(SYS_newfstatat, AT_FDCWD, mnt, &st, 0) == 0 && S_ISREG(st.st_mode) &&
           st.st_size == 0, "the kernel still sees the empty placeholder at the mount point");
    tap_ok(syscall(SYS_newfstatat, AT_FDCWD, in_mnt("data"), &st, 0) == -1 && errno == ENOTDIR,
           "files made in the mount are not in the kernel");
    tap_ok(stat(in_mnt(".."), &st) == 0 && S_ISDIR(st.st_mode),
           "MOUNT/.. is the kernel directory holding the mount point");
    char through[PATH_MAX];
    snprintf(through, sizeof through, "%s/dir/../../../%s/outside.txt", mnt,
             strrchr(outside, '/') + 1);
    tap_ok(stat(through, &st) == 0 && st.st_size == 1,
           "an absolute path through the mount and back out with .. reaches the kernel file");
    /* a component-by-component walk from "/" with openat(O_PATH), as
     * rsync does before it changes into a destination */
    int walk = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    char comps[PATH_MAX];
    snprintf(comps, sizeof comps, "%s", mnt + 1);
    for (char *save, *c = strtok_r(comps, "/", &save); c && walk >= 0;
         c = strtok_r(NULL, "/", &save)) {
        int next = openat(walk, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(walk);
        walk = next;
    }
    tap_ok(walk >= 0 && fstatat(walk, "dir/g", &st, 0) == 0 && st.st_size == 70000,
           "an openat walk from / reaches the mount and files in it");
    close(walk);
    char near[PATH_MAX];
    snprintf(near, sizeof near, "%s-not", mnt); /* shares a prefix, is not inside */
    is_err(stat(near, &st), ENOENT, "a sibling with the mount as prefix is the kernel's");
}

/* Writes 512 KiB to name (unless there) and opens and reads it twice in
 * 64 KiB reads; returns the open descriptor. */
static int read_twice(const char *name)
{
    static char buf[512 << 10];
    int fd = open(in_mnt(name), O_CREAT | O_RDWR, 0644);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0) {
        memset(buf, 'd', sizeof(buf));
        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
            return fd;
    }
    for (int round = 0; round < 2; round++)
        for (off_t off = 0; off < (off_t)sizeof(buf); off += 65536)
            if (pread(fd, buf, 65536, off) != 65536)
                break;
    return fd;
}

/* A descriptor of this process that names a server's data file, or -1. */
static int data_file_fd(void)
{
    int found = -1;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char link[300], target[PATH_MAX];
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strstr(target, "/data/") && !strstr(target, "(deleted)"))
                found = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    return found;
}

/* libadafs's own server connections must survive what programs do to
 * descriptor numbers: they sit high, and dup2/close/closefrom step around
 * them. Run last: it closes every descriptor from 3 up. */
static void test_library_fds(void)
{
    struct stat st;
    tap_ok(stat(in_mnt("data"), &st) == 0, "a call that needs the servers");
    int lib = -1, low_sockets = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != dirfd(d) && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
            if (fd < 100)
                low_sockets++;
            else if (lib < 0)
                lib = fd;
        }
    }
    if (d)
        closedir(d);
    if (!tap_ok(lib >= 100 && low_sockets == 0,
                "libadafs's connections sit at high descriptor numbers"))
        printf("#   first high socket %d, %d sockets below 100\n", lib, low_sockets);
    if (lib < 0)
        return;
    is_err(dup2(0, lib), EBADF, "dup2 onto a library connection: EBADF");
    is_err(dup3(0, lib, 0), EBADF, "dup3 onto a library connection: EBADF");
    is_err(close(lib), EBADF, "close of a library connection: EBADF");
    /* A connection the library opened and closed again (a private one, for
     * an exec from adafs that fails): its number is the program's again,
     * for a pipe too (ownfd.c). Every free number near the library's. */
    char *none_argv[] = { "none", NULL };
    is_err(execv(in_mnt("no-such-program"), none_argv), ENOENT,
           "execv of a missing adafs file: ENOENT");
    int pp[2], tried = 0, refused = 0;
    if (pipe(pp) == 0) {
        for (int k = lib + 1; k < lib + 64; k++) {
            if (fcntl(k, F_GETFD) >= 0)
                continue;
            tried++;
            if (dup2(pp[0], k) != k || close(k) != 0) {
                printf("#   a pipe at %d: %s\n", k, strerror(errno));
                refused++;
            }
        }
        close(pp[0]);
        close(pp[1]);
    }
    tap_ok(tried > 0 && refused == 0,
           "a pipe at a number the library's connections left is the program's to close (%d tried)",
           tried);
    /* A file read again and again: the library holds a read-only
     * descriptor of the local server's data file (lib/direct.c). */
    int big = read_twice("direct-read");
    int data = data_file_fd();
    tap_ok(data >= 100, "a file read twice: the library holds its data file high (%d)", data);
    if (data >= 100) {
        is_err(close(data), EBADF, "close of the library's data file descriptor: EBADF");
        is_err(dup2(0, data), EBADF, "dup2 onto it: EBADF");
        /* The program closes it behind the library's back (a raw system
         * call) and puts a file of its own there: the library's next read
         * finds another file at the number, reads from the server and
         * leaves the program's file alone (lib/direct.c); the number is the
         * program's to close. */
        int own = open(in_out("own-file"), O_CREAT | O_RDWR | O_TRUNC, 0600);
        static char got[65536];
        tap_ok(own >= 0 && write(own, "own", 3) == 3 && syscall(SYS_close, data) == 0 &&
                   dup2(own, data) == data,
               "the program puts its own file at the library's number");
        tap_ok(pread(big, got, sizeof(got), 65536) == (ssize_t)sizeof(got) && got[0] == 'd' &&
                   got[sizeof(got) - 1] == 'd',
               "a read of the adafs file after that gives its data");
        tap_ok(fcntl(data, F_GETFD) >= 0 && close(data) == 0,
               "the program's file at that number survived the read, and is the program's to close");
        close(own);
        unlink(in_out("own-file"));
    }
    /* Once the library closed its descriptor, the number is the
     * program's again, whatever the program puts there: a pipe or socket
     * there is not mistaken for one of the library's (a number the library
     * once held, ownfd.c). Both kinds, whatever stdin happens to be. */
    close(big);
    if (data >= 100) {
        int p[2] = { -1, -1 }, sv[2] = { -1, -1 };
        tap_ok(dup2(0, data) == data && close(data) == 0,
               "after the file's close, its number is the program's to use");
        tap_ok(pipe(p) == 0 && dup2(p[0], data) == data && close(data) == 0,
               "a pipe put there is the program's to close");
        tap_ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && dup2(sv[0], data) == data &&
                   close(data) == 0,
               "and so is a socket");
        for (int i = 0; i < 2; i++) {
            close(p[i]);
            close(sv[i]);
        }
    }
    int fd = open(in_mnt("before-closefrom"), O_CREAT | O_WRONLY, 0644);
    closefrom(3);
    is_err(fcntl(fd, F_GETFD), EBADF, "closefrom(3) closed the program's adafs descriptor");
    tap_ok(fstat(lib, &st) == 0 && S_ISSOCK(st.st_mode), "but not the library's connection");
    tap_ok(stat(in_mnt("before-closefrom"), &st) == 0, "adafs still works after closefrom(3)");
    fd = open(in_mnt("after"), O_CREAT | O_WRONLY, 0644);
    tap_ok(fd >= 3 && write(fd, "x", 1) == 1 && close_range(3, ~0U, 0) == 0,
           "open, write and close_range(3, ~0) after it");
    tap_ok(stat(in_mnt("after"), &st) == 0 && st.st_size == 1, "and adafs still answers");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MOUNT OUTSIDE\n", argv[0]);
        return 2;
    }
    mnt = argv[1];
    outside = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_descriptors();
    test_entry_points();
    test_refusals();
    test_namespace();
    test_cwd();
    test_dirs();
    test_stdio();
    test_copies();
    test_fork_exec();
    test_stdout_redirect();
    test_freopen_std();
    test_threads();
    test_outside();
    test_library_fds();
    return tap_done();
}
