/* stage_report: what one stage worker tells whoever started it.
 *
 * `adafs-stage --json` prints one report (a JSON object) when it ends; the
 * node agent hands it on unread in its STATUS and WATCH answers
 * (agent_proto.h), and the plugin adds up its workers' reports for bbstat
 * and names the first failure in the job's reason. One encoder (the
 * stager's), one decoder (the plugin's), and each key written once, below:
 * a new counter is one line in STAGE_REPORT_COUNTERS, and a reader that
 * does not know a key skips it.
 *
 *   {"direction": "in"|"out"|"copy", "source": S, "destination": D,
 *    "worker": K, "workers": N,
 *    <each counter>: integer, <each rate>: number,
 *    "complete": bool,
 *    "failures": [{"path": P, "errno": E, "error": text, "what": text}, ...]} */
#ifndef ADAFS_COMMON_STAGE_REPORT_H
#define ADAFS_COMMON_STAGE_REPORT_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(name, what): the integer counters of a report. */
#define STAGE_REPORT_COUNTERS(X)                                            \
    X(files, "regular files copied (or finished by this worker)")           \
    X(dirs, "directories created or completed")                             \
    X(bytes, "data bytes written")                                          \
    X(unchanged, "files skipped: size and mtime already equal")             \
    X(skipped, "symlinks and special files left out")                       \
    X(pieces, "pieces of split files written")                              \
    X(errors, "failures (the first ones are listed)")                       \
    X(fs_faults, "of them, the job's file system's: a server did not answer") \
    X(verified, "files re-read and compared (verify=yes)")                 \
    X(src_mdops, "metadata operations made on the source side")           \
    X(dst_mdops, "metadata operations made on the destination side")      \
    X(coord_ops, "operations on the workers' mailboxes")                  \
    X(lost_workers, "worker 0 of several: workers given up")              \
    X(taken_over, "worker 0 of several: items of lost workers others did") \
    X(given_back, "items not started that this worker gave back to an idle one")

/* X(name, what): the real-valued figures. */
#define STAGE_REPORT_FIGURES(X)                                             \
    X(seconds, "wall time of the worker")                                   \
    X(finalize_seconds, "setting attributes of finished directories and split files") \
    X(tail_seconds, "worker 0: from the last copy done to the end")        \
    X(idle_seconds, "the copy threads' time waiting for work (summed)")     \
    X(idle_start_seconds, "of that, before each thread's first task: the start") \
    X(files_per_s, "files / seconds")                                       \
    X(mib_per_s, "MiB / seconds")

struct stage_report_failure {
    char *path;
    int err;          /* errno */
    char *error;      /* strerror(err) as the stager saw it */
    char *what;       /* the operation that failed */
};

struct stage_report {
    char *direction, *source, *destination;
    unsigned worker, workers;
#define STAGE_REPORT_FIELD(name, what) uint64_t name;
    STAGE_REPORT_COUNTERS(STAGE_REPORT_FIELD)
#undef STAGE_REPORT_FIELD
#define STAGE_REPORT_FIELD(name, what) double name;
    STAGE_REPORT_FIGURES(STAGE_REPORT_FIELD)
#undef STAGE_REPORT_FIELD
    bool complete;
    struct stage_report_failure *failures;
    size_t nfailures;
};

/* The report as one line of JSON (malloc'd; NULL on ENOMEM). */
char *stage_report_encode(const struct stage_report *r);

/* Reads a report; every field it lacks is 0 or NULL. 0, or -EBADMSG with
 * why in err for text that is not a report. Free it with
 * stage_report_free(). */
int stage_report_decode(const char *text, struct stage_report *r, char *err, size_t errlen);
void stage_report_free(struct stage_report *r);

/* Adds a worker's counters to a total (the seconds: the longest, workers
 * run side by side). */
void stage_report_add(struct stage_report *total, const struct stage_report *worker);

#endif
