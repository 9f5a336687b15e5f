/* identity: the munge credential by which a client of a server shared by
 * several users (adafsd --owner) proves its uid over TCP (the IDENTITY
 * step of handshake.h). The client encodes it as its calling user; the
 * server decodes it with munged, which refuses one expired, replayed or
 * made with another key, and checks its payload is this handshake's.
 * Every call uses its own munge context (contexts are not thread-safe). */
#ifndef ADAFS_IDENTITY_H
#define ADAFS_IDENTITY_H

#include <stddef.h>
#include <sys/types.h>

#include "handshake.h"

/* Client: a credential for handshake hs in *cred (malloc'd, free it), made
 * with the munged of socket (NULL or "": the default). 0, or -EACCES with
 * err saying why munge gave none. */
int identity_encode(const struct handshake *hs, const char *socket, char **cred,
                    char *err, size_t errlen);
/* Server: the uid and gid that made cred, if munged takes it and its
 * payload is hs's. 0, or -EACCES with err saying why (munge's reason:
 * expired, replayed, invalid...; or "made for another connection" or
 * "for another purpose"). */
int identity_decode(const struct handshake *hs, const char *socket, const char *cred,
                    uid_t *uid, gid_t *gid, char *err, size_t errlen);

#endif
