#include "agent_session.h"

#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "rpc.h"
#include "rpc_io.h"

_Static_assert(crypto_kx_PUBLICKEYBYTES == 32 && crypto_kx_SECRETKEYBYTES == 32 &&
               crypto_kx_SESSIONKEYBYTES == SESSION_KEY_BYTES, "X25519 sizes");
_Static_assert(crypto_secretbox_MACBYTES + SESSION_PLAIN_HEAD == SESSION_OVERHEAD, "sealing overhead");

static const char *const kind_name[] = { "?", "hello", "reply" };

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* The sealed payload of a hello (reply: with the agent's nonce and share
 * in place of the client's share). */
static void put_handshake(struct rpc_writer *w, uint32_t kind, const struct session_handshake *hs)
{
    rpc_put_u32(w, SESSION_MAGIC);
    rpc_put_u32(w, SESSION_VERSION);
    rpc_put_u32(w, kind);
    rpc_put_str(w, hs->node);
    rpc_put_raw(w, hs->client_nonce, SESSION_NONCE_BYTES);
    if (kind == SESSION_KIND_HELLO) {
        rpc_put_raw(w, hs->client_share, 32);
    } else {
        rpc_put_raw(w, hs->agent_nonce, SESSION_NONCE_BYTES);
        rpc_put_raw(w, hs->agent_share, 32);
    }
}

static bool get_raw(struct rpc_reader *r, uint8_t *out, size_t len)
{
    if (!rpc_reader_ok(r) || r->len - r->off < len) {
        r->failed = 1;
        return false;
    }
    memcpy(out, r->data + r->off, len);
    r->off += len;
    return true;
}

/* Decodes a handshake payload of the given kind into what (node, nonces,
 * shares as that kind carries). -EPROTO with why in err. */
static int get_handshake(const void *payload, size_t len, uint32_t kind,
                         struct session_handshake *what, char *err, size_t errlen)
{
    struct rpc_reader r;
    rpc_reader_init(&r, payload, len);
    uint32_t magic = rpc_get_u32(&r), version = rpc_get_u32(&r), got = rpc_get_u32(&r);
    if (!rpc_reader_ok(&r) || magic != SESSION_MAGIC)
        return fail(err, errlen, -EPROTO, "the credential does not hold an adafs agent %s",
                    kind_name[kind]);
    if (version != SESSION_VERSION)
        return fail(err, errlen, -EPROTO, "agent session version %u, this side speaks %u",
                    version, SESSION_VERSION);
    if (got != kind)
        return fail(err, errlen, -EPROTO, "the credential holds a %s, not a %s",
                    got < 3 ? kind_name[got] : "message of an unknown kind", kind_name[kind]);
    const char *node = rpc_get_str(&r);
    get_raw(&r, what->client_nonce, SESSION_NONCE_BYTES);
    if (kind == SESSION_KIND_HELLO) {
        get_raw(&r, what->client_share, 32);
    } else {
        get_raw(&r, what->agent_nonce, SESSION_NONCE_BYTES);
        get_raw(&r, what->agent_share, 32);
    }
    if (!node || !rpc_reader_done(&r) || strlen(node) > SESSION_NODE_MAX)
        return fail(err, errlen, -EPROTO, "a malformed %s", kind_name[kind]);
    memcpy(what->node, node, strlen(node) + 1);
    return 0;
}

/* Seals w's bytes for reader; *hash (if not NULL) gets their BLAKE2b. */
static int seal_payload(const struct session_auth *a, struct rpc_writer *w, uid_t reader,
                        uint8_t hash[32], char **cred, char *err, size_t errlen)
{
    if (!rpc_writer_ok(w))
        return fail(err, errlen, -ENOMEM, "out of memory");
    if (hash)
        crypto_generichash(hash, 32, w->data, w->len, NULL, 0);
    return a->seal(a, w->data, w->len, reader, cred, err, errlen);
}

int session_hello_make(const struct session_auth *a, const char *node, struct session_handshake *hs,
                       char **cred, char *err, size_t errlen)
{
    *cred = NULL;
    memset(hs, 0, sizeof(*hs));
    if (sodium_init() < 0)
        return fail(err, errlen, -ENOMEM, "libsodium does not initialise");
    if (strlen(node) > SESSION_NODE_MAX)
        return fail(err, errlen, -EINVAL, "node name %.80s is longer than %d", node,
                    SESSION_NODE_MAX);
    memcpy(hs->node, node, strlen(node) + 1);
    randombytes_buf(hs->client_nonce, sizeof(hs->client_nonce));
    crypto_kx_keypair(hs->client_share, hs->own_secret);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    put_handshake(&w, SESSION_KIND_HELLO, hs);
    int rc = seal_payload(a, &w, 0, hs->hello_hash, cred, err, errlen);
    rpc_writer_free(&w);
    return rc;
}

int session_hello_take(const struct session_auth *a, const char *node, uid_t trusted,
                       const char *cred, struct session_handshake *hs, char *err, size_t errlen)
{
    memset(hs, 0, sizeof(*hs));
    if (sodium_init() < 0)
        return fail(err, errlen, -ENOMEM, "libsodium does not initialise");
    void *payload = NULL;
    size_t len = 0;
    uid_t uid;
    int rc = a->open(a, cred, &payload, &len, &uid, err, errlen);
    if (rc < 0)
        return rc;
    if (uid != trusted && uid != 0) {
        rc = fail(err, errlen, -EACCES, "uid %u may not use the agent (only uid %u and root)",
                  (unsigned)uid, (unsigned)trusted);
    } else if ((rc = get_handshake(payload, len, SESSION_KIND_HELLO, hs, err, errlen)) == 0 &&
               strcmp(hs->node, node) != 0) {
        rc = fail(err, errlen, -EACCES, "the hello is for node %s, this is %s", hs->node, node);
    }
    if (rc == 0) {
        crypto_generichash(hs->hello_hash, 32, payload, len, NULL, 0);
        hs->peer_uid = uid;
    }
    free(payload);
    return rc;
}

/* The per-direction keys: X25519's, bound to the whole transcript. */
static void derive(const uint8_t c2a[32], const uint8_t a2c[32], const uint8_t hello_hash[32],
                   const uint8_t reply_hash[32], uint8_t out_c2a[32], uint8_t out_a2c[32])
{
    uint8_t transcript[32 + 32 + 16];
    memcpy(transcript, hello_hash, 32);
    memcpy(transcript + 32, reply_hash, 32);
    memcpy(transcript + 64, "adafs agent c2a", 16);
    crypto_generichash(out_c2a, 32, transcript, sizeof(transcript), c2a, 32);
    memcpy(transcript + 64, "adafs agent a2c", 16);
    crypto_generichash(out_a2c, 32, transcript, sizeof(transcript), a2c, 32);
    sodium_memzero(transcript, sizeof(transcript));
}

int session_reply_make(const struct session_auth *a, struct session_handshake *hs, char **cred,
                       struct session_keys *keys, char *err, size_t errlen)
{
    *cred = NULL;
    memset(keys, 0, sizeof(*keys));
    randombytes_buf(hs->agent_nonce, sizeof(hs->agent_nonce));
    crypto_kx_keypair(hs->agent_share, hs->own_secret);
    uint8_t rx[32], tx[32], reply_hash[32];
    if (crypto_kx_server_session_keys(rx, tx, hs->agent_share, hs->own_secret, hs->client_share) != 0)
        return fail(err, errlen, -EACCES, "the client's key share is not a usable X25519 key");
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    put_handshake(&w, SESSION_KIND_REPLY, hs);
    int rc = seal_payload(a, &w, hs->peer_uid, reply_hash, cred, err, errlen);
    rpc_writer_free(&w);
    if (rc == 0)
        derive(rx, tx, hs->hello_hash, reply_hash, keys->rx, keys->tx);
    sodium_memzero(rx, sizeof(rx));
    sodium_memzero(tx, sizeof(tx));
    session_handshake_clear(hs);
    return rc;
}

int session_reply_take(const struct session_auth *a, struct session_handshake *hs, const char *cred,
                       struct session_keys *keys, char *err, size_t errlen)
{
    memset(keys, 0, sizeof(*keys));
    void *payload = NULL;
    size_t len = 0;
    uid_t uid;
    int rc = a->open(a, cred, &payload, &len, &uid, err, errlen);
    if (rc < 0)
        return rc;
    struct session_handshake got;
    memset(&got, 0, sizeof(got));
    if (uid != 0)
        rc = fail(err, errlen, -EACCES, "the reply is sealed by uid %u, not root: not the agent",
                  (unsigned)uid);
    if (rc == 0)
        rc = get_handshake(payload, len, SESSION_KIND_REPLY, &got, err, errlen);
    if (rc == 0 && strcmp(got.node, hs->node) != 0)
        rc = fail(err, errlen, -EACCES, "the reply is from the agent of node %s, not %s", got.node,
                  hs->node);
    if (rc == 0 && sodium_memcmp(got.client_nonce, hs->client_nonce, SESSION_NONCE_BYTES) != 0)
        rc = fail(err, errlen, -EACCES, "the reply answers another hello (its nonce is not ours)");
    uint8_t rx[32], tx[32], reply_hash[32];
    if (rc == 0 &&
        crypto_kx_client_session_keys(rx, tx, hs->client_share, hs->own_secret, got.agent_share) != 0)
        rc = fail(err, errlen, -EACCES, "the agent's key share is not a usable X25519 key");
    if (rc == 0) {
        crypto_generichash(reply_hash, 32, payload, len, NULL, 0);
        derive(tx, rx, hs->hello_hash, reply_hash, keys->tx, keys->rx);
        sodium_memzero(rx, sizeof(rx));
        sodium_memzero(tx, sizeof(tx));
    }
    free(payload);
    session_handshake_clear(hs);
    return rc;
}

void session_handshake_clear(struct session_handshake *hs)
{
    sodium_memzero(hs->own_secret, sizeof(hs->own_secret));
}

static void nonce_of(uint64_t seq, uint8_t nonce[crypto_secretbox_NONCEBYTES])
{
    memset(nonce, 0, crypto_secretbox_NONCEBYTES);
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(seq >> (8 * i));
}

int session_seal_id(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                    const void *body, size_t len, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    if (k->tx_failed)
        return -EPIPE;
    if (len > RPC_MAX_PAYLOAD - SESSION_OVERHEAD)
        return -EMSGSIZE;
    size_t plain_len = SESSION_PLAIN_HEAD + len;
    uint8_t *buf = malloc(crypto_secretbox_MACBYTES + plain_len);
    if (!buf)
        return -ENOMEM;
    /* Encrypted in place: the plaintext goes where the ciphertext will be. */
    uint8_t *plain = buf + crypto_secretbox_MACBYTES;
    struct rpc_writer w;
    rpc_writer_init(&w, plain, SESSION_PLAIN_HEAD);
    rpc_put_u32(&w, op);
    rpc_put_u32(&w, (uint32_t)status);
    rpc_put_u32(&w, id);
    if (len)
        memcpy(plain + SESSION_PLAIN_HEAD, body, len);
    uint8_t nonce[crypto_secretbox_NONCEBYTES];
    nonce_of(k->tx_seq++, nonce);
    crypto_secretbox_easy(buf, plain, plain_len, nonce, k->tx);
    *out = buf;
    *outlen = crypto_secretbox_MACBYTES + plain_len;
    return 0;
}

int session_seal(struct session_keys *k, uint16_t op, int32_t status, const void *body, size_t len,
                 uint8_t **out, size_t *outlen)
{
    return session_seal_id(k, op, 0, status, body, len, out, outlen);
}

int session_plain_decode(const uint8_t *plain, size_t len, struct session_msg *m)
{
    struct rpc_reader r;
    rpc_reader_init(&r, plain, len);
    uint32_t op = rpc_get_u32(&r), status = rpc_get_u32(&r), id = rpc_get_u32(&r);
    if (!rpc_reader_ok(&r) || op > UINT16_MAX)
        return -EBADMSG;
    m->op = (uint16_t)op;
    m->status = (int32_t)status;
    m->id = id;
    m->len = rpc_get_rest(&r, (const void **)&m->body);
    if (!m->len)
        m->body = plain + len;
    return 0;
}

int session_open(struct session_keys *k, const uint8_t *in, size_t len, struct session_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (k->rx_failed)
        return -EBADMSG;
    if (len < SESSION_OVERHEAD) {
        k->rx_failed = true;
        return -EBADMSG;
    }
    size_t plain_len = len - crypto_secretbox_MACBYTES;
    uint8_t *plain = malloc(plain_len);
    if (!plain)
        return -ENOMEM;
    uint8_t nonce[crypto_secretbox_NONCEBYTES];
    nonce_of(k->rx_seq, nonce);
    if (crypto_secretbox_open_easy(plain, in, len, nonce, k->rx) != 0 ||
        session_plain_decode(plain, plain_len, m) < 0) {
        free(plain);
        memset(m, 0, sizeof(*m));
        k->rx_failed = true;
        return -EBADMSG;
    }
    k->rx_seq++;
    m->plain = plain;
    return 0;
}

/* --- over a socket --------------------------------------------------- */

/* Receives one handshake frame; *cred is its credential text, or (a
 * refusal) *status < 0 and *cred its reason. */
static int recv_handshake(int fd, int32_t *status, char **cred, int64_t deadline_ms)
{
    struct rpc_header h;
    uint8_t *payload = NULL;
    *cred = NULL;
    int rc = rpc_recv(fd, &h, &payload, SESSION_HELLO_MAX, deadline_ms);
    if (rc < 0)
        return rc;
    struct rpc_reader r;
    rpc_reader_init(&r, payload, h.length);
    const char *text = rpc_get_str(&r);
    if (h.opcode != SESSION_OP_HELLO || !text || !rpc_reader_done(&r)) {
        free(payload);
        return -EPROTO;
    }
    *cred = strdup(text);
    *status = h.status;
    free(payload);
    return *cred ? 0 : -ENOMEM;
}

static int send_handshake(int fd, int32_t status, const char *text, int64_t deadline_ms)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, text);
    struct rpc_header h = { .opcode = SESSION_OP_HELLO, .status = status };
    int rc = rpc_writer_ok(&w) ? rpc_send(fd, &h, w.data, w.len, deadline_ms) : -ENOMEM;
    rpc_writer_free(&w);
    return rc;
}

int agent_session_connect(struct agent_session *s, const struct session_auth *a, const char *node,
                          const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    struct session_handshake hs;
    char *cred = NULL, why[512];
    /* The credential first: the connection is open only while it is
     * sent and answered, so an agent that evicts idle connections under a
     * flood finds this one busy. */
    int rc = session_hello_make(a, node, &hs, &cred, why, sizeof(why));
    if (rc < 0) {
        session_handshake_clear(&hs);
        return fail(err, errlen, rc, "node %s: %s", node, why);
    }
    int64_t deadline = net_now_ms() + timeout_ms;
    int fd = net_connect(host, port, timeout_ms, why, sizeof(why));
    if (fd < 0) {
        free(cred);
        session_handshake_clear(&hs);
        return fail(err, errlen, fd, "node %s: agent %s", node, why);
    }
    int32_t status = 0;
    char *answer = NULL;
    rc = send_handshake(fd, 0, cred, deadline);
    free(cred);
    if (rc == 0)
        rc = recv_handshake(fd, &status, &answer, deadline);
    if (rc < 0) {
        fail(err, errlen, rc, "node %s: agent %s:%d: handshake: %s", node, host, port,
             rc == -EPROTO ? "the answer is not an adafs agent's" : strerror(-rc));
    } else if (status < 0) {
        /* Anyone on the port could have said it: shown, never believed. */
        rc = fail(err, errlen, -EACCES, "node %s: agent %s:%d refused the handshake: %s"
                  " (unauthenticated answer)", node, host, port, answer);
    } else if ((rc = session_reply_take(a, &hs, answer, &s->keys, why, sizeof(why))) < 0) {
        rc = fail(err, errlen, -EACCES, "node %s: %s:%d answered, but not as its agent: %s", node,
                  host, port, why);
    }
    free(answer);
    session_handshake_clear(&hs);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    s->fd = fd;
    return 0;
}

int agent_session_recv_hello(int fd, char **cred, int64_t deadline_ms)
{
    int32_t status = 0;
    int rc = recv_handshake(fd, &status, cred, deadline_ms);
    if (rc == 0 && status != 0) {
        free(*cred);
        *cred = NULL;
        return -EPROTO;
    }
    return rc;
}

int agent_session_accept(struct agent_session *s, int fd, const struct session_auth *a,
                         const char *node, uid_t trusted, const char *cred, int64_t deadline_ms,
                         char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    struct session_handshake hs;
    char *reply = NULL;
    int rc = session_hello_take(a, node, trusted, cred, &hs, err, errlen);
    if (rc == 0)
        rc = session_reply_make(a, &hs, &reply, &s->keys, err, errlen);
    session_handshake_clear(&hs);
    if (rc < 0) {
        char text[600];
        snprintf(text, sizeof(text), "node %s: %s", node, err);
        send_handshake(fd, rc, text, deadline_ms);
        sodium_memzero(&s->keys, sizeof(s->keys));
        return rc;
    }
    rc = send_handshake(fd, 0, reply, deadline_ms);
    free(reply);
    if (rc < 0) {
        sodium_memzero(&s->keys, sizeof(s->keys));
        return fail(err, errlen, rc, "sending the handshake's reply: %s", strerror(-rc));
    }
    s->fd = fd;
    s->peer_uid = hs.peer_uid;
    return 0;
}

int agent_session_send_id(struct agent_session *s, uint16_t op, uint32_t id, int32_t status,
                          const void *body, size_t len, int64_t deadline_ms)
{
    uint8_t *sealed;
    size_t sealed_len;
    int rc = session_seal_id(&s->keys, op, id, status, body, len, &sealed, &sealed_len);
    if (rc < 0)
        return rc;
    struct rpc_header h = { .opcode = SESSION_OP_SEALED };
    rc = rpc_send(s->fd, &h, sealed, sealed_len, deadline_ms);
    free(sealed);
    if (rc < 0)
        s->keys.tx_failed = true;   /* a message may be half sent: nothing more can follow */
    return rc;
}

int agent_session_send(struct agent_session *s, uint16_t op, int32_t status, const void *body,
                       size_t len, int64_t deadline_ms)
{
    return agent_session_send_id(s, op, 0, status, body, len, deadline_ms);
}

int agent_session_recv(struct agent_session *s, struct session_msg *m, size_t max_len,
                       int64_t deadline_ms)
{
    memset(m, 0, sizeof(*m));
    if (s->keys.rx_failed)
        return -EBADMSG;
    struct rpc_header h;
    uint8_t *payload = NULL;
    int rc = rpc_recv(s->fd, &h, &payload, max_len + SESSION_OVERHEAD, deadline_ms);
    if (rc == 0 && h.opcode != SESSION_OP_SEALED)
        rc = -EBADMSG;
    if (rc == 0)
        rc = session_open(&s->keys, payload, h.length, m);
    free(payload);
    if (rc < 0)
        s->keys.rx_failed = true;
    return rc;
}

void agent_session_close(struct agent_session *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    sodium_memzero(&s->keys, sizeof(s->keys));
}
