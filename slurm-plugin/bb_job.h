/* bb_job: the plugin's record of one job's adafs instance, and the table of
 * them that is saved after every change and reloaded after a slurmctld
 * restart, so deployment, staging and teardown resume where they were.
 *
 * The saved table holds each record as typed fields (common/rpc.h's writer
 * and reader), the request already parsed and its %-symbols expanded, so
 * what is read back is exactly what was saved, whatever bytes a job name or
 * path holds. Each record is framed and checksummed on its own: one that
 * cannot be read becomes a marker naming the job and why (see
 * bb_job.unreadable), and costs that job only.
 *
 * No Slurm types here: the shim copies what it needs out of job_record_t. */
#ifndef ADAFS_BB_JOB_H
#define ADAFS_BB_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "directive.h"
#include "instance.h"
#include "rpc.h"

struct persist_instance;

enum bb_phase {
    PHASE_DEPLOYING,      /* servers being started on the job's nodes */
    PHASE_STAGING_IN,
    PHASE_RUNNING,        /* the job may run: it was released */
    PHASE_STAGING_OUT,
    PHASE_TEARDOWN,       /* stopping servers, wiping data */
    PHASE_COMPLETE,
};

/* Why a job's instance ended early; decides what the shim does to the job. */
enum bb_failure {
    FAIL_NONE,
    FAIL_USER,            /* the user's mistake (bad path, no permission): hold */
    FAIL_NODE,            /* an agent proved its node cannot serve: drain it, requeue */
    FAIL_CANCELLED,       /* scancel: nothing to report */
    FAIL_TRANSIENT,       /* nothing proven, retried until given up: hold, drain nothing */
};

struct bb_node {
    char *name;           /* Slurm node name */
    char *agent_host;     /* where its agent listens */
    int agent_port;
    char *storage;        /* where its server keeps data (sysmap or the default) */
    int numa_node;        /* pin the server there; -1: anywhere */
    int server_port;      /* 0 until started */
    bool started;
    bool stage_sent;      /* the current stage was started there */
    unsigned cpus;        /* the job's CPUs there (its stage threads follow); 0: unknown */
};

/* Requests in flight for a job (lifecycle.c's); not saved. Abandoning
 * them lets their answers be dropped as they come. */
struct bb_calls {
    void (*abandon)(struct bb_calls *calls);
};

struct stage_totals {
    uint64_t files, dirs, bytes, errors;
    double seconds;
    uint64_t verified;   /* files re-read and compared (verify=yes) */
};

struct bb_job {
    uint32_t job_id;
    uint32_t uid, gid;
    char *user;
    struct bb_request req;        /* parsed, %-symbols expanded */
    enum bb_phase phase;
    enum bb_failure failure;
    char *error;                  /* what failed, where (for the job's reason) */
    bool hurry;                   /* scancel --hurry: skip stage-out */
    bool released;                /* prolog_running was decremented */
    /* Not saved: the requests in flight (lifecycle.c), dropped when the
     * record is freed. */
    struct bb_calls *calls;
    /* Not saved either: a step whose calls failed for a reason that may
     * pass is tried again at retry_at (a restarted slurmctld starts the
     * count again). */
    unsigned attempts;
    time_t retry_at;

    struct bb_node *nodes;
    size_t nnodes;
    uint64_t node_capacity;
    uint64_t chunk_size;
    char secret_hex[INSTANCE_SECRET_HEX];
    /* The key the instance's servers share and no client has (their usage
     * exchange, doc/fairshare.md); "" in a record saved before there was
     * one: its servers then exchange nothing. Sent only in START. */
    char server_key_hex[INSTANCE_SECRET_HEX];
    char *storage;                /* storage directory on the nodes */
    char *mount;                  /* ADAFS_MOUNT */
    char *instance_path;          /* ADAFS_INSTANCE */

    size_t stage_index;           /* next stage_spec of the current direction */
    bool finalizing;              /* all workers done: the finalize pass runs */
    struct stage_totals in, out;

    time_t t_begin, t_deployed, t_staged_in, t_ended, t_staged_out, t_done;

    /* Saved: a failed stage-out kept (stageout_keep.h). out_failed: the
     * stage_out lines (bit = index in req.stages) that failed in this pass;
     * out_redo: the lines this pass runs again (0: all); t_out_failed: the
     * first failure (0: none), t_out_pass: this pass's start; out_passes:
     * passes run again. */
    uint64_t out_failed, out_redo;
    time_t t_out_failed, t_out_pass;
    uint32_t out_passes;
    /* Saved: this pass failed reading the job's own file system (one of
     * its servers did not answer): not kept, whatever the destination. */
    bool out_fs_lost;

    /* Saved: its saved record could not be read (why); job_id is the only
     * other field that holds anything. The plugin settles it with Slurm's
     * record of the job (hold it, or rebuild it to stage out). */
    char *unreadable;
    /* Saved: torn down because the job was given another allocation (a
     * restart found it pending, or on other nodes): it never acts on the
     * Slurm job, whose newer instance waits until this one is gone. */
    bool superseded;
    /* Not saved, set when loaded before its release: slurmctld has not yet
     * said whether the job still holds these nodes, so it is not stepped
     * until bb_p_job_begin() or the driver's first look claims it. */
    bool unclaimed;
    /* Saved: set on the record of a persistent instance's servers (its
     * job_id the instance's id, persist.h; persist_job.h): the instance,
     * owned here and linked into the driver's table while it lives. */
    struct persist_instance *persist;
    /* Not saved: the instance text of the persistent instance a job
     * mounts first (rebuilt by persist_job_step from the instance's record). */
    char *persist_text;
    /* Not saved: a job that mounts several file systems, the text of each
     * further mount's instance file (persist_job_further: the order of its
     * lines), and how many of them its nodes have had a CONFIGURE for (a
     * restart sends them all again). */
    char **further_text;
    size_t nfurther, further_configured;
    uint64_t key;                 /* the instance's identity in the saved journal */
    struct bb_job *next;
    struct bb_job *id_next;       /* the driver's index by job id (driver.h) */
};

const char *bb_phase_name(enum bb_phase phase);

/* Makes the instance's secret and its servers' key (both random,
 * independent). 0, or -errno from getrandom. */
int bb_job_make_secrets(struct bb_job *job);

/* Table: a singly linked list; callers hold the plugin's mutex. A job may
 * have several records while older allocations' instances are torn down:
 * the newest comes first, and that is the one bb_job_find() returns. The
 * plugin's table is also indexed by job id (driver_find, driver.h): a walk
 * of the list is for loaded tables and tests. */
struct bb_job *bb_job_find(struct bb_job *head, uint32_t job_id);
struct bb_job *bb_job_new(uint32_t job_id);
/* Unlinks and frees the record with this key, if any. */
void bb_job_remove_key(struct bb_job **head, uint64_t key);
void bb_job_free(struct bb_job *job);
/* The job's error and failure, formatted: bb_job_set_error keeps the first
 * (the cause; later failures are its consequences), bb_job_replace_error
 * always takes the new one (a kept stage-out's text changes from pass to
 * pass). -ENOMEM leaves the earlier text. */
int bb_job_set_error(struct bb_job *job, enum bb_failure failure, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int bb_job_replace_error(struct bb_job *job, enum bb_failure failure, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The saved table (format in bb_job.c): a journal bb_store.h appends to,
 * or a compacted copy with each record once. */
#define BB_JOB_FRAME_SIZE 28
/* Appends one job's framed record (its key is its identity in the
 * journal). 0 or -ENOMEM. */
int bb_job_frame(struct rpc_writer *w, const struct bb_job *job);
/* Appends the frame saying the record of this key is gone. */
int bb_job_frame_gone(struct rpc_writer *w, uint32_t job_id, uint64_t key);
/* Starts a saved table: w a new writer holding the file's header (free it
 * with rpc_writer_free). */
void bb_job_file_begin(struct rpc_writer *w);
/* Keys of new records go above key (keys loaded from a journal). */
void bb_job_keys_above(uint64_t key);

/* Saves all jobs atomically as a compacted table (bb_job_write_file). 0 or
 * -errno. */
int bb_job_save(const char *path, struct bb_job *head);
/* Writes data to path: a temporary file 0600 made fresh (O_EXCL,
 * O_NOFOLLOW), fsync'd and renamed into place. 0 or -errno. */
int bb_job_write_file(const char *path, const void *data, size_t len);
/* Loads the saved table; a missing file is an empty table. Also reads
 * version 2 and the JSON table of adafs 0.x (version 1), whose requests
 * are text parsed again here. Returns how many records could not be read
 * (each is in the table as an unreadable marker when its job is known;
 * err describes the first), or -1 with a message naming the file in err
 * when nothing could be read. */
int bb_job_load(const char *path, struct bb_job **head, char *err, size_t errlen);

/* bb_job_load() of a table already in memory; name is for messages. */
int bb_job_parse(const char *data, size_t size, const char *name, struct bb_job **head,
                 char *err, size_t errlen);

/* The typed record codec the table is saved with (for tests and fuzzing):
 * encode appends one job's fields; decode reads them back into a new job,
 * or returns NULL with why in err. */
struct rpc_writer;
struct rpc_reader;
void bb_job_encode(struct rpc_writer *w, const struct bb_job *job);
struct bb_job *bb_job_decode(struct rpc_reader *r, char *err, size_t errlen);

#endif
