/* dist_hub: the coordinator of a distributed stage, run by worker 0
 * (dist.h).
 *
 * It holds what is still to do as items: directories to list, batches of
 * files and ranges of pieces to copy, split files and directories to
 * finalize. A worker is handed items while it holds fewer than its window,
 * the least loaded first, so a slow worker is given less and none waits
 * while there is work. Directories to list are handed out first while the
 * copy work queued is short (discovery feeds everyone), copy work first
 * once it is long (the queue stays bounded).
 *
 * It also keeps the tree's bookkeeping, as the one-process walk does with
 * its dnodes: each directory counts what is pending inside it (its
 * listing, its batches, its split files, its subdirectories); when nothing
 * is, it gets its mode and mtime (a FINAL_DIR item, queued first for
 * whichever worker holds least, as any copy work: worker 0, which also
 * walks, would otherwise set every directory's attributes while the others
 * wait for work) and its parent counts one less. So the setting of
 * attributes costs one item per directory and per split file, spread over
 * the run and over the workers, and nothing is left for the end but the
 * path up from the last directory done (dist_hub_tree.c; what the two
 * files share is in dist_hub_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_hub_int.h"
#include "log.h"

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

/* ---- what workers say ---- */

/* Writes worker wi an ABORT saying why, in the next message of its own. */
static void tell_stop(struct hub *h, unsigned wi, const char *why)
{
    struct hworker *w = &h->w[wi];
    struct rpc_writer a;
    char name[64];
    rpc_writer_init(&a, NULL, 0);
    dmsg_put(&a, &(struct dmsg){ .type = DM_ABORT, .text = why });
    dist_msg_name(name, sizeof(name), 0, wi, w->out_seq);
    if (rpc_writer_ok(&a) && mbox_put(h->d->mdir, name, a.data, a.len) == 0) {
        w->out_seq++;
        if (w->bell_ok)
            bell_ring(&h->d->bell, &w->bell, 0);
    }
    rpc_writer_free(&a);
}

static void worker_gone(struct hub *h, unsigned wi, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void worker_gone(struct hub *h, unsigned wi, const char *fmt, ...)
{
    struct hworker *w = &h->w[wi];
    if (w->state == W_GONE || wi == 0)
        return;
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    int joined = w->state != W_WAITING;
    w->state = W_GONE;
    h->d->lost++;
    size_t moved = w->held.n;
    /* Copying again is harmless (the same bytes), and the restart rule
     * skips what it finished: the batches lose their "fresh" flag. */
    while (w->held.tail) {
        struct hitem *it = w->held.tail;
        hq_unlink(&w->held, it);
        if (it->kind == DK_FILES) {
            struct rpc_reader r;
            struct dmsg m;
            const char *bad;
            rpc_reader_init(&r, it->rec, it->len);
            if (dmsg_get(&r, &m, &bad) == 0 && (m.flags & DF_FRESH)) {
                m.flags &= ~DF_FRESH;
                struct hitem *again = item_new(h, &m);
                if (again) {
                    h->live--;         /* the same item, re-encoded */
                    free(it);
                    it = again;
                }
            }
        }
        hq_push(it->kind == DK_DIR || it->kind == DK_TOP ? &h->dirq : &h->workq, it, 1);
    }
    h->d->taken_over += (unsigned)moved;
    log_warn("worker %u of %u %s: %s%zu items it held go to the others", wi, h->d->n, why,
             joined ? "" : "never joined; ", moved);
    /* If it is alive after all (or joins late), it stops: its copies are
     * done by others. */
    tell_stop(h, wi, why);
    rpc_writer_free(&w->out);
    rpc_writer_init(&w->out, NULL, 0);
    w->out_n = 0;
}

static struct hitem *held_take(struct hworker *w, uint64_t id)
{
    for (struct hitem *it = w->held.head; it; it = it->next)
        if (it->id == id) {
            hq_unlink(&w->held, it);
            return it;
        }
    return NULL;
}

static int seen_before(struct hub *h, uint64_t dev, uint64_t ino)
{
    for (size_t i = 0; i < h->nseen; i++)
        if (h->seen[i].dev == dev && h->seen[i].ino == ino)
            return 1;
    if (grow((void **)&h->seen, &h->seen_cap, h->nseen + 1, sizeof(*h->seen)) == 0)
        h->seen[h->nseen++] = (typeof(*h->seen)){ dev, ino };
    return 0;
}

static void on_split(struct hub *h, const struct dmsg *m)
{
    struct hdir *p = dir_get(h, m->dir);
    uint64_t ps = h->d->run->piece_size, np = (m->size + ps - 1) / ps;
    if (!p || np == 0)
        return;
    if (h->nfiles == 0)
        h->nfiles = 1;
    if (grow((void **)&h->files, &h->files_cap, h->nfiles + 1, sizeof(*h->files)) < 0) {
        no_memory(h, "split a file");
        return;
    }
    struct hfile *f = calloc(1, sizeof(*f));
    if (f) {
        *f = (struct hfile){ .dir = m->dir, .rs = strdup(m->loc.rs), .rd = strdup(m->loc.rd),
                             .srel = strdup(m->loc.srel), .drel = strdup(m->loc.drel),
                             .dname = strdup(m->dname), .size = m->size, .mode = m->mode,
                             .mtime = m->mtime };
    }
    if (!f || !f->rs || !f->rd || !f->srel || !f->drel || !f->dname) {
        hfile_free(f);
        no_memory(h, "split a file");
        return;
    }
    uint64_t id = h->nfiles++;
    h->files[id] = f;
    p->pending++;
    /* Ranges of pieces: at least four per worker, so the file spreads over
     * them all, and whole ranges per open of the source. */
    uint64_t per = np / (4ull * h->d->n);
    if (per == 0)
        per = 1;
    f->pending = 1;                     /* ours, until all are queued */
    for (uint64_t i = 0; i < np; i += per) {
        struct dmsg pm = { .kind = DK_PIECES, .file = id, .loc = m->loc, .sname = m->sname,
                           .dname = m->dname, .size = m->size, .mode = m->mode,
                           .mtime = m->mtime, .piece_size = ps, .first = i,
                           .last = i + per < np ? i + per : np, .flags = m->flags };
        struct hitem *it = item_new(h, &pm);
        if (!it) {
            no_memory(h, "split a file");
            f->failed = 1;
            break;
        }
        f->pending++;
        /* Longest work first: pieces go before the queued batches, so
         * the run ends on small work that spreads evenly, not on a big
         * file's pieces found early and copied last. */
        hq_push(&h->workq, it, 1);
    }
    file_release(h, id, f->failed);     /* drops our own hold */
}

/* An id worker wi chose (the coordinator's never have the top bit). */
static int workers_id(uint64_t id, unsigned wi)
{
    return (id >> 63) && ((id >> 40) & 0xffff) == wi;
}

static int handle(struct hub *h, unsigned wi, const struct dmsg *m)
{
    struct hworker *w = &h->w[wi];
    struct stage_run *run = h->d->run;
    switch (m->type) {
    case DM_HELLO:
        if (m->id != wi)
            return -EPROTO;
        if (w->state == W_WAITING)
            w->state = W_LIVE;
        log_info("worker %u of %u joined (pid %llu on %s)", wi, h->d->n,
                 (unsigned long long)m->count, m->text);
        dmsg_put(&w->out, &(struct dmsg){ .type = DM_WELCOME, .id = h->d->nonce });
        w->out_n++;
        return 0;
    case DM_ACK: {
        struct hitem *it = held_take(w, m->id);
        if (it) {                      /* else: one moved on (a worker given up) */
            complete(h, it, m->count != 0);
            free(it);
        }
        return 0;
    }
    case DM_DIRINFO: {
        struct hdir *dr = dir_get(h, m->dir);
        if (!dr || dr->info)
            return 0;
        dr->info = 1;
        dr->mode = m->mode;
        dr->mtime = m->mtime;
        dr->flags = m->flags;
        if (run->opt.follow_symlinks && seen_before(h, m->dev, m->ino)) {
            dr->loop = 1;
            log_warn("skipping %s/%s: directory already copied (symlink loop?)",
                     h->roots[dr->root].rs, dr->srel);
            atomic_fetch_add(&run->skipped, 1);
        }
        return 0;
    }
    case DM_SUBDIR: {
        /* Kept: the lister goes on into it itself, under ids it chose. */
        int kept = m->id != 0;
        w->may_have_more |= kept;
        if (kept && (!workers_id(m->id, wi) || !workers_id(m->child, wi) ||
                     dir_get(h, m->child)))
            return -EPROTO;
        struct hdir *p = dir_get(h, m->dir);
        if (!p || p->loop)
            return 0;                   /* a kept one is done there, unknown here */
        char *srel = stage_rel(p->srel, m->sname), *drel = stage_rel(p->drel, m->dname);
        uint64_t id = srel && drel ? dir_new(h, kept ? m->child : 0, m->dir, p->root, srel,
                                             drel) : 0;
        struct hroot *r = &h->roots[p->root];
        struct dmsg dm = { .kind = DK_DIR, .id = m->id, .dir = id,
                           .loc = { r->rs, r->rd, srel, drel } };
        struct hitem *it = id ? item_new(h, &dm) : NULL;
        if (it) {
            p->pending++;
            hq_push(kept ? &w->held : &h->dirq, it, 0);
        } else {
            no_memory(h, "queue a directory");
            dir_drop(h, id);
        }
        free(srel);
        free(drel);
        return 0;
    }
    case DM_BATCH: {
        struct hdir *p = dir_get(h, m->dir);
        int kept = m->id != 0;
        w->may_have_more |= kept;
        if (kept && !workers_id(m->id, wi))
            return -EPROTO;
        if (!p || p->loop)
            return 0;               /* a kept one is done there, unknown here */
        struct hroot *r = &h->roots[p->root];
        struct dmsg fm = { .kind = DK_FILES, .id = m->id, .dir = m->dir,
                           .loc = { r->rs, r->rd, p->srel, p->drel },
                           .flags = p->flags & DF_FRESH, .n = m->n };
        memcpy(fm.names, m->names, m->n * sizeof(*fm.names));
        memcpy(fm.types, m->types, m->n);
        struct hitem *it = item_new(h, &fm);
        if (!it) {
            no_memory(h, "queue files");
            return 0;
        }
        p->pending++;
        if (kept)
            hq_push(&w->held, it, 0);   /* it runs there already */
        else
            hq_push(&h->workq, it, 0);
        return 0;
    }
    case DM_SPLIT:
        on_split(h, m);
        return 0;
    case DM_BYE:
        w->state = W_BYE;
        return 0;
    case DM_RETURN: {
        /* Not started there: queued again, first, for whoever is idle. */
        struct hitem *it = held_take(w, m->id);
        if (it)
            hq_push(it->kind == DK_DIR || it->kind == DK_TOP ? &h->dirq : &h->workq, it, 1);
        return 0;
    }
    case DM_STOLEN:
        w->steal_pending = 0;
        if (m->count == 0)
            w->may_have_more = 0;
        return 0;
    default:
        return -EPROTO;
    }
}

static void receive(struct hub *h, unsigned wi, const void *data, size_t len)
{
    struct rpc_reader r;
    rpc_reader_init(&r, data, len);
    while (r.off < r.len && h->w[wi].state != W_GONE) {
        struct dmsg m;
        const char *why = "a record of the wrong direction";
        if (dmsg_get(&r, &m, &why) < 0 || handle(h, wi, &m) < 0) {
            if (wi == 0) {
                stage_fail(h->d->run, h->d->run->opt.src, EPROTO,
                           "coordinate the workers: %s", why);
                h->d->stop = 1;
                return;
            }
            worker_gone(h, wi, "sent a malformed message (%s)", why);
        }
    }
}

/* ---- handing out ---- */

static void assign(struct hub *h)
{
    struct dist *d = h->d;
    for (;;) {
        int best = -1;
        for (unsigned i = 0; i < d->n; i++) {
            struct hworker *w = &h->w[i];
            if (w->state == W_LIVE && w->held.n < d->window &&
                (best < 0 || w->held.n < h->w[best].held.n))
                best = (int)i;
        }
        if (best < 0)
            break;
        struct hq *q = h->workq.n >= (size_t)d->n * d->window || !h->dirq.n ? &h->workq
                                                                               : &h->dirq;
        if (!q->head)
            q = q == &h->workq ? &h->dirq : &h->workq;
        if (!q->head)
            break;
        struct hitem *it = q->head;
        hq_unlink(q, it);
        give(h, (unsigned)best, it);
    }
}

/* Work stealing between the workers, through the coordinator: when
 * nothing is queued here and a worker holds fewer items than it has
 * threads (some wait for work), the worker that holds the most beyond its
 * threads is asked to give back half of the items it has not started
 * (dist_exec.c's give_back); they are queued again first and handed to
 * the idle one. Whatever the tree's shape, work a worker found and kept
 * for itself (a deep chain it walks, the batches of a directory it
 * lists) or was handed and cannot start soon moves to where threads are
 * free, and no worker's share is decided in advance. */
static void steal(struct hub *h)
{
    struct dist *d = h->d;
    if (h->dirq.n || h->workq.n)
        return;                       /* assign hands that out first */
    size_t threads = d->run->opt.threads;
    int idle = -1, victim = -1;
    for (unsigned i = 0; i < d->n; i++) {
        struct hworker *w = &h->w[i];
        if (w->state == W_LIVE && w->held.n < threads &&
            (idle < 0 || w->held.n < h->w[idle].held.n))
            idle = (int)i;
    }
    if (idle < 0)
        return;
    for (unsigned i = 0; i < d->n; i++) {
        struct hworker *w = &h->w[i];
        if ((int)i != idle && w->state == W_LIVE && w->may_have_more && !w->steal_pending &&
            w->held.n > threads && (victim < 0 || w->held.n > h->w[victim].held.n))
            victim = (int)i;
    }
    if (victim < 0)
        return;
    struct hworker *v = &h->w[victim];
    dmsg_put(&v->out, &(struct dmsg){ .type = DM_STEAL,
                                      .count = threads - h->w[idle].held.n });
    v->out_n++;
    v->steal_pending = 1;
}

int hub_create(struct dist *d, struct hub **out)
{
    struct hub *h = calloc(1, sizeof(*h));
    if (!h || !(h->w = calloc(d->n, sizeof(*h->w)))) {
        free(h);
        return -ENOMEM;
    }
    h->d = d;
    h->next_id = 1;
    h->start = dist_now();
    for (unsigned i = 0; i < d->n; i++) {
        struct hworker *w = &h->w[i];
        rpc_writer_init(&w->out, NULL, 0);
        w->state = i == 0 ? W_LIVE : W_WAITING;
        w->last_heard = w->last_sent = w->next_poll = h->start;
        w->poll = 0.001;
        w->in_seq = w->dropped = 0;
        w->out_seq = 0;
    }
    *out = h;
    return 0;
}

static int seed_top(void *arg, const char *src, const char *dst, const char *rel,
                    unsigned line)
{
    struct hub *h = arg;
    (void)rel;
    uint32_t root = add_root(h, src, dst);
    uint64_t id = root != UINT32_MAX ? dir_new(h, 0, 0, root, "", "") : 0;
    struct dmsg m = { .kind = DK_TOP, .dir = id, .sname = src, .dname = dst, .count = line };
    struct hitem *it = id ? item_new(h, &m) : NULL;
    if (!it)
        return -ENOMEM;
    hq_push(&h->dirq, it, 0);
    return 0;
}

int hub_seed(struct hub *h)
{
    struct stage_run *run = h->d->run;
    if (run->opt.type != STAGE_DIRECTORY)
        return stage_requests(run, seed_top, h);
    uint32_t root = add_root(h, run->opt.src, run->opt.dst);
    uint64_t id = root != UINT32_MAX ? dir_new(h, 0, 0, root, "", "") : 0;
    struct dmsg m = { .kind = DK_DIR, .dir = id,
                      .loc = { run->opt.src, run->opt.dst, "", "" } };
    struct hitem *it = id ? item_new(h, &m) : NULL;
    if (!it)
        return -ENOMEM;
    hq_push(&h->dirq, it, 0);
    return 0;
}

/* Reads what worker wi sent since last time. */
static void poll_worker(struct hub *h, unsigned wi, double now)
{
    struct hworker *w = &h->w[wi];
    char name[64];
    int got = 0, rc;
    void *p;
    size_t len;
    for (;;) {
        dist_msg_name(name, sizeof(name), 1, wi, w->in_seq);
        if ((rc = mbox_get(h->d->mdir, name, &p, &len)) < 0)
            break;
        w->in_seq++;
        got = 1;
        receive(h, wi, p, len);
        free(p);
        if (w->state == W_GONE)
            return;
    }
    if (dist_store_hard(rc) && dist_store_error(h->d, now, rc, "read", name))
        h->d->stop = 1;
    if (got) {
        w->last_heard = now;
        /* With a doorbell its next message rings: no looks meanwhile
         * (from 1 ms up, they were most of the mailbox's requests). */
        w->poll = w->bell_ok ? DIST_POLL_MAX_BELL : 0.001;
    } else if (rc != -EAGAIN && w->poll < (w->bell_ok ? DIST_POLL_MAX_BELL : DIST_POLL_MAX)) {
        w->poll *= 2;
    }
    w->next_poll = now + (rc == -EAGAIN ? 0.001 : w->poll);
}

/* Sends worker wi what waits for it (worker 0: hands it over). */
static void deliver(struct hub *h, unsigned wi, double now)
{
    struct hworker *w = &h->w[wi];
    if (wi == 0) {
        if (!w->out_n)
            return;
        struct rpc_writer m = w->out;
        rpc_writer_init(&w->out, NULL, 0);
        w->out_n = 0;
        if (!rpc_writer_ok(&m)) {
            no_memory(h, "hand out work");
            rpc_writer_free(&m);
            return;
        }
        /* exec_receive takes a malloc'd payload. */
        void *copy = malloc(m.len ? m.len : 1);
        if (copy) {
            memcpy(copy, m.data, m.len);
            exec_receive(h->d, copy, m.len);
        } else {
            no_memory(h, "hand out work");
        }
        rpc_writer_free(&m);
        return;
    }
    if (w->state != W_LIVE || (!w->out_n && now - w->last_sent < h->d->beat) ||
        now < w->retry_at || h->d->store_failed)
        return;
    if (!rpc_writer_ok(&w->out)) {
        worker_gone(h, wi, "could not be sent its work (out of memory)");
        return;
    }
    char name[64];
    dist_msg_name(name, sizeof(name), 0, wi, w->out_seq);
    int rc = mbox_put(h->d->mdir, name, w->out.data, w->out.len);
    if (rc == 0) {
        w->out_seq++;
        w->last_sent = now;
        if (w->bell_ok) {
            /* Its acknowledgements ring. */
            bell_ring(&h->d->bell, &w->bell, 0);
        } else {
            /* Work sent is acknowledged soon: look again shortly. */
            w->poll = 0.001;
            if (w->next_poll > now + w->poll)
                w->next_poll = now + w->poll;
        }
        rpc_writer_free(&w->out);
        rpc_writer_init(&w->out, NULL, 0);
        w->out_n = 0;
        w->said_write_error = 0;
    } else {
        w->retry_at = now + DIST_STORE_RETRY;
        if (!w->said_write_error) {
            char server[400];
            log_warn("cannot write to worker %u's mailbox in %s: %s%s%s (trying again every "
                     "%.1f s)", wi, h->d->mdir->path, strerror(-rc),
                     stage_fs_fault(h->d->run, server, sizeof(server)) ? ": " : "", server,
                     DIST_STORE_RETRY);
            w->said_write_error = 1;
        }
        if (dist_store_hard(rc) && dist_store_error(h->d, now, rc, "write", name))
            h->d->stop = 1;
    }
}

/* A ring from worker `from` (the run's token: one of its workers): look
 * at its mailbox now, and ring it back where it rang from. */
static void rung(void *arg, uint32_t from, const struct sockaddr_in *addr)
{
    struct hub *h = arg;
    if (from == 0 || from >= h->d->n)
        return;
    struct hworker *w = &h->w[from];
    w->bell = *addr;
    w->bell_ok = 1;
    w->next_poll = 0;
}

void hub_loop(struct hub *h)
{
    struct dist *d = h->d;
    for (;;) {
        double now = dist_now();
        if (d->stop) {
            /* Worker 0 cannot go on (its failure says why): nor can the run. */
            for (unsigned i = 1; i < d->n; i++)
                if (h->w[i].state == W_LIVE)
                    tell_stop(h, i, "worker 0 failed (see its messages)");
            while (atomic_load(&d->running) > 0)
                sleep_ms(10);
            break;
        }
        /* Worker 0's own records: at once while they free room in its
         * window (no mailbox to spare), else with the others' delay. */
        double next = now + d->beat;
        if (dist_out_due(d, now, 0, &next)) {
            struct rpc_writer local;
            int n = dist_take_out(d, &local);
            if (n < 0)
                no_memory(h, "records of worker 0");
            else if (local.len)
                receive(h, 0, local.data, local.len);
            rpc_writer_free(&local);
        }
        int waiting = 0;
        for (unsigned i = 1; i < d->n; i++) {
            struct hworker *w = &h->w[i];
            if (w->state == W_GONE || w->state == W_BYE)
                continue;
            if (now >= w->next_poll)
                poll_worker(h, i, now);
            if (w->state == W_LIVE && now - w->last_heard > d->timeout)
                worker_gone(h, i, "sent nothing for %.0f s", d->timeout);
            else if (w->state == W_WAITING && now - h->start > d->timeout)
                worker_gone(h, i, "did not join within %.0f s", d->timeout);
            if (w->state == W_WAITING)
                waiting = 1;
            if (w->state != W_GONE && w->next_poll < next)
                next = w->next_poll;
        }
        assign(h);
        steal(h);
        if (!h->done_sent && h->live == 0 && !waiting) {
            for (unsigned i = 0; i < d->n; i++)
                if (h->w[i].state == W_LIVE) {
                    dmsg_put(&h->w[i].out, &(struct dmsg){ .type = DM_DONE });
                    h->w[i].out_n++;
                }
            h->done_sent = 1;
            h->done_at = now;
            d->tail = h->last_copy ? now - h->last_copy : 0;
        }
        for (unsigned i = 0; i < d->n; i++) {
            deliver(h, i, now);
            /* A message the store refused is tried again at retry_at, not
             * in a busy loop. */
            double due = h->w[i].last_sent + d->beat;
            if (due < h->w[i].retry_at)
                due = h->w[i].retry_at;
            if (i > 0 && h->w[i].state == W_LIVE && due < next)
                next = due;
        }
        /* What was read is removed once its answers are out (a removal
         * costs a request to servers busy with the copy; before, it came
         * between reading a message and handing out the work it freed). */
        for (unsigned i = 1; i < d->n; i++)
            dist_drop_read(d->mdir, 1, i, &h->w[i].dropped, h->w[i].in_seq);
        if (h->done_sent && atomic_load(&d->running) == 0) {
            int all = 1;
            for (unsigned i = 1; i < d->n; i++)
                all &= h->w[i].state == W_GONE || h->w[i].state == W_BYE;
            if (all)
                break;
            if (now - h->done_at > d->timeout) {
                log_warn("not every worker said goodbye within %.0f s of the end", d->timeout);
                break;
            }
        }
        dist_wait(d, next, rung, h);
    }
    /* A store that failed is not emptied: each request would fail again
     * (a hung server's after the instance's timeout). */
    if (!d->store_failed)
        dist_store_cleanup(d);
}

void hub_destroy(struct hub *h)
{
    if (!h)
        return;
    for (unsigned i = 0; i < h->d->n; i++) {
        hq_free(&h->w[i].held);
        rpc_writer_free(&h->w[i].out);
    }
    hq_free(&h->dirq);
    hq_free(&h->workq);
    for (size_t i = 0; i < h->nroots; i++) {
        free(h->roots[i].rs);
        free(h->roots[i].rd);
    }
    for (size_t i = 0; i < h->dirs_cap; i++)
        while (h->dirs[i]) {
            struct hdir *dr = h->dirs[i];
            h->dirs[i] = dr->next;
            free(dr->srel);
            free(dr->drel);
            free(dr);
        }
    for (size_t i = 0; i < h->nfiles; i++)
        hfile_free(h->files[i]);
    free(h->roots);
    free(h->dirs);
    free(h->files);
    free(h->seen);
    free(h->w);
    free(h);
}
