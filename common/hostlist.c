#include "hostlist.h"
#include "strbuf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BOUND 999999999ul   /* 9 digits: fits an unsigned long anywhere */
#define MAX_DIGITS 9

/* One bracket group "[001-004,9]" is a list of ranges; a name between commas
 * is a sequence of literal text and bracket groups. */
struct range { unsigned long lo, hi; int width; };
struct segment {
    const char *text;            /* literal: points into the expression */
    size_t len;
    struct range *ranges;        /* bracket group when non-NULL */
    size_t nranges;
};

struct parser {
    const char *expr;
    const char *p;
    char *err;
    size_t errlen;
};

static int fail(struct parser *ps, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parser *ps, int code, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (ps->err && ps->errlen)
        snprintf(ps->err, ps->errlen, "hostlist \"%.200s\": position %zu: %s",
                 ps->expr, (size_t)(ps->p - ps->expr) + 1, what);
    return code;
}

static int is_name_char(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_';
}

int hostlist_valid_name(const char *name)
{
    size_t n = 0;
    for (; name[n]; n++)
        if (!is_name_char((unsigned char)name[n]))
            return 0;
    return n > 0 && n <= HOSTLIST_MAX_NAME;
}

int hostlist_push(struct hostlist *hl, const char *name)
{
    if (hl->count == hl->cap) {
        size_t cap = hl->cap ? hl->cap * 2 : 16;
        char **names = realloc(hl->names, cap * sizeof(*names));
        if (!names)
            return -ENOMEM;
        hl->names = names;
        hl->cap = cap;
    }
    if (!(hl->names[hl->count] = strdup(name)))
        return -ENOMEM;
    hl->count++;
    return 0;
}

void hostlist_free(struct hostlist *hl)
{
    for (size_t i = 0; i < hl->count; i++)
        free(hl->names[i]);
    free(hl->names);
    hl->names = NULL;
    hl->count = hl->cap = 0;
}

static int parse_number(struct parser *ps, unsigned long *value, int *width)
{
    const char *start = ps->p;
    if (!isdigit((unsigned char)*ps->p))
        return *ps->p ? fail(ps, -EINVAL, "expected a digit, found '%c'", *ps->p)
                      : fail(ps, -EINVAL, "expected a digit, found the end");
    unsigned long v = 0;
    while (isdigit((unsigned char)*ps->p)) {
        if (ps->p - start >= MAX_DIGITS) {
            ps->p = start;
            return fail(ps, -ERANGE, "number has more than %d digits", MAX_DIGITS);
        }
        v = v * 10 + (unsigned long)(*ps->p++ - '0');
    }
    *value = v;
    *width = (int)(ps->p - start);
    return 0;
}

/* Parses "[...]" with ps->p on the '['; appends the ranges to seg. */
static int parse_brackets(struct parser *ps, struct segment *seg)
{
    ps->p++;
    size_t cap = 0;
    for (;;) {
        struct range r;
        int rc = parse_number(ps, &r.lo, &r.width);
        if (rc)
            return rc;
        r.hi = r.lo;
        if (*ps->p == '-') {
            ps->p++;
            const char *hi_at = ps->p;
            int hi_width;
            if ((rc = parse_number(ps, &r.hi, &hi_width)))
                return rc;
            if (r.hi < r.lo) {
                ps->p = hi_at;
                return fail(ps, -EINVAL, "range end %lu is below its start %lu", r.hi, r.lo);
            }
        }
        if (seg->nranges == cap) {
            cap = cap ? cap * 2 : 4;
            struct range *grown = realloc(seg->ranges, cap * sizeof(*grown));
            if (!grown)
                return -ENOMEM;
            seg->ranges = grown;
        }
        seg->ranges[seg->nranges++] = r;
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == ']') {
            ps->p++;
            return 0;
        }
        return *ps->p ? fail(ps, -EINVAL, "expected ',', '-' or ']', found '%c'", *ps->p)
                      : fail(ps, -EINVAL, "missing ']'");
    }
}

static size_t segment_count(const struct segment *seg)
{
    size_t n = 0;
    for (size_t i = 0; i < seg->nranges; i++)
        n += seg->ranges[i].hi - seg->ranges[i].lo + 1;
    return n;
}

/* Emits every name of segs[i..] behind the first len bytes of buf. */
static int emit(struct hostlist *out, const struct segment *segs, size_t nsegs,
                size_t i, char *buf, size_t len)
{
    if (i == nsegs) {
        buf[len] = '\0';
        return hostlist_push(out, buf);
    }
    const struct segment *s = &segs[i];
    if (!s->ranges) {
        memcpy(buf + len, s->text, s->len);
        return emit(out, segs, nsegs, i + 1, buf, len + s->len);
    }
    for (size_t r = 0; r < s->nranges; r++)
        for (unsigned long v = s->ranges[r].lo; v <= s->ranges[r].hi; v++) {
            int n = sprintf(buf + len, "%0*lu", s->ranges[r].width, v);
            int rc = emit(out, segs, nsegs, i + 1, buf, len + (size_t)n);
            if (rc)
                return rc;
        }
    return 0;
}

static void free_segments(struct segment *segs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(segs[i].ranges);
}

/* Parses one comma-separated name with ps->p on its first character and
 * appends its expansion. */
static int expand_term(struct parser *ps, struct hostlist *out)
{
    struct segment segs[16];
    size_t nsegs = 0, total = 1, name_len = 0;
    const char *term_start = ps->p;
    int rc = 0;

    while (*ps->p && *ps->p != ',') {
        if (nsegs == sizeof(segs) / sizeof(segs[0])) {
            rc = fail(ps, -EINVAL, "more than %zu parts in one name", nsegs);
            goto out;
        }
        struct segment *s = &segs[nsegs];
        memset(s, 0, sizeof(*s));
        if (*ps->p == '[') {
            nsegs++;
            if ((rc = parse_brackets(ps, s)))
                goto out;
            size_t n = segment_count(s);
            int widest = 0;
            for (size_t r = 0; r < s->nranges; r++) {
                int w = snprintf(NULL, 0, "%0*lu", s->ranges[r].width, s->ranges[r].hi);
                if (w > widest)
                    widest = w;
            }
            name_len += (size_t)widest;
            if (n > HOSTLIST_MAX_HOSTS || total > HOSTLIST_MAX_HOSTS / n) {
                rc = fail(ps, -E2BIG, "expands to more than %u hosts", HOSTLIST_MAX_HOSTS);
                goto out;
            }
            total *= n;
        } else if (is_name_char((unsigned char)*ps->p)) {
            s->text = ps->p;
            while (is_name_char((unsigned char)*ps->p))
                ps->p++;
            s->len = (size_t)(ps->p - s->text);
            name_len += s->len;
            nsegs++;
        } else {
            rc = fail(ps, -EINVAL, "unexpected character '%c'", *ps->p);
            goto out;
        }
    }
    if (ps->p == term_start) {
        rc = fail(ps, -EINVAL, "empty host name");
        goto out;
    }
    if (name_len > HOSTLIST_MAX_NAME) {
        ps->p = term_start;
        rc = fail(ps, -E2BIG, "host name longer than %d characters", HOSTLIST_MAX_NAME);
        goto out;
    }
    if (out->count + total > HOSTLIST_MAX_HOSTS) {
        ps->p = term_start;
        rc = fail(ps, -E2BIG, "expands to more than %u hosts", HOSTLIST_MAX_HOSTS);
        goto out;
    }
    char buf[HOSTLIST_MAX_NAME + 1];
    rc = emit(out, segs, nsegs, 0, buf, 0);
out:
    free_segments(segs, nsegs);
    return rc;
}

int hostlist_expand(const char *expr, struct hostlist *out, char *err, size_t errlen)
{
    struct parser ps = { expr, expr, err, errlen };
    int rc = 0;
    if (!*expr)
        rc = fail(&ps, -EINVAL, "empty host list");
    while (!rc) {
        if ((rc = expand_term(&ps, out)))
            break;
        if (!*ps.p)
            return 0;
        ps.p++;            /* the ',' between names */
        if (!*ps.p)
            rc = fail(&ps, -EINVAL, "empty host name after ','");
    }
    if (rc == -ENOMEM && err && errlen)
        snprintf(err, errlen, "hostlist: out of memory");
    hostlist_free(out);
    return rc;
}

/* ---- compression ---- */

struct entry {
    const char *name;
    size_t prefix_len;          /* text before the trailing digits */
    int width;                  /* digit count if zero-padded, else 0 */
    int digits;
    int numbered;
    unsigned long num;
};

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    size_t common = x->prefix_len < y->prefix_len ? x->prefix_len : y->prefix_len;
    int c = memcmp(x->name, y->name, common);
    if (c)
        return c;
    if (x->prefix_len != y->prefix_len)
        return x->prefix_len < y->prefix_len ? -1 : 1;
    if (x->numbered != y->numbered)
        return x->numbered - y->numbered;
    if (!x->numbered)
        return 0;
    if (x->num != y->num)
        return x->num < y->num ? -1 : 1;
    return x->width - y->width;
}

/* Whether e can join a bracket group of padding width: "n10000" belongs to
 * n[00001-10000] because printing it at width 5 gives the same text. */
static int joins_group(const struct entry *first, int width, const struct entry *e)
{
    if (!first->numbered || !e->numbered || e->prefix_len != first->prefix_len ||
        memcmp(e->name, first->name, first->prefix_len) != 0)
        return 0;
    return e->width == width || (e->width == 0 && e->digits >= width);
}

char *hostlist_compress(const char *const *names, size_t count)
{
    struct entry *e = calloc(count ? count : 1, sizeof(*e));
    if (!e)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(names[i]), d = len;
        while (d > 0 && isdigit((unsigned char)names[i][d - 1]))
            d--;
        e[i].name = names[i];
        e[i].prefix_len = d;
        size_t digits = len - d;
        if (digits > 0 && digits <= MAX_DIGITS) {
            e[i].numbered = 1;
            e[i].num = strtoul(names[i] + d, NULL, 10);
            e[i].digits = (int)digits;
            e[i].width = digits > 1 && names[i][d] == '0' ? (int)digits : 0;
        } else {
            e[i].prefix_len = len;
        }
    }
    qsort(e, count, sizeof(*e), entry_cmp);

    struct strbuf b = { 0 };
    for (size_t i = 0; i < count;) {
        if (i > 0 && entry_cmp(&e[i], &e[i - 1]) == 0) {   /* duplicate */
            i++;
            continue;
        }
        if (b.len)
            strbuf_printf(&b, ",");
        size_t j = i + 1;
        while (j < count && joins_group(&e[i], e[i].width, &e[j]))
            j++;
        if (!e[i].numbered || e[j - 1].num == e[i].num) {   /* one value */
            strbuf_printf(&b, "%s", e[i].name);
            i = j;
            continue;
        }
        strbuf_printf(&b, "%.*s[", (int)e[i].prefix_len, e[i].name);
        int w = e[i].width;
        for (size_t k = i; k < j;) {
            size_t end = k;
            while (end + 1 < j && e[end + 1].num <= e[end].num + 1)
                end++;
            strbuf_printf(&b, "%s%0*lu", k > i ? "," : "", w, e[k].num);
            if (e[end].num != e[k].num)
                strbuf_printf(&b, "-%0*lu", w, e[end].num);
            k = end + 1;
        }
        strbuf_printf(&b, "]");
        i = j;
    }
    free(e);
    return strbuf_take(&b);
}
