/* exec: runs programs stored in adafs, and keeps adafs visible across
 * exec.
 *
 * - A program in adafs is run from its contents: the kernel cannot open
 *   it, so its bytes are copied into a sealed memfd, which is executed
 *   (execveat(AT_EMPTY_PATH); posix_spawn of /proc/self/fd/N). The
 *   execute-permission check is kept (no x bit, a directory: EACCES), a
 *   `#!` script is read here and its interpreter (in adafs or not) run as
 *   the kernel would, with the script's path as given, and argv[0] is
 *   passed unchanged. The new program's interposer answers readlink and
 *   realpath of /proc/self/exe with the adafs path and names the process
 *   after it (the kernel would show the memfd). When the kernel itself
 *   has the file system mounted (access=both: a FUSE mount at the mount
 *   point), exec goes through the kernel instead, with nothing emulated.
 *   execvp/execvpe/execlp and posix_spawnp search PATH themselves when a
 *   directory of it lies in adafs (glibc's search calls the kernel).
 * - The new program's environment always carries $ADAFS_MOUNT,
 *   $ADAFS_INSTANCE, $ADAFS_MOUNTS and $LD_PRELOAD as this process started
 *   with them, so
 *   a program that builds a fresh environment for its child does not lose
 *   the mount; and PWD names the working directory when it is inside
 *   adafs (the kernel's one is elsewhere), which the child's pathres
 *   picks up; a PWD naming the mount when the working directory is no
 *   longer there is dropped.
 * - adafs descriptors without close-on-exec are handed on in
 *   $ADAFS_PRELOAD_FDS (number, flags, offset, full path: the mount is
 *   found again from it) and reopened on the
 *   same numbers by the new program's interposer before main(), so that a
 *   shell's `cmd > /mount/file` works. After the exec the two processes no
 *   longer share the offset (doc/preload.md).
 * - Shared mappings of adafs files are written back before an exec.
 * posix_spawn() and posix_spawnp() get the same environment; descriptors
 * their file actions dup2 onto other numbers are not described (the new
 * program sees EBADF on them). Static binaries do not pass through here.
 * What crosses the exec (the environment, the descriptors, the program's
 * adafs path) is written and taken back in exec_handover.c. */
#include "preload.h"
#include "exec_int.h"
#include "mapping.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

enum exec_kind { EXEC_PATH, EXEC_SEARCH, EXEC_FD };

/* The kernel reads this much of a script's first line (BINPRM_BUF_SIZE)
 * and follows this many interpreters that are scripts themselves. */
#define SHEBANG_MAX 256
#define INTERP_DEPTH 4

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U   /* Linux 6.3: an executable memfd, whatever vm.memfd_noexec says */
#endif

/* One exec or spawn being carried out, its environment prepared. */
struct launch {
    bool spawn;
    pid_t *pid;
    const posix_spawn_file_actions_t *actions;
    const posix_spawnattr_t *attr;
    char **env;     /* room for one more entry after its nenv */
    size_t nenv;
};

static int run_path(struct launch *l, const char *path, char *const argv[], int depth);

/* Starts a program the kernel can open. Returns -errno (an exec returns
 * only when it failed), or 0 for a spawn that started. */
static int launch_kernel(struct launch *l, const char *kpath, char *const argv[])
{
    if (l->spawn)
        return -real.posix_spawn(l->pid, kpath, l->actions, l->attr, argv, l->env);
    real.execve(kpath, argv, l->env);
    return -errno;
}

/* Starts the program in memfd, telling its interposer where it came from. */
static int launch_memfd(struct launch *l, int memfd, const char *full, char *const argv[])
{
    char *exe = malloc(strlen(EXE_ENV) + strlen(full) + 2);
    if (!exe)
        return -ENOMEM;
    sprintf(exe, "%s=%s", EXE_ENV, full);
    l->env[l->nenv] = exe;
    l->env[l->nenv + 1] = NULL;
    int rc;
    if (l->spawn) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
        rc = -real.posix_spawn(l->pid, path, l->actions, l->attr, argv, l->env);
    } else {
        syscall(SYS_execveat, memfd, "", argv, l->env, AT_EMPTY_PATH);
        rc = -errno;
    }
    l->env[l->nenv] = NULL;
    free(exe);
    return rc;
}

/* The first line of a script, "#!interpreter [argument]", split as the
 * kernel splits it: blanks around both, the argument one word with any
 * blanks inside. */
static int parse_shebang(char *line, size_t len, char **interp, char **arg)
{
    char *end = memchr(line, '\n', len);
    if (!end)
        end = line + len;
    *end = '\0';
    while (end > line + 2 && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    char *p = line + 2;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p)
        return -ENOEXEC;
    *interp = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    if (*p) {
        *p++ = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
    }
    *arg = *p ? p : NULL;
    return 0;
}

/* A new argument vector (malloc'd, NULL-terminated): the nlead words of
 * lead in place of argv[0], then argv[1..]: how an interpreter is given a
 * script. NULL when out of memory. */
static char **argv_behind(char *const lead[], size_t nlead, char *const argv[])
{
    size_t argc = 0;
    while (argv && argv[argc])
        argc++;
    char **nargv = malloc((nlead + (argc ? argc - 1 : 0) + 1) * sizeof *nargv);
    if (!nargv)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < nlead; i++)
        nargv[k++] = lead[i];
    for (size_t i = 1; i < argc; i++)
        nargv[k++] = argv[i];
    nargv[k] = NULL;
    return nargv;
}

/* Runs script (as given: the interpreter opens it, through its own
 * interposer if it is in adafs) with the interpreter its first line
 * names, the way the kernel does: interpreter [argument] script argv[1..]. */
static int run_script(struct launch *l, char *head, size_t len, const char *script,
                      char *const argv[], int depth)
{
    char *interp, *arg;
    if (depth >= INTERP_DEPTH)
        return -ELOOP;
    int rc = parse_shebang(head, len, &interp, &arg);
    if (rc < 0)
        return rc;
    char *lead[3];
    size_t nlead = 0;
    lead[nlead++] = interp;
    if (arg)
        lead[nlead++] = arg;
    lead[nlead++] = (char *)script;
    char **nargv = argv_behind(lead, nlead, argv);
    if (!nargv)
        return -ENOMEM;
    rc = run_path(l, interp, nargv, depth + 1);
    free(nargv);
    return rc;
}

/* Copies size bytes of lfd into a sealed memfd named after full. */
static int copy_to_memfd(adafs *fs, int lfd, off_t size, const char *full, int *out)
{
    char name[250];   /* memfd_create(2): at most 249 bytes; the path may be cut */
    size_t keep = strlen(full) < sizeof name - sizeof EXE_MEMFD ? strlen(full)
                : sizeof name - sizeof EXE_MEMFD;
    memcpy(name, EXE_MEMFD, sizeof EXE_MEMFD - 1);
    memcpy(name + sizeof EXE_MEMFD - 1, full, keep);
    name[sizeof EXE_MEMFD - 1 + keep] = '\0';
    unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
    int fd = memfd_create(name, flags | MFD_EXEC);
    if (fd < 0 && errno == EINVAL)
        fd = memfd_create(name, flags);   /* a kernel before 6.3 */
    if (fd < 0)
        return -errno;
    int rc = 0;
    for (off_t done = 0; done < size;) {
        ssize_t n = adafs_pread_to_fd(fs, lfd, fd, done, (size_t)(size - done), done);
        if (n < 0)
            rc = (int)n;
        if (n <= 0)
            break;   /* an error, or the file shrank: run what there was */
        done += n;
    }
    /* The image cannot change under the program, as a busy text file cannot. */
    if (rc == 0 && real.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                              F_SEAL_SEAL) < 0)
        rc = -errno;
    if (rc < 0) {
        real.close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

/* Runs the open adafs file lfd of fs, a handle of its own that is
 * disconnected here, before the new program starts: in the child of a
 * vfork (shells use it) everything this process allocates is the
 * parent's, and would outlive the exec there. full is the file's path
 * for the new program, shown the one the caller gave (a script's
 * interpreter gets it, as from the kernel). */
static int run_open(struct launch *l, adafs *fs, int lfd, const struct stat *st,
                    const char *full, const char *shown, char *const argv[], int depth)
{
    int rc = 0;
    /* execve(2): EACCES without execute permission, or for a directory.
     * The job's files are all its user's: the owner bits apply, root
     * needs any x bit. */
    if (!S_ISREG(st->st_mode) || !(st->st_mode & 0111) ||
        (geteuid() != 0 && !(st->st_mode & S_IXUSR)))
        rc = -EACCES;
    char head[SHEBANG_MAX + 1];
    ssize_t n = 0;
    int memfd = -1;
    if (rc == 0 && (n = adafs_pread(fs, lfd, head, SHEBANG_MAX, 0)) < 0)
        rc = (int)n;
    bool script = rc == 0 && n >= 2 && head[0] == '#' && head[1] == '!';
    if (rc == 0 && !script)
        rc = copy_to_memfd(fs, lfd, st->st_size, full, &memfd);
    route_leave_private(fs);
    if (rc < 0)
        return rc;
    if (script)
        return run_script(l, head, (size_t)n, shown, argv, depth);
    rc = launch_memfd(l, memfd, full, argv);
    real.close(memfd);
    return rc;
}

static int run_adafs(struct launch *l, int m, const char *inner, const char *shown,
                     char *const argv[], int depth)
{
    char full[PATH_MAX];
    if (pathres_full_path(m, inner, full, sizeof full) < 0)
        return -ENAMETOOLONG;
    if (pathres_kernel_mount(m))   /* access=both: the kernel runs it itself */
        return launch_kernel(l, full, argv);
    adafs *fs = route_enter_private(ROUTE_OPEN, m);
    if (!fs)
        return -EIO;
    struct stat st;
    int lfd = adafs_open_stat(fs, inner, O_RDONLY, 0, &st);
    if (lfd < 0) {
        route_leave_private(fs);
        return lfd;
    }
    return run_open(l, fs, lfd, &st, full, shown, argv, depth);
}

static int run_path(struct launch *l, const char *path, char *const argv[], int depth)
{
    struct pathres r;
    int rc = pathres_resolve(AT_FDCWD, path, &r);
    if (rc < 0)
        return rc;
    if (!r.adafs)
        return launch_kernel(l, r.kpath, argv);
    return run_adafs(l, r.mount, r.inner, path, argv, depth);
}

/* fexecve of an adafs descriptor: its file, by the path it was opened as. */
static int run_fd(struct launch *l, int rfd, char *const argv[])
{
    char inner[PATH_MAX], full[PATH_MAX];
    int rc = route_fd_path(rfd, inner, sizeof inner);
    if (rc < 0)
        return rc;
    if (pathres_full_path(route_fd_mount(rfd), inner, full, sizeof full) < 0)
        return -ENAMETOOLONG;
    return run_adafs(l, route_fd_mount(rfd), inner, full, argv, 0);
}

/* execvp's fallback for a file the kernel cannot run (no #!, not ELF):
 * the shell reads it as a script. */
static int run_shell(struct launch *l, const char *file, char *const argv[])
{
    char *lead[2] = { (char *)"/bin/sh", (char *)file };
    char **nargv = argv_behind(lead, 2, argv);
    if (!nargv)
        return -ENOMEM;
    int rc = launch_kernel(l, "/bin/sh", nargv);
    free(nargv);
    return rc;
}

/* Does an element of the search path (empty: the working directory) lie
 * in adafs? */
static bool search_reaches_adafs(const char *search)
{
    for (const char *p = search;;) {
        const char *colon = strchrnul(p, ':');
        char dir[PATH_MAX];
        struct pathres r;
        if ((size_t)(colon - p) < sizeof dir) {
            snprintf(dir, sizeof dir, "%.*s", (int)(colon - p), p);
            if (pathres_resolve(AT_FDCWD, dir[0] ? dir : ".", &r) == 0 && r.adafs)
                return true;
        }
        if (!*colon)
            return false;
        p = colon + 1;
    }
}

/* execvp's and posix_spawnp's search, with glibc's rules: a name with a
 * slash is run as is; else each directory of $PATH in turn, going on
 * past those where it is missing (and past EACCES, reported at the end);
 * for execvp a file the kernel cannot run is given to /bin/sh. glibc's
 * own search runs when no directory of the path is in adafs. */
static int run_search(struct launch *l, const char *file, char *const argv[])
{
    if (strchr(file, '/')) {
        int rc = run_path(l, file, argv, 0);
        return rc == -ENOEXEC && !l->spawn ? run_shell(l, file, argv) : rc;
    }
    if (!*file)
        return -ENOENT;
    const char *search = getenv("PATH");
    if (!search)
        search = "/bin:/usr/bin";
    if (!search_reaches_adafs(search)) {
        if (l->spawn)
            return -real.posix_spawnp(l->pid, file, l->actions, l->attr, argv, l->env);
        real.execvpe(file, argv, l->env);
        return -errno;
    }
    bool eacces = false;
    for (const char *p = search;;) {
        const char *colon = strchrnul(p, ':');
        char cand[PATH_MAX];
        size_t dlen = (size_t)(colon - p);
        if (dlen + strlen(file) + 2 <= sizeof cand) {
            if (dlen)
                snprintf(cand, sizeof cand, "%.*s/%s", (int)dlen, p, file);
            else
                snprintf(cand, sizeof cand, "%s", file);
            int rc = run_path(l, cand, argv, 0);
            if (rc == 0)
                return 0;   /* a spawn started */
            if (rc == -ENOEXEC && !l->spawn)
                return run_shell(l, cand, argv);
            if (rc == -EACCES)
                eacces = true;
            else if (rc != -ENOENT && rc != -ESTALE && rc != -ENOTDIR && rc != -ENODEV &&
                     rc != -ETIMEDOUT)
                return rc;
        }
        if (!*colon)
            break;
        p = colon + 1;
    }
    return eacces ? -EACCES : -ENOENT;
}

static int exec_with(enum exec_kind kind, const char *file, int fd, char *const argv[],
                     char *const envp[])
{
    int lfd;
    if (!pl_active()) {
        return kind == EXEC_PATH ? real.execve(file, argv, envp)
             : kind == EXEC_SEARCH ? real.execvpe(file, argv, envp)
             : real.fexecve(fd, argv, envp);
    }
    mapping_sync_before_exec();   /* the mappings end with this program */
    char *added[2];
    int nadded;
    size_t nenv;
    char **env = exec_env(envp, added, &nadded, &nenv);
    if (!env) {
        errno = ENOMEM;
        return -1;
    }
    struct launch l = { .env = env, .nenv = nenv };
    int rc;
    if (kind == EXEC_FD)
        rc = (lfd = fdmap_get(fd)) >= 0 ? run_fd(&l, lfd, argv)
           : (real.fexecve(fd, argv, env), -errno);
    else if (pl_null(file))
        rc = -EFAULT;
    else if (kind == EXEC_SEARCH)
        rc = run_search(&l, file, argv);
    else
        rc = run_path(&l, file, argv, 0);
    free_env(env, added, nadded);
    errno = -rc;
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
    if (pl_null(file))
        return EFAULT;
    char *added[2];
    int nadded;
    size_t nenv;
    char **env = exec_env(envp, added, &nadded, &nenv);
    if (!env)
        return ENOMEM;
    struct launch l = { .spawn = true, .pid = pid, .actions = actions, .attr = attr,
                        .env = env, .nenv = nenv };
    int rc = search ? run_search(&l, file, argv) : run_path(&l, file, argv, 0);
    free_env(env, added, nadded); /* the child has its copy by now */
    return -rc;
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
