/* relays: see relays.h. */
#include "relays.h"

#include <stdio.h>
#include <string.h>

#include "agent_proto.h"
#include "log.h"
#include "qos_proto.h"

uint32_t relays_margin_ms(uint32_t period_ms)
{
    return period_ms / 50 > 10 ? period_ms / 50 : 10;
}

static const char *status_name(uint32_t s)
{
    return s == QOS_MEMBER_NO_ANSWER ? "no answer to its relay"
         : s == QOS_MEMBER_UNREACHABLE ? "its relay cannot reach it"
         : s == QOS_MEMBER_REFUSED ? "it refused its limits from its relay"
         : "reported";
}

/* Checks relay r's group report against what group k was asked; each
 * reported member's report decoded into its incoming buffer. 0, or -1
 * with why. */
static int check(struct groups *gs, struct agents *ag, const struct group *g,
                 struct qos_group_report *rep, char *why, size_t len)
{
    struct agent *relay = &ag->a[g->relay];
    struct rpc_reader r;
    rpc_reader_init(&r, relay->group_body, relay->group_len);
    if (qos_group_report_get(&r, rep, g->n) < 0) {
        snprintf(why, len, "a malformed group report");
        return -1;
    }
    if (rep->cycle != g->asked_cycle) {
        snprintf(why, len, "a group report of cycle %llu, cycle %llu asked",
                 (unsigned long long)rep->cycle, (unsigned long long)g->asked_cycle);
        return -1;
    }
    uint32_t asked = 0;
    for (uint32_t i = g->first; i < g->first + g->n; i++)
        asked += gs->node[i].asked;
    if (rep->n != asked) {
        snprintf(why, len, "a group report of %u members, %u asked", rep->n, asked);
        return -1;
    }
    for (uint32_t k = 0; k < rep->n; k++) {
        uint32_t i = g->first + rep->e[k].index;
        if (!gs->node[i].asked) {
            snprintf(why, len, "a group report naming node %s, not asked", ag->a[i].name);
            return -1;
        }
        if (rep->e[k].status != QOS_MEMBER_REPORTED)
            continue;
        struct agent *m = &ag->a[i];
        struct rpc_reader mr;
        rpc_reader_init(&mr, rep->e[k].report, rep->e[k].len);
        if (qos_report_get_into(&mr, &m->incoming, &m->incoming_cap) < 0) {
            snprintf(why, len, "a malformed report of node %s", m->name);
            return -1;
        }
    }
    return 0;
}

unsigned relays_take(struct groups *gs, struct agents *ag, int64_t now)
{
    /* Big (256 entries): one, since qosd takes reports in one thread. */
    static struct qos_group_report rep;
    unsigned refused = 0;
    for (size_t k = 0; k < gs->ngroups; k++) {
        struct group *g = &gs->g[k];
        if (g->relay < 0 || !g->asked_cycle || (size_t)g->relay >= ag->n)
            continue;
        struct agent *relay = &ag->a[g->relay];
        char why[256] = "";
        int rc = -1;
        if (relay->group_body)
            rc = check(gs, ag, g, &rep, why, sizeof(why));
        else if (!relay->err[0])
            snprintf(relay->err, sizeof(relay->err), "no group report");
        if (rc < 0) {
            if (why[0]) {
                snprintf(relay->err, sizeof(relay->err), "relay of its group: refused %s", why);
                refused++;
            }
            agents_close(relay);
            groups_relay_failed(gs, (uint32_t)k, now);
        } else {
            for (uint32_t e = 0; e < rep.n; e++) {
                uint32_t i = g->first + rep.e[e].index;
                struct agent *m = &ag->a[i];
                bool reported = rep.e[e].status == QOS_MEMBER_REPORTED;
                if (reported) {
                    agents_take_incoming(m, relay->answered_ms);
                    m->err[0] = '\0';
                } else {
                    snprintf(m->err, sizeof(m->err), "%s (relay %s): %s",
                             status_name(rep.e[e].status), relay->name, rep.e[e].reason);
                }
                groups_member_result(gs, i, reported, now);
            }
        }
        g->asked_cycle = 0;
        for (uint32_t i = g->first; i < g->first + g->n; i++)
            gs->node[i].asked = false;
    }
    return refused;
}

void relays_plan(struct groups *gs, struct agents *ag, int64_t now)
{
    bool planned = gs->nnodes == ag->n && gs->ngroups > 0;
    if (planned) {
        for (size_t i = 0; i < ag->n; i++) {
            gs->busy[i] = ag->a[i].active;
            gs->answered[i] = ag->a[i].have_report;
        }
        /* The relays before, to say what changed (a line per change). */
        int before[64];
        size_t nb = gs->ngroups < 64 ? gs->ngroups : 64;
        for (size_t k = 0; k < nb; k++)
            before[k] = gs->g[k].relay;
        groups_plan(gs, gs->busy, gs->answered, now);
        for (size_t k = 0; k < nb; k++) {
            const struct group *g = &gs->g[k];
            if (g->relay == before[k])
                continue;
            const char *first = ag->a[g->first].name, *last = ag->a[g->first + g->n - 1].name;
            if (g->relay >= 0)
                log_info("group %s-%s: the agent of %s relays for it", first, last,
                         ag->a[g->relay].name);
            else
                log_info("group %s-%s: served directly", first, last);
        }
    }
    for (size_t i = 0; i < ag->n; i++) {
        struct agent *a = &ag->a[i];
        a->op = AGENT_QOS;
        a->busy = a->active && (!planned || gs->node[i].relay < 0);
    }
    for (size_t k = 0; planned && k < gs->ngroups; k++)
        if (gs->g[k].relay >= 0) {
            ag->a[gs->g[k].relay].busy = true;
            ag->a[gs->g[k].relay].op = AGENT_QOS_GROUP;
        }
}

void relays_messages(struct groups *gs, struct agents *ag, struct ctl *c, uint64_t n,
                     uint32_t answer_in_ms, uint32_t margin_ms)
{
    if (gs->nnodes != ag->n)
        return;
    uint32_t member_answer = answer_in_ms > margin_ms ? answer_in_ms - margin_ms : 0;
    static struct qos_group_member members[QOS_GROUP_MAX];
    for (size_t k = 0; k < gs->ngroups; k++) {
        struct group *g = &gs->g[k];
        if (g->relay < 0)
            continue;
        struct agent *relay = &ag->a[g->relay];
        bool list = !relay->connected || relay->group_epoch_sent != g->epoch;
        for (uint32_t i = 0; list && i < g->n; i++) {
            const struct agent *m = &ag->a[g->first + i];
            members[i] = (struct qos_group_member){ .node = m->name, .host = m->host,
                                                    .port = (uint32_t)m->port };
        }
        struct rpc_writer *w = agents_message(relay);
        struct qos_group_writer gw;
        qos_group_request_start(&gw, w, n, answer_in_ms, g->epoch, (uint32_t)g->relay - g->first,
                                list ? members : NULL, g->n);
        for (uint32_t i = g->first; i < g->first + g->n; i++) {
            if (gs->node[i].relay != g->relay || !ag->a[i].active)
                continue;
            qos_group_part_start(&gw, i - g->first);
            ctl_node_message(c, i, n, (int)i == g->relay ? answer_in_ms : member_answer, w);
            qos_group_part_end(&gw);
            gs->node[i].asked = true;
        }
        qos_group_request_end(&gw);
        relay->group_epoch_sent = g->epoch;
        g->asked_cycle = n;
    }
}
