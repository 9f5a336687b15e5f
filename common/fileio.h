/* fileio: reading a whole small file into memory, writing a whole buffer,
 * and replacing a file atomically.
 *
 * No stdio, so code inside the LD_PRELOAD interposer's library may use it;
 * callers open and fstat the file themselves (each has its own checks: a
 * secret file must be 0600, a list file a regular file...). */
#ifndef ADAFS_FILEIO_H
#define ADAFS_FILEIO_H

#include "linknames.h"

#include <stddef.h>

/* Reads fd to its end, expecting about size bytes (fstat's st_size), into
 * a NUL-terminated heap buffer; *len (may be NULL) gets the count. A file
 * that shrank meanwhile gives what is there. Returns 0 or -errno. */
int fileio_read_all(int fd, size_t size, char **out, size_t *len);

/* Writes all of buf to fd (a file: no deadline), again after EINTR or a
 * short write. Returns 0 or -errno. */
int fileio_write_all(int fd, const void *buf, size_t len);

/* Replaces path with data atomically: written to path.new (made fresh:
 * O_EXCL, O_NOFOLLOW, mode whatever the umask), synced, renamed over
 * path. Returns 0 or -errno. */
int fileio_replace(const char *path, const void *data, size_t len, int mode);

#endif
