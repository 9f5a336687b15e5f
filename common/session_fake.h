/* session_fake: a stand-in for munge in agent_session's unit tests and
 * fuzzer, where no munged runs. Not a security mechanism: a credential is
 * plain text, "FAKE:<sealer uid>:<reader uid>:<serial>:<payload in hex>".
 * It keeps munge's promises that the session relies on: open() names the
 * sealer, refuses a credential meant for another uid, and reports one it
 * has opened before (-EALREADY, payload given, as munge's
 * EMUNGE_CRED_REPLAYED: a replay cache shared by every fake identity, as a
 * node's munged is shared by its processes). */
#ifndef ADAFS_SESSION_FAKE_H
#define ADAFS_SESSION_FAKE_H

#include <sys/types.h>

#include "agent_session.h"

/* An identity: the auth functions act as uid `me`. */
struct session_fake {
    uid_t me;
};

void session_fake_init(struct session_auth *a, struct session_fake *id, uid_t me);
/* Forgets every credential opened (a restarted munged). */
void session_fake_forget(void);

#endif
