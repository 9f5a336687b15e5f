/* qos_relay (agent side): this agent as the relay of its group of nodes
 * for adafs-qosd (common/qos_relay.h does the work; here the rule of who
 * may ask, and the relay's own node through qos.c's budgets). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "log.h"
#include "qos.h"
#include "qos_relay.h"

static struct qos_relay relay;
static bool relay_ready;

void qos_agent_relay_init(const struct session_auth *auth)
{
    qos_relay_init(&relay, auth);
    relay_ready = true;
}

static int own_apply(void *ctx, const uint8_t *body, size_t len, char *err, size_t errlen)
{
    (void)ctx;
    uint64_t cycle;
    uint32_t answer_in;
    return qos_agent_apply(body, len, &cycle, &answer_in, err, errlen);
}

static int own_report(void *ctx, uint64_t cycle, struct rpc_writer *w, char *err, size_t errlen)
{
    (void)ctx;
    return qos_agent_put_report(cycle, w, err, errlen);
}

int qos_agent_group(struct rpc_reader *r, struct rpc_writer *out, uid_t peer, uid_t slurm_uid,
                    const atomic_bool *cancel, char *err, size_t errlen)
{
    /* Only qosd makes a relay: not another node's root, whom the members'
     * agents would take as their qosd's word. */
    if (peer != slurm_uid) {
        snprintf(err, errlen, "a qos group request from uid %u: only SlurmUser's (uid %u) adafs-qosd"
                 " makes this agent a relay", (unsigned)peer, (unsigned)slurm_uid);
        return -EPERM;
    }
    if (!relay_ready) {
        snprintf(err, errlen, "this agent cannot relay: no identity toward other agents");
        return -EOPNOTSUPP;
    }
    /* QoS must be on here (the own part's budgets), as for AGENT_QOS. */
    if (!qos_agent_enabled()) {
        snprintf(err, errlen, "I/O quality of service is not enabled on this agent (--qos-socket)");
        return -EOPNOTSUPP;
    }
    const struct qos_relay_own own = { .apply = own_apply, .report = own_report };
    int rc = qos_relay_serve(&relay, r, out, &own, cancel, err, errlen);
    if (rc < 0)
        log_debug("qos group request: %s", err);
    return rc;
}
