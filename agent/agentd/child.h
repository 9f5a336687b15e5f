/* child: processes the agent starts as a job's user, and their reaping.
 *
 * Every child runs with the job user's uid, gid and supplementary groups:
 * the agent itself is root, and nothing a user controls (paths, file
 * contents) is ever touched with root's rights. One reaper thread collects
 * every exit so no other wait can steal a status. */
#ifndef ADAFS_AGENT_CHILD_H
#define ADAFS_AGENT_CHILD_H

#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

struct user_id {
    uid_t uid;
    gid_t gid;
};

/* Starts the reaper. Call once, before any child is started. */
int child_init(void);

/* Forks, drops to u (refusing uid 0 and failing if root can be regained),
 * and execs argv. stdin is /dev/null; stdout and stderr go to out_fd and
 * err_fd (-1: /dev/null). keep_fd (-1: none) stays open in the child.
 * cpus (NULL: unchanged) is the child's CPU affinity. The environment is
 * exactly PATH=CHILD_PATH, HOME (the user's home, "/" if it has none),
 * USER and LOGNAME (if the uid has a name), LANG=C, and those of
 * ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS and TSAN_OPTIONS the agent
 * has (sanitizer builds). Returns the pid or -errno. */
#define CHILD_PATH "/usr/local/bin:/usr/bin:/bin"
pid_t child_spawn(const struct user_id *u, char *const argv[], int out_fd, int err_fd,
                  int keep_fd, const cpu_set_t *cpus);

/* child_spawn, its environment also holding extra ("NAME=VALUE" strings,
 * NULL-terminated, at most CHILD_EXTRA_ENV; NULL: none): what the agent
 * chose for this child, never anything a user sent. -E2BIG if more. */
#define CHILD_EXTRA_ENV 4
pid_t child_spawn_env(const struct user_id *u, char *const argv[], const char *const *extra,
                      int out_fd, int err_fd, int keep_fd, const cpu_set_t *cpus);

/* The CPUs of a NUMA node, from /sys/devices/system/node/node<N>/cpulist.
 * Returns 0 or -errno (-ENOENT: no such node). */
int child_numa_cpus(int node, cpu_set_t *cpus);

/* Forks, drops to u and runs fn(arg) there (fn must not log: another
 * thread may have held the log's lock at fork time); its return value (0..255) is the
 * exit status. For file work in directories the user owns. Returns the
 * status or -errno (-ETIMEDOUT after timeout_ms, the child is killed). */
int child_run_as(const struct user_id *u, int (*fn)(void *), void *arg, int timeout_ms);

/* Waits for pid's exit: returns its wait status, or -ETIMEDOUT (timeout_ms
 * < 0: forever). Each pid can be waited for once. */
int child_wait(pid_t pid, int timeout_ms);

/* Reads the one line a starting child writes on its ready pipe (fd):
 * waits at most timeout_ms for its newline or its end of file. line gets
 * what came, NUL-terminated, without the newline. Returns the bytes read
 * (0: it exited, or closed the pipe, saying nothing) or -ETIMEDOUT. */
int child_read_ready(int fd, int timeout_ms, char *line, size_t len);

/* Sends sig to pid if it is still a child that has not been reaped. */
void child_kill(pid_t pid, int sig);

/* Drops the calling process to u for good. Returns 0 or -errno. */
int child_drop_privileges(const struct user_id *u);

#endif
