/* stageout_bounds.h: how long a job's data may still be wanted on its nodes
 * after the job ended, by default. The plugin's burst_buffer.conf defaults
 * (slurm-plugin/bb_config.c) and the Epilog's --timeout default
 * (prolog/adafs-epilog.c) both come from here, so that with the defaults the
 * node agents never tear a job down on their own while the plugin still
 * stages it out or keeps a failed stage-out for the user to fix. */
#ifndef ADAFS_STAGEOUT_BOUNDS_H
#define ADAFS_STAGEOUT_BOUNDS_H

#define STAGEOUT_TIMEOUT_DEFAULT_S 86400   /* burst_buffer.conf StageOutTimeout */
#define STAGEOUT_KEEP_DEFAULT_S 3600       /* burst_buffer.conf AdafsStageOutKeep */
/* Slack past both: the keep's end is checked every AdafsStageOutRetry (60 s)
 * and teardown itself takes its OtherTimeout (300 s). */
#define STAGEOUT_RELEASE_SLACK_S 600
/* The Epilog's default --timeout: the agent's own teardown comes only after
 * the longest a default plugin may still want the data. It is the bound
 * that holds when the plugin never asks (slurmctld down, a hung plugin). */
#define STAGEOUT_RELEASE_DEFAULT_S \
    (STAGEOUT_TIMEOUT_DEFAULT_S + STAGEOUT_KEEP_DEFAULT_S + STAGEOUT_RELEASE_SLACK_S)

#endif
