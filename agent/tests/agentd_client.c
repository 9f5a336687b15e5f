/* agentd_client: drives a running adafs-agentd for tests/test_agentd.sh.
 *
 *   agentd_client HOST PORT ping
 *   agentd_client HOST PORT start JOB UID GID STORAGE [INDEX SERVERS]
 *   agentd_client HOST PORT configure JOB MOUNT [SERVERS | ACCESS INSTANCE-TEXT-FILE]
 *                               SERVERS: an instance file listing that many
 *                               $ADAFS_TEST_QUOTA: START's quota (1 GiB),
 *                               $ADAFS_TEST_SERVER_KEY: its servers' key (none)
 *   agentd_client HOST PORT stage JOB SOURCE DESTINATION
 *   agentd_client HOST PORT status JOB
 *   agentd_client HOST PORT watch JOB       a WATCH and a PING at once on one session
 *   agentd_client HOST PORT teardown JOB
 *   agentd_client HOST PORT many N          N pings on one session
 *   agentd_client HOST PORT tamper          a request with a byte changed on the way
 *   agentd_client HOST PORT replay          a request sent twice
 *   agentd_client HOST PORT bogus N SECONDS N clients sending empty and bogus hellos
 *   agentd_client HOST PORT silent          connect, send nothing
 *   agentd_client HOST PORT drip            send a header a byte every 500 ms
 *   agentd_client HOST PORT oversize LENGTH announce a hello of LENGTH bytes
 *   agentd_client HOST PORT crowd N         hold N silent connections, then ping
 *   agentd_client HOST PORT hold N SECONDS  hold N silent connections that long
 *   agentd_client HOST PORT occupy N SECONDS  the same, opening a new one for each
 *                                          the agent closes (evicts or times out)
 *   agentd_client SOCKET 0 localcrowd N     the same on the local socket, then PING
 *   agentd_client HOST PORT qos [JOB:UID:LIMITS...]  a QoS cycle as adafs-qosd sends
 *                                          (LIMITS as qos_limits.h, "-" for none);
 *                                          prints each job's usage, one line each
 *   agentd_client HOST PORT qosbad          a QoS cycle that is not one
 *   agentd_client HOST PORT qosgroup [JOB:UID:LIMITS...]  the same as a group
 *                                          of one (this agent its own relay,
 *                                          AGENT_QOS_GROUP); prints each member's
 *                                          status, then its report
 *
 * Requests go in agent sessions (common/agent_session.h) as the plugin's:
 * munge from $ADAFS_TEST_MUNGE_SOCKET, the node $ADAFS_TEST_SEAL_NODE (t1
 * by default). Prints one line saying what happened; exits 0 when it could
 * talk to the agent, 2 when it could not. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_proto.h"
#include "agent_session.h"
#include "munge_auth.h"
#include "net.h"
#include "qos_proto.h"
#include "rpc_io.h"

static const char *host;
static int port;
static struct session_auth munge;

static const char *node(void)
{
    const char *n = getenv("ADAFS_TEST_SEAL_NODE");
    return n ? n : "t1";
}

static int connect_agent(void)
{
    char err[256];
    int fd = net_connect(host, port, 5000, err, sizeof(err));
    if (fd < 0) {
        printf("unreachable: %s\n", err);
        exit(2);
    }
    return fd;
}

static void session(struct agent_session *as)
{
    char err[1024];
    int rc = agent_session_connect(as, &munge, node(), host, port, 10000, err, sizeof(err));
    if (rc < 0) {
        printf("%s\n", err);
        exit(2);
    }
}

/* Sends one request in a session; returns the reply's status and leaves
 * its body in *reply (the caller frees reply->plain). */
static int call_on(struct agent_session *as, uint16_t op, const struct rpc_writer *body,
                   struct session_msg *reply, struct rpc_reader *r)
{
    int64_t deadline = net_now_ms() + 60000;
    int rc = agent_session_send(as, op, 0, body->data, body->len, deadline);
    if (rc == 0)
        rc = agent_session_recv(as, reply, AGENT_MAX_BODY, deadline);
    if (rc < 0) {
        printf("no answer: %s\n", strerror(-rc));
        exit(2);
    }
    rpc_reader_init(r, reply->body, reply->len);
    if (reply->status < 0) {
        const char *msg;
        uint32_t fault;
        if (agent_error_get(r, &msg, &fault) < 0)
            printf("status %d: (malformed error)\n", reply->status);
        else
            printf("status %d (%s fault): %s\n", reply->status, agent_fault_name(fault), msg);
    }
    return reply->status;
}

static int call(uint16_t op, const struct rpc_writer *body, struct session_msg *reply,
                struct rpc_reader *r)
{
    struct agent_session as;
    session(&as);
    int status = call_on(&as, op, body, reply, r);
    agent_session_close(&as);
    return status;
}

/* Milliseconds until the agent closes fd (-1: still open after wait_ms). */
static int wait_closed(int fd, int wait_ms)
{
    int64_t start = net_now_ms();
    for (;;) {
        int left = wait_ms - (int)(net_now_ms() - start);
        if (left <= 0)
            return -1;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, left) > 0) {
            char c;
            if (read(fd, &c, 1) <= 0)
                return (int)(net_now_ms() - start);
        }
    }
}

/* Prints the last 40 bytes of text on one line, newlines as "|". */
static void print_end(const char *label, const char *text)
{
    size_t len = strlen(text);
    fputs(label, stdout);
    for (const char *p = text + (len > 40 ? len - 40 : 0); *p; p++)
        putchar(*p == '\n' ? '|' : *p);
}

/* Sends a request whose answer has no body to print; frees w. */
static int simple(uint16_t op, struct rpc_writer *w)
{
    struct session_msg reply;
    struct rpc_reader r;
    int status = call(op, w, &reply, &r);
    if (status == 0)
        printf("ok\n");
    free(reply.plain);
    rpc_writer_free(w);
    return 0;
}

/* Sends raw bytes as a sealed frame; 0 if the agent then closed the
 * connection without answering. */
static int send_frame_expect_close(struct agent_session *as, const uint8_t *payload, size_t len)
{
    struct rpc_header h = { .opcode = SESSION_OP_SEALED };
    if (rpc_send(as->fd, &h, payload, len, net_now_ms() + 5000) < 0)
        return -1;
    return wait_closed(as->fd, 5000) >= 0 ? 0 : -1;
}

struct flood {
    int64_t until;
    int sent, answered;
};

/* Hellos that are empty, not credentials, or garbage credentials. */
static void *flood_worker(void *arg)
{
    struct flood *f = arg;
    static const char *const bogus[] = { "", "MUNGE:", "MUNGE:AwQDAACm9ABC:", "not a credential" };
    for (int i = 0; net_now_ms() < f->until; i++) {
        char err[256];
        int fd = net_connect(host, port, 2000, err, sizeof(err));
        if (fd < 0)
            continue;
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        rpc_put_str(&w, bogus[i % 4]);
        struct rpc_header h = { .opcode = SESSION_OP_HELLO };
        uint8_t *reply = NULL;
        if (rpc_send(fd, &h, w.data, w.len, net_now_ms() + 2000) == 0) {
            __atomic_add_fetch(&f->sent, 1, __ATOMIC_RELAXED);
            if (rpc_recv(fd, &h, &reply, 4096, net_now_ms() + 2000) == 0 && h.status < 0)
                __atomic_add_fetch(&f->answered, 1, __ATOMIC_RELAXED);
        }
        free(reply);
        rpc_writer_free(&w);
        close(fd);
    }
    return NULL;
}

/* Prints the report of an AGENT_QOS or AGENT_QOS_REPORT answer. */
static void print_report(struct rpc_reader *r)
{
    struct qos_report rep;
    if (qos_report_get(r, &rep) < 0) {
        printf("malformed report\n");
        return;
    }
    for (uint32_t i = 0; i < rep.njobs; i++) {
        printf("job=%u procs=%u", rep.jobs[i].job_id, rep.jobs[i].procs);
        for (int k = 0; k < QOS_NCLASSES; k++)
            printf(" %s=%llu", qos_class_name(k), (unsigned long long)rep.jobs[i].used[k]);
        printf(" waited_ms=");
        for (int k = 0; k < QOS_NCLASSES; k++)
            printf("%s%llu", k ? "," : "", (unsigned long long)rep.jobs[i].waited_ns[k] / 1000000);
        printf("\n");
    }
    if (!rep.njobs)
        printf("no jobs\n");
    free(rep.jobs);
}

/* AGENT_QOS_REPORT: prints the report. */
static int qos_report_only(uint64_t cycle)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, QOS_PROTO_VERSION);
    rpc_put_u64(&w, cycle);
    struct session_msg reply;
    struct rpc_reader r;
    int status = call(AGENT_QOS_REPORT, &w, &reply, &r);
    rpc_writer_free(&w);
    if (status == 0)
        print_report(&r);
    free(reply.plain);
    return 0;
}

/* AGENT_QOS with the jobs given as JOB:UID:LIMITS (the report due in
 * $QOS_ANSWER_IN ms, default at once); prints the report. As a group of
 * one (AGENT_QOS_GROUP) when group. */
static int qos_cycle(int n, char **specs, bool group)
{
    struct qos_cycle c = { .cycle = getenv("QOS_CYCLE") ? strtoull(getenv("QOS_CYCLE"), NULL, 10) : 1,
                           .answer_in_ms = getenv("QOS_ANSWER_IN") ? (uint32_t)atoi(getenv("QOS_ANSWER_IN")) : 0,
                           .njobs = (uint32_t)n,
                           .jobs = calloc((size_t)n + 1, sizeof(*c.jobs)) };
    for (int i = 0; i < n; i++) {
        char *job = specs[i], *uid = strchr(job, ':'), *lim = uid ? strchr(uid + 1, ':') : NULL;
        char err[256];
        if (!lim) {
            printf("bad job spec %s: JOB:UID:LIMITS\n", job);
            return 2;
        }
        *uid++ = *lim++ = '\0';
        c.jobs[i].job_id = (uint32_t)strtoul(job, NULL, 10);
        c.jobs[i].uid = (uint32_t)strtoul(uid, NULL, 10);
        if (strcmp(lim, "-") != 0 && qos_limits_parse(lim, &c.jobs[i].limit, err, sizeof(err)) < 0) {
            printf("%s\n", err);
            return 2;
        }
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    if (group) {
        struct qos_group_member self = { .node = node(), .host = host, .port = (uint32_t)port };
        struct qos_group_writer gw;
        qos_group_request_start(&gw, &w, c.cycle, c.answer_in_ms, 1, 0, &self, 1);
        qos_group_part_start(&gw, 0);
        qos_cycle_put(&w, &c);
        qos_group_part_end(&gw);
        qos_group_request_end(&gw);
    } else {
        qos_cycle_put(&w, &c);
    }
    free(c.jobs);
    struct session_msg reply;
    struct rpc_reader r;
    int status = call(group ? AGENT_QOS_GROUP : AGENT_QOS, &w, &reply, &r);
    rpc_writer_free(&w);
    static struct qos_group_report rep;
    if (status == 0 && !group) {
        print_report(&r);
    } else if (status == 0 && qos_group_report_get(&r, &rep, 1) < 0) {
        printf("a malformed group report\n");
    } else if (status == 0) {
        for (uint32_t i = 0; i < rep.n; i++) {
            printf("member %u: status %u %s\n", rep.e[i].index, rep.e[i].status, rep.e[i].reason);
            struct rpc_reader mr;
            rpc_reader_init(&mr, rep.e[i].report, rep.e[i].len);
            if (rep.e[i].len)
                print_report(&mr);
        }
    }
    free(reply.plain);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: agentd_client HOST PORT COMMAND [ARGS]\n");
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    munge_auth_init(&munge, getenv("ADAFS_TEST_MUNGE_SOCKET"));
    const char *cmd = argv[3];
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    uint32_t job = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 0;
    if (strcmp(cmd, "qos") == 0 || strcmp(cmd, "qosgroup") == 0)
        return qos_cycle(argc - 4, argv + 4, strcmp(cmd, "qosgroup") == 0);
    if (strcmp(cmd, "qosreport") == 0)
        return qos_report_only(argc > 4 ? strtoull(argv[4], NULL, 10) : 0);
    if (strcmp(cmd, "qosbad") == 0) {
        struct rpc_writer bad;
        rpc_writer_init(&bad, NULL, 0);
        rpc_put_u32(&bad, QOS_PROTO_VERSION);
        rpc_put_u64(&bad, 1);
        rpc_put_u32(&bad, 1000000);   /* a million jobs in a few bytes */
        return simple(AGENT_QOS, &bad);
    }
    if (strcmp(cmd, "ping") == 0)
        return simple(AGENT_PING, &w);
    if (strcmp(cmd, "start") == 0 && (argc == 8 || argc == 10)) {
        agent_start_put(&w, &(struct agent_start){
            .job_id = job, .uid = (uint32_t)atoi(argv[5]), .gid = (uint32_t)atoi(argv[6]),
            .index = argc == 10 ? (uint32_t)atoi(argv[8]) : 0,
            .nservers = argc == 10 ? (uint32_t)atoi(argv[9]) : 1,
            .chunk_size = 524288,
            .quota = getenv("ADAFS_TEST_QUOTA") ? strtoull(getenv("ADAFS_TEST_QUOTA"), NULL, 10)
                                                : 1 << 30,
            .listen_host = "127.0.0.1", .storage = argv[7],
            .secret_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
            .numa_node = -1, .server_key_hex = getenv("ADAFS_TEST_SERVER_KEY") });
        return simple(AGENT_START, &w);
    }
    /* pstart ID UID GID STORAGE NAME ACCESS-GID [INDEX NSERVERS]: a
     * persistent instance's START (server INDEX of NSERVERS; 0 of 1);
     * prints its server's port and pid. $ADAFS_TEST_SERVER_KEY: the
     * servers' key it carries (none without). */
    if (strcmp(cmd, "pstart") == 0 && (argc == 10 || argc == 12)) {
        agent_start_put(&w, &(struct agent_start){
            .job_id = job, .uid = (uint32_t)atoi(argv[5]), .gid = (uint32_t)atoi(argv[6]),
            .index = argc == 12 ? (uint32_t)atoi(argv[10]) : 0,
            .nservers = argc == 12 ? (uint32_t)atoi(argv[11]) : 1, .chunk_size = 524288,
            .server_key_hex = getenv("ADAFS_TEST_SERVER_KEY"),
            .quota = getenv("ADAFS_TEST_QUOTA") ? strtoull(getenv("ADAFS_TEST_QUOTA"), NULL, 10)
                                                : 1 << 30,
            .listen_host = "127.0.0.1", .storage = argv[7],
            .secret_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
            .numa_node = -1, .flags = AGENT_START_PERSISTENT, .persist_name = argv[8],
            .access_gid = (uint32_t)atoi(argv[9]) });
        struct session_msg reply;
        struct rpc_reader r;
        struct agent_started started;
        if (call(AGENT_START, &w, &reply, &r) == 0 && agent_started_get(&r, &started) == 0)
            printf("port=%u pid=%u\n", started.port, started.pid);
        free(reply.plain);
        rpc_writer_free(&w);
        return 0;
    }
    /* pstatus ID: a persistent instance's STATUS. */
    if (strcmp(cmd, "pstatus") == 0 && argc == 5) {
        agent_job_ref_put(&w, &(struct agent_job_ref){ job, 0 });
        struct session_msg reply;
        struct rpc_reader r;
        struct agent_stage_status st;
        if (call(AGENT_STATUS, &w, &reply, &r) == 0) {
            if (agent_stage_status_get(&r, &st) == 0 && st.has_server)
                printf("port=%u pid=%u used=%llu\n", st.port, st.pid, (unsigned long long)st.used);
            else
                printf("no server in the STATUS answer\n");
        }
        free(reply.plain);
        rpc_writer_free(&w);
        return 0;
    }
    /* configure JOB MOUNT [SERVERS | ACCESS INSTANCE-TEXT-FILE] */
    if (strcmp(cmd, "configure") == 0 && argc >= 6 && argc <= 8) {
        /* As the plugin writes it: one line per server, names as long as
         * a cluster's ("node-rack12-chassis3-blade4.example.org"); or the
         * text of a file, for a real instance. */
        int servers = argc == 7 ? atoi(argv[6]) : 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (argc == 8) {
            FILE *in = fopen(argv[7], "r");
            int c;
            while (in && (c = fgetc(in)) != EOF)
                fputc(c, f);
            if (in)
                fclose(in);
        } else if (servers) {
            fprintf(f, "mount=%s\nchunk_size=524288\ntimeout_ms=5000\nsecret="
                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
                    argv[5]);
            for (int i = 0; i < servers; i++)
                fprintf(f, "server=node-rack%02d-chassis%d-blade%04d.example.org:%d\n", i / 64,
                        i % 8, i, 40000 + i % 20000);
        } else {
            fputs("test instance\n", f);
        }
        fclose(f);
        /* ADAFS_TEST_CONFIGURE_AS=UID:GID: a job with no START here (it
         * uses a persistent instance). */
        unsigned as_uid = 0, as_gid = 0;
        const char *as = getenv("ADAFS_TEST_CONFIGURE_AS");
        if (as && sscanf(as, "%u:%u", &as_uid, &as_gid) != 2)
            as_uid = as_gid = 0;
        /* ADAFS_TEST_CONFIGURE_NAME=NAME: a further mount, of instance NAME. */
        agent_configure_put(&w, &(struct agent_configure){
            job, text, argv[5], argc == 8 ? (uint32_t)atoi(argv[6]) : AGENT_ACCESS_PRELOAD,
            as_uid, as_gid, getenv("ADAFS_TEST_CONFIGURE_NAME") });
        int rc = simple(AGENT_CONFIGURE, &w);
        free(text);
        return rc;
    }
    if (strcmp(cmd, "stage") == 0 && argc == 7) {
        agent_stage_put(&w, &(struct agent_stage){ .job_id = job, .nworkers = 1,
                                                   .source = argv[5], .destination = argv[6] });
        return simple(AGENT_STAGE, &w);
    }
    if (strcmp(cmd, "teardown") == 0 && argc == 5) {
        agent_job_ref_put(&w, &(struct agent_job_ref){ job, 1 });
        return simple(AGENT_TEARDOWN, &w);
    }
    if (strcmp(cmd, "status") == 0 && argc == 5) {
        agent_job_ref_put(&w, &(struct agent_job_ref){ job, 0 });
        struct session_msg reply;
        struct rpc_reader r;
        if (call(AGENT_STATUS, &w, &reply, &r) == 0) {
            uint32_t state = rpc_get_u32(&r), exit_status = rpc_get_u32(&r);
            const char *summary = rpc_get_str(&r), *errors = rpc_get_str(&r);
            if (!summary || !errors) {
                printf("malformed STATUS reply\n");
                return 2;
            }
            /* The ends show whether a note on dropped output was added. */
            printf("state=%u exit=%d summary=%zu errors=%zu", state, (int)exit_status,
                   strlen(summary), strlen(errors));
            print_end(" summary_end=", summary);
            print_end(" errors_end=", errors);
            printf("\n");
        }
        free(reply.plain);
        rpc_writer_free(&w);
        return 0;
    }
    if (strcmp(cmd, "watch") == 0 && argc == 5) {
        /* Requests overlap on one session: the PING sent after the WATCH
         * is answered while the WATCH waits, each answer with its id. */
        struct agent_session as;
        session(&as);
        agent_watch_put(&w, &(struct agent_watch){ job, AGENT_OP_RUNNING, 10000 });
        int64_t start = net_now_ms(), deadline = start + 20000;
        if (agent_session_send_id(&as, AGENT_WATCH, 1, 0, w.data, w.len, deadline) < 0 ||
            agent_session_send_id(&as, AGENT_PING, 2, 0, NULL, 0, deadline) < 0) {
            printf("cannot send\n");
            return 2;
        }
        for (int i = 0; i < 2; i++) {
            struct session_msg reply;
            if (agent_session_recv(&as, &reply, AGENT_MAX_BODY, deadline) < 0) {
                printf("no answer\n");
                return 2;
            }
            struct rpc_reader r;
            rpc_reader_init(&r, reply.body, reply.len);
            struct agent_stage_status st = { 0 };
            if (reply.op == AGENT_WATCH && reply.status == 0)
                agent_stage_status_get(&r, &st);
            printf("%s%s id %u status %d state %u after %s ms", i ? "; " : "",
                   agent_op_name(reply.op), reply.id, reply.status, st.state,
                   net_now_ms() - start < 1000 ? "<1000" : ">=1000");
            free(reply.plain);
        }
        printf("\n");
        agent_session_close(&as);
        rpc_writer_free(&w);
        return 0;
    }
    if (strcmp(cmd, "many") == 0 && argc == 5) {
        struct agent_session as;
        session(&as);
        uint32_t served = 0;
        for (; served < job; served++) {
            struct session_msg reply;
            struct rpc_reader r;
            int status = call_on(&as, AGENT_PING, &w, &reply, &r);
            const char *name = rpc_get_str(&r);
            bool ok = status == 0 && name && strcmp(name, node()) == 0;
            free(reply.plain);
            if (!ok)
                break;
        }
        agent_session_close(&as);
        printf("%u of %u pings served on one session\n", served, job);
        return 0;
    }
    if (strcmp(cmd, "tamper") == 0 || strcmp(cmd, "replay") == 0) {
        struct agent_session as;
        session(&as);
        uint8_t *sealed;
        size_t len;
        session_seal(&as.keys, AGENT_PING, 0, NULL, 0, &sealed, &len);
        int rc;
        if (cmd[0] == 't') {
            sealed[len / 2] ^= 1;
            rc = send_frame_expect_close(&as, sealed, len);
        } else {
            struct rpc_header h = { .opcode = SESSION_OP_SEALED };
            struct session_msg reply;
            rc = rpc_send(as.fd, &h, sealed, len, net_now_ms() + 5000) == 0 &&
                 agent_session_recv(&as, &reply, AGENT_MAX_BODY, net_now_ms() + 5000) == 0 &&
                 reply.status == 0 ? 0 : -1;
            if (rc == 0)
                free(reply.plain);
            printf("the request once: %s; ", rc == 0 ? "served" : "not served");
            rc = send_frame_expect_close(&as, sealed, len);
        }
        free(sealed);
        printf(rc == 0 ? "the agent closed the session without an answer\n"
                       : "the agent did not close the session\n");
        return 0;
    }
    if (strcmp(cmd, "bogus") == 0 && argc == 6) {
        struct flood f = { .until = net_now_ms() + 1000 * atoi(argv[5]) };
        pthread_t t[64];
        uint32_t n = job < 64 ? job : 64;
        for (uint32_t i = 0; i < n; i++)
            pthread_create(&t[i], NULL, flood_worker, &f);
        for (uint32_t i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        printf("%d bogus hellos sent, %d refused\n", f.sent, f.answered);
        return 0;
    }
    if (strcmp(cmd, "silent") == 0) {
        int ms = wait_closed(connect_agent(), 20000);
        printf(ms < 0 ? "still open after 20000 ms\n" : "closed after %d ms\n", ms);
        return 0;
    }
    if (strcmp(cmd, "drip") == 0) {   /* a header's bytes, one every 500 ms */
        int fd = connect_agent();
        int64_t start = net_now_ms();
        for (int i = 0; i < RPC_HEADER_SIZE; i++) {
            int ms = wait_closed(fd, 500);
            if (ms >= 0 || send(fd, "x", 1, MSG_NOSIGNAL) != 1) {
                printf("closed after %d ms\n", (int)(net_now_ms() - start));
                return 0;
            }
        }
        printf("still open after %d bytes\n", RPC_HEADER_SIZE);
        return 0;
    }
    if (strcmp(cmd, "oversize") == 0 && argc == 5) {
        int fd = connect_agent();
        struct rpc_header h = { .opcode = SESSION_OP_HELLO, .id = 1, .length = job };
        uint8_t head[RPC_HEADER_SIZE];
        rpc_header_encode(&h, head);
        if (net_write_full(fd, head, sizeof(head), net_now_ms() + 5000) < 0) {
            printf("cannot send: %s\n", strerror(errno));
            return 2;
        }
        int ms = wait_closed(fd, 5000);
        printf(ms < 0 ? "still open after 5000 ms\n" : "closed after %d ms\n", ms);
        return 0;
    }
    if (strcmp(cmd, "crowd") == 0 && argc == 5) {
        int *held = calloc(job ? job : 1, sizeof(int));
        for (uint32_t i = 0; i < job; i++)
            held[i] = connect_agent();   /* held open until exit */
        usleep(200000);
        struct session_msg reply;
        struct rpc_reader r;
        int status = call(AGENT_PING, &w, &reply, &r);
        free(reply.plain);
        uint32_t evicted = 0;
        for (uint32_t i = 0; i < job; i++)
            evicted += wait_closed(held[i], 1) >= 0;
        printf("with %u idle connections held, a ping: %s; %u of them evicted\n", job,
               status == 0 ? "served" : "refused", evicted);
        for (uint32_t i = 0; i < job; i++)
            close(held[i]);
        free(held);
        return 0;
    }
    if (strcmp(cmd, "localcrowd") == 0 && argc == 5) {   /* HOST is the Unix socket */
        for (uint32_t i = 0; i < job; i++)
            if (net_connect_unix(host) < 0) {
                printf("cannot connect to %s\n", host);
                return 2;
            }
        int fd = net_connect_unix(host);
        struct rpc_header h = { .opcode = AGENT_PING, .id = 1 };
        uint8_t *reply = NULL;
        int64_t deadline = net_now_ms() + 5000;
        int rc = fd < 0 ? fd : rpc_send(fd, &h, NULL, 0, deadline);
        if (rc == 0)
            rc = rpc_recv(fd, &h, &reply, AGENT_MAX_BODY, deadline);
        free(reply);
        if (rc < 0)
            printf("local PING %u+1: %s\n", job, strerror(-rc));
        else
            printf("local PING %u+1: status %d\n", job, h.status);
        return 0;
    }
    if (strcmp(cmd, "occupy") == 0 && argc == 6) {
        struct pollfd p[512];
        uint32_t n = job < 512 ? job : 512, reopened = 0;
        for (uint32_t i = 0; i < n; i++)
            p[i] = (struct pollfd){ .fd = connect_agent(), .events = POLLIN };
        int64_t until = net_now_ms() + 1000 * atoi(argv[5]);
        while (net_now_ms() < until) {
            if (poll(p, n, 100) <= 0)
                continue;
            for (uint32_t i = 0; i < n; i++) {
                char c;
                if (!p[i].revents || read(p[i].fd, &c, 1) > 0)
                    continue;
                close(p[i].fd);
                char err[256];
                p[i].fd = net_connect(host, port, 2000, err, sizeof(err));
                reopened++;
            }
        }
        printf("occupied %u connections, reopened %u\n", n, reopened);
        return 0;
    }
    if (strcmp(cmd, "hold") == 0 && argc == 6) {
        for (uint32_t i = 0; i < job; i++)
            connect_agent();   /* queued, if the agent cannot accept them */
        sleep((unsigned)atoi(argv[5]));
        printf("held %u connections\n", job);
        return 0;
    }
    fprintf(stderr, "agentd_client: bad command or arguments: %s\n", cmd);
    return 2;
}
