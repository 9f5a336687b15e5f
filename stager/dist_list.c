/* dist_list: a worker lists a directory the coordinator handed it
 * (dist_exec.c): creates its destination, says what it is, and sends
 * what is in it in batches, keeping the first (and those whose data the
 * listing brought) to copy here. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist_exec_int.h"
#include "log.h"

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
void list_dir(struct pool_thread *self, struct xitem *xi, uint64_t dir,
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
