/* tap: a minimal Test Anything Protocol producer for the C unit tests.
 *
 * Each check prints one "ok N - what" or "not ok N - what" line; tap_done()
 * prints the plan and returns the exit status. Automake's tap-driver counts
 * every line, so the closing "N passed, N failed" counts checks, not files. */
#ifndef ADAFS_TAP_H
#define ADAFS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

static inline __attribute__((format(printf, 2, 3), unused))
int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_count);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!cond)
        tap_failed++;
    return cond;
}

#define tap_is_int(got, want, what) do {                                       \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);       \
        if (!tap_ok(tap_g_ == tap_w_, "%s", what))                             \
            printf("#   got %lld, want %lld (%s:%d)\n", tap_g_, tap_w_,       \
                   __FILE__, __LINE__);                                        \
    } while (0)

#define tap_is_str(got, want, what) do {                                       \
        const char *tap_g_ = (got), *tap_w_ = (want);                          \
        int tap_eq_ = tap_g_ && tap_w_ ? strcmp(tap_g_, tap_w_) == 0           \
                                       : tap_g_ == tap_w_;                     \
        if (!tap_ok(tap_eq_, "%s", what))                                      \
            printf("#   got \"%s\", want \"%s\" (%s:%d)\n",                    \
                   tap_g_ ? tap_g_ : "(null)", tap_w_ ? tap_w_ : "(null)",     \
                   __FILE__, __LINE__);                                        \
    } while (0)

/* n checks that cannot run here, with why (counted as skipped). */
static inline __attribute__((format(printf, 2, 3), unused))
void tap_skip(int n, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    for (int i = 0; i < n; i++)
        printf("ok %d # SKIP %s\n", ++tap_count, why);
    fflush(stdout);
}

static inline __attribute__((unused)) int tap_done(void)
{
    printf("1..%d\n", tap_count);
    /* Failures are already counted from the "not ok" lines; a non-zero exit
     * is kept for crashes, which the driver then reports as errors. */
    return 0;
}

#endif
