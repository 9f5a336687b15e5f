/* auth: who sent a request to the agent.
 *
 * Over TCP the payload is a munge credential sealing the request body; only
 * the Slurm user (slurmctld's plugin) and root may drive the agent. Over the
 * local Unix socket the kernel tells the peer's uid (SO_PEERCRED), and only
 * root (the Epilog, run by slurmd) is accepted. */
#ifndef ADAFS_AGENT_AUTH_H
#define ADAFS_AGENT_AUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* munge_socket NULL: munge's default. */
int auth_init(const char *munge_socket, uid_t trusted_uid);

/* Unseals a munge credential (NUL-terminated) into a malloc'd body. Returns
 * 0, or -EACCES with the reason (bad credential, replay, wrong uid) in err. */
int auth_unseal(const char *cred, void **body, size_t *len, char *err, size_t errlen);

/* Checks the peer of a Unix socket. Returns 0 or -EACCES with err filled. */
int auth_check_peer(int fd, char *err, size_t errlen);

#endif
