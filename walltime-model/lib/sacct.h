/* sacct: the sacct reader's delimiter, learnt from the header line.
 *
 * A job name is the one field of WALLTIME_SACCT_FORMAT its user writes, and
 * sacct prints it as it is: a name holding a newline followed by a whole
 * line of '|'-separated fields puts a line of the user's making into the
 * history, with any uid (another user's jobs, to poison their predictions).
 * A delimiter no user knows (`--delimiter` with a random string, once per
 * run) makes such a line one field; sacct prints it in the header line
 * (without --noheader), where the reader takes it from. */
#ifndef WALLTIME_SACCT_H
#define WALLTIME_SACCT_H

#include <stddef.h>

#include "walltime.h"

/* Longest delimiter the reader takes (sacct's --delimiter). */
#define SACCT_DELIM_MAX 64

/* Is line sacct's header of WALLTIME_SACCT_FORMAT? 1 with its delimiter in
 * delim, 0 if it is not a header (does not start with "JobIDRaw"), -1 if it
 * is one of other fields or order (reason in err). */
int sacct_header_delimiter(const char *line, char delim[SACCT_DELIM_MAX + 1],
                           char *err, size_t errlen);

/* walltime_parse_sacct_line with fields separated by delim. */
int sacct_parse_line(const char *line, const char *delim, struct walltime_job *job,
                     char *err, size_t errlen);

#endif
