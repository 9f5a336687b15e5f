#include "parse_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int parse_int64(const char *s, int64_t *out)
{
    char *end;
    if (!*s)
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int parse_double(const char *s, double *out)
{
    char *end;
    if (!*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

const char *parse_quote(const char *s, char buf[48])
{
    size_t i;
    for (i = 0; s[i] && i < 40; i++)
        buf[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
    if (s[i])
        memcpy(buf + i, "...", 4);
    else
        buf[i] = '\0';
    return buf;
}
