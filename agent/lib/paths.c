/* paths: normalising the paths callers give and finding their servers. */
#include "client.h"

#include <errno.h>
#include <string.h>

#include "hash.h"

int path_normalize(const char *in, char *out)
{
    if (!in || in[0] != '/')
        return -EINVAL;
    size_t len = 0;   /* out holds "" for "/" until the end */
    for (const char *p = in; *p;) {
        while (*p == '/')
            p++;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t)(end - p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (len == 0)
                return -EINVAL;           /* leaves "/" */
            while (out[--len] != '/')
                ;
        } else {
            if (n > 255)
                return -ENAMETOOLONG;
            if (len + 1 + n >= FS_PATH_MAX)
                return -ENAMETOOLONG;
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p = end;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return 0;
}

int path_take(const char *in, char *out, int root_err)
{
    int rc = path_normalize(in, out);
    if (rc == 0 && out[0] == '/' && out[1] == '\0')
        rc = root_err;
    return rc;
}

void path_parent(const char *path, char *out)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(out, path, n);
    out[n] = '\0';
}

int meta_server(const adafs *fs, const char *path)
{
    return (int)hash_place_path(path, (unsigned)fs->inst.nservers);
}

int chunk_server(const adafs *fs, uint64_t key, uint64_t index)
{
    return (int)hash_place_chunk(key, index, (unsigned)fs->inst.nservers);
}
