/* files_desc: the calls on an open descriptor's state rather than its
 * data: seek, stat, truncate, sync, flags, path. */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* The current size of an open file. */
static int file_size(adafs *fs, struct open_file *of, uint64_t *size)
{
    if (of->orphan) {
        *size = of->orphan_size;
        return 0;
    }
    struct fs_record rec;
    int rc = stat_record(fs, of->path, &rec);
    *size = rec.size;
    if (rc == 0 && rec.key == of->key)
        of->known_size = rec.size;
    return rc;
}

off_t adafs_lseek(adafs *fs, int fd, off_t offset, int whence)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    int64_t base = 0;
    uint64_t size = 0;
    int rc = 0;
    switch (whence) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = (int64_t)of->offset; break;
    case SEEK_END:
    case SEEK_DATA:
    case SEEK_HOLE:
        rc = S_ISDIR(of->mode) ? 0 : file_size(fs, of, &size);
        base = whence == SEEK_END ? (int64_t)size : 0;
        break;
    default: rc = -EINVAL;
    }
    int64_t pos = base + offset;
    if (rc == 0 && (whence == SEEK_DATA || whence == SEEK_HOLE)) {
        /* No hole tracking: all of the file is data, the hole is at its end. */
        if (offset < 0 || (uint64_t)offset >= size)
            rc = -ENXIO;
        pos = whence == SEEK_DATA ? offset : (int64_t)size;
    }
    if (rc == 0 && (pos < 0 || (offset > 0 && pos < base)))
        rc = -EINVAL;
    if (rc == 0)
        of->offset = (uint64_t)pos;
    fd_put(fs, of);
    return rc < 0 ? rc : (off_t)pos;
}

int adafs_fstat(adafs *fs, int fd, struct stat *st)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    int rc = 0;
    struct fs_record rec;
    if (of->orphan) {
        rec = of->orphan_rec;
        rec.size = of->orphan_size;
    } else {
        rc = stat_record(fs, of->path, &rec);
        if (rc == 0 && rec.key == of->key)
            of->known_size = rec.size;
    }
    if (rc == 0)
        record_to_stat(fs, &rec, st);
    fd_put(fs, of);
    return rc == -ENOENT ? -ESTALE : rc;
}

int adafs_ftruncate(adafs *fs, int fd, off_t length)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    int rc = 0;
    if (length < 0 || (of->flags & O_ACCMODE) == O_RDONLY || !S_ISREG(of->mode)) {
        rc = -EINVAL;
    } else if (of->orphan) {
        drop_data(fs, of->key, &of->cap, (uint64_t)length, of->orphan_size, -1);
        of->orphan_size = (uint64_t)length;
    } else {
        rc = adafs_truncate(fs, of->path, length);
        if (rc == 0)
            of->known_size = (uint64_t)length;
    }
    fd_put(fs, of);
    return rc;
}

int adafs_fsync(adafs *fs, int fd)
{
    /* Servers write through to their local file system at once; there is
     * nothing buffered on the client to push. */
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    fd_put(fs, of);
    return 0;
}

int adafs_get_flags(adafs *fs, int fd)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    int flags = of->flags;
    fd_put(fs, of);
    return flags;
}

int adafs_set_flags(adafs *fs, int fd, int flags)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    const int settable = O_APPEND | O_NONBLOCK;
    of->flags = (of->flags & ~settable) | (flags & settable);
    fd_put(fs, of);
    return 0;
}

const char *adafs_fd_path(adafs *fs, int fd)
{
    pthread_mutex_lock(&fs->table_lock);
    const char *p = fd >= 0 && fd < fs->nfiles && fs->files[fd] ? fs->files[fd]->path : NULL;
    pthread_mutex_unlock(&fs->table_lock);
    return p;
}
