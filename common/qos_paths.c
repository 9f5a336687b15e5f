/* qos_paths: see qos_paths.h. No allocation: the interposer calls it. */
#include "qos_paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

int qos_paths_parse(const char *text, struct qos_paths *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    size_t used = 0;
    for (const char *s = text ? text : ""; *s;) {
        size_t n = strcspn(s, ":,");
        if (n) {
            char one[PATH_MAX];
            if (n >= sizeof(one) || s[0] != '/') {
                snprintf(err, errlen, "'%.*s' is not an absolute path", (int)(n > 200 ? 200 : n), s);
                return -EINVAL;
            }
            memcpy(one, s, n);
            one[n] = '\0';
            int len = path_normalise(one, p->text + used, sizeof(p->text) - used);
            if (len < 0 || p->n == QOS_MAX_PATHS) {
                snprintf(err, errlen, "more than %d paths or %zu characters", QOS_MAX_PATHS,
                         sizeof(p->text));
                return -EINVAL;
            }
            p->path[p->n] = p->text + used;
            memcpy(p->head[p->n], p->path[p->n], (size_t)len < 32 ? (size_t)len : 32);
            p->len[p->n++] = (size_t)len;
            used += (size_t)len + 1;
        }
        s += n;
        if (*s)
            s++;
    }
    if (!p->n) {
        snprintf(err, errlen, "no path given");
        return -EINVAL;
    }
    return 0;
}

/* Whether s, n bytes long, is root i or below it. */
static inline bool under_root(const struct qos_paths *p, int i, const char *s, size_t n)
{
    size_t l = p->len[i];
    return l == 1 || (n >= l && memcmp(s, p->path[i], l) == 0 && (s[l] == '/' || !s[l]));
}

bool qos_paths_under(const struct qos_paths *p, const char *s)
{
    size_t n = strlen(s);
    for (int i = 0; i < p->n; i++)
        if (under_root(p, i, s, n))
            return true;
    return false;
}

bool qos_paths_above(const struct qos_paths *p, const char *s)
{
    size_t n = strlen(s);
    for (int i = 0; i < p->n; i++)
        if (p->len[i] > n && (n == 1 || (strncmp(p->path[i], s, n) == 0 && p->path[i][n] == '/')))
            return true;
    return false;
}

#ifdef __SSE2__
/* The vector code reads whole blocks, past a path's NUL but never into
 * another page (as the C library's string functions do, which the
 * sanitizer does not instrument either). */
#define WHOLE_BLOCKS __attribute__((no_sanitize_address))

/* 16 bytes at a time from an aligned address (an aligned load never
 * crosses into an unmapped page): a '/' followed by '/' or '.' before
 * the terminating NUL. strstr() costs several times more here. */
WHOLE_BLOCKS long qos_path_scan(const char *s)
{
    const __m128i slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.'), nul = _mm_setzero_si128();
    uintptr_t off = (uintptr_t)s & 15;
    const __m128i *b = (const __m128i *)(s - off);
    unsigned carry = 0;   /* the previous block ended with a '/' */
    for (unsigned skip = (unsigned)off;; b++, skip = 0) {
        __m128i v = _mm_load_si128(b);
        __m128i is_slash = _mm_cmpeq_epi8(v, slash);
        unsigned sl = (unsigned)_mm_movemask_epi8(is_slash) >> skip << skip;
        unsigned next = (unsigned)_mm_movemask_epi8(_mm_or_si128(is_slash, _mm_cmpeq_epi8(v, dot)));
        unsigned end = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nul)) >> skip << skip;
        unsigned live = end ? (end & -end) - 1 : 0xffffu;   /* bytes before the NUL */
        if ((((sl << 1) | carry) & next & live) != 0)
            return -1;
        if (end)
            return (const char *)b - s + __builtin_ctz(end);
        carry = sl >> 15;
    }
}
#else
long qos_path_scan(const char *s)
{
    const char *p = s;
    for (; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || p[1] == '.'))
            return -1;
    return p - s;
}
#endif

bool qos_path_plain(const char *s)
{
    return qos_path_scan(s) >= 0;
}


#ifdef __SSE2__
/* The common case at the cost of a few vector instructions: the path's
 * first 32 bytes can be loaded without crossing into another page, and
 * hold its end, or at least every root's whole text. Returns 1 or 0, or
 * -1 when the general way must decide. */
WHOLE_BLOCKS static int match_head(const struct qos_paths *p, const char *s)
{
    if (((uintptr_t)s & 4095) > 4096 - 32)
        return -1;
    const __m128i slash = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.'), nul = _mm_setzero_si128();
    __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
    __m128i sa = _mm_cmpeq_epi8(a, slash), sb = _mm_cmpeq_epi8(b, slash);
    uint32_t sl = (uint32_t)_mm_movemask_epi8(sa) | (uint32_t)_mm_movemask_epi8(sb) << 16;
    uint32_t nx = (uint32_t)_mm_movemask_epi8(_mm_or_si128(sa, _mm_cmpeq_epi8(a, dot))) |
                  (uint32_t)_mm_movemask_epi8(_mm_or_si128(sb, _mm_cmpeq_epi8(b, dot))) << 16;
    uint32_t z = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, nul)) |
                 (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, nul)) << 16;
    if (!z)
        return -1;   /* longer: the rest needs scanning too */
    uint32_t live = (z & -z) - 1;
    if ((sl << 1) & nx & live)
        return -1;   /* needs normalising */
    size_t n = (size_t)__builtin_ctz(z);
    for (int i = 0; i < p->n; i++) {
        size_t l = p->len[i];
        if (l == 1)
            return 1;
        if (l > n)
            continue;
        const __m128i *h = (const __m128i *)p->head[i];
        uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, _mm_load_si128(h))) |
                      (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_load_si128(h + 1))) << 16;
        uint32_t want = (uint32_t)((1ull << l) - 1);
        if ((eq & want) == want && (s[l] == '/' || !s[l]))
            return 1;
    }
    return 0;
}
#endif

bool qos_paths_match(const struct qos_paths *p, const char *s)
{
#ifdef __SSE2__
    int head = match_head(p, s);
    if (head >= 0)
        return head;
#endif
    /* Only a path with "//", "/." or "/.." needs normalising first. */
    long n = qos_path_scan(s);
    if (n >= 0) {
        for (int i = 0; i < p->n; i++)
            if (under_root(p, i, s, (size_t)n))
                return true;
        return false;
    }
    char buf[PATH_MAX];
    return path_normalise(s, buf, sizeof(buf)) >= 0 && qos_paths_under(p, buf);
}
