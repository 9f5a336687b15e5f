/* exec: keeps adafs visible across exec.
 *
 * - The new program's environment always carries $ADAFS_MOUNT,
 *   $ADAFS_INSTANCE and $LD_PRELOAD as this process started with them, so
 *   a program that builds a fresh environment for its child does not lose
 *   the mount; and PWD names the working directory when it is inside
 *   adafs (the kernel's one is elsewhere), which the child's pathres
 *   picks up; a PWD naming the mount when the working directory is no
 *   longer there is dropped.
 * - adafs descriptors without close-on-exec are handed on in
 *   $ADAFS_PRELOAD_FDS (number, flags, offset, path) and reopened on the
 *   same numbers by the new program's interposer before main(), so that a
 *   shell's `cmd > /mount/file` works. After the exec the two processes no
 *   longer share the offset (doc/preload.md).
 * posix_spawn() and posix_spawnp() get the same environment; descriptors
 * their file actions dup2 onto other numbers are not described (the new
 * program sees EBADF on them). Static binaries do not pass through here. */
#include "preload.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FDS_ENV "ADAFS_PRELOAD_FDS"

extern char **environ;

static const char *const kept_names[] = { ADAFS_ENV_MOUNT, ADAFS_ENV_INSTANCE, "LD_PRELOAD" };
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
 * inheritable adafs descriptor; NULL when there is none. */
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
        char inner[PATH_MAX];
        if (route_fd_path(lfd, inner, sizeof inner) < 0)
            continue;
        adafs *fs = route_enter(ROUTE_FD);
        if (!fs)
            break;
        int flags = adafs_get_flags(fs, lfd);
        off_t off = adafs_lseek(fs, lfd, 0, SEEK_CUR);
        route_leave_raw(0);
        if (flags < 0)
            continue;
        size_t need = len + strlen(inner) + 80;
        if (need > cap) {
            char *grown = realloc(text, cap = 2 * need);
            if (!grown) {
                free(text);
                return NULL;
            }
            text = grown;
        }
        len += (size_t)snprintf(text + len, cap - len, "%d,%d,%" PRId64 ",%zu:%s", kfd, flags,
                                (int64_t)(off < 0 ? 0 : off), strlen(inner), inner);
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
static char **exec_env(char *const envp[], char **added, int *nadded)
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    char **env = malloc((n + NKEPT + 3) * sizeof *env);
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
        if (has_name(envp[i], FDS_ENV) ||
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
    return env;
}

static void free_env(char **env, char **added, int nadded)
{
    int saved = errno;
    for (int i = 0; i < nadded; i++)
        free(added[i]);
    free(env);
    errno = saved;
}

enum exec_kind { EXEC_PATH, EXEC_SEARCH, EXEC_FD };

static int exec_with(enum exec_kind kind, const char *file, int fd, char *const argv[],
                     char *const envp[])
{
    if (!pl_active()) {
        return kind == EXEC_PATH ? real.execve(file, argv, envp)
             : kind == EXEC_SEARCH ? real.execvpe(file, argv, envp)
             : real.fexecve(fd, argv, envp);
    }
    /* A program path is resolved like any other: relative to a working
     * directory in adafs it names an absolute kernel path; in adafs it
     * cannot be executed (the kernel cannot map it), as on a noexec mount. */
    struct pathres r;
    if (kind != EXEC_FD && !pl_null(file) && strchr(file, '/')) {
        int rc = pathres_resolve(AT_FDCWD, file, &r);
        if (rc < 0 || r.adafs) {
            errno = rc < 0 ? -rc : EACCES;
            return -1;
        }
        file = r.kpath;
    }
    char *added[2];
    int nadded;
    char **env = exec_env(envp, added, &nadded);
    if (!env) {
        errno = ENOMEM;
        return -1;
    }
    if (kind == EXEC_PATH)
        real.execve(file, argv, env);
    else if (kind == EXEC_SEARCH)
        real.execvpe(file, argv, env);
    else
        real.fexecve(fd, argv, env);
    free_env(env, added, nadded);
    return -1;
}

PL_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_with(EXEC_PATH, path, -1, argv, envp);
}

PL_EXPORT int execv(const char *path, char *const argv[])
{
    return exec_with(EXEC_PATH, path, -1, argv, environ);
}

PL_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return exec_with(EXEC_SEARCH, file, -1, argv, envp);
}

PL_EXPORT int execvp(const char *file, char *const argv[])
{
    return exec_with(EXEC_SEARCH, file, -1, argv, environ);
}

PL_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    return exec_with(EXEC_FD, NULL, fd, argv, envp);
}

static int spawn_with(bool search, pid_t *pid, const char *file,
                      const posix_spawn_file_actions_t *actions,
                      const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    if (!pl_active())
        return search ? real.posix_spawnp(pid, file, actions, attr, argv, envp)
                      : real.posix_spawn(pid, file, actions, attr, argv, envp);
    struct pathres r;
    if (!pl_null(file) && strchr(file, '/')) {
        int rc = pathres_resolve(AT_FDCWD, file, &r);
        if (rc < 0 || r.adafs)
            return rc < 0 ? -rc : EACCES;
        file = r.kpath;
    }
    char *added[2];
    int nadded;
    char **env = exec_env(envp, added, &nadded);
    if (!env)
        return ENOMEM;
    int rc = search ? real.posix_spawnp(pid, file, actions, attr, argv, env)
                    : real.posix_spawn(pid, file, actions, attr, argv, env);
    free_env(env, added, nadded); /* the child has its copy by now */
    return rc;
}

PL_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_with(false, pid, path, actions, attr, argv, envp);
}

PL_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_with(true, pid, file, actions, attr, argv, envp);
}

/* execl, execlp, execle: gather the variadic arguments into an argv. */
#define GATHER_ARGS(arg0, last, argv, envp_out)                                \
    size_t argc_ = 1;                                                          \
    va_list ap_;                                                               \
    va_start(ap_, arg0);                                                       \
    while (va_arg(ap_, char *))                                                \
        argc_++;                                                               \
    va_end(ap_);                                                               \
    char *argv[argc_ + 1];                                                     \
    argv[0] = (char *)(arg0);                                                  \
    va_start(ap_, arg0);                                                       \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                     \
        argv[i_] = va_arg(ap_, char *);                                        \
    envp_out = last ? va_arg(ap_, char *const *) : environ;                    \
    va_end(ap_)

PL_EXPORT int execl(const char *path, const char *arg, ...)
{
    char *const *envp;
    GATHER_ARGS(arg, false, argv, envp);
    return exec_with(EXEC_PATH, path, -1, argv, envp);
}

PL_EXPORT int execlp(const char *file, const char *arg, ...)
{
    char *const *envp;
    GATHER_ARGS(arg, false, argv, envp);
    return exec_with(EXEC_SEARCH, file, -1, argv, envp);
}

PL_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    GATHER_ARGS(arg, true, argv, envp);
    return exec_with(EXEC_PATH, path, -1, argv, envp);
}

/* Reopens one handed-on descriptor; logs and leaves kfd unusable (EBADF)
 * if the file cannot be reopened. */
static void adopt_one(int kfd, int flags, off_t off, const char *inner)
{
    if (real.fcntl(kfd, F_GETFD) < 0) {
        pl_log("%s names descriptor %d for %s, but it was not inherited", FDS_ENV, kfd, inner);
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
               "left alone", FDS_ENV, kfd, inner);
        return;
    }
    adafs *fs = route_enter(ROUTE_OPEN);
    if (!fs)
        return;
    int keep = O_ACCMODE | O_APPEND | O_NONBLOCK;
    int lfd = adafs_open(fs, inner, flags & keep, 0);
    if (lfd >= 0 && !(flags & O_APPEND) && off > 0)
        adafs_lseek(fs, lfd, off, SEEK_SET);
    route_leave_raw(0);
    if (lfd < 0) {
        pl_log("cannot reopen inherited descriptor %d (%s%s): %s", kfd, pathres_mount(), inner,
               strerror(-lfd));
        return;
    }
    if (fdmap_set(kfd, lfd) < 0)
        pl_log("cannot adopt inherited descriptor %d (%s%s): beyond %d", kfd, pathres_mount(),
               inner, FDMAP_MAX_FD);
    else
        pl_std_attach(kfd);
}

void pl_exec_adopt(void)
{
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
        char inner[PATH_MAX];
        memcpy(inner, p + used, len);
        inner[len] = '\0';
        adopt_one(kfd, flags, (off_t)off, inner);
        p += used + len;
    }
    /* Not for grandchildren started without exec.c (posix_spawn): they
     * would adopt numbers that mean something else by then. */
    unsetenv(FDS_ENV);
}
