/* agent_client: one request to a node agent, in an agent session.
 *
 * Used by the plugin (as slurmctld's user) to drive the agents on a job's
 * nodes. Each call opens a session (common/agent_session.h: the plugin's
 * munge credential, readable by root only; the agent's reply, root's), so
 * a process squatting on an agent's port learns nothing and can make the
 * plugin believe nothing. A call either gets no authenticated answer (the
 * agent could not be reached, refused the handshake, or something else
 * answered: -errno with a message naming the node and address, which
 * proves nothing about the node) or gets the agent's answer, whose status
 * may itself be an error with the agent's message and whose fault it is. */
#ifndef ADAFS_AGENT_CLIENT_H
#define ADAFS_AGENT_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "agent_link.h"
#include "rpc.h"

struct agent_target {
    const char *node;     /* for messages */
    const char *host;
    int port;
};

/* munge_socket NULL: munge's default socket. */
void agent_client_init(const char *munge_socket);

/* Returns 0 when the agent answered (see reply->status), or -errno when no
 * authenticated answer came, with err filled. A connection refused or cut
 * before the request went out is tried again (3 times in all, 200 and
 * 400 ms apart) within timeout_ms. */
int agent_call(const struct agent_target *t, uint16_t op, const void *body, size_t len,
               int timeout_ms, struct agent_reply *reply, char *err, size_t errlen);

/* One request of a fan-out: the caller fills target, op and body;
 * agent_call_all fills rc (as agent_call's), reply and err. */
struct agent_request {
    struct agent_target target;
    uint16_t op;
    const void *body;
    size_t len;
    int rc;
    struct agent_reply reply;   /* valid when rc == 0: free it */
    char err[512];
};

/* Sends every request and returns when each has been answered or has
 * failed, AGENT_FAN_OUT at a time, so a job's nodes are driven side by side
 * and one slow or dead node costs one timeout, not one per node. */
#define AGENT_FAN_OUT 32
void agent_call_all(struct agent_request *reqs, size_t n, int timeout_ms);

#endif
