/* dist_exec_int.h: what a worker's files share, not an API: dist_exec.c
 * (the items, the mailbox) and dist_list.c (listing a directory). */
#ifndef ADAFS_DIST_EXEC_INT_H
#define ADAFS_DIST_EXEC_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include "dist.h"

/* A message's payload, shared by the items it carried. */
struct payload {
    _Atomic int refs;
    void *data;
};

struct xitem {
    struct dist *d;
    struct payload *p;
    struct dmsg m;
    struct dloc loc;       /* where a big file found here lives (SPLIT) */
    uint64_t dir;          /* the coordinator's directory it belongs to */
    char **owned;          /* a kept batch's names */
    struct bopen *listed;  /* a kept batch's files as its listing opened them (their
                            * data with them), or NULL; closed if not copied */
    char *own_rs, *own_rd; /* a request's parents, for loc */
    char *own_srel, *own_drel; /* a kept subdirectory's, for loc */
    struct bfile *src;     /* pieces: the source, from the file cache */
};

/* ---- dist_exec.c */
/* For messages: root/rel. */
void fail_at(struct stage_run *run, const char *root, const char *rel, int err,
             const char *what);
void xitem_free(struct xitem *xi);
/* The item is done (failed: some of it failed): the coordinator is told,
 * the item freed. */
void ack(struct xitem *xi, int failed);
/* The pool's task: runs one item. */
void item_task(struct pool_thread *self, void *arg);

/* ---- dist_list.c */
/* Lists directory loc of the coordinator's directory dir: creates its
 * destination, says what it is (DIRINFO) and what is in it. top: a list
 * entry or type=file request (its attributes are always set). */
void list_dir(struct pool_thread *self, struct xitem *xi, uint64_t dir,
              const struct dloc *loc, int top);

#endif
