/* qos_limits: the I/O classes adafs' quality of service controls toward the
 * parallel file system, and a set of per-class rates as written by people
 * (burst_buffer.conf, the #BB_ADAFS qos directive, adafs-qos set, the
 * environment of a job's processes).
 *
 * Metadata classes count operations per second, data classes bytes per
 * second. A set names some classes; the rest are "not given" (0), which
 * each user of a set resolves its own way (the site default, a policy's
 * share). "unlimited" is a value of its own: given, and no limit.
 *
 * Text form: "stat=1000,write=100M" (',' or blanks between items); the
 * shorthands mdops=N (every metadata class) and bw=SIZE (read and write)
 * are expanded, and a later item overrides an earlier one. Sizes are
 * binary (size.h); operation counts are plain decimal numbers. */
#ifndef ADAFS_QOS_LIMITS_H
#define ADAFS_QOS_LIMITS_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum qos_class {
    QOS_OPEN,      /* open, openat, creat, fopen */
    QOS_CLOSE,     /* close of a descriptor opened on the parallel file system */
    QOS_STAT,      /* the stat family, access */
    QOS_READDIR,   /* opendir, scandir, getdents */
    QOS_MKDIR,     /* mkdir, rmdir */
    QOS_UNLINK,    /* unlink, remove */
    QOS_RENAME,    /* rename family */
    QOS_OTHER,     /* chmod, chown, utime, truncate, links, xattrs, statfs, sync... */
    QOS_READ,      /* bytes read */
    QOS_WRITE,     /* bytes written */
    QOS_NCLASSES
};
#define QOS_FIRST_DATA QOS_READ

#define QOS_NOT_GIVEN 0
#define QOS_UNLIMITED UINT64_MAX

struct qos_limits {
    uint64_t v[QOS_NCLASSES];
};

static inline bool qos_class_is_data(int c) { return c >= QOS_FIRST_DATA; }

/* "open", "close", ... "write"; NULL outside the enum. */
const char *qos_class_name(int c);
/* The class named name, or -1. */
int qos_class_from_name(const char *name);

/* Parses text (see above) into *out, which it first clears. 0, or -EINVAL
 * with a message naming the offending item in err. NULL or "" is an
 * empty set. */
int qos_limits_parse(const char *text, struct qos_limits *out, char *err, size_t errlen);

/* The canonical text of the classes given (",": "stat=1000,write=100M");
 * "" for an empty set. Returns what snprintf would. */
int qos_limits_format(const struct qos_limits *l, char *buf, size_t len);

/* One value as text: "1000", "100M", "unlimited", "-" (not given). */
void qos_value_format(int c, uint64_t v, char *buf, size_t len);

/* A measured or computed rate (demand, allocation, usage) for people to
 * read: "0" for none, "unlimited", a count, or bytes in 3 significant
 * digits ("100M", "97.7M", "1.50G"; exact values as qos_value_format
 * writes them). Never parsed back: limits are written with
 * qos_value_format. */
void qos_rate_show(int c, uint64_t v, char *buf, size_t len);

/* Copies into dst every class src gives. */
void qos_limits_merge(struct qos_limits *dst, const struct qos_limits *src);

/* True when some class is given. */
bool qos_limits_any(const struct qos_limits *l);

/* Classes where a gives more than max allows (max not given: no bound):
 * 0 when none, else -E2BIG with the first named in err. */
int qos_limits_check_max(const struct qos_limits *a, const struct qos_limits *max,
                         char *err, size_t errlen);

#endif
