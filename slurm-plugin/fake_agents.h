/* fake_agents: a stand-in transport (lifecycle.h's struct lc_transport)
 * for the unit tests of the lifecycle and the driver: each node's agent
 * answers as scripted (at once, slowly, never, every other time, with a
 * proven fault, as a squatter, or lying in its answers), from a thread of
 * its own with the delays asked for, without a network or a cluster.
 * Stages run for stage_ms and end with a report (stage_report.h). */
#ifndef ADAFS_FAKE_AGENTS_H
#define ADAFS_FAKE_AGENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "lifecycle.h"

enum fake_kind {
    FAKE_OK,
    FAKE_DEAD,          /* never answers: every request times out */
    FAKE_SLOW,          /* answers after delay_ms */
    FAKE_FLAPPING,      /* every other request fails (connection reset) */
    FAKE_NODE_FAULT,    /* START refused with a node fault, proven */
    FAKE_JOB_FAULT,     /* START refused with a job fault */
    FAKE_EXITING,       /* START refused with a transient fault: the server exited */
    FAKE_SQUATTER,      /* no authenticated answer; says "storage unusable, drain me" */
    FAKE_BAD_PORT,      /* START answered with port 0 */
    FAKE_LOST_STAGE,    /* WATCH answered: no stage runs (once, then as FAKE_OK) */
    FAKE_NO_HOLD,       /* WATCH answered at once with the stage running */
    FAKE_STAGE_FAILS,   /* stages end with exit status 1 and a failure in the report */
    FAKE_LEFTOVER,      /* START refused as "already deployed" the first time */
    FAKE_ALWAYS_LEFTOVER,   /* ... every time */
    FAKE_BUSY_STAGE,    /* STAGE refused as "already running" (its answer was lost) */
};

struct fake_node_script {
    enum fake_kind kind;
    int delay_ms;       /* FAKE_SLOW */
    int stage_ms;       /* how long a stage runs */
};

/* Starts the fake agents for nodes named n1..n<nodes> (the index in a
 * name is what the fake goes by). */
void fake_start(int nodes);
void fake_stop(void);
void fake_set(int node, const struct fake_node_script *script);   /* node from 1 */
/* Stages whose source holds text fail on every node as FAKE_STAGE_FAILS's
 * (NULL or "": none). */
void fake_fail_source(const char *text);
/* Those failures as the job's file system's (EIO, fs_faults: a server of
 * the instance gone), not the destination's. */
void fake_fail_fs(bool on);
extern const struct lc_transport fake_transport;

/* How many requests of op node got (from 1), and in all. */
int fake_calls(int node, uint16_t op);
int fake_total(uint16_t op);
void fake_reset_counts(void);

/* The lifecycle's ready callback for tests: counts, and wakes fake_wait. */
void fake_ready(void *arg);
/* Waits until a ready comes (true) or ms pass (false). */
bool fake_wait(int ms);

int64_t fake_now_ms(void);

#endif
