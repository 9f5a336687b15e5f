/* agent_link: requests to many node agents at once, over one authenticated
 * session per agent kept open, from one I/O thread.
 *
 * The plugin drives thousands of nodes for many jobs side by side. A
 * request is handed over (agent_link_send) and its completion called back
 * when the agent has answered or the request has failed, so nothing waits
 * on a node but the requests to that node.
 *
 * Per agent (node, host, port) one session (agent_session.h: both sides
 * proved by munge, every message sealed) carries every request to it, up
 * to AGENT_LINK_INFLIGHT at once, answered by id in any order; the rest
 * wait their turn. A session is opened when a request first needs it; one
 * munge credential serves every hello made within FANOUT_MS (a job's
 * nodes greeted at once: one credential for 4,096 sessions; a node's
 * second hello in that time gets a fresh one) and its X25519 secret is
 * wiped after that time; a session idle for idle_ms is closed (before the
 * agent would close it), so credentials go with fan-outs, not requests.
 *
 * The blocking parts (resolving the host, making the munge credential,
 * the X25519 of each handshake) run in a few helper threads; sockets are non-blocking
 * (epoll). A connection refused before anything was asked is tried again
 * (AGENT_LINK_CONNECT_TRIES in all, 200 and 400 ms apart), one accepted and
 * cut then (an agent shedding a flood of unproven peers) until the
 * request's deadline (at most 1 s apart), each with a fresh hello; a request sent on a session that then broke is sent
 * once more on a new one (every request of agent_proto.h may be repeated:
 * a START again answers as the first). Otherwise a request ends with
 * rc < 0 and a message naming the node and address: no authenticated
 * answer, which proves nothing about the node.
 *
 * An answer is believed only from a session whose handshake proved root
 * on the agent's side and whose message opened with the session's key. A
 * refusal of the handshake (answered in plain) or anything that does not
 * open is rc < 0. */
#ifndef ADAFS_AGENT_LINK_H
#define ADAFS_AGENT_LINK_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_session.h"
#include "rpc.h"

#define AGENT_LINK_INFLIGHT 64          /* per session: the agent's bound too */
#define AGENT_LINK_CONNECT_TRIES 3
#define AGENT_LINK_HELPERS 4

/* An agent's answer. */
struct agent_reply {
    int status;                 /* the agent's: 0 or -errno */
    uint8_t *body;              /* malloc'd (the answer's body is inside) */
    size_t len;
    struct rpc_reader reader;   /* over the body, for the caller's decoding */
    const char *message;        /* the agent's error text when status < 0 */
    uint32_t fault;             /* and whose fault (enum agent_fault) */
};
void agent_reply_free(struct agent_reply *reply);

/* One request. */
struct agent_call {
    /* The caller's, unchanged until done is called: */
    const char *node;           /* the agent's --node, also in messages */
    const char *host;
    int port;
    uint16_t op;
    const void *body;
    size_t len;
    int timeout_ms;             /* counted from agent_link_send */
    void (*done)(struct agent_call *call);   /* in the I/O thread: be quick */
    void *arg;
    /* Set before done: */
    int rc;                     /* 0: the agent answered (reply); -errno: it did not (err) */
    struct agent_reply reply;   /* when rc == 0: free with agent_reply_free */
    char err[512];
    /* The link's: */
    struct agent_call *next;
    uint32_t id;
    int64_t deadline;
    bool resent;
};

struct agent_link_config {
    const struct session_auth *auth;   /* munge, or a stand-in in tests */
    int connect_timeout_ms;            /* connect and handshake (10000) */
    int idle_ms;                       /* close a session idle this long (20000) */
};

struct agent_link;

/* Starts the I/O and helper threads. NULL (err filled) on failure. */
struct agent_link *agent_link_new(const struct agent_link_config *cfg, char *err, size_t errlen);
/* Ends every session; requests not done end with -ECANCELED. */
void agent_link_free(struct agent_link *link);

/* Hands a request over; its done is called exactly once, from the I/O
 * thread (never from inside agent_link_send). Thread-safe. */
void agent_link_send(struct agent_link *link, struct agent_call *call);
/* The same for n calls, taking the link's lock and waking it once. */
void agent_link_send_many(struct agent_link *link, struct agent_call **calls, size_t n);

/* A request and the wait for it: 0 (reply filled) or -errno (err filled),
 * as agent_call's rc. For tools and tests. */
int agent_link_call(struct agent_link *link, const char *node, const char *host, int port,
                    uint16_t op, const void *body, size_t len, int timeout_ms,
                    struct agent_reply *reply, char *err, size_t errlen);

/* What the link has done since it started: sessions opened (each agent
 * opened one credential), credentials made (one per fan-out), messages
 * sealed and opened. */
struct agent_link_stats {
    uint64_t sessions, credentials, handshakes_failed, sent, received, resent, timed_out;
    unsigned open_sessions;
};
void agent_link_stats(struct agent_link *link, struct agent_link_stats *out);

#endif
