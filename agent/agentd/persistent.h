/* persistent: this node's servers of persistent instances (issue 25;
 * doc/lifecycle.md "Persistent instances").
 *
 * A persistent instance outlives jobs: its server runs as the owner with
 * `adafsd --owner UID [--access-group GID]`, tied to no job, and an agent
 * that starts again finds it and keeps it (server alive) or restarts it on
 * the same storage and the same port (server dead); only its TEARDOWN (the
 * destroy) stops it and wipes it. jobs.c serves it as one of its jobs
 * (under its instance id, agent_proto.h); this module holds what differs:
 * its paths, its record, and the checks on a server the agent did not
 * start itself.
 *
 * Layout under a storage directory S (the per-node level as for jobs:
 * several agents may share a host):
 *   S/<node>/persistent/               root's, 0755
 *   S/<node>/persistent/<name>/        the server root: the owner's, 0700,
 *                                      with a quota its own file system
 *                                      mounted there (store.h)
 *   S/<node>/persistent/<name>.img     that file system's image
 *   S/<node>/persistent/<name>.record  root's, 0600: what START said and the
 *                                      port; written once the server is up,
 *                                      removed first at the destroy (a
 *                                      directory without one is a leftover
 *                                      of a failed start or destroy: wiped)
 *   S/<node>/persistent/<name>.secret  the owner's, 0600: --secret-file
 *   S/<node>/persistent/<name>.serverkey the owner's, 0600: the servers' key
 *                                      (their usage exchange; adafsd finds
 *                                      it beside the secret)
 *   S/<node>/persistent/<name>.instance the owner's, 0600: the instance's
 *                                      servers (CONFIGURE: the exchange's
 *                                      peers), no job's mount
 *   S/<node>/persistent/<name>.pid     the server's pid (as a job's)
 *   S/<node>/persistent/<name>.bw      its rates (tbf_loop.h, as a job's) */
#ifndef ADAFS_AGENT_PERSISTENT_H
#define ADAFS_AGENT_PERSISTENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_proto.h"
#include "fair_policy.h"
#include "instance.h"

#define PERSISTENT_DIR "persistent"

/* What the agent needs to start an instance's server again. */
struct persistent_rec {
    uint32_t id;                          /* its instance id (>= AGENT_PERSIST_ID_BASE) */
    char name[AGENT_PERSIST_NAME_MAX + 1];
    uint32_t uid, gid, access_gid;
    uint32_t index, nservers;
    uint64_t chunk_size, quota;
    int32_t numa_node;
    char listen_host[INSTANCE_HOST_MAX];
    char storage[PATH_MAX];
    char secret_hex[INSTANCE_SECRET_HEX];
    char server_key_hex[INSTANCE_SECRET_HEX];  /* "": none (a record of before it) */
    int port;                             /* where its server listens, kept across restarts */
    char fair_policy[FAIR_POLICY_NAME_MAX]; /* its servers' --fair-policy (create_persistent
                                           * fair_share=); "": the agent's --fair-policy
                                           * (also a record of before it) */
};

/* From a persistent START (checked by jobs_start); 0, or -ENAMETOOLONG. */
int persistent_rec_from_start(struct persistent_rec *r, const struct agent_start *m);
/* The START that starts its server again (strings point into r). */
void persistent_rec_to_start(const struct persistent_rec *r, struct agent_start *m);

/* S/<node>/persistent and S/<node>/persistent/<name>. */
void persistent_parent(char *out, size_t len, const char *storage, const char *node);
void persistent_dir(char *out, size_t len, const char *storage, const char *node, const char *name);

/* Writes <dir>.record (root's, 0600, atomically); 0 or -errno. */
int persistent_record_save(const char *dir, const struct persistent_rec *r);
/* Reads one; 0, or -errno with what was wrong (the line) in err. */
int persistent_record_load(const char *path, struct persistent_rec *r, char *err, size_t errlen);

/* Is pid still the server of the root dir (an adafsd whose --root is dir,
 * running as uid, not a zombie)? The agent that started it may be gone:
 * nothing but /proc is asked. */
bool persistent_server_alive(pid_t pid, const char *dir, uid_t uid);
/* Stops such a server that is not the agent's child: SIGTERM, SIGKILL
 * after timeout_ms, and waits until it is gone (at most timeout_ms + 5 s
 * more: one stuck in the kernel is logged and left). */
void persistent_server_stop(pid_t pid, const char *dir, uid_t uid, int timeout_ms);

/* Bytes in use in dir's own file system (0 without one: the cheap answer). */
uint64_t persistent_used(const char *dir, bool own_fs);

/* Calls found(record path, arg) for each record under S/<node>/persistent,
 * and leftover(server root, arg) for each directory there without one. */
void persistent_scan(const char *storage, const char *node,
                     void (*found)(const char *record, void *arg),
                     void (*leftover)(const char *dir, void *arg), void *arg);

#endif
