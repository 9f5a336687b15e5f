/* bb_config: burst_buffer.conf for burst_buffer/adafs.
 *
 * Slurm's standard keys (AllowUsers, DenyUsers, StageInTimeout,
 * StageOutTimeout, OtherTimeout, Directive, Flags) plus the adafs keys
 * documented in burst_buffer.conf.adafs(5). An unknown key, a bad value or an
 * unknown user name is an error naming the file and line, so a typo never
 * silently falls back to a default. */
#ifndef ADAFS_BB_CONFIG_H
#define ADAFS_BB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hostlist.h"
#include "qos_conf.h"
#include "directive.h"

#define BBCONF_PRIVATE_DATA     0x0001   /* users see only their own buffers */
#define BBCONF_TEARDOWN_FAILURE 0x0002   /* tear down even if stage-out failed */

struct bb_config {
    uid_t *allow_users;       /* NULL: everybody but DenyUsers */
    size_t allow_count;
    uid_t *deny_users;
    size_t deny_count;
    char *allow_users_str;    /* as written, for scontrol show burst */
    char *deny_users_str;
    uint32_t stage_in_timeout;    /* seconds */
    uint32_t stage_out_timeout;
    uint32_t other_timeout;
    char *directive;              /* "BB_ADAFS" */
    uint32_t flags;

    uint64_t chunk_size;          /* default chunk size */
    uint64_t default_capacity;    /* a job's capacity when it names none */
    uint64_t node_capacity;       /* the most one node may give one job */
    uint64_t total_capacity;      /* for scontrol show burst; 0: nodes x node_capacity */
    char *storage_path;           /* where servers keep data on each node */
    char *sysmap_db;              /* NULL: size and place from this file alone */
    uint16_t agent_port;          /* every node's agent listens here ... */
    int agent_port_offset;        /* ... or at its slurmd port + this (if != 0) */
    char *state_dir;              /* NULL: <StateSaveLocation>/adafs */
    uint32_t server_timeout_ms;   /* clients give EIO after this */
    uint32_t stage_out_keep;      /* seconds data stays after a failed stage-out */
    uint32_t stage_out_retry;     /* seconds between stage-out passes while kept */
    uint32_t stage_threads;       /* copy threads per node, at most */
    uint32_t stage_threads_per_cpu; /* ... per CPU the job has there (0: stage_threads) */
    uint64_t max_mdops;           /* stager limits toward the PFS; 0: none */
    uint64_t max_bandwidth;
    char *munge_socket;           /* NULL: munge's default */
    char *preload;                /* LD_PRELOAD for jobs; NULL/empty: not set */
    char *access_text;            /* AdafsAccess as written */
    enum bb_access access;        /* a job's access= when it names none */
    char *mount_prefix;           /* ADAFS_MOUNT is <prefix>/<job id> */
    char *walltime_model;         /* NULL: no predictions */
    int walltime_set_time_min;    /* let backfill use the conservative estimate */
    char *walltime_comment;       /* "admin_comment", "comment" or "none" */
    uint32_t walltime_margin;     /* percent added to the conservative estimate */
    double walltime_miss_rate;    /* share of jobs that may outrun it (0.05) */
    uint32_t walltime_learn_interval; /* seconds between teaching the model finished jobs */
    struct qos_conf qos;          /* AdafsQos*: I/O quality of service (qos_conf.h) */
    /* AdafsPersistentNodes: where persistent instances' servers run, outside
     * any job's allocation; as written and expanded (empty: none). */
    char *persistent_nodes_str;
    struct hostlist persistent_nodes;
};

/* Loads path into cfg (defaults first). A missing file gives the defaults and
 * returns 1, so the caller can say so in its log; 0 on success; -1 with a
 * message in err on any error. */
int bb_config_load(const char *path, struct bb_config *cfg, char *err, size_t errlen);
void bb_config_free(struct bb_config *cfg);
/* Whether a reloaded cfg names another AdafsMungeSocket than in_use, the
 * one the agents' sessions were opened with at start (NULL: munge's
 * default): a change takes effect only when slurmctld restarts. */
bool bb_config_munge_socket_changed(const char *in_use, const struct bb_config *cfg);
/* Seconds after a job ended that its nodes' agents must wait for the
 * plugin's teardown (the Epilog's --timeout): StageOutTimeout, plus
 * AdafsStageOutKeep unless Flags=TeardownFailure, plus the slack of
 * common/stageout_bounds.h. Above STAGEOUT_RELEASE_DEFAULT_S the plugin says
 * so at load: the Epilog's default --timeout would end a kept stage-out early. */
uint64_t bb_config_release_needed_s(const struct bb_config *cfg);
/* Copy threads of the stage worker on a node where the job has `cpus`
 * CPUs (0: not known): stage_threads_per_cpu per CPU, at least 1 and at
 * most stage_threads; stage_threads when either is 0. So a worker uses
 * what its node gives the job, not a count fixed for every node. */
uint32_t bb_stage_threads(const struct bb_config *cfg, unsigned cpus);

/* 0 if uid may use burst buffers, else -1 and a reason in err. */
int bb_config_check_user(const struct bb_config *cfg, uid_t uid, char *err, size_t errlen);

#endif
