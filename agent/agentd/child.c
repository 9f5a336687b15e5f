#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"
#include "net.h"

/* Exit statuses not yet collected by child_wait(). Small: the agent has a
 * handful of children per job. */
struct exited {
    pid_t pid;
    int status;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct exited *exits;
static size_t nexits, capexits;
static pid_t *running;
static size_t nrunning, caprunning;

static void record_exit(pid_t pid, int status)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nrunning; i++)
        if (running[i] == pid) {
            running[i] = running[--nrunning];
            break;
        }
    if (nexits == capexits) {
        size_t cap = capexits ? capexits * 2 : 16;
        struct exited *grown = realloc(exits, cap * sizeof(*grown));
        if (grown) {
            exits = grown;
            capexits = cap;
        }
    }
    if (nexits < capexits)
        exits[nexits++] = (struct exited){ pid, status };
    else
        log_error("out of memory recording the exit of pid %d", (int)pid);
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void *reaper(void *arg)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid > 0) {
            record_exit(pid, status);
        } else if (errno == ECHILD) {
            struct timespec ts = { 0, 50 * 1000 * 1000 };
            nanosleep(&ts, NULL);   /* no children yet */
        }
    }
    return NULL;
}

int child_init(void)
{
    pthread_t t;
    int rc = pthread_create(&t, NULL, reaper, NULL);
    if (rc)
        return -rc;
    pthread_detach(t);
    return 0;
}

static void track(pid_t pid)
{
    pthread_mutex_lock(&lock);
    if (nrunning == caprunning) {
        size_t cap = caprunning ? caprunning * 2 : 16;
        pid_t *grown = realloc(running, cap * sizeof(*grown));
        if (grown) {
            running = grown;
            caprunning = cap;
        }
    }
    if (nrunning < caprunning)
        running[nrunning++] = pid;
    pthread_mutex_unlock(&lock);
}

int child_drop_privileges(const struct user_id *u)
{
    struct passwd pw, *found = NULL;
    char buf[4096], err[256];
    bool named = getpwuid_r(u->uid, &pw, buf, sizeof(buf), &found) == 0 && found;
    return privdrop_to(u->uid, u->gid, named ? found->pw_name : NULL, err, sizeof(err));
}

/* A child's whole environment, made before the fork: nothing of root's
 * (HOME, PATH) or of wherever the agent was started, which the job's user
 * could read in /proc. The sanitizer options of a test build are kept:
 * they carry no secret and a sanitized child needs them. */
static const char *const sanitizer_vars[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                                              "TSAN_OPTIONS" };
#define SANITIZER_VARS (sizeof(sanitizer_vars) / sizeof(sanitizer_vars[0]))

struct child_env {
    char home[PATH_MAX + 8], user[300], logname[300];
    char sanitizer[SANITIZER_VARS][2048];
    char *vars[5 + SANITIZER_VARS + CHILD_EXTRA_ENV + 1];
};

static void child_env_make(const struct user_id *u, const char *const *extra,
                           struct child_env *e)
{
    struct passwd pw, *found = NULL;
    char buf[4096];
    bool named = getpwuid_r(u->uid, &pw, buf, sizeof(buf), &found) == 0 && found;
    size_t n = 0;
    e->vars[n++] = "PATH=" CHILD_PATH;
    snprintf(e->home, sizeof(e->home), "HOME=%s", named && pw.pw_dir[0] ? pw.pw_dir : "/");
    e->vars[n++] = e->home;
    if (named) {
        snprintf(e->user, sizeof(e->user), "USER=%s", pw.pw_name);
        snprintf(e->logname, sizeof(e->logname), "LOGNAME=%s", pw.pw_name);
        e->vars[n++] = e->user;
        e->vars[n++] = e->logname;
    }
    e->vars[n++] = "LANG=C";
    for (size_t i = 0; i < SANITIZER_VARS; i++) {
        const char *v = getenv(sanitizer_vars[i]);
        if (v && snprintf(e->sanitizer[i], sizeof(e->sanitizer[i]), "%s=%s", sanitizer_vars[i], v) <
                     (int)sizeof(e->sanitizer[i]))
            e->vars[n++] = e->sanitizer[i];
    }
    for (size_t i = 0; extra && extra[i]; i++)
        e->vars[n++] = (char *)extra[i];
    e->vars[n] = NULL;
}

static void redirect(int fd, int target)
{
    if (fd < 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0 && null != target) {
            dup2(null, target);
            close(null);
        }
    } else if (fd != target) {
        dup2(fd, target);
    }
}

int child_numa_cpus(int node, cpu_set_t *cpus)
{
    char path[96], list[4096];
    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, list, sizeof(list) - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    list[n] = '\0';
    CPU_ZERO(cpus);
    /* "0-3,8,10-11" */
    for (char *p = list; *p && *p != '\n';) {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p)
            return -EINVAL;
        if (*end == '-')
            hi = strtoul(end + 1, &end, 10);
        for (unsigned long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET(c, cpus);
        p = *end == ',' ? end + 1 : end;
    }
    return CPU_COUNT(cpus) ? 0 : -EINVAL;
}

pid_t child_spawn(const struct user_id *u, char *const argv[], int out_fd, int err_fd,
                  int keep_fd, const cpu_set_t *cpus)
{
    return child_spawn_env(u, argv, NULL, out_fd, err_fd, keep_fd, cpus);
}

pid_t child_spawn_env(const struct user_id *u, char *const argv[], const char *const *extra,
                      int out_fd, int err_fd, int keep_fd, const cpu_set_t *cpus)
{
    size_t nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    if (nextra > CHILD_EXTRA_ENV)
        return -E2BIG;
    struct child_env env;
    child_env_make(u, extra, &env);
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return -errno;
    pthread_mutex_lock(&lock);   /* the reaper must not see the pid before track() */
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        redirect(-1, 0);
        redirect(out_fd, 1);
        redirect(err_fd, 2);
        sigset_t all;
        sigemptyset(&all);
        pthread_sigmask(SIG_SETMASK, &all, NULL);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != report[1] && fd != keep_fd)
                close(fd);
        int rc = cpus && sched_setaffinity(0, sizeof(*cpus), cpus) < 0 ? -errno : 0;
        if (rc == 0)
            rc = child_drop_privileges(u);
        if (rc == 0) {
            execve(argv[0], argv, env.vars);
            rc = -errno;
        }
        if (write(report[1], &rc, sizeof(rc)) < 0)
            _exit(127);
        _exit(127);
    }
    int saved = errno;
    pthread_mutex_unlock(&lock);
    close(report[1]);
    if (pid < 0) {
        close(report[0]);
        return -saved;
    }
    track(pid);
    int child_rc = 0;
    ssize_t n = read(report[0], &child_rc, sizeof(child_rc));
    close(report[0]);
    if (n == sizeof(child_rc)) {   /* exec never happened */
        child_wait(pid, 5000);
        return child_rc < 0 ? child_rc : -EIO;
    }
    return pid;
}

int child_run_as(const struct user_id *u, int (*fn)(void *), void *arg, int timeout_ms)
{
    pthread_mutex_lock(&lock);
    pid_t pid = fork();
    if (pid == 0) {
        if (child_drop_privileges(u) < 0)
            _exit(126);
        _exit(fn(arg) & 255);
    }
    int saved = errno;
    pthread_mutex_unlock(&lock);
    if (pid < 0)
        return -saved;
    track(pid);
    int status = child_wait(pid, timeout_ms);
    if (status == -ETIMEDOUT) {
        child_kill(pid, SIGKILL);
        child_wait(pid, -1);
        return -ETIMEDOUT;
    }
    if (status < 0)
        return status;
    if (!WIFEXITED(status))
        return -EINTR;
    return WEXITSTATUS(status);
}

int child_wait(pid_t pid, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : net_now_ms() + timeout_ms;
    pthread_mutex_lock(&lock);
    for (;;) {
        for (size_t i = 0; i < nexits; i++)
            if (exits[i].pid == pid) {
                int status = exits[i].status;
                exits[i] = exits[--nexits];
                pthread_mutex_unlock(&lock);
                return status;
            }
        int64_t now = net_now_ms();
        if (now >= deadline) {
            pthread_mutex_unlock(&lock);
            return -ETIMEDOUT;
        }
        struct timespec ts = net_wall_after_ms(deadline - now < 1000 ? deadline - now : 1000);
        pthread_cond_timedwait(&changed, &lock, &ts);
    }
}

void child_kill(pid_t pid, int sig)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nrunning; i++)
        if (running[i] == pid) {
            kill(pid, sig);
            break;
        }
    pthread_mutex_unlock(&lock);
}

int child_read_ready(int fd, int timeout_ms, char *line, size_t len)
{
    size_t got = 0;
    int64_t deadline = net_now_ms() + timeout_ms;
    while (got + 1 < len && !memchr(line, '\n', got)) {
        int64_t left = deadline - net_now_ms();
        if (left <= 0) {
            line[got] = '\0';
            return -ETIMEDOUT;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        ssize_t n = read(fd, line + got, len - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    line[got] = '\0';
    line[strcspn(line, "\n")] = '\0';
    return (int)got;
}
