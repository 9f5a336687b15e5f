/* The driver's index by job id (driver_add, driver_find, driver_forget,
 * driver_replace, driver_reindex): it finds what the table's order says
 * (the newest instance of a job first) with records sharing a chain, after
 * records are forgotten or replaced, and with thousands of records, where
 * a driver pass forgets every finished one at once. */
#include "driver.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static struct bb_job *record(uint32_t id, enum bb_phase phase)
{
    struct bb_job *j = bb_job_new(id);
    j->phase = phase;
    return j;
}

/* What the index says agrees with the list for these job ids. */
static bool agrees(struct bb_driver *d, uint32_t from, uint32_t to)
{
    for (uint32_t id = from; id < to; id++)
        if (driver_find(d, id) != bb_job_find(d->jobs, id))
            return false;
    return true;
}

/* Each of jobs 1..n found by its id exactly when want(id). */
static bool finds(struct bb_driver *d, uint32_t n, bool (*want)(uint32_t id))
{
    for (uint32_t id = 1; id <= n + 1; id++) {
        const struct bb_job *j = driver_find(d, id);
        if ((j != NULL) != (id <= n && want(id)) || (j && j->job_id != id))
            return false;
    }
    return true;
}

static bool any(uint32_t id)
{
    (void)id;
    return true;
}

static bool even(uint32_t id)
{
    return id % 2 == 0;
}

static size_t indexed(const struct bb_driver *d)
{
    size_t n = 0;
    for (size_t b = 0; b < DRIVER_INDEX_BUCKETS; b++)
        for (const struct bb_job *j = d->by_id[b]; j; j = j->id_next)
            n++;
    return n;
}

static void test_newest_first(void)
{
    struct bb_driver d;
    driver_init(&d);
    /* Job 5's instances, and jobs whose ids share its chain. */
    struct bb_job *older = record(5, PHASE_TEARDOWN);
    older->superseded = true;
    driver_add(&d, older);
    for (uint32_t k = 1; k <= 3; k++)
        driver_add(&d, record(5 + k * DRIVER_INDEX_BUCKETS, PHASE_RUNNING));
    struct bb_job *newer = record(5, PHASE_DEPLOYING);
    driver_add(&d, newer);
    tap_ok(driver_find(&d, 5) == newer, "a job's newest instance is found");
    tap_ok(driver_find(&d, 5 + 2 * DRIVER_INDEX_BUCKETS) &&
           driver_find(&d, 5 + 2 * DRIVER_INDEX_BUCKETS)->job_id == 5 + 2 * DRIVER_INDEX_BUCKETS,
           "a job sharing its chain is found");
    tap_ok(!driver_find(&d, 6) && !driver_find(&d, 5 + 9 * DRIVER_INDEX_BUCKETS),
           "a job without a record is not");
    tap_ok(driver_waits_for_older(&d, newer), "the newer waits for the older on its chain");

    struct bb_job *fresh = record(5, PHASE_TEARDOWN);
    fresh->superseded = true;
    driver_replace(&d, older, fresh);
    tap_ok(driver_find(&d, 5) == newer && agrees(&d, 0, 6 * DRIVER_INDEX_BUCKETS),
           "a replaced older instance stays behind the newer one");
    driver_forget(&d, newer);
    tap_ok(driver_find(&d, 5) == fresh, "the newer forgotten: the older is found");
    fresh->phase = PHASE_COMPLETE;
    driver_forget(&d, fresh);
    tap_ok(!driver_find(&d, 5) && indexed(&d) == 3 && agrees(&d, 0, 6 * DRIVER_INDEX_BUCKETS),
           "both forgotten: the others are still found");
    driver_free_table(&d);
    tap_ok(indexed(&d) == 0 && !driver_find(&d, 5 + DRIVER_INDEX_BUCKETS), "the table freed");
}

static time_t late(void)
{
    return time(NULL) + KEEP_COMPLETE_S + 60;
}

static void test_thousands(void)
{
    enum { N = 20000 };
    struct bb_driver d;
    driver_init(&d);
    /* A loaded table, set whole, then indexed. */
    struct bb_job *head = NULL;
    for (uint32_t id = 1; id <= N; id++) {
        struct bb_job *j = record(id, id % 2 ? PHASE_COMPLETE : PHASE_RUNNING);
        j->t_done = time(NULL);
        j->next = head;
        head = j;
    }
    d.jobs = head;
    driver_reindex(&d);
    tap_ok(indexed(&d) == N && finds(&d, N, any), "%d records reindexed, each found", N);
    d.clock = late;
    driver_pass(&d);
    size_t left = 0;
    for (const struct bb_job *j = d.jobs; j; j = j->next)
        left += j->phase == PHASE_RUNNING;
    tap_ok(left == N / 2 && indexed(&d) == N / 2 && finds(&d, N, even),
           "a pass forgets the %d finished an hour ago: the table and its index agree", N / 2);
    driver_free_table(&d);
}

int main(void)
{
    test_newest_first();
    test_thousands();
    return tap_done();
}
