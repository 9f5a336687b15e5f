/* stage_type: what one stage line copies, in the one encoding every side
 * uses: the directive's `type=` word, the STAGE message's u32 (agent_proto.h),
 * adafs-stage's --type, and the plugin's saved records. The numbers are on
 * the wire and on disk: never reorder them. */
#ifndef ADAFS_STAGE_TYPE_H
#define ADAFS_STAGE_TYPE_H

#include <errno.h>
#include <string.h>

enum stage_type {
    STAGE_FILE = 0,         /* one file */
    STAGE_DIRECTORY = 1,    /* a tree */
    STAGE_LIST = 2,         /* the files a list file names */
};
#define STAGE_TYPE_COUNT 3

static inline const char *stage_type_name(enum stage_type type)
{
    switch (type) {
    case STAGE_FILE: return "file";
    case STAGE_DIRECTORY: return "directory";
    case STAGE_LIST: return "list";
    }
    return "?";
}

/* The word as written in a directive or on a command line: 0, or -EINVAL
 * for a word that is none of "file", "directory", "list". */
static inline int stage_type_parse(const char *word, enum stage_type *type)
{
    for (int t = 0; t < STAGE_TYPE_COUNT; t++)
        if (strcmp(word, stage_type_name((enum stage_type)t)) == 0) {
            *type = (enum stage_type)t;
            return 0;
        }
    return -EINVAL;
}

#endif
