/* persist: the plugin's table of persistent instances, and the rules of
 * their life (issue 25; doc/lifecycle.md, Persistent instances).
 *
 * A persistent instance is created when the job that asks for it
 * (create_persistent) reaches stage-in, as DataWarp does; later jobs name
 * it (use_persistent) and are let in when their user owns it or, with
 * access=group:GRP, is a member of GRP; a destroy_persistent is refused,
 * with a reason naming the jobs, while any running or pending job uses it.
 * Capacity comes out of the pool of the persistent nodes
 * (AdafsTotalCapacity or what the caller says), which `scontrol show
 * burst` reports as TotalSpace/UsedSpace.
 *
 * Records encode to the plugin's saved state with common/rpc.h, one
 * record each, so the table survives a slurmctld restart. No Slurm types,
 * no locking: the shim holds its lock around every call. */
#ifndef ADAFS_PERSIST_H
#define ADAFS_PERSIST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "directive.h"
#include "rpc.h"

enum persist_state {
    PERSIST_STATE_CREATING,   /* its creating job is deploying its servers */
    PERSIST_STATE_READY,      /* jobs may use it */
    PERSIST_STATE_DESTROYING, /* its servers are stopping and its data going */
};

struct persist_instance {
    char name[PERSIST_NAME_MAX + 1];
    uint32_t owner_uid, owner_gid;
    char *owner;               /* the owner's name, for show burst */
    uint32_t access_gid;       /* 0: the owner's jobs only (gid 0 never shares) */
    char *group;               /* access=group:GRP as written, or NULL */
    char fair_share[FAIR_POLICY_NAME_MAX]; /* its servers' policy (fair_share=); "": each
                                            * node agent's --fair-policy (a record of
                                            * before it too) */
    uint64_t capacity;         /* bytes over all its nodes */
    uint64_t used;             /* bytes its servers last reported */
    uint32_t nodes;            /* requested count; 0: every persistent node */
    uint32_t creator_job;
    time_t created;
    enum persist_state state;
    time_t polled;             /* not saved: when its servers were last asked for used */
    struct persist_instance *next;
};

struct persist_table {
    struct persist_instance *head;
    uint64_t pool_capacity;    /* 0: unbounded (no AdafsTotalCapacity) */
};

struct persist_instance *persist_find(const struct persist_table *t, const char *name);

/* Records the instance spec (a create_persistent line) of job_id, owned by
 * uid/gid (user's name `user`), in state CREATING. access_gid is the gid
 * of spec->group, resolved by the caller (0 when spec has none). Refused
 * with a reason in err: the name is taken, or the pool has too little
 * left. Returns the new record or NULL. */
struct persist_instance *persist_create(struct persist_table *t, const struct persist_spec *spec,
                                        uint32_t job_id, uint32_t uid, uint32_t gid,
                                        const char *user, uint32_t access_gid, time_t now,
                                        char *err, size_t errlen);

/* May uid (a member of groups[0..ngroups)) use the instance name? 0, or
 * -1 with the reason in err (no such instance, not ready, not allowed). */
int persist_check_use(const struct persist_table *t, const char *name, uint32_t uid,
                      const uint32_t *groups, size_t ngroups, char *err, size_t errlen);

/* May uid destroy name now? users[0..nusers) are the running or pending
 * jobs (other than the destroying one) whose requests name it. 0, or -1
 * with the reason in err: no such instance, not its owner (root may), or
 * in use by the jobs listed. */
int persist_check_destroy(const struct persist_table *t, const char *name, uint32_t uid,
                          const uint32_t *users, size_t nusers, char *err, size_t errlen);

/* Removes and frees the record of name (its servers already gone). */
void persist_remove(struct persist_table *t, const char *name);

/* In the plugin each record is owned by the saved record of its servers
 * (bb_job.persist, persist_job.h) and the table only links them: link adds
 * one (a record loaded after a restart), unlink takes one out without
 * freeing it (a no-op when it is not in the table). */
void persist_link(struct persist_table *t, struct persist_instance *p);
void persist_unlink(struct persist_table *t, struct persist_instance *p);
void persist_table_free(struct persist_table *t);

/* Sum of the instances' capacity and used bytes. */
void persist_totals(const struct persist_table *t, uint64_t *capacity, uint64_t *used);

/* "ADAFS_PERSISTENT_<name>" into out (PERSIST_ENV_MAX bytes). */
#define PERSIST_ENV_MAX (sizeof("ADAFS_PERSISTENT_") + PERSIST_NAME_MAX)
void persist_env_name(const char *name, char out[PERSIST_ENV_MAX]);

/* One line per instance for scontrol show burst (malloc'd; "" when none). */
char *persist_status_text(const struct persist_table *t);

const char *persist_state_name(enum persist_state state);

/* The saved form of one record. decode returns NULL with a reason in err. */
void persist_encode(struct rpc_writer *w, const struct persist_instance *p);
struct persist_instance *persist_decode(struct rpc_reader *r, char *err, size_t errlen);
void persist_instance_free(struct persist_instance *p);

#endif
