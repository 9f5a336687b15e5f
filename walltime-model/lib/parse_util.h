/* parse_util: strict number and field helpers shared by the trace readers.
 *
 * Every helper rejects trailing garbage, so "12x" is an error, not 12. */
#ifndef WALLTIME_PARSE_UTIL_H
#define WALLTIME_PARSE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Whole string is a decimal integer (optionally signed) -> 0, else -1. */
int parse_int64(const char *s, int64_t *out);
/* Largest magnitude a parsed double may have before it is converted to an
 * integer: below 2^53, so the value is exact and the conversion to int64_t
 * defined, and far above any time, size or count a trace holds. */
#define PARSE_DOUBLE_INT_MAX 9.0e15

/* Whole string is a finite decimal number -> 0, else -1. */
int parse_double(const char *s, double *out);
/* Copies at most 40 bytes of s for error messages, replacing control chars. */
const char *parse_quote(const char *s, char buf[48]);

#endif
