/* meta: the requests on metadata records (STAT, STAT_READ, CREATE, MKDIR,
 * REMOVE, SIZE, APPEND, SIZE_UNDO, TRUNCATE, SETATTR, PUT, REMOVE_IF, LIST,
 * CREATE_WRITE): each decodes its path, takes its record's lock and reads
 * or changes the record in the store (meta_store.h). */
#include "meta_store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The path a request is about: its key and the lock of its record. */
struct target {
    const char *path;
    char key[KEY_MAX];
    int klen;                  /* < 0: the path was bad (-EINVAL, -EBADMSG) */
    pthread_mutex_t *lock;
};

/* Decodes the leading path of a request; an error is reported by
 * target_check once the rest of the request has been decoded. */
static void target_take(struct rpc_reader *req, struct target *t)
{
    t->path = rpc_get_str(req);
    t->klen = t->path ? path_key(t->path, t->key) : -EBADMSG;
}

/* 0 if the path was good and the whole request decoded cleanly. */
static int target_check(struct server *srv, struct rpc_reader *req, struct target *t)
{
    if (t->klen < 0)
        return t->klen;
    if (!rpc_reader_done(req))
        return -EBADMSG;
    t->lock = key_lock(srv, t->key, t->klen);
    return 0;
}

/* Under the record's lock, before creating or replacing it: checks the
 * parent if the client asked (FS_CHECK_PARENT) and looks the path up.
 * Returns 0 with *found saying whether rec holds an existing record, or the
 * parent's error (ENOENT, ENOTDIR) or EIO. */
static int lookup_for_create(struct server *srv, const struct target *t, uint32_t flags,
                             struct fs_record *rec, int *found)
{
    int rc = (flags & FS_CHECK_PARENT) ? check_parent(srv, t->path) : 0;
    *found = 0;
    if (rc == 0) {
        rc = get_record(srv, t->key, t->klen, rec);
        *found = rc == 0;
        if (rc == -ENOENT)
            rc = 0;
    }
    return rc;
}

int op_stat(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0) {
        struct fs_cap cap;
        access_cap_for(srv, rep, t.path, &rec, &cap);
        access_answer(srv, rep, &rec);
        fs_record_put(&rep->out, &rec);
        fs_cap_put(&rep->out, &cap);
    }
    return rc;
}

int op_stat_read(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t max = rpc_get_u32(req);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc < 0)
        return rc;
    struct fs_record shown = rec;
    struct fs_cap cap;
    access_cap_for(srv, rep, t.path, &rec, &cap);
    access_answer(srv, rep, &shown);
    fs_record_put(&rep->out, &shown);
    fs_cap_put(&rep->out, &cap);
    /* The data only if this server holds all of it that was asked for. */
    uint64_t want = rec.size < max ? rec.size : max;
    uint32_t here = S_ISREG(rec.mode) && want <= srv->chunk_size &&
                    hash_place_chunk(rec.key, 0, srv->nservers) == srv->index &&
                    access_may(rep, &rec, R_OK) == 0;
    rpc_put_u32(&rep->out, here);
    if (here && want > 0) {
        rc = chunks_read_into(srv, rec.key, 0, (size_t)want, &rep->out);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int op_create(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t mode = rpc_get_u32(req), flags = rpc_get_u32(req);
    uint64_t data_key = rpc_get_u64(req);
    struct fs_cap parent;
    fs_cap_get(req, &parent);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    uint64_t old_key = 0, old_size = 0;
    int found;
    rc = lookup_for_create(srv, &t, flags, &rec, &found);
    /* Only a new entry needs write on its directory (opening one that is
     * there with O_CREAT does not). */
    if (rc == 0 && !found)
        rc = access_parent_check(srv, rep, t.path, &parent);
    if (rc == 0 && found) {
        if (flags & FS_CREATE_EXCL) {
            rc = -EEXIST;
        } else if (rep->caller && (flags & FS_CREATE_TRUNC) ? access_may(rep, &rec, W_OK) < 0
                   : access_may(rep, &rec, R_OK) < 0 && access_may(rep, &rec, W_OK) < 0) {
            rc = -EACCES;   /* opening it needs read or write, emptying it write */
        } else if (S_ISREG(rec.mode) && (flags & FS_CREATE_TRUNC) && rec.size > 0) {
            old_key = rec.key;
            old_size = rec.size;
            rec.size = 0;
            rec.mtime_ns = rec.ctime_ns = now_ns();
            rc = put_record(srv, t.key, t.klen, &rec);
            if (rc == 0)
                chunks_truncate(srv, old_key, 0, old_size);
        }
    } else if (rc == 0) {
        int64_t now = now_ns();
        rec = (struct fs_record){ .mode = S_IFREG | (mode & 07777),
                                  .key = access_new_key(srv, rep, data_key),
                                  .atime_ns = now, .mtime_ns = now, .ctime_ns = now };
        access_stamp(srv, rep, &rec);
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    if (rc == 0) {
        struct fs_cap cap, drop;
        access_cap_for(srv, rep, t.path, &rec, &cap);
        access_cap_drop(srv, rep, old_key, &drop);
        access_answer(srv, rep, &rec);
        fs_record_put(&rep->out, &rec);
        fs_cap_put(&rep->out, &cap);
        rpc_put_u64(&rep->out, old_key);
        rpc_put_u64(&rep->out, old_size);
        fs_cap_put(&rep->out, &drop);
    }
    return rc;
}

int op_mkdir(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t mode = rpc_get_u32(req), flags = rpc_get_u32(req);
    uint64_t data_key = rpc_get_u64(req);
    struct fs_cap parent;
    fs_cap_get(req, &parent);
    int rc = target_check(srv, req, &t);
    if (rc < 0 || (rc = access_parent_check(srv, rep, t.path, &parent)) < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    int found;
    rc = lookup_for_create(srv, &t, flags, &rec, &found);
    if (rc == 0 && found)
        rc = -EEXIST;
    if (rc == 0) {
        int64_t now = now_ns();
        rec = (struct fs_record){ .mode = S_IFDIR | (mode & 07777), .key = data_key,
                                  .atime_ns = now, .mtime_ns = now, .ctime_ns = now };
        access_stamp(srv, rep, &rec);
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    return rc;
}

int op_remove(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t want_dir = rpc_get_u32(req), keep_data = rpc_get_u32(req);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0 && want_dir && !S_ISDIR(rec.mode))
        rc = -ENOTDIR;
    else if (rc == 0 && !want_dir && S_ISDIR(rec.mode))
        rc = -EISDIR;
    /* Its parent's record is on another server: a user removes only what
     * it owns (stricter than POSIX's write on the parent). */
    if (rc == 0)
        rc = access_owns(rep, &rec);
    if (rc == 0)
        rc = del_record(srv, t.key, t.klen);
    if (rc == 0 && S_ISDIR(rec.mode))
        dirs_forget(srv);   /* after the delete: see check_parent */
    pthread_mutex_unlock(t.lock);
    if (rc == 0) {
        if (S_ISREG(rec.mode) && !keep_data)
            chunks_truncate(srv, rec.key, 0, rec.size);
        struct fs_cap drop;
        access_cap_drop(srv, rep, S_ISREG(rec.mode) ? rec.key : 0, &drop);
        fs_record_put(&rep->out, &rec);
        fs_cap_put(&rep->out, &drop);
    }
    return rc;
}

enum size_change { SIZE_GROW, SIZE_APPEND, SIZE_UNDO };

/* Shared shape of SIZE, APPEND and SIZE_UNDO: a read-modify-write of one
 * file's size under the record's lock. The data key guards against a path
 * that was replaced or renamed since the client opened it. Answers the
 * size before and after. */
static int update_size(struct server *srv, struct rpc_reader *req, struct reply *rep,
                       enum size_change how)
{
    struct target t;
    target_take(req, &t);
    uint64_t data_key = rpc_get_u64(req), value = rpc_get_u64(req);
    uint64_t to = how == SIZE_UNDO ? rpc_get_u64(req) : 0;
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0 && (rec.key != data_key || !S_ISREG(rec.mode)))
        rc = -ENOENT;
    if (rc == 0)
        rc = access_may(rep, &rec, W_OK);
    uint64_t before = rec.size;
    if (rc == 0) {
        if (how == SIZE_APPEND)
            rec.size += value;
        else if (how == SIZE_GROW)
            rec.size = value > rec.size ? value : rec.size;
        else if (rec.size == value)   /* UNDO: only if nobody grew it since */
            rec.size = to;
        rec.mtime_ns = rec.ctime_ns = now_ns();
        if (rec.size != before || how == SIZE_GROW)
            rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    if (rc == 0) {
        rpc_put_u64(&rep->out, before);
        rpc_put_u64(&rep->out, rec.size);
    }
    return rc;
}

int op_size(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    return update_size(srv, req, rep, SIZE_GROW);
}

int op_append(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    return update_size(srv, req, rep, SIZE_APPEND);
}

int op_size_undo(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    return update_size(srv, req, rep, SIZE_UNDO);
}

int op_truncate(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint64_t length = rpc_get_u64(req);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec, before;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0 && S_ISDIR(rec.mode))
        rc = -EISDIR;
    if (rc == 0)
        rc = access_may(rep, &rec, W_OK);
    if (rc == 0) {
        before = rec;
        rec.size = length;
        rec.mtime_ns = rec.ctime_ns = now_ns();
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    if (rc == 0) {
        if (length < before.size)
            chunks_truncate(srv, before.key, length, before.size);
        struct fs_cap drop;
        access_cap_drop(srv, rep, before.key, &drop);
        fs_record_put(&rep->out, &before);
        fs_cap_put(&rep->out, &drop);
    }
    return rc;
}

int op_setattr(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t what = rpc_get_u32(req), mode = rpc_get_u32(req);
    int64_t atime = rpc_get_i64(req), mtime = rpc_get_i64(req);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0)
        rc = access_owns(rep, &rec);   /* chmod and utimes: the owner's */
    if (rc == 0) {
        if (what & FS_SET_MODE)
            rec.mode = (rec.mode & ~07777u) | (mode & 07777);
        if (what & FS_SET_ATIME)
            rec.atime_ns = atime;
        if (what & FS_SET_MTIME)
            rec.mtime_ns = mtime;
        rec.ctime_ns = now_ns();
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    return rc;
}

int op_put(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    struct fs_record rec, old;
    fs_record_get(req, &rec);
    uint32_t flags = rpc_get_u32(req);
    struct fs_cap own, parent;
    fs_cap_get(req, &own);
    fs_cap_get(req, &parent);
    int rc = target_check(srv, req, &t);
    if (rc < 0 || (rc = access_parent_check(srv, rep, t.path, &parent)) < 0)
        return rc;
    if (!S_ISREG(rec.mode) && !S_ISDIR(rec.mode))
        return -EINVAL;
    /* The record names a data key: only one its caller owns (else a user
     * could make itself a record, and so capabilities, for another's). */
    if (S_ISREG(rec.mode) && (rc = access_cap_check(srv, rep, rec.key, &own, FS_CAP_OWN)) < 0)
        return rc == -EKEYEXPIRED ? -EACCES : rc;
    pthread_mutex_lock(t.lock);
    int had;
    rc = lookup_for_create(srv, &t, flags, &old, &had);
    if (rc == 0 && had && S_ISDIR(old.mode) && !S_ISDIR(rec.mode))
        rc = -EISDIR;
    else if (rc == 0 && had && !S_ISDIR(old.mode) && S_ISDIR(rec.mode))
        rc = -ENOTDIR;
    /* A rename's new record: a user moves only what it owns, and replaces
     * only what it owns (the record says whose it is; the caller may not
     * make it another's). */
    if (rc == 0 && rep->caller && rep->caller->uid != 0 &&
        (rec.uid != rep->caller->uid || (had && old.uid != rep->caller->uid)))
        rc = -EPERM;
    if (rc == 0) {
        rec.ctime_ns = now_ns();
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    if (rc < 0)
        return rc;
    int replaced = had && S_ISREG(old.mode) && old.key != rec.key;
    if (replaced)
        chunks_truncate(srv, old.key, 0, old.size);
    struct fs_cap drop;
    access_cap_drop(srv, rep, replaced ? old.key : 0, &drop);
    rpc_put_u64(&rep->out, replaced ? old.key : 0);
    rpc_put_u64(&rep->out, replaced ? old.size : 0);
    rpc_put_u32(&rep->out, had ? old.mode : 0);
    fs_cap_put(&rep->out, &drop);
    return 0;
}

int op_remove_if(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint64_t data_key = rpc_get_u64(req);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(t.lock);
    struct fs_record rec;
    rc = get_record(srv, t.key, t.klen, &rec);
    if (rc == 0 && rec.key != data_key)
        rc = -ENOENT;
    if (rc == 0)
        rc = access_owns(rep, &rec);
    if (rc == 0)
        rc = del_record(srv, t.key, t.klen);
    if (rc == 0 && S_ISDIR(rec.mode))
        dirs_forget(srv);
    pthread_mutex_unlock(t.lock);
    return rc;
}

/* A LIST answer stops at this many payload bytes; the client asks again
 * from the last name. */
#define LIST_REPLY_MAX (1u << 20)

struct list_page {
    struct rpc_writer *out;
    uint32_t n, max;
    const struct server *srv;
    const struct reply *rep;
};

static int list_one(void *arg, const char *name, const struct fs_record *rec)
{
    struct list_page *p = arg;
    if (p->n == p->max || p->out->len > LIST_REPLY_MAX)
        return 1;
    rpc_put_str(p->out, name);
    rpc_put_u32(p->out, rec->mode);
    rpc_put_u64(p->out, access_key(p->srv, p->rep, rec));
    p->n++;
    return 0;
}

int op_list(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    const char *dir = rpc_get_str(req), *after = rpc_get_str(req);
    uint32_t max = rpc_get_u32(req);
    struct fs_cap cap;
    fs_cap_get(req, &cap);
    if (!dir || !after || !rpc_reader_done(req))
        return -EBADMSG;
    int crc = access_dir_check(srv, rep, dir, strlen(dir), &cap, FS_CAP_READ);
    if (crc < 0)
        return crc;
    /* The count goes first but is known last: patch it in afterwards. */
    size_t count_at = rep->out.len;
    rpc_put_u32(&rep->out, 0);
    struct list_page page = { &rep->out, 0, max, srv, rep };
    int rc = meta_scan_dir(srv, dir, after, list_one, &page);
    if (rc < 0)
        return rc;
    rpc_put_u32(&rep->out, rc == 1);
    rpc_patch_u32(&rep->out, count_at, page.n);
    return 0;
}

int op_create_write(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    struct target t;
    target_take(req, &t);
    uint32_t mode = rpc_get_u32(req), flags = rpc_get_u32(req);
    uint64_t data_key = rpc_get_u64(req), size = rpc_get_u64(req);
    int64_t mtime = (flags & FS_CREATE_MTIME) ? rpc_get_i64(req) : 0;
    struct fs_cap parent;
    fs_cap_get(req, &parent);
    uint32_t len = rpc_get_u32(req);
    data_key = access_new_key(srv, rep, data_key);
    /* The data: what is in memory, then (a large one) what is still in the
     * socket. */
    const void *data;
    size_t have = rpc_get_rest(req, &data);
    int rc = target_check(srv, req, &t);
    if (rc < 0)
        return rc;
    if (have + (rep->rest ? rep->rest->left : 0) != len)
        return -EBADMSG;
    if (len > srv->chunk_size || len > size)
        return -EINVAL;
    /* The data first, under the new key and without the record's lock (a
     * streamed chunk takes as long as the client needs to send it): if it
     * does not fit, the old file is still whole. */
    if (len > 0 && (rc = chunks_write(srv, data_key, 0, 0, data, have, rep->rest)) < 0) {
        chunks_truncate(srv, data_key, 0, len);     /* a part streamed before a failure */
        return rc;
    }
    pthread_mutex_lock(t.lock);
    struct fs_record rec, old;
    int had;
    rc = lookup_for_create(srv, &t, flags, &old, &had);
    if (rc == 0 && had && S_ISDIR(old.mode))
        rc = -EISDIR;
    if (rc == 0 && had)
        rc = access_may(rep, &old, W_OK);   /* replacing its content */
    else if (rc == 0)
        rc = access_parent_check(srv, rep, t.path, &parent);   /* a new entry */
    if (rc == 0) {
        int64_t now = now_ns();
        rec = (struct fs_record){ .mode = S_IFREG | (mode & 07777), .size = size,
                                  .key = data_key, .atime_ns = now,
                                  .mtime_ns = (flags & FS_CREATE_MTIME) ? mtime : now,
                                  .ctime_ns = now };
        access_stamp(srv, rep, &rec);
        if (had) {   /* still its owner's */
            rec.uid = old.uid;
            rec.gid = old.gid;
        }
        rc = put_record(srv, t.key, t.klen, &rec);
    }
    pthread_mutex_unlock(t.lock);
    if (rc < 0) {
        chunks_truncate(srv, data_key, 0, len);
        return rc;
    }
    int replaced = had && old.key != data_key;
    if (replaced)
        chunks_truncate(srv, old.key, 0, old.size);
    struct fs_cap cap, drop;
    access_cap_for(srv, rep, NULL, &rec, &cap);
    access_cap_drop(srv, rep, replaced ? old.key : 0, &drop);
    rpc_put_u64(&rep->out, replaced ? old.key : 0);
    rpc_put_u64(&rep->out, replaced ? old.size : 0);
    fs_cap_put(&rep->out, &drop);
    rpc_put_u64(&rep->out, data_key);
    fs_cap_put(&rep->out, &cap);
    return 0;
}
