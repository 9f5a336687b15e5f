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
 * Handshake, once per connection (frames of rpc.h):
 *
 *   client -> agent  SESSION_OP_HELLO: rpc str, a credential of the client
 *       (slurmctld's user or root) that only root may open, sealing
 *           u32 SESSION_MAGIC, u32 SESSION_VERSION, u32 SESSION_KIND_HELLO,
 *           str node, 32-byte client nonce, 32-byte client X25519 share
 *       The agent refuses it unless it opens (munge refuses one replayed,
 *       expired or not meant for root), the uid is the trusted one or root,
 *       the magic, version and kind match, and node is the agent's own.
 *       A refusal is answered in plain (status < 0, rpc str why): the
 *       client may show it but never trusts it.
 *   agent -> client  SESSION_OP_HELLO: rpc str, a credential of root that
 *       only the client's uid may open, sealing
 *           u32 SESSION_MAGIC, u32 SESSION_VERSION, u32 SESSION_KIND_REPLY,
 *           str node, the client's nonce, 32-byte agent nonce,
 *           32-byte agent X25519 share
 *       The client refuses it unless it opens, its uid is 0, and node and
 *       nonce are the ones it sent. The kind keeps a client running as
 *       root from taking its own hello, reflected, for a reply.
 *
 * Keys: X25519 (libsodium crypto_kx) over the two fresh shares gives one
 * key per direction; each is then hashed (BLAKE2b, keyed) with a label and
 * the transcript (both sealed payloads), so both sides hold the same keys
 * only if they saw the same hello and reply. The shares are thrown away
 * with the session: a recorded session stays unreadable even to whoever
 * later learns the munge key.
 *
 * Messages after the handshake, both ways: SESSION_OP_SEALED frames whose
 * payload is crypto_secretbox (XSalsa20-Poly1305) of
 *     u32 op, u32 status (i32), u32 id, then the body's bytes
 * with the direction's message counter (0, 1, 2...) as nonce. A receiver
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
#define SESSION_VERSION 2
#define SESSION_KIND_HELLO 1
#define SESSION_KIND_REPLY 2
#define SESSION_OP_HELLO 0x100      /* rpc opcodes of the two frame kinds */
#define SESSION_OP_SEALED 0x101
#define SESSION_NODE_MAX 64
#define SESSION_NONCE_BYTES 32
#define SESSION_KEY_BYTES 32
/* A hello or its reply frame: a munge credential of ~100 bytes sealed
 * payload is well under 1 KiB; anything bigger is not one. */
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
     * sealer's. -EACCES (why in err) for one malformed, expired, replayed
     * or meant for another uid. */
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
    uint8_t hello_hash[32];          /* BLAKE2b of the hello's sealed payload */
    uid_t peer_uid;                  /* the agent's: who sent the hello */
};

struct session_keys {
    uint8_t tx[SESSION_KEY_BYTES], rx[SESSION_KEY_BYTES];
    uint64_t tx_seq, rx_seq;         /* the next message's counter each way */
    /* A message did not open (rx) or could not be sent whole (tx): that
     * direction is over. Apart, so one thread may send while another
     * receives. */
    bool rx_failed, tx_failed;
};

/* The four steps, each on bytes only (the unit tests and fuzzer drive
 * them without sockets). Each returns 0 or -errno with err filled: -EACCES
 * for a credential refused or not matching, -EPROTO for a payload not
 * of this protocol, -ENOMEM. */
/* Client: a fresh hello for `node`, sealed for root. */
int session_hello_make(const struct session_auth *a, const char *node, struct session_handshake *hs,
                       char **cred, char *err, size_t errlen);
/* Agent `node`: opens a hello and checks it; trusted (besides root) is the
 * one other uid allowed. hs->peer_uid is the sender. */
int session_hello_take(const struct session_auth *a, const char *node, uid_t trusted,
                       const char *cred, struct session_handshake *hs, char *err, size_t errlen);
/* Agent: the reply to a hello taken, sealed for its sender, and the keys. */
int session_reply_make(const struct session_auth *a, struct session_handshake *hs, char **cred,
                       struct session_keys *keys, char *err, size_t errlen);
/* Client: opens and checks the agent's reply; the keys. */
int session_reply_take(const struct session_auth *a, struct session_handshake *hs, const char *cred,
                       struct session_keys *keys, char *err, size_t errlen);
/* Wipes the handshake's secret. */
void session_handshake_clear(struct session_handshake *hs);

/* Seals the next message: *out (malloc'd, *outlen bytes) is a
 * SESSION_OP_SEALED frame's payload. 0, -ENOMEM, or -EPIPE once failed.
 * session_seal is session_seal_id with id 0. */
int session_seal_id(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                    const void *body, size_t len, uint8_t **out, size_t *outlen);
int session_seal(struct session_keys *k, uint16_t op, int32_t status, const void *body, size_t len,
                 uint8_t **out, size_t *outlen);

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
int agent_session_send_id(struct agent_session *s, uint16_t op, uint32_t id, int32_t status,
                          const void *body, size_t len, int64_t deadline_ms);
int agent_session_recv(struct agent_session *s, struct session_msg *m, size_t max_len,
                       int64_t deadline_ms);
/* Closes the connection and wipes the keys. */
void agent_session_close(struct agent_session *s);

#endif
