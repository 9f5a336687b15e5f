/* libFuzzer target: the SWF and sacct line parsers must never crash, overrun
 * or leave a parsed job inconsistent on any input: a line is either a job
 * (with the invariants the model relies on, walltime_job_check's ranges
 * among them), ignorable, or an error with a non-empty reason. */
#include "walltime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *line = malloc(size + 1);
    memcpy(line, data, size);
    line[size] = '\0';

    struct walltime_job job;
    char err[256];
    err[0] = '\0';
    int r = walltime_parse_swf_line(line, &job, err, sizeof(err));
    if (r < 0 && !err[0])
        abort();                          /* an error must say why */
    if (r == 1 && (job.submit_time < 0 || job.req_time == 0 || job.req_time < -1 ||
                   walltime_job_check(&job, err, sizeof(err)) < 0))
        abort();

    err[0] = '\0';
    r = walltime_parse_sacct_line(line, &job, err, sizeof(err));
    if (r < 0 && !err[0])
        abort();
    if (r == 1 && (job.submit_time < 0 || job.run_time < 0 || job.wait_time < 0 ||
                   job.req_time == 0 || job.req_time < -1 ||
                   walltime_job_check(&job, err, sizeof(err)) < 0))
        abort();
    free(line);
    return 0;
}
