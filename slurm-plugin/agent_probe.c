/* agent_probe: sends one request to a node agent in an agent session, as
 * the calling user, and prints the agent's answer, for the security tests
 * (an agent must refuse every user but slurmctld's and root).
 *
 *   agent_probe HOST PORT ping|start|release [MUNGE_SOCKET [NODE]]
 *
 * NODE is the node the session is opened with (the agent's --node; default
 * "probe", which no agent is).
 * Prints "status N (F fault): message" (or "status 0: ok") and exits 0 if
 * the agent answered in the session; "unreachable: why" and exits 2 if no
 * authenticated answer came (a refused handshake among them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_link.h"
#include "agent_proto.h"
#include "munge_auth.h"

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: agent_probe HOST PORT ping|start|release [MUNGE_SOCKET [NODE]]\n");
        return 2;
    }
    struct session_auth munge;
    munge_auth_init(&munge, argc > 4 ? argv[4] : NULL);
    char err[512];
    struct agent_link_config cfg = { .auth = &munge };
    struct agent_link *link = agent_link_new(&cfg, err, sizeof(err));
    if (!link) {
        printf("unreachable: %s\n", err);
        return 2;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    uint16_t op;
    if (strcmp(argv[3], "start") == 0) {
        op = AGENT_START;
        struct agent_start m = {
            .job_id = 999999, .uid = getuid(), .gid = getgid(), .index = 0, .nservers = 1,
            .chunk_size = 524288, .quota = 1 << 20, .listen_host = "127.0.0.1",
            .storage = "/tmp",
            .secret_hex = "0000000000000000000000000000000000000000000000000000000000000000",
            .numa_node = -1,
        };
        agent_start_put(&w, &m);
    } else if (strcmp(argv[3], "release") == 0) {
        op = AGENT_RELEASE;
        agent_job_ref_put(&w, &(struct agent_job_ref){ 999999, 1 });
    } else {
        op = AGENT_PING;
    }
    struct agent_reply r;
    int rc = agent_link_call(link, argc > 5 ? argv[5] : "probe", argv[1], atoi(argv[2]), op,
                             w.data, w.len, 10000, &r, err, sizeof(err));
    if (rc < 0) {
        printf("unreachable: %s\n", err);
    } else if (r.status < 0) {
        printf("status %d (%s fault): %s\n", r.status, agent_fault_name(r.fault), r.message);
    } else {
        printf("status 0: ok\n");
    }
    agent_reply_free(&r);
    rpc_writer_free(&w);
    agent_link_free(link);
    return rc < 0 ? 2 : 0;
}
