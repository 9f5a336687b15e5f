/* size: human byte sizes ("512K", "200G", "1.5T") and plain counts as used
 * in directives and configuration files. Suffixes are binary (K = 1024),
 * case-insensitive, with an optional trailing "B" or "iB". */
#ifndef ADAFS_SIZE_H
#define ADAFS_SIZE_H

#include "linknames.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* Returns 0 and sets *out, or -EINVAL for text that is not a size (empty,
 * unknown suffix such as "12QB", trailing garbage, negative) and -ERANGE when
 * the value does not fit in 64 bits. */
int size_parse(const char *text, uint64_t *out);

/* A plain decimal count ("2000": digits only, no sign, unit or blank).
 * Returns 0 and sets *out, -EINVAL for anything else, -ERANGE when it does
 * not fit in 64 bits. */
int count_parse(const char *text, uint64_t *out);

/* count_parse bounded by max: -ERANGE above it (records' fields, whose
 * types are narrower than 64 bits). */
static inline int count_parse_max(const char *text, uint64_t max, uint64_t *out)
{
    uint64_t n;
    int rc = count_parse(text, &n);
    if (rc < 0)
        return rc;
    if (n > max)
        return -ERANGE;
    *out = n;
    return 0;
}

/* Each of parts' share of total, rounded up (parts 0: one part). Never
 * (total + parts - 1) / parts: a total near 2^64 wrapped to a share of 0,
 * which a server takes for "no quota". */
static inline uint64_t size_share(uint64_t total, uint64_t parts)
{
    if (parts == 0)
        parts = 1;
    return total / parts + (total % parts != 0);
}

/* Writes the shortest exact form ("512K", "3G", "1000") into buf. */
void size_format(uint64_t bytes, char *buf, size_t len);

#endif
