/* dist: a stage shared by N workers on different nodes (--worker K/N).
 *
 * The walk is split, not repeated: worker 0 also runs the coordinator
 * (dist_hub.c), which holds the work queue and the tree's bookkeeping;
 * every worker (dist_exec.c) executes items it is handed: list a
 * directory, copy a batch of files, copy some pieces of a big file, set
 * the attributes of a finished directory or split file. A listing reports
 * what it found (subdirectories, batches of file names, big files) back
 * to the coordinator, which hands it out again to whichever worker has
 * room, so each source directory is read and each source file opened
 * once, and the load follows the workers' speed whatever the tree's shape.
 * The lister keeps the first batch of each directory for itself: a tree of
 * small directories costs no messages per file.
 *
 * The workers talk through mailbox files (dist_msg.h) in a directory on a
 * file system all of them reach: `/.adafs-stage/ID` in the job's adafs
 * instance for `in` and `out`, `.adafs-stage/ID` beside DST for `copy`, where ID
 * is a hash of the request (direction, type, source, destination, N), so
 * the N processes started with the same request meet without being told
 * more. A writer rings the reader's doorbell (dist_bell.h) after each
 * message, so the reader does not poll for it. Worker 0 makes a new epoch (a random nonce naming a fresh
 * directory) and announces it in `ID/epoch`; the others join the epoch
 * they find and follow a newer one (a rerun after a crash).
 *
 * Failures: each side hears from the other at least every second. A
 * worker the coordinator has not heard from for the peer timeout is given
 * up: the items it held go to the others (copying again is harmless: the
 * same bytes), and the run says so. A worker that has not heard from the
 * coordinator for that long stops and fails, naming it. */
#ifndef ADAFS_STAGE_DIST_H
#define ADAFS_STAGE_DIST_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dist_bell.h"
#include "dist_msg.h"
#include "stage_internal.h"

/* The directory (inside the job's file system, or the copy's DST) that
 * holds the runs' mailboxes. */
#define DIST_STORE ".adafs-stage"
/* Seconds without a message before a peer is given up (--peer-timeout). */
#define DIST_DEFAULT_TIMEOUT 60.0
/* A reader looks at a quiet mailbox at least this often: without a
 * doorbell (dist_bell.h) every message waits for such a look, so it stays
 * short; with one a ring brings the reader at once and the look only
 * catches a ring lost on the network. */
#define DIST_POLL_MAX 0.016
/* Records that are not urgent (acknowledgements, what a lister keeps)
 * go out this long after the first of them, so a few go in one message;
 * DIST_SEND_FULL while the worker still holds a full window (dist_out_due). */
#define DIST_SEND_DELAY 0.002
#define DIST_SEND_FULL 0.05
#define DIST_POLL_MAX_BELL 0.1
/* The mailbox store (the job's file system) failing: a message that could
 * not be written is tried again this often (not in a busy loop), and the
 * run stops once the store has failed this long without a pause: one of
 * the instance's servers is gone (a killed one fails at once, a hung one
 * after the instance's timeout_ms), and waiting for the peer timeout (60 s)
 * only delays the failure (doc/stager.md, Failures). */
#define DIST_STORE_RETRY 0.1
#define DIST_STORE_GRACE 2.0

struct hub;
struct dcache;
struct fcache;

struct dist {
    struct stage_run *run;
    unsigned me, n;
    unsigned window;            /* items a worker holds at most (it asks for more) */
    double timeout, beat;       /* peer timeout; heartbeat interval (s) */
    double t0;

    /* The mailbox store: its own backend, so its operations are counted
     * apart from the copy's (coord_ops). */
    struct backend sb;
    int sb_adafs;
    char *store;                /* the store's path on its side */
    int store_side;             /* 0: the source side holds it (out), 1: the destination */
    char id[17];
    struct bdir *rdir;          /* STORE/ID */
    struct bdir *mdir;          /* STORE/ID/<nonce>: the messages */
    uint64_t nonce;
    uint64_t in_seq;            /* worker K > 0: the next message from worker 0 */

    /* The doorbell (dist_bell.h): this process's, and worker 0's (K > 0;
     * hub_bell_ok once its address is known). */
    struct dist_bell bell;
    struct sockaddr_in hub_bell;
    int hub_bell_ok;

    /* Records for the coordinator, appended by the copy threads. */
    pthread_mutex_t lock;
    struct rpc_writer out;
    size_t out_records;
    int urgent;                 /* discovery waits in out: send it soon */
    double out_since;

    _Atomic long running;       /* items handed to the pool, not yet acknowledged */
    _Atomic uint64_t next_kept; /* ids of batches a lister keeps */
    struct dcache *cache;
    struct fcache *files;

    /* The comm thread's state. */
    int joined, done, stop;
    struct hub *hub;            /* worker 0 */
    unsigned lost, taken_over;  /* worker 0: workers given up, items moved */
    _Atomic uint64_t final_ns;  /* threads' time in finalize items */
    uint64_t given_back;        /* items not started given back (DM_STEAL) */
    double tail;                /* worker 0: last copy done -> DONE (s) */

    /* The comm thread's: the store's failures in a row (dist_store_error). */
    double store_since, store_last;
    int store_failed;           /* the run stopped on them (recorded once) */
};

/* A mailbox operation's result that means the store itself failed (not
 * "no message yet" nor "being written"). */
static inline int dist_store_hard(int rc)
{
    return rc < 0 && rc != -ENOENT && rc != -EAGAIN && rc != -EFBIG;
}
/* The mailbox store gave the hard error rc on op of message name, an
 * operation begun at began (dist_now()). 1 once such failures have gone
 * on for DIST_STORE_GRACE (then the run must stop: the failure, naming the
 * mailbox, the errno and the server that failed, is recorded once), else 0. */
int dist_store_error(struct dist *d, double began, int rc, const char *op, const char *name);
/* Why the store's connections last failed, naming the server ("" if none). */
void dist_store_why(struct dist *d, char *buf, size_t len);

double dist_now(void);
/* Queues a record for the coordinator; urgent: discovery, sent at once. */
void dist_send(struct dist *d, const struct dmsg *m, int urgent);
/* Whether what was queued should be sent now; if not, lowers *when to the
 * time it should: room_delay after the first record while the worker has
 * room in its window (DIST_SEND_DELAY: a few ms of acknowledgements go in
 * one message; worker 0, whose records go through no mailbox, 0), else
 * DIST_SEND_FULL. */
int dist_out_due(struct dist *d, double now, double room_delay, double *when);
/* Sleeps until when (dist_now() time), until a record is queued (the
 * first since the last take, an urgent one, or one when a full window
 * makes room: the caller then asks dist_out_due again), or until a
 * doorbell rings: rung(arg, from, addr) for each ring (dist_bell.h). */
void dist_wait(struct dist *d, double when,
               void (*rung)(void *arg, uint32_t from, const struct sockaddr_in *addr),
               void *arg);
/* Takes what was queued (for the coordinator of worker 0 or the mailbox). */
int dist_take_out(struct dist *d, struct rpc_writer *into);
/* Handles records from the coordinator (payload is taken over). */
void exec_receive(struct dist *d, void *payload, size_t len);

/* dist_cache.c: the open directories and split source files a worker's
 * items share. */
struct dcache *dcache_new(void);
void dcache_free(struct dcache *c);
/* The directory rel below root on a side (0 source, 1 destination), from
 * the cache if open, else entered (dcache_enter); release with
 * dcache_put. */
struct bdir *dcache_find(struct dcache *c, int side, const char *root, const char *rel);
struct bdir *dcache_enter(struct dcache *c, int side, const char *root, const char *rel,
                          struct bdir *dir);
void dcache_put(struct dcache *c, struct bdir *dir);
struct backend *side_b(struct stage_run *run, int side);
/* A request root (as the user gave it) on a side; create: make it. */
int open_root(struct dist *d, int side, const char *root, int create, struct bdir **out);
/* The directory rel below root on a side (from the cache if open). */
int open_dir(struct dist *d, int side, const char *root, const char *rel, struct bdir **out);
struct fcache *fcache_new(void);
void fcache_free(struct fcache *c);
/* File name of directory dir (root/rel), opened and checked against want
 * (size and mtime); -EBUSY if it changed since it was split. Release with
 * fcache_put. */
int fcache_open(struct fcache *c, struct bdir *dir, const char *root, const char *rel,
                const char *name, int follow, const struct stat *want, struct bfile **out);
void fcache_put(struct fcache *c, struct bfile *f);

/* dist_run.c: the mailbox store. */
/* Name of message seq from (to_hub) or to worker w. */
void dist_msg_name(char *out, size_t len, int to_hub, unsigned w, uint64_t seq);
/* Removes the messages from (to_hub) or to worker w read so far, *from up to
 * to (not included), advancing *from. A reader removes what it read after
 * acting on it: nothing else reads a message twice (it goes by sequence). */
void dist_drop_read(struct bdir *dir, int to_hub, unsigned w, uint64_t *from, uint64_t to);
/* Removes this run's mailboxes (worker 0, at the end). */
void dist_store_cleanup(struct dist *d);

/* dist_hub.c: worker 0's coordinator. */
int hub_create(struct dist *d, struct hub **out);
/* Queues the request's first items (the root, a list's entries). */
int hub_seed(struct hub *h);
/* Runs until every item is done and every worker said goodbye (or was
 * given up). */
void hub_loop(struct hub *h);
void hub_destroy(struct hub *h);

#endif
