/* persist_job: what persistent instances (persist.h) mean for the records
 * the driver steps (doc/lifecycle.md, Persistent instances).
 *
 * An instance's servers are a record of their own in the driver's table
 * and the saved journal: a bb_job whose job_id is the instance's id on the
 * agents (above every Slurm job id: AGENT_PERSIST_ID_BASE plus the
 * creating job's id, or the next free one when a record holds that, as
 * after a slurmctld restart that reissued job ids), whose nodes are the
 * first N of AdafsPersistentNodes, whose owner is the creating job's user
 * and which carries the instance (bb_job.persist). The lifecycle deploys
 * it like a job's file system, with START's persistent flag, and leaves it
 * RUNNING (the instance READY) until a destroy_persistent tears it down.
 * No Slurm job ends it and no Epilog touches it.
 *
 * A job that names an instance waits in PHASE_DEPLOYING until the lines
 * it carries are settled (persist_job_step): its create_persistent's
 * instance READY, its use_persistent's instance READY, its
 * destroy_persistent's instance gone. A job that mounts one (a create or
 * use line) and asks no file system of its own starts no server: its
 * nodes get a CONFIGURE with the instance's servers and secret, and its
 * mount becomes $ADAFS_PERSISTENT_<NAME> (and $ADAFS_MOUNT). A job may
 * mount several file systems: its own (or its first instance) at
 * $ADAFS_MOUNT, each further instance NAME at $ADAFS_MOUNT.NAME with a
 * CONFIGURE of its own (agent_configure.name), all listed for the
 * interposer in $ADAFS_MOUNTS. Its end tears down its CONFIGUREs only.
 *
 * No Slurm types, no locking: the driver's lock is held around every
 * call. */
#ifndef ADAFS_PERSIST_JOB_H
#define ADAFS_PERSIST_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bb_job.h"
#include "lifecycle.h"
#include "persist.h"

/* The create_ or use_persistent line whose instance the job mounts first,
 * or NULL. */
const struct persist_spec *persist_job_mount(const struct bb_request *req);

/* The job's further mounts: each create_ or use_persistent line but the
 * one its first mount is (all of them when it has a file system of its
 * own). persist_job_further gives the k-th (NULL past the last). */
size_t persist_job_nfurther(const struct bb_request *req);
/* Where a stage line's path inside the job's file systems lies: returns
 * the path within its mount and copies into name the instance of the
 * further mount it names ("$ADAFS_PERSISTENT_<NAME>/...": directive.h),
 * or empties name for the job's first mount. */
const char *persist_job_stage_mount(const struct bb_request *req, const char *inside,
                                    char name[PERSIST_NAME_MAX + 1]);

/* Whether the request mounts instance name (first or further). */
bool persist_job_mounts_name(const struct bb_request *req, const char *name);
const struct persist_spec *persist_job_further(const struct bb_request *req, size_t k);
/* Where the further mount of instance name of a job mounted at mount
 * lies: "<mount>.<name>" (instance.h's layout; malloc'ed, NULL if out of
 * memory). */
char *persist_job_further_mount(const char *mount, const char *name);

/* Does the record start servers: a job's own file system, or a persistent
 * instance's servers? (A job that mounts an instance or only destroys one
 * starts none; stage lines of a job that mounts one copy into and out of
 * the instance.) The request's part: */
bool persist_request_own_servers(const struct bb_request *req);
bool persist_job_own_servers(const struct bb_job *j);

/* Does the job's processes get a file system (own or an instance's)? */
bool persist_job_mounts(const struct bb_job *j);

/* The submit-time rules of a request's persistent lines, for user uid
 * (member of groups[0..ngroups)): several file systems (its own and
 * instances, or several instances) only through the interposer, not with
 * a kernel mount (kernel_mount: the job's access=fuse or both, given or
 * the site's default: adafs-fuse serves one file system per job); a use_
 * only of an instance that exists and that uid may use; a create_ only of
 * a free name; a destroy_ only of an existing instance of uid's (or
 * root's). 0, or -1 with a message naming the line in err. */
int persist_job_check_submit(const struct persist_table *t, const char *prefix,
                             const struct bb_request *req, bool kernel_mount, uint32_t uid,
                             const uint32_t *groups, size_t ngroups, char *err, size_t errlen);

/* A node of AdafsPersistentNodes, as the shim found it in Slurm's table. */
struct persist_node {
    const char *name, *agent_host;
    int agent_port;
};

/* The newest record of the servers of instance name (of the creating job
 * creator; 0: any), torn down or not; NULL if none. */
struct bb_job *persist_job_record(struct bb_job *jobs, const char *name, uint32_t creator);

/* Creates the instance of the create line spec of job creator: its record
 * in t (persist_create) and the record of its servers on the first
 * spec->nodes of nodes[0..nnodes) (all when 0), DEPLOYING, under an id no
 * record in jobs holds, not yet in jobs (the caller links and saves it).
 * NULL with the reason in err: the name is taken, the pool too small, too
 * few nodes. */
struct bb_job *persist_job_servers(struct persist_table *t, const struct bb_job *jobs,
                                   const struct persist_spec *spec,
                                   const struct bb_job *creator, uint32_t access_gid,
                                   const struct persist_node *nodes, size_t nnodes,
                                   const char *storage, uint64_t chunk_size, time_t now,
                                   char *err, size_t errlen);

/* After a restart: links into t the instances of the loaded records (all
 * but those torn down). */
void persist_job_adopt(struct persist_table *t, struct bb_job *jobs);

/* destroy_persistent name by uid, users[0..nusers) the other running or
 * pending jobs that mount it (Slurm's; the first 8 listed): refused as
 * persist_check_destroy does (err, NULL), also while a record in jobs of a
 * job that mounts it is not torn down (a job that ended may still stage
 * out of it); else its servers' record goes to teardown and is returned
 * (the caller saves it). */
struct bb_job *persist_job_destroy(struct persist_table *t, struct bb_job *jobs, const char *name,
                                   uint32_t uid, const uint32_t *users, size_t nusers, char *err,
                                   size_t errlen);

/* In place of lifecycle_step() for every record: an instance's servers
 * are stepped and the instance's state follows (torn down: out of t), and
 * while it is ready its agents are asked what it holds every
 * PERSIST_POLL_S seconds (persist_instance.used, for show burst); a
 * job waiting on its persistent lines is held until they are settled,
 * or fails (FAIL_USER, the reason) when one cannot be; then stepped. */
#define PERSIST_POLL_S 10
int persist_job_step(struct persist_table *t, struct bb_job *jobs, struct bb_job *j,
                     const struct lc_env *env);

#endif
