/* dist_hub_tree: the coordinator's queues of items and its records of
 * the tree (dist_hub.c's header): the request roots, the directories and
 * split files, what each still waits for, and the items that complete
 * them, up the tree. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_hub_int.h"
#include "log.h"

/* ---- queues ---- */

void hq_unlink(struct hq *q, struct hitem *it)
{
    if (it->prev)
        it->prev->next = it->next;
    else
        q->head = it->next;
    if (it->next)
        it->next->prev = it->prev;
    else
        q->tail = it->prev;
    it->prev = it->next = NULL;
    q->n--;
}

void hq_push(struct hq *q, struct hitem *it, int front)
{
    it->prev = front ? NULL : q->tail;
    it->next = front ? q->head : NULL;
    if (front) {
        if (q->head)
            q->head->prev = it;
        else
            q->tail = it;
        q->head = it;
    } else {
        if (q->tail)
            q->tail->next = it;
        else
            q->head = it;
        q->tail = it;
    }
    q->n++;
}

void hq_free(struct hq *q)
{
    while (q->head) {
        struct hitem *it = q->head;
        hq_unlink(q, it);
        free(it);
    }
}

/* ---- records of the tree ---- */

int grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap * 2 : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (!p)
        return -ENOMEM;
    memset((char *)p + *cap * size, 0, (cap2 - *cap) * size);
    *v = p;
    *cap = cap2;
    return 0;
}

uint32_t add_root(struct hub *h, const char *rs, const char *rd)
{
    if (grow((void **)&h->roots, &h->roots_cap, h->nroots + 1, sizeof(*h->roots)) < 0)
        return UINT32_MAX;
    struct hroot *r = &h->roots[h->nroots];
    r->rs = strdup(rs);
    r->rd = strdup(rd);
    if (!r->rs || !r->rd) {
        free(r->rs);
        free(r->rd);
        return UINT32_MAX;
    }
    return (uint32_t)h->nroots++;
}

static size_t dir_bucket(const struct hub *h, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (h->dirs_cap - 1);
}

struct hdir *dir_get(struct hub *h, uint64_t id)
{
    if (!id || !h->dirs_cap)
        return NULL;
    struct hdir *dr = h->dirs[dir_bucket(h, id)];
    while (dr && dr->id != id)
        dr = dr->next;
    return dr;
}

/* Enters dr, doubling the table past two records a bucket. */
static int dir_enter(struct hub *h, struct hdir *dr)
{
    if (h->ndirs >= 2 * h->dirs_cap) {
        size_t cap = h->dirs_cap ? 2 * h->dirs_cap : 1024;
        struct hdir **t = calloc(cap, sizeof(*t));
        if (!t)
            return -ENOMEM;
        struct hdir **old = h->dirs;
        size_t ocap = h->dirs_cap;
        h->dirs = t;
        h->dirs_cap = cap;
        for (size_t i = 0; i < ocap; i++)
            while (old[i]) {
                struct hdir *e = old[i];
                old[i] = e->next;
                size_t b = dir_bucket(h, e->id);
                e->next = t[b];
                t[b] = e;
            }
        free(old);
    }
    size_t b = dir_bucket(h, dr->id);
    dr->next = h->dirs[b];
    h->dirs[b] = dr;
    h->ndirs++;
    return 0;
}

static void dir_remove(struct hub *h, struct hdir *dr)
{
    struct hdir **p = &h->dirs[dir_bucket(h, dr->id)];
    while (*p != dr)
        p = &(*p)->next;
    *p = dr->next;
    h->ndirs--;
}

/* A new directory record (id 0: the next of ours): pending 1, its
 * listing. Returns its id, or 0. */
uint64_t dir_new(struct hub *h, uint64_t id, uint64_t parent, uint32_t root,
                 const char *srel, const char *drel)
{
    struct hdir *dr = calloc(1, sizeof(*dr));
    if (!dr || !(dr->srel = strdup(srel)) || !(dr->drel = strdup(drel))) {
        if (dr)
            free(dr->srel);
        free(dr);
        return 0;
    }
    dr->id = id ? id : ++h->next_dir;
    dr->parent = parent;
    dr->pending = 1;
    dr->root = root;
    if (dir_get(h, dr->id) || dir_enter(h, dr) < 0) {
        free(dr->srel);
        free(dr->drel);
        free(dr);
        return 0;
    }
    return dr->id;
}

struct hitem *item_new(struct hub *h, struct dmsg *m)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    m->type = DM_ITEM;
    if (!m->id)
        m->id = h->next_id++;
    dmsg_put(&w, m);
    struct hitem *it = rpc_writer_ok(&w) ? calloc(1, sizeof(*it) + w.len) : NULL;
    if (it) {
        it->id = m->id;
        it->kind = m->kind;
        it->dir = m->kind == DK_PIECES || m->kind == DK_FINAL_FILE ? 0 : m->dir;
        it->file = m->file;
        it->len = w.len;
        memcpy(it->rec, w.data, w.len);
        h->live++;
    }
    rpc_writer_free(&w);
    return it;
}

/* The bookkeeping is not to be trusted any more: the run stops. */
void no_memory(struct hub *h, const char *what)
{
    stage_fail(h->d->run, h->d->run->opt.src, ENOMEM, "coordinate the workers: %s", what);
    h->d->stop = 1;
}

/* Hands it to worker wi: into the next message (worker 0: no message). */
void give(struct hub *h, unsigned wi, struct hitem *it)
{
    struct hworker *w = &h->w[wi];
    rpc_put_raw(&w->out, it->rec, it->len);
    w->out_n++;
    hq_push(&w->held, it, 0);
}

/* A finalize item goes first in the copy work, to the worker that holds
 * least (assign: worker 0 on a tie, no message then). It is short, and it
 * frees the coordinator's records of what it completes. */
static void queue_final(struct hub *h, struct hitem *it)
{
    hq_push(&h->workq, it, 1);
}

/* Frees record id (its parent is not told). */
uint64_t dir_drop(struct hub *h, uint64_t id)
{
    struct hdir *dr = dir_get(h, id);
    if (!dr)
        return 0;
    uint64_t parent = dr->parent;
    dir_remove(h, dr);
    free(dr->srel);
    free(dr->drel);
    free(dr);
    return parent;
}

static int gets_attrs(const struct hdir *dr)
{
    return dr->info && (dr->flags & DF_SET_ATTRS) && !dr->loop && !dr->finalizing;
}

/* One less pending in directory id. When nothing is, a directory that
 * gets the source's attributes is queued for a worker to set them (a
 * FINAL_DIR item, whose acknowledgement comes back here), with the
 * parents this completes in turn (a deep, narrow tree's last directory
 * completes its whole chain: one item, not a round trip per level); then
 * it is done, and its parent counts one less, and so on up. */
static void dir_release(struct hub *h, uint64_t id)
{
    while (id) {
        struct hdir *dr = dir_get(h, id);
        if (!dr || --dr->pending > 0)
            return;
        if (gets_attrs(dr)) {
            struct hroot *r = &h->roots[dr->root];
            struct dmsg m = { .kind = DK_FINAL_DIR, .dir = id,
                              .loc = { r->rs, r->rd, dr->srel, dr->drel } };
            struct hdir *chain[DIST_BATCH];
            struct hdir *p = dr;
            do {
                chain[m.n] = p;
                m.modes[m.n] = p->mode;
                m.mtimes[m.n++] = p->mtime;
                p = dir_get(h, p->parent);
            } while (p && p->pending == 1 && gets_attrs(p) && m.n < DIST_BATCH);
            struct hitem *it = item_new(h, &m);
            if (it) {
                for (uint32_t i = 0; i < m.n; i++)
                    chain[i]->finalizing = 1;
                dr->pending = 1;
                queue_final(h, it);
                return;
            }
            no_memory(h, "finalize a directory");
        }
        id = dir_drop(h, id);
    }
}

void hfile_free(struct hfile *f)
{
    if (!f)
        return;
    free(f->rs);
    free(f->rd);
    free(f->srel);
    free(f->drel);
    free(f->dname);
    free(f);
}

static void file_done(struct hub *h, uint64_t id)
{
    struct hfile *f = id < h->nfiles ? h->files[id] : NULL;
    if (!f)
        return;
    uint64_t dir = f->dir;
    hfile_free(f);
    h->files[id] = NULL;
    dir_release(h, dir);
}

/* One piece range less of split file id: when all are in, a worker checks
 * its size and sets its attributes (never if a piece failed: the worker
 * reported it, and a rerun copies the file again). */
void file_release(struct hub *h, uint64_t id, int failed)
{
    struct hfile *f = id < h->nfiles ? h->files[id] : NULL;
    if (!f)
        return;
    f->failed |= failed;
    if (--f->pending > 0)
        return;
    if (!f->failed) {
        struct dmsg m = { .kind = DK_FINAL_FILE, .file = id,
                          .loc = { f->rs, f->rd, f->srel, f->drel }, .dname = f->dname,
                          .size = f->size, .mode = f->mode, .mtime = f->mtime };
        struct hitem *fin = item_new(h, &m);
        if (fin) {
            queue_final(h, fin);
            return;
        }
        no_memory(h, "finalize a split file");
    }
    file_done(h, id);
}

/* An item is done (acknowledged): what it was part of counts one less. */
void complete(struct hub *h, struct hitem *it, int failed)
{
    h->live--;
    if (it->kind != DK_FINAL_DIR && it->kind != DK_FINAL_FILE)
        h->last_copy = dist_now();
    switch (it->kind) {
    case DK_DIR:
    case DK_TOP:
    case DK_FILES:
        dir_release(h, it->dir);
        break;
    case DK_PIECES:
        file_release(h, it->file, failed);
        break;
    case DK_FINAL_FILE:
        file_done(h, it->file);
        break;
    case DK_FINAL_DIR:
        dir_release(h, it->dir);
        break;
    }
}
