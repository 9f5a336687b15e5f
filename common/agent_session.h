/* agent_session: an authenticated, encrypted connection to a node agent.
 *
 * The agent (adafs-agentd) runs as root on a port users may bind while it
 * is down; its clients (slurmctld's burst_buffer/adafs plugin, tests,
 * agent_probe) send it a job's secret and believe what it answers: where
 * the job's server listens, whether a node is at fault. So each side
 * proves who it is, and nothing on the wire can be read, changed, replayed
 * or reordered. A process squatting on the port learns nothing (it cannot
 * open the hello) and can make the client believe nothing (it cannot seal
 * root's reply).
 *
 * Handshake, once per connection (frames of rpc.h), version 4:
 *
 *   client -> agent  SESSION_OP_HELLO: rpc str "NODE MAC CRED":
 *       CRED a credential of the client (slurmctld's user or root) that
 *       only root may open, sealing
 *           u32 SESSION_MAGIC, u32 SESSION_VERSION, u32 SESSION_KIND_HELLO,
 *           32-byte client nonce, 32-byte client X25519 share,
 *           32-byte fan-out key K, u32 the ciphers the client can use
 *           (1 << SESSION_CIPHER_*)
 *       NODE the agent's node, MAC (hex) BLAKE2b keyed with K over a label,
 *       the hash of the sealed payload and NODE.
 *       One credential serves every agent the client greets at once (a
 *       fan-out: a job's 4,096 nodes take one credential, not 4,096); each
 *       connection's hello binds it to its node by the MAC.
 *       The agent refuses it unless it opens (munge refuses one expired or
 *       not meant for root), the uid is the trusted one or root, the magic,
 *       version and kind match, NODE is the agent's own and the MAC holds
 *       under the sealed K, and this agent never took the same (nonce,
 *       node) before (remember_hello, for SESSION_HELLO_MEMORY_S: munge's
 *       own replay check cannot be the one, because the fan-out's nodes
 *       open one credential, and nodes may share a munged).
 *       A refusal is answered in plain (status < 0, rpc str why): the
 *       client may show it but never trusts it.
 *   agent -> client  SESSION_OP_HELLO: rpc str, hex of
 *           u32 SESSION_MAGIC, u32 SESSION_VERSION, u32 SESSION_KIND_REPLY,
 *           str node, the client's nonce, 32-byte agent nonce,
 *           32-byte agent X25519 share, u32 the cipher chosen,
 *           MAC: BLAKE2b keyed with K over another label, the hello's hash
 *           (credential and node) and all the above
 *       The client refuses it unless the MAC holds, node and nonce are
 *       the ones it sent and the cipher is one it offered. The labels keep
 *       a client running as root from taking its own hello, reflected, for
 *       a reply. Both the offer and the choice are under K's MAC (or in
 *       the credential), so no one on the wire can talk a session down to
 *       the other cipher.
 *
 * Why this keeps every property of version 2 (one munge credential each
 * way per connection, 2 per node on the client's side):
 *   - the agent proves root: K is in a credential only root can open, so
 *     a reply whose MAC holds comes from root (or the client itself, whom
 *     the labels and nonce rule out). Root on another node of the fan-out
 *     also learns K and could answer for this node; it could do that in
 *     version 2 too (root seals root credentials naming any node): root on
 *     every node is trusted, as munge's realm is;
 *   - the client proves its uid: the credential names it, as before;
 *   - a squatter on a node's port (the agent down) cannot open the
 *     credential, so has no K: it can make the client believe nothing, and
 *     cannot turn the hello it got into one for another node (the MAC);
 *   - nothing can be replayed: a hello replayed to its node is refused by
 *     remember_hello; one replayed anywhere else fails the MAC; and even a
 *     hello taken would give nothing, as before: the keys need the
 *     client's X25519 secret, which never leaves the client. A reply is
 *     bound by its MAC to one hello's nonce, credential and node;
 *   - forward secrecy: K only authenticates; the keys come from the
 *     X25519 shares, whose secrets are thrown away (the client's when its
 *     fan-out is retired, seconds later: agent_link.h), so a recorded
 *     session stays unreadable to whoever later learns the munge key or K.
 * What it costs: the client makes one credential per fan-out and opens
 * none; each agent opens one. Slurm does the same: a message it fans out
 * through its forwarding tree carries one credential that every node's
 * munged opens (src/common/forward.c), and builds with several slurmd per
 * host accept munge's "replayed" for it (auth_munge.c, MULTIPLE_SLURMD).
 *
 * Keys: X25519 (libsodium crypto_kx) over the two fresh shares gives one
 * key per direction; each is then hashed (BLAKE2b, keyed) with a label and
 * the transcript (both sealed payloads), so both sides hold the same keys
 * only if they saw the same hello and reply. The shares are thrown away
 * with the session: a recorded session stays unreadable even to whoever
 * later learns the munge key.
 *
 * Messages after the handshake, both ways: SESSION_OP_SEALED frames whose
 * payload is a 16-byte tag, then the AEAD encryption of
 *     u32 op, u32 status (i32), u32 id, then the body's bytes
 * with the direction's message counter (0, 1, 2...) as nonce. The AEAD is
 * AES-256-GCM when both sides' CPUs have AES-NI and carry-less multiply
 * (libsodium's requirement), its key schedule and GHASH powers computed
 * once per session; else XSalsa20-Poly1305 (crypto_secretbox), which
 * derives a subkey (HSalsa20) for every message. Why: adafs-qosd seals
 * and opens four small messages per busy node each period, and for 30-300
 * byte messages a secretbox costs 0.5-1.2 us on this project's machines
 * against 0.16-0.41 us for AES-256-GCM with its state set up once
 * (doc/bench/qos.md); libsodium is already a dependency. A receiver
 * takes only the next counter, so a message replayed, reordered, dropped,
 * truncated or changed does not open; the first failure fails the session
 * for good and the connection is closed. One connection may carry any
 * number of requests, several at once: a request's id (chosen by the
 * client, sealed with it) comes back with its answer, and answers may come
 * in any order (version 2; version 1 had no id). */
#ifndef ADAFS_AGENT_SESSION_H
#define ADAFS_AGENT_SESSION_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SESSION_MAGIC 0x53414441u   /* "ADAS" read as little-endian */
#define SESSION_VERSION 4
/* The AEADs of sealed messages (the handshake's offer is a mask of 1 << these). */
#define SESSION_CIPHER_SECRETBOX 0  /* XSalsa20-Poly1305: every CPU */
#define SESSION_CIPHER_AES256GCM 1  /* AES-256-GCM: AES-NI and PCLMUL */
/* libsodium's crypto_aead_aes256gcm_state, kept opaque here. */
#define SESSION_AES_STATE 512
#define SESSION_KIND_HELLO 1
#define SESSION_KIND_REPLY 2
#define SESSION_OP_HELLO 0x100      /* rpc opcodes of the two frame kinds */
#define SESSION_OP_SEALED 0x101
#define SESSION_NODE_MAX 64
#define SESSION_NONCE_BYTES 32
#define SESSION_KEY_BYTES 32
/* A hello or its reply frame: a munge credential of ~100 bytes sealed
 * payload is well under 1 KiB; anything bigger is not one. */
/* How long an agent remembers a hello it took: longer than a credential
 * may open (munge_auth.c seals them for MUNGE_TTL_S, munge allows a few
 * minutes of clock skew). */
#define SESSION_HELLO_MEMORY_S 900
#define SESSION_HELLO_MAX 4096
/* What sealing adds to a body: the MAC, the op, status and id. */
#define SESSION_PLAIN_HEAD 12
#define SESSION_OVERHEAD (16 + SESSION_PLAIN_HEAD)

/* Who vouches for a peer: munge on a cluster (munge_auth.h), a stand-in in
 * the unit tests and the fuzzer. */
struct session_auth {
    /* Seals payload into a NUL-terminated credential (*cred, malloc'd)
     * naming the caller's uid, which only uid `reader` may open. 0, or
     * -errno with err filled. */
    int (*seal)(const struct session_auth *a, const void *payload, size_t len, uid_t reader,
                char **cred, char *err, size_t errlen);
    /* Opens a credential meant for the caller: *payload malloc'd, *uid the
     * sealer's. -EALREADY with *payload and *uid filled for one that opened
     * but was opened before (the caller decides what a replay means);
     * -EACCES (why in err) for one malformed, expired or meant for another
     * uid. */
    int (*open)(const struct session_auth *a, const char *cred, void **payload, size_t *len,
                uid_t *uid, char *err, size_t errlen);
    const void *data;   /* the implementation's */
};

/* What one side keeps during the handshake. */
struct session_handshake {
    char node[SESSION_NODE_MAX + 1];
    uint8_t client_nonce[SESSION_NONCE_BYTES], agent_nonce[SESSION_NONCE_BYTES];
    uint8_t client_share[32], agent_share[32];
    uint8_t own_secret[32];          /* this side's X25519 secret */
    uint8_t key[SESSION_KEY_BYTES];  /* the fan-out's key K */
    uint8_t hello_hash[32];          /* BLAKE2b of the hello's sealed payload */
    uid_t peer_uid;                  /* the agent's: who sent the hello */
    uint32_t ciphers;                /* the client's offer (1 << SESSION_CIPHER_*) */
};

struct session_keys {
    /* What every message reads first, then each direction's cipher state:
     * a seal reads the first 64 bytes and tx_aes's, an open the first and
     * rx_aes's (adafs-qosd opens and seals for 1,000 agents a period, and
     * its time is the cache lines it touches). */
    int cipher;                      /* SESSION_CIPHER_* */
    /* A message did not open (rx) or could not be sent whole (tx): that
     * direction is over. Apart, so one thread may send while another
     * receives. */
    bool rx_failed, tx_failed;
    uint64_t tx_seq, rx_seq;         /* the next message's counter each way */
    /* For AES-256-GCM the two keys' expanded states (session_keys_use). */
    _Alignas(16) unsigned char tx_aes[SESSION_AES_STATE], rx_aes[SESSION_AES_STATE];
    /* The keys; zeroed keys are secretbox's. */
    uint8_t tx[SESSION_KEY_BYTES], rx[SESSION_KEY_BYTES];
};

/* The four steps, each on bytes only (the unit tests and fuzzer drive
 * them without sockets). Each returns 0 or -errno with err filled: -EACCES
 * for a credential refused or not matching, -EPROTO for a payload not
 * of this protocol, -ENOMEM. */
/* Client: one credential for a fan-out, then the hello of each node of it.
 * Keep a fan-out seconds, not minutes: its X25519 secret is every one of
 * its sessions' client secret until session_fanout_clear. */
struct session_fanout {
    char *cred;                      /* malloc'd: the sealed credential */
    uint8_t client_nonce[SESSION_NONCE_BYTES], client_share[32], own_secret[32];
    uint8_t key[SESSION_KEY_BYTES];
    uint8_t cred_hash[32];           /* BLAKE2b of the sealed payload */
};
int session_fanout_make(const struct session_auth *a, struct session_fanout *f, char *err,
                        size_t errlen);
/* The hello text for `node` (*hello malloc'd) and its handshake state. */
int session_fanout_hello(const struct session_fanout *f, const char *node,
                         struct session_handshake *hs, char **hello, char *err, size_t errlen);
void session_fanout_clear(struct session_fanout *f);
/* Client: a fresh hello for `node` alone (a fan-out of one). */
int session_hello_make(const struct session_auth *a, const char *node, struct session_handshake *hs,
                       char **cred, char *err, size_t errlen);
/* Agent `node`: opens a hello and checks it; trusted (besides root) is the
 * one other uid allowed. hs->peer_uid is the sender. */
int session_hello_take(const struct session_auth *a, const char *node, uid_t trusted,
                       const char *cred, struct session_handshake *hs, char *err, size_t errlen);
/* Agent: the reply to a hello taken, MAC'd with its K, and the keys. */
int session_reply_make(const struct session_auth *a, struct session_handshake *hs, char **cred,
                       struct session_keys *keys, char *err, size_t errlen);
/* Client: opens and checks the agent's reply; the keys. */
int session_reply_take(const struct session_auth *a, struct session_handshake *hs, const char *cred,
                       struct session_keys *keys, char *err, size_t errlen);
/* Wipes the handshake's secrets (X25519 and K). */
void session_handshake_clear(struct session_handshake *hs);
/* The ciphers this process can use (1 << SESSION_CIPHER_*). */
uint32_t session_ciphers(void);
/* Seals and opens k's messages with cipher from now on (the handshake
 * calls it; tests and benchmarks that fill tx and rx themselves too). 0, or
 * -ENOTSUP for a cipher this CPU cannot run. */
int session_keys_use(struct session_keys *k, int cipher);

/* Seals the next message: *out (malloc'd, *outlen bytes) is a
 * SESSION_OP_SEALED frame's payload. 0, -ENOMEM, or -EPIPE once failed.
 * session_seal is session_seal_id with id 0. */
int session_seal_id(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                    const void *body, size_t len, uint8_t **out, size_t *outlen);
int session_seal(struct session_keys *k, uint16_t op, int32_t status, const void *body, size_t len,
                 uint8_t **out, size_t *outlen);
/* Seals the next message where it lies, with no copy and no allocation:
 * buf holds SESSION_OVERHEAD bytes for the session's, then the body's len
 * bytes; it becomes the frame's payload, SESSION_OVERHEAD + len bytes. 0,
 * -EMSGSIZE, or -EPIPE once failed. */
int session_seal_in_place(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                          uint8_t *buf, size_t len);

/* One message opened. */
struct session_msg {
    uint16_t op;
    int32_t status;
    uint32_t id;           /* the request's, echoed in its answer */
    const uint8_t *body;   /* inside plain */
    size_t len;
    uint8_t *plain;        /* malloc'd: free it */
};
/* Opens the next message. 0; -EBADMSG (and the keys fail for good) for
 * one that does not open or is not the next; -ENOMEM. */
int session_open(struct session_keys *k, const uint8_t *in, size_t len, struct session_msg *m);
/* session_open opening the message where it lies: m->body points into buf
 * (which it overwrites, also when the message does not open), m->plain is
 * NULL. */
int session_open_in_place(struct session_keys *k, uint8_t *buf, size_t len, struct session_msg *m);
/* Decodes an opened message's plaintext (op, status, id, body): 0 or
 * -EBADMSG. */
int session_plain_decode(const uint8_t *plain, size_t len, struct session_msg *m);

/* --- over a socket --------------------------------------------------- */

struct agent_session {
    int fd;
    struct session_keys keys;
    uid_t peer_uid;     /* the agent's view: who the client proved to be */
};

/* Client: connects to host:port and handshakes with the agent of `node`
 * within timeout_ms. Returns 0, or -errno with err naming the node and
 * address: a connection refused, reset or timed out; -EACCES for an
 * agent that refused the hello (its unauthenticated reason in err) or a
 * reply that is not the agent's. */
int agent_session_connect(struct agent_session *s, const struct session_auth *a, const char *node,
                          const char *host, int port, int timeout_ms, char *err, size_t errlen);

/* Agent: receives a hello frame on an accepted connection by deadline_ms
 * (*cred malloc'd). -EPROTO for a frame that is not a hello. */
int agent_session_recv_hello(int fd, char **cred, int64_t deadline_ms);
/* Agent `node`: takes the hello and answers it. On refusal, sends the
 * reason in plain and returns -EACCES (or -EPROTO) with it in err. */
int agent_session_accept(struct agent_session *s, int fd, const struct session_auth *a,
                         const char *node, uid_t trusted, const char *cred, int64_t deadline_ms,
                         char *err, size_t errlen);

/* One sealed message each way; 0 or -errno (-ECONNRESET: the peer closed
 * between messages; -EBADMSG: one did not open, the session is over;
 * -EMSGSIZE: bigger than max_len). recv's m->plain is malloc'd. send is
 * send_id with id 0. Sends from several threads must be serialised by the
 * caller (the counters); one thread may receive while another sends. */
int agent_session_send(struct agent_session *s, uint16_t op, int32_t status, const void *body,
                       size_t len, int64_t deadline_ms);
/* send with the body sealed where it lies (session_seal_in_place: buf
 * holds SESSION_OVERHEAD bytes, then the body's len). */
int agent_session_send_in_place(struct agent_session *s, uint16_t op, int32_t status, uint8_t *buf,
                                size_t len, int64_t deadline_ms);
int agent_session_send_id(struct agent_session *s, uint16_t op, uint32_t id, int32_t status,
                          const void *body, size_t len, int64_t deadline_ms);
int agent_session_recv(struct agent_session *s, struct session_msg *m, size_t max_len,
                       int64_t deadline_ms);
/* Closes the connection and wipes the keys. */
void agent_session_close(struct agent_session *s);

#endif
