/* libFuzzer target for the list-file parser: any input must parse without
 * a crash, leak or sanitizer report, and what comes out must make sense:
 * every pair has two non-empty paths, every bad line is reported with a
 * line number that exists, and line numbers only go up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "listfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct list l;
    if (list_parse((const char *)data, size, &l) < 0)
        return 0;
    unsigned lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    unsigned last = 0;
    for (size_t i = 0; i < l.count; i++) {
        const struct list_entry *e = &l.entries[i];
        if (!e->src[0] || !e->dst[0] || e->line <= last || e->line > lines)
            abort();
        last = e->line;
    }
    last = 0;
    for (size_t i = 0; i < l.error_count; i++) {
        const struct list_error *e = &l.errors[i];
        char prefix[32];
        int n = snprintf(prefix, sizeof(prefix), "line %u: ", e->line);
        if (e->line <= last || e->line > lines || strncmp(e->message, prefix, (size_t)n) != 0)
            abort();
        last = e->line;
    }
    list_free(&l);
    return 0;
}
