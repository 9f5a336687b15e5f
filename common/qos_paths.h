/* qos_paths: which paths are on the parallel file system.
 *
 * The site lists the mount points (AdafsQosPaths=/pfs,/home; in a job's
 * environment ADAFS_QOS_PATHS). Paths are compared lexically, after
 * normalising "//", "/./" and "/../" away; symbolic links are not
 * followed (a link from elsewhere into the PFS is not seen). This is the
 * check every intercepted call with a path makes: it must cost a prefix
 * compare when the path is plain. */
#ifndef ADAFS_QOS_PATHS_H
#define ADAFS_QOS_PATHS_H

#include "linknames.h"
#include "pathnorm.h"

#include <stdbool.h>
#include <stddef.h>

#define QOS_MAX_PATHS 16

struct qos_paths {
    int n;
    const char *path[QOS_MAX_PATHS];   /* normalised, no trailing '/' ("/": everything) */
    size_t len[QOS_MAX_PATHS];
    /* Each path's first 32 bytes, zero-padded: compared 16 at a time. */
    char head[QOS_MAX_PATHS][32] __attribute__((aligned(16)));
    char text[4096];
};

/* Absolute paths separated by ':' or ','. 0, or -EINVAL with the reason
 * in err (a relative path, too many, none). */
int qos_paths_parse(const char *text, struct qos_paths *p, char *err, size_t errlen);

/* Whether normalised absolute path s is on the PFS / an ancestor of one
 * of its mount points. */
bool qos_paths_under(const struct qos_paths *p, const char *s);
bool qos_paths_above(const struct qos_paths *p, const char *s);

/* True when s has no "//" and no "/." (so no "." or ".." component
 * after the first): a plain path needs no normalising. */
bool qos_path_plain(const char *s);
/* The same scan: s's length when it is plain, else -1. */
long qos_path_scan(const char *s);

/* Whether absolute path s (normalised or not) is on the PFS. */
bool qos_paths_match(const struct qos_paths *p, const char *s);

#endif
