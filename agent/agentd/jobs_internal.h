/* jobs_internal: what the files of jobs.h share, internal to them (main.c
 * sees only jobs.h). The table of jobs and its lock (jobs.c), a job's paths
 * and the root-safe ways to make and wipe them (jobs_files.c), START
 * (jobs_server.c), CONFIGURE (jobs_mount.c), STAGE, STATUS and WATCH
 * (jobs_stage.c), TEARDOWN and RELEASE (jobs_teardown.c), start-up's
 * recovery (jobs_recover.c).
 *
 * A job's record is read and changed under jobs_lock; a thread that works
 * on it for long (starting its server, tearing it down) takes it
 * (job_take_locked) and drops the lock meanwhile, so others are served. */
#ifndef ADAFS_AGENT_JOBS_INTERNAL_H
#define ADAFS_AGENT_JOBS_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "fusemount.h"
#include "instance.h"
#include "jobs.h"
#include "persistent.h"

struct stage_op {
    pid_t pid;
    int state;                 /* enum agent_op_state */
    int exit_status;
    int out_fd, err_fd;
    char *out, *errors;
    size_t out_len, err_len;
    size_t out_dropped, err_dropped;   /* bytes beyond OUTPUT_MAX */
    bool discard;              /* torn down: nobody will ask for output */
};

struct job {
    uint32_t id;
    struct user_id user;
    uint32_t index;
    char secret_hex[2 * INSTANCE_SECRET_SIZE + 1];   /* which instance: a START again must match */
    char storage[PATH_MAX];
    char dir[PATH_MAX];        /* S/<node>/job.<id> */
    char image[PATH_MAX];      /* S/<node>/job.<id>.img, its file system ("": none) */
    char mount[PATH_MAX];      /* "" until CONFIGURE */
    bool fuse;                 /* access=fuse|both: a kernel mount there (fusemount.h) */
    pid_t server_pid;
    unsigned long long server_start;   /* its start time (jobrecord.h): 0 unknown */
    uint32_t nservers;
    int port;
    struct stage_op stage;
    bool torn_down;
    bool tearing_down;         /* its record is removed: never written again */
    /* A thread works on the job without jobs_lock (starting it, tearing it
     * down: seconds of waiting on a server or a wipe), so the agent serves
     * other jobs meanwhile; others wait for it (job_take_locked). */
    bool busy;
    int waiters;               /* threads waiting to take it: keep the record */
    /* A persistent instance (persistent.h): what restarts its server; NULL
     * for a job. adopted: its server was started by an agent before this
     * one, so it is no child of ours (stopped through /proc, not reaped). */
    struct persistent_rec *persist;
    bool adopted;
    /* A job re-adopted at start-up (jobrecord.h): its server held by a
     * pidfd, signalled only through it. */
    bool pinned;
    int pidfd;
    struct job *next;
};

extern const struct agent_settings *cfg;
extern pthread_mutex_t jobs_lock;
extern pthread_cond_t jobs_changed;   /* a job taken, given, torn down; a stage ended */
extern struct job *jobs;

/* Paths are built from a storage root, a node name and a job id, all checked
 * for length before use (jobs_start, jobs_init), so they always fit. */
#define PATH_SLACK 512

/* jobs.c: the table */
void pathf(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int failf(struct agent_error *e, enum agent_fault fault, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
enum agent_fault exec_fault(int rc);
struct job *find_locked(uint32_t id);
bool job_take_locked(struct job *j);
void job_give_locked(struct job *j);
void forget_torn_down_locked(void);

/* jobs_files.c: a job's paths and files on this node */
bool storage_allowed(const char *path);
int check_root_path(const char *path, bool create, char *why, size_t whylen);
int make_user_dir(const char *dir, const struct user_id *u);
int write_user_file(const char *path, const char *text, const struct user_id *u);
int wipe_as_user(void *dir);
void path_join(char *out, size_t len, const char *a, const char *b);
void job_file_path(char *out, size_t len, uint32_t id, const char *what);
void remove_job_files_if_last(const char *storage, uint32_t id);
void pidfile_path(char *out, size_t len, const struct job *j);
void secret_path(char *out, size_t len, const struct job *j);
void beside_secret(char *out, size_t len, const struct job *j, const char *what);
int write_server_key(const struct job *j, const char *hex, char *path, size_t len);
int tbf_dir(const struct job *j, char *dir, size_t len);

/* jobs_server.c: a job's server */
bool server_up(const struct job *j);
int restart_persistent(struct job *j, struct agent_error *e);

/* jobs_mount.c: what fusemount needs of a job; the strings live in the
 * caller's bufs. */
struct fuse_bufs {
    char record[PATH_MAX], instance[PATH_MAX], log[PATH_MAX];
};
struct fusemount_job fuse_job(const struct job *j, const char *mount, struct fuse_bufs *b);
void remove_further_mounts(const struct job *j);

/* jobs_recover.c: a job's record (jobrecord.h), written again whenever
 * what an agent that restarts must check changes; staging: a stager is
 * about to run or runs. Logs a failure (the job is then wiped, not
 * re-adopted, by an agent that restarts). */
void job_record_write_locked(const struct job *j, bool staging);
void job_record_remove(const struct job *j);

/* jobs_teardown.c */
int teardown_taken(struct job *j, bool hurry, struct agent_error *e);

#endif
