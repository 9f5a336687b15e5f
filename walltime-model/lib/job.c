/* job: the job record helpers of the public API (keys, initialisation). */
#include "walltime.h"

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
