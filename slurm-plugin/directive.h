/* directive: parses a job's #BB_ADAFS lines into a burst buffer request.
 *
 * A job asks for a file system with lines in its batch script's leading
 * comment block, or with the same text given to `sbatch --bb`:
 *
 *   #BB_ADAFS capacity=200G chunk=512K max_bw=500M max_mdops=2000 access=both
 *   #BB_ADAFS stage_in  source=/pfs/in  destination=input   type=directory
 *   #BB_ADAFS stage_out source=results  destination=/pfs/%j type=directory verify=yes
 *   #BB_ADAFS qos mdops=2000 bw=500M
 *
 * This module knows nothing of Slurm: the plugin hands it text and gets back
 * either a request or one message naming the offending token and where it
 * stands, which sbatch shows to the user. Paths inside the file system are
 * relative to it; paths on the parallel file system are absolute. %-symbols
 * (%j %u %x %A %a %N %%) are checked here and replaced at job start by
 * directive_expand(). */
#ifndef ADAFS_DIRECTIVE_H
#define ADAFS_DIRECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "fair_policy.h"
#include "qos_limits.h"
#include "stage_type.h"

#define DIRECTIVE_DEFAULT_PREFIX "BB_ADAFS"

enum stage_direction { STAGE_IN, STAGE_OUT };

/* How the job's processes reach its file system: the LD_PRELOAD
 * interposer, a FUSE kernel mount at the mount point, or both (the
 * interposer for the programs it reaches, the mount for the rest). */
enum bb_access { BB_ACCESS_UNSET = 0, BB_ACCESS_PRELOAD, BB_ACCESS_FUSE, BB_ACCESS_BOTH };

struct stage_spec {
    enum stage_direction direction;
    enum stage_type type;
    char *source;       /* stage_in: absolute PFS path; stage_out: inside path */
    char *destination;  /* stage_in: inside path; stage_out: absolute PFS path */
    int line;           /* where it was written (see struct bb_request.origin) */
    int verify;         /* verify=yes: re-read each copy and compare checksums */
};

/* Persistent instances (DataWarp style): a file system that outlives
 * jobs, created by one job, used by later ones, destroyed by another:
 *
 *   #BB_ADAFS create_persistent name=NAME capacity=SIZE [nodes=N] [access=user|group:GRP]
 *                               [fair_share=POLICY]
 *   #BB_ADAFS use_persistent name=NAME
 *   #BB_ADAFS destroy_persistent name=NAME
 *
 * A NAME is a letter then letters, digits or '_' (it becomes part of the
 * job's environment variable ADAFS_PERSISTENT_<NAME>). fair_share= is how
 * its servers share themselves among the jobs that use it at once
 * (common/fair_policy.h: off, job-fair, user-fair, group-fair, size-fair,
 * user-then-size); without it, each node agent's --fair-policy. */
enum persist_op { PERSIST_CREATE = 1, PERSIST_USE, PERSIST_DESTROY };
enum persist_access { PERSIST_ACCESS_USER = 0, PERSIST_ACCESS_GROUP };

#define PERSIST_NAME_MAX 32
#define PERSIST_MAX_LINES 8
#define PERSIST_MAX_NODES 4096

struct persist_spec {
    enum persist_op op;
    char name[PERSIST_NAME_MAX + 1];
    uint64_t capacity;             /* create: bytes over all its nodes */
    uint32_t nodes;                /* create: 0 = every AdafsPersistentNodes node */
    enum persist_access access;    /* create: who may use it */
    char *group;                   /* create, access=group:GRP: the group's name */
    char fair_share[FAIR_POLICY_NAME_MAX]; /* create: its servers' policy; "": the agents' */
    int line;                      /* where it was written ... */
    const char *origin;            /* ... "batch script" or "--bb" */
};

/* Where an option was written, for a submit-time refusal that names it. */
struct bb_where {
    const char *origin;     /* "batch script" or "--bb"; NULL: not given */
    int line;
};

struct bb_request {
    uint64_t capacity;      /* bytes over all nodes; 0: the configured default */
    uint64_t chunk_size;    /* 0: the configured default */
    /* The stager's limits toward the parallel file system per node, bytes/s
     * and metadata operations/s; 0: the site's (the plugin refuses more
     * than the site's maximum at submit). */
    uint64_t max_bw, max_mdops;
    struct bb_where capacity_at, max_bw_at, max_mdops_at;
    enum bb_access access;  /* BB_ACCESS_UNSET: the configured default */
    struct stage_spec *stages;
    size_t nstages;
    /* "#BB_ADAFS qos stat=1000 bw=500M": the job's own I/O demand toward
     * the parallel file system (qos_limits.h), and where it was written. */
    struct qos_limits qos;
    int qos_line;
    const char *qos_origin;
    /* create_/use_/destroy_persistent lines, in the order written. */
    struct persist_spec *persist;
    size_t npersist;
};

/* True when req asks for its own job file system: any option or stage
 * line; a request of only persistent-instance lines (and qos) asks none. */
int bb_request_wants_job_fs(const struct bb_request *req);

/* What the parser alone cannot know, checked at submit time: that
 * access=group:GRP names a group this host knows, and that nodes=N is not
 * more than the site's persistent nodes (persistent_nodes; 0: the site has
 * none, so no create_persistent at all). Returns 0, or -1 with a message
 * naming the token and line in err. */
int directive_check_persistent(const char *prefix, const struct bb_request *req,
                               size_t persistent_nodes, char *err, size_t errlen);

const char *persist_op_name(enum persist_op op);
/* 1 if name is a valid persistent instance's name (above), else 0. */
int persist_name_valid(const char *name);

/* A stage line's path inside the job's file systems may start with
 * "$ADAFS_PERSISTENT_<NAME>/" (or be just that): it then lies in the
 * persistent instance NAME the job mounts, not in its first file system
 * (as DataWarp's $DW_PERSISTENT_STRIPED_<name>). Returns the path after
 * that prefix (its '/' skipped) and copies NAME into name, or returns path
 * and empties name when it has no such prefix. */
#define DIRECTIVE_PERSISTENT_VAR "$ADAFS_PERSISTENT_"
const char *directive_inside_instance(const char *path, char name[PERSIST_NAME_MAX + 1]);

/* True when req asks for I/O quality of service and nothing else: the job
 * gets no file system, only the interposer under QoS. */
int bb_request_qos_only(const struct bb_request *req);

/* Limits a site may want to change live in the plugin's configuration; these
 * bound what the parser itself accepts. */
#define DIRECTIVE_MIN_CHUNK (4ULL << 10)
#define DIRECTIVE_MAX_CHUNK (64ULL << 20)
#define DIRECTIVE_MAX_STAGES 64
/* The longest request accepted, as bb_request_format writes it (the job's
 * burst_buffer field): it is parsed, copied into the job's record, encoded
 * and saved under slurmctld's job lock at the job's begin and end, so its
 * size is how long a user can make the plugin hold that lock. 64 stage
 * lines of 4 KiB paths would be 256 KiB; 64 KiB leaves 1 KiB a line. */
#define DIRECTIVE_MAX_REQUEST (64u << 10)

/* Parses the #<prefix> lines of script (may be NULL) and then the text of
 * --bb (may be NULL; there the "#<prefix>" is optional on each line).
 * Returns 1 and fills req when a directive was found, 0 when there is none
 * (the job asked for no burst buffer), -1 with a message in err otherwise.
 * req must be zeroed by the caller and freed with bb_request_free(). */
int directive_parse(const char *prefix, const char *script, const char *bb_option,
                    struct bb_request *req, char *err, size_t errlen);

void bb_request_free(struct bb_request *req);

/* Writes req back as canonical directive lines (malloc'd): what the plugin
 * stores as the job's burst_buffer field and parses again after a restart. */
char *bb_request_format(const char *prefix, const struct bb_request *req);

/* Values of the %-symbols for one job. */
struct symbol_values {
    uint32_t job_id;
    uint32_t array_job_id;   /* 0: not an array job */
    uint32_t array_task_id;
    const char *user;
    const char *job_name;
    const char *first_node;
};

/* Replaces %-symbols in text; returns a malloc'd string or NULL on ENOMEM. */
char *directive_expand(const char *text, const struct symbol_values *v);

/* "preload", "fuse", "both" and back; bb_access_parse gives
 * BB_ACCESS_UNSET for anything else. */
const char *bb_access_name(enum bb_access access);
enum bb_access bb_access_parse(const char *text);

#endif
