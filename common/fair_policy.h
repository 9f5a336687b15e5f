/* fair_policy: the names of adafsd's fair-share policies (agent/fsd/
 * fairshare.h draws by them), written once for every component that reads
 * or checks one: adafsd --fair-policy, adafs-agentd --fair-policy, the
 * plugin's create_persistent fair_share=, START (agent_proto.h) and the
 * agent's persistent record.
 *
 *   off             no gate: requests are served as they come
 *   job-fair        every job the same share
 *   user-fair       every user the same share
 *   group-fair      every group the same share
 *   size-fair       every job a share in proportion to its node count
 *   user-then-size  users equal; a user's jobs by their node counts
 *
 * Header only (static inline): the server, the agent, the plugin and the
 * tools each link a different set of objects. */
#ifndef ADAFS_FAIR_POLICY_H
#define ADAFS_FAIR_POLICY_H

#include <string.h>

enum fair_policy {
    FAIR_OFF,
    FAIR_JOB,
    FAIR_USER,
    FAIR_GROUP,
    FAIR_SIZE,
    FAIR_USER_THEN_SIZE,
};

/* Longest name and its NUL: room for any policy's name. */
#define FAIR_POLICY_NAME_MAX 16

/* For messages: what a policy may be. */
#define FAIR_POLICY_NAMES "off, job-fair, user-fair, group-fair, size-fair or user-then-size"

static const char *const fair_policy_names_[] = {
    [FAIR_OFF] = "off",
    [FAIR_JOB] = "job-fair",
    [FAIR_USER] = "user-fair",
    [FAIR_GROUP] = "group-fair",
    [FAIR_SIZE] = "size-fair",
    [FAIR_USER_THEN_SIZE] = "user-then-size",
};

/* "off", "job-fair", ...: the policy, or -1 for a name that is none (NULL too). */
static inline int fair_policy_parse(const char *name)
{
    for (unsigned i = 0; name && i < sizeof(fair_policy_names_) / sizeof(fair_policy_names_[0]); i++)
        if (strcmp(name, fair_policy_names_[i]) == 0)
            return (int)i;
    return -1;
}

static inline const char *fair_policy_name(enum fair_policy p)
{
    return (unsigned)p < sizeof(fair_policy_names_) / sizeof(fair_policy_names_[0])
               ? fair_policy_names_[p] : "unknown";
}

#endif
