/* dispatch: the node agent's requests. One handler per request, a table
 * of which may come over the network (the plugin's and adafs-qosd's
 * sessions) and which over the local socket (the Epilog), and one door
 * every request passes (dispatch_run), where any refusal becomes an
 * agent_error reply naming the node and whose fault it is. */
#ifndef ADAFS_AGENTD_DISPATCH_H
#define ADAFS_AGENTD_DISPATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_proto.h"
#include "rpc.h"

struct conn {
    int fd;
    bool local;    /* Unix socket: the Epilog */
    int slot;      /* admit.h's, network only */
    char peer[64];
};

struct reply {
    struct rpc_writer body;
    struct agent_error err;
    const atomic_bool *cancel;   /* the session is over: a waiting request may stop */
    uid_t peer_uid;              /* who the session's client proved to be */
};

/* The node's name (for every refusal) and SlurmUser's uid (a relay's
 * qosd), before the first request. */
void dispatch_init(const char *node, uid_t trusted_uid);

/* Runs one request; leaves the reply's body (an agent_error when the
 * status is < 0) in out and returns the status. */
int dispatch_run(const struct conn *c, uint16_t op, const void *body, size_t len,
                 struct reply *out);

#endif
