/* libFuzzer target: hostlist_expand must never crash, leak or overrun on any
 * input, and every successful expansion must compress to an expression that
 * expands to the same set of names. */
#include "hostlist.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char expr[257];
    memcpy(expr, data, size);
    expr[size] = '\0';

    char err[256];
    struct hostlist hl = { 0 };
    if (hostlist_expand(expr, &hl, err, sizeof(err)) != 0 || hl.count > 20000) {
        hostlist_free(&hl);
        return 0;
    }
    char *back = hostlist_compress((const char *const *)hl.names, hl.count);
    struct hostlist again = { 0 };
    if (!back || hostlist_expand(back, &again, err, sizeof(err)) != 0)
        abort();
    /* Same set: sort both, drop duplicates from the first. */
    qsort(hl.names, hl.count, sizeof(char *), cmp);
    qsort(again.names, again.count, sizeof(char *), cmp);
    size_t u = 0;
    for (size_t i = 0; i < hl.count; i++)
        if (u == 0 || strcmp(hl.names[u - 1], hl.names[i]) != 0)
            hl.names[u++] = hl.names[i];
        else
            free(hl.names[i]);
    hl.count = u;
    if (again.count != hl.count)
        abort();
    for (size_t i = 0; i < u; i++)
        if (strcmp(hl.names[i], again.names[i]) != 0)
            abort();
    free(back);
    hostlist_free(&hl);
    hostlist_free(&again);
    return 0;
}
