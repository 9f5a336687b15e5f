/* dist_cache: what a worker's items share of the two sides: the open
 * directories (a request root, a directory below it), so each is opened
 * once, not once per item, and the split source files a worker copies
 * ranges of (dist.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"

#define DCACHE_SIZE 64

struct dcache_entry {
    int side;                 /* 0 source, 1 destination */
    char *root, *rel;
    struct bdir *dir;
    int refs;
    uint64_t used;
};

struct dcache {
    pthread_mutex_t lock;
    struct dcache_entry e[DCACHE_SIZE];
    uint64_t clock;
};

struct bdir *dcache_find(struct dcache *c, int side, const char *root, const char *rel)
{
    struct bdir *found = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < DCACHE_SIZE && !found; i++) {
        struct dcache_entry *e = &c->e[i];
        if (e->dir && e->side == side && !strcmp(e->rel, rel) && !strcmp(e->root, root)) {
            e->refs++;
            e->used = ++c->clock;
            found = e->dir;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* Enters dir (just opened, ours) and returns the directory to use: dir,
 * or the one another thread entered meanwhile (dir is then closed). A full
 * cache leaves dir out: dcache_put closes it. */
struct bdir *dcache_enter(struct dcache *c, int side, const char *root, const char *rel,
                                 struct bdir *dir)
{
    struct bdir *have = dcache_find(c, side, root, rel);
    if (have) {
        dir->b->ops->dir_close(dir);
        return have;
    }
    char *r = strdup(root), *l = strdup(rel);
    pthread_mutex_lock(&c->lock);
    struct dcache_entry *slot = NULL;
    for (int i = 0; i < DCACHE_SIZE; i++) {
        struct dcache_entry *e = &c->e[i];
        if (!e->dir) {
            slot = e;
            break;
        }
        if (e->refs == 0 && (!slot || e->used < slot->used))
            slot = e;
    }
    struct bdir *old = NULL;
    char *oroot = NULL, *orel = NULL;
    if (slot && r && l) {
        old = slot->dir;
        oroot = slot->root;
        orel = slot->rel;
        *slot = (struct dcache_entry){ side, r, l, dir, 1, ++c->clock };
        r = l = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (old)
        old->b->ops->dir_close(old);
    free(oroot);
    free(orel);
    free(r);
    free(l);
    return dir;
}

void dcache_put(struct dcache *c, struct bdir *dir)
{
    if (!dir)
        return;
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < DCACHE_SIZE && !found; i++)
        if (c->e[i].dir == dir) {
            c->e[i].refs--;
            found = 1;
        }
    pthread_mutex_unlock(&c->lock);
    if (!found)
        dir->b->ops->dir_close(dir);
}

struct dcache *dcache_new(void)
{
    struct dcache *c = calloc(1, sizeof(*c));
    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

void dcache_free(struct dcache *c)
{
    if (!c)
        return;
    for (int i = 0; i < DCACHE_SIZE; i++)
        if (c->e[i].dir) {
            c->e[i].dir->b->ops->dir_close(c->e[i].dir);
            free(c->e[i].root);
            free(c->e[i].rel);
        }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

struct backend *side_b(struct stage_run *run, int side)
{
    return side ? &run->dst_b : &run->src_b;
}

/* A request root (as the user gave it) on a side; create: make it. */
int open_root(struct dist *d, int side, const char *root, int create, struct bdir **out)
{
    if ((*out = dcache_find(d->cache, side, root, "")))
        return 0;
    char p[PATH_MAX];
    struct stat st;
    struct backend *b = side_b(d->run, side);
    int rc = stage_side_path(d->run, side, root, p, sizeof(p));
    if (rc == 0)
        rc = b->ops->root_open(b, p, create, out, &st);
    if (rc == 0)
        *out = dcache_enter(d->cache, side, root, "", *out);
    return rc;
}

/* The directory rel below root on a side (from the cache if open). */
int open_dir(struct dist *d, int side, const char *root, const char *rel, struct bdir **out)
{
    if (!*rel)
        return open_root(d, side, root, 0, out);
    if ((*out = dcache_find(d->cache, side, root, rel)))
        return 0;
    struct bdir *r;
    struct stat st;
    int rc = open_root(d, side, root, 0, &r);
    if (rc < 0)
        return rc;
    rc = r->b->ops->dir_open_rel(r, rel, d->run->opt.follow_symlinks, out, &st);
    dcache_put(d->cache, r);
    if (rc == 0)
        *out = dcache_enter(d->cache, side, root, rel, *out);
    return rc;
}

/* Source files split in pieces, kept open while this worker copies
 * ranges of them: each worker opens a split file once, not once per range
 * it is given. (Destinations are closed after each range: a network file
 * system may flush on close, after the file was finalized.) */
#define FCACHE_SIZE 16

struct fcache_entry {
    char *key;
    struct bfile *f;
    struct stat st;
    int refs;
    uint64_t used;
};

struct fcache {
    pthread_mutex_t lock;
    struct fcache_entry e[FCACHE_SIZE];
    uint64_t clock;
};

struct fcache *fcache_new(void)
{
    struct fcache *c = calloc(1, sizeof(*c));
    if (c)
        pthread_mutex_init(&c->lock, NULL);
    return c;
}

void fcache_free(struct fcache *c)
{
    if (!c)
        return;
    for (int i = 0; i < FCACHE_SIZE; i++)
        if (c->e[i].f) {
            c->e[i].f->b->ops->close(c->e[i].f);
            free(c->e[i].key);
        }
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* File name of directory dir (root/rel), opened and checked against want
 * (size and mtime: the file the pieces were planned for). */
int fcache_open(struct fcache *c, struct bdir *dir, const char *root, const char *rel,
                       const char *name, int follow, const struct stat *want,
                       struct bfile **out)
{
    char *key;
    if (asprintf(&key, "%s%c%s%c%s", root, 0x1f, rel, 0x1f, name) < 0)
        return -ENOMEM;
    struct stat st;
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < FCACHE_SIZE && !*out; i++)
        if (c->e[i].f && !strcmp(c->e[i].key, key)) {
            c->e[i].refs++;
            c->e[i].used = ++c->clock;
            *out = c->e[i].f;
            st = c->e[i].st;
        }
    pthread_mutex_unlock(&c->lock);
    int rc = 0;
    if (!*out) {
        rc = dir->b->ops->open_read(dir, name, follow, out, &st);
        if (rc == 0) {
            struct fcache_entry *slot = NULL;
            struct bfile *old = NULL;
            char *okey = NULL;
            pthread_mutex_lock(&c->lock);
            for (int i = 0; i < FCACHE_SIZE; i++) {
                struct fcache_entry *e = &c->e[i];
                if (!e->f) {
                    slot = e;
                    break;
                }
                if (e->refs == 0 && (!slot || e->used < slot->used))
                    slot = e;
            }
            if (slot) {
                old = slot->f;
                okey = slot->key;
                *slot = (struct fcache_entry){ key, *out, st, 1, ++c->clock };
                key = NULL;
            }
            pthread_mutex_unlock(&c->lock);
            if (old)
                old->b->ops->close(old);
            free(okey);
        }
    }
    free(key);
    if (rc == 0 && (st.st_size != want->st_size || st.st_mtim.tv_sec != want->st_mtim.tv_sec ||
                    st.st_mtim.tv_nsec != want->st_mtim.tv_nsec))
        rc = -EBUSY;                     /* changed since it was split: out is still ours */
    return rc;
}

void fcache_put(struct fcache *c, struct bfile *f)
{
    if (!f)
        return;
    int found = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < FCACHE_SIZE && !found; i++)
        if (c->e[i].f == f) {
            c->e[i].refs--;
            found = 1;
        }
    pthread_mutex_unlock(&c->lock);
    if (!found)
        f->b->ops->close(f);
}
