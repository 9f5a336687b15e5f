/* dist_exec: one worker of a distributed stage (dist.h): the items it is
 * handed and its mailbox; the open directories and files they share are
 * dist_cache.c's, the listing of a directory dist_list.c's (what the two
 * share is in dist_exec_int.h). */
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

#include "dist_exec_int.h"
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
void fail_at(struct stage_run *run, const char *root, const char *rel, int err,
             const char *what)
{
    char *p = *rel ? backend_join(root, rel) : NULL;
    stage_fail(run, p ? p : root, err, "%s", what);
    free(p);
}

/* ---- items ---- */

static void payload_put(struct payload *p)
{
    if (p && atomic_fetch_sub(&p->refs, 1) == 1) {
        free(p->data);
        free(p);
    }
}

void xitem_free(struct xitem *xi)
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

void ack(struct xitem *xi, int failed)
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

void item_task(struct pool_thread *self, void *arg)
{
    struct xitem *xi = arg;
    if (atomic_load(&xi->d->run->stopping)) {
        ack(xi, 1);                 /* not started: the run stopped */
        return;
    }
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
