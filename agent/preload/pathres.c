/* pathres: see pathres.h. */
#include "preload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pathnorm.h"

/* Set once by pathres_init, read-only after. order[] lists the mounts
 * longest prefix first, so the first match is the longest. */
struct mount {
    char path[PATH_MAX];
    size_t len;
    char *instance;             /* its instance file (NULL: $ADAFS_INSTANCE unset) */
    bool listed;                /* from $ADAFS_MOUNTS, not $ADAFS_INSTANCE */
    atomic_int kernel;          /* pathres_kernel_mount: 0 not looked yet, 1 no, 2 yes */
};
static struct mount mounts[PATHRES_MOUNTS_MAX];
static int nmounts;
static int order[PATHRES_MOUNTS_MAX];

/* Guarded by cwd_lock: the kernel's working directory (NULL if unknown),
 * whether it is the mount point's ancestor (only then can a relative path
 * without ".." enter the mount), and the virtual working directory (full
 * path, NULL when the working directory is the kernel's). */
static pthread_mutex_t cwd_lock = PTHREAD_MUTEX_INITIALIZER;
static char *kernel_cwd;
static bool kernel_cwd_above_mount;
static char *virtual_cwd;

/* The mount normalised path p is at or below (the longest prefix), or -1. */
static int mount_of(const char *p)
{
    for (int i = 0; i < nmounts; i++) {
        const struct mount *m = &mounts[order[i]];
        if (strncmp(p, m->path, m->len) == 0 && (p[m->len] == '/' || p[m->len] == '\0'))
            return order[i];
    }
    return -1;
}

/* Whether normalised absolute path p is a mount point's strict ancestor. */
static bool above_mount(const char *p)
{
    size_t n = strlen(p);
    if (n == 1)
        return true; /* "/" */
    for (int i = 0; i < nmounts; i++)
        if (n < mounts[i].len && strncmp(mounts[i].path, p, n) == 0 && mounts[i].path[n] == '/')
            return true;
    return false;
}

/* path_normalise_through with every mount: *through tells whether the walk
 * reached or went below any of them. */
static int normalise_through(const char *in, char *out, size_t outlen, bool *through)
{
    int n = path_normalise_through(in, out, outlen, mounts[0].path, mounts[0].len, through);
    for (int i = 1; n >= 0 && !*through && i < nmounts; i++)
        n = path_normalise_through(in, out, outlen, mounts[i].path, mounts[i].len, through);
    return n;
}

static bool has_dotdot(const char *p)
{
    for (const char *s = strstr(p, ".."); s; s = strstr(s + 2, ".."))
        if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
            return true;
    return false;
}

/* Whether the absolute path p is already normal, so it can be compared to
 * the mount as it is (the common case costs two strstr and a compare). */
static bool plainly_normal(const char *p)
{
    return !strstr(p, "//") && !strstr(p, "/.");
}

static void set_kernel_cwd_locked(char *cwd)
{
    free(kernel_cwd);
    kernel_cwd = cwd;
    kernel_cwd_above_mount = false;
    for (int i = 0; cwd && i < nmounts; i++)
        kernel_cwd_above_mount |= strcmp(cwd, mounts[i].path) == 0;
    kernel_cwd_above_mount |= cwd && above_mount(cwd);
}

/* ---- kernel directory descriptors above the mount point ---- */

/* Directories the program opened that are the mount point's ancestors, by
 * descriptor, so that names relative to them can lead into the mount. A
 * descriptor is checked against the recorded device and inode before use,
 * in case it was closed behind our back and its number reused. */
enum { NANCESTORS = 32 };
struct ancestor {
    int fd;
    dev_t dev;
    ino_t ino;
    char path[PATH_MAX];
};
static pthread_mutex_t ancestor_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ancestor ancestors[NANCESTORS];
static atomic_int nancestors;

/* Copies the path of ancestor descriptor fd into buf; false if fd is not
 * one (or no longer is). */
static bool ancestor_path(int fd, char *buf, size_t len)
{
    if (atomic_load_explicit(&nancestors, memory_order_acquire) == 0)
        return false;
    bool found = false;
    struct stat st;
    pthread_mutex_lock(&ancestor_lock);
    for (int i = 0; i < NANCESTORS; i++) {
        struct ancestor *a = &ancestors[i];
        if (a->fd != fd || fd < 0)
            continue;
        if (real.fstat(fd, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino &&
            strlen(a->path) < len) {
            strcpy(buf, a->path);
            found = true;
        } else {
            a->fd = -1;
            atomic_fetch_sub(&nancestors, 1);
        }
        break;
    }
    pthread_mutex_unlock(&ancestor_lock);
    return found;
}

/* Adds mount point m (from the variable named var) with its instance file;
 * false (logged) if it cannot be served. */
static bool add_mount(const char *m, size_t mlen, const char *instance, const char *var)
{
    char given[PATH_MAX], norm[PATH_MAX];
    if (mlen >= sizeof given) {
        pl_log("%s: a mount point is too long; that file system is not mounted in this "
               "process", var);
        return false;
    }
    memcpy(given, m, mlen);
    given[mlen] = '\0';
    const char *why = NULL;
    int n = 0;
    if (given[0] != '/')
        why = "is not an absolute path";
    else if ((n = path_normalise(given, norm, sizeof norm)) < 0)
        why = "is too long";
    else if (strcmp(norm, "/") == 0)
        why = "would hide the whole kernel file system";
    else if (nmounts == PATHRES_MOUNTS_MAX)
        why = "is one mount too many (a process serves at most 16)";
    for (int i = 0; !why && i < nmounts; i++)
        if (strcmp(mounts[i].path, norm) == 0)
            why = "is mounted already";
    if (why) {
        if (strcmp(var, ADAFS_ENV_MOUNTS) == 0)
            pl_log("%s: mount point %s %s; that file system is not mounted in this process",
                   var, given, why);
        else
            pl_log("%s=%s %s; adafs is not mounted in this process", var, given, why);
        return false;
    }
    struct mount *mt = &mounts[nmounts];
    memcpy(mt->path, norm, (size_t)n + 1);
    mt->len = (size_t)n;
    mt->instance = instance && *instance ? strdup(instance) : NULL;
    mt->listed = strcmp(var, ADAFS_ENV_MOUNTS) == 0;
    /* Longest first: insertion into order[]. */
    int at = nmounts;
    while (at > 0 && mounts[order[at - 1]].len < mt->len) {
        order[at] = order[at - 1];
        at--;
    }
    order[at] = nmounts++;
    return true;
}

/* $ADAFS_MOUNTS: "MOUNT=INSTANCE_FILE" entries separated by ':'. */
static void add_listed_mounts(const char *list)
{
    for (const char *p = list; *p;) {
        const char *end = strchrnul(p, ':');
        const char *eq = memchr(p, '=', (size_t)(end - p));
        char instance[PATH_MAX];
        size_t ilen = eq ? (size_t)(end - eq - 1) : 0;
        if (end > p && (!eq || eq == p || ilen == 0 || ilen >= sizeof instance))
            pl_log("%s: \"%.*s\" is not MOUNT=INSTANCE_FILE; left out", ADAFS_ENV_MOUNTS,
                   (int)(end - p > 200 ? 200 : end - p), p);
        else if (end > p) {
            memcpy(instance, eq + 1, ilen);
            instance[ilen] = '\0';
            add_mount(p, (size_t)(eq - p), instance, ADAFS_ENV_MOUNTS);
        }
        p = *end ? end + 1 : end;
    }
}

int pathres_init(const char *mount_from_instance)
{
    const char *m = getenv(ADAFS_ENV_MOUNT);
    const char *var = ADAFS_ENV_MOUNT;
    if (!m || !*m) {
        m = mount_from_instance;
        var = ADAFS_ENV_INSTANCE;
    }
    bool broken = false;
    if (m && *m)
        broken = !add_mount(m, strlen(m), getenv(ADAFS_ENV_INSTANCE), var);
    const char *list = getenv(ADAFS_ENV_MOUNTS);
    if (list && *list)
        add_listed_mounts(list);
    if (!nmounts)
        return broken || (list && *list) ? -EINVAL : 1;
    for (int i = 0; i < NANCESTORS; i++)
        ancestors[i].fd = -1;

    pthread_mutex_lock(&cwd_lock);
    char *kcwd = real.getcwd(NULL, 0);
    set_kernel_cwd_locked(kcwd);
    /* A parent that was in a mount hands its working directory on in
     * $PWD (shells keep it, and exec.c sets it). */
    const char *pwd = getenv("PWD");
    char norm[PATH_MAX];
    if (pwd && pwd[0] == '/' && path_normalise(pwd, norm, sizeof norm) > 0 &&
        mount_of(norm) >= 0 && !(kcwd && strcmp(kcwd, norm) == 0))
        virtual_cwd = strdup(norm);
    pthread_mutex_unlock(&cwd_lock);
    return 0;
}

bool pathres_active(void)
{
    return nmounts > 0;
}

int pathres_nmounts(void)
{
    return nmounts;
}

static bool find_kernel_mount(const char *mount)
{
    int fd = real.open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    /* " MOUNT " then, after the optional fields, " - fuse.adafs " on one
     * line (mountinfo escapes blanks in paths, so MOUNT has none unless the
     * mount point has: then no match, and exec and mmap are emulated). */
    char want[PATH_MAX + 2], buf[8192];
    snprintf(want, sizeof want, " %s ", mount);
    bool found = false;
    size_t have = 0;
    for (;;) {
        ssize_t n = real.read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            if (strstr(line, want) && strstr(line, " - fuse.adafs "))
                found = true;
            line = nl + 1;
        }
        have = strlen(line);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0;   /* a line longer than the buffer: not ours */
    }
    real.close(fd);
    return found;
}

bool pathres_kernel_mount(int m)
{
    int k = atomic_load(&mounts[m].kernel);
    if (!k) {
        k = find_kernel_mount(mounts[m].path) ? 2 : 1;
        atomic_store(&mounts[m].kernel, k);
    }
    return k == 2;
}

const char *pathres_mount(int m)
{
    return mounts[m].path;
}

const char *pathres_instance(int m)
{
    return mounts[m].instance;
}

const char *pathres_instance_var(int m)
{
    return mounts[m].listed ? ADAFS_ENV_MOUNTS : ADAFS_ENV_INSTANCE;
}

int pathres_full_path(int m, const char *inner, char *out, size_t outlen)
{
    size_t n = strlen(inner), mlen = mounts[m].len;
    if (strcmp(inner, "/") == 0)
        n = 0;
    if (mlen + n + 1 > outlen)
        return -ENAMETOOLONG;
    memcpy(out, mounts[m].path, mlen);
    memcpy(out + mlen, inner, n);
    out[mlen + n] = '\0';
    return (int)(mlen + n);
}

/* Fills res from the normalised absolute path in res->buf. rewritten says
 * whether a kernel answer must use that path instead of the caller's: when
 * it is relative to a directory the kernel does not know, or when it went
 * through the mount point and came back out with "..", which the kernel
 * cannot follow since the mount point does not exist for it. */
static int classify(struct pathres *res, const char *original, bool rewritten)
{
    int m = mount_of(res->buf);
    if (m >= 0) {
        res->adafs = true;
        res->mount = m;
        res->inner = res->buf + mounts[m].len;
        if (!*res->inner)
            res->inner = "/";
        res->kpath = NULL;
    } else {
        res->adafs = false;
        res->inner = NULL;
        res->kpath = rewritten ? res->buf : original;
    }
    return 0;
}

static int join(const char *base, const char *path, struct pathres *res, bool *visited)
{
    char joined[2 * PATH_MAX + 2];
    size_t b = strlen(base), p = strlen(path);
    if (b + 1 + p + 1 > sizeof joined)
        return -ENAMETOOLONG;
    memcpy(joined, base, b);
    joined[b] = '/';
    memcpy(joined + b + 1, path, p + 1);
    int n = normalise_through(joined, res->buf, sizeof res->buf, visited);
    return n < 0 ? n : 0;
}

void pathres_note_kernel_open(int dirfd, const char *path, int fd)
{
    char base[PATH_MAX], joined[2 * PATH_MAX + 2], norm[PATH_MAX];
    if (!nmounts || fd < 0 || !path)
        return;
    if (path[0] == '/') {
        if (path_normalise(path, norm, sizeof norm) < 0)
            return;
    } else {
        if (dirfd == AT_FDCWD) {
            pthread_mutex_lock(&cwd_lock);
            bool known = kernel_cwd && !virtual_cwd && strlen(kernel_cwd) < sizeof base;
            if (known)
                strcpy(base, kernel_cwd);
            pthread_mutex_unlock(&cwd_lock);
            if (!known)
                return;
        } else if (!ancestor_path(dirfd, base, sizeof base)) {
            return;
        }
        snprintf(joined, sizeof joined, "%s/%s", base, path);
        if (path_normalise(joined, norm, sizeof norm) < 0)
            return;
    }
    struct stat st;
    if (!above_mount(norm) || real.fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    pthread_mutex_lock(&ancestor_lock);
    for (int i = 0; i < NANCESTORS; i++)
        if (ancestors[i].fd < 0 || ancestors[i].fd == fd) {
            if (ancestors[i].fd != fd)
                atomic_fetch_add(&nancestors, 1);
            ancestors[i].fd = fd;
            ancestors[i].dev = st.st_dev;
            ancestors[i].ino = st.st_ino;
            strcpy(ancestors[i].path, norm);
            break;
        }
    pthread_mutex_unlock(&ancestor_lock);
}

void pathres_note_kernel_close(int fd)
{
    if (atomic_load_explicit(&nancestors, memory_order_acquire) == 0)
        return;
    pthread_mutex_lock(&ancestor_lock);
    for (int i = 0; i < NANCESTORS; i++)
        if (ancestors[i].fd == fd && fd >= 0) {
            ancestors[i].fd = -1;
            atomic_fetch_sub(&nancestors, 1);
        }
    pthread_mutex_unlock(&ancestor_lock);
}

int pathres_resolve(int dirfd, const char *path, struct pathres *res)
{
    res->adafs = false;
    res->kpath = path;
    res->inner = NULL;
    if (!path)
        return -EFAULT;
    if (!nmounts)
        return 0;
    if (path[0] == '/') {
        if (plainly_normal(path)) {
            int m = mount_of(path);
            if (m < 0)
                return 0;
            size_t n = strlen(path);
            if (n >= sizeof res->buf)
                return -ENAMETOOLONG;
            memcpy(res->buf, path, n + 1);
            while (n > mounts[m].len && res->buf[n - 1] == '/')
                res->buf[--n] = '\0';
            res->adafs = true;
            res->mount = m;
            res->inner = n == mounts[m].len ? "/" : res->buf + mounts[m].len;
            res->kpath = NULL;
            return 0;
        }
        bool visited = false;
        int n = normalise_through(path, res->buf, sizeof res->buf, &visited);
        if (n < 0)
            return n;
        return classify(res, path, visited);
    }
    if (path[0] == '\0')
        return -ENOENT;

    char base[PATH_MAX];
    bool rewritten;
    if (dirfd == AT_FDCWD) {
        pthread_mutex_lock(&cwd_lock);
        if (virtual_cwd) {
            strcpy(base, virtual_cwd);
            rewritten = true;
        } else if (kernel_cwd && (kernel_cwd_above_mount || has_dotdot(path))) {
            if (strlen(kernel_cwd) >= sizeof base) {
                pthread_mutex_unlock(&cwd_lock);
                return 0;
            }
            strcpy(base, kernel_cwd);
            rewritten = false;
        } else {
            pthread_mutex_unlock(&cwd_lock);
            return 0; /* relative to the kernel's cwd, cannot reach the mount */
        }
        pthread_mutex_unlock(&cwd_lock);
    } else {
        int lfd = fdmap_get(dirfd);
        if (lfd < 0) {
            /* A kernel directory: the kernel's business, unless it is one
             * of the mount point's ancestors (a walk from "/" with openat,
             * as rsync does) or the name climbs out with "..". */
            if (!ancestor_path(dirfd, base, sizeof base))
                return 0;
            rewritten = false;
            bool visited = false;
            int rc = join(base, path, res, &visited);
            if (rc < 0)
                return rc;
            return classify(res, path, visited);
        }
        char inner[PATH_MAX];
        int rc = route_fd_path(lfd, inner, sizeof inner);
        if (rc < 0)
            return rc;
        rc = pathres_full_path(route_fd_mount(lfd), inner, base, sizeof base);
        if (rc < 0)
            return rc;
        rewritten = true;
    }
    bool visited = false;
    int rc = join(base, path, res, &visited);
    if (rc < 0)
        return rc;
    return classify(res, path, rewritten || visited);
}

void pathres_set_virtual_cwd(int m, const char *inner)
{
    char full[PATH_MAX];
    if (pathres_full_path(m, inner, full, sizeof full) < 0)
        return; /* cannot happen: inner came from a resolved path */
    char *copy = strdup(full);
    pthread_mutex_lock(&cwd_lock);
    free(virtual_cwd);
    virtual_cwd = copy;
    pthread_mutex_unlock(&cwd_lock);
}

void pathres_kernel_chdir_done(void)
{
    char *kcwd = real.getcwd(NULL, 0);
    pthread_mutex_lock(&cwd_lock);
    set_kernel_cwd_locked(kcwd);
    free(virtual_cwd);
    virtual_cwd = NULL;
    pthread_mutex_unlock(&cwd_lock);
}

int pathres_virtual_cwd(char *buf, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&cwd_lock);
    if (virtual_cwd) {
        size_t n = strlen(virtual_cwd);
        if (n + 1 > len) {
            rc = -ERANGE;
        } else {
            memcpy(buf, virtual_cwd, n + 1);
            rc = (int)n;
        }
    }
    pthread_mutex_unlock(&cwd_lock);
    return rc;
}

static void lock_for_fork(void)
{
    pthread_mutex_lock(&cwd_lock);
    pthread_mutex_lock(&ancestor_lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&ancestor_lock);
    pthread_mutex_unlock(&cwd_lock);
}

void pathres_register_atfork(void)
{
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}
