/* jobs: this node's part of each job's adafs instance.
 *
 * Layout under a storage directory S and the mount prefix M (both owned by
 * root, not writable by users):
 *   S/<node>/job.<id>/        this node's server root, 0700, the job user's:
 *                             with a quota, a file system of its own mounted
 *                             there (store.h), so all it holds is bounded
 *   S/<node>/job.<id>.img     that file system's image, root's, 0600
 *   S/<node>/job.<id>.pid     the server's pid, for recovery
 *   M/<id>/                   the mount point: an empty directory of the job
 *                             user, so paths up to it exist for programs that
 *                             walk them (mkdir -p, cd); the interposer serves
 *                             everything below it
 *   M/.job.<id>.instance      the instance file and its secret, 0600, the job
 *   M/.job.<id>.secret        user's; the same path on every node
 *   M/.job.<id>.fuse          root's record of the job's FUSE mount at M/<id>
 *                             (access=fuse|both), see fusemount.h
 * The per-node level lets several agents share one host (the mini-cluster);
 * on a real cluster each host has one. Everything the agent writes as root
 * is in directories users cannot write; everything inside a job's directory
 * is handled by a child running as the job user. */
#ifndef ADAFS_AGENT_JOBS_H
#define ADAFS_AGENT_JOBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_proto.h"

struct agent_settings {
    const char *node;            /* this node's name */
    const char *adafsd_path;     /* absolute path of adafsd */
    const char *stage_path;      /* absolute path of adafs-stage */
    const char *fuse_path;       /* absolute path of adafs-fuse */
    const char *log_dir;         /* where servers' and stagers' logs go */
    char **storage_roots;        /* START may only use these or below */
    size_t nroots;
    const char *mount_prefix;    /* mount points are <prefix>/<name> */
    int start_timeout_ms;        /* a server not ready by then has failed */
    int stop_timeout_ms;         /* a server not gone by then is killed */
    const char *qos_socket;      /* QoS attach socket (qos.h); NULL: QoS off */
    const char *munge_socket;    /* munged's socket (NULL: its default), also given to the
                                  * servers of persistent instances (adafsd --munge-socket)
                                  * and to stagers ($ADAFS_MUNGE_SOCKET) */
    struct tbf_loop *tbf;        /* --node-bandwidth shared by AdapTBF; NULL: off */
    unsigned cpus;               /* CPUs of this node (--cpus; default: those the agent
                                  * may run on): a stage worker runs at most
                                  * threads_per_cpu per CPU of them */
    const char *fair_policy;     /* adafsd --fair-policy of the servers of persistent
                                  * instances (several users share them) that name none
                                  * (create_persistent fair_share=); NULL: off */
};

/* Checks the settings: -EINVAL for a node name that is not a plain word,
 * -ENAMETOOLONG for paths too long to build job paths under, -EPERM,
 * -ELOOP or -ENOTDIR for a storage root or mount prefix with a component
 * a user could change (see check_root_path). Returns 0 or -errno with a
 * message naming the option and the component in err. */
int jobs_init(const struct agent_settings *settings, char *err, size_t errlen);

/* Removes what crashed agents left on this node: stops their servers and
 * wipes their directories. Persistent instances (persistent.h) are kept:
 * each is listed again with its server, which is started again (same
 * storage, same port) if it is not running. Called once at start-up. */
void jobs_recover(void);

/* The text a refusal of an unknown job adds, so that slurmctld's reason
 * says why the job is gone: " (wiped when this agent started at T: its
 * predecessor stopped without tearing it down)" for one jobs_recover()
 * wiped, else " (this agent runs since T)". Returns buf. */
const char *jobs_unknown_note(uint32_t id, char *buf, size_t len);
/* Did jobs_recover() wipe job id? Then a request for it can never be
 * served: the job's fault class (AGENT_FAULT_JOB), not one to retry. */
bool jobs_wiped_at_start(uint32_t id);

/* Each returns 0 or -errno with a message for the plugin in e (naming the
 * node, the path and the errno) and whose fault it is: AGENT_FAULT_NODE
 * only for what proves this node cannot serve (its storage root or mount
 * prefix unusable, a program it must run missing); what a job's own user
 * can cause (a server killed or stopped while it starts) is transient.
 * START of a job already up here with the same user and secret answers
 * as the first did: a retry after a lost reply is not an error. */
int jobs_start(const struct agent_start *m, int *port, pid_t *pid, struct agent_error *e);
int jobs_configure(const struct agent_configure *m, struct agent_error *e);
int jobs_stage(const struct agent_stage *m, struct agent_error *e);

struct stage_status {
    int state;            /* enum agent_op_state */
    int exit_status;      /* the stager's exit status, -1 if killed */
    /* Each malloc'd: the first 4 MiB and a note on how much was dropped;
     * both are freed at teardown. */
    char *summary;        /* the stager's JSON (stdout) */
    char *errors;         /* the stager's messages (stderr) */
    /* A persistent instance's: where its server listens, its pid (0: it is
     * down) and the bytes its storage holds here. */
    bool persistent;
    int port, pid;
    uint64_t used;
};
/* STATUS of a persistent instance whose server is down starts it again
 * first (same storage and port). */
int jobs_status(uint32_t job_id, struct stage_status *st);
/* jobs_status once the job's stage is no longer in state `known` (its
 * stager ended), or after hold_ms, or once *cancel is set and jobs_wake()
 * called (its session ended): the plugin's long poll (AGENT_WATCH).
 * -ENOENT for a job not deployed here (or torn down while waiting). */
int jobs_watch(uint32_t job_id, int known, int hold_ms, const atomic_bool *cancel,
               struct stage_status *st);
/* Wakes every jobs_watch() to look at its cancel flag. */
void jobs_wake(void);
void stage_status_free(struct stage_status *st);

int jobs_teardown(uint32_t job_id, bool hurry, struct agent_error *e);

/* Waits until job_id is torn down on this node or timeout_s passes; then
 * tears down whatever is left. For the Epilog. */
int jobs_release(uint32_t job_id, int timeout_s, struct agent_error *e);

/* LIST's answer (agent_proto.h): u32 count, an agent_instance each. 0 or
 * -ENOMEM. */
struct rpc_writer;
int jobs_list_persistent(struct rpc_writer *w);

/* Stops every server and wipes every job: the admin asked (SIGINT). The
 * servers of persistent instances stay up for the next agent. */
void jobs_shutdown(void);

#endif
