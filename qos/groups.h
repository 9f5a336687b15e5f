/* groups: adafs-qosd's relays, without the network (doc/qos.md, "Relays
 * per group of nodes").
 *
 * The world's nodes (sorted by name: names usually follow racks) are cut
 * into runs of AdafsQosRelayGroup. Each period, in each group with at
 * least GROUPS_MIN_BUSY busy members (or all, in a group smaller than
 * that, but at least 2), one member's agent is the relay:
 * qosd sends it one AGENT_QOS_GROUP for the whole group instead of an
 * AGENT_QOS to each busy member. qosd alone picks: the first member in
 * order whose agent answered last period and is not passed over; it stays
 * the relay while it answers. A relay that fails (no answer by qosd's
 * deadline, a closed session, a group report refused) is passed over for
 * GROUPS_PASS_OVER_MS and its group served directly for one period; the
 * period after, the next member that answered becomes relay. A member
 * that misses its relay GROUPS_MISSING_DIRECT periods in a row is served
 * directly for GROUPS_PASS_OVER_MS. Each change of a group's relay or
 * members gives it a new epoch: the relay hears the member list again. */
#ifndef ADAFS_QOS_GROUPS_H
#define ADAFS_QOS_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qos_agents.h"

#define GROUPS_MIN_BUSY 3
#define GROUPS_PASS_OVER_MS (AGENTS_RETRY_MS * 12)
#define GROUPS_MISSING_DIRECT 2

struct group {
    uint32_t first, n;           /* nodes first .. first + n - 1 */
    int relay;                   /* node index, -1: served directly this period */
    uint32_t epoch;
    bool direct_once;            /* its relay failed: direct for one period */
    uint64_t asked_cycle;        /* the cycle its relay was last sent (0: none pending) */
};

struct groups_node {
    int64_t passed_over_until;   /* not a relay before this (net_now_ms clock) */
    int64_t direct_until;        /* served directly before this */
    unsigned missing;            /* periods in a row without a report through its relay */
    int relay;                   /* this period: the relay serving it, -1 directly */
    uint32_t group;
    bool asked;                  /* its limits went out through its relay */
};

struct groups {
    uint32_t size;               /* AdafsQosRelayGroup; 0: no relays */
    size_t nnodes, ngroups;
    struct group *g;
    struct groups_node *node;
    uint32_t next_epoch;
    bool *busy, *answered;       /* groups_plan's inputs, kept (relays.c) */
};

/* Cuts nnodes into groups of size (0: none). Relays are picked afresh,
 * each group with a new epoch. -ENOMEM. */
int groups_sync(struct groups *gs, size_t nnodes, uint32_t size);

/* This period's relays: busy[i] node i gets limits, answered[i] it
 * reported last period (directly or through its relay). Sets each
 * group's relay and each node's. */
void groups_plan(struct groups *gs, const bool *busy, const bool *answered, int64_t now);

/* Group g's relay failed this period. */
void groups_relay_failed(struct groups *gs, uint32_t g, int64_t now);

/* Node i was asked through its relay and reported (or not). */
void groups_member_result(struct groups *gs, uint32_t i, bool reported, int64_t now);

void groups_free(struct groups *gs);

#endif
