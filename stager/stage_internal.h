/* stage_internal: what the modules of libadafs_stage share (not installed).
 *
 * stage.c sets a run up and collects results, stage_walk.c walks trees and
 * hands out files, stage_copy.c copies one file or one piece of a file. */
#ifndef ADAFS_STAGE_INTERNAL_H
#define ADAFS_STAGE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "backend.h"
#include "listfile.h"
#include "pool.h"
#include "ratelimit.h"
#include "stage.h"

/* Files up to STAGE_SMALL_MAX are read whole and written with one
 * create_write. Bigger ones are streamed through a per-thread buffer of
 * STAGE_BUF_SIZE: several adafs chunks per request, fetched in parallel. */
#define STAGE_SMALL_MAX (1u << 20)
/* Except on stage-out, where from this size a file goes from the servers'
 * sockets into the destination file (one copy fewer than through memory):
 * what a batched read cannot carry whole. 1,000 files of 1 MiB: 35% less
 * time (doc/bench/stager.md). */
#define STAGE_DIRECT_OUT_MIN (64u << 10)
#define STAGE_BUF_SIZE (4u << 20)
/* Bytes per call when data moves file to file without our memory. */
#define STAGE_DIRECT_SIZE (16u << 20)
#define STAGE_DEFAULT_PIECE (64ull << 20)
#define STAGE_DEFAULT_THREADS 8

struct dist;

struct stage_run {
    struct stage_options opt;
    struct dist *dist;                  /* N > 1 workers (dist.h); NULL for one */
    char *src, *dst, *instance;         /* owned copies of the option strings */
    struct backend src_b, dst_b;
    int src_adafs, dst_adafs;
    struct ratelimit md, bw;
    struct pool *pool;
    uint64_t piece_size;
    struct list list;

    _Atomic uint64_t files, dirs, bytes, unchanged, skipped, pieces;
    _Atomic uint64_t files_seen, bytes_seen;
    _Atomic int no_memory;
    _Atomic uint64_t fs_faults;         /* failures with EIO from the job's file system */
    /* The run cannot finish (its workers' mailboxes failed, dist.h): no
     * entry is started any more (each would wait on a server that does not
     * answer); the failure that stopped it says the stage is incomplete. */
    _Atomic int stopping;

    pthread_mutex_t lock;               /* failures and the visited set */
    struct stage_failure *failures;
    size_t nfailures, failures_cap;
    struct { dev_t dev; ino_t ino; } *visited;
    size_t nvisited, visited_cap;

    struct stage_result result;
    struct timespec t0;
};

/* A directory being copied: alive while anything inside it is pending. When
 * the last child finishes, the destination gets the source's mode and mtime
 * (creating entries changes a directory's mtime, so it must come last). */
struct dnode {
    struct stage_run *run;
    struct dnode *parent;
    _Atomic long pending;
    struct bdir *src, *dst;
    char *rel;            /* relative to the request root ("" at the root) */
    mode_t mode;
    struct timespec mtime;
    int set_attrs;
    int fresh;            /* we created dst just now: nothing of ours is in it */
    /* A distributed run's item (dist_exec.c): called instead of the above
     * when nothing is pending any more; failed: some piece failed. */
    void (*done)(struct dnode *n);
    void *item;
    _Atomic int failed;
};

/* Small files of one directory read by one copy thread and waiting to be
 * created together (backend create_many): flushed when the thread's
 * scratch buffer, which holds their data, is full, when a file comes that
 * needs the buffer for itself, and when its task is done, so no file
 * waits longer than its task of a few dozen files. */
#define SMALL_BATCH_FILES 128

struct small_batch {
    struct dnode *parent;
    char *buf;                       /* the thread's scratch */
    size_t cap, used, n;
    struct bcreate e[SMALL_BATCH_FILES];
    const char *snames[SMALL_BATCH_FILES];
};

/* stage.c */
/* Why the job's file system last failed, naming the server and its
 * address (libadafs's adafs_last_error), into buf: 1 if known, else 0
 * (buf ""). */
int stage_fs_fault(struct stage_run *run, char *buf, size_t len);
/* Records a failed entry for the summary and logs its one line: path, what
 * was done (fmt) and err; an EIO from the job's file system also names
 * the server that failed (stage_fs_fault) and counts in fs_faults. */
void stage_fail(struct stage_run *run, const char *path, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void stage_fail_at(struct stage_run *run, struct bdir *d, const char *name, int err,
                   const char *what);
/* Returns 1 if (dev, ino) was already entered (a symlink loop). */
int stage_seen_dir(struct stage_run *run, dev_t dev, ino_t ino);
char *stage_rel(const char *parent_rel, const char *name);
/* A path given by the user as its backend wants it (adafs: from the root
 * of the file system). */
int stage_side_path(struct stage_run *run, int dst_side, const char *path, char *out,
                    size_t outlen);
/* Calls cb for each request of a list or type=file run: source and
 * destination as the backends take them (after stage_side_path), line
 * (0 for type=file). Bad list lines are reported here. */
int stage_requests(struct stage_run *run,
                   int (*cb)(void *arg, const char *src, const char *dst, const char *rel,
                             unsigned line),
                   void *arg);

/* stage_walk.c */
void dnode_hold(struct dnode *n);
void dnode_release(struct dnode *n);
/* Queues the copy of subdirectory sname of parent as dname. */
void walk_push_subdir(struct pool_thread *self, struct dnode *parent,
                      const char *sname, const char *dname, int follow);
/* Lists an open directory node and queues its contents. */
void walk_list(struct pool_thread *self, struct dnode *n);
/* Handles one entry of parent: a file to copy, a directory to walk, or
 * something to skip. d_type may be DT_UNKNOWN. */
void walk_entry(struct pool_thread *self, struct dnode *parent, const char *sname,
                const char *dname, unsigned char d_type, int named_by_user);
/* The same for an entry of a files task: pre, if not NULL, is the source
 * already opened (open_read_many), sb the task's small-file batch (NULL:
 * none). */
void walk_file(struct pool_thread *self, struct dnode *parent, const char *name,
               unsigned char d_type, struct bopen *pre, struct small_batch *sb);
/* Copies the files names[0..n) of parent here and now (a distributed run's
 * batch), as a files task would. */
void walk_files_now(struct pool_thread *self, struct dnode *parent, char *const *names,
                    const unsigned char *types, unsigned n);
/* The same with what a listing opened of them (listed[i].f NULL: nothing),
 * as a files task copies a listing's batch; the files are closed. */
void walk_files_listed(struct pool_thread *self, struct dnode *parent, char *const *names,
                       const unsigned char *types, struct bopen *listed, unsigned n);

/* stage_copy.c */
/* Copies the regular file sname (already opened: src, sst) of parent to
 * dname, owned by this worker; takes over src. */
void copy_file(struct pool_thread *self, struct dnode *parent, struct bfile *src,
               const struct stat *sst, const char *dname, struct small_batch *sb);
/* Creates the files waiting in sb (the names must still be valid). */
void small_batch_flush(struct small_batch *sb);
/* Queues this worker's pieces of a big file. src may be NULL (opened here). */
void copy_split(struct pool_thread *self, struct dnode *parent, const char *sname,
                const char *dname, const char *rel, const struct stat *sst, int follow);
/* A distributed run's pieces [first, last) (of piece_size) of file sname
 * of parent, which must have sst's size and mtime, into the existing
 * dname; parent's done runs when they are all copied (failed set if any
 * was not). src: the source already open (the caller's, kept open), or
 * NULL. */
void copy_pieces(struct pool_thread *self, struct dnode *parent, struct bfile *src,
                 const char *sname, const char *dname, const struct stat *sst,
                 uint64_t piece_size, uint64_t first, uint64_t last, int follow);

/* dist_exec.c */
/* Starts a distributed run (N > 1); returns as stage_execute. */
int dist_execute(struct stage_run *run);
void dist_destroy(struct dist *d);
/* A big file found by a worker of a distributed run: sized here, its
 * pieces handed out by the coordinator. */
void dist_split(struct dnode *parent, const char *sname, const char *dname,
                const struct stat *sst, int follow);

#endif
