/* bb_qos: the I/O quality of service lines of scontrol show bbstat, from
 * the status adafs-qosd writes each period (qos_proto.h). */
#ifndef ADAFS_BB_QOS_H
#define ADAFS_BB_QOS_H

#include <stdint.h>

/* Text for job_id (0: every job) from <state_dir>/status: malloc'd, or
 * NULL out of memory. Says so when qosd has written nothing, or nothing
 * lately. */
char *bb_qos_text(const char *state_dir, uint32_t job_id);

#endif
