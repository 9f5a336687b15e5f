/* The plugin/agent/stager contract read back as written: every message of
 * agent_proto.h, the instance description, the layout of a job's files and
 * the stager's report, each through its one encoder and its one decoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "instance.h"
#include "stage_report.h"
#include "stage_type.h"
#include "tap.h"

static void test_stage_types(void)
{
    enum stage_type t;
    int all = 1;
    for (int i = 0; i < STAGE_TYPE_COUNT; i++)
        all &= stage_type_parse(stage_type_name((enum stage_type)i), &t) == 0 && (int)t == i;
    tap_ok(all, "each stage type's name reads back as that type");
    tap_ok(STAGE_FILE == 0 && STAGE_DIRECTORY == 1 && STAGE_LIST == 2,
           "the numbers on the wire and on disk are file 0, directory 1, list 2");
    tap_is_int(stage_type_parse("dir", &t), -EINVAL, "a word that is no type is refused");
}

static void test_messages(void)
{
    struct rpc_writer w;
    struct rpc_reader r;
    rpc_writer_init(&w, NULL, 0);
    agent_stage_put(&w, &(struct agent_stage){ .job_id = 7, .direction = AGENT_STAGE_OUT,
                                               .type = STAGE_LIST, .worker = 2, .nworkers = 3,
                                               .threads = 8, .flags = AGENT_STAGE_VERIFY,
                                               .max_mdops = 5, .max_bandwidth = 6,
                                               .source = "/in", .destination = "/pfs/out",
                                               .threads_per_cpu = 2 });
    struct agent_stage st;
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_stage_get(&r, &st) == 0 && st.type == STAGE_LIST && st.worker == 2 &&
           st.max_bandwidth == 6 && strcmp(st.destination, "/pfs/out") == 0 &&
           st.threads == 8 && st.threads_per_cpu == 2,
           "STAGE reads back as written");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_put(&w, &(struct agent_stage){ .type = STAGE_TYPE_COUNT, .nworkers = 1,
                                               .source = "", .destination = "" });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_stage_get(&r, &st), -EBADMSG, "a STAGE of an unknown type is malformed");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_put(&w, &(struct agent_stage){ .nworkers = 1, .source = "/x", .destination = "/d",
                                               .name = "proj" });
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_stage_get(&r, &st) == 0 && strcmp(st.name, "proj") == 0,
           "a STAGE of a further mount names its instance");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_put(&w, &(struct agent_stage){ .nworkers = 1, .source = "/x", .destination = "/d",
                                               .name = "a/../b" });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_stage_get(&r, &st), -EBADMSG, "one whose name is no instance name is malformed");
    rpc_writer_free(&w);

    rpc_writer_init(&w, NULL, 0);
    agent_started_put(&w, &(struct agent_started){ 4242, 99 });
    struct agent_started started;
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_started_get(&r, &started) == 0 && started.port == 4242 && started.pid == 99,
           "START's answer reads back");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_started_put(&w, &(struct agent_started){ 0, 99 });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_started_get(&r, &started), -EBADMSG, "an answer with port 0 is malformed");
    rpc_writer_free(&w);

    rpc_writer_init(&w, NULL, 0);
    agent_stage_status_put(&w, &(struct agent_stage_status){ .state = AGENT_OP_DONE, .exit_status = 3,
                                                             .summary = "{}" });
    struct agent_stage_status ss;
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_stage_status_get(&r, &ss) == 0 && ss.state == AGENT_OP_DONE &&
           ss.exit_status == 3 && strcmp(ss.summary, "{}") == 0 && strcmp(ss.errors, "") == 0,
           "a stage's status reads back (no errors: empty text)");
    rpc_writer_free(&w);

    rpc_writer_init(&w, NULL, 0);
    agent_watch_put(&w, &(struct agent_watch){ 11, AGENT_OP_RUNNING, 20000 });
    struct agent_watch aw;
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_watch_get(&r, &aw) == 0 && aw.job_id == 11 && aw.known == AGENT_OP_RUNNING &&
           aw.hold_ms == 20000, "WATCH reads back");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_watch_put(&w, &(struct agent_watch){ 11, AGENT_OP_RUNNING, AGENT_WATCH_HOLD_MAX_MS + 1 });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_watch_get(&r, &aw), -EBADMSG, "a WATCH held longer than the agent allows is malformed");
    rpc_writer_free(&w);
    tap_is_str(agent_op_name(AGENT_WATCH), "watch", "WATCH has a name for the logs");

    struct agent_configure conf;
    rpc_writer_init(&w, NULL, 0);
    agent_configure_put(&w, &(struct agent_configure){ .job_id = 9, .instance_text = "t",
                                                       .mount = "/adafs/9", .uid = 1000, .gid = 100 });
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_configure_get(&r, &conf) == 0 && conf.job_id == 9 && conf.uid == 1000 &&
           conf.gid == 100 && strcmp(conf.mount, "/adafs/9") == 0,
           "CONFIGURE reads back with the job's user (a job with no START there)");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_configure_put(&w, &(struct agent_configure){ .job_id = 9, .instance_text = "t",
                                                       .mount = "/adafs/9", .uid = 1000 });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_configure_get(&r, &conf), -EBADMSG, "a CONFIGURE with a uid but no gid is malformed");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_configure_put(&w, &(struct agent_configure){ .job_id = 9, .instance_text = "t",
                                                       .mount = "/adafs/9.proj", .name = "proj" });
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_configure_get(&r, &conf) == 0 && strcmp(conf.name, "proj") == 0,
           "a CONFIGURE of a further mount names its instance");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_configure_put(&w, &(struct agent_configure){ .job_id = 9, .instance_text = "t",
                                                       .mount = "/adafs/9.x", .name = "../x" });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_configure_get(&r, &conf), -EBADMSG,
               "a further mount's name that is no instance name is malformed");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_configure_put(&w, &(struct agent_configure){ .job_id = 9, .instance_text = "t",
                                                       .mount = "/adafs/9.proj", .name = "proj",
                                                       .access = AGENT_ACCESS_FUSE });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_configure_get(&r, &conf), -EBADMSG,
               "a further mount through FUSE is malformed (the interposer serves them)");
    rpc_writer_free(&w);

    struct agent_instance in[2];
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, 2);
    agent_instance_put(&w, &(struct agent_instance){ AGENT_PERSIST_ID_BASE + 1, "a", 1000, 0, 4000,
                                                     77, 5, 1 << 30, "/s/n1/persistent/a" });
    agent_instance_put(&w, &(struct agent_instance){ AGENT_PERSIST_ID_BASE + 2, "b_2", 1001, 100,
                                                     4001, 0, 0, 0, "/s/n1/persistent/b_2" });
    rpc_reader_init(&r, w.data, w.len);
    uint32_t count = rpc_get_u32(&r);
    tap_ok(count == 2 && agent_instance_get(&r, &in[0]) == 0 && agent_instance_get(&r, &in[1]) == 0 &&
           rpc_reader_done(&r) && in[0].pid == 77 && in[0].quota == 1 << 30 &&
           strcmp(in[1].name, "b_2") == 0 && in[1].access_gid == 100 && in[1].pid == 0 &&
           strcmp(in[1].root, "/s/n1/persistent/b_2") == 0, "LIST's answer reads back, entry by entry");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_instance_put(&w, &(struct agent_instance){ 5, "a", 1000, 0, 4000, 1, 0, 0, "/r" });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_instance_get(&r, &in[0]), -EBADMSG, "an entry with a job's id is malformed");
    rpc_writer_free(&w);
    tap_is_str(agent_op_name(AGENT_LIST), "list", "LIST has a name for the logs");

    char sock[64];
    tap_ok(agent_socket_path(AGENT_SOCKET_DEFAULT, "n7", sock, sizeof(sock)) == 0 &&
           strcmp(sock, "/run/adafs/agent.n7.sock") == 0, "the agent's socket: %%n is the node's name");
    tap_is_int(agent_socket_path(AGENT_SOCKET_DEFAULT, "n7", sock, 10), -ENAMETOOLONG,
               "a socket path that does not fit is refused, not cut");
}

static int start_back(const struct agent_start *m, struct agent_start *back, struct rpc_writer *w)
{
    struct rpc_reader r;
    rpc_writer_init(w, NULL, 0);
    agent_start_put(w, m);
    rpc_reader_init(&r, w->data, w->len);
    return agent_start_get(&r, back);
}

static void test_persistent(void)
{
    tap_ok(AGENT_PERSIST_ID_BASE == 0x80000000u && agent_id_is_persistent(0x80000000u) &&
           agent_id_is_persistent(0xffffffffu) && !agent_id_is_persistent(0x03ffffffu) &&
           !agent_id_is_persistent(0x7fffffffu), "instance ids are those from 0x80000000 on, "
           "above every Slurm job id (MAX_JOB_ID 0x03ffffff)");
    tap_ok(agent_persist_name_ok("a") && agent_persist_name_ok("Scratch_2") &&
           agent_persist_name_ok("abcdefghijklmnopqrstuvwxyzABCDEF") &&
           !agent_persist_name_ok("abcdefghijklmnopqrstuvwxyzABCDEFG") && !agent_persist_name_ok("") &&
           !agent_persist_name_ok(NULL) && !agent_persist_name_ok("1a") &&
           !agent_persist_name_ok("_a") && !agent_persist_name_ok("a/b") &&
           !agent_persist_name_ok("..") && !agent_persist_name_ok("a-b") &&
           !agent_persist_name_ok("\xc3\xa9"), "a persistent name is a letter, then letters, "
           "digits or _, at most 32 characters (directive.h's rule)");

    struct rpc_writer w;
    struct agent_start job = { .job_id = 7, .uid = 1000, .gid = 1000, .nservers = 1,
                               .chunk_size = 4096, .quota = 1 << 20, .listen_host = "h",
                               .storage = "/s", .secret_hex = "ab", .numa_node = -1 };
    struct agent_start back;
    tap_ok(start_back(&job, &back, &w) == 0 && back.flags == 0 && strcmp(back.persist_name, "") == 0 &&
           back.access_gid == 0 && back.numa_node == -1 && strcmp(back.secret_hex, "ab") == 0,
           "a job's START reads back without flags, name or access group");
    rpc_writer_free(&w);
    job.server_key_hex = "cd";
    tap_ok(start_back(&job, &back, &w) == 0 && strcmp(back.server_key_hex, "cd") == 0 &&
           strcmp(back.secret_hex, "ab") == 0, "the servers' key travels in START beside the secret");
    rpc_writer_free(&w);
    job.server_key_hex = NULL;
    tap_ok(start_back(&job, &back, &w) == 0 && strcmp(back.server_key_hex, "") == 0,
           "a START without one reads back with \"\" (none)");
    rpc_writer_free(&w);

    struct agent_start p = job;
    p.job_id = AGENT_PERSIST_ID_BASE + 5;
    p.flags = AGENT_START_PERSISTENT;
    p.persist_name = "shared_1";
    p.access_gid = 1234;
    tap_ok(start_back(&p, &back, &w) == 0 && back.job_id == AGENT_PERSIST_ID_BASE + 5 &&
           back.flags == AGENT_START_PERSISTENT && strcmp(back.persist_name, "shared_1") == 0 &&
           back.access_gid == 1234 && back.uid == 1000 && back.quota == 1 << 20,
           "a persistent START reads back with its id, flag, name and access group");
    rpc_writer_free(&w);

    struct agent_start bad = p;
    bad.persist_name = "../etc";
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "a persistent START naming a path is malformed");
    rpc_writer_free(&w);
    bad.persist_name = NULL;
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "as is one naming nothing");
    rpc_writer_free(&w);
    bad = job;
    bad.persist_name = "x";
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "a job's START naming an instance is malformed");
    rpc_writer_free(&w);
    bad = job;
    bad.access_gid = 5;
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "as is one with an access group");
    rpc_writer_free(&w);
    bad = p;
    bad.flags = 0x2;
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "a START with a flag this release does not know "
               "is malformed");
    rpc_writer_free(&w);
    tap_ok(start_back(&p, &back, &w) == 0 && strcmp(back.fair_policy, "") == 0,
           "a persistent START without a fair-share policy reads back \"\" (the agent's)");
    rpc_writer_free(&w);
    struct agent_start fair = p;
    fair.fair_policy = "user-then-size";
    tap_ok(start_back(&fair, &back, &w) == 0 && strcmp(back.fair_policy, "user-then-size") == 0 &&
           strcmp(back.persist_name, "shared_1") == 0, "a persistent START carries its servers' "
           "fair-share policy");
    rpc_writer_free(&w);
    fair.fair_policy = "off";
    tap_ok(start_back(&fair, &back, &w) == 0 && strcmp(back.fair_policy, "off") == 0,
           "off is a policy too (not the agent's default)");
    rpc_writer_free(&w);
    fair.fair_policy = "fair";
    tap_is_int(start_back(&fair, &back, &w), -EBADMSG, "a policy that is none is malformed");
    rpc_writer_free(&w);
    bad = job;
    bad.fair_policy = "job-fair";
    tap_is_int(start_back(&bad, &back, &w), -EBADMSG, "a job's START naming a policy is malformed "
               "(one job: nothing to share)");
    rpc_writer_free(&w);
    /* Which ids go with which flag the agent decides itself (naming the id). */
    bad = job;
    bad.job_id = AGENT_PERSIST_ID_BASE;
    tap_ok(start_back(&bad, &back, &w) == 0 && back.job_id == AGENT_PERSIST_ID_BASE,
           "an instance id in a job's START decodes: the agent refuses it with a reason");
    rpc_writer_free(&w);

    struct rpc_reader r;
    struct agent_stage_status ss;
    rpc_writer_init(&w, NULL, 0);
    agent_stage_status_put(&w, &(struct agent_stage_status){ AGENT_OP_NONE, 0, "", "", 1, 40001,
                                                             77, 5ull << 30 });
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_stage_status_get(&r, &ss) == 0 && ss.has_server && ss.port == 40001 && ss.pid == 77 &&
           ss.used == 5ull << 30, "a persistent instance's STATUS says its port, pid and bytes used");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_status_put(&w, &(struct agent_stage_status){ AGENT_OP_RUNNING, 0, "", "", 0, 9, 9, 9 });
    rpc_reader_init(&r, w.data, w.len);
    tap_ok(agent_stage_status_get(&r, &ss) == 0 && !ss.has_server && ss.port == 0 && ss.used == 0,
           "a job's STATUS carries none of them");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_status_put(&w, &(struct agent_stage_status){ AGENT_OP_NONE, 0, "", "", 1, 0, 1, 1 });
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_stage_status_get(&r, &ss), -EBADMSG, "a server on port 0 is malformed");
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_status_put(&w, &(struct agent_stage_status){ AGENT_OP_NONE, 0, "", "", 0, 0, 0, 0 });
    rpc_put_u32(&w, 40001);
    rpc_reader_init(&r, w.data, w.len);
    tap_is_int(agent_stage_status_get(&r, &ss), -EBADMSG, "as is a server's part cut short");
    rpc_writer_free(&w);
}

static void test_instance(void)
{
    struct instance in = { .chunk_size = 1 << 20, .timeout_ms = 7000, .nservers = 2 };
    strcpy(in.mount, "/adafs/12");
    for (int i = 0; i < INSTANCE_SECRET_SIZE; i++)
        in.secret[i] = (uint8_t)(i * 7);
    in.servers = calloc(2, sizeof(*in.servers));
    strcpy(in.servers[0].host, "n1");
    in.servers[0].port = 4001;
    strcpy(in.servers[1].host, "10.0.0.2");
    in.servers[1].port = 4002;
    char *text = instance_format(&in, 12);
    tap_ok(text && strstr(text, "of job 12"), "the instance text names its job");
    struct instance back;
    char err[256];
    tap_is_int(instance_parse(text, "t", &back, err, sizeof(err)), 0, "and parses");
    tap_ok(back.nservers == 2 && back.servers[1].port == 4002 &&
           strcmp(back.servers[0].host, "n1") == 0 && back.chunk_size == in.chunk_size &&
           back.timeout_ms == 7000 && strcmp(back.mount, "/adafs/12") == 0 &&
           memcmp(back.secret, in.secret, INSTANCE_SECRET_SIZE) == 0,
           "every field reads back as written");
    instance_free(&back);
    free(text);
    tap_ok(instance_parse("mount=/a\nsecret=00\nserver=h:1\n", "t", &back, err, sizeof(err)) < 0 &&
           strstr(err, "t:2") && strstr(err, "secret"), "a short secret is refused, naming the line (%s)", err);
    instance_free(&in);

    char hex[INSTANCE_SECRET_HEX];
    uint8_t s[INSTANCE_SECRET_SIZE], t[INSTANCE_SECRET_SIZE];
    secret_generate(s);
    secret_to_hex(s, hex);
    tap_ok(strlen(hex) == 64 && secret_from_hex(hex, t) == 0 && memcmp(s, t, sizeof(s)) == 0,
           "a secret's hex form reads back");

    char path[64];
    tap_ok(instance_mount_path(path, sizeof(path), "/adafs", 5) == 0 && strcmp(path, "/adafs/5") == 0,
           "a job's mount point is <prefix>/<id>");
    tap_ok(instance_named_mount_path(path, sizeof(path), "/adafs", 5, "proj") == 0 &&
           strcmp(path, "/adafs/5.proj") == 0, "a further mount of job 5: /adafs/5.proj");
    tap_ok(instance_named_file_path(path, sizeof(path), "/adafs", 5, "proj") == 0 &&
           strcmp(path, "/adafs/.job.5.proj.instance") == 0,
           "its instance file: /adafs/.job.5.proj.instance");
    tap_ok(instance_named_file_path(path, sizeof(path), "/adafs", 5, "") == 0 &&
           strcmp(path, "/adafs/.job.5.instance") == 0, "no name: the first mount's file");
    tap_ok(instance_file_path(path, sizeof(path), "/adafs", 5, INSTANCE_FILE) == 0 &&
           strcmp(path, "/adafs/.job.5.instance") == 0, "its instance file <prefix>/.job.<id>.instance");
    tap_ok(instance_file_path(path, 10, "/adafs", 5, INSTANCE_SECRET) == -ENAMETOOLONG && !path[0],
           "a path that does not fit is refused, not cut");
}

static void test_report(void)
{
    struct stage_report_failure f = { "/pfs/x", ENOENT, "No such file or directory", "open" };
    struct stage_report r = { .direction = "in", .source = "/pfs", .destination = "/",
                              .worker = 1, .workers = 4, .files = 10, .bytes = 1 << 20,
                              .errors = 1, .verified = 10, .seconds = 2.5,
                              .failures = &f, .nfailures = 1 };
    char *text = stage_report_encode(&r);
    struct stage_report back;
    char err[128];
    tap_ok(text && stage_report_decode(text, &back, err, sizeof(err)) == 0, "a report reads back");
    tap_ok(back.files == 10 && back.bytes == (1 << 20) && back.errors == 1 && back.verified == 10 &&
           back.workers == 4 && back.seconds == 2.5 && strcmp(back.source, "/pfs") == 0,
           "with its counters");
    tap_ok(back.nfailures == 1 && strcmp(back.failures[0].path, "/pfs/x") == 0 &&
           back.failures[0].err == ENOENT && strcmp(back.failures[0].what, "open") == 0,
           "and its failures");
    struct stage_report total = { 0 };
    stage_report_add(&total, &back);
    stage_report_add(&total, &back);
    tap_ok(total.files == 20 && total.seconds == 2.5, "workers add up (their time: the longest)");
    stage_report_free(&back);
    free(text);
    tap_ok(stage_report_decode("{\"files\":3,\"newkey\":[1],\"failures\":[7]}", &back, err,
                               sizeof(err)) == 0 && back.files == 3 && back.nfailures == 0,
           "keys it does not know are skipped, as are failures that are not objects");
    stage_report_free(&back);
    tap_is_int(stage_report_decode("files=3", &back, err, sizeof(err)), -EBADMSG,
               "text that is not a report is refused");
}

int main(void)
{
    test_stage_types();
    test_messages();
    test_persistent();
    test_instance();
    test_report();
    return tap_done();
}
