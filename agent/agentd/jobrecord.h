/* jobrecord: the agent's record of a job it runs on this node, so that an
 * agent that is killed and started again (a crash, a restart) re-adopts
 * the job instead of wiping it (jobs_recover.c), and the proofs asked of
 * what it finds before it does.
 *
 * The record is S/<node>/job.<id>.record: root's, 0600, in the root-owned
 * node directory (no user can make, replace or link it), written whole and
 * atomically (fileio_replace) once the server is up, again at CONFIGURE
 * and around each stage, and removed first at teardown (whatever stops a
 * teardown halfway, the next agent finds a leftover to wipe).
 *
 * What a user can write is never taken for proof: the server is named by
 * its pid AND its start time in this boot (/proc/<pid>/stat, which the
 * kernel writes), held by a pidfd opened between two reads of that start
 * time, and signalled through it (no recycled pid is ever signalled). */
#ifndef ADAFS_AGENT_JOBRECORD_H
#define ADAFS_AGENT_JOBRECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "instance.h"

#define JOBREC_BOOT_ID_MAX 40

struct job_rec {
    uint32_t id, uid, gid, index, nservers;
    int port;
    int pid;                               /* the server's */
    unsigned long long pid_start;          /* its start time (clock ticks since boot) */
    char boot_id[JOBREC_BOOT_ID_MAX];      /* the boot it was started in */
    char secret_hex[INSTANCE_SECRET_HEX];
    char storage[PATH_MAX];
    char image[PATH_MAX];                  /* "": no file system of its own */
    char mount[PATH_MAX];                  /* "": not configured yet */
    bool fuse;                             /* a kernel mount at mount (access=fuse|both) */
    bool staging;                          /* a stager ran when it was written */
};

/* The record's path for the job directory dir (S/<node>/job.<id>). */
void jobrec_path(char *out, size_t len, const char *dir);

/* Writes r to path atomically, root's 0600. Returns 0 or -errno. */
int jobrec_save(const char *path, const struct job_rec *r);

/* Reads path into r if it is a record this agent wrote: a regular file,
 * not a link, root's, not readable or writable by others, one link. Else
 * -errno with why in err. */
int jobrec_load(const char *path, struct job_rec *r, char *err, size_t errlen);

/* This boot's id (/proc/sys/kernel/random/boot_id). Returns 0 or -errno. */
int jobrec_boot_id(char *out, size_t len);

/* Is pid running the server program (adafsd, or libtool's lt-adafsd)? The
 * exe link is the kernel's, not the process's. */
bool jobrec_runs_server(pid_t pid);

/* pid's start time and owner from /proc (the kernel's, not the
 * process's). Returns 0, or -ESRCH for no such process or a dead one. */
int jobrec_proc_start(pid_t pid, unsigned long long *start, uid_t *uid);

/* A pidfd on the process r names if it is still the one started then, as
 * r's uid, and runs the server program (exe ends in adafsd): the start
 * time is read before and after the pidfd is opened, so the pidfd holds
 * that very process. Returns the pidfd, or -errno with why in err. */
int jobrec_pin_server(const struct job_rec *r, char *err, size_t errlen);

/* Stops the process pidfd holds: SIGTERM, then after timeout_ms SIGKILL;
 * waits for it to end (up to timeout_ms more, at least 1 s). Closes pidfd. */
void jobrec_stop_pinned(int pidfd, int timeout_ms);

#endif
