/* auth: how an upload proves where it comes from.
 *
 * Two schemes, either or both enabled on the server:
 *   Authorization: Bearer TOKEN  - a shared secret read from a file only
 *                                  root may read (identity: none beyond
 *                                  "knows the token"; use --allow HOSTLIST)
 *   Authorization: Munge CRED    - a munge credential whose payload names
 *                                  the host and the XXH64 digest and length of
 *                                  the body; munged vouches for the sending
 *                                  uid, and replayed credentials are refused */
#ifndef SYSMAP_AUTH_H
#define SYSMAP_AUTH_H

#include <stddef.h>
#include <sys/types.h>

#define AUTH_TOKEN_MIN 16
#define AUTH_TOKEN_MAX 256

/* Reads the first line of path. Refuses a file others may read or write,
 * and tokens shorter than AUTH_TOKEN_MIN. */
int auth_read_token(const char *path, char *token, size_t len, char *err, size_t errlen);

/* Compares in time independent of where the strings differ. */
int auth_token_equal(const char *a, const char *b);

/* socket NULL: munge's default socket. *cred is malloc'd. */
int auth_munge_encode(const char *socket, const char *host, const char *body, size_t len,
                      char **cred, char *err, size_t errlen);

/* What a valid upload credential claims: the host, and the body it was
 * made for (the whole payload, and its length alone). */
struct auth_munge_claim {
    char host[128];
    long long len;
    char payload[256];
};

/* Decodes cred (munged refuses a replayed one) and checks that it comes
 * from want_uid and is an upload credential: 0 with *claim filled, or
 * -EACCES with why in err. Done from the request head, before a body is
 * read, so only a peer munge vouches for makes the server wait for one. */
int auth_munge_open(const char *socket, const char *cred, uid_t want_uid,
                    struct auth_munge_claim *claim, char *err, size_t errlen);
/* Checks the body against the claim's digest and length: 0 or -EACCES. */
int auth_munge_matches(const struct auth_munge_claim *claim, const char *body, size_t len,
                       char *err, size_t errlen);

#endif
