/* agentd_client: drives a running adafs-agentd for tests/test_agentd.sh.
 *
 *   agentd_client HOST PORT start JOB UID GID STORAGE
 *   agentd_client HOST PORT configure JOB MOUNT
 *   agentd_client HOST PORT stage JOB SOURCE DESTINATION
 *   agentd_client HOST PORT status JOB
 *   agentd_client HOST PORT teardown JOB
 *   agentd_client HOST PORT silent          connect, send nothing
 *   agentd_client HOST PORT drip            send a header a byte every 500 ms
 *   agentd_client HOST PORT oversize LENGTH announce a request of LENGTH bytes
 *   agentd_client HOST PORT crowd N         hold N silent connections, open one more
 *   agentd_client HOST PORT hold N SECONDS  hold N silent connections that long
 *   agentd_client SOCKET 0 localcrowd N     the same on the local socket, then PING
 *
 * Requests are sealed with munge (socket from $ADAFS_TEST_MUNGE_SOCKET) as
 * the plugin seals them. Prints one line saying what happened; exits 0 when
 * it could talk to the agent, 2 when it could not. */
#include <errno.h>
#include <munge.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_proto.h"
#include "net.h"
#include "rpc_io.h"

static const char *host;
static int port;

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

/* Sends one sealed request; returns the reply's status and leaves its body
 * in *reply (the caller frees it). */
static int call(uint16_t op, const struct rpc_writer *body, uint8_t **reply, struct rpc_reader *r)
{
    munge_ctx_t ctx = munge_ctx_create();
    const char *sock = getenv("ADAFS_TEST_MUNGE_SOCKET");
    if (sock)
        munge_ctx_set(ctx, MUNGE_OPT_SOCKET, sock);
    char *cred = NULL;
    /* The head the plugin seals (agent_proto.h): the node and opcode the
     * test agent expects, unless a test asks for others. */
    const char *node = getenv("ADAFS_TEST_SEAL_NODE");
    const char *sealed_op = getenv("ADAFS_TEST_SEAL_OP");
    struct rpc_writer s;
    rpc_writer_init(&s, NULL, 0);
    agent_seal_head_put(&s, sealed_op ? (uint16_t)atoi(sealed_op) : op, node ? node : "t1");
    rpc_put_raw(&s, body->data, body->len);
    munge_err_t e = munge_encode(&cred, ctx, s.data, (int)s.len);
    rpc_writer_free(&s);
    if (e != EMUNGE_SUCCESS) {
        printf("munge: %s\n", munge_ctx_strerror(ctx));
        exit(2);
    }
    munge_ctx_destroy(ctx);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, cred);
    free(cred);
    int fd = connect_agent();
    struct rpc_header h = { .opcode = op, .id = 1 };
    int64_t deadline = net_now_ms() + 60000;
    int rc = rpc_send(fd, &h, w.data, w.len, deadline);
    if (rc == 0)
        rc = rpc_recv(fd, &h, reply, AGENT_MAX_BODY, deadline);
    close(fd);
    rpc_writer_free(&w);
    if (rc < 0) {
        printf("no answer: %s\n", strerror(-rc));
        exit(2);
    }
    rpc_reader_init(r, *reply, h.length);
    if (h.status < 0) {
        const char *msg = rpc_get_str(r);
        printf("status %d: %s\n", h.status, msg ? msg : "(no message)");
    }
    return h.status;
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
    uint8_t *reply = NULL;
    struct rpc_reader r;
    int status = call(op, w, &reply, &r);
    if (status == 0)
        printf("ok\n");
    free(reply);
    rpc_writer_free(w);
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
    const char *cmd = argv[3];
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    uint32_t job = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 0;
    if (strcmp(cmd, "ping") == 0)
        return simple(AGENT_PING, &w);
    if (strcmp(cmd, "start") == 0 && argc == 8) {
        agent_start_put(&w, &(struct agent_start){
            .job_id = job, .uid = (uint32_t)atoi(argv[5]), .gid = (uint32_t)atoi(argv[6]),
            .index = 0, .nservers = 1, .chunk_size = 524288, .quota = 1 << 30,
            .listen_host = "127.0.0.1", .storage = argv[7],
            .secret_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
            .numa_node = -1 });
        return simple(AGENT_START, &w);
    }
    /* configure JOB MOUNT [ACCESS INSTANCE-TEXT-FILE] */
    if (strcmp(cmd, "configure") == 0 && (argc == 6 || argc == 8)) {
        char text[4096] = "test instance\n";
        if (argc == 8) {
            FILE *f = fopen(argv[7], "r");
            size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
            text[n] = '\0';
            if (f)
                fclose(f);
        }
        agent_configure_put(&w, &(struct agent_configure){
            job, text, argv[5], argc == 8 ? (uint32_t)atoi(argv[6]) : AGENT_ACCESS_PRELOAD });
        return simple(AGENT_CONFIGURE, &w);
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
        uint8_t *reply = NULL;
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
        free(reply);
        rpc_writer_free(&w);
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
        struct rpc_header h = { .opcode = AGENT_PING, .id = 1, .length = job };
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
        for (uint32_t i = 0; i < job; i++)
            connect_agent();   /* held open until exit */
        usleep(200000);
        int ms = wait_closed(connect_agent(), 1000);
        if (ms < 0)
            printf("connection %u+1 still open after 1000 ms\n", job);
        else
            printf("connection %u+1 closed after %d ms\n", job, ms);
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
