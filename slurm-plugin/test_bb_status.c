/* bb_status: the pool and buffers `scontrol show burst` shows. */
#include "bb_status.h"
#include "persist.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct bb_job *job(uint32_t id, uint32_t uid, uint64_t node_capacity, size_t nnodes,
                          enum bb_phase phase, struct bb_job *next)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = uid;
    j->node_capacity = node_capacity;
    j->nnodes = nnodes;
    j->nodes = calloc(nnodes ? nnodes : 1, sizeof(*j->nodes));
    for (size_t i = 0; i < nnodes; i++)
        j->nodes[i] = (struct bb_node){ .name = strdup("n1"), .agent_host = strdup("n1") };
    j->user = strdup("alice");
    j->phase = phase;
    j->t_begin = 1000 + id;
    j->next = next;
    return j;
}

int main(void)
{
    struct bb_config cfg = { .node_capacity = 100, .total_capacity = 0 };
    struct persist_instance inst = { .name = "proj", .capacity = 4096, .used = 2048,
                                     .fair_share = "" };
    struct bb_job *servers = job(900, 1002, 50, 2, PHASE_RUNNING, NULL);
    servers->persist = &inst;
    struct bb_job *jobs =
        job(1, 1000, 10, 2, PHASE_RUNNING,            /* 20 bytes */
            job(2, 1001, 30, 1, PHASE_STAGING_IN,     /* 30 */
                job(3, 1000, 0, 2, PHASE_RUNNING,     /* mounts an instance: nothing */
                    job(4, 1000, 99, 4, PHASE_COMPLETE, servers))));   /* done: nothing */
    struct bb_pool_view pool;
    bb_status_pool(jobs, &cfg, 8, true, 0, &pool);
    tap_ok(pool.total == 800 && pool.used == 20 + 30 + 100 && pool.count == 3,
           "the pool: nodes x AdafsNodeCapacity, what active servers reserve, three buffers "
           "(%llu %llu %u)", (unsigned long long)pool.total, (unsigned long long)pool.used,
           pool.count);
    cfg.total_capacity = 5000;
    bb_status_pool(jobs, &cfg, 8, false, 1000, &pool);
    tap_ok(pool.total == 5000 && pool.used == 150 && pool.count == 1,
           "AdafsTotalCapacity; with PrivateData a user counts their own only");
    tap_ok(bb_status_shown(jobs, false, 1000) && !bb_status_shown(jobs->next, false, 1000) &&
           !bb_status_shown(jobs->next->next, true, 1000), "which buffers are shown");
    struct bb_buffer_view b;
    bb_status_buffer(jobs, &b);
    tap_ok(b.job_id == 1 && !b.persistent && !b.name && !b.pool[0] && b.size == 20 &&
           b.uid == 1000 && b.phase == PHASE_RUNNING && b.t_begin == 1001, "a job's buffer");
    bb_status_buffer(servers, &b);
    tap_ok(b.job_id == 0 && b.persistent && strcmp(b.name, "proj") == 0 && b.size == 4096 &&
           strstr(b.pool, "persistent(used=") && strstr(b.pool, ",fair_share=default)"),
           "a persistent instance's: by name, its pool (%s)", b.pool);
    strcpy(inst.fair_share, "size-fair");
    bb_status_buffer(servers, &b);
    tap_ok(strstr(b.pool, "fair_share=size-fair)") != NULL, "its policy (%s)", b.pool);
    struct bb_driver d;
    driver_init(&d);
    d.jobs = jobs;
    driver_reindex(&d);
    struct bb_lock_stats job_lock = { .holds = 4, .max_us = 50, .total_us = 80,
                                      .max_where = "bb_p_job_begin" };
    char *out = bb_status_report(&d, "12x", "burst_buffer/adafs", NULL, &job_lock);
    tap_is_str(out, "burst_buffer/adafs: '12x' is not a job id (scontrol show bbstat without one lists the"
               " persistent instances too)\n", "bbstat of no job id");
    free(out);
    out = bb_status_report(&d, NULL, "burst_buffer/adafs", "/state/adafs_state", &job_lock);
    tap_ok(out && strstr(out, "JobId=1 ") && strstr(out, "JobId=2 ") &&
           strstr(out, "Plugin: JobLockHeldMaxUs=50(bb_p_job_begin) JobLockHolds=4 "
                       "JobLockHeldMeanUs=20 TableLockHeldMaxUs="),
           "bbstat: the instances and how long the plugin held the locks");
    free(out);
    struct bb_job *user3 = jobs->next->next;
    user3->req.persist = calloc(1, sizeof(*user3->req.persist));
    user3->req.persist[0] = (struct persist_spec){ .op = PERSIST_USE, .name = "proj" };
    user3->req.npersist = 1;
    out = bb_status_report(&d, "3", "burst_buffer/adafs", NULL, &job_lock);
    tap_ok(out && strstr(out, "JobId=3 ") && strstr(out, "NodeCapacity=- Chunk=- ") &&
           strstr(out, "  Instances=use_persistent name=proj (no file system of its own)\n") &&
           !strstr(out, "Servers="), "bbstat of a job that only mounts an instance: the "
           "instance, no servers of its own (%s)", out);
    free(out);
    out = bb_status_report(&d, "2", "burst_buffer/adafs", NULL, &job_lock);
    tap_ok(out && strstr(out, "JobId=2 ") && !strstr(out, "JobId=1 ") && !strstr(out, "Plugin:"),
           "bbstat JOBID: that job's only");
    free(out);
    d.config.flags = BBCONF_PRIVATE_DATA;
    out = bb_status_report(&d, NULL, "burst_buffer/adafs", "/state/adafs_state", &job_lock);
    tap_ok(out && strstr(out, "per-job status is private (Flags=PrivateData); 4 instances "
                              "active") && strstr(out, "/state/adafs_state") && !strstr(out, "JobId="),
           "with PrivateData: how many, nothing of any job (%s)", out);
    free(out);
    servers->persist = NULL;
    while (jobs) {
        struct bb_job *next = jobs->next;
        bb_job_free(jobs);
        jobs = next;
    }
    return tap_done();
}
