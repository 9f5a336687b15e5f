/* munge_auth: the session_auth of agent_session.h, backed by munge.
 *
 * A credential is munge's: it names the sealer's uid, munged refuses it
 * once expired (sealed for 120 s), reports it seen before (its replay
 * cache: open gives -EALREADY with the payload, agent_session.h decides),
 * and the uid restriction lets only the intended reader decode it. Every call uses its own munge
 * context: contexts are not thread-safe, and the agent opens credentials
 * in many connection threads at once. */
#ifndef ADAFS_MUNGE_AUTH_H
#define ADAFS_MUNGE_AUTH_H

#include "agent_session.h"

/* socket NULL: munged's default socket. The string must outlive a. */
void munge_auth_init(struct session_auth *a, const char *socket);

#endif
