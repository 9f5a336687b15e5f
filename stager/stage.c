/* stage: setting a run up, the requests it starts from, and its results. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "dist.h"
#include "log.h"
#include "qos_client.h"
#include "stage_internal.h"

const char *stage_direction_name(enum stage_direction d)
{
    return d == STAGE_IN ? "in" : d == STAGE_OUT ? "out" : "copy";
}

char *stage_rel(const char *parent_rel, const char *name)
{
    char *s;
    if (asprintf(&s, "%s%s%s", parent_rel, *parent_rel ? "/" : "", name) < 0)
        return NULL;
    return s;
}

int stage_fs_fault(struct stage_run *run, char *buf, size_t len)
{
    buf[0] = '\0';
#ifdef HAVE_LIBADAFS
    struct backend *b = run->dst_adafs ? &run->dst_b : run->src_adafs ? &run->src_b : NULL;
    if (b && b->fs)
        backend_adafs_why(b, buf, len);
    if (!buf[0] && run->dist)
        dist_store_why(run->dist, buf, len);
#endif
    return buf[0] != '\0';
}

void stage_fail(struct stage_run *run, const char *path, int err, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* EIO from the job's file system: one of its servers did not answer
     * (killed, hung, its node gone). Which one, and where, is what the
     * user and the admin need; libadafs kept it. */
    char server[400] = "";
    if (err == EIO && stage_fs_fault(run, server, sizeof(server))) {
        size_t n = strlen(what);
        snprintf(what + n, sizeof(what) - n, " (the job's file system: %s)", server);
        atomic_fetch_add(&run->fs_faults, 1);
    }
    /* The one line a person (and the agent's record of stderr) gets for it,
     * at once: a stage killed at its timeout still named what failed.
     * report_text's summary only counts them. */
    log_error("FAILED %s: %s: %s (errno %d)", path, what, strerror(err), err);
    pthread_mutex_lock(&run->lock);
    if (run->nfailures == run->failures_cap) {
        size_t cap = run->failures_cap ? run->failures_cap * 2 : 16;
        struct stage_failure *f = realloc(run->failures, cap * sizeof(*f));
        if (!f) {
            atomic_store(&run->no_memory, 1);
            pthread_mutex_unlock(&run->lock);
            return;
        }
        run->failures = f;
        run->failures_cap = cap;
    }
    char *p = strdup(path), *w = strdup(what);
    if (p && w)
        run->failures[run->nfailures++] = (struct stage_failure){ p, err, w };
    else {
        free(p);
        free(w);
        atomic_store(&run->no_memory, 1);
    }
    pthread_mutex_unlock(&run->lock);
}

void stage_fail_at(struct stage_run *run, struct bdir *d, const char *name, int err,
                   const char *what)
{
    char *p = backend_join(d->path, name);
    stage_fail(run, p ? p : name, err, "%s", what);
    free(p);
}

int stage_seen_dir(struct stage_run *run, dev_t dev, ino_t ino)
{
    int seen = 0;
    pthread_mutex_lock(&run->lock);
    for (size_t i = 0; i < run->nvisited && !seen; i++)
        seen = run->visited[i].dev == dev && run->visited[i].ino == ino;
    if (!seen) {
        if (run->nvisited == run->visited_cap) {
            size_t cap = run->visited_cap ? run->visited_cap * 2 : 64;
            void *v = realloc(run->visited, cap * sizeof(*run->visited));
            if (v) {
                run->visited = v;
                run->visited_cap = cap;
            }
        }
        if (run->nvisited < run->visited_cap)
            run->visited[run->nvisited++] = (typeof(*run->visited)){ dev, ino };
    }
    pthread_mutex_unlock(&run->lock);
    return seen;
}

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* A copy into its own source never ends. */
static int check_not_inside(const char *src, const char *dst, char *err, size_t errlen)
{
    char s[PATH_MAX], d[PATH_MAX];
    if (!realpath(src, s))
        return 0;                          /* reported when it is opened */
    char *dcopy = strdup(dst);
    if (!dcopy)
        return -ENOMEM;
    /* The destination may not exist yet: resolve its nearest existing parent. */
    char *probe = dcopy;
    while (!realpath(probe, d)) {
        char *slash = strrchr(probe, '/');
        if (!slash || slash == probe) {
            free(dcopy);
            return 0;
        }
        *slash = '\0';
    }
    free(dcopy);
    size_t n = strlen(s);
    if (strncmp(s, d, n) == 0 && (d[n] == '/' || d[n] == '\0'))
        return errf(err, errlen, -EINVAL, "destination %s is inside the source %s", dst, src);
    return 0;
}

int stage_create(const struct stage_options *opt, struct stage_run **out, char *err,
                 size_t errlen)
{
    if (!opt->src || !*opt->src || !opt->dst || !*opt->dst)
        return errf(err, errlen, -EINVAL, "source and destination must be given");
    if (opt->workers > 1 && opt->worker >= opt->workers)
        return errf(err, errlen, -EINVAL, "worker %u of %u: k must be below n",
                    opt->worker, opt->workers);
#ifndef HAVE_LIBADAFS
    if (opt->direction != STAGE_COPY)
        return errf(err, errlen, -ENOTSUP,
                    "stage %s needs libadafs, which this build does not have",
                    stage_direction_name(opt->direction));
#endif
    struct stage_run *run = calloc(1, sizeof(*run));
    if (!run)
        return -ENOMEM;
    run->opt = *opt;
    run->src = strdup(opt->src);
    run->dst = strdup(opt->dst);
    run->instance = opt->instance ? strdup(opt->instance) : NULL;
    pthread_mutex_init(&run->lock, NULL);
    if (!run->src || !run->dst || (opt->instance && !run->instance)) {
        stage_destroy(run);
        return -ENOMEM;
    }
    run->opt.src = run->src;
    run->opt.dst = run->dst;
    run->opt.instance = run->instance;
    if (!run->opt.workers)
        run->opt.workers = 1;
    if (!run->opt.threads)
        run->opt.threads = STAGE_DEFAULT_THREADS;
    ratelimit_init(&run->md, opt->max_mdops, 100);
    ratelimit_init(&run->bw, opt->max_bw, 100);
    if (qos_client_on() && opt->direction != STAGE_COPY) {
        run->md.qos_class = QOS_OTHER;
        run->bw.qos_class = opt->direction == STAGE_IN ? QOS_READ : QOS_WRITE;
    }

    int rc = 0;
    if (opt->direction == STAGE_COPY && opt->type == STAGE_DIRECTORY)
        rc = check_not_inside(opt->src, opt->dst, err, errlen);
    /* The side toward the parallel file system is the POSIX one. */
    if (rc == 0 && opt->direction != STAGE_IN)
        backend_posix_init(&run->dst_b, &run->md, &run->bw);
    if (rc == 0 && opt->direction != STAGE_OUT)
        backend_posix_init(&run->src_b, &run->md, &run->bw);
#ifdef HAVE_LIBADAFS
    if (rc == 0 && opt->direction != STAGE_COPY) {
        struct backend *ab = opt->direction == STAGE_IN ? &run->dst_b : &run->src_b;
        rc = backend_adafs_init(ab, opt->instance, err, errlen);
        if (rc == 0) {
            if (opt->direction == STAGE_IN)
                run->dst_adafs = 1;
            else
                run->src_adafs = 1;
            /* Pieces line up with the file system's chunks. */
            run->src_b.chunk_size = run->dst_b.chunk_size = ab->chunk_size;
        }
    }
#endif
    if (rc < 0) {
        stage_destroy(run);
        return rc;
    }
    uint64_t chunk = run->dst_b.chunk_size ? run->dst_b.chunk_size : 512 * 1024;
    uint64_t ps = opt->piece_size ? opt->piece_size : STAGE_DEFAULT_PIECE;
    run->piece_size = (ps + chunk - 1) / chunk * chunk;

    /* Of several workers, the coordinator (worker 0) alone reads a list. */
    if (opt->type == STAGE_LIST && run->opt.worker == 0) {
        rc = list_load(opt->src, &run->list);
        if (rc < 0) {
            errf(err, errlen, rc, "cannot read list file %s: %s", opt->src, strerror(-rc));
            stage_destroy(run);
            return rc;
        }
    }
    /* Deep trees keep one descriptor per directory in progress. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    run->pool = pool_create(run->opt.threads, STAGE_BUF_SIZE);
    if (!run->pool) {
        stage_destroy(run);
        return -ENOMEM;
    }
    *out = run;
    return 0;
}

/* Paths of the two sides as their backends want them: adafs paths are
 * absolute inside the file system, relative ones are taken from its root. */
int stage_side_path(struct stage_run *run, int dst_side, const char *path, char *out,
                    size_t outlen)
{
#ifdef HAVE_LIBADAFS
    if (dst_side ? run->dst_adafs : run->src_adafs)
        return backend_adafs_path(dst_side ? &run->dst_b : &run->src_b, path, out, outlen);
#endif
    int n = snprintf(out, outlen, "%s", path);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static struct dnode *new_root_node(struct stage_run *run, struct bdir *src, struct bdir *dst)
{
    struct dnode *n = calloc(1, sizeof(*n));
    if (!n || !(n->rel = strdup(""))) {
        free(n);
        return NULL;
    }
    n->run = run;
    n->pending = 1;
    n->src = src;
    n->dst = dst;
    return n;
}

/* One request of a list (or type=file): src names a file or a directory,
 * dst the path it gets. rel (the destination as written) decides which
 * worker owns it. */
struct item_task {
    struct stage_run *run;
    char *src, *dst, *rel;
    unsigned line;
};

static void item_task(struct pool_thread *self, void *arg)
{
    struct item_task *t = arg;
    struct stage_run *run = t->run;
    char sp[PATH_MAX], dp[PATH_MAX];
    struct bdir *sd = NULL, *dd = NULL;
    struct stat st;
    int rc = stage_side_path(run, 0, t->src, sp, sizeof(sp));
    if (rc == 0)
        rc = stage_side_path(run, 1, t->dst, dp, sizeof(dp));
    if (rc < 0) {
        stage_fail(run, t->src, -rc, "%s", t->line ? "list entry: path" : "path");
        goto out;
    }
    char sdir[PATH_MAX], ddir[PATH_MAX];
    strcpy(sdir, sp);
    strcpy(ddir, dp);
    const char *sname = basename(sp), *dname = basename(dp);
    char *s_parent = dirname(sdir), *d_parent = dirname(ddir);
    if (!*sname || !strcmp(sname, "/") || !strcmp(sname, ".") || !strcmp(sname, "..") ||
        !*dname || !strcmp(dname, "/") || !strcmp(dname, ".") || !strcmp(dname, "..")) {
        stage_fail(run, t->src, EINVAL, "source and destination must each name an entry, "
                   "not / . or ..");
        goto out;
    }
    if ((rc = run->src_b.ops->root_open(&run->src_b, s_parent, 0, &sd, &st)) < 0) {
        stage_fail(run, s_parent, -rc, "open source directory");
        goto out;
    }
    if ((rc = run->dst_b.ops->root_open(&run->dst_b, d_parent, 1, &dd, &st)) < 0) {
        stage_fail(run, d_parent, -rc, "create destination directory");
        goto out;
    }
    struct dnode *n = new_root_node(run, sd, dd);
    char *rel_parent = n ? strdup(t->rel) : NULL;
    if (!n || !rel_parent) {
        free(n);
        stage_fail(run, t->src, ENOMEM, "queue");
        goto out;
    }
    sd = dd = NULL;
    /* The node's rel is the destination's parent, so the entry's rel is
     * exactly the destination as written in the request. */
    char *slash = strrchr(rel_parent, '/');
    if (slash)
        *slash = '\0';
    else
        *rel_parent = '\0';
    free(n->rel);
    n->rel = rel_parent;
    walk_entry(self, n, sname, dname, DT_UNKNOWN, 1);
    dnode_release(n);
out:
    if (sd)
        run->src_b.ops->dir_close(sd);
    if (dd)
        run->dst_b.ops->dir_close(dd);
    free(t->src);
    free(t->dst);
    free(t->rel);
    free(t);
}

static int queue_item(void *arg, const char *src, const char *dst, const char *rel,
                      unsigned line)
{
    struct stage_run *run = arg;
    struct item_task *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->run = run;
    t->line = line;
    t->src = strdup(src);
    t->dst = strdup(dst);
    t->rel = strdup(rel);
    if (!t->src || !t->dst || !t->rel || pool_push(run->pool, NULL, item_task, t) < 0) {
        free(t->src);
        free(t->dst);
        free(t->rel);
        free(t);
        return -ENOMEM;
    }
    return 0;
}

/* A relative list destination stays inside DST. */
static int leaves_root(const char *rel)
{
    for (const char *p = rel; *p;) {
        if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]))
            return 1;
        const char *s = strchr(p, '/');
        if (!s)
            break;
        p = s + 1;
    }
    return 0;
}

static void list_root_task(struct pool_thread *self, void *arg)
{
    walk_list(self, arg);
}

/* The destination of a list entry: a relative one is taken below DST. */
static char *list_dst(struct stage_run *run, const char *dst)
{
    if (dst[0] == '/')
        return strdup(dst);
    return run->dst_adafs ? stage_rel(run->dst, dst) : backend_join(run->dst, dst);
}

int stage_requests(struct stage_run *run,
                   int (*cb)(void *arg, const char *src, const char *dst, const char *rel,
                             unsigned line),
                   void *arg)
{
    const struct stage_options *o = &run->opt;
    if (o->type == STAGE_LIST) {
        for (size_t i = 0; i < run->list.error_count; i++)
            stage_fail(run, o->src, EINVAL, "%s", run->list.errors[i].message);
        for (size_t i = 0; i < run->list.count; i++) {
            const struct list_entry *e = &run->list.entries[i];
            if (e->dst[0] != '/' && leaves_root(e->dst)) {
                stage_fail(run, o->src, EINVAL, "line %u: destination %s leaves %s",
                           e->line, e->dst, o->dst);
                continue;
            }
            /* A relative source on the parallel file system is taken from
             * the list file's directory, whatever directory we run in. */
            char *src = NULL;
            if (e->src[0] != '/' && !run->src_adafs) {
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", o->src);
                src = backend_join(dirname(dir), e->src);
                if (!src)
                    return -ENOMEM;
            }
            char *dst = list_dst(run, e->dst);
            int rc = dst ? cb(arg, src ? src : e->src, dst, e->dst, e->line) : -ENOMEM;
            free(src);
            free(dst);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    /* type=file: an existing directory as DST receives the file under its
     * own name. */
    char dp[PATH_MAX];
    struct bdir *dd;
    struct stat st;
    const char *dst = o->dst;
    char *joined = NULL;
    if (stage_side_path(run, 1, o->dst, dp, sizeof(dp)) == 0 &&
        run->dst_b.ops->root_open(&run->dst_b, dp, 0, &dd, &st) == 0) {
        run->dst_b.ops->dir_close(dd);
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof(tmp), "%s", o->src);
        joined = backend_join(o->dst, basename(tmp));
        if (!joined)
            return -ENOMEM;
        dst = joined;
    }
    int rc = cb(arg, o->src, dst, dst, 0);
    free(joined);
    return rc;
}

static int queue_requests(struct stage_run *run)
{
    const struct stage_options *o = &run->opt;
    if (o->type != STAGE_DIRECTORY)
        return stage_requests(run, queue_item, run);

    char sp[PATH_MAX], dp[PATH_MAX];
    struct bdir *sd, *dd;
    struct stat sst, dst;
    int rc = stage_side_path(run, 0, o->src, sp, sizeof(sp));
    if (rc == 0)
        rc = stage_side_path(run, 1, o->dst, dp, sizeof(dp));
    if (rc < 0) {
        stage_fail(run, o->src, -rc, "path");
        return 0;
    }
    if ((rc = run->src_b.ops->root_open(&run->src_b, sp, 0, &sd, &sst)) < 0) {
        stage_fail(run, o->src, -rc, "open source directory");
        return 0;
    }
    int existed = run->dst_b.ops->root_open(&run->dst_b, dp, 0, &dd, &dst) == 0;
    if (!existed && (rc = run->dst_b.ops->root_open(&run->dst_b, dp, 1, &dd, &dst)) < 0) {
        stage_fail(run, o->dst, -rc, "create destination directory");
        run->src_b.ops->dir_close(sd);
        return 0;
    }
    struct dnode *n = new_root_node(run, sd, dd);
    if (!n) {
        run->src_b.ops->dir_close(sd);
        run->dst_b.ops->dir_close(dd);
        return -ENOMEM;
    }
    n->mode = sst.st_mode;
    n->mtime = sst.st_mtim;
    /* A directory we made gets the source's attributes like any other; one
     * that existed (a job's mount point, a user's project dir) keeps its own. */
    n->set_attrs = !existed;
    n->fresh = !existed;
    if (o->follow_symlinks)
        stage_seen_dir(run, sst.st_dev, sst.st_ino);
    atomic_fetch_add(&run->dirs, 1);
    if (pool_push(run->pool, NULL, list_root_task, n) < 0) {
        dnode_release(n);
        return -ENOMEM;
    }
    return 0;
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int stage_execute(struct stage_run *run)
{
    clock_gettime(CLOCK_MONOTONIC, &run->t0);
    int rc;
    if (run->opt.workers > 1) {
        rc = dist_execute(run);
    } else {
        rc = queue_requests(run);
        if (rc == 0)
            rc = pool_run(run->pool);
    }
    struct stage_result *r = &run->result;
    r->files = atomic_load(&run->files);
    r->dirs = atomic_load(&run->dirs);
    r->bytes = atomic_load(&run->bytes);
    r->unchanged = atomic_load(&run->unchanged);
    r->skipped = atomic_load(&run->skipped);
    r->pieces = atomic_load(&run->pieces);
    r->fs_faults = atomic_load(&run->fs_faults);
    r->src_mdops = __atomic_load_n(&run->src_b.md_count, __ATOMIC_RELAXED);
    r->dst_mdops = __atomic_load_n(&run->dst_b.md_count, __ATOMIC_RELAXED);
    r->idle_seconds = run->pool ? pool_idle_seconds(run->pool) : 0;
    r->idle_start_seconds = run->pool ? pool_idle_start_seconds(run->pool) : 0;
    r->seconds = since(&run->t0);
    if (atomic_load(&run->no_memory))
        stage_fail(run, run->opt.src, ENOMEM, "recording failures (list incomplete)");
    r->failures = run->failures;
    r->nfailures = run->nfailures;
    r->errors = run->nfailures;
    if (rc < 0)
        return rc;
    return r->errors ? 1 : 0;
}

const struct stage_result *stage_result(const struct stage_run *run)
{
    return &run->result;
}

void stage_get_progress(struct stage_run *run, struct stage_progress *out)
{
    out->files_done = atomic_load(&run->files) + atomic_load(&run->unchanged);
    out->files_seen = atomic_load(&run->files_seen);
    out->bytes_done = atomic_load(&run->bytes);
    out->bytes_seen = atomic_load(&run->bytes_seen);
    out->pfs_mdops = atomic_load(&run->md.taken);
    out->pfs_bytes = atomic_load(&run->bw.taken);
    pthread_mutex_lock(&run->lock);
    out->errors = run->nfailures;
    pthread_mutex_unlock(&run->lock);
    out->seconds = since(&run->t0);
}

void stage_set_limits(struct stage_run *run, uint64_t max_mdops, uint64_t max_bw)
{
    ratelimit_set_rate(&run->md, max_mdops);
    ratelimit_set_rate(&run->bw, max_bw);
}

void stage_destroy(struct stage_run *run)
{
    if (!run)
        return;
    pool_destroy(run->pool);
    dist_destroy(run->dist);
#ifdef HAVE_LIBADAFS
    if (run->src_adafs)
        backend_adafs_fini(&run->src_b);
    if (run->dst_adafs)
        backend_adafs_fini(&run->dst_b);
#endif
    list_free(&run->list);
    for (size_t i = 0; i < run->nfailures; i++) {
        free(run->failures[i].path);
        free(run->failures[i].what);
    }
    free(run->failures);
    free(run->visited);
    free(run->src);
    free(run->dst);
    free(run->instance);
    pthread_mutex_destroy(&run->lock);
    free(run);
}
