/* pathnorm: see pathnorm.h. */
#include "pathnorm.h"

#include <errno.h>
#include <string.h>

static bool at_or_below(const char *p, const char *prefix, size_t n)
{
    return strncmp(p, prefix, n) == 0 && (p[n] == '/' || p[n] == '\0');
}

int path_normalise_through(const char *in, char *out, size_t outlen, const char *prefix,
                           size_t prefix_len, bool *through)
{
    size_t o = 0;
    for (const char *p = in; *p;) {
        while (*p == '/')
            p++;
        const char *start = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - start);
        if (n == 0 || (n == 1 && start[0] == '.'))
            continue;
        if (n == 2 && start[0] == '.' && start[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
            continue;
        }
        if (o + 1 + n + 1 > outlen)
            return -ENAMETOOLONG;
        out[o++] = '/';
        memcpy(out + o, start, n);
        o += n;
        if (through && !*through && prefix_len && o >= prefix_len) {
            out[o] = '\0';
            *through = at_or_below(out, prefix, prefix_len);
        }
    }
    if (o == 0) {
        if (outlen < 2)
            return -ENAMETOOLONG;
        out[o++] = '/';
    }
    out[o] = '\0';
    return (int)o;
}

int path_normalise(const char *in, char *out, size_t outlen)
{
    return path_normalise_through(in, out, outlen, NULL, 0, NULL);
}
