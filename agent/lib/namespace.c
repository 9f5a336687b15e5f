/* namespace: calls on paths. Each one is one batch of requests where the
 * semantics allow (a parent check on another server rides along with the
 * operation and is undone if the parent turns out to be missing). */
#include "client.h"
#include "hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define ROOT_INO 1

/* The root has no record on any server: it looks like the caller's. */
static void root_record(const adafs *fs, struct fs_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->mode = S_IFDIR | 0755;
    rec->key = ROOT_INO;
    rec->uid = (uint32_t)fs->uid;
    rec->gid = (uint32_t)fs->gid;
}

void record_to_stat(const adafs *fs, const struct fs_record *rec, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_dev = FS_DEV;
    st->st_ino = (ino_t)rec->key;
    st->st_mode = rec->mode;
    st->st_nlink = S_ISDIR(rec->mode) ? 2 : 1;
    st->st_uid = rec->uid;
    st->st_gid = rec->gid;
    st->st_size = S_ISDIR(rec->mode) ? 4096 : (off_t)rec->size;
    st->st_blksize = (blksize_t)fs->inst.chunk_size;
    st->st_blocks = (blkcnt_t)((st->st_size + 511) / 512);
    st->st_atim.tv_sec = rec->atime_ns / 1000000000;
    st->st_atim.tv_nsec = rec->atime_ns % 1000000000;
    st->st_mtim.tv_sec = rec->mtime_ns / 1000000000;
    st->st_mtim.tv_nsec = rec->mtime_ns % 1000000000;
    st->st_ctim.tv_sec = rec->ctime_ns / 1000000000;
    st->st_ctim.tv_nsec = rec->ctime_ns % 1000000000;
}

/* Decodes a record answer and the capability after it (cap: NULL if not
 * wanted); -EIO if the server sent something else. */
static int take_record_cap(const struct call *c, struct fs_record *rec, struct fs_cap *cap)
{
    struct rpc_reader r;
    struct fs_cap ignored;
    call_reader(c, &r);
    fs_record_get(&r, rec);
    fs_cap_get(&r, cap ? cap : &ignored);
    return rpc_reader_ok(&r) ? 0 : -EIO;
}

static int take_record(const struct call *c, struct fs_record *rec)
{
    return take_record_cap(c, rec, NULL);
}

int stat_record_cap(adafs *fs, const char *path, struct fs_record *rec, struct fs_cap *cap)
{
    if (cap)
        *cap = (struct fs_cap){ 0 };
    if (strcmp(path, "/") == 0) {
        root_record(fs, rec);
        return 0;
    }
    struct call c;
    call_init(&c, meta_server(fs, path), FS_STAT);
    rpc_put_str(&c.req, path);
    int rc = fs_call1(fs, &c);
    if (rc == 0)
        rc = take_record_cap(&c, rec, cap);
    call_free(&c);
    return rc;
}

int stat_record(adafs *fs, const char *path, struct fs_record *rec)
{
    return stat_record_cap(fs, path, rec, NULL);
}

static struct dircap *dircap_slot(adafs *fs, const char *dir)
{
    return &fs->dircaps[hash_place_path(dir, DIRCAP_SLOTS)];
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void dir_cap(adafs *fs, const char *dir, struct fs_cap *cap)
{
    *cap = (struct fs_cap){ 0 };
    if (strcmp(dir, "/") == 0 || strlen(dir) >= DIRCAP_PATH_MAX)
        return;
    struct dircap *d = dircap_slot(fs, dir);
    pthread_mutex_lock(&fs->dircap_lock);
    if (d->cap.rights && strcmp(d->path, dir) == 0 &&
        d->cap.expires_ms > wall_ms() + FS_CAP_LIFETIME_MS / 4)
        *cap = d->cap;
    pthread_mutex_unlock(&fs->dircap_lock);
}

void parent_cap(adafs *fs, const char *path, struct fs_cap *cap)
{
    char parent[FS_PATH_MAX];
    path_parent(path, parent);
    dir_cap(fs, parent, cap);
}

void dir_cap_keep(adafs *fs, const char *dir, const struct fs_cap *cap)
{
    if (!cap->rights || strlen(dir) >= DIRCAP_PATH_MAX)
        return;
    struct dircap *d = dircap_slot(fs, dir);
    pthread_mutex_lock(&fs->dircap_lock);
    snprintf(d->path, sizeof(d->path), "%s", dir);
    d->cap = *cap;
    pthread_mutex_unlock(&fs->dircap_lock);
}

int dir_cap_learn(adafs *fs, const char *dir)
{
    struct fs_record rec;
    struct fs_cap cap;
    int rc = stat_record_cap(fs, dir, &rec, &cap);
    if (rc == 0)
        dir_cap_keep(fs, dir, &cap);
    return rc;
}

int parent_cap_learn(adafs *fs, const char *path)
{
    char p[FS_PATH_MAX], parent[FS_PATH_MAX];
    int rc = path_normalize(path, p);
    if (rc < 0)
        return rc;
    path_parent(p, parent);
    return dir_cap_learn(fs, parent);
}

int cap_refresh(adafs *fs, struct open_file *of)
{
    struct fs_record rec;
    struct fs_cap cap;
    int rc = stat_record_cap(fs, of->path, &rec, &cap);
    if (rc == 0 && rec.key != of->key)
        rc = -ESTALE;
    if (rc == 0)
        of->cap = cap;
    return rc == -ENOENT ? -ESTALE : rc;
}

#define ANCESTORS_MAX 64

int refine_enoent(adafs *fs, const char *path)
{
    struct call calls[ANCESTORS_MAX];
    int n = 0;
    for (const char *p = strchr(path + 1, '/'); p && n < ANCESTORS_MAX; p = strchr(p + 1, '/')) {
        char anc[FS_PATH_MAX];
        memcpy(anc, path, (size_t)(p - path));
        anc[p - path] = '\0';
        call_init(&calls[n], meta_server(fs, anc), FS_STAT);
        rpc_put_str(&calls[n].req, anc);
        n++;
    }
    fs_call(fs, calls, n);
    /* Top down: the first ancestor that is missing or not a directory
     * decides. */
    int rc = -ENOENT, decided = 0;
    for (int i = 0; i < n; i++) {
        struct fs_record rec;
        if (!decided && calls[i].status == 0 && take_record(&calls[i], &rec) == 0) {
            if (!S_ISDIR(rec.mode)) {
                rc = -ENOTDIR;
                decided = 1;
            }
        } else if (!decided) {
            rc = calls[i].status < 0 ? calls[i].status : -EIO;
            decided = 1;
        }
        call_free(&calls[i]);
    }
    return rc;
}

void drop_data(adafs *fs, uint64_t key, const struct fs_cap *cap, uint64_t new_size,
               uint64_t old_size, int skip_server)
{
    if (old_size <= new_size)
        return;
    int nservers = fs->inst.nservers, wanted = nservers - (skip_server >= 0);
    uint64_t cs = fs->inst.chunk_size, last = (old_size - 1) / cs;
    uint8_t *mark = calloc((size_t)nservers, 1);
    struct call *calls = calloc((size_t)nservers, sizeof(*calls));
    if (!mark || !calls) {
        free(mark);
        free(calls);
        return;
    }
    int n = 0;
    for (uint64_t i = new_size / cs; i <= last && n < wanted; i++) {
        int s = chunk_server(fs, key, i);
        if (s == skip_server || mark[s])
            continue;
        mark[s] = 1;
        call_init(&calls[n], s, FS_TRUNC_DATA);
        rpc_put_u64(&calls[n].req, key);
        rpc_put_u64(&calls[n].req, new_size);
        rpc_put_u64(&calls[n].req, old_size);
        fs_cap_put(&calls[n].req, cap);
        n++;
    }
    /* A failure leaves chunks behind on a server that is gone or stuck;
     * they die with the instance. Nothing for the caller to do. */
    fs_call(fs, calls, n);
    for (int i = 0; i < n; i++)
        call_free(&calls[i]);
    free(calls);
    free(mark);
}

uint32_t parent_check(adafs *fs, const char *path, struct call *c, int *used)
{
    char parent[FS_PATH_MAX];
    path_parent(path, parent);
    *used = 0;
    if (strcmp(parent, "/") == 0)
        return 0;
    int ps = meta_server(fs, parent);
    if (ps == meta_server(fs, path))
        return FS_CHECK_PARENT;
    call_init(c, ps, FS_STAT);
    rpc_put_str(&c->req, parent);
    *used = 1;
    return 0;
}

static int parent_check_result(adafs *fs, const char *path, struct call *c)
{
    struct fs_record rec;
    struct fs_cap cap;
    int rc = c->status;
    if (rc == 0)
        rc = take_record_cap(c, &rec, &cap);
    if (rc == 0 && !S_ISDIR(rec.mode))
        rc = -ENOTDIR;
    if (rc == 0 && cap.rights) {
        char parent[FS_PATH_MAX];
        path_parent(path, parent);
        dir_cap_keep(fs, parent, &cap);
    }
    return rc;
}

/* Removes a record this call created, when its parent check failed. */
void undo_create(adafs *fs, const char *path, uint64_t key)
{
    struct call c;
    call_init(&c, meta_server(fs, path), FS_REMOVE_IF);
    rpc_put_str(&c.req, path);
    rpc_put_u64(&c.req, key);
    fs_call1(fs, &c);
    call_free(&c);
}

int parent_check_finish(adafs *fs, const char *path, struct call *op, struct call *check,
                        int used, uint64_t key)
{
    int rc = op->status;
    if (!used)
        return rc;
    int prc = parent_check_result(fs, path, check);
    if (prc < 0 && rc == 0)
        undo_create(fs, path, key);
    call_free(check);
    return prc < 0 ? prc : rc;
}

/* lookup without telling a missing entry from a missing or non-directory
 * ancestor: -ENOENT as the entry's server says. */
static int lookup_entry(adafs *fs, const char *path, char *p, struct fs_record *rec)
{
    int rc = path_normalize(path, p);
    return rc == 0 ? stat_record(fs, p, rec) : rc;
}

int lookup(adafs *fs, const char *path, char *p, struct fs_record *rec)
{
    int rc = lookup_entry(fs, path, p, rec);
    return rc == -ENOENT ? refine_enoent(fs, p) : rc;
}

/* flags: 0 or ADAFS_PARENT_KNOWN (a missing entry is ENOENT as is). */
static int stat_flags(adafs *fs, const char *path, struct stat *st, unsigned flags)
{
    char p[FS_PATH_MAX];
    struct fs_record rec;
    int rc = flags & ADAFS_PARENT_KNOWN ? lookup_entry(fs, path, p, &rec)
                                        : lookup(fs, path, p, &rec);
    if (rc == 0)
        record_to_stat(fs, &rec, st);
    return rc;
}

int adafs_stat(adafs *fs, const char *path, struct stat *st)
{
    return stat_flags(fs, path, st, 0);
}

int adafs_stat_entry(adafs *fs, const char *path, struct stat *st)
{
    return stat_flags(fs, path, st, ADAFS_PARENT_KNOWN);
}

int adafs_access(adafs *fs, const char *path, int mode)
{
    struct stat st;
    int rc = adafs_stat(fs, path, &st);
    if (rc < 0 || mode == F_OK)
        return rc;
    if (((mode & R_OK) && !(st.st_mode & S_IRUSR)) || ((mode & W_OK) && !(st.st_mode & S_IWUSR)) ||
        ((mode & X_OK) && !(st.st_mode & S_IXUSR)))
        return -EACCES;
    return 0;
}

static int mkdir_once(adafs *fs, const char *p, mode_t mode)
{
    int ms = meta_server(fs, p), used;
    uint64_t key = new_key(fs, ms);
    struct call calls[2];
    struct fs_cap parent;
    parent_cap(fs, p, &parent);
    uint32_t flags = parent_check(fs, p, &calls[1], &used);
    call_init(&calls[0], ms, FS_MKDIR);
    rpc_put_str(&calls[0].req, p);
    rpc_put_u32(&calls[0].req, (uint32_t)mode);
    rpc_put_u32(&calls[0].req, flags);
    rpc_put_u64(&calls[0].req, key);
    fs_cap_put(&calls[0].req, &parent);
    fs_call(fs, calls, 1 + used);
    int rc = parent_check_finish(fs, p, &calls[0], &calls[1], used, key);
    call_free(&calls[0]);
    return rc;
}

int adafs_mkdir(adafs *fs, const char *path, mode_t mode)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EEXIST);
    if (rc < 0)
        return rc;
    rc = mkdir_once(fs, p, mode);
    if (rc == -EKEYEXPIRED && (rc = parent_cap_learn(fs, p)) == 0)
        rc = mkdir_once(fs, p, mode);
    if (rc == -EKEYEXPIRED)
        rc = -EACCES;
    return rc == -ENOENT ? refine_enoent(fs, p) : rc;
}

static int dir_has_entries_once(adafs *fs, const char *dir)
{
    int n = fs->inst.nservers, rc = 0;
    struct call *calls = calloc((size_t)n, sizeof(*calls));
    if (!calls)
        return -ENOMEM;
    struct fs_cap cap;
    dir_cap(fs, dir, &cap);
    for (int s = 0; s < n; s++) {
        call_init(&calls[s], s, FS_LIST);
        rpc_put_str(&calls[s].req, dir);
        rpc_put_str(&calls[s].req, "");
        rpc_put_u32(&calls[s].req, 1);
        fs_cap_put(&calls[s].req, &cap);
    }
    fs_call(fs, calls, n);
    for (int s = 0; s < n; s++) {
        struct rpc_reader r;
        call_reader(&calls[s], &r);
        if (calls[s].status < 0 && (rc == 0 || calls[s].status == -EKEYEXPIRED))
            rc = calls[s].status;
        else if (calls[s].status == 0 && rpc_get_u32(&r) > 0 && rc == 0)
            rc = 1;
        call_free(&calls[s]);
    }
    free(calls);
    return rc;
}

/* Does any server hold an entry below dir? 1, 0 or -errno. */
static int dir_has_entries(adafs *fs, const char *dir)
{
    int rc = dir_has_entries_once(fs, dir);
    if (rc == -EKEYEXPIRED && (rc = dir_cap_learn(fs, dir)) == 0)
        rc = dir_has_entries_once(fs, dir);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

int adafs_rmdir(adafs *fs, const char *path)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EBUSY);
    if (rc < 0)
        return rc;
    rc = dir_has_entries(fs, p);
    if (rc != 0)
        return rc > 0 ? -ENOTEMPTY : rc;
    struct call c;
    call_init(&c, meta_server(fs, p), FS_REMOVE);
    rpc_put_str(&c.req, p);
    rpc_put_u32(&c.req, 1);
    rpc_put_u32(&c.req, 0);
    rc = fs_call1(fs, &c);
    call_free(&c);
    return rc == -ENOENT ? refine_enoent(fs, p) : rc;
}

int adafs_unlink(adafs *fs, const char *path)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EISDIR);
    if (rc < 0)
        return rc;
    /* Open here: keep the data until the last close (unlink of open files). */
    int keep = files_orphan_path(fs, p, NULL) > 0;
    int ms = meta_server(fs, p);
    struct call c;
    call_init(&c, ms, FS_REMOVE);
    rpc_put_str(&c.req, p);
    rpc_put_u32(&c.req, 0);
    rpc_put_u32(&c.req, (uint32_t)keep);
    rc = fs_call1(fs, &c);
    struct fs_record rec;
    struct fs_cap drop;
    if (rc == 0)
        rc = take_record_cap(&c, &rec, &drop);
    call_free(&c);
    if (rc == -ENOENT)
        return refine_enoent(fs, p);
    if (rc < 0)
        return rc;
    if (!keep)
        drop_data(fs, rec.key, &drop, 0, rec.size, ms);
    else if (files_orphan_path(fs, p, &rec) == 0)
        drop_data(fs, rec.key, &drop, 0, rec.size, -1);   /* what was open was another file */
    return 0;
}

static int rename_once(adafs *fs, const char *from, const char *to);

int adafs_rename(adafs *fs, const char *from, const char *to)
{
    int rc = rename_once(fs, from, to);
    if (rc == -EKEYEXPIRED && (rc = parent_cap_learn(fs, to)) == 0)
        rc = rename_once(fs, from, to);
    return rc == -EKEYEXPIRED ? -EACCES : rc;
}

static int rename_once(adafs *fs, const char *from, const char *to)
{
    char f[FS_PATH_MAX], t[FS_PATH_MAX];
    int rc = path_normalize(from, f);
    if (rc == 0)
        rc = path_normalize(to, t);
    if (rc < 0)
        return rc;
    if (strcmp(f, "/") == 0 || strcmp(t, "/") == 0)
        return -EBUSY;
    size_t flen = strlen(f);
    if (strncmp(t, f, flen) == 0 && t[flen] == '/')
        return -EINVAL;   /* into itself */
    struct call calls[2];
    call_init(&calls[0], meta_server(fs, f), FS_STAT);
    rpc_put_str(&calls[0].req, f);
    call_init(&calls[1], meta_server(fs, t), FS_STAT);
    rpc_put_str(&calls[1].req, t);
    fs_call(fs, calls, 2);
    struct fs_record src, dst;
    struct fs_cap own;   /* the source's: a PUT of its key needs to own it */
    rc = calls[0].status == 0 ? take_record_cap(&calls[0], &src, &own) : calls[0].status;
    int rc_to = calls[1].status == 0 ? take_record(&calls[1], &dst) : calls[1].status;
    call_free(&calls[0]);
    call_free(&calls[1]);
    if (rc == -ENOENT)
        return refine_enoent(fs, f);
    if (rc < 0)
        return rc;
    if (rc_to < 0 && rc_to != -ENOENT)
        return rc_to;
    int to_exists = rc_to == 0;
    if (strcmp(f, t) == 0)
        return 0;
    if (S_ISDIR(src.mode)) {
        if (to_exists && !S_ISDIR(dst.mode))
            return -ENOTDIR;
        if (to_exists && (rc = dir_has_entries(fs, t)) != 0)
            return rc > 0 ? -ENOTEMPTY : rc;
        /* Moving a populated tree would mean moving every record below it;
         * EXDEV makes mv(1) and friends fall back to copy and delete. */
        if ((rc = dir_has_entries(fs, f)) != 0)
            return rc > 0 ? -EXDEV : rc;
    } else if (to_exists && S_ISDIR(dst.mode)) {
        return -EISDIR;
    }
    int ts = meta_server(fs, t), used;
    struct fs_cap parent;
    parent_cap(fs, t, &parent);
    uint32_t flags = parent_check(fs, t, &calls[1], &used);
    call_init(&calls[0], ts, FS_PUT);
    rpc_put_str(&calls[0].req, t);
    fs_record_put(&calls[0].req, &src);
    rpc_put_u32(&calls[0].req, flags);
    fs_cap_put(&calls[0].req, &own);
    fs_cap_put(&calls[0].req, &parent);
    fs_call(fs, calls, 1 + used);
    uint64_t old_key = 0, old_size = 0;
    struct fs_cap drop = { 0 };
    if (calls[0].status == 0) {
        struct rpc_reader r;
        call_reader(&calls[0], &r);
        old_key = rpc_get_u64(&r);
        old_size = rpc_get_u64(&r);
        (void)rpc_get_u32(&r);
        fs_cap_get(&r, &drop);
    }
    rc = parent_check_finish(fs, t, &calls[0], &calls[1], used, src.key);
    call_free(&calls[0]);
    if (rc == -ENOENT)
        return refine_enoent(fs, t);
    if (rc < 0)
        return rc;
    call_init(&calls[0], meta_server(fs, f), FS_REMOVE_IF);
    rpc_put_str(&calls[0].req, f);
    rpc_put_u64(&calls[0].req, src.key);
    rc = fs_call1(fs, &calls[0]);
    call_free(&calls[0]);
    files_rename_path(fs, f, t);
    if (old_key)
        drop_data(fs, old_key, &drop, 0, old_size, ts);
    /* The source vanishing meanwhile (a concurrent rename) is not an error
     * of this rename: the target is in place. */
    return rc == -ENOENT ? 0 : rc;
}

int adafs_truncate(adafs *fs, const char *path, off_t length)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EISDIR);
    if (rc < 0)
        return rc;
    if (length < 0)
        return -EINVAL;
    int ms = meta_server(fs, p);
    struct call c;
    call_init(&c, ms, FS_TRUNCATE);
    rpc_put_str(&c.req, p);
    rpc_put_u64(&c.req, (uint64_t)length);
    rc = fs_call1(fs, &c);
    struct fs_record before;
    struct fs_cap drop;
    if (rc == 0)
        rc = take_record_cap(&c, &before, &drop);
    call_free(&c);
    if (rc == -ENOENT)
        return refine_enoent(fs, p);
    if (rc == 0)
        drop_data(fs, before.key, &drop, (uint64_t)length, before.size, ms);
    return rc;
}

static int setattr(adafs *fs, const char *path, uint32_t what, mode_t mode, int64_t atime,
                   int64_t mtime)
{
    char p[FS_PATH_MAX];
    int rc = path_take(path, p, -EPERM);
    if (rc < 0)
        return rc;
    struct call c;
    call_init(&c, meta_server(fs, p), FS_SETATTR);
    rpc_put_str(&c.req, p);
    rpc_put_u32(&c.req, what);
    rpc_put_u32(&c.req, (uint32_t)mode);
    rpc_put_i64(&c.req, atime);
    rpc_put_i64(&c.req, mtime);
    rc = fs_call1(fs, &c);
    call_free(&c);
    return rc == -ENOENT ? refine_enoent(fs, p) : rc;
}

int adafs_chmod(adafs *fs, const char *path, mode_t mode)
{
    return setattr(fs, path, FS_SET_MODE, mode, 0, 0);
}

int adafs_utimens(adafs *fs, const char *path, const struct timespec times[2])
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns[2];
    uint32_t what = 0;
    for (int i = 0; i < 2; i++) {
        struct timespec t = times ? times[i] : now;
        if (times && t.tv_nsec == UTIME_OMIT)
            continue;
        if (times && t.tv_nsec == UTIME_NOW)
            t = now;
        else if (t.tv_nsec < 0 || t.tv_nsec >= 1000000000)
            return -EINVAL;
        ns[i] = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
        what |= i == 0 ? FS_SET_ATIME : FS_SET_MTIME;
    }
    return setattr(fs, path, what, 0, what & FS_SET_ATIME ? ns[0] : 0,
                   what & FS_SET_MTIME ? ns[1] : 0);
}

int adafs_statvfs(adafs *fs, struct statvfs *st)
{
    int n = fs->inst.nservers, rc = 0;
    struct call *calls = calloc((size_t)n, sizeof(*calls));
    if (!calls)
        return -ENOMEM;
    for (int s = 0; s < n; s++)
        call_init(&calls[s], s, FS_STATFS);
    fs_call(fs, calls, n);
    uint64_t quota = 0, used = 0;
    for (int s = 0; s < n; s++) {
        struct rpc_reader r;
        call_reader(&calls[s], &r);
        uint64_t q = rpc_get_u64(&r), u = rpc_get_u64(&r);
        if (calls[s].status < 0 && rc == 0)
            rc = calls[s].status;
        /* "Unlimited" servers are reported as 1 PiB each. */
        q = q > (1ull << 50) ? 1ull << 50 : q;
        quota += q;
        used += u < q ? u : q;
        call_free(&calls[s]);
    }
    free(calls);
    if (rc < 0)
        return rc;
    memset(st, 0, sizeof(*st));
    st->f_bsize = 4096;
    st->f_frsize = 4096;
    st->f_blocks = quota / 4096;
    st->f_bfree = st->f_bavail = (quota - used) / 4096;
    st->f_files = 1ull << 32;
    st->f_ffree = st->f_favail = 1ull << 32;
    st->f_fsid = FS_DEV;
    st->f_namemax = 255;
    return 0;
}
