/* exec_handover: what crosses an exec for adafs (exec.c runs the
 * programs): on the way out, the new program's environment (the kept
 * variables, PWD, the inheritable adafs descriptors described in
 * FDS_ENV); on the way in, before main(), the new program takes them back
 * (pl_exec_adopt: the descriptors reopened on their numbers, the adafs
 * path of a program run from a memfd). */
#include "preload.h"
#include "exec_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const kept_names[] = { ADAFS_ENV_MOUNT, ADAFS_ENV_INSTANCE, ADAFS_ENV_MOUNTS,
                                           "LD_PRELOAD" };
#define NKEPT (sizeof kept_names / sizeof kept_names[0])
static char *kept_entries[NKEPT]; /* "NAME=value" as at start-up, or NULL */

static bool has_name(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static bool names_mount(const char *path)
{
    struct pathres r;
    return path[0] == '/' && pathres_resolve(AT_FDCWD, path, &r) == 0 && r.adafs;
}

/* "ADAFS_PRELOAD_FDS=" followed by one "kfd,flags,offset,len:path" per
 * inheritable adafs descriptor (its full path, mount included); NULL when
 * there is none. */
static char *describe_fds(void)
{
    size_t cap = 256, len = 0;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    len = (size_t)snprintf(text, cap, "%s=", FDS_ENV);
    int count = 0;
    for (int kfd = fdmap_next(0); kfd >= 0; kfd = fdmap_next(kfd + 1)) {
        int fdflags = real.fcntl(kfd, F_GETFD);
        int lfd = fdmap_get(kfd);
        if (fdflags < 0 || (fdflags & FD_CLOEXEC) || lfd < 0)
            continue;
        char inner[PATH_MAX], full[PATH_MAX];
        if (route_fd_path(lfd, inner, sizeof inner) < 0 ||
            pathres_full_path(route_fd_mount(lfd), inner, full, sizeof full) < 0)
            continue;
        adafs *fs = route_enter_fd(ROUTE_FD, lfd, &lfd);
        if (!fs)
            continue;
        int flags = adafs_get_flags(fs, lfd);
        off_t off = adafs_lseek(fs, lfd, 0, SEEK_CUR);
        route_leave_raw(0);
        if (flags < 0)
            continue;
        size_t need = len + strlen(full) + 80;
        if (need > cap) {
            char *grown = realloc(text, cap = 2 * need);
            if (!grown) {
                free(text);
                return NULL;
            }
            text = grown;
        }
        len += (size_t)snprintf(text + len, cap - len, "%d,%d,%" PRId64 ",%zu:%s", kfd, flags,
                                (int64_t)(off < 0 ? 0 : off), strlen(full), full);
        count++;
    }
    if (!count) {
        free(text);
        return NULL;
    }
    return text;
}

/* The environment for the new program: envp plus what adafs needs. The
 * strings added are malloc'ed into *added (freed if the exec fails). */
char **exec_env(char *const envp[], char **added, int *nadded, size_t *count)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    /* Room for the kept names, PWD, the descriptors and EXE_ENV. */
    char **env = malloc((n + NKEPT + 4) * sizeof *env);
    if (!env)
        return NULL;
    char cwd[PATH_MAX];
    bool virtual_cwd = pathres_virtual_cwd(cwd, sizeof cwd) > 0;
    bool present[NKEPT] = { false };
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        /* PWD: ours when the working directory is in adafs; dropped when it
         * names the mount but the working directory is the kernel's again
         * (a program that chdir'ed out without updating it), or the new
         * program would take it for its working directory. */
        if (has_name(envp[i], FDS_ENV) || has_name(envp[i], EXE_ENV) ||
            (has_name(envp[i], "PWD") && (virtual_cwd || names_mount(envp[i] + 4))))
            continue;
        for (size_t j = 0; j < NKEPT; j++)
            if (has_name(envp[i], kept_names[j]))
                present[j] = true;
        env[k++] = envp[i];
    }
    for (size_t j = 0; j < NKEPT; j++)
        if (!present[j] && kept_entries[j])
            env[k++] = kept_entries[j];
    *nadded = 0;
    if (virtual_cwd && (added[*nadded] = malloc(strlen(cwd) + 5))) {
        sprintf(added[*nadded], "PWD=%s", cwd);
        env[k++] = added[(*nadded)++];
    }
    if ((added[*nadded] = describe_fds()))
        env[k++] = added[(*nadded)++];
    env[k] = NULL;
    *count = k;
    return env;
}

void free_env(char **env, char **added, int nadded)
{
    int saved = errno;
    for (int i = 0; i < nadded; i++)
        free(added[i]);
    free(env);
    errno = saved;
}

/* The adafs path of this program when it was run from a memfd. */
static char *self_exe;

const char *pl_exec_self_exe(const char *kpath)
{
    if (!self_exe || strncmp(kpath, "/proc/", 6) != 0)
        return NULL;
    const char *rest = kpath + 6;
    if (strncmp(rest, "self/", 5) == 0)
        rest += 5;
    else if (strncmp(rest, "thread-self/", 12) == 0)
        rest += 12;
    else {
        char *end;
        long pid = strtol(rest, &end, 10);
        if (end == rest || pid != (long)getpid() || *end != '/')
            return NULL;
        rest = end + 1;
    }
    return strcmp(rest, "exe") == 0 ? self_exe : NULL;
}

/* Takes EXE_ENV from the environment if this program really runs from one
 * of our memfds (the variable could have reached a program started some
 * other way), and names the process after the file instead of the
 * descriptor number the kernel took its name from. */
static void adopt_self_exe(void)
{
    const char *path = getenv(EXE_ENV);
    if (!path)
        return;
    char link[PATH_MAX];
    static const char marker[] = "/memfd:" EXE_MEMFD;
    ssize_t n = real.readlink("/proc/self/exe", link, sizeof link - 1);
    if (n > 0 && (size_t)n >= sizeof marker - 1 && memcmp(link, marker, sizeof marker - 1) == 0 &&
        (self_exe = strdup(path))) {
        const char *base = strrchr(self_exe, '/');
        prctl(PR_SET_NAME, base ? base + 1 : self_exe, 0, 0, 0);
    }
    unsetenv(EXE_ENV);
}

/* Reopens one handed-on descriptor; logs and leaves kfd unusable (EBADF)
 * if the file cannot be reopened. */
static void adopt_one(int kfd, int flags, off_t off, const char *full)
{
    if (real.fcntl(kfd, F_GETFD) < 0) {
        pl_log("%s names descriptor %d for %s, but it was not inherited", FDS_ENV, kfd, full);
        return;
    }
    /* Only our own reservation may be adopted: posix_spawn file actions or
     * a wrapper program may have put something else on that number. */
    struct stat st, null_st;
    int fl = real.fcntl(kfd, F_GETFL);
    if (fl < 0 || !(fl & O_PATH) || real.fstat(kfd, &st) < 0 ||
        real.stat("/dev/null", &null_st) < 0 || !S_ISCHR(st.st_mode) ||
        st.st_rdev != null_st.st_rdev) {
        pl_log("%s names descriptor %d for %s, but it is no longer the adafs reservation; "
               "left alone", FDS_ENV, kfd, full);
        return;
    }
    struct pathres r;
    if (pathres_resolve(AT_FDCWD, full, &r) < 0 || !r.adafs) {
        pl_log("%s names descriptor %d for %s, which is in no adafs mount of this process",
               FDS_ENV, kfd, full);
        return;
    }
    adafs *fs = route_enter(ROUTE_OPEN, r.mount);
    if (!fs)
        return;
    int keep = O_ACCMODE | O_APPEND | O_NONBLOCK;
    int lfd = adafs_open(fs, r.inner, flags & keep, 0);
    if (lfd >= 0 && !(flags & O_APPEND) && off > 0)
        adafs_lseek(fs, lfd, off, SEEK_SET);
    int rfd = route_fd_of(r.mount, lfd);
    if (rfd < 0 && lfd >= 0)
        adafs_close(fs, lfd);
    route_leave_raw(0);
    if (rfd < 0) {
        pl_log("cannot reopen inherited descriptor %d (%s): %s", kfd, full, strerror(-rfd));
        return;
    }
    if (fdmap_set(kfd, rfd) < 0)
        pl_log("cannot adopt inherited descriptor %d (%s): beyond %d", kfd, full, FDMAP_MAX_FD);
    else
        pl_std_attach(kfd);
}

void pl_exec_adopt(void)
{
    adopt_self_exe();
    for (size_t j = 0; j < NKEPT; j++) {
        const char *v = getenv(kept_names[j]);
        if (v && (kept_entries[j] = malloc(strlen(kept_names[j]) + strlen(v) + 2)))
            sprintf(kept_entries[j], "%s=%s", kept_names[j], v);
    }
    const char *text = getenv(FDS_ENV);
    if (!text)
        return;
    const char *p = text;
    while (*p) {
        int kfd, flags, used = 0;
        int64_t off;
        size_t len;
        if (sscanf(p, "%d,%d,%" SCNd64 ",%zu:%n", &kfd, &flags, &off, &len, &used) != 4 ||
            !used || len >= PATH_MAX || strlen(p + used) < len) {
            pl_log("ignoring malformed %s at \"%.40s\"", FDS_ENV, p);
            break;
        }
        char full[PATH_MAX];
        memcpy(full, p + used, len);
        full[len] = '\0';
        adopt_one(kfd, flags, (off_t)off, full);
        p += used + len;
    }
    /* Not for grandchildren started without exec.c (posix_spawn): they
     * would adopt numbers that mean something else by then. */
    unsetenv(FDS_ENV);
}
