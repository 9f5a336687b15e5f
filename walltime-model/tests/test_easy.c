/* The EASY backfilling simulation on schedules small enough to work out by
 * hand: a job backfills only if its estimate lets it end before the head
 * job's reservation (or it uses only spare processors), and jobs are killed
 * at their request whatever the estimate. */
#include "tap.h"
#include "walltime.h"
#include "lib/easy.h"

#include <math.h>

static struct walltime_job job(int64_t id, int64_t submit, int64_t procs,
                               int64_t run, int64_t req)
{
    struct walltime_job j;
    walltime_job_init(&j);
    j.job_id = id;
    j.submit_time = submit;
    j.procs = procs;
    j.run_time = run;
    j.req_time = req;
    return j;
}

int main(void)
{
    /* 10 processors. J1 (6 procs) runs 100 s of 200 requested; J2 (8 procs)
     * must wait for J1; J3 (4 procs) runs 50 s of 500 requested. */
    struct walltime_job jobs[] = {
        job(1, 0, 6, 100, 200), job(2, 1, 8, 10, 100), job(3, 2, 4, 50, 500),
    };
    struct walltime_trace t = { .jobs = jobs, .n = 3, .max_procs = 10 };
    struct easy_result r;

    /* Requests: J2's reservation is at 200 (J1's request); J3 would end at
     * 502 by its request and needs 4 > 2 spare processors: no backfill.
     * J1 really ends at 100, J2 runs 100-110, J3 starts at 110. */
    double req[] = { 200, 100, 500 };
    tap_is_int(easy_simulate(&t, req, 10, 1, &r, NULL), 0, "simulate with requests");
    tap_is_int(r.jobs, 3, "three jobs simulated");
    tap_ok(fabs(r.avg_wait_s - (0 + 99 + 108) / 3.0) < 1e-9,
           "requests: waits 0, 99, 108 s (got avg %.3f)", r.avg_wait_s);
    tap_ok(fabs(r.avg_bounded_slowdown - (1 + 109 / 10.0 + 158 / 50.0) / 3) < 1e-9,
           "requests: bounded slowdowns 1, 10.9, 3.16 (got avg %.4f)", r.avg_bounded_slowdown);

    /* Exact predictions: reservation at 100, J3 ends at 52 by its estimate:
     * backfilled at once; J2 still starts at 100. */
    double exact[] = { 100, 10, 50 };
    easy_simulate(&t, exact, 10, 1, &r, NULL);
    tap_ok(fabs(r.avg_wait_s - (0 + 99 + 0) / 3.0) < 1e-9,
           "predictions: J3 backfilled, waits 0, 99, 0 s (got avg %.3f)", r.avg_wait_s);

    /* An estimate NAN leaves the job out. */
    double partial[] = { 100, NAN, 50 };
    easy_simulate(&t, partial, 10, 1, &r, NULL);
    tap_ok(r.jobs == 2 && r.avg_wait_s == 0, "a job without estimate is left out");

    /* J1 runs past its request: killed at 200, so J2 starts at 200 even
     * though J1's real run time is 900; its slowdown counts 200 s of run. */
    jobs[0].run_time = 900;
    easy_simulate(&t, req, 10, 1, &r, NULL);
    tap_ok(fabs(r.avg_wait_s - (0 + 199 + 208) / 3.0) < 1e-9,
           "jobs are killed at their request: waits 0, 199, 208 s (got avg %.3f)", r.avg_wait_s);

    /* Underestimate: J1 is planned for 50 s but runs 100. When J4 arrives
     * at 60, J1 has outlived its estimate and is expected to run to its
     * request (200): the reservation for J2 moves to 200, so J3 (ends 110
     * by its estimate) backfills at 60 and delays J2 to 110 - the EASY++
     * risk. J4 backfills at 100 into the gap before 110.
     * Waits: J1 0, J2 109, J3 58, J4 40. Had J1 been expected to end at
     * once instead, J4 would go at 60 and J3 at 110 (slowdown 4.015). */
    jobs[0].run_time = 100;
    struct walltime_job four[] = { jobs[0], jobs[1], jobs[2], job(4, 60, 2, 5, 5) };
    struct walltime_trace t4 = { .jobs = four, .n = 4, .max_procs = 10 };
    double under[] = { 50, 10, 50, 5 };
    easy_simulate(&t4, under, 10, 1, &r, NULL);
    tap_ok(fabs(r.avg_wait_s - (0 + 109 + 58 + 40) / 4.0) < 1e-9,
           "outlived estimate: waits 0, 109, 58, 40 s (got avg %.3f)", r.avg_wait_s);
    tap_ok(fabs(r.avg_bounded_slowdown - (1 + 11.9 + 2.16 + 4.5) / 4) < 1e-9,
           "outlived estimate: J1 expected to run to its request (slowdown avg %.4f)",
           r.avg_bounded_slowdown);

    /* Node plans, 4 nodes. J5 takes them all for 100 s (its request); J6 and
     * J7 (2 nodes each) queue behind it: at 10 and 20 they are planned on
     * nodes 0-1 and 2-3 at 100. J5 really ends at 60 and both start then on
     * those very nodes: known 50 and 40 s ahead. */
    struct walltime_job plan[] = { job(5, 0, 4, 60, 100), job(6, 10, 2, 50, 50),
                                   job(7, 20, 2, 50, 50) };
    struct walltime_trace tp = { .jobs = plan, .n = 3, .max_procs = 4 };
    double preq[] = { 100, 50, 50 }, nap[3];
    easy_simulate(&tp, preq, 4, 1, &r, nap);
    tap_ok(isnan(nap[0]) == 0 && nap[1] == 50 && nap[2] == 40,
           "T_NAP: planned nodes held from the submit to the start (%.0f, %.0f s)",
           nap[1], nap[2]);
    tap_ok(r.nap.at_once == 1 && r.nap.le_10min == 2 && r.nap.le_1s == 0 && r.nap.gt_10min == 0,
           "T_NAP: one job started at once, two known 1 s - 10 min ahead");
    /* J8 (nodes 0-1, 100 s) and J9 (nodes 2-3, asks 200 s, runs 30) run;
     * J10 is planned on 0-1 at 100 but starts at 30 on 2-3: its nodes were
     * never known ahead. */
    struct walltime_job moved[] = { job(8, 0, 2, 100, 100), job(9, 0, 2, 30, 200),
                                    job(10, 10, 2, 50, 50) };
    struct walltime_trace tm = { .jobs = moved, .n = 3, .max_procs = 4 };
    double mreq[] = { 100, 200, 50 };
    easy_simulate(&tm, mreq, 4, 1, &r, nap);
    tap_ok(nap[2] == 0 && r.nap.at_once == 2 && r.nap.le_1s == 1,
           "T_NAP: a plan that moves to other nodes counts as not known ahead");
    /* Whole nodes: 16 cores each. J11 (20 processors) takes 2 of the 4
     * nodes; J12 (40) and J13 (33) need 3 each: J12 waits for J11 (100),
     * J13 for J12 (110). */
    struct walltime_job cores[] = { job(11, 0, 20, 100, 100), job(12, 0, 40, 10, 10),
                                    job(13, 0, 33, 10, 10) };
    struct walltime_trace tc = { .jobs = cores, .n = 3, .max_procs = 64 };
    double creq[] = { 100, 10, 10 };
    easy_simulate(&tc, creq, 64, 16, &r, nap);
    tap_ok(r.nap.at_once == 1 && fabs(r.avg_wait_s - (0 + 100 + 110) / 3.0) < 1e-9,
           "16 cores a node: jobs take whole nodes, waits 0, 100, 110 s (avg %.1f s)",
           r.avg_wait_s);

    /* Machine smaller than the largest job: sized to the largest job. */
    jobs[1].procs = 16;
    easy_simulate(&t, exact, 10, 1, &r, NULL);
    tap_is_int(r.jobs, 3, "a job larger than the machine still runs (machine grows to it)");
    return tap_done();
}
