/* groups: see groups.h. */
#include "groups.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int groups_sync(struct groups *gs, size_t nnodes, uint32_t size)
{
    size_t ngroups = size ? (nnodes + size - 1) / size : 0;
    struct group *g = calloc(ngroups ? ngroups : 1, sizeof(*g));
    struct groups_node *node = calloc(nnodes ? nnodes : 1, sizeof(*node));
    bool *scratch = calloc(2 * (nnodes ? nnodes : 1), sizeof(*scratch));
    if (!g || !node || !scratch) {
        free(g);
        free(node);
        free(scratch);
        return -ENOMEM;
    }
    for (size_t k = 0; k < ngroups; k++) {
        g[k].first = (uint32_t)(k * size);
        g[k].n = (uint32_t)(nnodes - k * size < size ? nnodes - k * size : size);
        g[k].relay = -1;
        g[k].epoch = ++gs->next_epoch;
    }
    for (size_t i = 0; i < nnodes; i++) {
        node[i].relay = -1;
        node[i].group = size ? (uint32_t)(i / size) : 0;
        /* A node that stays keeps its record of failures (same index:
         * only when the table did not change; otherwise start afresh). */
        if (nnodes == gs->nnodes && gs->node) {
            node[i].passed_over_until = gs->node[i].passed_over_until;
            node[i].direct_until = gs->node[i].direct_until;
        }
    }
    groups_free(gs);
    gs->g = g;
    gs->node = node;
    gs->busy = scratch;
    gs->answered = scratch + (nnodes ? nnodes : 1);
    gs->ngroups = ngroups;
    gs->nnodes = nnodes;
    gs->size = size;
    return 0;
}

static bool can_relay(const struct groups *gs, uint32_t i, const bool *answered, int64_t now)
{
    return answered[i] && gs->node[i].passed_over_until <= now;
}

void groups_plan(struct groups *gs, const bool *busy, const bool *answered, int64_t now)
{
    for (size_t i = 0; i < gs->nnodes; i++)
        gs->node[i].relay = -1;
    for (size_t k = 0; k < gs->ngroups; k++) {
        struct group *g = &gs->g[k];
        uint32_t nbusy = 0;
        for (uint32_t i = g->first; i < g->first + g->n; i++)
            nbusy += busy[i] && gs->node[i].direct_until <= now;
        int relay = g->relay;
        /* At least 3 (2 in groups of 2, as the mini-cluster's tests run). */
        uint32_t min_busy = g->n < GROUPS_MIN_BUSY ? g->n : GROUPS_MIN_BUSY;
        if (nbusy < min_busy || nbusy < 2 || g->direct_once) {
            relay = -1;   /* a relay saves nothing here, or its relay just failed */
            g->direct_once = false;
        } else if (relay < 0 || gs->node[relay].passed_over_until > now) {
            relay = -1;
            for (uint32_t i = g->first; i < g->first + g->n && relay < 0; i++)
                if (can_relay(gs, i, answered, now))
                    relay = (int)i;
        }
        if (relay != g->relay) {
            g->relay = relay;
            g->epoch = ++gs->next_epoch;
        }
        if (relay < 0)
            continue;
        for (uint32_t i = g->first; i < g->first + g->n; i++)
            if ((busy[i] && gs->node[i].direct_until <= now) || (int)i == relay)
                gs->node[i].relay = relay;
    }
}

void groups_relay_failed(struct groups *gs, uint32_t k, int64_t now)
{
    struct group *g = &gs->g[k];
    if (g->relay >= 0)
        gs->node[g->relay].passed_over_until = now + GROUPS_PASS_OVER_MS;
    g->direct_once = true;
}

void groups_member_result(struct groups *gs, uint32_t i, bool reported, int64_t now)
{
    struct groups_node *n = &gs->node[i];
    if (reported) {
        n->missing = 0;
    } else if (++n->missing >= GROUPS_MISSING_DIRECT) {
        n->missing = 0;
        n->direct_until = now + GROUPS_PASS_OVER_MS;
    }
}

void groups_free(struct groups *gs)
{
    free(gs->g);
    free(gs->node);
    free(gs->busy);
    gs->g = NULL;
    gs->node = NULL;
    gs->busy = gs->answered = NULL;
    gs->ngroups = gs->nnodes = 0;
}
