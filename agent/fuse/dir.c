/* dir.c: open directories: the listing taken once at opendir, in name
 * order, served by offset to readdir. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse_int.h"

/* An open directory: a snapshot of its entries, with their stat. */
struct entry {
    char *name;
    struct stat st;
};
struct dir {
    struct entry *e;
    size_t n, cap;
    struct stat self;
};

static int dir_add(void *arg, const struct adafs_listed *l)
{
    struct dir *d = arg;
    if (l->status < 0)
        return 0;   /* a file whose data could not be read: listed anyway below */
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        struct entry *grown = realloc(d->e, cap * sizeof *grown);
        if (!grown)
            return -ENOMEM;
        d->e = grown;
        d->cap = cap;
    }
    if (!(d->e[d->n].name = strdup(l->name)))
        return -ENOMEM;
    d->e[d->n++].st = l->st;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static void dir_free(struct dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->e[i].name);
    free(d->e);
    free(d);
}

/* The listing is taken once, at opendir, and served by offset: the entries
 * in name order, as the interposer lists them. */
int x_opendir(const char *path, struct fuse_file_info *fi)
{
    struct dir *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    adafs *fs = thread_fs();
    int rc = adafs_stat(fs, path, &d->self);
    if (rc == 0 && !S_ISDIR(d->self.st_mode))
        rc = -ENOTDIR;
    if (rc == 0)
        rc = adafs_list_plus(fs, path, 0, dir_add, d);
    if (rc < 0) {
        dir_free(d);
        return rc;
    }
    if (d->n)   /* an empty directory has no array: qsort must not see NULL */
        qsort(d->e, d->n, sizeof *d->e, by_name);
    fi->fh = (uintptr_t)d;
    open_forgets_lookup();
    return 0;
}

int x_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path;
    struct dir *d = (struct dir *)(uintptr_t)fi->fh;
    enum fuse_fill_dir_flags plus = flags & FUSE_READDIR_PLUS ? FUSE_FILL_DIR_PLUS : 0;
    /* Offsets: 1 after ".", 2 after "..", 3 + i after entry i. */
    for (off_t at = off; at < (off_t)d->n + 2; at++) {
        const char *name = at == 0 ? "." : at == 1 ? ".." : d->e[at - 2].name;
        const struct stat *st = at < 2 ? &d->self : &d->e[at - 2].st;
        if (fill(buf, name, st, at + 1, at < 2 ? 0 : plus))
            break;
    }
    return 0;
}

int x_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    dir_free((struct dir *)(uintptr_t)fi->fh);
    return 0;
}
