/* relays: adafs-qosd's side of the relays (groups.h) on the agents'
 * table (qos_agents.h): who gets which message this period, the group
 * messages written, the group reports checked and taken into the
 * members' slots. No network: agents_send and agents_receive move the
 * messages; qosd.c and qos/test_agents call these between them. */
#ifndef ADAFS_QOS_RELAYS_H
#define ADAFS_QOS_RELAYS_H

#include <stdint.h>

#include "ctl.h"
#include "groups.h"
#include "qos_agents.h"

/* After agents_receive: each relay's group report, checked against what
 * it was asked (the cycle, exactly the members asked, each member's
 * report through the direct decoder), taken into the members' slots
 * (have_report, report, answered_ms; err for a member without one), or
 * refused: the relay's err says why, its session is closed and the
 * group goes direct (groups_relay_failed). A relay that did not answer
 * fails the same way. Returns how many group reports were refused. */
unsigned relays_take(struct groups *gs, struct agents *ag, int64_t now);

/* This period's plan from each agent's active and have_report: sets every
 * agent's busy (gets a message) and op (AGENT_QOS direct, AGENT_QOS_GROUP
 * to a relay). */
void relays_plan(struct groups *gs, struct agents *ag, int64_t now);

/* Writes each relay's AGENT_QOS_GROUP for cycle n: its group's list when
 * its session has not heard this epoch's, then each active member's
 * limits (ctl_node_message), due margin_ms before the relay's answer. */
void relays_messages(struct groups *gs, struct agents *ag, struct ctl *c, uint64_t n,
                     uint32_t answer_in_ms, uint32_t margin_ms);

/* The margin a relay's members answer before it: max(10 ms, 2% of the
 * period). */
uint32_t relays_margin_ms(uint32_t period_ms);

#endif
