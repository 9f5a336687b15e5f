/* predict_json: one job as a JSON object, for `adafs-walltime predict`.
 *
 * In:  {"job_id":1,"uid":1000,"gid":100,"account":"a","partition":"p",
 *       "name":"sim","submit_time":1700000000,"req_time":3600,"procs":8,
 *       "nodes":1,"mem_kb":1048576}
 *      (req_time required; a "run_time" member marks a finished job.)
 * Out: {"job_id":1,"median_s":1234,"conservative_s":2345} */
#ifndef WALLTIME_PREDICT_JSON_H
#define WALLTIME_PREDICT_JSON_H

#include <stddef.h>

#include "walltime.h"

/* Parses a JSON job. Returns 0, or -1 with the reason in err. */
int job_from_json(const char *text, struct walltime_job *job, char *err, size_t errlen);

#endif
