/* job: the job record helpers of the public API (keys, initialisation). */
#include "walltime.h"

#include <errno.h>

uint32_t walltime_key(const char *name)
{
    if (!name || !*name)
        return 0;
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h ? h : 1;
}

uint32_t walltime_key_id(int64_t id)
{
    /* SWF ids are small non-negative integers; keep them readable and
     * distinct from "unknown" (0) by shifting by one. */
    return id < 0 ? 0 : (uint32_t)id + 1;
}

void walltime_job_init(struct walltime_job *job)
{
    job->job_id = -1;
    job->submit_time = -1;
    job->req_time = -1;
    job->run_time = -1;
    job->wait_time = -1;
    job->uid = -1;
    job->gid = -1;
    job->procs = -1;
    job->nodes = -1;
    job->req_mem_kb = -1;
    job->account = 0;
    job->partition = 0;
    job->exe = 0;
    job->status = -1;
}

int walltime_job_check(const struct walltime_job *job, char *err, size_t errlen)
{
    const struct { const char *name; int64_t v, min, max; } f[] = {
        { "job id", job->job_id, 0, INT64_MAX },
        { "submit time", job->submit_time, 0, WALLTIME_MAX_SECONDS },
        { "requested time", job->req_time, 1, WALLTIME_MAX_SECONDS },
        { "run time", job->run_time, 0, WALLTIME_MAX_SECONDS },
        { "wait time", job->wait_time, 0, WALLTIME_MAX_SECONDS },
        { "user id", job->uid, 0, INT64_MAX },
        { "group id", job->gid, 0, INT64_MAX },
        { "processors", job->procs, 0, WALLTIME_MAX_COUNT },
        { "nodes", job->nodes, 0, WALLTIME_MAX_COUNT },
        { "requested memory (KiB)", job->req_mem_kb, 0, INT64_MAX },
        { "status", job->status, 0, 5 },
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (f[i].v != -1 && (f[i].v < f[i].min || f[i].v > f[i].max)) {
            snprintf(err, errlen, "%s %lld is out of range (-1 for unknown, or %lld to %lld)",
                     f[i].name, (long long)f[i].v, (long long)f[i].min, (long long)f[i].max);
            return -EINVAL;
        }
    return 0;
}
