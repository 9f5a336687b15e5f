/* swf: one line of a Standard Workload Format (v2.2) trace.
 *
 * 18 whitespace-separated numeric fields, -1 = unknown, ';' starts a header
 * comment. Only fields known at submit time are kept as features; wait time
 * and status are kept for the scheduling replay and for history only. */
#include "walltime.h"
#include "parse_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SWF_FIELDS 18

static const char *const swf_names[SWF_FIELDS] = {
    "job id", "submit time", "wait time", "run time", "allocated procs",
    "average CPU time", "used memory", "requested procs", "requested time",
    "requested memory", "status", "user id", "group id", "executable id",
    "queue", "partition", "preceding job", "think time",
};

int walltime_parse_swf_line(const char *line, struct walltime_job *job,
                            char *err, size_t errlen)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == ';' || *p == '\0' || *p == '\n' || *p == '\r')
        return 0;

    double v[SWF_FIELDS];
    int n = 0;
    char tok[64], q[48];
    while (*p && *p != '\n' && *p != '\r') {
        size_t len = strcspn(p, " \t\r\n");
        if (n == SWF_FIELDS) {
            snprintf(err, errlen, "more than %d fields", SWF_FIELDS);
            return -1;
        }
        if (len >= sizeof(tok)) {
            snprintf(err, errlen, "field %d (%s) is too long", n + 1, swf_names[n]);
            return -1;
        }
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (parse_double(tok, &v[n]) < 0 || fabs(v[n]) > PARSE_DOUBLE_INT_MAX) {
            snprintf(err, errlen, "field %d (%s) is not a number: '%s'", n + 1,
                     swf_names[n], parse_quote(tok, q));
            return -1;
        }
        n++;
        p += len;
        while (*p == ' ' || *p == '\t')
            p++;
    }
    if (n != SWF_FIELDS) {
        snprintf(err, errlen, "expected %d fields, got %d", SWF_FIELDS, n);
        return -1;
    }
    if (v[1] < 0) {
        snprintf(err, errlen, "field 2 (submit time) is negative: %.0f", v[1]);
        return -1;
    }
    for (int i = 2; i <= 3; i++)
        if (v[i] < 0 && v[i] != -1) {
            snprintf(err, errlen, "field %d (%s) is negative: %g", i + 1,
                     swf_names[i], v[i]);
            return -1;
        }
    if (v[8] != -1 && llround(v[8]) <= 0) {
        snprintf(err, errlen, "field 9 (requested time) must be > 0 or -1: %g", v[8]);
        return -1;
    }
    if (v[10] != -1 && !(v[10] >= 0 && v[10] <= 5)) {
        snprintf(err, errlen, "field 11 (status) must be -1 or 0 to 5: %g", v[10]);
        return -1;
    }
    /* SWF memory is KB per processor. */
    double mem_kb = v[9] > 0 && v[7] > 0 ? v[9] * v[7] : -1;
    if (mem_kb > PARSE_DOUBLE_INT_MAX) {
        snprintf(err, errlen, "field 10 (requested memory) %g KB x field 8 (requested "
                 "procs) %g is too large", v[9], v[7]);
        return -1;
    }

    walltime_job_init(job);
    job->job_id = (int64_t)v[0];
    job->submit_time = (int64_t)v[1];
    job->wait_time = (int64_t)v[2];
    job->run_time = (int64_t)v[3];
    job->procs = (int64_t)v[7];
    job->req_time = (int64_t)llround(v[8]);
    job->req_mem_kb = (int64_t)mem_kb;
    job->status = (int)v[10];
    job->uid = (int64_t)v[11];
    job->gid = (int64_t)v[12];
    job->exe = walltime_key_id((int64_t)v[13]);
    job->account = walltime_key_id((int64_t)v[14]);
    job->partition = walltime_key_id((int64_t)v[15]);
    return walltime_job_check(job, err, errlen) < 0 ? -1 : 1;
}
