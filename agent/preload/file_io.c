/* file_io: the data calls of the descriptor family (file.c): read/write
 * and their positioned and vectored forms. */
#include "preload.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

PL_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.read(fd, buf, count);
    adafs *fs = route_enter_fd(ROUTE_READ, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(adafs_read(fs, lfd, buf, count));
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.write(fd, buf, count);
    adafs *fs = route_enter_fd(ROUTE_WRITE, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(adafs_write(fs, lfd, buf, count));
}

static ssize_t pread_adafs(int lfd, void *buf, size_t count, off_t off)
{
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    adafs *fs = route_enter_fd(ROUTE_READ, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(adafs_pread(fs, lfd, buf, count, off));
}

static ssize_t pwrite_adafs(int lfd, const void *buf, size_t count, off_t off)
{
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    adafs *fs = route_enter_fd(ROUTE_WRITE, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(adafs_pwrite(fs, lfd, buf, count, off));
}

PL_EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.pread(fd, buf, count, off);
    return pread_adafs(lfd, buf, count, off);
}

PL_EXPORT ssize_t pread64(int fd, void *buf, size_t count, off_t off)
{
    return pread(fd, buf, count, off);
}

PL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t count, off_t off)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.pwrite(fd, buf, count, off);
    return pwrite_adafs(lfd, buf, count, off);
}

PL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t count, off_t off)
{
    return pwrite(fd, buf, count, off);
}

/* Vectored I/O becomes one library call on a gathered buffer, so a writev
 * to an O_APPEND file stays one atomic append. off < 0: current offset. */
static ssize_t iov_total(const struct iovec *iov, int iovcnt)
{
    if (iovcnt < 0 || iovcnt > IOV_MAX) {
        errno = EINVAL;
        return -1;
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total) {
            errno = EINVAL;
            return -1;
        }
        total += iov[i].iov_len;
    }
    return (ssize_t)total;
}

static ssize_t io_lfd(int lfd, bool writing, void *buf, size_t count, off_t off)
{
    if (off >= 0)
        return writing ? pwrite_adafs(lfd, buf, count, off) : pread_adafs(lfd, buf, count, off);
    adafs *fs = route_enter_fd(writing ? ROUTE_WRITE : ROUTE_READ, lfd, &lfd);
    if (!fs)
        return -1;
    return route_leave(writing ? adafs_write(fs, lfd, buf, count)
                               : adafs_read(fs, lfd, buf, count));
}

static ssize_t iov_adafs(int lfd, bool writing, const struct iovec *iov, int iovcnt, off_t off)
{
    ssize_t total = iov_total(iov, iovcnt);
    if (total < 0)
        return -1;
    if (iovcnt == 1)
        return io_lfd(lfd, writing, iov[0].iov_base, iov[0].iov_len, off);
    char *buf = malloc(total ? (size_t)total : 1);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    size_t at = 0;
    if (writing)
        for (int i = 0; i < iovcnt; at += iov[i].iov_len, i++)
            memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
    ssize_t n = io_lfd(lfd, writing, buf, (size_t)total, off);
    if (!writing && n > 0) {
        at = 0;
        for (int i = 0; i < iovcnt && at < (size_t)n; i++) {
            size_t part = iov[i].iov_len < (size_t)n - at ? iov[i].iov_len : (size_t)n - at;
            memcpy(iov[i].iov_base, buf + at, part);
            at += part;
        }
    }
    int saved = errno;
    free(buf);
    errno = saved;
    return n;
}

/* All vectored calls in one place: kind says which one the program made,
 * off is -1 for "the file offset" (readv, writev, and the v2 calls with
 * offset -1). */
enum vec_kind { VEC_READV, VEC_WRITEV, VEC_PREADV, VEC_PWRITEV, VEC_PREADV2, VEC_PWRITEV2 };

static ssize_t vec_io(enum vec_kind kind, int fd, const struct iovec *iov, int iovcnt,
                      off_t off, int flags)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd)) {
        switch (kind) {
        case VEC_READV:    return real.readv(fd, iov, iovcnt);
        case VEC_WRITEV:   return real.writev(fd, iov, iovcnt);
        case VEC_PREADV:   return real.preadv(fd, iov, iovcnt, off);
        case VEC_PWRITEV:  return real.pwritev(fd, iov, iovcnt, off);
        case VEC_PREADV2:  return real.preadv2(fd, iov, iovcnt, off, flags);
        case VEC_PWRITEV2: return real.pwritev2(fd, iov, iovcnt, off, flags);
        }
    }
    /* preadv/pwritev need an offset; the v2 calls also take -1. The RWF_*
     * hints of the v2 calls change nothing in adafs. */
    bool v2 = kind == VEC_PREADV2 || kind == VEC_PWRITEV2;
    if ((kind != VEC_READV && kind != VEC_WRITEV) && (off < -1 || (off == -1 && !v2))) {
        errno = EINVAL;
        return -1;
    }
    bool writing = kind == VEC_WRITEV || kind == VEC_PWRITEV || kind == VEC_PWRITEV2;
    return iov_adafs(lfd, writing, iov, iovcnt, off);
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    return vec_io(VEC_READV, fd, iov, iovcnt, -1, 0);
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    return vec_io(VEC_WRITEV, fd, iov, iovcnt, -1, 0);
}

PL_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return vec_io(VEC_PREADV, fd, iov, iovcnt, off, 0);
}

PL_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return vec_io(VEC_PREADV, fd, iov, iovcnt, off, 0);
}

PL_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return vec_io(VEC_PWRITEV, fd, iov, iovcnt, off, 0);
}

PL_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    return vec_io(VEC_PWRITEV, fd, iov, iovcnt, off, 0);
}

PL_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    return vec_io(VEC_PREADV2, fd, iov, iovcnt, off, flags);
}

PL_EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    return vec_io(VEC_PREADV2, fd, iov, iovcnt, off, flags);
}

PL_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    return vec_io(VEC_PWRITEV2, fd, iov, iovcnt, off, flags);
}

PL_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    return vec_io(VEC_PWRITEV2, fd, iov, iovcnt, off, flags);
}
