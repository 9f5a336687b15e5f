/* dir: directory streams and getdents64 on adafs directories.
 *
 * opendir()/fdopendir() on adafs return a DIR* that is really our own
 * struct pl_dir; readdir, closedir, dirfd, rewinddir, telldir and seekdir
 * recognise it through a small registry and pass any other DIR* to glibc.
 * scandir() is answered here too (glibc's uses its internal opendir).
 * A directory stream holds an adafs descriptor (so dirfd() works for
 * openat, fstat and fchdir, as find and rm use them) and a library
 * listing snapshot. "." and ".." come first, as from a kernel file system
 * (libadafs lists only real entries). Positions: 0 and 1 are the two dot
 * entries, 2 + n is the library's position n. */
#include "preload.h"

#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "readdir64 is readdir");

/* The reading state of a listing, shared by DIR streams and getdents64. */
struct listing {
    adafs_dir *dir;
    long dots_done;   /* 0, 1 or 2 dot entries returned */
    ino_t self_ino;
};

struct pl_dir {
    int kfd;
    struct listing l;
    struct dirent ent;
};

/* ---- registry of our DIR* ---- */

struct ptrmap pl_dir_streams = PTRMAP_INIT;

static struct pl_dir *reg_find(DIR *d, bool remove)
{
    pl_ready();
    return ptrmap_get(&pl_dir_streams, d, remove);
}

/* ---- listings ---- */

static int listing_open(struct listing *l, int lfd)
{
    char inner[PATH_MAX];
    int rc = route_fd_path(lfd, inner, sizeof inner);
    if (rc < 0)
        return rc;
    adafs *fs = route_enter_fd(ROUTE_DIR, lfd, &lfd);
    if (!fs)
        return -EIO;
    struct stat st;
    rc = adafs_fstat(fs, lfd, &st);
    if (rc == 0 && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc == 0)
        rc = adafs_opendir(fs, inner, &l->dir);
    route_leave_raw(0);
    l->dots_done = 0;
    l->self_ino = rc == 0 ? st.st_ino : 0;
    return rc;
}

static void listing_close(struct listing *l)
{
    if (!l->dir)
        return;
    route_enter_existing(ROUTE_DIR);
    adafs_closedir(l->dir);
    route_leave_raw(0);
    l->dir = NULL;
}

static long listing_tell(struct listing *l)
{
    if (l->dots_done < 2)
        return l->dots_done;
    route_enter_existing(ROUTE_DIR);
    long pos = adafs_telldir(l->dir);
    route_leave_raw(0);
    return 2 + pos;
}

static void listing_seek(struct listing *l, long pos)
{
    route_enter_existing(ROUTE_DIR);
    if (pos < 2) {
        l->dots_done = pos < 0 ? 0 : pos;
        adafs_rewinddir(l->dir);
    } else {
        l->dots_done = 2;
        adafs_seekdir(l->dir, pos - 2);
    }
    route_leave_raw(0);
}

/* Next entry into *ent (name copied into name[256]); 1, 0 at the end, or
 * -errno. */
static int listing_next(struct listing *l, struct dirent *ent)
{
    if (l->dots_done < 2) {
        ent->d_ino = l->self_ino;
        ent->d_type = DT_DIR;
        strcpy(ent->d_name, l->dots_done == 0 ? "." : "..");
        l->dots_done++;
        ent->d_off = l->dots_done;
        ent->d_reclen = sizeof *ent;
        return 1;
    }
    for (;;) {
        struct adafs_dirent e;
        route_enter_existing(ROUTE_DIR);
        int rc = adafs_readdir(l->dir, &e);
        long pos = rc == 1 ? adafs_telldir(l->dir) : 0;
        if (rc == 1 && strlen(e.name) < sizeof ent->d_name)
            strcpy(ent->d_name, e.name);
        route_leave_raw(0);
        if (rc <= 0)
            return rc;
        if (strlen(e.name) >= sizeof ent->d_name) {
            pl_log("skipping a directory entry whose name is longer than %zu bytes",
                   sizeof ent->d_name - 1);
            continue;
        }
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        ent->d_ino = e.ino;
        ent->d_type = e.type;
        ent->d_off = 2 + pos;
        ent->d_reclen = sizeof *ent;
        return 1;
    }
}

/* ---- DIR streams ---- */

static DIR *open_stream(int kfd, int lfd)
{
    struct pl_dir *d = calloc(1, sizeof *d);
    if (!d) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = listing_open(&d->l, lfd);
    if (rc == 0 && (rc = ptrmap_put(&pl_dir_streams, d, d)) < 0)
        listing_close(&d->l);
    if (rc < 0) {
        free(d);
        errno = -rc;
        return NULL;
    }
    d->kfd = kfd;
    return (DIR *)(void *)d;
}

PL_EXPORT DIR *opendir(const char *path)
{
    struct pathres r;
    if (!pl_active())
        return real.opendir(path);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, NULL, real.opendir(r.kpath));
    int kfd = pl_open_adafs(r.mount, r.inner, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (kfd < 0)
        return NULL;
    DIR *d = open_stream(kfd, fdmap_get(kfd));
    if (!d) {
        int saved = errno;
        close(kfd);
        errno = saved;
    }
    return d;
}

PL_EXPORT DIR *fdopendir(int fd)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fdopendir(fd);
    return open_stream(fd, lfd); /* on success the stream owns fd */
}

PL_EXPORT struct dirent *readdir(DIR *dirp)
{
    struct pl_dir *d = reg_find(dirp, false);
    if (!d)
        return real.readdir(dirp);
    int rc = listing_next(&d->l, &d->ent);
    if (rc < 0)
        errno = -rc;
    return rc == 1 ? &d->ent : NULL;
}

PL_EXPORT struct dirent64 *readdir64(DIR *dirp)
{
    return (struct dirent64 *)(void *)readdir(dirp);
}

static int readdir_r_common(DIR *dirp, struct dirent *entry, struct dirent **result)
{
    struct pl_dir *d = reg_find(dirp, false);
    if (!d)
        return real.readdir_r(dirp, entry, result);
    int rc = listing_next(&d->l, entry);
    *result = rc == 1 ? entry : NULL;
    return rc < 0 ? -rc : 0;
}

PL_EXPORT int readdir_r(DIR *dirp, struct dirent *entry, struct dirent **result)
{
    return readdir_r_common(dirp, entry, result);
}

PL_EXPORT int readdir64_r(DIR *dirp, struct dirent64 *entry, struct dirent64 **result)
{
    return readdir_r_common(dirp, (struct dirent *)(void *)entry,
                            (struct dirent **)(void *)result);
}

PL_EXPORT int closedir(DIR *dirp)
{
    struct pl_dir *d = reg_find(dirp, true);
    if (!d)
        return real.closedir(dirp);
    listing_close(&d->l);
    int rc = close(d->kfd);
    free(d);
    return rc;
}

PL_EXPORT int dirfd(DIR *dirp)
{
    struct pl_dir *d = reg_find(dirp, false);
    return d ? d->kfd : real.dirfd(dirp);
}

PL_EXPORT void rewinddir(DIR *dirp)
{
    struct pl_dir *d = reg_find(dirp, false);
    if (!d) {
        real.rewinddir(dirp);
        return;
    }
    listing_seek(&d->l, 0);
}

PL_EXPORT long telldir(DIR *dirp)
{
    struct pl_dir *d = reg_find(dirp, false);
    return d ? listing_tell(&d->l) : real.telldir(dirp);
}

PL_EXPORT void seekdir(DIR *dirp, long pos)
{
    struct pl_dir *d = reg_find(dirp, false);
    if (!d) {
        real.seekdir(dirp, pos);
        return;
    }
    listing_seek(&d->l, pos);
}

/* ---- scandir ---- */

typedef int (*scandir_filter)(const struct dirent *);
typedef int (*scandir_compar)(const struct dirent **, const struct dirent **);

/* qsort's comparator type differs from scandir's: call through this. */
static __thread scandir_compar current_compar;

static int compar_entries(const void *a, const void *b)
{
    return current_compar((const struct dirent **)a, (const struct dirent **)b);
}

static int scandir_common(const char *path, struct dirent ***namelist,
                          scandir_filter filter, scandir_compar compar)
{
    struct pathres r;
    if (!pl_active())
        return real.scandir(path, namelist, filter, compar);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, -1, real.scandir(r.kpath, namelist, filter, compar));
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent **list = NULL, *e;
    size_t n = 0, cap = 0;
    int err = 0;
    errno = 0;
    while ((e = readdir(d))) {
        if (filter && !filter(e))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            struct dirent **grown = realloc(list, cap * sizeof *grown);
            if (!grown) {
                err = ENOMEM;
                break;
            }
            list = grown;
        }
        if (!(list[n] = malloc(sizeof *e))) {
            err = ENOMEM;
            break;
        }
        memcpy(list[n++], e, sizeof *e);
        errno = 0;
    }
    if (!err)
        err = errno;
    closedir(d);
    if (err || n > INT_MAX) {
        while (n > 0)
            free(list[--n]);
        free(list);
        errno = err ? err : EOVERFLOW;
        return -1;
    }
    if (compar && n > 1) {
        current_compar = compar;
        qsort(list, n, sizeof *list, compar_entries);
    }
    *namelist = list;
    return (int)n;
}

PL_EXPORT int scandir(const char *path, struct dirent ***namelist, scandir_filter filter,
                      scandir_compar compar)
{
    return scandir_common(path, namelist, filter, compar);
}

PL_EXPORT int scandir64(const char *path, struct dirent64 ***namelist,
                        int (*filter)(const struct dirent64 *),
                        int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
    /* struct dirent64 is struct dirent on LP64 (asserted above) */
    return scandir_common(path, (struct dirent ***)namelist, (scandir_filter)(void (*)(void))filter,
                          (scandir_compar)(void (*)(void))compar);
}

/* ---- getdents64 on an adafs directory descriptor ---- */

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

void pl_dirstate_free(void *dirstate)
{
    struct listing *l = dirstate;
    listing_close(l);
    free(l);
}

off_t pl_dirstate_seek(void *dirstate, off_t pos)
{
    listing_seek(dirstate, (long)pos);
    return pos;
}

static struct listing *fd_listing(int fd, int lfd)
{
    struct listing *l = fdmap_get_dir(fd);
    if (l)
        return l;
    l = calloc(1, sizeof *l);
    if (!l) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = listing_open(l, lfd);
    if (rc < 0) {
        free(l);
        errno = -rc;
        return NULL;
    }
    if (fdmap_set_dir(fd, l) < 0) {
        pl_dirstate_free(l); /* another thread started reading first */
        l = fdmap_get_dir(fd);
    }
    return l;
}

PL_EXPORT ssize_t getdents64(int fd, void *buf, size_t count)
{
    int lfd;
    if (!PL_ADAFS_FD(fd, lfd))
        return real.getdents64(fd, buf, count);
    struct listing *l = fd_listing(fd, lfd);
    if (!l)
        return -1;
    size_t used = 0;
    for (;;) {
        long before = listing_tell(l);
        struct dirent ent;
        int rc = listing_next(l, &ent);
        if (rc < 0) {
            if (used)
                break;
            errno = -rc;
            return -1;
        }
        if (rc == 0)
            break;
        size_t namelen = strlen(ent.d_name);
        size_t reclen = (offsetof(struct linux_dirent64, d_name) + namelen + 1 + 7) & ~(size_t)7;
        if (used + reclen > count) {
            listing_seek(l, before); /* keep it for the next call */
            if (!used) {
                errno = EINVAL; /* buffer too small for one entry */
                return -1;
            }
            break;
        }
        struct linux_dirent64 *out = (struct linux_dirent64 *)(void *)((char *)buf + used);
        out->d_ino = ent.d_ino;
        out->d_off = ent.d_off;
        out->d_reclen = (unsigned short)reclen;
        out->d_type = ent.d_type;
        memcpy(out->d_name, ent.d_name, namelen + 1);
        used += reclen;
    }
    return (ssize_t)used;
}
