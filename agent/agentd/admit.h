/* admit: which network connections the agent serves, and what one may cost
 * before its peer has proved who it is.
 *
 * Anyone who can reach the agent's port may connect. Until the peer's
 * hello has been checked (agent_session.h) its connection is unproven: it
 * holds a thread and a descriptor for at most the handshake deadline, and
 * at most ADMIT_UNPROVEN are unproven at once, ADMIT_PER_ADDRESS of them
 * from one address. A connection that would exceed either bound evicts
 * (shuts down) the oldest unproven connection that has not sent its hello
 * yet: of its own address when that address is at its bound, else of the
 * address holding the most. So idle connections can never keep out a
 * client that sends its hello at once, as the plugin does (its credential
 * is made before it connects), whoever holds them and from wherever; on a
 * test cluster where every peer is 127.0.0.1 too. A connection whose hello
 * is being checked is not evicted (that is one munge round trip); when
 * every unproven one is, the newcomer is refused. Proven connections are
 * slurmctld's and root's: at most ADMIT_PROVEN, never evicted.
 *
 * A refusal or an eviction is never a node's fault: the plugin retries. */
#ifndef ADAFS_AGENT_ADMIT_H
#define ADAFS_AGENT_ADMIT_H

#include <stdbool.h>
#include <sys/socket.h>

#define ADMIT_UNPROVEN 64
#define ADMIT_PER_ADDRESS 16
#define ADMIT_PROVEN 64
/* Room for evicted connections whose threads are still ending. */
#define ADMIT_SLOTS (ADMIT_UNPROVEN + ADMIT_PROVEN + 32)

struct admit_outcome {
    int slot;              /* the newcomer's, or -1: refused */
    bool evicted;          /* another connection was shut down for it */
    char victim[64];       /* its peer's address, when evicted */
    int unproven;          /* unproven connections now (with the newcomer) */
    int from_address;      /* of them from the newcomer's address */
};

/* A connection just accepted from addr. Fills out; on refusal the caller
 * closes fd. */
void admit_new(int fd, const struct sockaddr *addr, socklen_t len, struct admit_outcome *out);

/* The slot's hello has arrived whole: it is no longer evicted. False if it
 * was evicted before that (the caller ends it). */
bool admit_hello(int slot);

/* The slot's peer proved who it is. False when ADMIT_PROVEN are already
 * proven (the caller tells the peer and ends it). */
bool admit_proven(int slot);

/* The slot's connection ends: call before closing its descriptor. */
void admit_done(int slot);

/* "ADDRESS:PORT" of a peer, for messages. */
void admit_peer_name(const struct sockaddr *addr, socklen_t len, char *out, size_t outlen);

#endif
