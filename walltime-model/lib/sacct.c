/* sacct: one line of `sacct --parsable2 [--delimiter=D] --format=WALLTIME_SACCT_FORMAT`.
 *
 * Fields are separated by '|' (or the delimiter of the header line, see
 * sacct.h) in the fixed order of WALLTIME_SACCT_FORMAT. Job
 * steps ("123.batch"), jobs that never started and jobs still pending or
 * running are not history yet and are ignored; anything not in the expected
 * shape is reported as malformed with the field that is wrong. */
#include "sacct.h"
#include "parse_util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum {
    F_JOBID, F_UID, F_GID, F_ACCOUNT, F_PARTITION, F_NAME, F_SUBMIT, F_START,
    F_TIMELIMIT, F_ELAPSED, F_NCPUS, F_NNODES, F_REQMEM, F_STATE, F_COUNT
};

static const char *const sacct_names[F_COUNT] = {
    "JobIDRaw", "UID", "GID", "Account", "Partition", "JobName", "Submit",
    "Start", "TimelimitRaw", "ElapsedRaw", "NCPUS", "NNodes", "ReqMem", "State",
};

/* "2024-01-31T12:00:00" (read as UTC: only differences and the time of day
 * matter) or plain epoch seconds (SLURM_TIME_FORMAT=%s). -1 if neither. */
static int64_t parse_time(const char *s)
{
    int64_t v;
    if (parse_int64(s, &v) == 0)
        return v >= 0 ? v : -1;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end)
        return -1;
    return (int64_t)timegm(&tm);
}

/* "4000M", "4G", "100Mn" (per node), "2Gc" (per CPU), "" (unknown). */
static int parse_mem_kb(const char *s, int64_t nodes, int64_t cpus, int64_t *kb)
{
    if (!*s) {
        *kb = -1;
        return 0;
    }
    char num[32];
    size_t len = strspn(s, "0123456789.");
    if (len == 0 || len >= sizeof(num))
        return -1;
    memcpy(num, s, len);
    num[len] = '\0';
    double v;
    if (parse_double(num, &v) < 0)
        return -1;
    const char *u = s + len;
    double scale = 1024;                 /* Slurm's default unit is MB */
    switch (*u) {
    case 'K': scale = 1; u++; break;
    case 'M': scale = 1024; u++; break;
    case 'G': scale = 1024.0 * 1024; u++; break;
    case 'T': scale = 1024.0 * 1024 * 1024; u++; break;
    default: break;
    }
    double mult = 1;
    if (*u == 'n') {
        mult = nodes > 0 ? (double)nodes : 1;
        u++;
    } else if (*u == 'c') {
        mult = cpus > 0 ? (double)cpus : 1;
        u++;
    }
    double total = v * scale * mult;
    if (*u || total > PARSE_DOUBLE_INT_MAX)
        return -1;
    *kb = (int64_t)total;
    return 0;
}

/* SWF-style status of a final state; -2 for states that are not final. */
static int parse_state(const char *s)
{
    static const struct { const char *name; int status; } states[] = {
        { "COMPLETED", 1 }, { "FAILED", 0 }, { "TIMEOUT", 0 },
        { "OUT_OF_MEMORY", 0 }, { "NODE_FAIL", 0 }, { "BOOT_FAIL", 0 },
        { "DEADLINE", 0 }, { "PREEMPTED", 0 }, { "CANCELLED", 5 },
        { "PENDING", -2 }, { "RUNNING", -2 }, { "REQUEUED", -2 },
        { "SUSPENDED", -2 }, { "RESIZING", -2 }, { "REVOKED", -2 },
    };
    size_t len = strcspn(s, " ");
    for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
        if (strlen(states[i].name) == len && strncmp(s, states[i].name, len) == 0)
            return states[i].status;
    return -1;
}

int sacct_header_delimiter(const char *line, char delim[SACCT_DELIM_MAX + 1],
                           char *err, size_t errlen)
{
    size_t len = strcspn(line, "\r\n"), head = strlen(sacct_names[0]);
    if (strncmp(line, sacct_names[0], head) != 0)
        return 0;
    const char *second = strstr(line + head, sacct_names[1]);
    size_t dlen = second ? (size_t)(second - line) - head : 0;
    if (dlen == 0 || dlen > SACCT_DELIM_MAX || second > line + len) {
        snprintf(err, errlen, "header line: no delimiter of 1 to %d bytes between %s and %s",
                 SACCT_DELIM_MAX, sacct_names[0], sacct_names[1]);
        return -1;
    }
    memcpy(delim, line + head, dlen);
    delim[dlen] = '\0';
    const char *p = line;
    for (int k = 0; k < F_COUNT; k++) {
        size_t nl = strlen(sacct_names[k]);
        if (strncmp(p, sacct_names[k], nl) != 0 ||
            (k + 1 < F_COUNT && strncmp(p + nl, delim, dlen) != 0)) {
            snprintf(err, errlen, "header line: expected the fields %s", WALLTIME_SACCT_FORMAT);
            return -1;
        }
        p += nl + (k + 1 < F_COUNT ? dlen : 0);
    }
    if (p != line + len) {
        snprintf(err, errlen, "header line: expected the fields %s", WALLTIME_SACCT_FORMAT);
        return -1;
    }
    return 1;
}

int walltime_parse_sacct_line(const char *line, struct walltime_job *job,
                              char *err, size_t errlen)
{
    return sacct_parse_line(line, "|", job, err, errlen);
}

int sacct_parse_line(const char *line, const char *delim, struct walltime_job *job,
                     char *err, size_t errlen)
{
    char buf[4096], q[48];
    size_t len = strcspn(line, "\r\n"), dlen = strlen(delim);
    if (len == 0)
        return 0;
    if (len >= sizeof(buf)) {
        snprintf(err, errlen, "line longer than %zu bytes", sizeof(buf) - 1);
        return -1;
    }
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (strncmp(buf, sacct_names[0], strlen(sacct_names[0])) == 0 &&
        strncmp(buf + strlen(sacct_names[0]), delim, dlen) == 0)
        return 0;                        /* header of a run without --noheader */

    char *f[F_COUNT];
    int n = 0;
    for (char *p = buf;; ) {
        if (n == F_COUNT) {
            snprintf(err, errlen, "more than %d '%s'-separated fields", F_COUNT, delim);
            return -1;
        }
        f[n++] = p;
        char *bar = strstr(p, delim);
        if (!bar)
            break;
        *bar = '\0';
        p = bar + dlen;
    }
    if (n != F_COUNT) {
        snprintf(err, errlen, "expected %d '%s'-separated fields (%s), got %d",
                 F_COUNT, delim, WALLTIME_SACCT_FORMAT, n);
        return -1;
    }

    int64_t id;
    if (strchr(f[F_JOBID], '.'))
        return 0;                        /* a step, not a job */
    if (parse_int64(f[F_JOBID], &id) < 0 || id < 0) {
        snprintf(err, errlen, "field 1 (JobIDRaw) is not a job id: '%s'",
                 parse_quote(f[F_JOBID], q));
        return -1;
    }
    int status = parse_state(f[F_STATE]);
    if (status == -1) {
        snprintf(err, errlen, "field 14 (State) is not a Slurm job state: '%s'",
                 parse_quote(f[F_STATE], q));
        return -1;
    }
    if (status == -2)
        return 0;                        /* not finished: not history yet */

    walltime_job_init(job);
    job->job_id = id;
    job->status = status;
    static const int numeric[] = { F_UID, F_GID, F_ELAPSED, F_NCPUS, F_NNODES };
    int64_t v[F_COUNT];
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        int k = numeric[i];
        if (parse_int64(f[k], &v[k]) < 0 || v[k] < 0) {
            snprintf(err, errlen, "field %d (%s) is not a non-negative integer: '%s'",
                     k + 1, sacct_names[k], parse_quote(f[k], q));
            return -1;
        }
    }
    job->uid = v[F_UID];
    job->gid = v[F_GID];
    job->run_time = v[F_ELAPSED];
    job->procs = v[F_NCPUS];
    job->nodes = v[F_NNODES];

    job->submit_time = parse_time(f[F_SUBMIT]);
    if (job->submit_time < 0) {
        snprintf(err, errlen, "field 7 (Submit) is not a time: '%s'",
                 parse_quote(f[F_SUBMIT], q));
        return -1;
    }
    if (strcmp(f[F_START], "Unknown") == 0 || strcmp(f[F_START], "None") == 0)
        return 0;                        /* cancelled before it started */
    int64_t start = parse_time(f[F_START]);
    if (start < 0) {
        snprintf(err, errlen, "field 8 (Start) is not a time: '%s'",
                 parse_quote(f[F_START], q));
        return -1;
    }
    job->wait_time = start >= job->submit_time ? start - job->submit_time : 0;

    int64_t minutes;
    if (strcmp(f[F_TIMELIMIT], "UNLIMITED") == 0 ||
        strcmp(f[F_TIMELIMIT], "Partition_Limit") == 0) {
        job->req_time = -1;              /* no request to predict against */
    } else if (parse_int64(f[F_TIMELIMIT], &minutes) == 0 && minutes > 0 &&
               minutes <= INT64_MAX / 60) {   /* seconds must fit */
        job->req_time = minutes * 60;
    } else {
        snprintf(err, errlen, "field 9 (TimelimitRaw) is not minutes > 0: '%s'",
                 parse_quote(f[F_TIMELIMIT], q));
        return -1;
    }
    if (parse_mem_kb(f[F_REQMEM], job->nodes, job->procs, &job->req_mem_kb) < 0) {
        snprintf(err, errlen, "field 13 (ReqMem) is not a memory size under 8 EiB: '%s'",
                 parse_quote(f[F_REQMEM], q));
        return -1;
    }
    job->account = walltime_key(f[F_ACCOUNT]);
    job->partition = walltime_key(f[F_PARTITION]);
    job->exe = walltime_key(f[F_NAME]);
    return walltime_job_check(job, err, errlen) < 0 ? -1 : 1;
}
