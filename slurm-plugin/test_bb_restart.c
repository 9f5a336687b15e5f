/* bb_restart: what saved instances become after a slurmctld restart, for
 * each state slurmctld may bring their jobs back in (made-up jobs, no
 * slurmctld): loaded and marked, settled by the driver's first look, or
 * claimed again by bb_p_job_begin(). */
#include "bb_restart.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A Slurm job as the hooks see it. */
struct fake_job {
    uint32_t id;
    bool pending, configuring, running, finished, same_nodes, gone;
    int holds, envs;
    enum bb_phase held_phase;
    char note[512];
};
static struct fake_job fakes[16];
static size_t nfakes;
static bool instance_fails;

static struct fake_job *fake(uint32_t id)
{
    for (size_t i = 0; i < nfakes; i++)
        if (fakes[i].id == id)
            return &fakes[i];
    return NULL;
}

static struct bb_job *record(uint32_t id, enum bb_phase phase, bool released)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = 1000;
    j->user = strdup("alice");
    j->mount = strdup("/adafs/x");
    j->instance_path = strdup("/adafs/x/.instance");
    j->storage = strdup("/var/lib/adafs");
    j->nnodes = 1;
    j->nodes = calloc(1, sizeof(*j->nodes));
    j->nodes[0] = (struct bb_node){ .name = strdup("n1"), .agent_host = strdup("n1"),
                                    .storage = strdup("/var/lib/adafs") };
    j->phase = phase;
    j->released = released;
    return j;
}

static struct bb_job *instance(void *job, char *err, size_t errlen)
{
    if (instance_fails) {
        snprintf(err, errlen, "no nodes");
        return NULL;
    }
    return record(((struct fake_job *)job)->id, PHASE_DEPLOYING, false);
}

static void hold(void *job, enum bb_phase phase)
{
    ((struct fake_job *)job)->holds++;
    ((struct fake_job *)job)->held_phase = phase;
}

static void set_env(void *job, const struct bb_job *j)
{
    (void)j;
    ((struct fake_job *)job)->envs++;
}

static void note(void *job, const char *text)
{
    snprintf(((struct fake_job *)job)->note, sizeof(((struct fake_job *)job)->note), "%s", text);
}

static void say(void *job, int level, const char *line)
{
    (void)job;
    printf("# %d: %s\n", level, line);
}

static bool same_nodes(void *job, const struct bb_job *j)
{
    (void)j;
    return ((struct fake_job *)job)->same_nodes;
}

static void state(void *arg, const struct bb_job *j, struct bb_restart_job *out)
{
    (void)arg;
    struct fake_job *f = fake(j->job_id);
    *out = (struct bb_restart_job){ 0 };
    if (!f || f->gone)
        return;
    *out = (struct bb_restart_job){ .job = f, .pending = f->pending,
                                    .configuring = f->configuring, .running = f->running,
                                    .finished = f->finished };
}

static const struct bb_restart_hooks hooks = { instance, hold, set_env, note, say, same_nodes,
                                               state, NULL };

static struct fake_job *add_fake(uint32_t id)
{
    fakes[nfakes] = (struct fake_job){ .id = id };
    return &fakes[nfakes++];
}

static void link_record(struct bb_driver *d, struct bb_job *j)
{
    driver_add(d, j);
}

static void free_table(struct bb_driver *d)
{
    while (d->jobs) {
        struct bb_job *j = d->jobs;
        d->jobs = j->next;
        bb_job_free(j);
    }
    driver_reindex(d);
}

static void test_load(void)
{
    char dir[] = "/tmp/test_bb_restart.XXXXXX";
    tap_ok(mkdtemp(dir) != NULL, "a state directory");
    char err[1024], *path;
    struct bb_driver d;
    driver_init(&d);
    tap_is_int(bb_restart_load(&d, dir, &path, err, sizeof(err)), 0, "no table: none loaded");
    tap_ok(path && strstr(path, "/adafs_state") && d.store, "the journal opened (%s)", path);
    struct bb_job *deploying = record(10, PHASE_DEPLOYING, false);
    struct bb_job *running = record(11, PHASE_RUNNING, true);
    struct bb_job *teardown = record(12, PHASE_TEARDOWN, false);
    link_record(&d, deploying);
    link_record(&d, running);
    link_record(&d, teardown);
    driver_save(&d, deploying);
    driver_save(&d, running);
    driver_save(&d, teardown);
    bb_store_close(d.store);
    free_table(&d);
    free(path);

    driver_init(&d);
    tap_is_int(bb_restart_load(&d, dir, &path, err, sizeof(err)), 3, "three records loaded");
    struct bb_job *a = bb_job_find(d.jobs, 10), *b = bb_job_find(d.jobs, 11),
                  *c = bb_job_find(d.jobs, 12);
    tap_ok(a && a->unclaimed && b && !b->unclaimed && c && c->unclaimed,
           "unreleased ones (deploying, in teardown) unclaimed; a released one not");
    bb_store_close(d.store);
    free_table(&d);

    FILE *f = fopen(path, "w");
    fputs("not a table at all\n", f);
    fclose(f);
    free(path);
    driver_init(&d);
    tap_is_int(bb_restart_load(&d, dir, &path, err, sizeof(err)), 0,
               "an unreadable table: starting without saved instances");
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "ls %s | grep -q '^adafs_state.bad.'", dir);
    tap_ok(system(cmd) == 0, "it is moved aside, not lost");
    bb_store_close(d.store);
    free_table(&d);
    free(path);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
}

static void test_settle(void)
{
    struct bb_driver d;
    driver_init(&d);
    nfakes = 0;
    /* 1: held again, same nodes; 2: gone; 3: pending; 4: released, finished while down;
     * 5: released, still running; 6-8: unreadable, configuring, running, gone. */
    struct fake_job *f1 = add_fake(1), *f3 = add_fake(3), *f4 = add_fake(4),
                    *f5 = add_fake(5), *f6 = add_fake(6), *f7 = add_fake(7);
    f1->configuring = f1->same_nodes = true;
    f3->pending = true;
    f4->finished = true;
    f5->running = true;
    f6->configuring = true;
    f7->running = true;
    for (uint32_t id = 1; id <= 8; id++) {
        struct bb_job *j = record(id, id == 4 || id == 5 ? PHASE_RUNNING : PHASE_STAGING_IN,
                                  id == 4 || id == 5);
        j->unclaimed = id <= 3;
        if (id >= 6)
            j->unreadable = strdup("bad checksum");
        link_record(&d, j);
    }
    bb_restart_settle(&d, &hooks);
    struct bb_job *r[9];
    for (uint32_t id = 1; id <= 8; id++)
        r[id] = bb_job_find(d.jobs, id);
    tap_ok(r[1] && !r[1]->unclaimed && !r[1]->superseded && f1->holds == 1 &&
           f1->held_phase == PHASE_STAGING_IN, "configuring on its nodes: held again, its "
           "stage-in goes on");
    tap_ok(r[2] && r[2]->superseded && r[2]->phase == PHASE_TEARDOWN, "its job gone: torn down");
    tap_ok(r[3] && r[3]->superseded && f3->holds == 0, "its job pending again: torn down, "
           "the job not held");
    tap_ok(r[4] && r[4]->phase == PHASE_STAGING_OUT, "released and ended while down: staged "
           "out");
    tap_ok(r[5] && r[5]->phase == PHASE_RUNNING, "released and running: left alone");
    tap_ok(r[6] && !r[6]->unreadable && r[6]->phase == PHASE_TEARDOWN && r[6]->hurry &&
           r[6]->failure == FAIL_USER && f6->holds == 1 && f6->held_phase == PHASE_TEARDOWN,
           "unreadable, still configuring: torn down and the job held with the reason");
    tap_ok(r[7] && !r[7]->unreadable && r[7]->phase == PHASE_RUNNING && r[7]->released &&
           r[7]->nodes[0].started, "unreadable, running: rebuilt for its stage-out");
    tap_ok(!r[8], "unreadable, the job gone: forgotten");
    free_table(&d);

    driver_init(&d);
    nfakes = 0;
    add_fake(9)->running = true;
    struct bb_job *j = record(9, PHASE_RUNNING, true);
    j->unreadable = strdup("bad checksum");
    link_record(&d, j);
    instance_fails = true;
    bb_restart_settle(&d, &hooks);
    instance_fails = false;
    tap_ok(!d.jobs && strstr(fake(9)->note, "saved state lost after a slurmctld restart: no "
                             "stage-out (bad checksum)"),
           "one that cannot be rebuilt: forgotten, the job says why (%s)", fake(9)->note);
    free_table(&d);
}

static void test_begin_again(void)
{
    struct bb_driver d;
    driver_init(&d);
    nfakes = 0;
    char err[1024];
    struct fake_job *f = add_fake(20);
    f->configuring = f->same_nodes = true;
    struct bb_restart_job s = { .job = f, .configuring = true };
    struct bb_job *old = record(20, PHASE_STAGING_IN, false);
    old->unclaimed = true;
    link_record(&d, old);
    tap_is_int(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)), 1,
               "restarted, still staging in on its nodes: settled");
    tap_ok(!old->unclaimed && f->holds == 1 && f->envs == 1, "held again, its environment set");
    old->released = true;
    old->phase = PHASE_RUNNING;
    tap_is_int(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)), 1,
               "released before the restart: may run");
    f->same_nodes = false;
    tap_is_int(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)), 0,
               "on other nodes: a new instance is made");
    tap_ok(old->superseded && old->phase == PHASE_STAGING_OUT, "the old one stages out first");
    free_table(&d);

    driver_init(&d);
    old = record(21, PHASE_COMPLETE, false);
    link_record(&d, old);
    s = (struct bb_restart_job){ .job = add_fake(21), .pending = true };
    tap_ok(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)) == 0 && !d.jobs,
           "a requeued job's finished record: forgotten, a new instance made");
    old = record(22, PHASE_STAGING_IN, false);
    old->unreadable = strdup("truncated");
    link_record(&d, old);
    s = (struct bb_restart_job){ .job = add_fake(22), .configuring = true };
    instance_fails = true;
    tap_ok(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)) == -1 &&
           strcmp(err, "no nodes") == 0, "unreadable and no teardown record: cannot begin (%s)",
           err);
    instance_fails = false;
    tap_ok(bb_restart_begin_again(&d, old, &s, &hooks, err, sizeof(err)) == 1 &&
           d.jobs && d.jobs->phase == PHASE_TEARDOWN && fake(22)->held_phase == PHASE_TEARDOWN,
           "unreadable: its leftovers torn down, the job held");
    free_table(&d);
}

int main(void)
{
    test_load();
    test_settle();
    test_begin_again();
    return tap_done();
}
