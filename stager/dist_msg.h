/* dist_msg: what the workers of a distributed stage say to each other, and
 * the mailbox files that carry it.
 *
 * Workers on different nodes share only the file systems, so they talk
 * through small files in a directory both can reach (the job's adafs
 * instance, or beside the destination of a copy; dist.h). A message is one
 * file: a frame (magic, length, XXH3 of the payload) around records encoded
 * with common/rpc.h's bounds-checked helpers. A reader that finds a file
 * still being written (short, or a checksum that does not match) tries
 * again later; names are never reused within a run, so a complete frame is
 * the message.
 *
 * One codec for every record, both directions: dmsg_put writes the fields
 * a record's type (and an item's kind) has, dmsg_get reads them back and
 * refuses names and relative paths that could leave the directory they are
 * taken in. */
#ifndef ADAFS_STAGE_DIST_MSG_H
#define ADAFS_STAGE_DIST_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "backend.h"
#include "rpc.h"

/* Names of one directory per batch of work (also the stager's small-file
 * batch, stage_internal.h). */
#define DIST_BATCH 128
/* A message's payload is sent when it passes this (adafs keeps up to
 * 64 KiB of a file inline: one request to write, one to read). */
#define DIST_MSG_SOFT_MAX (48u << 10)
/* Largest message a reader takes. */
#define DIST_MSG_MAX (4u << 20)

enum dmsg_type {
    DM_HELLO = 1,   /* worker -> coordinator: id = worker, count = pid, text = host */
    DM_WELCOME,     /* coordinator -> worker: id = the run's nonce */
    DM_ITEM,        /* coordinator -> worker: a piece of work (kind) */
    DM_ACK,         /* worker -> coordinator: item id done; count 1 if it failed */
    DM_DIRINFO,     /* worker -> coordinator: the listed directory's attributes */
    DM_SUBDIR,      /* worker -> coordinator: a subdirectory found by a listing;
                     * id != 0: the lister lists it itself, as item id of
                     * directory child (ids it chose) */
    DM_BATCH,       /* worker -> coordinator: files found by a listing; id != 0:
                     * kept by the lister as item id */
    DM_SPLIT,       /* worker -> coordinator: a file to copy in pieces */
    DM_DONE,        /* coordinator -> worker: nothing is left; exit */
    DM_ABORT,       /* coordinator -> worker: stop (text says why) */
    DM_BYE,         /* worker -> coordinator: done, exiting */
    DM_STEAL,       /* coordinator -> worker: another worker is idle; give back
                     * up to count items not started yet (work stealing) */
    DM_RETURN,      /* worker -> coordinator: item id, not started, given back */
    DM_STOLEN,      /* worker -> coordinator: the answer to a STEAL; count
                     * items were given back (RETURNs before it) */
};

enum dmsg_kind {
    DK_DIR = 1,     /* list dir (loc) */
    DK_TOP,         /* a list entry or type=file request: sname -> dname */
    DK_FILES,       /* copy names[] of dir (loc) */
    DK_PIECES,      /* copy pieces [first, last) of file sname (loc) to dname */
    DK_FINAL_FILE,  /* check size and set mode, mtime of split file dname (loc) */
    DK_FINAL_DIR,   /* set mode, mtime of directory (loc), then of n - 1 of its
                     * parents in turn (modes[], mtimes[]: the directory's
                     * first): a chain completed at once is one item */
};

/* DM_DIRINFO flags */
#define DF_SET_ATTRS 1u   /* the directory gets the source's mode and mtime at the end */
#define DF_FRESH 2u       /* its destination was created by this run (no restart checks) */
/* DK_DIR, DM_SUBDIR, DK_PIECES, DM_SPLIT flags */
#define DF_FOLLOW 4u      /* reached through a symlink that was followed */

/* Where an item works: the request's roots as the user gave them and the
 * path below each ("" is the root itself). */
struct dloc {
    const char *rs, *rd;
    const char *srel, *drel;
};

/* One decoded record; strings point into the payload it came from. */
struct dmsg {
    uint32_t type, kind, flags;
    uint64_t id, dir, file, count, child;
    struct dloc loc;
    const char *sname, *dname, *text;
    uint32_t mode;
    struct timespec mtime;
    uint64_t size, dev, ino, piece_size, first, last;
    uint32_t n;
    const char *names[DIST_BATCH];
    unsigned char types[DIST_BATCH];
    uint32_t modes[DIST_BATCH];
    struct timespec mtimes[DIST_BATCH];
};

/* The parent of relative path rel in out ("a/b" -> "a", "a" -> ""). */
void dist_rel_parent(const char *rel, char *out, size_t outlen);

/* Appends m to w (check rpc_writer_ok). */
void dmsg_put(struct rpc_writer *w, const struct dmsg *m);
/* Reads the next record of r into m: 0, or -EPROTO naming what is wrong
 * in why (a malformed or unknown record, a name or path that is not
 * safe). */
int dmsg_get(struct rpc_reader *r, struct dmsg *m, const char **why);

/* A name of one entry ("", ".", ".." and anything with '/' are not). */
int dist_name_ok(const char *s);
/* A relative path of such names ("" too). */
int dist_rel_ok(const char *s);

/* Mailbox files in directory dir of a store backend. */
int mbox_put(struct bdir *dir, const char *name, const void *payload, size_t len);
/* 0 and a malloc'd payload; -ENOENT (not there), -EAGAIN (being written:
 * try again), or -errno. */
int mbox_get(struct bdir *dir, const char *name, void **payload, size_t *len);
int mbox_drop(struct bdir *dir, const char *name);

#endif
