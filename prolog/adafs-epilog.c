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
 * (then slurmd drains it, for an admin to look at). An agent lost while
 * it is asked (connection reset, or refused on the socket a killed one
 * left) is asked again each second for --restart-wait seconds (60): one
 * restarted (systemd, an admin) wipes what its predecessor left before it
 * serves, so a restart does not drain the node. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
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
#define RESTART_WAIT_S 60
#define USAGE "usage: adafs-epilog [--socket PATH] [--timeout SECONDS] [--restart-wait SECONDS] [--prolog]\n" \
    "  --restart-wait: how long an agent lost while it is asked (killed,\n" \
    "    restarting) may take to answer again before the Epilog fails\n" \
    "    (default " STR(RESTART_WAIT_S) " s; 0: fail at once)\n" \
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

/* One RELEASE (or, as the Prolog, PING) of the job to the agent at path.
 * Returns 0 (released), or -errno with the message for slurmd's log in
 * why: -ENOENT no socket (nothing to release), a connection's errno, or
 * -EREMOTEIO when the agent refused. */
static int ask_agent(const char *path, unsigned long job_id, const char *node, long timeout,
                     int prolog, int waited, char *why, size_t whylen)
{
    why[0] = '\0';
    int fd = net_connect_unix(path);
    if (fd == -ENOENT) {
        /* No socket: adafs is not installed on this node (the agent
         * removes it only when it stops and has torn everything down),
         * so nothing of adafs can be running here to wait for. */
        snprintf(why, whylen, "adafs-epilog: job %lu on %s: no agent socket %s: nothing to release%s",
                 job_id, node, path, waited ? " (the agent stopped and tore down)" : "");
        return -ENOENT;
    }
    if (fd < 0) {
        /* A socket nobody listens on (ECONNREFUSED) is what a crashed
         * agent leaves: the job's server may still run here. */
        snprintf(why, whylen, "adafs-epilog: job %lu on %s: cannot reach the agent at %s: %s%s",
                 job_id, node, path, strerror(-fd),
                 fd == -ECONNREFUSED ? " (the agent is not running but left its socket:"
                                       " this job's server may still run here)" : "");
        return fd;
    }
    /* Only root's agent may hear about (and answer for) the job: the
     * kernel says who listens on the socket. */
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
        snprintf(why, whylen, "adafs-epilog: job %lu on %s: %s is not served by root (uid %d):"
                 " not the agent", job_id, node, path, clen == sizeof(cred) ? (int)cred.uid : -1);
        close(fd);
        return -EPERM;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ (uint32_t)job_id, (uint32_t)timeout });
    struct rpc_header h = { .opcode = prolog ? AGENT_PING : AGENT_RELEASE, .id = (uint32_t)job_id };
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
        snprintf(why, whylen, "adafs-epilog: job %lu on %s: agent %s: %s", job_id, node, path,
                 strerror(-rc));
        free(reply);
        return rc;
    }
    if (h.status < 0) {
        struct rpc_reader r;
        rpc_reader_init(&r, reply, h.length);
        const char *msg = rpc_get_str(&r);
        snprintf(why, whylen, "adafs-epilog: job %lu on %s: %s", job_id, node,
                 msg ? msg : strerror(-h.status));
        free(reply);
        return -EREMOTEIO;
    }
    free(reply);
    return 0;
}

int main(int argc, char **argv)
{
    const char *socket_pattern = getenv("ADAFS_AGENT_SOCKET");
    long timeout = STAGEOUT_RELEASE_DEFAULT_S;
    int restart_wait = RESTART_WAIT_S;
    int prolog = 0;
    static const struct option opts[] = {
        { "socket", required_argument, NULL, 's' }, { "timeout", required_argument, NULL, 't' },
        { "restart-wait", required_argument, NULL, 'r' },
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
        case 'r': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 0 || v > 3600) {
                fprintf(stderr, "adafs-epilog: --restart-wait %s: expected seconds in 0..3600\n",
                        optarg);
                return 1;
            }
            restart_wait = (int)v;
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

    /* An agent killed or restarted while this waits (Connection reset, or
     * refused on the socket it left) loses the request, not the job: the
     * agent that starts re-adopts or wipes what its predecessor left before
     * it serves anyone. So the Epilog asks again, up to --restart-wait seconds, rather
     * than fail and have slurmd drain a node that is clean. */
    int64_t give_up = net_now_ms() + (int64_t)restart_wait * 1000;
    int waited = 0;
    for (;;) {
        char why[512];
        int rc = ask_agent(path, job_id, node, timeout, prolog, waited, why, sizeof(why));
        bool lost = rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -EPIPE ||
                    rc == -ECONNABORTED || (waited && rc == -ENOENT);
        if (!lost || prolog || net_now_ms() >= give_up) {
            if (rc < 0 && why[0])
                fprintf(stderr, "%s%s\n", why,
                        lost && !prolog && restart_wait
                            ? " (no agent answered within --restart-wait)" : "");
            if (rc == 0 && waited)
                fprintf(stderr, "adafs-epilog: job %lu on %s: released by the agent that started "
                        "after the one asked first was lost (%d s)\n", job_id, node, waited);
            return rc == 0 || rc == -ENOENT ? 0 : prolog ? 0 : 1;
        }
        if (!waited)
            fprintf(stderr, "%s: waiting up to %d s for the agent to start again\n", why,
                    restart_wait);
        sleep(1);
        waited++;
    }
}
