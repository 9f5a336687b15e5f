#include "bb_store.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "rpc.h"

#define COMPACT_SLACK (1u << 20)

/* One live record as framed in the journal; shared (refs) between the
 * table and a compaction that writes it. */
struct blob {
    uint64_t key;
    uint32_t job_id;
    int64_t seq;                 /* the change that wrote it */
    int refs;                    /* under the store's lock */
    size_t len;
    struct blob *hnext;
    uint8_t data[];
};

struct bb_store {
    char *path, *dir;
    int fd;                      /* the journal, O_APPEND */
    pthread_mutex_t lock;        /* everything below */
    pthread_cond_t synced_cond;
    int64_t seq, synced;
    bool syncing, broken;        /* broken: an append failed: compact at the next sync */
    int broken_rc;               /* that append's -errno, what later ones report */
    uint64_t file_bytes, live_bytes;
    struct blob **buckets;
    size_t nbuckets, nlive;
    struct bb_store_stats stats;
};

static size_t bucket(const struct bb_store *s, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (s->nbuckets - 1);
}

static void unref(struct blob *b)
{
    if (b && --b->refs == 0)
        free(b);
}

/* Replaces the table's record of b->key by b (NULL: removes key). Lock held. */
static void table_set(struct bb_store *s, uint64_t key, struct blob *b)
{
    struct blob **p = &s->buckets[bucket(s, key)];
    while (*p && (*p)->key != key)
        p = &(*p)->hnext;
    if (*p) {
        struct blob *old = *p;
        *p = old->hnext;
        s->live_bytes -= old->len;
        s->nlive--;
        unref(old);
    }
    if (b) {
        b->hnext = s->buckets[bucket(s, key)];
        s->buckets[bucket(s, key)] = b;
        s->live_bytes += b->len;
        s->nlive++;
    }
    if (s->nlive > 2 * s->nbuckets) {
        size_t nb = s->nbuckets * 4;
        struct blob **grown = calloc(nb, sizeof(*grown));
        if (!grown)
            return;   /* longer chains, still right */
        for (size_t i = 0; i < s->nbuckets; i++)
            for (struct blob *x = s->buckets[i], *next; x; x = next) {
                next = x->hnext;
                size_t at = (size_t)((x->key * 0x9e3779b97f4a7c15ull) >> 40) & (nb - 1);
                x->hnext = grown[at];
                grown[at] = x;
            }
        free(s->buckets);
        s->buckets = grown;
        s->nbuckets = nb;
    }
}

static struct blob *blob_of(const struct rpc_writer *w, uint64_t key, uint32_t job_id)
{
    struct blob *b = malloc(sizeof(*b) + w->len);
    if (!b)
        return NULL;
    *b = (struct blob){ .key = key, .job_id = job_id, .refs = 1, .len = w->len };
    memcpy(b->data, w->data, w->len);
    return b;
}

static int sync_dir(const struct bb_store *s)
{
    int fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static int open_append(const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

struct bb_store *bb_store_open(const char *path, const struct bb_job *jobs, char *err,
                               size_t errlen)
{
    struct bb_store *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    s->fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->synced_cond, NULL);
    char *copy = strdup(path);
    if (!copy || !(s->path = strdup(path)) || !(s->dir = strdup(dirname(copy))) ||
        !(s->buckets = calloc(s->nbuckets = 64, sizeof(*s->buckets)))) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(copy);
        bb_store_close(s);
        return NULL;
    }
    free(copy);
    struct rpc_writer w;
    bb_job_file_begin(&w);
    int rc = 0;
    for (const struct bb_job *j = jobs; rc == 0 && j; j = j->next) {
        struct rpc_writer one;
        rpc_writer_init(&one, NULL, 0);
        rc = bb_job_frame(&one, j);
        struct blob *b = rc == 0 ? blob_of(&one, j->key, j->job_id) : NULL;
        if (!b)
            rc = -ENOMEM;
        else
            table_set(s, j->key, b);
        rpc_put_raw(&w, one.data, one.len);
        rpc_writer_free(&one);
    }
    if (rc == 0 && !rpc_writer_ok(&w))
        rc = -ENOMEM;
    if (rc == 0)
        rc = bb_job_write_file(path, w.data, w.len);
    if (rc == 0)
        rc = sync_dir(s);
    if (rc == 0)
        rc = open_append(path);
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot write the saved table: %s", path, strerror(-rc));
        rpc_writer_free(&w);
        bb_store_close(s);
        return NULL;
    }
    s->fd = rc;
    s->file_bytes = w.len;
    rpc_writer_free(&w);
    return s;
}

/* Appends a framed change; lock held. The record goes in the table even if
 * the write fails: the next compaction writes it. */
static int64_t append_locked(struct bb_store *s, const struct rpc_writer *w, uint64_t key,
                             struct blob *b)
{
    /* Once one failed, later appends would follow a record cut short: they
     * wait for the compaction, and report the cause (ENOSPC), not EIO. */
    int rc = s->broken ? s->broken_rc : fileio_write_all(s->fd, w->data, w->len);
    int64_t seq = ++s->seq;
    if (b)
        b->seq = seq;
    table_set(s, key, b);
    s->stats.puts++;
    if (rc < 0) {
        s->broken = true;
        s->broken_rc = rc;
        return rc;
    }
    s->file_bytes += w->len;
    return seq;
}

int64_t bb_store_put(struct bb_store *s, const struct bb_job *job)
{
    /* Encoded before the lock: the write is all that is done under it. */
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    struct blob *b = bb_job_frame(&w, job) == 0 ? blob_of(&w, job->key, job->job_id) : NULL;
    if (!b) {
        rpc_writer_free(&w);
        return -ENOMEM;
    }
    pthread_mutex_lock(&s->lock);
    int64_t seq = append_locked(s, &w, job->key, b);
    pthread_mutex_unlock(&s->lock);
    rpc_writer_free(&w);
    return seq;
}

int64_t bb_store_drop(struct bb_store *s, const struct bb_job *job)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    if (bb_job_frame_gone(&w, job->job_id, job->key) < 0) {
        rpc_writer_free(&w);
        return -ENOMEM;
    }
    pthread_mutex_lock(&s->lock);
    int64_t seq = append_locked(s, &w, job->key, NULL);
    pthread_mutex_unlock(&s->lock);
    rpc_writer_free(&w);
    return seq;
}

/* Rewrites the journal with the live records; lock held, released while
 * the bulk is written and fsync'd. 0 or -errno (the old journal stays). */
static int compact_locked(struct bb_store *s)
{
    int64_t upto = s->seq;
    size_t n = 0;
    struct blob **snap = malloc((s->nlive ? s->nlive : 1) * sizeof(*snap));
    if (!snap)
        return -ENOMEM;
    for (size_t i = 0; i < s->nbuckets; i++)
        for (struct blob *b = s->buckets[i]; b; b = b->hnext) {
            b->refs++;
            snap[n++] = b;
        }
    pthread_mutex_unlock(&s->lock);

    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.new", s->path);
    int rc = unlink(tmp) < 0 && errno != ENOENT ? -errno : 0;
    int fd = rc < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = -errno;
    struct rpc_writer header;
    bb_job_file_begin(&header);
    uint64_t bytes = header.len;
    if (rc == 0)
        rc = rpc_writer_ok(&header) ? fileio_write_all(fd, header.data, header.len) : -ENOMEM;
    rpc_writer_free(&header);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = fileio_write_all(fd, snap[i]->data, snap[i]->len);
        bytes += snap[i]->len;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;

    pthread_mutex_lock(&s->lock);
    /* What changed while it was written: records newer than the copy, and
     * those of the copy that are gone since. */
    for (size_t i = 0; rc == 0 && i < s->nbuckets; i++)
        for (struct blob *b = s->buckets[i]; rc == 0 && b; b = b->hnext)
            if (b->seq > upto) {
                rc = fileio_write_all(fd, b->data, b->len);
                bytes += b->len;
            }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct blob *now = s->buckets[bucket(s, snap[i]->key)];
        while (now && now->key != snap[i]->key)
            now = now->hnext;
        if (!now) {
            struct rpc_writer w;
            rpc_writer_init(&w, NULL, 0);
            bb_job_frame_gone(&w, snap[i]->job_id, snap[i]->key);
            rc = rpc_writer_ok(&w) ? fileio_write_all(fd, w.data, w.len) : -ENOMEM;
            bytes += w.len;
            rpc_writer_free(&w);
        }
    }
    if (rc == 0 && rename(tmp, s->path) < 0)
        rc = -errno;
    if (rc == 0) {
        close(s->fd);
        s->fd = fd;
        s->file_bytes = bytes;
        s->broken = false;
        s->stats.compactions++;
    } else {
        if (fd >= 0)
            close(fd);
        unlink(tmp);
    }
    for (size_t i = 0; i < n; i++)
        unref(snap[i]);
    free(snap);
    return rc;
}

int bb_store_sync(struct bb_store *s, int64_t seq)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    s->stats.syncs++;
    while (rc == 0 && (s->synced < seq || s->broken)) {
        if (s->syncing) {
            pthread_cond_wait(&s->synced_cond, &s->lock);
            continue;
        }
        s->syncing = true;
        bool compact = s->broken || s->file_bytes > 2 * s->live_bytes + COMPACT_SLACK;
        int64_t target = s->seq;
        if (compact) {
            /* Every change up to target is in the copy written and
             * fsync'd; its directory entry is made durable below. */
            rc = compact_locked(s);
            pthread_mutex_unlock(&s->lock);
            if (rc == 0)
                rc = sync_dir(s);
            pthread_mutex_lock(&s->lock);
        } else {
            int fd = s->fd;
            pthread_mutex_unlock(&s->lock);
            rc = fdatasync(fd) < 0 ? -errno : 0;
            pthread_mutex_lock(&s->lock);
            s->stats.fsyncs++;
        }
        if (rc == 0 && target > s->synced)
            s->synced = target;
        s->syncing = false;
        pthread_cond_broadcast(&s->synced_cond);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

const char *bb_store_path(const struct bb_store *s)
{
    return s->path;
}

int64_t bb_store_last(struct bb_store *s)
{
    pthread_mutex_lock(&s->lock);
    int64_t seq = s->seq;
    pthread_mutex_unlock(&s->lock);
    return seq;
}

void bb_store_stats(struct bb_store *s, struct bb_store_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    out->file_bytes = s->file_bytes;
    out->live_bytes = s->live_bytes;
    out->records = s->nlive;
    pthread_mutex_unlock(&s->lock);
}

void bb_store_close(struct bb_store *s)
{
    if (!s)
        return;
    if (s->fd >= 0) {
        bb_store_sync(s, bb_store_last(s));
        close(s->fd);
    }
    for (size_t i = 0; s->buckets && i < s->nbuckets; i++)
        for (struct blob *b = s->buckets[i], *next; b; b = next) {
            next = b->hnext;
            unref(b);
        }
    free(s->buckets);
    pthread_cond_destroy(&s->synced_cond);
    pthread_mutex_destroy(&s->lock);
    free(s->path);
    free(s->dir);
    free(s);
}
