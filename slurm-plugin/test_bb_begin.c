/* bb_begin: a job's instance and environment at its begin, from made-up
 * Slurm jobs (no slurmctld). */
#include "bb_begin.h"
#include "persist_job.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char err[1024];
static char said[2048];

static void say(void *arg, int level, const char *line)
{
    (void)arg;
    snprintf(said + strlen(said), sizeof(said) - strlen(said), "%d:%s\n", level, line);
}

static const struct bb_begin_node two[] = { { "n1", "10.0.0.1", 6818, 4 },
                                            { "n2", "10.0.0.2", 6819, 0 } };

static struct bb_begin_job job(uint32_t id, const char *bb)
{
    return (struct bb_begin_job){ .job_id = id, .uid = 1000, .gid = 1000, .user = "alice",
                                  .name = "sim", .burst_buffer = bb, .nodes = two,
                                  .nnodes = 2, .say = say };
}

/* slurmctld's answers for persistent lines: job 60 mounts proj. */
static void users_of(void *arg, const char *name, uint32_t self, uint32_t ids[8], size_t *n)
{
    (void)arg;
    *n = 0;
    if (strcmp(name, "proj") == 0 && self != 60)
        ids[(*n)++] = 60;
}

static int group_id(void *arg, const char *group, uint32_t *gid)
{
    (void)arg;
    if (strcmp(group, "proj") != 0)
        return -1;
    *gid = 2000;
    return 0;
}

static struct persist_node *persistent_nodes(void *arg, size_t *n)
{
    (void)arg;
    struct persist_node *v = calloc(2, sizeof(*v));
    v[0] = (struct persist_node){ "p1", "p1", 6830 };
    v[1] = (struct persist_node){ "p2", "p2", 6830 };
    *n = 2;
    return v;
}

static const struct bb_begin_persist_hooks persist_hooks = { users_of, group_id,
                                                             persistent_nodes, NULL };

/* bb_begin_persistent for job id's request bb: 0 or -1 (err). */
static int persistent(struct bb_driver *d, uint32_t id, const char *bb, struct bb_job **out)
{
    struct bb_begin_job b = job(id, bb);
    bool users_fault;
    struct bb_job *j = bb_begin_instance(&b, &d->config, err, sizeof(err), &users_fault);
    int rc = j ? bb_begin_persistent(d, &b, j, &persist_hooks, err, sizeof(err)) : -1;
    *out = j;
    return rc;
}

static void test_persistent(void)
{
    struct bb_driver d;
    driver_init(&d);
    bb_config_load("/nonexistent/burst_buffer.conf", &d.config, err, sizeof(err));
    d.persist.pool_capacity = 100ULL << 30;
    struct bb_job *j;
    tap_is_int(persistent(&d, 50, "create_persistent name=proj capacity=2G access=group:proj",
                          &j), 0, "a create line");
    struct bb_job *servers = d.jobs;
    tap_ok(servers && servers->persist && strcmp(servers->persist->name, "proj") == 0 &&
           servers->nnodes == 2 && servers->persist->access_gid == 2000 &&
           servers->phase == PHASE_DEPLOYING, "its servers' record, on the persistent nodes, "
           "shared with the group (%s)", err);
    bb_job_free(j);
    tap_is_int(persistent(&d, 51, "create_persistent name=other capacity=1G access=group:nope",
                          &j), -1, "a group that does not exist");
    tap_ok(strstr(err, "access=group:nope: no such group") != NULL, "is refused (%s)", err);
    bb_job_free(j);
    tap_is_int(persistent(&d, 52, "destroy_persistent name=proj", &j), -1,
               "a destroy while job 60 uses it");
    tap_ok(strstr(err, "60") != NULL, "is refused, naming the job (%s)", err);
    bb_job_free(j);
    tap_ok(bb_begin_request_mounts(&d.config, "use_persistent name=proj", "proj") &&
           !bb_begin_request_mounts(&d.config, "use_persistent name=proj", "other") &&
           !bb_begin_request_mounts(&d.config, "capacity=1G", "proj"),
           "which requests mount an instance");
    /* Only a request that names the instance is parsed (a destroy asks
     * every job): the answer is the parser's. */
    tap_ok(bb_begin_request_mounts(&d.config, "#BB_ADAFS capacity=1G\n#BB_ADAFS use_persistent "
                                   "name=proj\n", "proj") &&
           bb_begin_request_mounts(&d.config, "#BB_ADAFS create_persistent name=proj "
                                   "capacity=1G\n", "proj") &&
           !bb_begin_request_mounts(&d.config, "#BB_ADAFS use_persistent name=proj2\n", "proj") &&
           !bb_begin_request_mounts(&d.config, "#BB_ADAFS use_persistent name=xproj\n", "proj") &&
           !bb_begin_request_mounts(&d.config, "#BB_ADAFS destroy_persistent name=proj\n",
                                    "proj") &&
           !bb_begin_request_mounts(&d.config, "#BB_ADAFS stage_in source=\"/pfs/name=proj x\" "
                                    "destination=a type=file\n", "proj") &&
           !bb_begin_request_mounts(&d.config, NULL, "proj"),
           "a request mounts an instance by a line naming it, not by its name in a path");
    d.persist.head = NULL;   /* its instances are freed with their records */
    while (d.jobs) {
        struct bb_job *next = d.jobs->next;
        bb_job_free(d.jobs);
        d.jobs = next;
    }
    bb_config_free(&d.config);
}

static const char *env_of(const struct bb_env *env, const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; i < env->n; i++)
        if (strcmp(env->names[i], name) == 0)
            v = env->values[i];   /* the last one set wins */
    return v;
}

int main(void)
{
    struct bb_config cfg;
    tap_is_int(bb_config_load("/nonexistent/burst_buffer.conf", &cfg, err, sizeof(err)), 1,
               "the defaults");
    bool users_fault;

    /* A job's own servers on its two nodes. */
    struct bb_begin_job b = job(42, "capacity=3G chunk=1M\n"
                                    "stage_in source=/pfs/%u/%j destination=in type=directory");
    struct bb_job *j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(j != NULL, "an instance for a job on two nodes (%s)", j ? "" : err);
    tap_ok(j && j->nnodes == 2 && strcmp(j->nodes[0].name, "n1") == 0 &&
           strcmp(j->nodes[1].agent_host, "10.0.0.2") == 0, "its nodes, in the allocation's order");
    tap_ok(j && j->nodes[0].cpus == 4 && j->nodes[1].cpus == 0,
           "the job's CPUs on each node (0: not known), which its stage threads follow");
    tap_ok(j && j->nodes[0].agent_port == 6830 && j->nodes[1].agent_port == 6830,
           "agents on AdafsAgentPort");
    tap_ok(j && j->node_capacity == ((3ULL << 30) + 1) / 2 && j->chunk_size == 1 << 20,
           "capacity shared out, rounded up; the request's chunk");
    tap_ok(j && strcmp(j->req.stages[0].source, "/pfs/alice/42") == 0,
           "%%-symbols expanded (%s)", j ? j->req.stages[0].source : "");
    tap_ok(j && strcmp(j->mount, "/adafs/42") == 0 && strstr(j->instance_path, "/adafs") &&
           strcmp(j->user, "alice") == 0 && j->phase == PHASE_DEPLOYING,
           "mounted under AdafsMountPrefix, deploying (%s)", j ? j->mount : "");
    tap_ok(j && j->req.access == cfg.access, "the site's access, fixed at begin");
    struct bb_env env = { 0 };
    tap_is_int(j ? bb_begin_fs_env(&b, j, &cfg, &env) : -1, 0, "its environment");
    tap_is_str(env_of(&env, "ADAFS_MOUNT"), "/adafs/42", "ADAFS_MOUNT");
    tap_ok(env_of(&env, "ADAFS_INSTANCE") && env_of(&env, "LD_PRELOAD") &&
           !env_of(&env, "ADAFS_MOUNTS"), "ADAFS_INSTANCE and LD_PRELOAD, no further mounts");
    bb_env_free(&env);
    bb_job_free(j);

    /* Agents beside slurmd; an array task's symbols. */
    cfg.agent_port_offset = 1000;
    b = job(43, "capacity=1G\nstage_out source=out destination=/pfs/%A_%a type=directory");
    b.array_job_id = 40;
    b.array_task_id = 3;
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(j && j->nodes[0].agent_port == 7818 && j->nodes[1].agent_port == 7819,
           "agents at slurmd's port + AdafsAgentPortOffset");
    tap_is_str(j ? j->req.stages[0].destination : NULL, "/pfs/40_3", "array symbols");
    bb_job_free(j);
    cfg.agent_port_offset = 0;
    tap_is_int(bb_begin_agent_port(&cfg, 6818), 6830, "bb_begin_agent_port: the fixed port");

    /* What only the user can fix. */
    b = job(44, "capacity=lots");
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(!j && users_fault, "a bad request: the user's fault (%s)", err);
    char big[64];
    snprintf(big, sizeof(big), "capacity=%llu", (unsigned long long)cfg.node_capacity * 3);
    b = job(45, big);
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(!j && users_fault && strstr(err, "more than AdafsNodeCapacity"),
           "more than two nodes may give: the user's (%s)", err);
    /* 2^64-1 bytes on 2 nodes: once a share of 0, which servers take for no quota. */
    b = job(45, "capacity=18014398509481983.999999K");
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(!j && users_fault && strstr(err, "more than AdafsNodeCapacity"),
           "a capacity of 2^64-1 bytes is not a share of 0 (%s)", err);
    bb_job_free(j);

    /* A job that mounts a persistent instance. */
    free(cfg.munge_socket);
    cfg.munge_socket = strdup("/run/munge/munge.socket.2");
    b = job(46, "use_persistent name=proj");
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    tap_ok(j && j->node_capacity == 0 && !persist_job_own_servers(j),
           "mounting an instance: no servers of its own (%s)", j ? "" : err);
    memset(&env, 0, sizeof(env));
    tap_is_int(j ? bb_begin_fs_env(&b, j, &cfg, &env) : -1, 0, "its environment");
    tap_is_str(env_of(&env, "ADAFS_PERSISTENT_proj"), "/adafs/46", "ADAFS_PERSISTENT_<name>");
    tap_is_str(env_of(&env, "ADAFS_MUNGE_SOCKET"), cfg.munge_socket, "the site's munged");
    bb_env_free(&env);
    bb_job_free(j);

    /* access=fuse: no LD_PRELOAD. */
    b = job(47, "capacity=1G access=fuse");
    j = bb_begin_instance(&b, &cfg, err, sizeof(err), &users_fault);
    memset(&env, 0, sizeof(env));
    tap_ok(j && bb_begin_fs_env(&b, j, &cfg, &env) == 0 && !env_of(&env, "LD_PRELOAD") &&
           env_of(&env, "ADAFS_MOUNT"), "access=fuse: no LD_PRELOAD (%s)", j ? "" : err);
    bb_env_free(&env);
    bb_job_free(j);

    /* I/O quality of service only. */
    tap_ok(bb_begin_qos_only(&cfg, "qos stat=1000"), "a QoS-only request");
    tap_ok(!bb_begin_qos_only(&cfg, "capacity=1G\nqos stat=1000"), "with a capacity it is not");
    memset(&env, 0, sizeof(env));
    tap_ok(bb_begin_qos_env(&cfg, true, &env) == 0 && env.n == 0,
           "no AdafsQosPaths: no QoS environment, no LD_PRELOAD");
    bb_env_free(&env);
    bb_config_free(&cfg);
    test_persistent();
    return tap_done();
}
