/* qos_conf: the I/O quality of service keys of burst_buffer.conf
 * (AdafsQos*, doc/burst_buffer.conf.md), read by the plugin (which refuses
 * the whole file on a bad value, as for every key) and by adafs-qosd
 * (which reads only these keys, and rereads them when the file changes). */
#ifndef ADAFS_QOS_CONF_H
#define ADAFS_QOS_CONF_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

#include "qos_limits.h"

enum qos_policy { QOS_POLICY_STATIC, QOS_POLICY_PRIORITY, QOS_POLICY_PROPORTIONAL, QOS_POLICY_PSFA };
enum qos_weight { QOS_WEIGHT_NODES, QOS_WEIGHT_PRIORITY };
enum qos_jobs { QOS_JOBS_ALL, QOS_JOBS_BB };

/* "static", "priority", "proportional", "psfa"; -1 for another name. */
int qos_policy_from_name(const char *name);
const char *qos_policy_name(int policy);

struct qos_conf {
    char *paths;                 /* AdafsQosPaths: the PFS mount points; NULL: QoS off */
    int policy;                  /* AdafsQosPolicy (psfa) */
    struct qos_limits capacity;  /* AdafsQosCapacity: the site's Max_R per class */
    struct qos_limits dflt;      /* AdafsQosDefault: per job per node, when nothing else */
    struct qos_limits max;       /* AdafsQosMax: the most a job may ask */
    uint32_t period_ms;          /* AdafsQosPeriod (1 s; 100 ms to 60 s) */
    int weight;                  /* AdafsQosWeight: what priority weighs by (nodes) */
    int jobs;                    /* AdafsQosJobs: every job, or burst buffer jobs only (all) */
    char *socket;                /* AdafsQosSocket: the agents' --qos-socket */
    char *state_dir;             /* AdafsQosStateDir: adafs-qosd's state and records */
    uint32_t agent_timeout_ms;   /* AdafsQosAgentTimeout: a silent agent's jobs leave the sums */
    uint32_t relay_group;        /* AdafsQosRelayGroup: nodes per relay (32; 0: every node direct) */
    /* The plugin's keys adafs-qosd and the TaskProlog read too (set by
     * qos_conf_load only; the plugin checks them itself). */
    char *directive;             /* Directive (BB_ADAFS) */
    char *preload;               /* AdafsPreload */
    char *munge_socket;          /* AdafsMungeSocket; NULL: munge's default */
    uint16_t agent_port;         /* AdafsAgentPort (6830) ... */
    int agent_port_offset;       /* ... or AdafsAgentPortOffset + the slurmd port */
};

void qos_conf_defaults(struct qos_conf *c);
void qos_conf_free(struct qos_conf *c);

/* 1 when key is a QoS key and value was taken, 0 when key is not one of
 * ours, -1 with err naming key and value when the value is bad. */
int qos_conf_set(struct qos_conf *c, const char *key, const char *value, char *err, size_t errlen);

/* Loads the QoS keys of burst_buffer.conf at path (other keys are the
 * plugin's business). Defaults first; 0, or -1 with err naming the file,
 * line and key. */
int qos_conf_load(const char *path, struct qos_conf *c, char *err, size_t errlen);

/* The job's environment for the interposer (qos_client.h): NAME=VALUE
 * strings into out[0..3) (malloc'd; NULL past the last); how many. */
int qos_conf_job_env(const struct qos_conf *c, char *out[3]);

/* The limits a job's "#<prefix> qos ..." line asks for, from the text of
 * its directives (as the plugin stores them in the job's burst_buffer
 * field). 1 and *out filled when there is one, 0 when none, -1 with err
 * for a malformed one. */
int qos_directive_find(const char *prefix, const char *text, struct qos_limits *out, char *err,
                       size_t errlen);

#endif
