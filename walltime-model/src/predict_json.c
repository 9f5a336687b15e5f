#include "predict_json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *const int_members[] = {
    "job_id", "uid", "gid", "submit_time", "req_time", "procs", "nodes",
    "mem_kb", "run_time", "wait_time", "status",
};
static const char *const str_members[] = { "account", "partition", "name" };

int job_from_json(const char *text, struct walltime_job *job, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loads(text, 0, &je);
    if (!o) {
        snprintf(err, errlen, "not JSON: %s (column %d)", je.text, je.column);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(o)) {
        snprintf(err, errlen, "expected a JSON object with the job's fields");
        goto out;
    }
    walltime_job_init(job);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int64_t *dst[] = { &job->job_id, &job->uid, &job->gid, &job->submit_time,
                           &job->req_time, &job->procs, &job->nodes, &job->req_mem_kb,
                           &job->run_time, &job->wait_time, NULL };
        uint32_t *sdst[] = { &job->account, &job->partition, &job->exe };
        size_t i;
        int found = 0;
        for (i = 0; i < sizeof(int_members) / sizeof(int_members[0]); i++)
            if (strcmp(key, int_members[i]) == 0) {
                if (!json_is_integer(v)) {
                    snprintf(err, errlen, "member \"%s\" must be an integer", key);
                    goto out;
                }
                json_int_t x = json_integer_value(v);
                if (dst[i])
                    *dst[i] = x;
                else if (x < -1 || x > 5) {
                    snprintf(err, errlen, "member \"status\" must be -1 to 5, not %lld",
                             (long long)x);
                    goto out;
                } else
                    job->status = (int)x;
                found = 1;
            }
        for (i = 0; i < sizeof(str_members) / sizeof(str_members[0]); i++)
            if (strcmp(key, str_members[i]) == 0) {
                if (!json_is_string(v)) {
                    snprintf(err, errlen, "member \"%s\" must be a string", key);
                    goto out;
                }
                *sdst[i] = walltime_key(json_string_value(v));
                found = 1;
            }
        if (!found) {
            snprintf(err, errlen, "unknown member \"%.40s\"", key);
            goto out;
        }
    }
    if (job->req_time <= 0) {
        snprintf(err, errlen, "member \"req_time\" (seconds, > 0) is required");
        goto out;
    }
    if (walltime_job_check(job, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    json_decref(o);
    return rc;
}
