/* bb_status: the text of `scontrol show bbstat [JOBID]` for adafs. */
#ifndef ADAFS_BB_STATUS_H
#define ADAFS_BB_STATUS_H

#include <stdint.h>

#include "bb_job.h"

/* One block per instance (only job_id's when it is not 0). malloc'd. */
char *bb_status_text(const struct bb_job *jobs, uint32_t job_id);

#endif
