/* synth: small deterministic synthetic job histories for the unit tests. */
#ifndef WALLTIME_TEST_SYNTH_H
#define WALLTIME_TEST_SYNTH_H

#include "walltime.h"

/* A finished job of `uid` with a run time that depends on the user and the
 * request, with some noise and some jobs killed at their limit. */
static inline __attribute__((unused))
struct walltime_job synth_job(int64_t id, int64_t submit, int64_t uid, unsigned *seed)
{
    struct walltime_job j;
    walltime_job_init(&j);
    *seed = *seed * 1103515245u + 12345u;
    unsigned r = (*seed >> 8) & 0xffff;
    static const int64_t reqs[] = { 600, 3600, 7200, 36000 };
    j.job_id = id;
    j.submit_time = submit;
    j.uid = uid;
    j.gid = uid % 3;
    j.procs = 1 << (uid % 5);
    j.req_time = reqs[(uid + r % 2) % 4];
    j.wait_time = (int64_t)(r % 300);
    j.run_time = r % 10 == 0 ? j.req_time
               : j.req_time * (int64_t)(10 + 5 * (uid % 7) + r % 13) / 100;
    j.status = 1;
    return j;
}

#endif
