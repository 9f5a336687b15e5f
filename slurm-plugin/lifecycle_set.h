/* lifecycle_set: sets of requests, one to each of some of a job's nodes,
 * in flight together: what the lifecycle's steps (lifecycle.c,
 * lifecycle_deploy.c, lifecycle_stage.c) hand to the transport and read
 * the answers of. Internal to the lifecycle: the driver and the shim see
 * only lifecycle.h (struct lc_outbox, lc_outbox_flush).
 *
 * A set holds copies of what its requests need of the job (the record may
 * change or be freed before the set is built or answered); its calls and
 * bodies are made when it is sent (lc_set_send: at once, or when the
 * caller flushes its outbox off its lock). Answers arrive on the
 * transport's thread and touch only the set, under its lock; the set's
 * last answer calls lc_env.ready. */
#ifndef ADAFS_LIFECYCLE_SET_H
#define ADAFS_LIFECYCLE_SET_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_proto.h"
#include "instance.h"
#include "lifecycle.h"
#include "persist.h"
#include "stage_report.h"

enum set_kind { SET_START, SET_CLEAR, SET_CONFIGURE, SET_STAGE, SET_WATCH, SET_TEARDOWN, SET_POLL };

/* A worker's final WATCH answer, read on the transport's thread as it
 * comes: a step of a 4,096-node job then only adds up numbers under the
 * caller's lock, instead of decoding 4,096 JSON reports there. */
struct lc_digest {
    bool read;                     /* the answer was a finished stage's */
    int exit_status;
    struct stage_totals part;      /* its report's counters */
    char *why;                     /* a failed worker's first failure or message */
    bool fs_fault;                 /* some failed on the job's file system (fs_faults) */
};

/* One request to each of some of a job's nodes, in flight together. The
 * job holds it (bb_job.calls) until it has acted on the answers, or drops
 * it (abandoned: answers still to come are thrown away, and the last one
 * frees it). Answers touch only the set, under its lock. */
struct lc_set {
    struct bb_calls base;          /* first: bb_job_free abandons it */
    pthread_mutex_t lock;
    enum set_kind kind;
    uint16_t op;
    size_t n;
    size_t *node;                  /* each call's index in job->nodes */
    int *port;                     /* each call's agent port */
    /* The calls and their bodies are made only when the set is sent
     * (set_build: off the caller's lock when it has an outbox; a
     * 4,096-node set's calls are megabytes), from what the step copied of
     * the job into the set (the record may change or be freed before). */
    struct agent_call *call;
    struct rpc_writer *body;       /* each call's, unless shared */
    uint8_t *shared;               /* one body for all (CONFIGURE, WATCH, TEARDOWN) */
    size_t shared_len;
    int timeout_ms;
    bool unbuilt;                  /* out of memory building it: never sent */
    /* Makes the shared body (CONFIGURE's instance), or each call's. */
    int (*build_shared)(struct lc_set *s);
    void (*build)(const struct lc_set *s, size_t k, struct rpc_writer *w);
    uint32_t job_id;
    char secret_hex[INSTANCE_SECRET_HEX];
    char server_key_hex[INSTANCE_SECRET_HEX];
    struct agent_start start;      /* START: all but each node's own fields */
    char persist_name[PERSIST_NAME_MAX + 1]; /* START of a persistent instance's servers */
    char fair_policy[FAIR_POLICY_NAME_MAX];  /* ... and their fair_share= ("": the agents') */
    int32_t *numa;                 /* START: each node's NUMA node */
    uint32_t *threads;             /* STAGE: each node's worker's copy threads */
    struct agent_stage stage;      /* STAGE: all but the worker */
    char *stage_source, *stage_destination;
    struct instance instance;      /* CONFIGURE: all but the servers */
    int *server_port;              /* CONFIGURE: each node's server's */
    uint32_t access, uid, gid;     /* CONFIGURE */
    char *configure_text;          /* CONFIGURE of a persistent instance: its file as made */
    char further_name[PERSIST_NAME_MAX + 1];  /* CONFIGURE, STAGE of a further mount: its instance */
    size_t further;                /* CONFIGURE: 0 the first mount, k the k-th further one */
    struct lc_digest *digest;      /* WATCH: each answer, read as it came */
    bool *finished;
    int64_t *sent_ms;              /* when each was last sent */
    /* The nodes' names, agents' hosts and storage directories, copied: the
     * transport reads them until each call is done, a body is built from
     * them after the step, and an abandoned set outlives its record.
     * name_of[3i], [3i+1], [3i+2]: node i's name, agent host, storage. */
    char *names;
    const char **name_of;
    int hold_ms;
    size_t outstanding;            /* answers still to come */
    bool abandoned;
    bool failed;                   /* a WATCH failed: the others need not be waited for */
    bool strict;                   /* START: "already deployed" is a failure (leftovers cleared) */
    const struct lc_transport *transport;
    void (*ready)(void *arg);
    void *ready_arg;
};

/* A new empty set of the job's (NULL with the job's error set when out of
 * memory). */
struct lc_set *lc_set_new(struct bb_job *j, enum set_kind kind, const struct lc_env *env);
/* A request of the set to node i (every request of a set has one op);
 * made when the set is sent. */
void lc_set_add(struct lc_set *s, const struct bb_job *j, size_t i, uint16_t op);
/* The one body every request of the set carries (w's data, taken over);
 * -1 if it could not be encoded (w freed). */
int lc_set_share(struct lc_set *s, struct rpc_writer *w);
/* Sends the set and hands it to the job (j->calls): 0, or -1 (the set
 * freed, the job's error set) when it could not be built; an empty set is
 * freed and nothing is sent. */
int lc_set_send(struct bb_job *j, struct lc_set *s, const struct lc_env *env);
/* A set acted upon: freed after the caller's lock (its outbox), or now. */
void lc_set_retire(struct lc_set *s, const struct lc_env *env);
void lc_set_free(struct lc_set *s);
/* The job lets go of its set in flight: answers still to come are dropped. */
void lc_set_drop(struct bb_job *j);
/* A WATCH answered: the stage is done. */
bool lc_stage_done(const struct agent_call *c);
/* A WATCH set's k-th answer of a finished stage, read as it comes, on the
 * transport's thread (lifecycle_stage.c). */
void lc_digest_answer(struct lc_set *s, size_t k);

#endif
