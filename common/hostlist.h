/* hostlist: Slurm-style host list expressions.
 *
 * "n[001-128],gpu[1,3-4]" expands to n001 ... n128, gpu1, gpu3, gpu4; a list
 * of names compresses back to the shortest such expression. Zero padding is
 * kept: the width of a range is the width of its lower bound as written.
 * Several bracket groups in one name ("r[1-2]n[1-4]") expand as a product.
 * The plugin, the node agent and sysmap all parse node lists with this. */
#ifndef ADAFS_HOSTLIST_H
#define ADAFS_HOSTLIST_H

#include "linknames.h"

#include <stddef.h>

/* An expansion never yields more names than this: a typo such as
 * "n[0-99999999]" fails with -E2BIG instead of eating the memory. */
#define HOSTLIST_MAX_HOSTS (1u << 20)
/* Longest host name accepted (as HOST_NAME_MAX on Linux). */
#define HOSTLIST_MAX_NAME 64

struct hostlist {
    char **names;
    size_t count;
    size_t cap;
};

/* Expands expr into out (which the caller zero-initialises). Returns 0, or
 * -EINVAL for a syntax error, -E2BIG for too many hosts or a name over
 * HOSTLIST_MAX_NAME, -ERANGE for a bound above 10^9, -ENOMEM. On error err
 * holds a message naming the offending position ("position 3: ..."), and out
 * is left empty. Duplicates are kept in the order written. */
int hostlist_expand(const char *expr, struct hostlist *out, char *err, size_t errlen);

/* Appends one name (copied). Returns 0 or -ENOMEM. */
int hostlist_push(struct hostlist *hl, const char *name);

void hostlist_free(struct hostlist *hl);

/* Returns a malloc'd expression for names, sorted and without duplicates
 * ("n[001-003,007],gpu1"), or NULL when out of memory. Names ending in digits
 * are grouped by the text before the digits and the digit count. */
char *hostlist_compress(const char *const *names, size_t count);

/* 1 if name is a valid single host name (letters, digits, '-', '.', '_';
 * 1..HOSTLIST_MAX_NAME characters), else 0. */
int hostlist_valid_name(const char *name);

#endif
