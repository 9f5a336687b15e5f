/* lifecycle: drives one job's instance through deploy, stage-in, stage-out
 * and teardown by talking to the agents on its nodes.
 *
 * lifecycle_step() does the next piece of work for a job and returns at
 * once when the rest has to wait (a stage still copying): the plugin's one
 * driver thread calls it for every job about once a second, without holding
 * slurmctld's locks. All progress is in struct bb_job, which the plugin
 * saves after every step, so a restarted slurmctld resumes from the saved
 * table: a stage in flight keeps running on the agents and is polled again. */
#ifndef ADAFS_LIFECYCLE_H
#define ADAFS_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bb_config.h"
#include "bb_job.h"

/* What the shim must do to the Slurm job after a step (a bit mask). */
#define LC_CHANGED  0x1   /* the record changed: save the table */
#define LC_RELEASE  0x2   /* stage-in done: let the job start */
#define LC_FINISHED 0x4   /* torn down: after a failure, hold or requeue the job */

int lifecycle_step(struct bb_job *job, const struct bb_config *cfg);

/* The job ended: a running instance goes to stage-out (straight to
 * teardown with hurry); one still deploying or staging in is torn down; a
 * stage-out under way goes on unless hurry. */
void lifecycle_job_ended(struct bb_job *job, bool hurry);

/* scancel: as lifecycle_job_ended, and an instance cancelled before its job
 * ran records why. */
void lifecycle_cancel(struct bb_job *job, bool hurry);

/* What a failed call to an agent means for the job (rc and status as
 * agent_call's, fault the agent's): FAIL_NODE only for a fault the agent
 * proved in an authenticated answer; FAIL_USER for the job's own; every
 * other failure (no authenticated answer: refused, reset, timed out, a
 * handshake refused or not the agent's; an agent at its limit; a server
 * that did not start) is FAIL_TRANSIENT. FAIL_NONE for a success. */
enum bb_failure lifecycle_classify(int rc, int status, uint32_t fault);

/* A step whose calls failed for a reason that may pass is tried again:
 * LC_ATTEMPTS attempts in all, LC_RETRY_S seconds after the first failure
 * and twice as long after each next (5, 10, 20 s), counted while no call
 * set of the job succeeds. Records the next attempt (true) or, at the
 * last, the failure (FAIL_TRANSIENT, why and the count: false). */
#define LC_ATTEMPTS 4
#define LC_RETRY_S 5
bool lifecycle_retry(struct bb_job *job, const char *why, time_t now);

/* Replaces agent_call_all (NULL: back to it), for the unit tests. */
struct agent_request;
void lifecycle_set_transport(void (*call_all)(struct agent_request *reqs, size_t n, int timeout_ms));

/* The instance file text the agents write on every node. malloc'd. */
char *lifecycle_instance_text(const struct bb_job *job, const struct bb_config *cfg);

#endif
