#include "fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int fileio_read_all(int fd, size_t size, char **out, size_t *len)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return -ENOMEM;
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = -errno;
            free(buf);
            return rc;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out = buf;
    if (len)
        *len = got;
    return 0;
}

int fileio_write_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
