/* dist_exec: one worker of a distributed stage (dist.h): the items it is
 * handed and its mailbox; the open directories and files they share are
 * dist_cache.c's. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "dist.h"
#include "log.h"

double dist_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- records for the coordinator ---- */

void dist_send(struct dist *d, const struct dmsg *m, int urgent)
{
    pthread_mutex_lock(&d->lock);
    int first = d->out_records == 0;
    if (first)
        d->out_since = dist_now();
    dmsg_put(&d->out, m);
    d->out_records++;
    if (urgent)
        d->urgent = 1;
    pthread_mutex_unlock(&d->lock);
    if (first || urgent)
        bell_wake_local(&d->bell);
}

int dist_take_out(struct dist *d, struct rpc_writer *into)
{
    pthread_mutex_lock(&d->lock);
    int n = (int)d->out_records;
    int ok = rpc_writer_ok(&d->out);
    *into = d->out;
    rpc_writer_init(&d->out, NULL, 0);
    d->out_records = 0;
    d->urgent = 0;
    pthread_mutex_unlock(&d->lock);
    return ok ? n : -ENOMEM;
}

/* Whether worker 0, once it has read what is queued, would hand this
 * worker more: it holds fewer items than its window. */
static int has_room(struct dist *d)
{
    return atomic_load(&d->running) < (long)d->window;
}

int dist_out_due(struct dist *d, double now, double room_delay, double *when)
{
    /* Acknowledgements that make no room in the window (a lister keeps
     * every batch its listing brought the data of, so it holds far more
     * than its window) change nothing worker 0 hands out: they wait for
     * the ones that do, at most DIST_SEND_FULL. Sent every 2 ms, they were
     * a message per few completions, each a mailbox file written, read
     * and removed on servers busy with the copy (doc/benchmarks.md,
     * Stager workers, run 14). */
    double delay = has_room(d) ? room_delay : DIST_SEND_FULL;
    pthread_mutex_lock(&d->lock);
    int due = d->out_records > 0 &&
              (d->urgent || d->out.len >= DIST_MSG_SOFT_MAX || now - d->out_since >= delay);
    if (d->out_records > 0 && !due && d->out_since + delay < *when)
        *when = d->out_since + delay;
    pthread_mutex_unlock(&d->lock);
    return due;
}

/* For messages: root/rel. */
static void fail_at(struct stage_run *run, const char *root, const char *rel, int err,
                    const char *what)
{
    char *p = *rel ? backend_join(root, rel) : NULL;
    stage_fail(run, p ? p : root, err, "%s", what);
    free(p);
}

/* ---- items ---- */

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

static void payload_put(struct payload *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        free(p->data);
        free(p);
    }
}

static void xitem_free(struct xitem *xi)
{
    if (xi->listed)
        for (uint32_t i = 0; i < xi->m.n; i++)
            if (xi->listed[i].f)
                xi->listed[i].f->b->ops->close(xi->listed[i].f);
    free(xi->listed);
    if (xi->owned)
        for (uint32_t i = 0; i < xi->m.n; i++)
            free(xi->owned[i]);
    free(xi->owned);
    free(xi->own_rs);
    free(xi->own_rd);
    free(xi->own_srel);
    free(xi->own_drel);
    payload_put(xi->p);
    free(xi);
}

static void ack(struct xitem *xi, int failed)
{
    struct dist *d = xi->d;
    struct dmsg a = { .type = DM_ACK, .id = xi->m.id, .count = failed != 0 };
    dist_send(d, &a, 0);
    /* The one that makes room in the window: what waits (dist_out_due)
     * is due sooner than the sender sleeps. */
    if (atomic_fetch_sub(&d->running, 1) == (long)d->window)
        bell_wake_local(&d->bell);
    xitem_free(xi);
}

/* A dnode for an item's directories (taken over), acknowledged when all
 * it started is done. */
static void item_done(struct dnode *n)
{
    struct xitem *xi = n->item;
    struct dist *d = xi->d;
    int failed = atomic_load(&n->failed);
    fcache_put(d->files, xi->src);
    xi->src = NULL;
    dcache_put(d->cache, n->src);
    dcache_put(d->cache, n->dst);
    free(n->rel);
    free(n);
    ack(xi, failed);
}

static struct dnode *item_node(struct xitem *xi, struct bdir *src, struct bdir *dst, int fresh)
{
    struct dnode *n = calloc(1, sizeof(*n));
    if (n && !(n->rel = strdup(""))) {
        free(n);
        n = NULL;
    }
    if (!n) {
        dcache_put(xi->d->cache, src);
        dcache_put(xi->d->cache, dst);
        return NULL;
    }
    n->run = xi->d->run;
    n->pending = 1;
    n->src = src;
    n->dst = dst;
    n->fresh = fresh;
    n->done = item_done;
    n->item = xi;
    return n;
}

void dist_split(struct dnode *parent, const char *sname, const char *dname,
                const struct stat *sst, int follow)
{
    struct xitem *xi = parent->item;
    struct stage_run *run = parent->run;
    struct bdir *dd = parent->dst;
    const struct backend_ops *dops = dd->b->ops;
    struct stat dst;
    if (!parent->fresh && dops->stat_at(dd, dname, 0, &dst) == 0 && S_ISREG(dst.st_mode) &&
        dst.st_size == sst->st_size && dst.st_mtim.tv_sec == sst->st_mtim.tv_sec &&
        dst.st_mtim.tv_nsec == sst->st_mtim.tv_nsec) {
        atomic_fetch_add(&run->unchanged, 1);
        return;
    }
    /* Emptied and sized before anyone writes a piece: what the pieces do
     * not write (holes) reads as zeros, whatever was there before. */
    struct bfile *f;
    const char *what = "create destination";
    int rc = dops->open_write(dd, dname, 1, S_IRUSR | S_IWUSR, &f);
    if (rc == 0) {
        if ((rc = dops->truncate(f, sst->st_size)) < 0)
            what = "set size of destination";
        int crc = dops->close(f);
        if (rc == 0 && crc < 0) {
            rc = crc;
            what = "close destination";
        }
    }
    if (rc < 0) {
        stage_fail_at(run, parent->src, sname, -rc, what);
        return;
    }
    struct dmsg m = { .type = DM_SPLIT, .dir = xi->dir, .loc = xi->loc, .sname = sname,
                      .dname = dname, .size = (uint64_t)sst->st_size, .mode = sst->st_mode,
                      .mtime = sst->st_mtim, .flags = follow ? DF_FOLLOW : 0 };
    dist_send(xi->d, &m, 1);
}

static void files_item(struct pool_thread *self, struct xitem *xi)
{
    struct dist *d = xi->d;
    const struct dloc *l = &xi->m.loc;
    struct bdir *src = NULL, *dst = NULL;
    int rc = open_dir(d, 0, l->rs, l->srel, &src);
    if (rc < 0)
        fail_at(d->run, l->rs, l->srel, -rc, "open source directory");
    else if ((rc = open_dir(d, 1, l->rd, l->drel, &dst)) < 0)
        fail_at(d->run, l->rd, l->drel, -rc, "open destination directory");
    if (rc < 0) {
        dcache_put(d->cache, src);
        ack(xi, 1);
        return;
    }
    struct dnode *n = item_node(xi, src, dst, (xi->m.flags & DF_FRESH) != 0);
    if (!n) {
        fail_at(d->run, l->rs, l->srel, ENOMEM, "copy");
        ack(xi, 1);
        return;
    }
    if (xi->listed) {
        /* Copied with the data its listing brought: no read of its own. */
        struct bopen *listed = xi->listed;
        xi->listed = NULL;
        walk_files_listed(self, n, xi->owned, xi->m.types, listed, xi->m.n);
        free(listed);
    } else {
        walk_files_now(self, n, xi->owned ? xi->owned : (char *const *)xi->m.names,
                       xi->m.types, xi->m.n);
    }
    dnode_release(n);
}

static void pieces_item(struct pool_thread *self, struct xitem *xi)
{
    struct dist *d = xi->d;
    const struct dmsg *m = &xi->m;
    struct bdir *src = NULL, *dst = NULL;
    int rc = open_dir(d, 0, m->loc.rs, m->loc.srel, &src);
    if (rc < 0)
        fail_at(d->run, m->loc.rs, m->loc.srel, -rc, "open source directory");
    else if ((rc = open_dir(d, 1, m->loc.rd, m->loc.drel, &dst)) < 0)
        fail_at(d->run, m->loc.rd, m->loc.drel, -rc, "open destination directory");
    struct dnode *n = rc == 0 ? item_node(xi, src, dst, 0) : NULL;
    if (!n) {
        if (rc == 0)
            fail_at(d->run, m->loc.rs, m->loc.srel, ENOMEM, "copy");
        else
            dcache_put(d->cache, src);
        ack(xi, 1);
        return;
    }
    struct stat sst = { .st_size = (off_t)m->size, .st_mode = m->mode, .st_mtim = m->mtime };
    int follow = (m->flags & DF_FOLLOW) || d->run->opt.follow_symlinks;
    rc = fcache_open(d->files, src, m->loc.rs, m->loc.srel, m->sname, follow, &sst, &xi->src);
    if (rc < 0) {
        stage_fail_at(d->run, src, m->sname, -rc,
                      rc == -EBUSY ? "source changed during the copy" : "open source");
        atomic_store(&n->failed, 1);
    } else {
        copy_pieces(self, n, xi->src, m->sname, m->dname, &sst, m->piece_size, m->first,
                    m->last, follow);
    }
    dnode_release(n);
}

static void final_file_item(struct xitem *xi)
{
    struct dist *d = xi->d;
    double t0 = dist_now();
    const struct dmsg *m = &xi->m;
    struct bdir *dd;
    int rc = open_dir(d, 1, m->loc.rd, m->loc.drel, &dd);
    if (rc < 0) {
        fail_at(d->run, m->loc.rd, m->loc.drel, -rc, "open destination directory");
        ack(xi, 1);
        return;
    }
    struct stat st;
    const struct backend_ops *ops = dd->b->ops;
    rc = ops->stat_at(dd, m->dname, 0, &st);
    if (rc == 0 && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size))
        rc = -EIO;
    if (rc == 0)
        rc = ops->set_attrs_at(dd, m->dname, m->mode, &m->mtime);
    if (rc < 0)
        stage_fail_at(d->run, dd, m->dname, -rc,
                      rc == -EIO ? "finalize: destination incomplete" : "set mode and mtime");
    else
        atomic_fetch_add(&d->run->files, 1);
    dcache_put(d->cache, dd);
    atomic_fetch_add(&d->final_ns, (uint64_t)((dist_now() - t0) * 1e9));
    ack(xi, rc < 0);
}

static void final_dir_item(struct xitem *xi)
{
    struct dist *d = xi->d;
    double t0 = dist_now();
    const struct dmsg *m = &xi->m;
    char rel[PATH_MAX];
    int failed = 0;
    snprintf(rel, sizeof(rel), "%s", m->loc.drel);
    /* The directory, then the parents it completed, deepest first. */
    for (uint32_t i = 0; i < m->n; i++) {
        struct bdir *dd;
        const char *what = "open destination directory";
        int rc;
        if (d->run->dst_adafs && *rel) {
            /* adafs has no symlinks: by path, without a stat to open it. */
            what = "set mode and mtime of directory";
            rc = open_root(d, 1, m->loc.rd, 0, &dd);
            if (rc == 0) {
                rc = dd->b->ops->set_attrs_at(dd, rel, m->modes[i], &m->mtimes[i]);
                dcache_put(d->cache, dd);
            }
        } else if ((rc = open_dir(d, 1, m->loc.rd, rel, &dd)) == 0) {
            what = "set mode and mtime of directory";
            rc = dd->b->ops->dir_set_attrs(dd, m->modes[i], &m->mtimes[i]);
            dcache_put(d->cache, dd);
        }
        if (rc < 0) {
            fail_at(d->run, m->loc.rd, rel, -rc, what);
            failed = 1;
        }
        char up[PATH_MAX];
        dist_rel_parent(rel, up, sizeof(up));
        memcpy(rel, up, strlen(up) + 1);
    }
    atomic_fetch_add(&d->final_ns, (uint64_t)((dist_now() - t0) * 1e9));
    ack(xi, failed);
}

/* ---- listing a directory ---- */

struct lister {
    struct pool_thread *self;
    struct xitem *xi;
    uint64_t dir;
    const struct dloc *loc;
    struct bdir *src, *dst;
    int follow, kept, kept_dir;
    uint32_t fresh;             /* DF_FRESH: the destination was made by this listing */
    char *names[DIST_BATCH];
    unsigned char types[DIST_BATCH];
    struct bopen listed[DIST_BATCH];  /* what the listing opened (f NULL: nothing) */
    int with_data;              /* some of them: the batch is copied here */
    uint32_t n;
};

static void item_task(struct pool_thread *self, void *arg);

/* Sends the names gathered so far: the first batch of a directory stays
 * here (no round trip for a small directory), the others go out, but for
 * those whose data the listing brought (stage-out of small files): they
 * stay too, to be copied without a read of their own, as one process
 * copies them; what this worker has not started when another is idle is
 * given back (work stealing) and read there. */
static int send_batch(struct lister *L)
{
    struct dist *d = L->xi->d;
    if (!L->n)
        return 0;
    struct dmsg m = { .type = DM_BATCH, .dir = L->dir, .n = L->n };
    memcpy(m.names, L->names, L->n * sizeof(*m.names));
    memcpy(m.types, L->types, L->n);
    /* With --follow-symlinks the coordinator may find the directory
     * already copied (a loop) and drop its batches: keep none. */
    /* Also kept while this worker holds less than its window (what the
     * coordinator would hand it anyway: no round trip for it); beyond,
     * it goes out for whoever has room. */
    int keep = (!L->kept || L->with_data ||
                atomic_load(&d->running) < (long)d->window) &&
               !d->run->opt.follow_symlinks;
    struct xitem *k = keep ? calloc(1, sizeof(*k)) : NULL;
    if (k) {
        uint64_t id = atomic_fetch_add(&d->next_kept, 1);
        m.id = (1ull << 63) | ((uint64_t)d->me << 40) | id;
        k->d = d;
        k->p = L->xi->p;
        atomic_fetch_add(&k->p->refs, 1);
        /* The lister's paths may be its own (a kept subdirectory's), gone
         * when it is: the batch keeps copies. */
        k->own_srel = strdup(L->loc->srel);
        k->own_drel = strdup(L->loc->drel);
        k->m = (struct dmsg){ .type = DM_ITEM, .kind = DK_FILES, .id = m.id, .dir = L->dir,
                              .loc = { L->loc->rs, L->loc->rd, k->own_srel, k->own_drel },
                              .flags = L->fresh, .n = L->n };
        memcpy(k->m.types, L->types, L->n);
        k->dir = L->dir;
        k->loc = k->m.loc;
        k->owned = malloc(L->n * sizeof(*k->owned));
        if (L->with_data && (k->listed = malloc(L->n * sizeof(*k->listed))))
            memcpy(k->listed, L->listed, L->n * sizeof(*k->listed));
        if (!k->owned || !k->own_srel || !k->own_drel || (L->with_data && !k->listed)) {
            free(k->listed);            /* its files are closed below, with the names */
            k->listed = NULL;
            xitem_free(k);
            k = NULL;
            m.id = 0;
        }
    }
    dist_send(d, &m, k == NULL);
    if (k) {
        L->kept = 1;
        memcpy(k->owned, L->names, L->n * sizeof(*k->owned));
        atomic_fetch_add(&d->running, 1);
        if (pool_push(d->run->pool, L->self, item_task, k) < 0) {
            /* Told the coordinator it is ours: it must be done or failed. */
            fail_at(d->run, L->loc->rs, L->loc->srel, ENOMEM, "queue files");
            ack(k, 1);
        }
    } else {
        for (uint32_t i = 0; i < L->n; i++) {
            if (L->listed[i].f)
                L->listed[i].f->b->ops->close(L->listed[i].f);
            free(L->names[i]);
        }
    }
    memset(L->listed, 0, sizeof(L->listed));
    L->with_data = 0;
    L->n = 0;
    return 0;
}

/* The mailbox store, where it lies on a side the copy walks. */
static int is_store(struct dist *d, int side, const struct bdir *dir, const char *name)
{
    /* The store is always named DIST_STORE (dist_run.c): every other
     * entry of a listing is told apart by its name, without a path made
     * for it (an asprintf per file listed, on the workers' side only). */
    if (side != d->store_side || dir->b != side_b(d->run, side) || strcmp(name, DIST_STORE) != 0)
        return 0;
    char *p = backend_join(dir->path, name);
    int same = p && !strcmp(p, d->store);
    free(p);
    return same;
}

static void skip(struct stage_run *run, struct bdir *dir, const char *name, const char *why)
{
    log_warn("skipping %s/%s: %s", dir->path, name, why);
    atomic_fetch_add(&run->skipped, 1);
}

/* The first subdirectory of a listing is listed by this worker too, right
 * after (depth first, as one process walks): a deep, narrow tree is walked
 * without a round trip to the coordinator per level. It gets ids of this
 * worker's, told in m. Not with --follow-symlinks: a loop must be seen by
 * the coordinator before anyone goes into it. */
static struct xitem *keep_subdir(struct lister *L, const char *name, struct dmsg *m)
{
    struct dist *d = L->xi->d;
    if (L->kept_dir || d->run->opt.follow_symlinks)
        return NULL;
    struct xitem *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->own_srel = stage_rel(L->loc->srel, name);
    k->own_drel = stage_rel(L->loc->drel, name);
    if (!k->own_srel || !k->own_drel) {
        xitem_free(k);
        return NULL;
    }
    uint64_t base = (1ull << 63) | ((uint64_t)d->me << 40);
    m->id = base | atomic_fetch_add(&d->next_kept, 1);
    m->child = base | atomic_fetch_add(&d->next_kept, 1);
    k->d = d;
    k->p = L->xi->p;
    atomic_fetch_add(&k->p->refs, 1);
    k->m = (struct dmsg){ .type = DM_ITEM, .kind = DK_DIR, .id = m->id, .dir = m->child,
                          .loc = { L->loc->rs, L->loc->rd, k->own_srel, k->own_drel } };
    k->dir = m->child;
    L->kept_dir = 1;
    return k;
}

static int lister_entry(void *arg, const char *name, unsigned char type, struct bopen *opened)
{
    struct lister *L = arg;
    struct dist *d = L->xi->d;
    struct stage_run *run = d->run;
    if (opened && (type != DT_REG || is_store(d, 1, L->dst, name))) {
        opened->f->b->ops->close(opened->f);
        opened = NULL;
    }
    if (is_store(d, 0, L->src, name))
        return 0;                   /* our own mailboxes (stage-out of a whole instance) */
    if (is_store(d, 1, L->dst, name)) {
        stage_fail_at(run, L->src, name, EEXIST,
                      "name reserved in the destination for the workers' mailboxes");
        return 0;
    }
    if (type == DT_UNKNOWN || (type == DT_LNK && L->follow)) {
        struct stat st;
        int rc = L->src->b->ops->stat_at(L->src, name, L->follow, &st);
        if (rc < 0) {
            stage_fail_at(run, L->src, name, -rc, "stat source");
            return 0;
        }
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG
             : S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
    }
    if (type == DT_DIR) {
        struct dmsg m = { .type = DM_SUBDIR, .dir = L->dir, .sname = name, .dname = name };
        struct xitem *k = keep_subdir(L, name, &m);
        dist_send(d, &m, k == NULL);
        if (k) {
            atomic_fetch_add(&d->running, 1);
            if (pool_push(run->pool, L->self, item_task, k) < 0) {
                fail_at(run, L->loc->rs, k->own_srel, ENOMEM, "queue a directory");
                ack(k, 1);
            }
        }
    } else if (type == DT_REG) {
        if (!(L->names[L->n] = strdup(name))) {
            if (opened)
                opened->f->b->ops->close(opened->f);
            return -ENOMEM;
        }
        if (opened) {
            L->listed[L->n] = *opened;
            L->listed[L->n].name = L->names[L->n];
            L->with_data = 1;
        }
        L->types[L->n++] = DT_REG;
        if (L->n == DIST_BATCH)
            return send_batch(L);
    } else if (type == DT_LNK) {
        skip(run, L->src, name, "symbolic link (use --follow-symlinks to copy its target)");
    } else {
        skip(run, L->src, name, "not a regular file");
    }
    return 0;
}

/* Lists directory loc of the coordinator's directory dir: creates its
 * destination, says what it is (DIRINFO) and what is in it. top: a list
 * entry or type=file request (its attributes are always set). */
static void list_dir(struct pool_thread *self, struct xitem *xi, uint64_t dir,
                     const struct dloc *loc, int top)
{
    struct dist *d = xi->d;
    struct stage_run *run = d->run;
    int follow = run->opt.follow_symlinks;
    struct bdir *sd = NULL, *dd = NULL, *parent = NULL;
    struct stat sst, dst;
    int rc;
    if (!*loc->srel) {
        char sp[PATH_MAX];
        rc = stage_side_path(run, 0, loc->rs, sp, sizeof(sp));
        if (rc == 0)
            rc = run->src_b.ops->root_open(&run->src_b, sp, 0, &sd, &sst);
    } else {
        /* Below its parent when this worker has that open (a chain it
         * walks down, a directory it listed): one name to resolve, not the
         * whole path from the root, which in a deep tree makes the walk
         * quadratic in the depth. */
        char up[PATH_MAX];
        dist_rel_parent(loc->srel, up, sizeof(up));
        if ((parent = dcache_find(d->cache, 0, loc->rs, up)))
            rc = parent->b->ops->dir_open(parent, loc->srel + strlen(up) + (*up ? 1 : 0),
                                          follow, &sd, &sst);
        else if ((rc = open_root(d, 0, loc->rs, 0, &parent)) == 0)
            rc = parent->b->ops->dir_open_rel(parent, loc->srel, follow, &sd, &sst);
        dcache_put(d->cache, parent);
    }
    if (rc < 0) {
        fail_at(run, loc->rs, loc->srel, -rc, "open source directory");
        ack(xi, 1);
        return;
    }
    const struct backend_ops *dops = run->dst_b.ops;
    uint32_t flags = DF_SET_ATTRS;
    const char *what = "open destination directory";
    if (!*loc->drel) {
        char dp[PATH_MAX];
        rc = stage_side_path(run, 1, loc->rd, dp, sizeof(dp));
        int existed = rc == 0 && dops->root_open(&run->dst_b, dp, 0, &dd, &dst) == 0;
        if (rc == 0 && !existed) {
            what = "create destination directory";
            rc = dops->root_open(&run->dst_b, dp, 1, &dd, &dst);
        }
        /* One that existed (a job's mount point, a user's project
         * directory) keeps its own attributes, unless a list named it. */
        flags = (existed ? 0 : DF_FRESH) | (!existed || top ? DF_SET_ATTRS : 0);
    } else {
        char *pdir = strdup(loc->drel), *pbase = strdup(loc->drel);
        rc = pdir && pbase ? 0 : -ENOMEM;
        char *dn = rc == 0 ? dirname(pdir) : NULL, *bn = rc == 0 ? basename(pbase) : NULL;
        if (rc == 0)
            rc = open_dir(d, 1, loc->rd, strcmp(dn, ".") ? dn : "", &parent);
        if (rc == 0) {
            rc = dops->dir_make(parent, bn, S_IRWXU);
            if (rc == 0)
                flags |= DF_FRESH;
            if (rc == -EEXIST)
                rc = 0;
            else if (rc < 0)
                what = "create directory";
        }
        if (rc == 0)
            rc = dops->dir_open(parent, bn, 0, &dd, &dst);
        dcache_put(d->cache, parent);
        free(pdir);
        free(pbase);
    }
    /* A directory left read-only by an earlier run must take new files. */
    if (rc == 0 && (dst.st_mode & S_IRWXU) != S_IRWXU &&
        (rc = dops->dir_set_attrs(dd, dst.st_mode | S_IRWXU, NULL)) < 0)
        what = "make directory writable";
    if (rc < 0) {
        fail_at(run, loc->rd, loc->drel, -rc, what);
        if (dd)
            dops->dir_close(dd);
        sd->b->ops->dir_close(sd);
        ack(xi, 1);
        return;
    }
    atomic_fetch_add(&run->dirs, 1);
    struct dmsg info = { .type = DM_DIRINFO, .dir = dir, .mode = sst.st_mode,
                         .mtime = sst.st_mtim, .dev = (uint64_t)sst.st_dev,
                         .ino = (uint64_t)sst.st_ino, .flags = flags };
    /* Not urgent: it is not work for anyone, and the coordinator reads it
     * before the listing's other records whenever they go. Urgent, it was
     * a message of its own for every directory listed (a mailbox file
     * written, polled, read and removed: on a tree of many small
     * directories the workers' largest cost above one process's). */
    dist_send(d, &info, 0);
    sd = dcache_enter(d->cache, 0, loc->rs, loc->srel, sd);
    dd = dcache_enter(d->cache, 1, loc->rd, loc->drel, dd);

    struct lister L = { .self = self, .xi = xi, .dir = dir, .loc = loc, .src = sd, .dst = dd,
                        .follow = follow, .fresh = flags & DF_FRESH };
    /* A fresh destination tells the batches so (no restart checks). */
    xi->loc = *loc;
    /* Files with their data where the source brings them with a listing
     * (stage-out): the batches are then copied here (send_batch). Not with
     * --follow-symlinks, where no batch is kept. */
    int open_files = sd->b->ops->open_read_many != NULL && !follow;
    rc = sd->b->ops->dir_list(sd, open_files, lister_entry, &L);
    if (rc == 0)
        rc = send_batch(&L);
    for (uint32_t i = 0; i < L.n; i++) {
        if (L.listed[i].f)
            L.listed[i].f->b->ops->close(L.listed[i].f);
        free(L.names[i]);
    }
    if (rc < 0)
        stage_fail(run, sd->path, -rc, "list directory");
    dcache_put(d->cache, sd);
    dcache_put(d->cache, dd);
    ack(xi, rc < 0);
}

/* A list entry or type=file request: a directory becomes a root of its
 * own, listed here; a file is copied like any other. */
static void top_item(struct pool_thread *self, struct xitem *xi)
{
    struct dist *d = xi->d;
    struct stage_run *run = d->run;
    const struct dmsg *m = &xi->m;
    char sp[PATH_MAX], dp[PATH_MAX], sdir[PATH_MAX], ddir[PATH_MAX];
    int rc = stage_side_path(run, 0, m->sname, sp, sizeof(sp));
    if (rc == 0)
        rc = stage_side_path(run, 1, m->dname, dp, sizeof(dp));
    if (rc < 0) {
        stage_fail(run, m->sname, -rc, "%s", m->count ? "list entry: path" : "path");
        ack(xi, 1);
        return;
    }
    strcpy(sdir, sp);
    strcpy(ddir, dp);
    const char *sname = basename(sp), *dname = basename(dp);
    const char *s_parent = dirname(sdir), *d_parent = dirname(ddir);
    if (!dist_name_ok(sname) || !dist_name_ok(dname)) {
        stage_fail(run, m->sname, EINVAL, "source and destination must each name an entry, "
                   "not / . or ..");
        ack(xi, 1);
        return;
    }
    struct bdir *sd = NULL, *dd = NULL;
    struct stat st;
    if ((rc = open_root(d, 0, s_parent, 0, &sd)) < 0) {
        stage_fail(run, s_parent, -rc, "open source directory");
        ack(xi, 1);
        return;
    }
    /* Named by the user: a symlink is followed. */
    if ((rc = sd->b->ops->stat_at(sd, sname, 1, &st)) < 0) {
        stage_fail_at(run, sd, sname, -rc, "open source");
        dcache_put(d->cache, sd);
        ack(xi, 1);
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        dcache_put(d->cache, sd);
        struct dloc root = { m->sname, m->dname, "", "" };
        list_dir(self, xi, m->dir, &root, 1);
        return;
    }
    if ((rc = open_root(d, 1, d_parent, 1, &dd)) < 0) {
        stage_fail(run, d_parent, -rc, "create destination directory");
        dcache_put(d->cache, sd);
        ack(xi, 1);
        return;
    }
    xi->own_rs = strdup(s_parent);
    xi->own_rd = strdup(d_parent);
    struct dnode *n = xi->own_rs && xi->own_rd ? item_node(xi, sd, dd, 0) : NULL;
    if (!n) {
        if (xi->own_rs && xi->own_rd)
            sd = dd = NULL;           /* item_node let them go */
        dcache_put(d->cache, sd);
        dcache_put(d->cache, dd);
        stage_fail(run, m->sname, ENOMEM, "copy");
        ack(xi, 1);
        return;
    }
    xi->loc = (struct dloc){ xi->own_rs, xi->own_rd, "", "" };
    walk_entry(self, n, sname, dname, S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN, 1);
    dnode_release(n);
}

static void item_task(struct pool_thread *self, void *arg)
{
    struct xitem *xi = arg;
    switch (xi->m.kind) {
    case DK_DIR:
        list_dir(self, xi, xi->m.dir, &xi->m.loc, 0);
        break;
    case DK_TOP:
        top_item(self, xi);
        break;
    case DK_FILES:
        xi->loc = xi->m.loc;
        files_item(self, xi);
        break;
    case DK_PIECES:
        pieces_item(self, xi);
        break;
    case DK_FINAL_FILE:
        final_file_item(xi);
        break;
    case DK_FINAL_DIR:
        final_dir_item(xi);
        break;
    }
}

/* Another worker is idle and nothing is queued at worker 0: half of the
 * items this worker holds and has not started (at most want) go back, the
 * oldest first (in a walk the biggest pieces of work: the top of a deep
 * chain, a directory not listed yet), and the answer says how many, so
 * worker 0 asks again only when there may be more. */
static void give_back(struct dist *d, uint64_t want)
{
    void *items[64];
    unsigned max = want < 64 ? (unsigned)want : 64;
    unsigned n = d->stop ? 0 : pool_take_back(d->run->pool, item_task, items, max);
    for (unsigned i = 0; i < n; i++) {
        struct xitem *xi = items[i];
        dist_send(d, &(struct dmsg){ .type = DM_RETURN, .id = xi->m.id }, 0);
        atomic_fetch_sub(&d->running, 1);
        xitem_free(xi);
    }
    d->given_back += n;
    dist_send(d, &(struct dmsg){ .type = DM_STOLEN, .count = n }, n > 0);
}

void exec_receive(struct dist *d, void *payload, size_t len)
{
    struct payload *p = malloc(sizeof(*p));
    if (!p) {
        free(payload);
        stage_fail(d->run, d->run->opt.src, ENOMEM, "receive work");
        d->stop = 1;
        return;
    }
    atomic_init(&p->refs, 1);
    p->data = payload;
    struct rpc_reader r;
    rpc_reader_init(&r, payload, len);
    while (r.off < r.len) {
        struct dmsg m;
        const char *why;
        if (dmsg_get(&r, &m, &why) < 0) {
            stage_fail(d->run, d->run->opt.src, EPROTO,
                       "a message from worker 0 is malformed (%s): this worker stopped", why);
            d->stop = 1;
            break;
        }
        if (m.type == DM_WELCOME) {
            if (m.id == d->nonce)
                d->joined = 1;
        } else if (m.type == DM_DONE) {
            d->done = 1;
        } else if (m.type == DM_STEAL) {
            give_back(d, m.count);
        } else if (m.type == DM_ABORT) {
            stage_fail(d->run, d->run->opt.src, ECANCELED, "worker 0 stopped this worker: %s",
                       m.text);
            d->stop = 1;
        } else if (m.type == DM_ITEM && !d->stop) {
            struct xitem *xi = calloc(1, sizeof(*xi));
            if (!xi) {
                stage_fail(d->run, d->run->opt.src, ENOMEM, "receive work");
                d->stop = 1;
                break;
            }
            xi->d = d;
            xi->m = m;
            xi->dir = m.kind == DK_PIECES || m.kind == DK_FINAL_FILE ? 0 : m.dir;
            xi->p = p;
            atomic_fetch_add(&p->refs, 1);
            atomic_fetch_add(&d->running, 1);
            if (pool_push(d->run->pool, NULL, item_task, xi) < 0) {
                stage_fail(d->run, d->run->opt.src, ENOMEM, "queue work");
                atomic_fetch_sub(&d->running, 1);
                xitem_free(xi);
                d->stop = 1;
            }
        } else if (m.type != DM_ITEM) {
            stage_fail(d->run, d->run->opt.src, EPROTO,
                       "worker 0 sent a record meant for it (type %u): this worker stopped",
                       m.type);
            d->stop = 1;
            break;
        }
    }
    payload_put(p);
}
