/* handshake: the first bytes of every connection to an adafsd, in which
 * client and server prove to each other that they hold the instance's
 * secret without sending it.
 *
 *   server -> client  HELLO   u32 magic "ADFH", u16 version (1), u16 0,
 *                             32 bytes server nonce Ns             (40 bytes)
 *   client -> server  PROOF   32 bytes client nonce Nc,
 *                             MACc = HMAC-SHA256(secret, "adafs handshake v1 client"
 *                                                || u32 bind || Ns || Nc)  (64 bytes)
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

struct handshake {
    uint32_t bind;
    uint8_t server_nonce[HANDSHAKE_NONCE_SIZE];
    uint8_t client_nonce[HANDSHAKE_NONCE_SIZE];
};

/* Server: starts a handshake for server index bind: a fresh nonce, and the
 * HELLO to send. 0, or -errno if the kernel gave no random bytes. */
int handshake_server_hello(struct handshake *hs, uint32_t bind,
                           uint8_t hello[HANDSHAKE_HELLO_SIZE]);
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

/* Client: the whole exchange on a connected blocking socket before
 * deadline_ms (net.h time). Returns 0, or the error of
 * handshake_client_proof/check, or -ETIMEDOUT, -ECONNRESET (the server hung
 * up: it may have been full of handshakes), -EPIPE; err says which, naming
 * peer (e.g. "server 2 (n3:40007)"). */
int handshake_client(int fd, uint32_t bind, const uint8_t key[HANDSHAKE_KEY_SIZE],
                     int64_t deadline_ms, const char *peer, char *err, size_t errlen);

#endif
