/* qos_relay: see qos_relay.h. */
#include "qos_relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_proto.h"
#include "log.h"
#include "net.h"

/* How often the wait for the answer's time looks at *cancel. */
#define WAIT_SLICE_MS 50

void qos_relay_init(struct qos_relay *rl, const struct session_auth *auth)
{
    memset(rl, 0, sizeof(*rl));
    pthread_mutex_init(&rl->lock, NULL);
    rl->ag.auth = auth;
}

void qos_relay_free(struct qos_relay *rl)
{
    /* After a group cycle in progress (it ends by its due time). */
    pthread_mutex_lock(&rl->lock);
    agents_free(&rl->ag);
    pthread_mutex_unlock(&rl->lock);
    pthread_mutex_destroy(&rl->lock);
}

/* Takes the list of members the message carries: sessions of members
 * that stay are kept (agents_sync). */
static int take_members(struct qos_relay *rl, const struct qos_group_request *g)
{
    struct agent_addr *addrs = calloc(g->nmembers, sizeof(*addrs));
    if (!addrs)
        return -ENOMEM;
    for (uint32_t i = 0; i < g->nmembers; i++) {
        snprintf(addrs[i].name, sizeof(addrs[i].name), "%s", g->members[i].node);
        snprintf(addrs[i].host, sizeof(addrs[i].host), "%s", g->members[i].host);
        addrs[i].port = (int)g->members[i].port;
    }
    int rc = agents_sync(&rl->ag, addrs, g->nmembers);
    free(addrs);
    if (rc >= 0 && g->epoch != rl->epoch)
        log_info("relay for a group of %u nodes (%s-%s, epoch %u)", g->nmembers,
                 g->members[0].node, g->members[g->nmembers - 1].node, g->epoch);
    if (rc < 0)
        return rc;
    rl->epoch = g->epoch;
    rl->nmembers = g->nmembers;
    return 0;
}

static void wait_until(int64_t due, const atomic_bool *cancel)
{
    for (int64_t t = net_now_ms(); t < due && !(cancel && atomic_load(cancel)); t = net_now_ms()) {
        int64_t left = due - t < WAIT_SLICE_MS ? due - t : WAIT_SLICE_MS;
        nanosleep(&(struct timespec){ .tv_nsec = (long)left * 1000000 }, NULL);
    }
}

static int serve_locked(struct qos_relay *rl, struct rpc_reader *r, struct rpc_writer *out,
                        const struct qos_relay_own *own, const atomic_bool *cancel, char *err,
                        size_t errlen)
{
    int64_t start = net_now_ms();
    struct qos_group_request *g = &rl->req;
    if (qos_group_request_get(r, g, rl->nmembers) < 0) {
        snprintf(err, errlen, "malformed qos group request");
        return -EBADMSG;
    }
    if (g->nmembers == 0 && g->epoch != rl->epoch) {
        snprintf(err, errlen, "group epoch %u: its members were not sent here (holding epoch %u)",
                 g->epoch, rl->epoch);
        return -ESTALE;
    }
    if (start - rl->last_ms > QOS_RELAY_IDLE_MS)
        for (size_t i = 0; i < rl->ag.n; i++)
            agents_close(&rl->ag.a[i]);   /* their agents will have closed them */
    if (g->nmembers) {
        int rc = take_members(rl, g);
        if (rc < 0) {
            snprintf(err, errlen, "out of memory taking %u members", g->nmembers);
            return rc;
        }
    }
    int64_t due = start + g->answer_in_ms;
    int own_rc = 1;   /* 1: the relay's own node was not asked */
    char own_err[QOS_GROUP_REASON_MAX + 1] = "";
    for (size_t i = 0; i < rl->ag.n; i++)
        rl->ag.a[i].busy = false;
    for (uint32_t k = 0; k < g->nparts; k++) {
        const struct qos_group_part *p = &g->parts[k];
        if (p->index == g->self) {
            own_rc = own->apply(own->ctx, p->body, p->len, own_err, sizeof(own_err));
            continue;
        }
        struct agent *a = &rl->ag.a[p->index];
        a->op = AGENT_QOS;
        a->busy = true;
        rpc_put_raw(agents_message(a), p->body, p->len);
    }
    for (size_t i = 0; i < rl->ag.n; i++) {
        struct agent *a = &rl->ag.a[i];
        if (!a->busy && a->connected && !a->pending)
            agents_close(a);   /* idle this period: its agent would close it */
    }
    agents_send(&rl->ag, due);
    struct qos_relay_fault *fault = rl->fault;
    for (size_t i = 0; i < rl->ag.n; i++) {
        struct agent *a = &rl->ag.a[i];
        fault[i].failed = a->busy && a->err[0];
        if (fault[i].failed) {
            /* Cut to what a group report carries. */
            size_t len = strnlen(a->err, sizeof(fault[i].why) - 1);
            memcpy(fault[i].why, a->err, len);
            fault[i].why[len] = '\0';
        }
    }
    /* The members answer a margin before due; each missing one costs
     * this deadline once, in parallel. */
    agents_receive(&rl->ag, due);
    wait_until(due, cancel);

    struct qos_group_writer gw;
    qos_group_report_start(&gw, out, g->cycle);
    for (uint32_t k = 0; k < g->nparts; k++) {
        uint32_t i = g->parts[k].index;
        if (i == g->self) {
            size_t mark = out->len;
            if (own_rc == 0) {
                qos_group_entry_start(&gw, i, QOS_MEMBER_REPORTED, "");
                size_t body_at = out->len;
                own_rc = own->report(own->ctx, g->cycle, out, own_err, sizeof(own_err));
                if (own_rc == 0 && out->len > body_at) {
                    qos_group_entry_end(&gw);
                    continue;
                }
                out->len = mark;   /* the entry taken back */
                gw.nparts--;
            }
            qos_group_entry_start(&gw, i, QOS_MEMBER_REFUSED, own_err[0] ? own_err : "no report");
            qos_group_entry_end(&gw);
            continue;
        }
        struct agent *a = &rl->ag.a[i];
        if (fault[i].failed) {
            qos_group_entry_start(&gw, i, QOS_MEMBER_UNREACHABLE, fault[i].why);
        } else if (a->have_report) {
            qos_group_entry_start(&gw, i, QOS_MEMBER_REPORTED, "");
            qos_report_put(out, &a->report);
        } else {
            bool refused = strncmp(a->err, "refused", 7) == 0;
            qos_group_entry_start(&gw, i, refused ? QOS_MEMBER_REFUSED : QOS_MEMBER_NO_ANSWER,
                                  a->err[0] ? a->err : "no report");
        }
        qos_group_entry_end(&gw);
    }
    qos_group_report_end(&gw);
    rl->last_ms = net_now_ms();
    if (!rpc_writer_ok(out)) {
        snprintf(err, errlen, "out of memory writing the group report");
        return -ENOMEM;
    }
    return 0;
}

int qos_relay_serve(struct qos_relay *rl, struct rpc_reader *r, struct rpc_writer *out,
                    const struct qos_relay_own *own, const atomic_bool *cancel, char *err,
                    size_t errlen)
{
    if (pthread_mutex_trylock(&rl->lock) != 0) {
        snprintf(err, errlen, "a group cycle is in progress here");
        return -EBUSY;
    }
    int rc = serve_locked(rl, r, out, own, cancel, err, errlen);
    pthread_mutex_unlock(&rl->lock);
    return rc;
}
