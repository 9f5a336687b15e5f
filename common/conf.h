/* conf: reads "Key=Value" configuration files in Slurm's style.
 *
 * One setting per line, '#' starts a comment, blank lines are ignored, keys
 * are case-insensitive. This module only splits lines; each component checks
 * its own keys and reports an unknown one with the file and line number that
 * conf_entry carries. */
#ifndef ADAFS_CONF_H
#define ADAFS_CONF_H

#include "linknames.h"

#include <stddef.h>

struct conf_entry {
    char *key;
    char *value;
    int line;
};

struct conf {
    char *path;
    struct conf_entry *entries;
    size_t count;
};

/* Returns 0, or -errno with a message naming the file (and line) in err.
 * A missing file is -ENOENT, so callers can decide whether that is fine. */
int conf_load(const char *path, struct conf *out, char *err, size_t errlen);
/* The same for text already in memory; name is used in messages. */
int conf_parse(const char *name, const char *text, struct conf *out,
               char *err, size_t errlen);
void conf_free(struct conf *conf);

#endif
