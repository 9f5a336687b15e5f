/* report: what a run tells its caller.
 *
 * A JSON summary for the node agent (recorded for bbstat), a short text
 * summary with one line per failure for a person, and a progress bar with
 * rate and ETA for a terminal. */
#ifndef ADAFS_STAGE_REPORT_H
#define ADAFS_STAGE_REPORT_H

#include <stdio.h>

#include "stage.h"

/* The summary as one JSON object (malloc'd; NULL on ENOMEM): the report
 * of common/stage_report.h, which the plugin reads. */
char *report_json(const struct stage_options *opt, const struct stage_result *r);
/* The one-line text summary; each failure was logged when it happened
 * (stage_fail), so it is counted here, not listed again. */
void report_text(FILE *out, const struct stage_options *opt, const struct stage_result *r);
/* One progress line ending in '\r' (width about 79 columns). */
void report_progress(FILE *out, const struct stage_progress *p);
/* The same as one JSON line, for a caller that samples progress (the agent,
 * the benchmark checking the rate limits). */
void report_progress_json(FILE *out, const struct stage_progress *p);

#endif
