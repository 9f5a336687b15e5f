/* files_fd: the *_fd calls: reads and writes (files.c) with the data
 * coming from or going to a file of the caller (struct span) instead of
 * memory, in batches of 32 chunks. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

/* Not O_APPEND: splice cannot write at an offset there. */
int check_caller_file(int fd, int reading, uint64_t *size)
{
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fstat(fd, &st) < 0)
        return -errno;
    int acc = fl & O_ACCMODE;
    if ((fl & O_PATH) || (reading ? acc == O_WRONLY : acc == O_RDONLY))
        return -EBADF;
    if (S_ISDIR(st.st_mode))
        return -EISDIR;
    if (!S_ISREG(st.st_mode) || (!reading && (fl & O_APPEND)))
        return -EINVAL;
    *size = (uint64_t)st.st_size;
    return 0;
}

/* Bytes per batch of the *_fd calls: ADAFS_CREATE_FD_CHUNKS chunks in
 * flight (what one adafs_create_write_fd sends at once), then the next
 * round trip (a whole large file in one batch would need a call per chunk
 * in memory at once). */
static size_t fd_slice(const adafs *fs, uint64_t off, size_t left)
{
    uint64_t cs = fs->inst.chunk_size, room = ADAFS_CREATE_FD_CHUNKS * cs - off % cs;
    return left < room ? left : (size_t)room;
}

/* Moves count bytes between of at offset and the caller's file at
 * fd_off, batch by batch, up to the first short or failed one. */
static ssize_t fd_transfer(adafs *fs, struct open_file *of, int writing, int fd, uint64_t fd_off,
                           size_t count, uint64_t offset, int keep_holes, int *zeros)
{
    if (count > SSIZE_MAX)
        count = SSIZE_MAX;
    size_t done = 0;
    ssize_t rc = 0;
    while (done < count) {
        struct span sp = { .fd = fd, .fd_off = fd_off + done, .keep_holes = keep_holes,
                           .zeros = zeros };
        size_t want = fd_slice(fs, offset + done, count - done);
        rc = writing ? do_pwrite(fs, of, &sp, want, offset + done, 0)
                     : do_pread(fs, of, &sp, want, offset + done);
        if (rc < 0)
            break;
        done += (size_t)rc;
        if ((size_t)rc < want)
            break;   /* the end of the file, or a short write */
    }
    return done > 0 ? (ssize_t)done : rc;
}

ssize_t adafs_pwrite_from_fd(adafs *fs, int fd, int src_fd, off_t src_off, size_t count,
                             off_t offset)
{
    if (offset < 0 || src_off < 0)
        return -EINVAL;
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    uint64_t size = 0;
    ssize_t rc = S_ISDIR(of->mode) ? -EISDIR
               : (of->flags & O_ACCMODE) == O_RDONLY ? -EBADF
               : check_caller_file(src_fd, 1, &size);
    /* Only what the source holds now: the length goes out before the data. */
    uint64_t avail = size > (uint64_t)src_off ? size - (uint64_t)src_off : 0;
    if (rc == 0)
        rc = fd_transfer(fs, of, 1, src_fd, (uint64_t)src_off, count < avail ? count : (size_t)avail,
                         (uint64_t)offset, 0, NULL);
    fd_put(fs, of);
    return rc;
}

static ssize_t pread_to_fd(adafs *fs, int fd, int dst_fd, off_t dst_off, size_t count,
                           off_t offset, int keep_holes, int *zeros)
{
    if (offset < 0 || dst_off < 0)
        return -EINVAL;
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    uint64_t size;
    ssize_t rc = S_ISDIR(of->mode) ? -EISDIR
               : (of->flags & O_ACCMODE) == O_WRONLY ? -EBADF
               : check_caller_file(dst_fd, 0, &size);
    if (rc == 0)
        rc = fd_transfer(fs, of, 0, dst_fd, (uint64_t)dst_off, count, (uint64_t)offset,
                         keep_holes, zeros);
    fd_put(fs, of);
    return rc;
}

ssize_t adafs_pread_to_fd(adafs *fs, int fd, int dst_fd, off_t dst_off, size_t count,
                          off_t offset)
{
    return pread_to_fd(fs, fd, dst_fd, dst_off, count, offset, 0, NULL);
}

ssize_t adafs_pread_to_fd_sparse(adafs *fs, int fd, int dst_fd, off_t dst_off, size_t count,
                                 off_t offset, int *zeros)
{
    return pread_to_fd(fs, fd, dst_fd, dst_off, count, offset, 1, zeros);
}
