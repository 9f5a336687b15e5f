/* stage_walk: the parallel tree walk.
 *
 * A directory is listed by one task; its subdirectories become tasks of
 * their own and its files are queued in batches, so a directory of 100,000
 * files is spread over all threads and a deep tree over all of them too.
 * A distributed run (dist.h) lists and copies through the same entry
 * handling, with the coordinator deciding who lists and copies what. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "stage_internal.h"

/* Files per files task: enough for a small-file batch to fill requests to
 * every server of an adafs instance, few enough to spread a directory over
 * the threads. */
#define BATCH SMALL_BATCH_FILES
/* Entries opened together on a backend with open_read_many. */
#define PREOPEN 128

struct subdir_task {
    struct dnode *parent;
    char *sname, *dname;
    int follow;
};

struct files_task {
    struct dnode *parent;
    unsigned n;
    char *names[BATCH];
    unsigned char types[BATCH];
    struct bopen listed[BATCH];   /* opened by the listing where .f is set */
};

/* Frees a files task that will not run. */
static void files_task_free(struct files_task *t)
{
    for (unsigned i = 0; i < t->n; i++) {
        if (t->listed[i].f)
            t->listed[i].f->b->ops->close(t->listed[i].f);
        free(t->names[i]);
    }
    free(t);
}

void dnode_hold(struct dnode *n)
{
    atomic_fetch_add(&n->pending, 1);
}

void dnode_release(struct dnode *n)
{
    while (n && atomic_fetch_sub(&n->pending, 1) == 1) {
        if (n->done) {             /* a distributed item: it owns the rest */
            n->done(n);
            return;
        }
        struct backend *db = n->dst ? n->dst->b : NULL;
        if (n->set_attrs && n->dst) {
            int rc = db->ops->dir_set_attrs(n->dst, n->mode, &n->mtime);
            if (rc < 0)
                stage_fail(n->run, n->dst->path, -rc, "set mode and mtime of directory");
        }
        if (n->src)
            n->src->b->ops->dir_close(n->src);
        if (n->dst)
            db->ops->dir_close(n->dst);
        struct dnode *parent = n->parent;
        free(n->rel);
        free(n);
        n = parent;
    }
}

/* Every regular file listed is opened with open_read_many, or by the
 * listing itself. */
static int opens_listed(const struct dnode *p)
{
    return p->src->b->ops->open_read_many != NULL;
}

static void subdir_task(struct pool_thread *self, void *arg)
{
    struct subdir_task *t = arg;
    struct dnode *p = t->parent;
    struct stage_run *run = p->run;
    const struct backend_ops *sops = p->src->b->ops, *dops = p->dst->b->ops;
    struct bdir *sd = NULL, *dd = NULL;
    struct stat sst, dst;

    int rc = sops->dir_open(p->src, t->sname, t->follow, &sd, &sst);
    if (rc < 0) {
        stage_fail_at(run, p->src, t->sname, -rc, "open source directory");
        goto out;
    }
    if (t->follow && stage_seen_dir(run, sst.st_dev, sst.st_ino)) {
        log_warn("skipping %s/%s: directory already copied (symlink loop?)",
                 p->src->path, t->sname);
        atomic_fetch_add(&run->skipped, 1);
        goto out;
    }
    rc = dops->dir_make(p->dst, t->dname, S_IRWXU);
    int fresh = rc == 0;
    if (rc < 0 && rc != -EEXIST) {
        stage_fail_at(run, p->dst, t->dname, -rc, "create directory");
        goto out;
    }
    rc = dops->dir_open(p->dst, t->dname, 0, &dd, &dst);
    if (rc < 0) {
        stage_fail_at(run, p->dst, t->dname, -rc, "open destination directory");
        goto out;
    }
    /* A directory left read-only by an earlier run must take new files. */
    if ((dst.st_mode & S_IRWXU) != S_IRWXU &&
        (rc = dops->dir_set_attrs(dd, dst.st_mode | S_IRWXU, NULL)) < 0) {
        stage_fail(run, dd->path, -rc, "make directory writable");
        goto out;
    }

    struct dnode *n = calloc(1, sizeof(*n));
    char *rel = stage_rel(p->rel, t->dname);
    if (!n || !rel) {
        free(n);
        free(rel);
        stage_fail(run, dd->path, ENOMEM, "walk");
        goto out;
    }
    *n = (struct dnode){ .run = run, .parent = p, .pending = 1, .src = sd, .dst = dd,
                         .rel = rel, .mode = sst.st_mode, .mtime = sst.st_mtim,
                         .set_attrs = 1,
                         .fresh = fresh };
    atomic_fetch_add(&run->dirs, 1);
    free(t->sname);
    free(t->dname);
    free(t);
    walk_list(self, n);      /* the node inherits our hold on the parent */
    return;
out:
    if (sd)
        sops->dir_close(sd);
    if (dd)
        dops->dir_close(dd);
    dnode_release(p);
    free(t->sname);
    free(t->dname);
    free(t);
}

void walk_push_subdir(struct pool_thread *self, struct dnode *parent,
                      const char *sname, const char *dname, int follow)
{
    struct stage_run *run = parent->run;
    struct subdir_task *t = malloc(sizeof(*t));
    if (t) {
        *t = (struct subdir_task){ parent, strdup(sname), strdup(dname), follow };
        if (t->sname && t->dname) {
            dnode_hold(parent);
            if (pool_push(run->pool, self, subdir_task, t) == 0)
                return;
            dnode_release(parent);
        }
        free(t->sname);
        free(t->dname);
        free(t);
    }
    stage_fail_at(run, parent->src, sname, ENOMEM, "queue directory");
}

/* Opens the regular files among names[0..n) the listing did not open
 * (listed[i].f NULL) with one open_read_many; of[i] is entry i's result,
 * NULL where walk_file must open it itself. */
static void preopen(struct dnode *p, char *const *names, const unsigned char *types,
                    struct bopen *listed, unsigned n, struct bopen *pre, struct bopen **of)
{
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        of[i] = NULL;
        if (listed[i].f) {
            of[i] = &listed[i];
        } else if (types[i] == DT_REG) {
            pre[m] = (struct bopen){ .name = names[i] };
            of[i] = &pre[m++];
        }
    }
    if (m && p->src->b->ops->open_read_many(p->src, pre, m) < 0)
        for (unsigned i = 0; i < n; i++)
            if (!listed[i].f)
                of[i] = NULL;   /* could not even try: one by one */
}

static void copy_files(struct pool_thread *self, struct dnode *p, char *const *names,
                       const unsigned char *types, struct bopen *listed, unsigned n)
{
    struct stage_run *run = p->run;
    struct small_batch batch, *sb = NULL;
    if (p->dst->b->ops->create_many && !run->opt.verify) {
        batch = (struct small_batch){ .parent = p, .buf = pool_scratch(self),
                                      .cap = STAGE_BUF_SIZE };
        sb = &batch;
    }
    int pre = opens_listed(p);
    for (unsigned i0 = 0; i0 < n; i0 += PREOPEN) {
        unsigned k = n - i0 < PREOPEN ? n - i0 : PREOPEN;
        struct bopen opened[PREOPEN], *of[PREOPEN] = { NULL };
        if (pre)
            preopen(p, names + i0, types + i0, listed + i0, k, opened, of);
        for (unsigned i = 0; i < k; i++)
            walk_file(self, p, names[i0 + i], types[i0 + i], of[i], sb);
    }
    if (sb)
        small_batch_flush(sb);
}

void walk_files_now(struct pool_thread *self, struct dnode *parent, char *const *names,
                    const unsigned char *types, unsigned n)
{
    struct bopen none[PREOPEN] = { { 0 } };
    for (unsigned i0 = 0; i0 < n; i0 += PREOPEN) {
        unsigned k = n - i0 < PREOPEN ? n - i0 : PREOPEN;
        copy_files(self, parent, names + i0, types + i0, none, k);
    }
}

void walk_files_listed(struct pool_thread *self, struct dnode *parent, char *const *names,
                       const unsigned char *types, struct bopen *listed, unsigned n)
{
    copy_files(self, parent, names, types, listed, n);
}

static void files_task(struct pool_thread *self, void *arg)
{
    struct files_task *t = arg;
    struct dnode *p = t->parent;
    copy_files(self, p, t->names, t->types, t->listed, t->n);
    for (unsigned i = 0; i < t->n; i++)
        free(t->names[i]);
    dnode_release(p);
    free(t);
}

struct list_ctx {
    struct pool_thread *self;
    struct dnode *n;
    struct files_task *batch;
};

static int push_batch(struct list_ctx *c)
{
    struct files_task *t = c->batch;
    c->batch = NULL;
    if (!t)
        return 0;
    dnode_hold(c->n);
    if (pool_push(c->n->run->pool, c->self, files_task, t) == 0)
        return 0;
    dnode_release(c->n);
    files_task_free(t);
    return -ENOMEM;
}

static int list_cb(void *arg, const char *name, unsigned char d_type, struct bopen *opened)
{
    struct list_ctx *c = arg;
    if (d_type == DT_DIR) {
        walk_push_subdir(c->self, c->n, name, name, 0);
        return 0;
    }
    char *copy = strdup(name);
    if (!c->batch && copy && !(c->batch = calloc(1, sizeof(*c->batch)))) {
        free(copy);
        copy = NULL;
    }
    if (!copy) {
        if (opened)
            opened->f->b->ops->close(opened->f);
        return -ENOMEM;
    }
    struct files_task *t = c->batch;
    t->parent = c->n;
    t->names[t->n] = copy;
    t->types[t->n] = d_type;
    if (opened) {
        t->listed[t->n] = *opened;
        t->listed[t->n].name = copy;
    }
    return ++t->n == BATCH ? push_batch(c) : 0;
}

void walk_list(struct pool_thread *self, struct dnode *n)
{
    struct list_ctx c = { self, n, NULL };
    int rc = n->src->b->ops->dir_list(n->src, opens_listed(n), list_cb, &c);
    int prc = push_batch(&c);
    if (rc == 0)
        rc = prc;
    if (rc < 0)
        stage_fail(n->run, n->src->path, -rc, "list directory");
    dnode_release(n);
}

static void skip(struct stage_run *run, struct dnode *parent, const char *name,
                 const char *why)
{
    log_warn("skipping %s/%s: %s", parent->src->path, name, why);
    atomic_fetch_add(&run->skipped, 1);
}

static int same_mtime(const struct stat *a, const struct stat *b)
{
    return a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* A file bigger than a piece: copied in pieces by this process's threads,
 * or, of several workers, by whichever the coordinator gives them to. */
static void split(struct pool_thread *self, struct dnode *parent, const char *sname,
                  const char *dname, const char *rel, const struct stat *sst, int follow)
{
    if (parent->run->dist)
        dist_split(parent, sname, dname, sst, follow);
    else
        copy_split(self, parent, sname, dname, rel, sst, follow);
}

static void entry(struct pool_thread *self, struct dnode *parent, const char *sname,
                  const char *dname, unsigned char d_type, int named_by_user,
                  struct bopen *pre, struct small_batch *sb)
{
    struct stage_run *run = parent->run;
    const struct backend_ops *sops = parent->src->b->ops, *dops = parent->dst->b->ops;
    int follow = run->opt.follow_symlinks || named_by_user;
    struct stat sst, dst;
    int stated = d_type != DT_REG;
    if (atomic_load(&run->stopping)) {
        if (pre && pre->rc == 0)
            sops->close(pre->f);
        return;                     /* the run stopped (stage_internal.h) */
    }
    if (pre && stated) {
        /* Not the path open_read_many was for: open as usual below. */
        if (pre->rc == 0)
            sops->close(pre->f);
        pre = NULL;
    }

    if (d_type == DT_DIR) {
        walk_push_subdir(self, parent, sname, dname, 0);
        return;
    }
    if (d_type == DT_LNK && !follow) {
        skip(run, parent, sname, "symbolic link (use --follow-symlinks to copy its target)");
        return;
    }
    if (d_type != DT_REG && d_type != DT_LNK && d_type != DT_UNKNOWN) {
        skip(run, parent, sname, "not a regular file");
        return;
    }
    char *rel = stage_rel(parent->rel, dname);
    if (!rel) {
        stage_fail_at(run, parent->src, sname, ENOMEM, "walk");
        if (pre && pre->rc == 0)
            sops->close(pre->f);
        return;
    }
    if (stated) {
        int rc = sops->stat_at(parent->src, sname, follow, &sst);
        if (rc < 0) {
            stage_fail_at(run, parent->src, sname, -rc, "stat source");
            goto out;
        }
        if (S_ISLNK(sst.st_mode)) {
            skip(run, parent, sname, "symbolic link (use --follow-symlinks to copy its target)");
            goto out;
        }
        if (S_ISDIR(sst.st_mode)) {
            walk_push_subdir(self, parent, sname, dname, follow);
            goto out;
        }
        if (!S_ISREG(sst.st_mode)) {
            skip(run, parent, sname, "not a regular file");
            goto out;
        }
        atomic_fetch_add(&run->files_seen, 1);
        atomic_fetch_add(&run->bytes_seen, (uint64_t)sst.st_size);
        if ((uint64_t)sst.st_size > run->piece_size) {
            split(self, parent, sname, dname, rel, &sst, follow);
            goto out;
        }
    }

    /* The open is what counts: decisions below use fstat of this file. */
    struct bfile *src = NULL;
    int rc;
    if (pre) {
        rc = pre->rc;
        src = pre->f;
        sst = pre->st;
    } else {
        rc = sops->open_read(parent->src, sname, follow, &src, &sst);
    }
    if (rc == -ELOOP && !follow) {
        skip(run, parent, sname, "symbolic link (use --follow-symlinks to copy its target)");
        goto out;
    }
    if (rc < 0) {
        stage_fail_at(run, parent->src, sname, -rc,
                      rc == -EINVAL ? "open source: not a regular file" : "open source");
        goto out;
    }
    if (!stated) {
        atomic_fetch_add(&run->files_seen, 1);
        atomic_fetch_add(&run->bytes_seen, (uint64_t)sst.st_size);
    }
    /* In a directory made by this run no earlier copy can exist: skip the
     * restart check (a round trip per file on a fresh stage-in). Of
     * several workers, only the one given a file creates it. */
    int have_dst = !parent->fresh && dops->stat_at(parent->dst, dname, 0, &dst) == 0;
    if (have_dst && S_ISREG(dst.st_mode) && dst.st_size == sst.st_size && same_mtime(&dst, &sst)) {
        atomic_fetch_add(&run->unchanged, 1);
        sops->close(src);
        goto out;
    }
    if ((uint64_t)sst.st_size > run->piece_size) {
        /* Known only now it is open (not stated), or grew since. */
        sops->close(src);
        split(self, parent, sname, dname, rel, &sst, follow);
        goto out;
    }
    copy_file(self, parent, src, &sst, dname, sb);
out:
    free(rel);
}

void walk_entry(struct pool_thread *self, struct dnode *parent, const char *sname,
                const char *dname, unsigned char d_type, int named_by_user)
{
    entry(self, parent, sname, dname, d_type, named_by_user, NULL, NULL);
}

void walk_file(struct pool_thread *self, struct dnode *parent, const char *name,
               unsigned char d_type, struct bopen *pre, struct small_batch *sb)
{
    entry(self, parent, name, name, d_type, 0, pre, sb);
}
