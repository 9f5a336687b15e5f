/* strbuf: a growable, NUL-terminated string for building text piece by
 * piece (messages, canonical forms, JSON). An allocation failure is sticky:
 * later appends do nothing and strbuf_take() returns NULL, so callers check
 * once at the end. */
#ifndef ADAFS_STRBUF_H
#define ADAFS_STRBUF_H

#include "linknames.h"

#include <stddef.h>

struct strbuf {
    char *data;      /* NUL-terminated while len > 0 */
    size_t len, cap;
    int oom;
};

void strbuf_append(struct strbuf *b, const char *s, size_t n);
void strbuf_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the text over (never NULL unless out of memory: "" when empty) and
 * resets b. */
char *strbuf_take(struct strbuf *b);
void strbuf_free(struct strbuf *b);

#endif
