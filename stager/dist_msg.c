/* dist_msg: the records of a distributed stage and their mailbox files. */
#include "dist_msg.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define MBOX_MAGIC 0x4d475341u   /* "ASGM" */
#define FRAME 16                 /* magic, length, XXH3 */

void dist_rel_parent(const char *rel, char *out, size_t outlen)
{
    const char *slash = strrchr(rel, '/');
    size_t n = slash ? (size_t)(slash - rel) : 0;
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, rel, n);
    out[n] = '\0';
}

int dist_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n <= NAME_MAX && !strchr(s, '/') && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

int dist_rel_ok(const char *s)
{
    if (!s || strlen(s) >= PATH_MAX)
        return 0;
    while (*s) {
        size_t n = strcspn(s, "/");
        if (n == 0 || n > NAME_MAX || (n == 1 && s[0] == '.') ||
            (n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        s += n;
        if (*s == '/' && !*++s)
            return 0;               /* a trailing slash */
    }
    return 1;
}

static int root_ok(const char *s)
{
    return s && *s && strlen(s) < PATH_MAX;
}

static void put_loc(struct rpc_writer *w, const struct dloc *l)
{
    rpc_put_str(w, l->rs);
    rpc_put_str(w, l->rd);
    rpc_put_str(w, l->srel);
    rpc_put_str(w, l->drel);
}

static void put_attrs(struct rpc_writer *w, const struct dmsg *m)
{
    rpc_put_u32(w, m->mode);
    rpc_put_i64(w, m->mtime.tv_sec);
    rpc_put_i64(w, m->mtime.tv_nsec);
}

static void put_names(struct rpc_writer *w, const struct dmsg *m)
{
    rpc_put_u32(w, m->n);
    for (uint32_t i = 0; i < m->n; i++) {
        rpc_put_str(w, m->names[i]);
        rpc_put_u32(w, m->types[i]);
    }
}

void dmsg_put(struct rpc_writer *w, const struct dmsg *m)
{
    rpc_put_u32(w, m->type);
    switch (m->type) {
    case DM_HELLO:
        rpc_put_u64(w, m->id);
        rpc_put_u64(w, m->count);
        rpc_put_str(w, m->text);
        break;
    case DM_WELCOME:
        rpc_put_u64(w, m->id);
        break;
    case DM_ITEM:
        rpc_put_u64(w, m->id);
        rpc_put_u32(w, m->kind);
        switch (m->kind) {
        case DK_DIR:
            rpc_put_u64(w, m->dir);
            put_loc(w, &m->loc);
            rpc_put_u32(w, m->flags);
            break;
        case DK_TOP:
            rpc_put_u64(w, m->dir);
            rpc_put_str(w, m->sname);
            rpc_put_str(w, m->dname);
            rpc_put_u64(w, m->count);
            break;
        case DK_FILES:
            rpc_put_u64(w, m->dir);
            put_loc(w, &m->loc);
            rpc_put_u32(w, m->flags);
            put_names(w, m);
            break;
        case DK_PIECES:
            rpc_put_u64(w, m->file);
            put_loc(w, &m->loc);
            rpc_put_str(w, m->sname);
            rpc_put_str(w, m->dname);
            rpc_put_u64(w, m->size);
            put_attrs(w, m);
            rpc_put_u64(w, m->piece_size);
            rpc_put_u64(w, m->first);
            rpc_put_u64(w, m->last);
            rpc_put_u32(w, m->flags);
            break;
        case DK_FINAL_FILE:
            rpc_put_u64(w, m->file);
            put_loc(w, &m->loc);
            rpc_put_str(w, m->dname);
            rpc_put_u64(w, m->size);
            put_attrs(w, m);
            break;
        case DK_FINAL_DIR:
            rpc_put_u64(w, m->dir);
            put_loc(w, &m->loc);
            rpc_put_u32(w, m->n);
            for (uint32_t i = 0; i < m->n; i++) {
                rpc_put_u32(w, m->modes[i]);
                rpc_put_i64(w, m->mtimes[i].tv_sec);
                rpc_put_i64(w, m->mtimes[i].tv_nsec);
            }
            break;
        }
        break;
    case DM_ACK:
        rpc_put_u64(w, m->id);
        rpc_put_u64(w, m->count);
        break;
    case DM_DIRINFO:
        rpc_put_u64(w, m->dir);
        put_attrs(w, m);
        rpc_put_u64(w, m->dev);
        rpc_put_u64(w, m->ino);
        rpc_put_u32(w, m->flags);
        break;
    case DM_SUBDIR:
        rpc_put_u64(w, m->dir);
        rpc_put_u64(w, m->id);
        rpc_put_u64(w, m->child);
        rpc_put_str(w, m->sname);
        rpc_put_str(w, m->dname);
        rpc_put_u32(w, m->flags);
        break;
    case DM_BATCH:
        rpc_put_u64(w, m->dir);
        rpc_put_u64(w, m->id);
        put_names(w, m);
        break;
    case DM_SPLIT:
        rpc_put_u64(w, m->dir);
        put_loc(w, &m->loc);
        rpc_put_str(w, m->sname);
        rpc_put_str(w, m->dname);
        rpc_put_u64(w, m->size);
        put_attrs(w, m);
        rpc_put_u32(w, m->flags);
        break;
    case DM_DONE:
    case DM_STEAL:
    case DM_STOLEN:
        rpc_put_u64(w, m->count);
        break;
    case DM_RETURN:
        rpc_put_u64(w, m->id);
        break;
    case DM_ABORT:
        rpc_put_str(w, m->text);
        break;
    case DM_BYE:
        break;
    }
}

static int get_loc(struct rpc_reader *r, struct dloc *l, const char **why)
{
    l->rs = rpc_get_str(r);
    l->rd = rpc_get_str(r);
    l->srel = rpc_get_str(r);
    l->drel = rpc_get_str(r);
    if (!rpc_reader_ok(r))
        return 0;
    if (!root_ok(l->rs) || !root_ok(l->rd)) {
        *why = "a root that is empty or too long";
        return -EPROTO;
    }
    if (!dist_rel_ok(l->srel) || !dist_rel_ok(l->drel)) {
        *why = "a relative path with an empty, '.' or '..' component";
        return -EPROTO;
    }
    return 0;
}

static void get_attrs(struct rpc_reader *r, struct dmsg *m)
{
    m->mode = rpc_get_u32(r);
    m->mtime.tv_sec = (time_t)rpc_get_i64(r);
    m->mtime.tv_nsec = (long)rpc_get_i64(r);
}

static int get_names(struct rpc_reader *r, struct dmsg *m, const char **why)
{
    m->n = rpc_get_u32(r);
    if (!rpc_reader_ok(r))
        return 0;
    if (m->n == 0 || m->n > DIST_BATCH) {
        *why = "a batch of no names or too many";
        return -EPROTO;
    }
    for (uint32_t i = 0; i < m->n; i++) {
        m->names[i] = rpc_get_str(r);
        uint32_t t = rpc_get_u32(r);
        if (!rpc_reader_ok(r))
            return 0;
        if (!dist_name_ok(m->names[i]) || (t != DT_REG && t != DT_LNK)) {
            *why = "a file name that is not one entry, or not a file";
            return -EPROTO;
        }
        m->types[i] = (unsigned char)t;
    }
    return 0;
}

static int names_ok(const struct dmsg *m, const char **why)
{
    if (dist_name_ok(m->sname) && dist_name_ok(m->dname))
        return 0;
    *why = "an entry name that is empty, '.', '..' or has a '/'";
    return -EPROTO;
}

int dmsg_get(struct rpc_reader *r, struct dmsg *m, const char **why)
{
    memset(m, 0, offsetof(struct dmsg, names));
    *why = "a truncated record";
    int rc = 0;
    m->type = rpc_get_u32(r);
    switch (m->type) {
    case DM_HELLO:
        m->id = rpc_get_u64(r);
        m->count = rpc_get_u64(r);
        m->text = rpc_get_str(r);
        break;
    case DM_WELCOME:
        m->id = rpc_get_u64(r);
        break;
    case DM_ITEM:
        m->id = rpc_get_u64(r);
        m->kind = rpc_get_u32(r);
        switch (m->kind) {
        case DK_DIR:
            m->dir = rpc_get_u64(r);
            rc = get_loc(r, &m->loc, why);
            m->flags = rpc_get_u32(r);
            break;
        case DK_TOP:
            m->dir = rpc_get_u64(r);
            m->sname = rpc_get_str(r);
            m->dname = rpc_get_str(r);
            m->count = rpc_get_u64(r);
            if (rpc_reader_ok(r) && (!root_ok(m->sname) || !root_ok(m->dname))) {
                *why = "a request path that is empty or too long";
                rc = -EPROTO;
            }
            break;
        case DK_FILES:
            m->dir = rpc_get_u64(r);
            rc = get_loc(r, &m->loc, why);
            m->flags = rpc_get_u32(r);
            if (rc == 0)
                rc = get_names(r, m, why);
            break;
        case DK_PIECES:
            m->file = rpc_get_u64(r);
            rc = get_loc(r, &m->loc, why);
            m->sname = rpc_get_str(r);
            m->dname = rpc_get_str(r);
            m->size = rpc_get_u64(r);
            get_attrs(r, m);
            m->piece_size = rpc_get_u64(r);
            m->first = rpc_get_u64(r);
            m->last = rpc_get_u64(r);
            m->flags = rpc_get_u32(r);
            if (rc == 0 && rpc_reader_ok(r))
                rc = names_ok(m, why);
            if (rc == 0 && rpc_reader_ok(r) &&
                (m->piece_size == 0 || m->first >= m->last ||
                 m->last > (m->size + m->piece_size - 1) / m->piece_size)) {
                *why = "pieces outside the file";
                rc = -EPROTO;
            }
            break;
        case DK_FINAL_FILE:
            m->file = rpc_get_u64(r);
            rc = get_loc(r, &m->loc, why);
            m->dname = rpc_get_str(r);
            m->size = rpc_get_u64(r);
            get_attrs(r, m);
            if (rc == 0 && rpc_reader_ok(r) && !dist_name_ok(m->dname)) {
                *why = "an entry name that is empty, '.', '..' or has a '/'";
                rc = -EPROTO;
            }
            break;
        case DK_FINAL_DIR:
            m->dir = rpc_get_u64(r);
            rc = get_loc(r, &m->loc, why);
            m->n = rpc_get_u32(r);
            if (rc || !rpc_reader_ok(r))
                break;
            /* As many levels as the path has, the root's included. */
            uint32_t levels = 1;
            for (const char *c = m->loc.drel; *c; c++)
                levels += *c == '/' || c == m->loc.drel;
            if (m->n == 0 || m->n > DIST_BATCH || m->n > levels) {
                *why = "directories to finalize above the root, or none";
                rc = -EPROTO;
                break;
            }
            for (uint32_t i = 0; i < m->n; i++) {
                m->modes[i] = rpc_get_u32(r);
                m->mtimes[i].tv_sec = (time_t)rpc_get_i64(r);
                m->mtimes[i].tv_nsec = (long)rpc_get_i64(r);
                if (m->mtimes[i].tv_nsec < 0 || m->mtimes[i].tv_nsec >= 1000000000L) {
                    *why = "an mtime with nanoseconds out of range";
                    rc = -EPROTO;
                    break;
                }
            }
            break;
        default:
            if (rpc_reader_ok(r)) {
                *why = "an item of an unknown kind";
                rc = -EPROTO;
            }
        }
        break;
    case DM_ACK:
        m->id = rpc_get_u64(r);
        m->count = rpc_get_u64(r);
        break;
    case DM_DIRINFO:
        m->dir = rpc_get_u64(r);
        get_attrs(r, m);
        m->dev = rpc_get_u64(r);
        m->ino = rpc_get_u64(r);
        m->flags = rpc_get_u32(r);
        break;
    case DM_SUBDIR:
        m->dir = rpc_get_u64(r);
        m->id = rpc_get_u64(r);
        m->child = rpc_get_u64(r);
        m->sname = rpc_get_str(r);
        m->dname = rpc_get_str(r);
        m->flags = rpc_get_u32(r);
        if (rpc_reader_ok(r))
            rc = names_ok(m, why);
        break;
    case DM_BATCH:
        m->dir = rpc_get_u64(r);
        m->id = rpc_get_u64(r);
        rc = get_names(r, m, why);
        break;
    case DM_SPLIT:
        m->dir = rpc_get_u64(r);
        rc = get_loc(r, &m->loc, why);
        m->sname = rpc_get_str(r);
        m->dname = rpc_get_str(r);
        m->size = rpc_get_u64(r);
        get_attrs(r, m);
        m->flags = rpc_get_u32(r);
        if (rc == 0 && rpc_reader_ok(r))
            rc = names_ok(m, why);
        break;
    case DM_DONE:
    case DM_STEAL:
    case DM_STOLEN:
        m->count = rpc_get_u64(r);
        break;
    case DM_RETURN:
        m->id = rpc_get_u64(r);
        break;
    case DM_ABORT:
        m->text = rpc_get_str(r);
        break;
    case DM_BYE:
        break;
    default:
        if (rpc_reader_ok(r)) {
            *why = "a record of an unknown type";
            return -EPROTO;
        }
    }
    if (rc < 0)
        return rc;
    if (!rpc_reader_ok(r))
        return -EPROTO;
    if (m->mtime.tv_nsec < 0 || m->mtime.tv_nsec >= 1000000000L) {
        *why = "an mtime with nanoseconds out of range";
        return -EPROTO;
    }
    return 0;
}

int mbox_put(struct bdir *dir, const char *name, const void *payload, size_t len)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, MBOX_MAGIC);
    rpc_put_u32(&w, (uint32_t)len);
    rpc_put_u64(&w, XXH3_64bits(payload, len));
    rpc_put_raw(&w, payload, len);
    int rc = rpc_writer_ok(&w) ? dir->b->ops->create_write(dir, name, S_IRUSR | S_IWUSR,
                                                           w.data, w.len, NULL)
                               : -ENOMEM;
    rpc_writer_free(&w);
    return rc;
}

int mbox_get(struct bdir *dir, const char *name, void **payload, size_t *len)
{
    const struct backend_ops *ops = dir->b->ops;
    struct bfile *f;
    struct stat st;
    int rc = ops->open_read(dir, name, 0, &f, &st);
    if (rc < 0)
        return rc;
    if (st.st_size < FRAME || st.st_size > FRAME + DIST_MSG_MAX) {
        ops->close(f);
        return st.st_size < FRAME ? -EAGAIN : -EFBIG;
    }
    size_t size = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(size);
    if (!buf) {
        ops->close(f);
        return -ENOMEM;
    }
    while (got < size) {
        ssize_t r = ops->pread(f, buf + got, size - got, (off_t)got);
        if (r <= 0) {
            rc = r < 0 ? (int)r : -EAGAIN;
            break;
        }
        got += (size_t)r;
    }
    ops->close(f);
    struct rpc_reader r;
    rpc_reader_init(&r, buf, size);
    uint32_t magic = rpc_get_u32(&r), plen = rpc_get_u32(&r);
    uint64_t sum = rpc_get_u64(&r);
    if (rc == 0 && (magic != MBOX_MAGIC || plen != size - FRAME ||
                    sum != XXH3_64bits(buf + FRAME, plen)))
        rc = -EAGAIN;              /* still being written */
    if (rc < 0) {
        free(buf);
        return rc;
    }
    memmove(buf, buf + FRAME, plen);
    *payload = buf;
    *len = plen;
    return 0;
}

int mbox_drop(struct bdir *dir, const char *name)
{
    return dir->b->ops->unlink_at(dir, name);
}
