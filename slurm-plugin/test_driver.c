/* The driver without slurmctld: its thread moves jobs on as their agents
 * answer (fake_agents.c), a job's dead node holds up that job only, what
 * Slurm is told is on disk first, an instance of an older allocation is
 * gone before the newer deploys and never acts on the job, and finished
 * records are forgotten after an hour. */
#include "agent_proto.h"
#include "driver.h"
#include "fake_agents.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/test_driver.XXXXXX";
static char path[256];
static time_t fake_clock;

static time_t test_clock(void)
{
    return fake_clock;
}

/* What the shim would have been told, and when. */
struct applied {
    uint32_t job_id;
    int events;
    enum bb_phase phase;
    enum bb_failure failure;
    int64_t at_ms;
    bool on_disk;                 /* the record on disk was as told */
};
static struct applied seen[256];
static int nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static int firsts;

static void first(void *arg)
{
    struct bb_driver *d = arg;
    pthread_mutex_lock(&d->lock);
    firsts++;
    for (struct bb_job *j = d->jobs; j; j = j->next)
        j->unclaimed = false;
    pthread_mutex_unlock(&d->lock);
}

static void apply(const struct bb_outcome *o, void *arg)
{
    (void)arg;
    struct bb_job *loaded = NULL;
    char err[256];
    bool on_disk = false;
    if (bb_job_load(path, &loaded, err, sizeof(err)) >= 0) {
        const struct bb_job *mine = bb_job_find(loaded, o->job_id);
        on_disk = mine && mine->phase == o->phase;
    }
    while (loaded) {
        struct bb_job *next = loaded->next;
        bb_job_free(loaded);
        loaded = next;
    }
    pthread_mutex_lock(&seen_lock);
    if (nseen < 256)
        seen[nseen++] = (struct applied){ o->job_id, o->events, o->phase, o->failure,
                                          fake_now_ms(), on_disk };
    pthread_mutex_unlock(&seen_lock);
}

/* When job_id was first shown in phase (ms since start), -1 if never. */
static int64_t when(uint32_t job_id, enum bb_phase phase, int64_t start)
{
    int64_t at = -1;
    pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nseen && at < 0; i++)
        if (seen[i].job_id == job_id && seen[i].phase == phase)
            at = seen[i].at_ms - start;
    pthread_mutex_unlock(&seen_lock);
    return at;
}

static bool wait_phase(uint32_t job_id, enum bb_phase phase, int ms)
{
    int64_t start = fake_now_ms();
    while (fake_now_ms() - start < ms) {
        if (when(job_id, phase, 0) >= 0)
            return true;
        usleep(5000);
    }
    return false;
}

static struct bb_job *job_of(uint32_t id, int first_node, size_t nodes)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = 1000;
    j->phase = PHASE_DEPLOYING;
    j->nnodes = nodes;
    j->nodes = calloc(nodes, sizeof(*j->nodes));
    for (size_t i = 0; i < nodes; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%zu", first_node + i);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup("127.0.0.1"),
                                        .agent_port = 6830, .numa_node = -1 };
    }
    j->mount = strdup("/adafs/x");
    j->storage = strdup("/s");
    memset(j->secret_hex, 'b', 64);
    char err[256];
    directive_parse("X", NULL, "stage_in source=/pfs/a destination=a type=file", &j->req, err,
                    sizeof(err));
    return j;
}

static void add(struct bb_driver *d, struct bb_job *j)
{
    pthread_mutex_lock(&d->lock);
    driver_add(d, j);
    driver_save(d, j);
    pthread_mutex_unlock(&d->lock);
    driver_wake(d);
}

static void test_independent(struct bb_driver *d)
{
    /* Job 1 has a node that never answers; jobs 2 and 3 must not wait. */
    fake_set(1, &(struct fake_node_script){ FAKE_DEAD, 0, 20 });
    int64_t start = fake_now_ms();
    add(d, job_of(1, 1, 2));
    add(d, job_of(2, 3, 2));
    add(d, job_of(3, 5, 2));
    bool two = wait_phase(2, PHASE_RUNNING, 3000), three = wait_phase(3, PHASE_RUNNING, 3000);
    int64_t t2 = when(2, PHASE_RUNNING, start), t3 = when(3, PHASE_RUNNING, start);
    tap_ok(two && three && t2 < 500 && t3 < 500,
           "jobs 2 and 3 are released while job 1's node stays silent (%lld, %lld ms)",
           (long long)t2, (long long)t3);
    tap_ok(when(1, PHASE_STAGING_IN, start) < 0, "job 1 is still deploying then");
    pthread_mutex_lock(&d->lock);
    struct bb_job *j1 = bb_job_find(d->jobs, 1);
    bool retrying = j1 && j1->phase == PHASE_DEPLOYING;
    pthread_mutex_unlock(&d->lock);
    usleep(700000);
    pthread_mutex_lock(&d->lock);
    retrying = retrying && j1->attempts == 1 && j1->retry_at > 0;
    pthread_mutex_unlock(&d->lock);
    tap_ok(retrying, "and waits to try again once its request timed out");
    bool on_disk = true, told = false;
    pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nseen; i++) {
        on_disk &= seen[i].on_disk;
        told |= seen[i].job_id == 2 && (seen[i].events & LC_RELEASE);
    }
    pthread_mutex_unlock(&seen_lock);
    tap_ok(told, "job 2's release is applied");
    tap_ok(on_disk, "every outcome was on disk (synced) before it was applied");
    struct bb_store_stats st;
    bb_store_stats(d->store, &st);
    tap_ok(st.fsyncs >= 1, "with fsyncs off the lock (%llu)", (unsigned long long)st.fsyncs);
}

static void test_superseded(struct bb_driver *d)
{
    /* An older instance of job 5, tearing down slowly; its newer one waits. */
    fake_set(9, &(struct fake_node_script){ FAKE_SLOW, 300, 20 });
    struct bb_job *old = job_of(5, 9, 1);
    old->phase = PHASE_TEARDOWN;
    old->superseded = true;
    add(d, old);
    int64_t start = fake_now_ms();
    struct bb_job *fresh = job_of(5, 10, 1);
    add(d, fresh);
    pthread_mutex_lock(&d->lock);
    bool waits = driver_waits_for_older(d, fresh);
    pthread_mutex_unlock(&d->lock);
    tap_ok(waits, "a newer instance of a job waits for the older one's teardown");
    tap_ok(wait_phase(5, PHASE_RUNNING, 3000), "then it deploys and stages in");
    tap_ok(when(5, PHASE_RUNNING, start) >= 250, "only after the teardown (%lld ms)",
           (long long)when(5, PHASE_RUNNING, start));
    bool old_told = false;
    pthread_mutex_lock(&seen_lock);
    for (int i = 0; i < nseen; i++)
        old_told |= seen[i].job_id == 5 && seen[i].phase == PHASE_COMPLETE;
    pthread_mutex_unlock(&seen_lock);
    tap_ok(!old_told, "the older instance never acts on the job");
}

static void test_no_tick(struct bb_driver *d)
{
    /* Job 2 runs and has no stage_out line: its end goes through
     * stage-out to teardown and complete as its agents answer, never
     * waiting for the driver's once-a-second look. */
    int64_t start = fake_now_ms();
    pthread_mutex_lock(&d->lock);
    struct bb_job *j = bb_job_find(d->jobs, 2);
    bool running = j && j->phase == PHASE_RUNNING;
    if (running) {
        lifecycle_job_ended(j, false);
        driver_save(d, j);
    }
    pthread_mutex_unlock(&d->lock);
    driver_wake(d);
    bool done = running && wait_phase(2, PHASE_COMPLETE, 3000);
    tap_ok(done && when(2, PHASE_COMPLETE, start) < 500,
           "a job without stage_out lines is torn down as soon as its agents answer (%lld ms)",
           (long long)when(2, PHASE_COMPLETE, start));
}

static void test_kept(struct bb_driver *d)
{
    struct bb_job *done = job_of(7, 11, 1);
    done->phase = PHASE_COMPLETE;
    done->t_done = fake_clock;
    struct bb_job *held = job_of(8, 12, 1);
    held->unclaimed = true;
    pthread_mutex_lock(&d->lock);
    driver_add(d, held);
    driver_add(d, done);
    driver_save(d, done);
    driver_save(d, held);
    pthread_mutex_unlock(&d->lock);
    driver_pass(d);
    pthread_mutex_lock(&d->lock);
    bool kept = bb_job_find(d->jobs, 7) != NULL;
    bool untouched = bb_job_find(d->jobs, 8) && bb_job_find(d->jobs, 8)->phase == PHASE_DEPLOYING &&
                     fake_calls(12, AGENT_START) == 0;
    pthread_mutex_unlock(&d->lock);
    tap_ok(kept, "a finished record is kept for bbstat");
    tap_ok(untouched, "an unclaimed record is not stepped");
    fake_clock += KEEP_COMPLETE_S + 1;
    driver_pass(d);
    pthread_mutex_lock(&d->lock);
    kept = bb_job_find(d->jobs, 7) != NULL;
    pthread_mutex_unlock(&d->lock);
    struct bb_job *loaded = NULL;
    char err[256];
    bb_job_load(path, &loaded, err, sizeof(err));
    tap_ok(!kept && !bb_job_find(loaded, 7), "after an hour it is forgotten, saved state too");
    while (loaded) {
        struct bb_job *next = loaded->next;
        bb_job_free(loaded);
        loaded = next;
    }
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/adafs_state", dir);
    fake_clock = time(NULL);
    fake_start(16);
    static struct bb_driver d;
    driver_init(&d);
    char err[256];
    d.store = bb_store_open(path, NULL, err, sizeof(err));
    d.transport = fake_transport;
    d.call_ms = 400;
    d.hold_ms = 200;
    d.clock = test_clock;
    d.hooks = (struct bb_driver_hooks){ .first = first, .apply = apply, .arg = &d };
    tap_is_int(driver_start(&d), 0, "the driver starts");
    usleep(50000);
    pthread_mutex_lock(&d.lock);
    int settled = firsts;
    pthread_mutex_unlock(&d.lock);
    tap_is_int(settled, 1, "its first pass settles saved instances before any step");
    test_independent(&d);
    test_no_tick(&d);
    test_superseded(&d);
    driver_stop(&d);
    test_kept(&d);
    tap_ok(d.held.holds > 0 && d.held.max_us < 100000,
           "the driver's lock was held %llu times, at most %llu us (%s)",
           (unsigned long long)d.held.holds, (unsigned long long)d.held.max_us,
           d.held.max_where ? d.held.max_where : "-");
    fake_stop();
    driver_free_table(&d);
    tap_ok(!d.jobs && !d.store && !d.persist.head, "the table freed, its journal closed");
    unlink(path);
    rmdir(dir);
    return tap_done();
}
