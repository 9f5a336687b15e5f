/* backend: helpers every backend uses. */
#include "backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *backend_join(const char *dir, const char *name)
{
    char *s;
    size_t n = strlen(dir);
    if (asprintf(&s, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) < 0)
        return NULL;
    return s;
}

int backend_make_path(struct backend *b, const char *path)
{
    char *p = strdup(path);
    if (!p)
        return -ENOMEM;
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s)
            continue;
        char c = *s;
        *s = '\0';
        rc = b->ops->mkdir_path(b, p, S_IRWXU);
        if (rc == -EEXIST)
            rc = 0;
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

int backend_write_zeros(struct bfile *f, off_t off, off_t len)
{
    static const char zeros[65536];
    while (len > 0) {
        size_t n = len < (off_t)sizeof(zeros) ? (size_t)len : sizeof(zeros);
        ssize_t w = f->b->ops->pwrite(f, zeros, n, off);
        if (w < 0)
            return (int)w;
        if (w == 0)
            return -EIO;
        off += w;
        len -= w;
    }
    return 0;
}
