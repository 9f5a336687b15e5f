/* adafs-epilog: the Slurm Epilog (and Prolog) piece of adafs.
 *
 *   adafs-epilog [--socket PATH] [--timeout SECONDS] [--prolog]
 *
 * As the Epilog, slurmd runs it as root on each node when a job ends. It
 * asks the node's agent to RELEASE the job and returns only when the job's
 * server on this node is stopped and its data wiped: stage-out may still be
 * reading from this node, and Slurm gives the node to the next job as soon
 * as the Epilog returns. If the plugin never asks for teardown (slurmctld
 * down, a hung plugin), the agent tears down by itself after --timeout
 * seconds: by default StageOutTimeout plus AdafsStageOutKeep at their
 * defaults, and a little (common/stageout_bounds.h), so that a default
 * installation never tears down a stage-out, or a failed one kept for the
 * user to fix, before the plugin does; that is the bound a node is held.
 *
 * As the Prolog (--prolog) it only checks that the agent answers and says
 * so in slurmd's log: jobs without burst buffers must not fail for it.
 *
 * The agent's socket: --socket, else $ADAFS_AGENT_SOCKET, else
 * /run/adafs/agent.%n.sock, where %n is this node's name ($SLURMD_NODENAME).
 * The process listening there must be root's (SO_PEERCRED), as the agent
 * accepts only root on it.
 * Exit status: 0 released (or no agent socket: adafs is not on this node);
 * 1 the node may hold leftovers, also when the agent cannot be reached
 * (then slurmd drains it, for an admin to look at). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_proto.h"
#include "net.h"
#include "rpc_io.h"
#include "stageout_bounds.h"

#define DEFAULT_SOCKET "/run/adafs/agent.%n.sock"
#define STR_(x) #x
#define STR(x) STR_(x)
#define USAGE "usage: adafs-epilog [--socket PATH] [--timeout SECONDS] [--prolog]\n" \
    "  --timeout: the agent tears the job down by itself this long after it\n" \
    "    ended, if the plugin has not (default StageOutTimeout + AdafsStageOutKeep\n" \
    "    at their defaults + " STR(STAGEOUT_RELEASE_SLACK_S) " s: %d s)\n"

static void expand_node(const char *pattern, const char *node, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'n') {
            o += (size_t)snprintf(out + o, len - o, "%s", node);
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

int main(int argc, char **argv)
{
    const char *socket_pattern = getenv("ADAFS_AGENT_SOCKET");
    long timeout = STAGEOUT_RELEASE_DEFAULT_S;
    int prolog = 0;
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' }, { "timeout", required_argument, NULL, 't' },
        { "prolog", no_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': socket_pattern = optarg; break;
        case 't': {
            char *end;
            timeout = strtol(optarg, &end, 10);
            if (*end || end == optarg || timeout <= 0 || timeout > INT_MAX) {
                fprintf(stderr, "adafs-epilog: --timeout %s: expected seconds in 1..%d\n",
                        optarg, INT_MAX);
                return 1;
            }
            break;
        }
        case 'p': prolog = 1; break;
        case 'h': printf(USAGE, STAGEOUT_RELEASE_DEFAULT_S); return 0;
        default: fprintf(stderr, USAGE, STAGEOUT_RELEASE_DEFAULT_S); return 1;
        }
    }
    const char *job = getenv("SLURM_JOB_ID");
    const char *node = getenv("SLURMD_NODENAME");
    char *end = NULL;
    /* Digits only: strtoul takes blanks and a sign ("-4294967295" is 1). */
    unsigned long job_id = job && *job >= '0' && *job <= '9' ? strtoul(job, &end, 10) : 0;
    if (!job || !end || *end || job_id == 0 || job_id > UINT32_MAX) {
        fprintf(stderr, "adafs-epilog: SLURM_JOB_ID is %s%s%s: run me as slurmd's Epilog\n",
                job ? "'" : "not set", job ? job : "", job ? "'" : "");
        return prolog ? 0 : 1;
    }
    if (!node)
        node = "localhost";
    char path[256];
    expand_node(socket_pattern ? socket_pattern : DEFAULT_SOCKET, node, path, sizeof(path));

    int fd = net_connect_unix(path);
    if (fd == -ENOENT) {
        /* No socket: adafs is not installed on this node (the agent
         * removes it only when it stops and has torn everything down),
         * so nothing of adafs can be running here to wait for. */
        fprintf(stderr, "adafs-epilog: job %lu on %s: no agent socket %s: nothing to release\n",
                job_id, node, path);
        return 0;
    }
    if (fd < 0) {
        /* A socket nobody listens on (ECONNREFUSED) is what a crashed
         * agent leaves: the job's server may still run here. */
        fprintf(stderr, "adafs-epilog: job %lu on %s: cannot reach the agent at %s: %s%s\n",
                job_id, node, path, strerror(-fd),
                fd == -ECONNREFUSED ? " (the agent is not running but left its socket:"
                                      " this job's server may still run here)" : "");
        return prolog ? 0 : 1;
    }
    /* Only root's agent may hear about (and answer for) the job: the
     * kernel says who listens on the socket. */
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
        fprintf(stderr, "adafs-epilog: job %lu on %s: %s is not served by root (uid %d):"
                " not the agent\n", job_id, node, path, clen == sizeof(cred) ? (int)cred.uid : -1);
        close(fd);
        return prolog ? 0 : 1;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ (uint32_t)job_id, (uint32_t)timeout });
    struct rpc_header h = { .opcode = prolog ? AGENT_PING : AGENT_RELEASE, .id = job_id };
    int64_t deadline = net_now_ms() + (timeout + 120) * 1000;
    uint8_t *reply = NULL;
    int rc = rpc_writer_ok(&w) ? 0 : -ENOMEM;
    if (rc == 0)
        rc = rpc_send(fd, &h, prolog ? NULL : w.data, prolog ? 0 : w.len, deadline);
    if (rc == 0)
        rc = rpc_recv(fd, &h, &reply, AGENT_MAX_BODY, deadline);
    close(fd);
    rpc_writer_free(&w);
    if (rc < 0) {
        fprintf(stderr, "adafs-epilog: job %lu on %s: agent %s: %s\n", job_id, node, path,
                strerror(-rc));
        free(reply);
        return prolog ? 0 : 1;
    }
    if (h.status < 0) {
        struct rpc_reader r;
        rpc_reader_init(&r, reply, h.length);
        const char *msg = rpc_get_str(&r);
        fprintf(stderr, "adafs-epilog: job %lu on %s: %s\n", job_id, node,
                msg ? msg : strerror(-h.status));
        free(reply);
        return prolog ? 0 : 1;
    }
    free(reply);
    return 0;
}
