/* dist_hub_int.h: what the coordinator's files share, not an API:
 * dist_hub.c (what workers say, handing out, the loop) and
 * dist_hub_tree.c (the queues and the records of the tree). */
#ifndef ADAFS_DIST_HUB_INT_H
#define ADAFS_DIST_HUB_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "dist.h"

enum wstate { W_WAITING, W_LIVE, W_GONE, W_BYE };

struct hitem {
    uint64_t id;
    uint32_t kind;
    uint64_t dir, file;
    struct hitem *prev, *next;
    size_t len;
    uint8_t rec[];           /* the encoded DM_ITEM record */
};

struct hq {
    struct hitem *head, *tail;
    size_t n;
};

struct hworker {
    enum wstate state;
    uint64_t in_seq, out_seq;
    uint64_t dropped;        /* its messages read and not removed: [dropped, in_seq) */
    double last_heard, last_sent, next_poll, poll;
    struct rpc_writer out;
    size_t out_n;
    struct hq held;          /* items it has and has not acknowledged */
    int said_write_error;
    double retry_at;            /* a message the store refused: tried again then */
    /* Its doorbell (dist_bell.h), from the source of its rings. */
    struct sockaddr_in bell;
    int bell_ok;
    /* Work stealing: a STEAL sent and not answered yet; and whether it
     * may hold items not started beyond its share (cleared by an answer of
     * none, set when it keeps work it found: what is handed out here goes
     * to the least loaded already, so it cannot pile up by itself). */
    int steal_pending, may_have_more;
};

struct hdir {
    uint64_t id, parent;
    struct hdir *next;       /* in its hash bucket */
    long pending;
    uint32_t root;
    char *srel, *drel;
    uint32_t mode, flags;
    struct timespec mtime;
    int info, loop, finalizing;
};

struct hfile {
    uint64_t dir;
    long pending;
    int failed;
    char *rs, *rd, *srel, *drel, *dname;
    uint64_t size;
    uint32_t mode;
    struct timespec mtime;
};

struct hroot {
    char *rs, *rd;
};

struct hub {
    struct dist *d;
    struct hworker *w;
    struct hq dirq, workq;
    struct hroot *roots;
    size_t nroots, roots_cap;
    /* Directories by id: ids the coordinator gives (1, 2, ...) and those
     * a lister gives the subdirectory it goes on into itself (top bit set),
     * in a hash table of chains. */
    struct hdir **dirs;
    size_t ndirs, dirs_cap;
    uint64_t next_dir;
    struct hfile **files;
    size_t nfiles, files_cap;
    uint64_t next_id;
    size_t live;             /* items queued or held */
    struct { uint64_t dev, ino; } *seen;
    size_t nseen, seen_cap;
    double start, done_at, last_copy;
    int done_sent;
};

/* ---- dist_hub_tree.c */
void hq_unlink(struct hq *q, struct hitem *it);
void hq_push(struct hq *q, struct hitem *it, int front);
void hq_free(struct hq *q);
/* *v (of *cap elements of size) grown to hold need, zeroed; 0 or -ENOMEM. */
int grow(void **v, size_t *cap, size_t need, size_t size);
uint32_t add_root(struct hub *h, const char *rs, const char *rd);
struct hdir *dir_get(struct hub *h, uint64_t id);
/* A new directory record (id 0: the next of ours): pending 1, its
 * listing. Returns its id, or 0. */
uint64_t dir_new(struct hub *h, uint64_t id, uint64_t parent, uint32_t root,
                 const char *srel, const char *drel);
struct hitem *item_new(struct hub *h, struct dmsg *m);
/* The bookkeeping is not to be trusted any more: the run stops. */
void no_memory(struct hub *h, const char *what);
/* Hands it to worker wi: into the next message (worker 0: no message). */
void give(struct hub *h, unsigned wi, struct hitem *it);
/* Frees record id (its parent is not told). */
uint64_t dir_drop(struct hub *h, uint64_t id);
void hfile_free(struct hfile *f);
/* One piece range less of split file id. */
void file_release(struct hub *h, uint64_t id, int failed);
/* An item is done (acknowledged): what it was part of counts one less. */
void complete(struct hub *h, struct hitem *it, int failed);

#endif
