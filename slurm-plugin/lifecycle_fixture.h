/* lifecycle_fixture: what the lifecycle's unit tests share (test_lifecycle,
 * test_stageout_keep): a made-up job on nodes n1..nN, and stepping it
 * against the stand-in agents (fake_agents.h) until it waits for nothing.
 * Test code only. */
#ifndef ADAFS_LIFECYCLE_FIXTURE_H
#define ADAFS_LIFECYCLE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "bb_config.h"
#include "bb_job.h"
#include "lifecycle.h"

/* The configuration the steps see, the test's clock (env.now), and the
 * lifecycle's environment (fake_transport; timeouts of 300 and 200 ms). */
extern struct bb_config cfg;
extern time_t fake_clock;
extern struct lc_env env;

/* Sets the clock and env, starts the fake agents of nodes n1..n<nodes>. */
void fixture_start(int nodes);

/* A job deploying on nodes n1..n<nodes> (agents at 127.0.0.1:6830, mount
 * /adafs/<id>), with stages (directive lines, or NULL) parsed. */
struct bb_job *job_of(uint32_t id, size_t nodes, const char *stages);

/* Steps j until it waits for nothing more now (a retry later, running,
 * complete), or ms pass; an outbox in env is flushed after each step.
 * Returns every event seen. */
int drive(struct bb_job *j, int ms);

#endif
