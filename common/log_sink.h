/* log_sink: routes the shared modules' log lines into a host program's own
 * log (the Slurm plugin hands them to slurmctld's). A header of its own so
 * it can sit beside a host's logging header without their names clashing. */
#ifndef ADAFS_LOG_SINK_H
#define ADAFS_LOG_SINK_H

#include "linknames.h"

/* The values of log.h's enum log_level. */
#define LOG_SINK_ERROR 0
#define LOG_SINK_WARN  1
#define LOG_SINK_INFO  2
#define LOG_SINK_DEBUG 3

/* Hands every line (without program name or time) to sink instead of the
 * log file; NULL goes back to the file. */
void log_set_sink(void (*sink)(int level, const char *line));

#endif
