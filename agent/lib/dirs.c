/* dirs: a directory listing is a snapshot taken at opendir: every server is
 * asked for the entries it holds under the directory (in pages), and the
 * union is sorted by name. "." and ".." come first, as from a kernel file
 * system. The paging is shared with adafs_list_plus (batch.c). */
#include "client.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dir_entry {
    char *name;
    unsigned char type;
    uint64_t ino;
};

struct adafs_dir {
    struct dir_entry *entries;
    size_t n, cap;
    size_t pos;
};

static int add_entry(struct adafs_dir *d, const char *name, uint32_t mode, uint64_t ino)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        struct dir_entry *p = realloc(d->entries, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        d->entries = p;
        d->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return -ENOMEM;
    d->entries[d->n++] = (struct dir_entry){ copy, S_ISDIR(mode) ? DT_DIR : DT_REG, ino };
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct dir_entry *)a)->name, ((const struct dir_entry *)b)->name);
}

/* Reads one page answer; sets *more and copies the last name into after. */
static int take_page(void *arg, const struct call *c, int *more, char *after)
{
    struct adafs_dir *d = arg;
    struct rpc_reader r;
    call_reader(c, &r);
    uint32_t n = rpc_get_u32(&r);
    for (uint32_t i = 0; i < n && rpc_reader_ok(&r); i++) {
        const char *name = rpc_get_str(&r);
        uint32_t mode = rpc_get_u32(&r);
        uint64_t key = rpc_get_u64(&r);
        if (!name)
            break;
        int rc = add_entry(d, name, mode, key);
        if (rc < 0)
            return rc;
        snprintf(after, FS_PATH_MAX, "%s", name);
    }
    *more = (int)rpc_get_u32(&r);
    return rpc_reader_done(&r) ? 0 : -EIO;
}

int list_pages(adafs *fs, const char *p, uint16_t op, uint32_t data_max, page_fn take,
               void *arg)
{
    int nservers = fs->inst.nservers, rc = 0;
    struct call *calls = calloc((size_t)nservers, sizeof(*calls));
    int *server = calloc((size_t)nservers, sizeof(*server));
    char (*after)[FS_PATH_MAX] = calloc((size_t)nservers, FS_PATH_MAX);
    if (!calls || !server || !after) {
        rc = -ENOMEM;
        goto out;
    }
    /* Ask every server; those with more to say are asked again. */
    int pending = nservers, first = 1;
    for (int s = 0; s < nservers; s++)
        server[s] = s;
    struct fs_cap cap;
    dir_cap(fs, p, &cap);
    while (rc == 0 && pending > 0) {
        for (int i = 0; i < pending; i++) {
            call_init(&calls[i], server[i], op);
            rpc_put_str(&calls[i].req, p);
            rpc_put_str(&calls[i].req, after[server[i]]);
            rpc_put_u32(&calls[i].req, LIST_PAGE);
            if (op == FS_LIST_PLUS)
                rpc_put_u32(&calls[i].req, data_max);
            fs_cap_put(&calls[i].req, &cap);
        }
        fs_call(fs, calls, pending);
        /* A server several users share wants the directory's capability
         * (proto.h): the first round is asked again with it. */
        int expired = 0;
        for (int i = 0; i < pending && first; i++)
            expired |= calls[i].status == -EKEYEXPIRED;
        if (expired) {
            for (int i = 0; i < pending; i++)
                call_free(&calls[i]);
            first = 0;
            rc = dir_cap_learn(fs, p);
            dir_cap(fs, p, &cap);
            continue;
        }
        first = 0;
        int still = 0;
        for (int i = 0; i < pending; i++) {
            int more = 0;
            if (rc == 0)
                rc = calls[i].status == -EKEYEXPIRED ? -EACCES
                   : calls[i].status < 0             ? calls[i].status
                                                     : take(arg, &calls[i], &more, after[server[i]]);
            if (more)
                server[still++] = server[i];
            call_free(&calls[i]);
        }
        pending = still;
    }
out:
    free(calls);
    free(server);
    free(after);
    return rc;
}

int adafs_opendir(adafs *fs, const char *path, adafs_dir **out)
{
    char p[FS_PATH_MAX];
    struct fs_record rec;
    int rc = lookup(fs, path, p, &rec);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(rec.mode))
        return -ENOTDIR;
    struct adafs_dir *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    rc = add_entry(d, ".", S_IFDIR, rec.key);
    if (rc == 0)
        rc = add_entry(d, "..", S_IFDIR, 0);
    if (rc == 0)
        rc = list_pages(fs, p, FS_LIST, 0, take_page, d);
    if (rc < 0) {
        adafs_closedir(d);
        return rc;
    }
    qsort(d->entries + 2, d->n - 2, sizeof(*d->entries), by_name);
    *out = d;
    return 0;
}

int adafs_readdir(adafs_dir *dir, struct adafs_dirent *ent)
{
    if (dir->pos >= dir->n)
        return 0;
    struct dir_entry *e = &dir->entries[dir->pos++];
    ent->name = e->name;
    ent->type = e->type;
    ent->ino = e->ino;
    return 1;
}

void adafs_rewinddir(adafs_dir *dir)
{
    dir->pos = 0;
}

long adafs_telldir(adafs_dir *dir)
{
    return (long)dir->pos;
}

void adafs_seekdir(adafs_dir *dir, long pos)
{
    dir->pos = pos < 0 ? 0 : (size_t)pos > dir->n ? dir->n : (size_t)pos;
}

void adafs_closedir(adafs_dir *dir)
{
    for (size_t i = 0; i < dir->n; i++)
        free(dir->entries[i].name);
    free(dir->entries);
    free(dir);
}
