/* bb_submit: the submit-time checks, with made-up users, groups and
 * partitions (no slurmctld). */
#include "bb_submit.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct bb_driver drv;
static int group_lookups;

/* uid 1000: groups 1000 and 50; uid 1001: also group root. */
static int groups(void *arg, uint32_t uid, uint32_t gid, uint32_t **out)
{
    (void)arg;
    group_lookups++;
    *out = calloc(3, sizeof(**out));
    (*out)[0] = gid;
    (*out)[1] = 50;
    (*out)[2] = 0;
    return uid == 1001 ? 3 : 2;
}

static char *user_name(void *arg, uint32_t uid)
{
    (void)arg;
    char *name;
    return asprintf(&name, "user%u", uid) < 0 ? NULL : name;
}

static bool partition(void *arg, const char *name, const char **nodes, const char **pname)
{
    (void)arg;
    *nodes = "n[1-4]";
    *pname = name ? name : "debug";
    return true;
}

static const struct bb_submit_hooks hooks = { groups, user_name, partition, NULL };

static enum bb_submit_verdict submit(uint32_t uid, uint32_t gid, uint32_t nodes,
                                     const char *script, const char *bb, char **canonical,
                                     char **why)
{
    struct bb_submit_job job = { .script = script, .burst_buffer = bb, .uid = uid, .gid = gid,
                                 .nodes = nodes };
    return bb_submit_check(&drv, &job, &hooks, canonical, why);
}

/* Refused with v, the message holding want. */
static void refused(uint32_t uid, uint32_t gid, uint32_t nodes, const char *script,
                    const char *bb, enum bb_submit_verdict v, const char *want)
{
    char *canonical, *why;
    enum bb_submit_verdict got = submit(uid, gid, nodes, script, bb, &canonical, &why);
    tap_ok(got == v && !canonical && why && strstr(why, want), "refused (%d), saying '%s' "
           "(got %d: %s)", v, want, got, why ? why : "(null)");
    free(canonical);
    free(why);
}

/* A script of 64 stage_out lines whose destinations are path_len bytes
 * long (malloc'd). */
static char *many_lines(size_t path_len)
{
    size_t cap = 64 * (path_len + 128) + 64, len = 0;
    char *script = malloc(cap), *path = malloc(path_len + 1);
    memset(path, 'd', path_len);
    path[0] = '/';
    path[path_len] = 0;
    len += snprintf(script + len, cap - len, "#!/bin/sh\n#BB_ADAFS capacity=1G\n");
    for (int i = 0; i < 64; i++)
        len += snprintf(script + len, cap - len, "#BB_ADAFS stage_out source=o%d "
                        "destination=%s type=file\n", i, path);
    free(path);
    return script;
}

/* The request's size bounds what the plugin does under slurmctld's job
 * lock (DIRECTIVE_MAX_REQUEST). */
static void test_request_size(void)
{
    char *canonical, *why;
    char *script = many_lines(900);
    enum bb_submit_verdict v = submit(1000, 1000, 1, script, NULL, &canonical, &why);
    size_t len = canonical ? strlen(canonical) : 0;
    tap_ok(v == BB_SUBMIT_OK && len > 60000 && len <= DIRECTIVE_MAX_REQUEST,
           "64 stage lines of 900-byte paths are accepted (%zu bytes; %s)", len, why ? why : "");
    free(canonical);
    free(why);
    free(script);
    script = many_lines(1100);
    refused(1000, 1000, 1, script, NULL, BB_SUBMIT_LIMIT, "bytes written out (64 stage lines), "
            "more than the 65536 bytes a job may ask with");
    free(script);
}

int main(void)
{
    char err[1024];
    driver_init(&drv);
    tap_is_int(bb_config_load("/nonexistent/burst_buffer.conf", &drv.config, err, sizeof(err)),
               1, "the defaults");
    char *canonical, *why;

    tap_ok(submit(1000, 1000, 1, "#!/bin/sh\nhostname\n", NULL, &canonical, &why) ==
           BB_SUBMIT_OK && !canonical && !why, "no request: nothing kept, nothing said");
    tap_is_int(group_lookups, 0, "and no group looked up");
    tap_ok(submit(1000, 1000, 2, "#!/bin/sh\n#BB_ADAFS capacity=2G\n#BB_ADAFS stage_in "
                  "source=/pfs/in destination=in type=directory\n", NULL, &canonical, &why) ==
           BB_SUBMIT_OK && canonical && !why, "a request is accepted (%s)", why ? why : "");
    struct bb_request req = { 0 };
    tap_ok(canonical && directive_parse("BB_ADAFS", NULL, canonical, &req, err,
                                        sizeof(err)) == 1 && req.capacity == 2ULL << 30 &&
           req.nstages == 1, "its canonical form reads back as the request");
    bb_request_free(&req);
    free(canonical);

    refused(1000, 1000, 1, "#BB_ADAFS capacity=12Q\n", NULL, BB_SUBMIT_INVALID,
            "invalid size '12Q' for capacity");
    refused(0, 1000, 1, NULL, "capacity=1G", BB_SUBMIT_PERMISSION, "user root can not use");
    refused(1000, 0, 1, NULL, "capacity=1G", BB_SUBMIT_PERMISSION, "group root (gid 0)");
    refused(1001, 1001, 1, NULL, "capacity=1G", BB_SUBMIT_PERMISSION,
            "user user1001 is a member of group root");
    drv.config.deny_users = calloc(1, sizeof(*drv.config.deny_users));
    drv.config.deny_users[0] = 1002;
    drv.config.deny_count = 1;
    char *denied;
    submit(1002, 1002, 1, NULL, "capacity=1G", &canonical, &denied);
    tap_ok(denied && strstr(denied, "user user1002: uid 1002 is in burst_buffer.conf DenyUsers"),
           "a user DenyUsers names is refused, by name and uid (%s)", denied ? denied : "");
    free(denied);

    drv.config.max_bandwidth = 100 << 20;
    refused(1000, 1000, 1, NULL, "capacity=1G max_bw=200M", BB_SUBMIT_LIMIT, "above this site's maximum of 104857600 bytes/s");
    refused(1000, 1000, 1, "#!/bin/sh\n#SBATCH -N 1\n#BB_ADAFS capacity=1G\n#BB_ADAFS max_bw=200M\n",
            NULL, BB_SUBMIT_LIMIT, "#BB_ADAFS (batch script line 4): max_bw=209715200");
    refused(1000, 1000, 1, NULL, "qos stat=1000", BB_SUBMIT_LIMIT,
            "AdafsQosPaths is not set");
    char big[64];
    snprintf(big, sizeof(big), "capacity=%llu", (unsigned long long)drv.config.node_capacity * 3);
    refused(1000, 1000, 2, NULL, big, BB_SUBMIT_LIMIT, "on each of the job's 2 node(s), more "
            "than the 100G a node may give (AdafsNodeCapacity): ask for at most 200G");
    refused(1000, 1000, 2, "#!/bin/sh\n#BB_ADAFS capacity=300G\n", NULL, BB_SUBMIT_LIMIT,
            "#BB_ADAFS (batch script line 2): capacity=300G needs 150G on each");
    tap_ok(submit(1000, 1000, 4, NULL, big, &canonical, &why) == BB_SUBMIT_OK,
           "on 4 nodes it fits (%s)", why ? why : "");
    free(canonical);
    free(why);
    /* 2^64-1 bytes: its share per node once wrapped to 0 (no quota). */
    refused(1000, 1000, 2, NULL, "capacity=18014398509481983.999999K", BB_SUBMIT_LIMIT,
            "needs 8E on each of the job's 2 node(s)");

    group_lookups = 0;
    refused(1000, 1000, 1, NULL, "use_persistent name=proj", BB_SUBMIT_PERMISSION, "proj");
    tap_is_int(group_lookups, 2, "the user's groups asked for root and for the instance");

    /* A user's persistent instance: at most AdafsNodeCapacity (100G) of
     * each of its nodes, as a job's file system (no AdafsTotalCapacity:
     * nothing else bounded it, and it outlives the job). */
    tap_is_int(hostlist_expand("p[1-2]", &drv.config.persistent_nodes, err, sizeof(err)), 0,
               "two persistent nodes");
    refused(1000, 1000, 1, NULL, "create_persistent name=big capacity=300G", BB_SUBMIT_LIMIT,
            "create_persistent name=big capacity=322122547200 bytes needs more than the "
            "107374182400 bytes a node may give (AdafsNodeCapacity) on 2 node(s)");
    refused(1000, 1000, 1, NULL, "create_persistent name=big capacity=150G nodes=1",
            BB_SUBMIT_LIMIT, "(AdafsNodeCapacity) on 1 node(s)");
    refused(1000, 1000, 1, NULL, "create_persistent name=big capacity=18014398509481983.999999K",
            BB_SUBMIT_LIMIT, "(AdafsNodeCapacity) on 2 node(s)");
    tap_ok(submit(1000, 1000, 1, NULL, "create_persistent name=fits capacity=150G", &canonical,
                  &why) == BB_SUBMIT_OK, "150G on both persistent nodes fits (%s)", why ? why : "");
    free(canonical);
    free(why);

    test_request_size();
    bb_config_free(&drv.config);
    return tap_done();
}
