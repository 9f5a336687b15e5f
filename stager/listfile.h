/* listfile: the `source destination` pairs of a type=list stage request.
 *
 * One pair per line, separated by blanks. A field containing blanks is
 * written in double quotes ("my file.dat") or with backslash escapes
 * (my\ file.dat); inside quotes \" and \\ are the only escapes. Empty lines
 * and lines whose first non-blank is '#' are ignored. A line that is not a
 * pair is reported with its number and the reason, and the other lines are
 * still used: one typo must not cancel a whole stage-in. */
#ifndef ADAFS_STAGE_LISTFILE_H
#define ADAFS_STAGE_LISTFILE_H

#include <stddef.h>

struct list_entry {
    char *src;
    char *dst;
    unsigned line;
};

struct list_error {
    unsigned line;
    char *message;   /* "line 7: missing destination" */
};

struct list {
    struct list_entry *entries;
    size_t count;
    struct list_error *errors;
    size_t error_count;
};

/* Parses len bytes of text (need not be NUL-terminated). Returns 0, or
 * -ENOMEM; bad lines go to list->errors, not to the return value. */
int list_parse(const char *text, size_t len, struct list *out);
/* Reads and parses a file. Returns -errno if it cannot be read. */
int list_load(const char *path, struct list *out);
void list_free(struct list *l);

#endif
