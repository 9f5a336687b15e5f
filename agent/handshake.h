/* handshake: the first bytes of every connection to an adafsd, in which
 * client and server prove to each other that they hold the instance's
 * secret without sending it.
 *
 *   server -> client  HELLO   u32 magic "ADFH", u16 version (1), u16 flags,
 *                             32 bytes server nonce Ns             (40 bytes)
 *   client -> server  PROOF   32 bytes client nonce Nc,
 *                             MACc = HMAC-SHA256(secret, "adafs handshake v1 client"
 *                                                || u32 bind || Ns || Nc)  (64 bytes)
 *   client -> server  IDENTITY, only when HELLO's flags ask for it
 *                             (HANDSHAKE_WANT_IDENTITY): u32 len (1 to
 *                             HANDSHAKE_CRED_MAX), len bytes of a munge
 *                             credential (munge's text, no NUL) encoded by
 *                             the client as its calling user, whose payload
 *                             is "adafs identity v1" || u32 bind || Ns || Nc
 *   server -> client  ANSWER  i32 status (0, or -errno: -EACCES for a wrong
 *                             proof, -EUSERS when full), then
 *                             MACs = HMAC-SHA256(secret, "adafs handshake v1 server"
 *                                                || u32 bind || Ns || Nc)
 *                             when status is 0, zeros otherwise     (36 bytes)
 *
 * Integers little-endian; labels without their NUL. bind is the server's
 * index in the instance: a proof made for server 2 is worth nothing at
 * server 3. Each side picks a fresh nonce per connection and each MAC
 * covers both, so neither a recorded proof nor one obtained from a
 * listener by answering a client can be replayed to anyone; the labels
 * differ, so a client's proof reflected back does not pass for the
 * server's. MACs are compared in constant time. The client sends no request
 * before MACs checks out. After the handshake the connection carries
 * rpc.h messages in the clear: the handshake authenticates the two ends, it
 * does not encrypt or sign what follows (a peer able to rewrite loopback or
 * cluster network traffic could still read or inject it, as with any
 * unencrypted protocol).
 *
 * Identity. A server shared by several users (adafsd --owner) must know
 * who each client is, not only that it holds the secret (which every user
 * of the instance has). Over TCP it sets HANDSHAKE_WANT_IDENTITY, and the
 * client sends IDENTITY right after its PROOF. munged tells the server the
 * uid and gid that encoded the credential, refuses one expired or already
 * decoded (its replay cache), and the payload ties it to this connection's
 * nonces: a credential recorded on one connection, or obtained by a peer
 * from a client's handshake with it, is worth nothing on another. A
 * payload with another label (another purpose) is refused. On the node's
 * Unix socket the kernel says who the peer is (SO_PEERCRED): no flag, no
 * IDENTITY. A server that refuses the identity answers -EACCES with its
 * own MAC, so the client can tell "your uid may not" from "wrong secret".
 *
 * The server side is two pure functions, so a server may run handshakes
 * from an event loop without a thread per connection (fsd/gate.c); the
 * client side also comes as one blocking call. */
#ifndef ADAFS_HANDSHAKE_H
#define ADAFS_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#define HANDSHAKE_KEY_SIZE    32
#define HANDSHAKE_NONCE_SIZE  32
#define HANDSHAKE_MAC_SIZE    32
#define HANDSHAKE_MAGIC       0x48464441u /* "ADFH" read as little-endian */
#define HANDSHAKE_VERSION     1
#define HANDSHAKE_HELLO_SIZE  (8 + HANDSHAKE_NONCE_SIZE)
#define HANDSHAKE_PROOF_SIZE  (HANDSHAKE_NONCE_SIZE + HANDSHAKE_MAC_SIZE)
#define HANDSHAKE_ANSWER_SIZE (4 + HANDSHAKE_MAC_SIZE)
/* HELLO flags. */
#define HANDSHAKE_WANT_IDENTITY 1u
/* IDENTITY: the longest credential taken (a munge credential of this
 * payload is about 250 bytes), and the whole message at most. */
#define HANDSHAKE_CRED_MAX      1024
#define HANDSHAKE_IDENTITY_MAX  (4 + HANDSHAKE_CRED_MAX)
#define HANDSHAKE_IDENTITY_LABEL "adafs identity v1"
#define HANDSHAKE_IDENTITY_PAYLOAD_SIZE \
    (sizeof(HANDSHAKE_IDENTITY_LABEL) - 1 + 4 + 2 * HANDSHAKE_NONCE_SIZE)
/* The munged socket a client encodes its credential with (unset or empty:
 * munged's default). */
#define HANDSHAKE_ENV_MUNGE_SOCKET "ADAFS_MUNGE_SOCKET"

struct handshake {
    uint32_t bind;
    uint32_t flags;                   /* HELLO's */
    uint8_t server_nonce[HANDSHAKE_NONCE_SIZE];
    uint8_t client_nonce[HANDSHAKE_NONCE_SIZE];
};

/* Server: starts a handshake for server index bind: a fresh nonce, and the
 * HELLO to send (flags: HANDSHAKE_WANT_IDENTITY or 0). 0, or -errno if the
 * kernel gave no random bytes. */
int handshake_server_hello(struct handshake *hs, uint32_t bind, uint32_t flags,
                           uint8_t hello[HANDSHAKE_HELLO_SIZE]);
/* Server: the size of the IDENTITY message whose first got bytes are msg:
 * 4 while its length is not yet known, then 4 + len; -EBADMSG for a length
 * of 0 or above HANDSHAKE_CRED_MAX. */
int handshake_identity_size(const uint8_t *msg, size_t got);
/* Server: the credential of a whole IDENTITY message of size bytes, as a
 * C string in cred; -EBADMSG if it holds a NUL. */
int handshake_identity_cred(const uint8_t *msg, size_t size, char cred[HANDSHAKE_CRED_MAX + 1]);
/* Both: the payload a credential for this handshake carries. */
void handshake_identity_payload(const struct handshake *hs,
                                uint8_t out[HANDSHAKE_IDENTITY_PAYLOAD_SIZE]);
/* Server: refuses a client that proved the secret but whose identity may
 * not in: status -EACCES, with the server's MAC. answer is what
 * handshake_server_answer wrote (status 0). */
void handshake_server_deny(uint8_t answer[HANDSHAKE_ANSWER_SIZE]);
/* Server: checks the client's PROOF and writes the ANSWER to send: 0 (the
 * client holds key; the answer proves the server does too) or -EACCES
 * (the answer refuses). */
int handshake_server_answer(struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                            const uint8_t proof[HANDSHAKE_PROOF_SIZE],
                            uint8_t answer[HANDSHAKE_ANSWER_SIZE]);
/* Server: an ANSWER refusing a client that did prove itself (status < 0,
 * e.g. -EUSERS when the server has all the clients it takes). */
void handshake_server_refusal(int status, uint8_t answer[HANDSHAKE_ANSWER_SIZE]);

/* Client: reads the server's HELLO and writes the PROOF to send. 0,
 * -EPROTO for a HELLO that is not adafs' (or another version), or -errno
 * if the kernel gave no random bytes. */
int handshake_client_proof(struct handshake *hs, uint32_t bind,
                           const uint8_t key[HANDSHAKE_KEY_SIZE],
                           const uint8_t hello[HANDSHAKE_HELLO_SIZE],
                           uint8_t proof[HANDSHAKE_PROOF_SIZE]);
/* Client: checks the server's ANSWER. 0 when the server proved it holds
 * key; the server's refusal (-EACCES: it did not take our proof, -EUSERS:
 * full...); -EPERM when it claims success without a valid proof (it does
 * not hold the secret: not this instance's server); -EPROTO for a status
 * that is no errno. */
int handshake_client_check(const struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                           const uint8_t answer[HANDSHAKE_ANSWER_SIZE]);

/* Client: did a refusing ANSWER come from the server (its MAC checks out)?
 * Then it took our secret and refused our identity. */
int handshake_client_denied(const struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                            const uint8_t answer[HANDSHAKE_ANSWER_SIZE]);

/* Client: the whole exchange on a connected blocking socket before
 * deadline_ms (net.h time), with an IDENTITY when the server asks (munge
 * credential from $ADAFS_MUNGE_SOCKET's munged). Returns 0, or the error of
 * handshake_client_proof/check, or -ETIMEDOUT, -ECONNRESET (the server hung
 * up: it may have been full of handshakes), -EPIPE, -EACCES also when the
 * server refused our uid or munge gave no credential; err says which,
 * naming peer (e.g. "server 2 (n3:40007)"). */
int handshake_client(int fd, uint32_t bind, const uint8_t key[HANDSHAKE_KEY_SIZE],
                     int64_t deadline_ms, const char *peer, char *err, size_t errlen);

#endif
