/* agents: adafs-qosd's conversations with the node agents.
 *
 * One agent session (agent_session.h) per node, kept open from cycle to
 * cycle; each cycle every busy node's report is asked for, then (once
 * qosd has computed) its message goes out, from a few threads at once so that a slow or dead agent
 * costs only its own deadline. An agent that cannot be reached is tried
 * again after AGENTS_RETRY_MS, not each cycle. */
#ifndef ADAFS_QOS_AGENTS_H
#define ADAFS_QOS_AGENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "agent_session.h"
#include "qos_proto.h"
#include "rpc.h"
#include "world.h"

#define AGENTS_THREADS 16
#define AGENTS_RETRY_MS 5000

struct agent {
    char name[65], host[256];
    int port;
    struct agent_session s;
    bool connected;
    int64_t retry_ms;            /* no new connection before this */
    bool busy;                   /* gets a message this cycle */
    uint64_t busy_cycle;         /* the last cycle it had jobs */
    bool failing;                /* the last exchange failed (logged once) */
    struct rpc_writer msg;       /* this cycle's message */
    bool have_report;            /* report holds this cycle's */
    bool sent;                   /* this cycle's msg was delivered */
    bool report_late;            /* the report came with msg (an agent without AGENT_QOS_REPORT) */
    struct qos_report report;
    char err[512];               /* why this cycle failed, "" if it did not */
    int64_t answered_ms;         /* when this cycle's report arrived */
};

struct agents {
    struct agent *a;             /* one per world node, same index */
    size_t n;
    const struct session_auth *auth;
};

/* Matches the table to the world's nodes: sessions of nodes whose name,
 * host and port stay are kept. -ENOMEM. */
int agents_sync(struct agents *ag, const struct world *w);

/* Asks each busy agent for its report (AGENT_QOS_REPORT), all done by
 * deadline_ms (net_now_ms clock): have_report, report, answered_ms, or
 * err. */
void agents_collect(struct agents *ag, uint64_t cycle, int64_t deadline_ms);
/* Sends each busy agent its msg (AGENT_QOS): sent, or err. The answer's
 * report is taken only where agents_collect got none (an agent that does
 * not know AGENT_QOS_REPORT yet). */
void agents_exchange(struct agents *ag, int64_t deadline_ms);

void agents_free(struct agents *ag);

#endif
