/* stage: libadafs_stage, the parallel copier behind `adafs-stage`.
 *
 * Copies a file, a directory tree or a list of `source destination` pairs
 * into a job's file system (in), back out (out), or between two ordinary
 * directories (copy). Directory trees are walked in parallel by a pool of
 * threads that steal work from each other; files bigger than a piece are
 * split into chunk-aligned pieces copied in parallel.
 *
 * Distribution: a run may be worker k of n, n processes (on the nodes of
 * a job) started with the same request. They split the walk itself: worker
 * 0 coordinates, handing out directories to list, batches of files and
 * pieces of big files to copy, and, once a directory or split file is
 * complete, the setting of its mode and mtime, so each source directory is
 * read and each source file opened about once whatever n is (dist.h). A
 * file whose mtime is not yet the source's is not complete, which is what
 * makes an interrupted stage restartable.
 *
 * Restart: a destination that already has the source's size and mtime is
 * skipped (mtime is set only after the data is complete).
 *
 * The run uses the credentials of the calling process: call
 * stage_drop_privileges() first when started as root. */
#ifndef ADAFS_STAGE_H
#define ADAFS_STAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stage_type.h"

enum stage_direction { STAGE_IN, STAGE_OUT, STAGE_COPY };

struct stage_options {
    enum stage_direction direction;
    enum stage_type type;
    const char *src;          /* directory, file, or the list file */
    const char *dst;          /* destination directory (file: target path) */
    const char *instance;     /* adafs instance file; NULL: $ADAFS_INSTANCE */
    unsigned worker, workers; /* this is worker `worker` of `workers` (0 of 1) */
    unsigned threads;         /* 0: default (8) */
    uint64_t max_mdops;       /* metadata ops/s toward the PFS; 0: unlimited */
    uint64_t max_bw;          /* bytes/s toward the PFS; 0: unlimited */
    uint64_t piece_size;      /* 0: default 64 MiB (rounded to the chunk size) */
    int verify;               /* re-read the destination and compare XXH3 */
    int follow_symlinks;      /* default: skip symlinks with a warning */
    double peer_timeout;      /* n > 1: seconds without word from a peer before
                               * it is given up; 0: default (60) */
};

struct stage_failure {
    char *path;               /* what could not be copied */
    int err;                  /* errno */
    char *what;               /* the operation or list-file message */
};

struct stage_result {
    uint64_t files;           /* regular files copied (or finished here) */
    uint64_t dirs;            /* directories created or completed */
    uint64_t bytes;           /* data bytes written by this process */
    uint64_t unchanged;       /* files skipped: size and mtime already equal */
    uint64_t skipped;         /* symlinks and special files left out */
    uint64_t pieces;          /* pieces of split files written */
    uint64_t errors;          /* number of failures below */
    uint64_t fs_faults;       /* of them, the job's file system's (a server that
                               * did not answer: named in the failure) */
    uint64_t src_mdops;       /* metadata operations this process made on the source */
    uint64_t dst_mdops;       /* ... and on the destination (backend.h says which) */
    uint64_t coord_ops;       /* n > 1: operations on the workers' mailboxes */
    unsigned lost_workers;    /* worker 0 of n > 1: workers given up ... */
    unsigned taken_over;      /* ... and the items of theirs others did */
    uint64_t given_back;      /* n > 1: items not started that this worker gave
                               * back for an idle one (work stealing) */
    double finalize_seconds;  /* n > 1: time this process's threads spent setting
                               * the attributes of finished directories and split files */
    double tail_seconds;      /* worker 0 of n > 1: from the last copy done to the end */
    double idle_seconds;      /* copy threads' time waiting for work, summed */
    double idle_start_seconds; /* of that, before each thread's first task */
    double seconds;
    struct stage_failure *failures;
    size_t nfailures;
};

/* A snapshot of a running copy, for a progress bar. */
struct stage_progress {
    uint64_t files_done, files_seen, bytes_done, bytes_seen, errors;
    uint64_t pfs_mdops, pfs_bytes;   /* charged to the limits so far */
    double seconds;
};

struct stage_run;

/* Checks the options and opens the backends. On failure returns -errno and
 * writes a message naming what was wrong into err. */
int stage_create(const struct stage_options *opt, struct stage_run **out,
                 char *err, size_t errlen);
/* Copies; blocks until done. Returns 0 when everything was copied, 1 when
 * some files failed (see the result), -errno when the run could not start. */
int stage_execute(struct stage_run *run);
const struct stage_result *stage_result(const struct stage_run *run);
void stage_get_progress(struct stage_run *run, struct stage_progress *out);
/* Changes the limits while running (thread-safe; 0 = unlimited). */
void stage_set_limits(struct stage_run *run, uint64_t max_mdops, uint64_t max_bw);
void stage_destroy(struct stage_run *run);

const char *stage_direction_name(enum stage_direction d);

#endif
