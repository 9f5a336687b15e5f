/* auth: who is on the other end of the agent's local Unix socket.
 *
 * Over TCP, agent_session (common/agent_session.h) proves both sides with
 * munge. Over the local socket the kernel tells the peer's uid
 * (SO_PEERCRED), and only root (the Epilog, run by slurmd) is accepted;
 * the Epilog checks in turn that the socket's listener is root. */
#ifndef ADAFS_AGENT_AUTH_H
#define ADAFS_AGENT_AUTH_H

#include <stddef.h>

/* Checks the peer of a Unix socket. Returns 0 or -EACCES with err filled. */
int auth_check_peer(int fd, char *err, size_t errlen);

#endif
