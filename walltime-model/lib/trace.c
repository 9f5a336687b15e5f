/* trace: reads a whole SWF or sacct file into memory, submit-time ordered.
 *
 * Malformed lines are reported one per line as "PATH:LINE: reason" and
 * skipped, so one bad record does not throw away a year of history. */
#include "walltime.h"
#include "parse_util.h"
#include "sacct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* "; NAME: VALUE" with VALUE an integer in [min, max]: 1 and *out if line
 * is that header, -1 (reason in why) if it is but VALUE is not such a
 * number, 0 for any other line. */
static int swf_header(const char *line, const char *name, int64_t min, int64_t max,
                      int64_t *out, char *why, size_t whylen)
{
    size_t n = strlen(name);
    if (line[0] != ';')
        return 0;
    line += 1 + strspn(line + 1, " \t");
    if (strncmp(line, name, n) != 0 || line[n] != ':')
        return 0;
    line += n + 1;
    line += strspn(line, " \t");
    char tok[32], q[48];
    size_t len = strcspn(line, " \t\r\n");
    int64_t v;
    snprintf(tok, sizeof(tok), "%.*s", (int)len, line);
    if (len >= sizeof(tok) || parse_int64(tok, &v) < 0 || v < min || v > max) {
        snprintf(why, whylen, "header %s is not a number from %lld to %lld: '%s'", name,
                 (long long)min, (long long)max, parse_quote(tok, q));
        return -1;
    }
    *out = v;
    return 1;
}

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
    char delim[SACCT_DELIM_MAX + 1] = "|";   /* sacct: its header's */
    int rc = 0;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        struct walltime_job job;
        int r;
        if (format == WALLTIME_SWF) {
            int64_t v;
            /* Bounded so that shifted times stay far from overflowing. */
            r = swf_header(line, "UnixStartTime", 0, WALLTIME_MAX_SECONDS, &epoch,
                           why, sizeof(why));
            if (r == 0 && (r = swf_header(line, "MaxProcs", 1, WALLTIME_MAX_COUNT, &v,
                                          why, sizeof(why))) == 1)
                trace->max_procs = (long)v;
            if (r == 0)
                r = walltime_parse_swf_line(line, &job, why, sizeof(why));
            else if (r == 1)
                continue;
        } else {
            r = lineno == 1 ? sacct_header_delimiter(line, delim, why, sizeof(why)) : 0;
            if (lineno == 1 && r >= 0 && strcmp(delim, "|") == 0 && report)
                fprintf(report, "%s: fields separated by '|': a job name with a newline can add "
                        "lines of any user's jobs to the history; give sacct a --delimiter no "
                        "user knows, with its header (doc/walltime.md)\n", path);
            if (r == 1)
                continue;
            if (r == 0)
                r = sacct_parse_line(line, delim, &job, why, sizeof(why));
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
