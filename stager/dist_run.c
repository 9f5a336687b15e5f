/* dist_run: starting, running and ending one worker of a distributed stage
 * (dist.h): the mailbox store, the epoch a run meets in, and the thread
 * that carries a worker's messages (worker 0's runs the coordinator). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <xxhash.h>

#include "dist.h"
#include "log.h"

#define EPOCH "epoch"

void dist_msg_name(char *out, size_t len, int to_hub, unsigned w, uint64_t seq)
{
    snprintf(out, len, "%c%u.%llu", to_hub ? 'w' : 'h', w, (unsigned long long)seq);
}

void dist_drop_read(struct bdir *dir, int to_hub, unsigned w, uint64_t *from, uint64_t to)
{
    char name[64];
    for (; *from < to; (*from)++) {
        dist_msg_name(name, sizeof(name), to_hub, w, *from);
        mbox_drop(dir, name);
    }
}

int dist_store_error(struct dist *d, double began, int rc, const char *op, const char *name)
{
    double now = dist_now();
    if (!d->store_since || now - d->store_last > DIST_STORE_GRACE)
        d->store_since = began;      /* a new run of failures */
    d->store_last = now;
    if (d->store_failed || now - d->store_since < DIST_STORE_GRACE)
        return d->store_failed;
    d->store_failed = 1;
    atomic_store(&d->run->stopping, 1);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s/%016llx/%s", d->store, d->id,
             (unsigned long long)d->nonce, name);
    /* stage_fail adds the server that failed (EIO). */
    stage_fail(d->run, path, -rc, "%s the workers' mailbox: the job's file system failed for "
               "%.1f s: worker %u of %u stopped and the stage is incomplete", op,
               now - d->store_since, d->me, d->n);
    return 1;
}

void dist_store_why(struct dist *d, char *buf, size_t len)
{
    buf[0] = '\0';
#ifdef HAVE_LIBADAFS
    if (d->sb_adafs)
        backend_adafs_why(&d->sb, buf, len);
#endif
}

/* The request, as every worker was given it, names the run. */
static void run_id(struct dist *d)
{
    const struct stage_options *o = &d->run->opt;
    XXH3_state_t *h = XXH3_createState();
    uint32_t head[3] = { (uint32_t)o->direction, (uint32_t)o->type, o->workers };
    uint64_t v = 0;
    if (h) {
        XXH3_64bits_reset(h);
        XXH3_64bits_update(h, head, sizeof(head));
        XXH3_64bits_update(h, o->src, strlen(o->src) + 1);
        XXH3_64bits_update(h, o->dst, strlen(o->dst) + 1);
        v = XXH3_64bits_digest(h);
        XXH3_freeState(h);
    }
    snprintf(d->id, sizeof(d->id), "%016llx", (unsigned long long)v);
}

/* A store directory another user could have made is not one to take
 * work from: it must be ours and closed to others (POSIX; an adafs
 * instance is the job user's alone). */
static int private_dir(struct dist *d, const struct stat *st)
{
    if (d->sb_adafs)
        return 0;
    return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH)) ? 0 : -EPERM;
}

static int store_open(struct dist *d, char *err, size_t errlen)
{
    struct stage_run *run = d->run;
    const struct stage_options *o = &run->opt;
    int rc = 0;
    char base[PATH_MAX];
    if (o->direction == STAGE_COPY) {
        /* Beside DST, not in it: DST's mtime is the source's at the end. */
        char tmp[PATH_MAX];
        backend_posix_init(&d->sb, NULL, NULL);
        snprintf(tmp, sizeof(tmp), "%s", o->dst);
        snprintf(base, sizeof(base), "%s", dirname(tmp));
        d->store_side = 1;
    } else {
#ifdef HAVE_LIBADAFS
        rc = backend_adafs_init(&d->sb, o->instance, err, errlen);
        if (rc < 0)
            return rc;
        d->sb_adafs = 1;
        /* Most polls find no message yet: one request each. */
        d->sb.parent_known = 1;
        snprintf(base, sizeof(base), "/");
        d->store_side = o->direction == STAGE_IN;
#else
        return -ENOTSUP;
#endif
    }
    d->store = backend_join(base, DIST_STORE);
    run_id(d);
    char *rpath = d->store ? backend_join(d->store, d->id) : NULL;
    if (!rpath)
        return -ENOMEM;
    if (d->me == 0 && (rc = backend_make_path(&d->sb, rpath)) < 0)
        snprintf(err, errlen, "cannot create the workers' mailbox directory %s: %s", rpath,
                 strerror(-rc));
    free(rpath);
    return rc;
}

/* Opens STORE/ID (made by worker 0). On POSIX the store is beside DST,
 * perhaps in a directory others write to (shared scratch): STORE and ID
 * are opened without following a link, and each must be this user's own
 * and closed to others. Else another user could put there a link named
 * ID (a hash of the request: anyone who runs the same request learns it)
 * to one of this user's directories, whose subdirectories worker 0 would
 * empty and remove as an earlier run's mailboxes. */
static int open_rdir(struct dist *d)
{
    const struct backend_ops *ops = d->sb.ops;
    struct stat st;
    if (d->sb_adafs) {
        char *rpath = backend_join(d->store, d->id);
        if (!rpath)
            return -ENOMEM;
        int rc = ops->root_open(&d->sb, rpath, 0, &d->rdir, &st);
        free(rpath);
        return rc;
    }
    char *parent = strdup(d->store);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (slash)
        slash == parent ? (void)(slash[1] = '\0') : (void)(*slash = '\0');
    struct bdir *pd, *sd;
    int rc = ops->root_open(&d->sb, parent, 0, &pd, &st);
    free(parent);
    if (rc < 0)
        return rc;
    rc = ops->dir_open(pd, DIST_STORE, 0, &sd, &st);
    ops->dir_close(pd);
    if (rc < 0)
        return rc == -ELOOP || rc == -ENOTDIR ? -EPERM : rc;
    if ((rc = private_dir(d, &st)) == 0) {
        rc = ops->dir_open(sd, d->id, 0, &d->rdir, &st);
        if (rc == -ELOOP || rc == -ENOTDIR)
            rc = -EPERM;
        if (rc == 0 && (rc = private_dir(d, &st)) < 0) {
            ops->dir_close(d->rdir);
            d->rdir = NULL;
        }
    }
    ops->dir_close(sd);
    return rc;
}

/* Empties and removes directory name of dir (a flat mailbox directory). */
static void remove_mailboxes(struct bdir *dir, const char *name);

struct names {
    char **v;
    size_t n, cap;
};

static int collect(void *arg, const char *name, unsigned char type, struct bopen *opened)
{
    struct names *l = arg;
    (void)type;
    if (opened)
        opened->f->b->ops->close(opened->f);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    return (l->v[l->n] = strdup(name)) ? (l->n++, 0) : -ENOMEM;
}

static void free_names(struct names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static void remove_mailboxes(struct bdir *dir, const char *name)
{
    const struct backend_ops *ops = dir->b->ops;
    struct bdir *sub;
    struct stat st;
    if (ops->dir_open(dir, name, 0, &sub, &st) == 0) {
        struct names l = { 0 };
        ops->dir_list(sub, 0, collect, &l);
        for (size_t i = 0; i < l.n; i++)
            ops->unlink_at(sub, l.v[i]);
        free_names(&l);
        ops->dir_close(sub);
    }
    int rc = ops->rmdir_at(dir, name);
    if (rc < 0 && rc != -ENOENT)
        log_warn("cannot remove %s/%s: %s", dir->path, name, strerror(-rc));
}

/* Worker 0: a new epoch, its mailbox directory, and the announcement. */
static int epoch_create(struct dist *d, char *err, size_t errlen)
{
    int rc = open_rdir(d);
    if (rc < 0) {
        snprintf(err, errlen, "%s/%s: %s", d->store, d->id,
                 rc == -EPERM ? "not this user's own private directory (it or the one above "
                                "it is another user's, open to others or a symbolic link: "
                                "nothing was done there)" : strerror(-rc));
        return rc;
    }
    if (getrandom(&d->nonce, sizeof(d->nonce), 0) != sizeof(d->nonce))
        d->nonce = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    d->nonce |= 1;                      /* never 0: "no epoch yet" */
    /* What earlier runs of this request left (a crash) goes first. */
    struct names l = { 0 };
    d->sb.ops->dir_list(d->rdir, 0, collect, &l);
    for (size_t i = 0; i < l.n; i++)
        if (strcmp(l.v[i], EPOCH) != 0)
            remove_mailboxes(d->rdir, l.v[i]);
    free_names(&l);
    char name[32];
    struct stat st;
    snprintf(name, sizeof(name), "%016llx", (unsigned long long)d->nonce);
    rc = d->sb.ops->dir_make(d->rdir, name, S_IRWXU);
    if (rc == 0)
        rc = d->sb.ops->dir_open(d->rdir, name, 0, &d->mdir, &st);
    /* The doorbell's token and address go with the epoch: only who can
     * read this directory (the job user) can ring the run's workers. */
    if (getrandom(d->bell.token, sizeof(d->bell.token), 0) != sizeof(d->bell.token)) {
        snprintf(err, errlen, "getrandom for the doorbell's token: %s", strerror(errno));
        return -EIO;
    }
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u64(&w, d->nonce);
    rpc_put_u32(&w, d->n);
    rpc_put_u32(&w, d->bell.fd >= 0 ? d->bell.port : 0);
    uint64_t tok[2];
    memcpy(tok, d->bell.token, sizeof(tok));
    rpc_put_u64(&w, tok[0]);
    rpc_put_u64(&w, tok[1]);
    rpc_put_str(&w, host);
    if (!rpc_writer_ok(&w))
        rc = -ENOMEM;
    if (rc == 0)
        rc = mbox_put(d->rdir, EPOCH, w.data, w.len);
    rpc_writer_free(&w);
    if (rc < 0)
        snprintf(err, errlen, "cannot start the run's mailboxes in %s/%s: %s", d->store, d->id,
                 strerror(-rc));
    return rc;
}

/* What an epoch file says. */
struct epoch {
    uint64_t nonce;
    uint32_t n;
    uint32_t bell_port;            /* 0: worker 0 has no doorbell */
    uint8_t token[BELL_TOKEN];
    char host[256];                /* worker 0's */
};

/* The epoch announced in STORE/ID, if any: 0 and *e, or -errno. */
static int epoch_read(struct dist *d, struct epoch *e)
{
    void *p;
    size_t len;
    int rc = mbox_get(d->rdir, EPOCH, &p, &len);
    if (rc < 0)
        return rc;
    struct rpc_reader r;
    rpc_reader_init(&r, p, len);
    e->nonce = rpc_get_u64(&r);
    e->n = rpc_get_u32(&r);
    e->bell_port = rpc_get_u32(&r);
    uint64_t tok[2] = { rpc_get_u64(&r), rpc_get_u64(&r) };
    memcpy(e->token, tok, sizeof(e->token));
    const char *host = rpc_get_str(&r);
    rc = rpc_reader_ok(&r) && host && e->bell_port <= 65535 ? 0 : -EAGAIN;
    if (rc == 0)
        snprintf(e->host, sizeof(e->host), "%s", host);
    free(p);
    return rc;
}

/* Worker K > 0: rings worker 0's doorbell, if it has one. */
static void ring_hub(struct dist *d)
{
    if (d->hub_bell_ok)
        bell_ring(&d->bell, &d->hub_bell, d->me);
}

/* Worker K > 0: a ring can only be worker 0's (the token is the run's). */
static void rung_by_hub(void *arg, uint32_t from, const struct sockaddr_in *addr)
{
    (void)addr;
    if (from == 0)
        *(int *)arg = 1;
}

/* Worker K > 0: takes the doorbell of the epoch it joins. */
static void join_bell(struct dist *d, const struct epoch *e)
{
    char err[512];
    memcpy(d->bell.token, e->token, sizeof(d->bell.token));
    d->hub_bell_ok = 0;
    if (d->bell.fd < 0 || !e->bell_port) {
        log_info("worker %u: %s: polling worker 0's mailbox every %.0f ms at most", d->me,
                 d->bell.fd < 0 ? "no doorbell of its own" : "worker 0 has no doorbell",
                 DIST_POLL_MAX * 1e3);
        return;
    }
    if (bell_resolve(e->host, (uint16_t)e->bell_port, &d->hub_bell, err, sizeof(err)) < 0) {
        log_warn("worker %u: cannot ring worker 0's doorbell (%s): polling its mailbox every "
                 "%.0f ms at most", d->me, err, DIST_POLL_MAX * 1e3);
        return;
    }
    d->hub_bell_ok = 1;
}

static void sleep_s(double s)
{
    struct timespec t = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    nanosleep(&t, NULL);
}

static void rung_none(void *arg, uint32_t from, const struct sockaddr_in *addr)
{
    (void)arg;
    (void)from;
    (void)addr;
}

/* Worker K > 0: joins the newest epoch, says hello and waits for the
 * welcome (which may bring the first items). */
static int join(struct dist *d, char *err, size_t errlen)
{
    double deadline = dist_now() + d->timeout;
    uint64_t cur = 0;
    char name[64];
    while (!d->joined) {
        struct epoch e;
        if (!d->rdir)
            open_rdir(d);
        if (d->rdir && epoch_read(d, &e) == 0) {
            uint64_t nonce = e.nonce;
            if (e.n != d->n) {
                snprintf(err, errlen, "worker 0 runs %u workers, this one was started as "
                         "worker %u of %u", e.n, d->me, d->n);
                return -EINVAL;
            }
            if (nonce != cur) {
                struct stat st;
                char dir[32];
                snprintf(dir, sizeof(dir), "%016llx", (unsigned long long)nonce);
                if (d->mdir)
                    d->sb.ops->dir_close(d->mdir);
                d->mdir = NULL;
                struct rpc_writer w;
                rpc_writer_init(&w, NULL, 0);
                char host[256] = "";
                gethostname(host, sizeof(host) - 1);
                dmsg_put(&w, &(struct dmsg){ .type = DM_HELLO, .id = d->me,
                                             .count = (uint64_t)getpid(), .text = host });
                dist_msg_name(name, sizeof(name), 1, d->me, 0);
                if (d->sb.ops->dir_open(d->rdir, dir, 0, &d->mdir, &st) == 0 &&
                    rpc_writer_ok(&w) && mbox_put(d->mdir, name, w.data, w.len) == 0) {
                    cur = nonce;
                    d->nonce = nonce;
                    d->in_seq = 0;
                    join_bell(d, &e);
                    ring_hub(d);
                }
                rpc_writer_free(&w);
            }
        }
        if (cur) {
            void *p;
            size_t len;
            dist_msg_name(name, sizeof(name), 0, d->me, d->in_seq);
            if (mbox_get(d->mdir, name, &p, &len) == 0) {
                mbox_drop(d->mdir, name);
                d->in_seq++;
                exec_receive(d, p, len);
                if (d->stop)
                    break;
                continue;
            }
        }
        if (dist_now() > deadline) {
            snprintf(err, errlen, "worker 0 did not start this run within %.0f s "
                     "(%s/%s: nothing from it)", d->timeout, d->store, d->id);
            return -ETIMEDOUT;
        }
        if (cur && d->hub_bell_ok)
            bell_wait(&d->bell, DIST_POLL_MAX_BELL, rung_none, NULL);   /* the welcome rings */
        else
            sleep_s(cur ? 0.002 : 0.005);
    }
    return d->stop ? -ECANCELED : 0;
}

void dist_wait(struct dist *d, double when,
               void (*rung)(void *arg, uint32_t from, const struct sockaddr_in *addr),
               void *arg)
{
    pthread_mutex_lock(&d->lock);
    int ready = d->urgent;
    pthread_mutex_unlock(&d->lock);
    /* A record queued after this look writes the eventfd: poll returns. */
    double wait = ready ? 0 : when - dist_now();
    bell_wait(&d->bell, wait, rung, arg);
}

/* The message thread of worker K > 0. */
struct comm {
    struct dist *d;
    uint64_t out_seq;
};

static int send_out(struct dist *d, struct comm *c, struct rpc_writer *w)
{
    char name[64];
    dist_msg_name(name, sizeof(name), 1, d->me, c->out_seq);
    int rc = mbox_put(d->mdir, name, w->data, w->len);
    if (rc == 0)
        c->out_seq++;
    return rc;
}

static void *worker_main(void *arg)
{
    struct comm *c = arg;
    struct dist *d = c->d;
    struct stage_run *run = d->run;
    double now = dist_now(), last_heard = now, last_sent = now, next_poll = now;
    double poll = 0.001, retry_at = 0;
    int rung = 0;
    struct rpc_writer pending;          /* taken from out, not yet written */
    rpc_writer_init(&pending, NULL, 0);
    int have_pending = 0, said_bye = 0;
    char name[64];
    /* Messages read and not removed yet: [dropped, d->in_seq). Removing one
     * is a request to the servers the copy keeps busy; done after what was
     * read is handed to the threads and what is due is sent, it no longer
     * stands between a message and its work. */
    uint64_t dropped = d->in_seq;
    for (;;) {
        now = dist_now();
        if ((rung || now >= next_poll) && !d->done) {
            int got = 0, rc;
            rung = 0;
            void *p;
            size_t len;
            for (;;) {
                dist_msg_name(name, sizeof(name), 0, d->me, d->in_seq);
                if ((rc = mbox_get(d->mdir, name, &p, &len)) < 0)
                    break;
                d->in_seq++;
                got = 1;
                exec_receive(d, p, len);
            }
            if (dist_store_hard(rc) && dist_store_error(d, now, rc, "read", name))
                d->stop = 1;
            if (got) {
                last_heard = now;
                /* With a doorbell worker 0's next message rings. */
                poll = d->hub_bell_ok ? DIST_POLL_MAX_BELL : 0.001;
            } else if (rc != -EAGAIN && poll < (d->hub_bell_ok ? DIST_POLL_MAX_BELL : DIST_POLL_MAX)) {
                poll *= 2;
            }
            next_poll = now + (rc == -EAGAIN ? 0.001 : poll);
        }
        int finishing = (d->done || d->stop) && atomic_load(&d->running) == 0;
        if (finishing && d->done && !said_bye) {
            dist_send(d, &(struct dmsg){ .type = DM_BYE }, 1);
            said_bye = 1;
        }
        double when = next_poll;
        if (!have_pending && (finishing || dist_out_due(d, now, DIST_SEND_DELAY, &when))) {
            if (dist_take_out(d, &pending) < 0) {
                stage_fail(run, run->opt.src, ENOMEM, "send to worker 0");
                d->stop = 1;
            }
            have_pending = 1;
        }
        if (!have_pending && now - last_sent >= d->beat) {
            rpc_writer_init(&pending, NULL, 0);      /* an empty message: alive */
            have_pending = 1;
        }
        if (have_pending && d->store_failed) {
            rpc_writer_free(&pending);       /* nowhere to send it */
            rpc_writer_init(&pending, NULL, 0);
            have_pending = 0;
        } else if (have_pending && now >= retry_at) {
            int rc = send_out(d, c, &pending);
            if (rc == 0) {
                rpc_writer_free(&pending);
                rpc_writer_init(&pending, NULL, 0);
                have_pending = 0;
                last_sent = now;
                ring_hub(d);
                /* What was sent (acknowledgements) brings an answer soon;
                 * with a doorbell, the answer rings. */
                if (!d->hub_bell_ok) {
                    poll = 0.001;
                    if (next_poll > now + poll)
                        next_poll = now + poll;
                }
            } else {
                dist_msg_name(name, sizeof(name), 1, d->me, c->out_seq);
                retry_at = now + DIST_STORE_RETRY;
                if ((dist_store_hard(rc) && dist_store_error(d, now, rc, "write", name)) ||
                    now - last_sent > d->timeout) {
                    if (!d->store_failed)
                        stage_fail(run, d->store, -rc, "write to worker 0's mailbox (for %.0f s)",
                                   d->timeout);
                    d->stop = 1;
                    have_pending = 0;
                }
            }
        }
        dist_drop_read(d->mdir, 0, d->me, &dropped, d->in_seq);
        if (finishing && !have_pending)
            break;
        if (!d->done && !d->stop && now - last_heard > d->timeout) {
            stage_fail(run, run->opt.src, ETIMEDOUT,
                       "worker 0, which hands out the work, sent nothing for %.0f s: this "
                       "worker stopped and the stage is incomplete", d->timeout);
            d->stop = 1;
        }
        if (last_sent + d->beat < when)
            when = last_sent + d->beat;
        if (finishing)
            when = now + 0.001;
        if (have_pending) {
            /* A message the store refused: not again before retry_at, and
             * records queued meanwhile (urgent) do not make it sooner. */
            if (when < retry_at)
                when = retry_at;
            bell_wait(&d->bell, when - now, rung_by_hub, &rung);
        } else {
            dist_wait(d, when, rung_by_hub, &rung);
        }
    }
    rpc_writer_free(&pending);
    pool_release(run->pool);
    return NULL;
}

static void *hub_main(void *arg)
{
    struct dist *d = arg;
    hub_loop(d->hub);
    pool_release(d->run->pool);
    return NULL;
}

void dist_store_cleanup(struct dist *d)
{
    const struct backend_ops *ops = d->sb.ops;
    char name[32];
    snprintf(name, sizeof(name), "%016llx", (unsigned long long)d->nonce);
    if (d->mdir) {
        ops->dir_close(d->mdir);
        d->mdir = NULL;
    }
    remove_mailboxes(d->rdir, name);
    /* The announcement only if it is still ours (not a newer run's). */
    struct epoch e;
    if (epoch_read(d, &e) == 0 && e.nonce == d->nonce)
        ops->unlink_at(d->rdir, EPOCH);
    ops->dir_close(d->rdir);
    d->rdir = NULL;
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s", d->store);
    struct bdir *sd;
    struct stat st;
    if (ops->root_open(&d->sb, dirname(parent), 0, &sd, &st) == 0) {
        struct bdir *store;
        if (ops->dir_open(sd, DIST_STORE, 0, &store, &st) == 0) {
            ops->rmdir_at(store, d->id);          /* others' runs may be there */
            ops->dir_close(store);
        }
        ops->rmdir_at(sd, DIST_STORE);
        ops->dir_close(sd);
    }
}

int dist_execute(struct stage_run *run)
{
    struct dist *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    run->dist = d;
    d->run = run;
    d->me = run->opt.worker;
    d->n = run->opt.workers;
    /* Not more: an item waiting at a busy worker cannot be taken by an
     * idle one. 3 x threads + 4 cut the waiting of 4 workers on the
     * 100,000-file set but parked the uneven tree's work at the worker
     * walking its chains (2 workers 4.3x slower than one process). */
    d->window = run->opt.threads + 4;
    d->timeout = run->opt.peer_timeout > 0 ? run->opt.peer_timeout : DIST_DEFAULT_TIMEOUT;
    d->beat = d->timeout / 8 < 1.0 ? d->timeout / 8 : 1.0;
    d->t0 = dist_now();
    d->bell.fd = d->bell.wake_fd = -1;
    pthread_mutex_init(&d->lock, NULL);
    rpc_writer_init(&d->out, NULL, 0);
    atomic_init(&d->next_kept, 1);
    d->cache = dcache_new();
    d->files = fcache_new();
    if (!d->cache || !d->files)
        return -ENOMEM;
    char err[512] = "";
    int rc = bell_open(&d->bell, err, sizeof(err));
    if (rc == 0 && d->bell.fd < 0)
        log_warn("worker %u: %s: its mailbox is polled every %.0f ms at most", d->me, err,
                 DIST_POLL_MAX * 1e3);
    err[0] = '\0';
    if (rc == 0)
        rc = store_open(d, err, sizeof(err));
    if (rc == 0 && d->me == 0) {
        rc = epoch_create(d, err, sizeof(err));
        if (rc == 0)
            rc = hub_create(d, &d->hub);
        if (rc == 0)
            rc = hub_seed(d->hub);
    } else if (rc == 0) {
        rc = join(d, err, sizeof(err));
    }
    if (rc < 0) {
        stage_fail(run, d->store ? d->store : run->opt.dst, -rc, "%s",
                   err[0] ? err : "start the workers' run");
        if (d->me == 0 && d->rdir && d->mdir)
            dist_store_cleanup(d);
        return 0;            /* reported as a failure: exit status 1 */
    }
    struct comm c = { d, 1 };
    pthread_t t;
    pool_hold(run->pool);
    rc = pthread_create(&t, NULL, d->me == 0 ? hub_main : worker_main,
                        d->me == 0 ? (void *)d : (void *)&c);
    if (rc != 0) {
        pool_release(run->pool);
        stage_fail(run, run->opt.src, rc, "start the message thread");
        return 0;
    }
    rc = pool_run(run->pool);
    pthread_join(t, NULL);
    run->result.coord_ops = __atomic_load_n(&d->sb.md_count, __ATOMIC_RELAXED);
    run->result.lost_workers = d->lost;
    run->result.taken_over = d->taken_over;
    run->result.given_back = d->given_back;
    run->result.finalize_seconds = (double)atomic_load(&d->final_ns) / 1e9;
    run->result.tail_seconds = d->tail;
    return rc;
}

void dist_destroy(struct dist *d)
{
    if (!d)
        return;
    hub_destroy(d->hub);
    fcache_free(d->files);
    dcache_free(d->cache);
    if (d->mdir)
        d->sb.ops->dir_close(d->mdir);
    if (d->rdir)
        d->sb.ops->dir_close(d->rdir);
#ifdef HAVE_LIBADAFS
    if (d->sb_adafs)
        backend_adafs_fini(&d->sb);
#endif
    rpc_writer_free(&d->out);
    bell_close(&d->bell);
    pthread_mutex_destroy(&d->lock);
    free(d->store);
    free(d);
}
