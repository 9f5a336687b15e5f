#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(struct strbuf *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) {
        b->oom = 1;
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

void strbuf_append(struct strbuf *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void strbuf_printf(struct strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *strbuf_take(struct strbuf *b)
{
    char *text = NULL;
    if (!b->oom)
        text = b->data ? b->data : calloc(1, 1);
    else
        free(b->data);
    *b = (struct strbuf){ 0 };
    return text;
}

void strbuf_free(struct strbuf *b)
{
    free(b->data);
    *b = (struct strbuf){ 0 };
}
