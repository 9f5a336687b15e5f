/* qos_relay: the relay role of a node agent in adafs' I/O quality of
 * service (doc/qos.md, "Relays per group of nodes").
 *
 * adafs-qosd sends one agent of a group of nodes, the relay, one
 * AGENT_QOS_GROUP a period (qos_proto.h) instead of an AGENT_QOS to each
 * busy member: so qosd's system calls per period follow its groups, not
 * its nodes. The relay applies its own part (through the caller's
 * functions: the agent's budgets, or a test's stand-in), forwards each
 * other busy member its AGENT_QOS body as it came, over a session of its
 * own to that member's agent kept from period to period (qos_agents.h,
 * the pool qosd uses), takes their reports by its own due time (the
 * members' are due a margin earlier: qosd wrote their bodies so) and
 * answers with one group report naming, for each member asked, its
 * report or why it has none. */
#ifndef ADAFS_QOS_RELAY_H
#define ADAFS_QOS_RELAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "qos_agents.h"
#include "qos_proto.h"
#include "rpc.h"

/* Member sessions unused this long are closed before the next group
 * cycle (the members' agents close idle sessions themselves). */
#define QOS_RELAY_IDLE_MS 10000

/* The relay's own node, as the caller keeps it. */
struct qos_relay_own {
    /* Applies the relay's own AGENT_QOS body. 0, or -errno with err. */
    int (*apply)(void *ctx, const uint8_t *body, size_t len, char *err, size_t errlen);
    /* Puts the relay's own report of cycle (qos_report_put) into w. 0, or
     * -errno with err. */
    int (*report)(void *ctx, uint64_t cycle, struct rpc_writer *w, char *err, size_t errlen);
    void *ctx;
};

/* Why a member failed at sending (kept before agents_receive clears it). */
struct qos_relay_fault {
    bool failed;
    char why[QOS_GROUP_REASON_MAX + 1];
};

struct qos_relay {
    pthread_mutex_t lock;          /* one group cycle at a time */
    struct agents ag;              /* the members' agents (the relay's own slot unused) */
    uint32_t epoch, nmembers;      /* the list held (epoch 0: none) */
    int64_t last_ms;               /* when the last group cycle ended */
    struct qos_group_request req;  /* the request being served (big: kept here) */
    struct qos_relay_fault fault[QOS_GROUP_MAX];
};

/* auth: the relay's identity toward the members' agents (root's munge). */
void qos_relay_init(struct qos_relay *rl, const struct session_auth *auth);

/* Serves one AGENT_QOS_GROUP body (r): applies, forwards, waits until the
 * answer is due (or *cancel: the session to qosd is over) and writes the
 * group report into out. 0, or -errno with err: -EBUSY (a group cycle is
 * in progress), -EBADMSG (malformed), -ESTALE (the message does not
 * repeat a list of an epoch this relay does not hold), -ENOMEM. */
int qos_relay_serve(struct qos_relay *rl, struct rpc_reader *r, struct rpc_writer *out,
                    const struct qos_relay_own *own, const atomic_bool *cancel, char *err,
                    size_t errlen);

/* Waits for a group cycle in progress, closes the member sessions and
 * joins the pool's threads. */
void qos_relay_free(struct qos_relay *rl);

#endif
