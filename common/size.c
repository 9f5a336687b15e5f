#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char suffixes[] = "KMGTPE";

/* Reads the digits at *p (at least one) into *out and moves *p past them. */
static int digits(const char **p, uint64_t *out)
{
    const char *s = *p;
    if (!s || !isdigit((unsigned char)*s))
        return -EINVAL;
    uint64_t n = 0;
    for (; isdigit((unsigned char)*s); s++) {
        /* Exact: (UINT64_MAX - 9) / 10 refused 18446744073709551610 to
         * ...615, which size_format writes (a request's canonical form
         * must parse again). */
        uint64_t d = (uint64_t)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            return -ERANGE;
        n = n * 10 + d;
    }
    *p = s;
    *out = n;
    return 0;
}

int count_parse(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t n;
    int rc = digits(&p, &n);
    if (rc < 0)
        return rc;
    if (*p)
        return -EINVAL;
    *out = n;
    return 0;
}

int size_parse(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t whole;
    int rc = digits(&p, &whole);
    if (rc < 0)
        return rc;
    /* Fractions keep up to 6 digits: "1.5T" is exact, "0.1K" rounds down. */
    uint64_t frac = 0, frac_scale = 1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -EINVAL;
        for (; isdigit((unsigned char)*p); p++)
            if (frac_scale < 1000000) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_scale *= 10;
            }
    }

    uint64_t unit = 1;
    if (*p) {
        const char *s = strchr(suffixes, toupper((unsigned char)*p));
        if (!s)
            return -EINVAL;
        for (const char *q = suffixes; q <= s; q++)
            unit *= 1024;
        p++;
        if (strcasecmp(p, "iB") == 0)
            p += 2;
        else if (strcasecmp(p, "B") == 0)
            p += 1;
    }
    if (*p)
        return -EINVAL;
    if (frac && unit == 1)
        return -EINVAL;      /* "1.5" bytes is not a size */

    if (unit != 1 && whole > UINT64_MAX / unit)
        return -ERANGE;
    uint64_t bytes = whole * unit;
    /* frac/frac_scale of a unit, split so no product can overflow. */
    uint64_t extra = (unit / frac_scale) * frac + (unit % frac_scale) * frac / frac_scale;
    if (bytes > UINT64_MAX - extra)
        return -ERANGE;
    *out = bytes + extra;
    return 0;
}

void size_format(uint64_t bytes, char *buf, size_t len)
{
    int i = -1;
    while (bytes && bytes % 1024 == 0 && i < (int)sizeof(suffixes) - 2) {
        bytes /= 1024;
        i++;
    }
    if (i < 0)
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%llu%c", (unsigned long long)bytes, suffixes[i]);
}
