/* qos_agents: the conversations of adafs-qosd with the node agents, and
 * of a relay (doc/qos.md, "Relays per group of nodes") with the agents of
 * its group's members: one implementation for both.
 *
 * One agent session (agent_session.h) per node, kept open from cycle to
 * cycle. Each period qosd sends every busy node's agent its limits
 * (AGENT_QOS), asking for the answer at the period's end (qos_proto.h: a
 * long poll), and at the start of the next takes the answers: each node's
 * usage of the period. Two messages per node and period, from a few
 * threads at once, so that a slow or dead agent costs only its own
 * deadline. An agent that cannot be reached is tried again after
 * AGENTS_RETRY_MS, not each cycle. */
#ifndef ADAFS_COMMON_QOS_AGENTS_H
#define ADAFS_COMMON_QOS_AGENTS_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent_session.h"
#include "qos_proto.h"
#include "rpc.h"

#define AGENTS_THREADS 16
/* Sessions per worker thread: a round wakes every kept thread (about
 * 9 us each), and through relays qosd waits on a few dozen sessions, a
 * relay on its members' (doc/qos.md). */
#define AGENTS_PER_THREAD 8
#define AGENTS_RETRY_MS 5000

/* Where a node's agent listens. */
struct agent_addr {
    char name[65];
    char host[256];
    int port;
};

struct agent {
    char name[65], host[256];
    int port;
    uint16_t op;                 /* this cycle's request: AGENT_QOS, or AGENT_QOS_GROUP to a relay */
    struct agent_session s;
    bool connected;
    int64_t retry_ms;            /* no new connection before this */
    bool busy;                   /* gets a message this cycle */
    bool active;                 /* its node had jobs lately (qosd: served directly or by a relay) */
    uint64_t busy_cycle;         /* the last cycle it had jobs */
    bool failing;                /* the last exchange failed (logged once) */
    struct rpc_writer msg;       /* this cycle's message (agents_message) */
    unsigned pending;            /* answers owed: messages sent, not answered */
    bool have_report;            /* report holds the last period's */
    /* Reports are decoded into buffers kept from period to period (no
     * allocation per report): the last one taken, and the next one. */
    struct qos_report report, incoming;
    uint32_t report_cap, incoming_cap;
    char err[512];               /* why this cycle failed, "" if it did not */
    int64_t answered_ms;         /* when the report arrived */
    /* A relay's answer (AGENT_QOS_GROUP): the group report as it came,
     * for the caller to check and take (group_plain malloc'd). */
    uint8_t *group_plain;
    const uint8_t *group_body;
    size_t group_len;
    uint32_t group_epoch_sent;   /* qosd: the epoch this session heard the list of (0: none) */
};

struct agents_pool;

struct agents {
    struct agent *a;             /* one per world node, same index */
    size_t n;
    const struct session_auth *auth;
    struct agents_pool *pool;    /* the worker threads, kept from cycle to cycle */
    struct pollfd *ready;        /* run_pool's look at the sessions (kept) */
    size_t ready_cap;
};

/* Matches the table to the n nodes (qosd: the world's; a relay: its
 * group's): sessions of nodes whose name, host and port stay are kept.
 * 1 when a node came, went or moved in the table, 0 when it is the same,
 * -ENOMEM. */
int agents_sync(struct agents *ag, const struct agent_addr *nodes, size_t n);

/* Takes the answers each agent owes (the usage of the period just
 * ended), all by deadline_ms (net_now_ms clock): have_report, report,
 * answered_ms, or err (the session is then closed). */
void agents_receive(struct agents *ag, int64_t deadline_ms);
/* a's msg emptied, with room for the session's head before the body
 * (sealed in place when sent): the writer to put this cycle's body in. */
struct rpc_writer *agents_message(struct agent *a);
/* Sends each busy agent its msg (its op: AGENT_QOS, whose answer is due
 * when the msg says, or AGENT_QOS_GROUP): one more answer pending, or
 * err. */
void agents_send(struct agents *ag, int64_t deadline_ms);

/* The report just decoded into a's incoming buffer becomes its report
 * (answered at answered_ms); the buffers swap, none is allocated. */
void agents_take_incoming(struct agent *a, int64_t answered_ms);

/* Closes a's session. */
void agents_close(struct agent *a);

void agents_free(struct agents *ag);

#endif
