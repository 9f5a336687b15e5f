/* trace: reads a whole SWF or sacct file into memory, submit-time ordered.
 *
 * Malformed lines are reported one per line as "PATH:LINE: reason" and
 * skipped, so one bad record does not throw away a year of history. */
#include "walltime.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Stable order by submit time: ties keep file order (job id order). */
static int cmp_submit(const void *a, const void *b)
{
    const struct walltime_job *x = a, *y = b;
    if (x->submit_time != y->submit_time)
        return x->submit_time < y->submit_time ? -1 : 1;
    if (x->job_id != y->job_id)
        return x->job_id < y->job_id ? -1 : 1;
    return 0;
}

int walltime_trace_read(const char *path, enum walltime_format format,
                        FILE *report, struct walltime_trace *trace,
                        char *err, size_t errlen)
{
    memset(trace, 0, sizeof(*trace));
    trace->max_procs = -1;
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "cannot open trace %s: %s", path, strerror(e));
        return -e;
    }
    char *line = NULL, why[256];
    size_t cap = 0, alloc = 0;
    long lineno = 0;
    int64_t epoch = 0;                   /* SWF "; UnixStartTime:" */
    int rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        struct walltime_job job;
        int r;
        if (format == WALLTIME_SWF) {
            long long start;
            long procs;
            if (sscanf(line, "; UnixStartTime: %lld", &start) == 1 && start >= 0)
                epoch = start;
            if (sscanf(line, "; MaxProcs: %ld", &procs) == 1 && procs > 0)
                trace->max_procs = procs;
            r = walltime_parse_swf_line(line, &job, why, sizeof(why));
        } else {
            r = walltime_parse_sacct_line(line, &job, why, sizeof(why));
        }
        if (r < 0) {
            trace->malformed++;
            if (report)
                fprintf(report, "%s:%ld: %s (line skipped)\n", path, lineno, why);
            continue;
        }
        if (r == 0)
            continue;
        if (trace->n == alloc) {
            alloc = alloc ? alloc * 2 : 1024;
            struct walltime_job *j = realloc(trace->jobs, alloc * sizeof(*j));
            if (!j) {
                snprintf(err, errlen, "out of memory reading %s at line %ld", path, lineno);
                rc = -ENOMEM;
                break;
            }
            trace->jobs = j;
        }
        trace->jobs[trace->n++] = job;
    }
    if (rc == 0 && ferror(f)) {
        rc = -EIO;
        snprintf(err, errlen, "read error in %s after line %ld", path, lineno);
    }
    free(line);
    fclose(f);
    if (rc < 0) {
        walltime_trace_free(trace);
        return rc;
    }
    /* Log-relative SWF times become Unix times so time of day is real. */
    for (size_t i = 0; i < trace->n; i++)
        trace->jobs[i].submit_time += epoch;
    qsort(trace->jobs, trace->n, sizeof(*trace->jobs), cmp_submit);
    return 0;
}

void walltime_trace_free(struct walltime_trace *trace)
{
    free(trace->jobs);
    trace->jobs = NULL;
    trace->n = 0;
}
