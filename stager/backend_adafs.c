/* backend_adafs: a job's file system through libadafs (no LD_PRELOAD).
 *
 * adafs has no symlinks and runs as the job user, so path-based calls are
 * safe here; directories carry their absolute path inside the file system.
 * Small files go in with adafs_create_batch (one request per server for
 * all the small files a copy thread has ready in one directory) and come
 * out with adafs_read_batch (records and data of many files at once). */
#include "backend.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adafs.h"

#define FS(b) ((adafs *)(b)->fs)
/* One request naming n files or directories (see struct backend: ops). */
#define MD(b, n) BACKEND_COUNT((b), (n))
/* The connection an open file was opened on. */
#define AFS(f) (((struct afile *)(f))->fs)

/* The connection for the next file's data, in turn. */
static adafs *next_file_fs(struct backend *b)
{
    unsigned turn = __atomic_fetch_add(&b->next_file_fs, 1, __ATOMIC_RELAXED);
    return b->file_fs[turn % BACKEND_ADAFS_CONNECTIONS];
}

static int new_dir(struct backend *b, char *path, struct bdir **out)
{
    struct bdir *d = malloc(sizeof(*d));
    if (!d || !path) {
        free(d);
        free(path);
        return -ENOMEM;
    }
    *d = (struct bdir){ b, -1, path };
    *out = d;
    return 0;
}

static char *child(struct bdir *d, const char *name)
{
    return backend_join(d->path, name);
}

static int adafs_root_open(struct backend *b, const char *path, int create,
                           struct bdir **out, struct stat *st)
{
    if (create) {
        int rc = backend_make_path(b, path);
        if (rc < 0)
            return rc;
    }
    MD(b, 1);
    int rc = adafs_stat(FS(b), path, st);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(st->st_mode))
        return -ENOTDIR;
    return new_dir(b, strdup(path), out);
}

static int adafs_dir_open(struct bdir *parent, const char *name, int follow,
                          struct bdir **out, struct stat *st)
{
    char *p = child(parent, name);
    if (!p)
        return -ENOMEM;
    MD(parent->b, 1);
    int rc = adafs_stat(FS(parent->b), p, st);
    if (rc == 0 && !S_ISDIR(st->st_mode))
        rc = -ENOTDIR;
    if (rc < 0) {
        free(p);
        return rc;
    }
    return new_dir(parent->b, p, out);
}

/* adafs has no symlinks: rel is simply a longer path. */
static int adafs_dir_open_rel(struct bdir *root, const char *rel, int follow,
                              struct bdir **out, struct stat *st)
{
    if (!*rel) {
        char *p = strdup(root->path);
        MD(root->b, 1);
        int rc = p ? adafs_stat(FS(root->b), p, st) : -ENOMEM;
        if (rc == 0 && !S_ISDIR(st->st_mode))
            rc = -ENOTDIR;
        if (rc < 0) {
            free(p);
            return rc;
        }
        return new_dir(root->b, p, out);
    }
    return adafs_dir_open(root, rel, follow, out, st);
}

static int adafs_dir_make(struct bdir *parent, const char *name, mode_t mode)
{
    char *p = child(parent, name);
    if (!p)
        return -ENOMEM;
    MD(parent->b, 1);
    int rc = adafs_mkdir(FS(parent->b), p, mode);
    free(p);
    return rc;
}

static int list_opening(struct bdir *d, bdir_list_cb cb, void *arg);

static int adafs_dir_list(struct bdir *d, int open_files, bdir_list_cb cb, void *arg)
{
    if (open_files)
        return list_opening(d, cb, arg);
    adafs_dir *dir;
    MD(d->b, 1);
    int rc = adafs_opendir(FS(d->b), d->path, &dir);
    if (rc < 0)
        return rc;
    struct adafs_dirent ent;
    unsigned n = 0;
    while ((rc = adafs_readdir(dir, &ent)) == 1) {
        if (ent.name[0] == '.' && (!ent.name[1] || (ent.name[1] == '.' && !ent.name[2])))
            continue;
        if (++n % BACKEND_LIST_PAGE == 0)
            MD(d->b, 1);
        rc = cb(arg, ent.name, ent.type, NULL);
        if (rc < 0)
            break;
    }
    adafs_closedir(dir);
    return rc < 0 ? rc : 0;
}

static int set_path_attrs(struct backend *b, const char *path, mode_t mode,
                          const struct timespec *mtime)
{
    MD(b, mtime ? 2 : 1);
    int rc = adafs_chmod(FS(b), path, mode & 07777);
    if (rc < 0 || !mtime)
        return rc;
    struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, *mtime };
    return adafs_utimens(FS(b), path, t);
}

static int adafs_dir_set_attrs(struct bdir *d, mode_t mode, const struct timespec *mtime)
{
    return set_path_attrs(d->b, d->path, mode, mtime);
}

static void adafs_dir_close(struct bdir *d)
{
    if (!d)
        return;
    free(d->path);
    free(d);
}

static int adafs_stat_at(struct bdir *d, const char *name, int follow, struct stat *st)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    MD(d->b, 1);
    int rc = adafs_stat(FS(d->b), p, st);
    free(p);
    return rc;
}

/* A file open on adafs; pre holds the whole file if it came with the
 * open (a small file: one round trip for open, stat and read). */
struct afile {
    struct bfile f;
    adafs *fs;       /* the connection fd belongs to */
    char *pre;
    size_t pre_len;
    int whole;       /* pre is all of the file; f.fd is -1 (nothing open) */
    size_t listed;   /* pre's bytes counted in the backend's listed_bytes */
};

/* Largest file read whole by the open. */
#define PREFETCH_MAX (64u << 10)

enum open_how {
    OPEN_PLAIN,      /* st: if not NULL, filled from the record the open saw */
    OPEN_PREFETCH,   /* O_RDONLY, trying to read the whole file with the open */
    OPEN_KNOWN,      /* O_RDONLY, as st (a batch's record of it) describes: no round trip */
};

static int open_file(struct bdir *d, const char *name, int flags, mode_t mode,
                     struct bfile **out, struct stat *st, enum open_how how)
{
    static _Thread_local char scratch[PREFETCH_MAX];
    char *p = child(d, name);
    struct afile *f = calloc(1, sizeof(*f));
    char *n = strdup(name);
    if (!p || !f || !n) {
        free(p);
        free(f);
        free(n);
        return -ENOMEM;
    }
    size_t got = 0;
    adafs *fs = next_file_fs(d->b);
    if (how != OPEN_KNOWN)        /* a batch's record: counted there */
        MD(d->b, 1);
    unsigned rflags = d->b->parent_known ? ADAFS_PARENT_KNOWN : 0;
    int fd = how == OPEN_PREFETCH ? adafs_open_read_flags(fs, p, st, scratch, sizeof(scratch),
                                                          &got, rflags)
           : how == OPEN_KNOWN    ? adafs_open_known(fs, p, st)
           : st                   ? adafs_open_stat(fs, p, flags, mode, st)
                                  : adafs_open(fs, p, flags, mode);
    free(p);
    if (fd >= 0 && got > 0 && got == (size_t)st->st_size && (f->pre = malloc(got))) {
        memcpy(f->pre, scratch, got);
        f->pre_len = got;
    }
    if (fd < 0) {
        free(f);
        free(n);
        return fd;
    }
    f->f = (struct bfile){ d->b, fd, d, n };
    f->fs = fs;
    *out = &f->f;
    return 0;
}

static int adafs_close_file(struct bfile *f)
{
    struct afile *af = (struct afile *)f;
    int rc = f->fd >= 0 ? adafs_close(AFS(f), f->fd) : 0;
    if (af->listed)
        __atomic_fetch_sub(&f->b->listed_bytes, af->listed, __ATOMIC_RELAXED);
    free(af->pre);
    free(f->name);
    free(af);
    return rc;
}

static int open_read_file(struct bdir *d, const char *name, int follow,
                          struct bfile **out, struct stat *st)
{
    int rc = open_file(d, name, O_RDONLY, 0, out, st, OPEN_PREFETCH);
    if (rc < 0)
        return rc;
    if (!S_ISREG(st->st_mode))
        rc = S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
    if (rc < 0)
        adafs_close_file(*out);
    return rc;
}

static int adafs_open_write(struct bdir *d, const char *name, int truncate, mode_t mode,
                            struct bfile **out)
{
    return open_file(d, name, O_WRONLY | O_CREAT | (truncate ? O_TRUNC : 0), mode, out, NULL, OPEN_PLAIN);
}

/* Of a file read whole by its open: where up to n bytes from off start in
 * pre, and (returned) how many there are. */
static size_t pre_range(const struct afile *af, off_t off, size_t n, const char **start)
{
    size_t at = (uint64_t)off < af->pre_len ? (size_t)off : af->pre_len;
    *start = af->pre + at;
    return af->pre_len - at < n ? af->pre_len - at : n;
}

static ssize_t adafs_pread_file(struct bfile *f, void *buf, size_t n, off_t off)
{
    struct afile *af = (struct afile *)f;
    if (af->pre || af->whole) {
        const char *start;
        size_t k = pre_range(af, off, n, &start);
        memcpy(buf, start, k);
        return (ssize_t)k;
    }
    return adafs_pread(AFS(f), f->fd, buf, n, off);
}

static ssize_t adafs_pwrite_file(struct bfile *f, const void *buf, size_t n, off_t off)
{
    return adafs_pwrite(AFS(f), f->fd, buf, n, off);
}

static ssize_t adafs_pwrite_from(struct bfile *f, struct bfile *src, off_t src_off, size_t n,
                                 off_t off)
{
    return adafs_pwrite_from_fd(AFS(f), f->fd, src->fd, src_off, n, off);
}

static ssize_t adafs_pread_to(struct bfile *f, struct bfile *dst, off_t dst_off, size_t n,
                              off_t off, int keep_holes, int *zeros)
{
    struct afile *af = (struct afile *)f;
    if (af->pre || af->whole) {
        const char *start;
        size_t k = pre_range(af, off, n, &start);
        ssize_t w = pwrite(dst->fd, start, k, dst_off);
        *zeros = 1;        /* whatever the prefetched bytes hold */
        return w < 0 ? -errno : w;
    }
    return keep_holes ? adafs_pread_to_fd_sparse(AFS(f), f->fd, dst->fd, dst_off, n, off, zeros)
                      : adafs_pread_to_fd(AFS(f), f->fd, dst->fd, dst_off, n, off);
}

static int adafs_punch(struct bfile *f, off_t off, off_t len)
{
    /* libadafs has no hole punching: zeros are written over stale data. */
    return backend_write_zeros(f, off, len);
}

static int adafs_truncate_file(struct bfile *f, off_t len)
{
    MD(f->b, 1);
    return adafs_ftruncate(AFS(f), f->fd, len);
}

static int adafs_set_attrs(struct bfile *f, mode_t mode, const struct timespec *mtime)
{
    const char *path = adafs_fd_path(AFS(f), f->fd);
    return path ? set_path_attrs(f->b, path, mode, mtime) : -EBADF;
}

static int adafs_create_write_at(struct bdir *d, const char *name, mode_t mode,
                                 const void *data, size_t len, const struct timespec *mtime)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    /* d was stat'ed as a directory when it was opened. */
    MD(d->b, 1);
    int rc = adafs_create_write_attr(FS(d->b), p, mode & 07777, data, len, mtime,
                                     ADAFS_PARENT_KNOWN);
    free(p);
    return rc < 0 ? rc : 0;
}

static int adafs_create_write_from(struct bdir *d, const char *name, mode_t mode,
                                   struct bfile *src, size_t len, const struct timespec *mtime)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    MD(d->b, 1);
    int rc = adafs_create_write_fd(next_file_fs(d->b), p, mode & 07777, src->fd, 0, len, mtime,
                                   ADAFS_PARENT_KNOWN);
    free(p);
    return rc < 0 ? rc : 0;
}

/* Largest file a create_many takes: what the servers keep inline. */
#define CREATE_MANY_MAX (64u << 10)

static int adafs_create_many(struct bdir *d, struct bcreate *e, size_t n)
{
    struct adafs_create_entry *ce = calloc(n ? n : 1, sizeof(*ce));
    if (!ce)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *p = child(d, e[i].name);
        if (!p)
            rc = -ENOMEM;
        ce[i] = (struct adafs_create_entry){ .path = p, .mode = e[i].mode & 07777,
                                             .data = e[i].data, .len = e[i].len,
                                             .mtime = e[i].mtime };
    }
    /* d was stat'ed as a directory when it was opened. */
    if (rc == 0) {
        MD(d->b, n);
        rc = adafs_create_batch(FS(d->b), ce, n, ADAFS_PARENT_KNOWN);
    }
    for (size_t i = 0; i < n; i++) {
        e[i].status = rc < 0 ? rc : ce[i].status;
        free((char *)ce[i].path);
    }
    free(ce);
    return rc < 0 ? rc : 0;
}

/* A file read whole by a batch: nothing stays open on the file system. */
static int whole_file(struct bdir *d, struct bopen *o, const void *data, size_t len)
{
    struct afile *f = calloc(1, sizeof(*f));
    char *n = strdup(o->name);
    char *pre = len ? malloc(len) : NULL;
    if (!f || !n || (len && !pre)) {
        free(f);
        free(n);
        free(pre);
        return -ENOMEM;
    }
    if (len)
        memcpy(pre, data, len);
    f->pre = pre;
    f->pre_len = len;
    f->whole = 1;
    f->f = (struct bfile){ d->b, -1, d, n };
    o->f = &f->f;
    return 0;
}

/* Data of small files opened by listings and not yet closed, at most: past
 * it a listing hands files over unopened (they are opened in batches as
 * they are copied), so a huge directory of small files cannot fill the
 * stager's memory while its copy tasks wait in the queue. */
#define LISTED_BYTES_MAX (256u << 20)

struct listing {
    struct bdir *d;
    bdir_list_cb cb;
    void *arg;
    unsigned n;
};

static int listed_entry(void *arg, const struct adafs_listed *e)
{
    struct listing *l = arg;
    struct backend *b = l->d->b;
    unsigned char type = S_ISDIR(e->st.st_mode) ? DT_DIR : DT_REG;
    size_t len = (size_t)e->st.st_size;
    struct bopen o = { .name = e->name, .st = e->st };
    int opened = 0;
    if (++l->n % BACKEND_LIST_PAGE == 0)
        MD(b, 1);
    if (e->status == 0 && e->data && S_ISREG(e->st.st_mode)) {
        /* Out of memory: handed over unopened, opened (or its error
         * reported) like any other file later. */
        if (__atomic_add_fetch(&b->listed_bytes, len, __ATOMIC_RELAXED) <= LISTED_BYTES_MAX &&
            whole_file(l->d, &o, e->data, len) == 0) {
            ((struct afile *)o.f)->listed = len;
            opened = 1;
            MD(b, 1);             /* the open this listing saved */
        } else {
            __atomic_fetch_sub(&b->listed_bytes, len, __ATOMIC_RELAXED);
        }
    }
    return l->cb(l->arg, e->name, type, opened ? &o : NULL);
}

/* A listing that opens small files on the way: their records and data
 * come with the directory's pages (LIST_PLUS), no request per file. */
static int list_opening(struct bdir *d, bdir_list_cb cb, void *arg)
{
    struct listing l = { d, cb, arg, 0 };
    MD(d->b, 1);
    int rc = adafs_list_plus(FS(d->b), d->path, PREFETCH_MAX, listed_entry, &l);
    return rc > 0 ? 0 : rc;
}


static int adafs_open_read_many(struct bdir *d, struct bopen *o, size_t n)
{
    struct adafs_read_entry *re = calloc(n ? n : 1, sizeof(*re));
    char *bufs = malloc((n ? n : 1) * (size_t)PREFETCH_MAX);
    int rc = re && bufs ? 0 : -ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *p = child(d, o[i].name);
        if (!p)
            rc = -ENOMEM;
        re[i] = (struct adafs_read_entry){ .path = p, .buf = bufs + i * PREFETCH_MAX,
                                           .cap = PREFETCH_MAX };
    }
    if (rc == 0) {
        MD(d->b, n);
        rc = adafs_read_batch(FS(d->b), re, n);
    }
    for (size_t i = 0; i < n && rc >= 0; i++) {
        struct adafs_read_entry *r = &re[i];
        o[i].f = NULL;
        o[i].rc = r->status;
        if (o[i].rc < 0)
            continue;
        o[i].st = r->st;
        if (!S_ISREG(r->st.st_mode))
            o[i].rc = S_ISDIR(r->st.st_mode) ? -EISDIR : -EINVAL;
        else if (r->got == (size_t)r->st.st_size)
            o[i].rc = whole_file(d, &o[i], r->buf, r->got);
        else   /* bigger than a batch carries: read in pieces */
            o[i].rc = open_file(d, o[i].name, O_RDONLY, 0, &o[i].f, &o[i].st, OPEN_KNOWN);
    }
    for (size_t i = 0; re && i < n; i++)
        free((char *)re[i].path);
    free(re);
    free(bufs);
    return rc < 0 ? rc : 0;
}

static int adafs_unlink_at(struct bdir *d, const char *name)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    MD(d->b, 1);
    int rc = adafs_unlink(FS(d->b), p);
    free(p);
    return rc;
}

static int adafs_rmdir_at(struct bdir *d, const char *name)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    MD(d->b, 1);
    int rc = adafs_rmdir(FS(d->b), p);
    free(p);
    return rc;
}

static int adafs_set_attrs_at(struct bdir *d, const char *name, mode_t mode,
                              const struct timespec *mtime)
{
    char *p = child(d, name);
    if (!p)
        return -ENOMEM;
    int rc = set_path_attrs(d->b, p, mode, mtime);
    free(p);
    return rc;
}

static int adafs_mkdir_path(struct backend *b, const char *path, mode_t mode)
{
    MD(b, 1);
    return adafs_mkdir(FS(b), path, mode);
}

static const struct backend_ops adafs_ops = {
    .name = "adafs",
    .root_open = adafs_root_open,
    .dir_open = adafs_dir_open,
    .dir_open_rel = adafs_dir_open_rel,
    .dir_make = adafs_dir_make,
    .dir_list = adafs_dir_list,
    .dir_set_attrs = adafs_dir_set_attrs,
    .dir_close = adafs_dir_close,
    .stat_at = adafs_stat_at,
    .open_read = open_read_file,
    .open_write = adafs_open_write,
    .pread = adafs_pread_file,
    .pwrite = adafs_pwrite_file,
    .punch = adafs_punch,
    .truncate = adafs_truncate_file,
    .set_attrs = adafs_set_attrs,
    .close = adafs_close_file,
    .create_write = adafs_create_write_at,
    .create_write_from = adafs_create_write_from,
    .unlink_at = adafs_unlink_at,
    .rmdir_at = adafs_rmdir_at,
    .set_attrs_at = adafs_set_attrs_at,
    .mkdir_path = adafs_mkdir_path,
    .create_many = adafs_create_many,
    .create_many_max = CREATE_MANY_MAX,
    .open_read_many = adafs_open_read_many,
    .pwrite_from = adafs_pwrite_from,
    .pread_to = adafs_pread_to,
};

int backend_adafs_init(struct backend *b, const char *instance, char *err, size_t errlen)
{
    adafs *fs[BACKEND_ADAFS_CONNECTIONS];
    for (int i = 0; i < BACKEND_ADAFS_CONNECTIONS; i++) {
        int rc = adafs_connect(&fs[i], instance, err, errlen);
        if (rc < 0) {
            while (i-- > 0)
                adafs_disconnect(fs[i]);
            return rc;
        }
    }
    *b = (struct backend){ .ops = &adafs_ops, .fs = fs[0], .chunk_size = adafs_chunk_size(fs[0]),
                          .create_from_max = ADAFS_CREATE_FD_CHUNKS * adafs_chunk_size(fs[0]) };
    memcpy(b->file_fs, fs, sizeof(fs));
    return 0;
}

void backend_adafs_fini(struct backend *b)
{
    for (int i = 0; b->fs && i < BACKEND_ADAFS_CONNECTIONS; i++)
        adafs_disconnect(b->file_fs[i]);
    b->fs = NULL;
}

void backend_adafs_why(struct backend *b, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; b->fs && i < BACKEND_ADAFS_CONNECTIONS && !buf[0]; i++)
        adafs_last_error(b->file_fs[i], buf, len);
}

int backend_adafs_path(struct backend *b, const char *user_path, char *out, size_t outlen)
{
    const char *mount = adafs_mount_point(FS(b));
    size_t m = mount ? strlen(mount) : 0;
    while (m > 1 && mount[m - 1] == '/')
        m--;
    const char *rest = user_path;
    if (m > 1 && strncmp(user_path, mount, m) == 0 && (user_path[m] == '/' || !user_path[m]))
        rest = user_path + m;
    int n = snprintf(out, outlen, "%s%s", rest[0] == '/' ? "" : "/", rest);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}
