/* pathres: see pathres.h. */
#include "preload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pathnorm.h"

static char mount[PATH_MAX];
static size_t mount_len;

/* Guarded by cwd_lock: the kernel's working directory (NULL if unknown),
 * whether it is the mount point's ancestor (only then can a relative path
 * without ".." enter the mount), and the virtual working directory (full
 * path, NULL when the working directory is the kernel's). */
static pthread_mutex_t cwd_lock = PTHREAD_MUTEX_INITIALIZER;
static char *kernel_cwd;
static bool kernel_cwd_above_mount;
static char *virtual_cwd;

/* Whether normalised path p is the mount point or below it. */
static bool under_mount(const char *p)
{
    return strncmp(p, mount, mount_len) == 0 && (p[mount_len] == '/' || p[mount_len] == '\0');
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
    if (cwd) {
        size_t n = strlen(cwd);
        kernel_cwd_above_mount = (n == 1 && cwd[0] == '/') ||
            (strncmp(mount, cwd, n) == 0 && (mount[n] == '/' || mount[n] == '\0'));
    }
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

/* Whether normalised absolute path p is the mount point's strict ancestor. */
static bool above_mount(const char *p)
{
    size_t n = strlen(p);
    if (n == 1)
        return true; /* "/" */
    return n < mount_len && strncmp(mount, p, n) == 0 && mount[n] == '/';
}

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

int pathres_init(const char *mount_from_instance)
{
    const char *m = getenv(ADAFS_ENV_MOUNT);
    if (!m || !*m)
        m = mount_from_instance;
    if (!m || !*m)
        return 1;
    if (m[0] != '/') {
        pl_log("%s=%s is not an absolute path; adafs is not mounted in this process",
               ADAFS_ENV_MOUNT, m);
        return -EINVAL;
    }
    int n = path_normalise(m, mount, sizeof mount);
    if (n < 0 || strcmp(mount, "/") == 0) {
        pl_log("%s=%s %s; adafs is not mounted in this process", ADAFS_ENV_MOUNT, m,
               n < 0 ? "is too long" : "would hide the whole kernel file system");
        mount[0] = '\0';
        return -EINVAL;
    }
    mount_len = (size_t)n;
    for (int i = 0; i < NANCESTORS; i++)
        ancestors[i].fd = -1;

    pthread_mutex_lock(&cwd_lock);
    char *kcwd = real.getcwd(NULL, 0);
    set_kernel_cwd_locked(kcwd);
    /* A parent that was in the mount hands its working directory on in
     * $PWD (shells keep it, and exec.c sets it). */
    const char *pwd = getenv("PWD");
    char norm[PATH_MAX];
    if (pwd && pwd[0] == '/' && path_normalise(pwd, norm, sizeof norm) > 0 &&
        under_mount(norm) && !(kcwd && strcmp(kcwd, norm) == 0))
        virtual_cwd = strdup(norm);
    pthread_mutex_unlock(&cwd_lock);
    return 0;
}

bool pathres_active(void)
{
    return mount_len > 0;
}

static bool find_kernel_mount(void)
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

bool pathres_kernel_mount(void)
{
    static atomic_int known;   /* 0: not looked yet, 1: no, 2: yes */
    int k = atomic_load(&known);
    if (!k) {
        k = find_kernel_mount() ? 2 : 1;
        atomic_store(&known, k);
    }
    return k == 2;
}

const char *pathres_mount(void)
{
    return mount;
}

int pathres_full_path(const char *inner, char *out, size_t outlen)
{
    size_t n = strlen(inner);
    if (strcmp(inner, "/") == 0)
        n = 0;
    if (mount_len + n + 1 > outlen)
        return -ENAMETOOLONG;
    memcpy(out, mount, mount_len);
    memcpy(out + mount_len, inner, n);
    out[mount_len + n] = '\0';
    return (int)(mount_len + n);
}

/* Fills res from the normalised absolute path in res->buf. rewritten says
 * whether a kernel answer must use that path instead of the caller's: when
 * it is relative to a directory the kernel does not know, or when it went
 * through the mount point and came back out with "..", which the kernel
 * cannot follow since the mount point does not exist for it. */
static int classify(struct pathres *res, const char *original, bool rewritten)
{
    if (under_mount(res->buf)) {
        res->adafs = true;
        res->inner = res->buf + mount_len;
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
    int n = path_normalise_through(joined, res->buf, sizeof res->buf, mount, mount_len, visited);
    return n < 0 ? n : 0;
}

void pathres_note_kernel_open(int dirfd, const char *path, int fd)
{
    char base[PATH_MAX], joined[2 * PATH_MAX + 2], norm[PATH_MAX];
    if (!mount_len || fd < 0 || !path)
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
    if (!mount_len)
        return 0;
    if (path[0] == '/') {
        if (plainly_normal(path)) {
            if (!under_mount(path))
                return 0;
            size_t n = strlen(path);
            if (n >= sizeof res->buf)
                return -ENAMETOOLONG;
            memcpy(res->buf, path, n + 1);
            while (n > mount_len && res->buf[n - 1] == '/')
                res->buf[--n] = '\0';
            return classify(res, path, false);
        }
        bool visited = false;
        int n = path_normalise_through(path, res->buf, sizeof res->buf, mount, mount_len, &visited);
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
        rc = pathres_full_path(inner, base, sizeof base);
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

void pathres_set_virtual_cwd(const char *inner)
{
    char full[PATH_MAX];
    if (pathres_full_path(inner, full, sizeof full) < 0)
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
