/* misc: the rest of what real programs do to files. mmap and the calls
 * that act on mappings (served from memory: mapping.h), readahead/fadvise
 * hints (no-ops), preallocation, in-kernel copies (copy_file_range,
 * sendfile, splice, FICLONE: emulated or refused so cp and friends fall
 * back to read and write), extended attributes (ENOTSUP) and
 * mkstemp/mkdtemp (glibc's use internal calls the interposer cannot see). */
#include "preload.h"
#include "mapping.h"

#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An address the kernel refuses (EINVAL: off a page): the adafs mappings
 * there are not to be forgotten (written back and dropped from the table)
 * for a call that does nothing, or they stay mapped untracked and their
 * later writes never reach the file. */
static bool off_page(const void *addr)
{
    return (uintptr_t)addr & ((uintptr_t)getpagesize() - 1);
}

/* The calls on memory below go to the kernel with syscall(): allocators
 * (ASan's among them) map and unmap memory before anything, this library
 * included, is initialised, and a program that maps no adafs file pays one
 * atomic load for them. */
PL_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    int lfd;
    if (flags & MAP_ANONYMOUS) {
        /* One over an adafs mapping replaces it: write that back first. */
        if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE) && mapping_count() &&
            !route_depth && !off_page(addr))
            mapping_forget_range((uintptr_t)addr, len);
        return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off); /* -1 is MAP_FAILED */
    }
    if (!PL_ADAFS_FD(fd, lfd))
        return real.mmap(addr, len, prot, flags, fd, off);
    return mapping_map(addr, len, prot, flags, lfd, off);
}

PL_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap(addr, len, prot, flags, fd, off);
}

PL_EXPORT int munmap(void *addr, size_t len)
{
    if (mapping_count() && !route_depth && !off_page(addr))
        mapping_forget_range((uintptr_t)addr, len);
    return (int)syscall(SYS_munmap, addr, len);
}

PL_EXPORT int msync(void *addr, size_t len, int flags)
{
    if (mapping_count() && !route_depth) {
        int rc = mapping_sync_range((uintptr_t)addr, len);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
    }
    return (int)syscall(SYS_msync, addr, len, flags);
}

PL_EXPORT int mprotect(void *addr, size_t len, int prot)
{
    if (mapping_count() && !route_depth) {
        int rc = mapping_protect((uintptr_t)addr, len, prot);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
    }
    return (int)syscall(SYS_mprotect, addr, len, prot);
}

PL_EXPORT int madvise(void *addr, size_t len, int advice)
{
    bool discards = advice == MADV_DONTNEED || advice == MADV_FREE;
#ifdef MADV_DONTNEED_LOCKED
    discards = discards || advice == MADV_DONTNEED_LOCKED;
#endif
    if (discards && mapping_count() && !route_depth) {
        int rc = mapping_advise((uintptr_t)addr, len, advice);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
        return 0;
    }
    return (int)syscall(SYS_madvise, addr, len, advice);
}

PL_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    bool tracked = mapping_count() && !route_depth;
    if (tracked && (off_page(old) || ((flags & MREMAP_FIXED) && off_page(want)))) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    int rc = tracked ? mapping_before_remap((uintptr_t)old, old_len) : 0;
    if (rc < 0) {
        errno = -rc;
        return MAP_FAILED;
    }
    if (tracked && new_len < old_len)   /* the cut-off tail is unmapped */
        mapping_forget_range((uintptr_t)old + new_len, old_len - new_len);
    if (tracked && (flags & MREMAP_FIXED))
        mapping_forget_range((uintptr_t)want, new_len);
    void *p = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, want);
    if (tracked && p != MAP_FAILED)
        mapping_moved((uintptr_t)old, old_len < new_len ? old_len : new_len, (uintptr_t)p,
                      new_len);
    return p;
}

PL_EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.posix_fadvise(fd, off, len, advice);
    if (advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE)
        return EINVAL;
    return 0; /* a hint; adafs keeps no client cache to tune */
}

PL_EXPORT int posix_fadvise64(int fd, off_t off, off_t len, int advice)
{
    return posix_fadvise(fd, off, len, advice);
}

PL_EXPORT ssize_t readahead(int fd, off_t off, size_t count)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.readahead(fd, off, count);
    return 0;
}

/* Preallocation becomes "extend the size if needed": adafs has no
 * reservations, so a later write can still fail with ENOSPC. Returns 0 or
 * an errno value. */
static int extend_to(int lfd, off_t off, off_t len)
{
    if (off < 0 || len <= 0)
        return EINVAL;
    if (off > INT64_MAX - len)
        return EFBIG;
    adafs *fs = route_enter_fd(ROUTE_ATTR, lfd, &lfd);
    if (!fs)
        return EIO;
    struct stat st;
    int rc = adafs_fstat(fs, lfd, &st);
    if (rc == 0 && st.st_size < off + len)
        rc = adafs_ftruncate(fs, lfd, off + len);
    route_leave_raw(0);
    return -rc;
}

PL_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.posix_fallocate(fd, off, len);
    return extend_to(lfd, off, len);
}

PL_EXPORT int posix_fallocate64(int fd, off_t off, off_t len)
{
    return posix_fallocate(fd, off, len);
}

PL_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fallocate(fd, mode, off, len);
    if (mode == FALLOC_FL_KEEP_SIZE)
        return off < 0 || len <= 0 ? (errno = EINVAL, -1) : 0;
    if (mode != 0) {
        errno = EOPNOTSUPP; /* punch hole, collapse, zero range... */
        return -1;
    }
    int rc = extend_to(lfd, off, len);
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

PL_EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
{
    return fallocate(fd, mode, off, len);
}

/* copy_file_range and sendfile with an adafs end: copied through the
 * interposed pread/read and pwrite/write. A NULL in_off or out_off means
 * the descriptor's own offset, as in the kernel calls. */
static ssize_t copy_emulated(int in, off_t *in_off, int out, off_t *out_off, size_t len)
{
    enum { BUFSZ = 1 << 20 };
    size_t want = len < BUFSZ ? len : BUFSZ;
    char *buf = malloc(want ? want : 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    size_t done = 0;
    ssize_t result = 0;
    while (done < len) {
        size_t chunk = len - done < BUFSZ ? len - done : BUFSZ;
        ssize_t n = in_off ? pread(in, buf, chunk, *in_off) : read(in, buf, chunk);
        if (n <= 0) {
            result = n;
            break;
        }
        size_t put = 0;
        while (put < (size_t)n) {
            ssize_t w = out_off ? pwrite(out, buf + put, (size_t)n - put, *out_off)
                                : write(out, buf + put, (size_t)n - put);
            if (w <= 0) {
                result = -1;
                break;
            }
            put += (size_t)w;
            if (out_off)
                *out_off += w;
        }
        if (in_off)
            *in_off += (off_t)put;
        else if (put < (size_t)n)
            lseek(in, (off_t)put - n, SEEK_CUR); /* give back what was not written */
        done += put;
        if (result < 0)
            break;
    }
    int saved = errno;
    free(buf);
    errno = saved;
    return done ? (ssize_t)done : result;
}

PL_EXPORT ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off,
                                  size_t len, unsigned int flags)
{
    if (!pl_active() || (fdmap_get(in) < 0 && fdmap_get(out) < 0))
        return real.copy_file_range(in, in_off, out, out_off, len, flags);
    if (flags) {
        errno = EINVAL;
        return -1;
    }
    return copy_emulated(in, in_off, out, out_off, len);
}

PL_EXPORT ssize_t sendfile(int out, int in, off_t *offset, size_t count)
{
    if (!pl_active() || (fdmap_get(in) < 0 && fdmap_get(out) < 0))
        return real.sendfile(out, in, offset, count);
    /* reads at *offset if given (in's own offset otherwise), writes at out's */
    return copy_emulated(in, offset, out, NULL, count);
}

PL_EXPORT ssize_t sendfile64(int out, int in, off_t *offset, size_t count)
{
    return sendfile(out, in, offset, count);
}

PL_EXPORT ssize_t splice(int in, off_t *in_off, int out, off_t *out_off, size_t len,
                         unsigned int flags)
{
    if (!pl_active() || (fdmap_get(in) < 0 && fdmap_get(out) < 0))
        return real.splice(in, in_off, out, out_off, len, flags);
    errno = EINVAL; /* splice(2): "the target file does not support splicing" */
    return -1;
}

/* ioctl: no device controls on adafs files (ENOTTY, as for a regular file
 * without them); a reflink from or to adafs is EOPNOTSUPP / EXDEV so that
 * cp --reflink=auto copies the data instead. */
PL_EXPORT int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!pl_active())
        return real.ioctl(fd, request, arg);
    bool clone = request == FICLONE || request == FICLONERANGE || request == FIDEDUPERANGE;
    if (fdmap_get(fd) >= 0) {
        errno = clone ? EOPNOTSUPP : ENOTTY;
        return -1;
    }
    if (request == FICLONE && fdmap_get((int)(intptr_t)arg) >= 0) {
        errno = EXDEV;
        return -1;
    }
    if (request == FICLONERANGE && arg &&
        fdmap_get((int)((struct file_clone_range *)arg)->src_fd) >= 0) {
        errno = EXDEV;
        return -1;
    }
    return real.ioctl(fd, request, arg);
}

/* ---- extended attributes: none in adafs ---- */

/* ENOTSUP for an existing adafs path, the lookup error otherwise. */
static int no_xattr_path(int m, const char *inner)
{
    struct stat st;
    adafs *fs = route_enter(ROUTE_STAT, m);
    if (!fs)
        return -1;
    if (route_leave(adafs_stat(fs, inner, &st)) < 0)
        return -1;
    errno = ENOTSUP;
    return -1;
}

#define XATTR_PATH(ret, name, params, args, path)                              \
    PL_EXPORT ret name params                                                  \
    {                                                                          \
        struct pathres r;                                                      \
        if (!pl_active())                                                      \
            return real.name args;                                             \
        PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, (path = r.kpath, real.name args)); \
        return no_xattr_path(r.mount, r.inner);                                \
    }

#define XATTR_FD(ret, name, params, args, fd)                                  \
    PL_EXPORT ret name params                                                  \
    {                                                                          \
        int lfd;                                                               \
        if (!PL_ADAFS_FD(fd, lfd))                                             \
            return real.name args;                                             \
        errno = ENOTSUP;                                                       \
        return -1;                                                             \
    }

XATTR_PATH(ssize_t, getxattr, (const char *path, const char *name, void *value, size_t size),
           (path, name, value, size), path)
XATTR_PATH(ssize_t, lgetxattr, (const char *path, const char *name, void *value, size_t size),
           (path, name, value, size), path)
XATTR_FD(ssize_t, fgetxattr, (int fd, const char *name, void *value, size_t size),
         (fd, name, value, size), fd)
XATTR_PATH(ssize_t, listxattr, (const char *path, char *list, size_t size),
           (path, list, size), path)
XATTR_PATH(ssize_t, llistxattr, (const char *path, char *list, size_t size),
           (path, list, size), path)
XATTR_FD(ssize_t, flistxattr, (int fd, char *list, size_t size), (fd, list, size), fd)
XATTR_PATH(int, setxattr, (const char *path, const char *name, const void *value, size_t size,
                           int flags), (path, name, value, size, flags), path)
XATTR_PATH(int, lsetxattr, (const char *path, const char *name, const void *value, size_t size,
                            int flags), (path, name, value, size, flags), path)
XATTR_FD(int, fsetxattr, (int fd, const char *name, const void *value, size_t size, int flags),
         (fd, name, value, size, flags), fd)
XATTR_PATH(int, removexattr, (const char *path, const char *name), (path, name), path)
XATTR_PATH(int, lremovexattr, (const char *path, const char *name), (path, name), path)
XATTR_FD(int, fremovexattr, (int fd, const char *name), (fd, name), fd)

/* ---- temporary names ---- */

/* Replaces the six X before suffixlen trailing bytes with random letters
 * and calls make(path) until it does not fail with EEXIST. */
static int make_temp(char *tmpl, int suffixlen, int (*make)(char *, int), int flags)
{
    static const char letters[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t n = strlen(tmpl);
    if (suffixlen < 0 || n < 6 + (size_t)suffixlen ||
        memcmp(tmpl + n - suffixlen - 6, "XXXXXX", 6) != 0) {
        errno = EINVAL;
        return -1;
    }
    char *x = tmpl + n - suffixlen - 6;
    for (int attempt = 0; attempt < 1000; attempt++) {
        unsigned char rnd[6];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            return -1;
        for (int i = 0; i < 6; i++)
            x[i] = letters[rnd[i] % (sizeof letters - 1)];
        int rc = make(tmpl, flags);
        if (rc >= 0 || errno != EEXIST)
            return rc;
    }
    errno = EEXIST;
    return -1;
}

static int make_file(char *path, int flags)
{
    return open(path, O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE), 0600);
}

static int make_dir(char *path, int flags)
{
    return mkdir(path, 0700);
}

static bool template_in_adafs(const char *tmpl)
{
    struct pathres r;
    return pl_active() && pathres_resolve(AT_FDCWD, tmpl, &r) == 0 && r.adafs;
}

PL_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
{
    if (!template_in_adafs(tmpl))
        return real.mkostemps(tmpl, suffixlen, flags);
    return make_temp(tmpl, suffixlen, make_file, flags);
}

PL_EXPORT int mkstemp(char *tmpl)
{
    return mkostemps(tmpl, 0, 0);
}

PL_EXPORT int mkstemp64(char *tmpl)
{
    return mkostemps(tmpl, 0, 0);
}

PL_EXPORT int mkostemp(char *tmpl, int flags)
{
    return mkostemps(tmpl, 0, flags);
}

PL_EXPORT int mkostemp64(char *tmpl, int flags)
{
    return mkostemps(tmpl, 0, flags);
}

PL_EXPORT int mkstemps(char *tmpl, int suffixlen)
{
    return mkostemps(tmpl, suffixlen, 0);
}

PL_EXPORT int mkstemps64(char *tmpl, int suffixlen)
{
    return mkostemps(tmpl, suffixlen, 0);
}

PL_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
{
    return mkostemps(tmpl, suffixlen, flags);
}

PL_EXPORT char *mkdtemp(char *tmpl)
{
    if (!template_in_adafs(tmpl))
        return real.mkdtemp(tmpl);
    return make_temp(tmpl, 0, make_dir, 0) < 0 ? NULL : tmpl;
}
