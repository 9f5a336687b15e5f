/* lifecycle_fixture.c: the lifecycle tests' shared fixture
 * (lifecycle_fixture.h). */
#include "lifecycle_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_agents.h"

struct bb_config cfg;
time_t fake_clock;
struct lc_env env;

void fixture_start(int nodes)
{
    fake_clock = time(NULL);
    env = (struct lc_env){ .cfg = &cfg, .transport = &fake_transport, .ready = fake_ready,
                           .call_ms = 300, .hold_ms = 200 };
    fake_start(nodes);
}

struct bb_job *job_of(uint32_t id, size_t nodes, const char *stages)
{
    struct bb_job *j = bb_job_new(id);
    j->uid = j->gid = 1000;
    j->phase = PHASE_DEPLOYING;
    j->nnodes = nodes;
    j->nodes = calloc(nodes ? nodes : 1, sizeof(*j->nodes));
    for (size_t i = 0; i < nodes; i++) {
        char name[24];
        snprintf(name, sizeof(name), "n%zu", i + 1);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup("127.0.0.1"),
                                        .agent_port = 6830, .numa_node = -1 };
    }
    char mount[32];
    snprintf(mount, sizeof(mount), "/adafs/%u", id);
    j->mount = strdup(mount);
    j->storage = strdup("/var/lib/adafs");
    j->chunk_size = 524288;
    j->node_capacity = 1 << 30;
    memset(j->secret_hex, 'a', 64);
    j->t_begin = fake_clock;
    if (stages) {
        char err[256];
        if (directive_parse("X", NULL, stages, &j->req, err, sizeof(err)) < 0)
            printf("# %s\n", err);
    }
    return j;
}

int drive(struct bb_job *j, int ms)
{
    int all = 0;
    int64_t end = fake_now_ms() + ms;
    for (;;) {
        env.now = fake_clock;
        int ev = lifecycle_step(j, &env);
        if (env.outbox)
            lc_outbox_flush(env.outbox, env.transport);
        all |= ev;
        if (!lifecycle_waiting(j) && !(ev & ~LC_CHANGED) && (j->retry_at || ev == 0 ||
                                                             j->phase == PHASE_RUNNING ||
                                                             j->phase == PHASE_COMPLETE))
            break;
        if (fake_now_ms() > end)
            break;
        if (lifecycle_waiting(j))
            fake_wait(50);
    }
    return all;
}
