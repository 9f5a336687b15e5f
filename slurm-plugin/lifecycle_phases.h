/* lifecycle_phases: what the lifecycle's files share with each other:
 * the failures of a set's answers and what they mean for the job
 * (lifecycle.c), the deploy (lifecycle_deploy.c) and the stages
 * (lifecycle_stage.c) as lifecycle_step() drives them. Internal to the
 * lifecycle: the driver and the shim see only lifecycle.h. */
#ifndef ADAFS_LIFECYCLE_PHASES_H
#define ADAFS_LIFECYCLE_PHASES_H

#include <stdbool.h>
#include <time.h>

#include "lifecycle_set.h"

/* The failures among a finished set's answers, worst first. */
struct lc_failures {
    size_t count;
    enum bb_failure worst;
    char *why;                     /* the first message of the worst kind */
};

void lc_note_failure(struct lc_failures *f, enum bb_failure kind, const char *why);
/* Looks at every answer of s that had come (finished: a copy of the
 * set's flags taken under its lock; NULL: all came): an agent's refusal
 * that is no failure of this step (tolerate, 0: none) is left for the
 * caller. */
void lc_set_failures(struct lc_set *s, struct bb_job *j, int tolerate, const bool *finished,
                     struct lc_failures *f);
/* Drops the set in flight and goes to teardown. */
void lc_to_teardown(struct bb_job *j);
/* After calls that failed: a node's or the job's fault ends the instance
 * (teardown, then the shim drains or holds); one that may pass is tried
 * again later, up to LC_ATTEMPTS times. Returns the step's events (f->why
 * freed). */
int lc_fail_or_retry(struct bb_job *j, struct lc_failures *f, time_t now);

/* Deploy: START on every node not yet started, CONFIGURE, then staging
 * in; and what their answers mean. Each returns the step's events. */
int lc_step_deploy(struct bb_job *j, const struct lc_env *env);
int lc_finish_start(struct bb_job *j, struct lc_set *s, const struct lc_env *env);
int lc_finish_clear(struct bb_job *j, struct lc_set *s, const struct lc_env *env);
int lc_finish_configure(struct bb_job *j, struct lc_set *s, const struct lc_env *env);

/* Stages: the next spec of a direction at or after stage_index (NULL: the
 * direction is done), a stage past its timeout (teardown: true), and what
 * a STAGE set's or WATCH set's answers mean. */
struct stage_spec *lc_current_spec(struct bb_job *j, enum stage_direction dir);
bool lc_stage_overdue(struct bb_job *j, const struct lc_env *env, enum stage_direction dir,
                      const struct stage_spec *spec);
int lc_step_stage(struct bb_job *j, const struct lc_env *env, enum stage_direction dir);
int lc_finish_stage(struct bb_job *j, struct lc_set *s, const struct lc_env *env);
int lc_finish_watch_failed(struct bb_job *j, struct lc_set *s, const bool *finished,
                           const struct lc_env *env);
int lc_finish_watch(struct bb_job *j, struct lc_set *s, enum stage_direction dir,
                    struct stage_spec *spec);

#endif
