/* agent_session: the handshake (hellos, fan-outs, the agent's reply, the
 * keys derived from them) and the session over a socket (agent_session.h);
 * sealing and opening messages: agent_session_seal.c. */
#include "agent_session.h"

#include <errno.h>
#include <pthread.h>
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

/* The labels of the two MACs under a fan-out's key: a hello's MAC never
 * passes for a reply's. */
static const char HELLO_LABEL[] = "adafs agent hello";
static const char REPLY_LABEL[] = "adafs agent reply";

/* BLAKE2b-256 keyed with key over the label, then a and b (a of fixed
 * length, so the parts cannot be shifted into each other). */
static void mac_of(uint8_t out[32], const uint8_t key[32], const char *label, const void *a,
                   size_t alen, const void *b, size_t blen)
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, key, 32, 32);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label) + 1);
    crypto_generichash_update(&st, a, alen);
    crypto_generichash_update(&st, b, blen);
    crypto_generichash_final(&st, out, 32);
}

/* What the keys are bound to on the hello's side: the credential's sealed
 * payload (by its hash) and the node it was sent to. */
static void hello_hash_of(uint8_t out[32], const uint8_t cred_hash[32], const char *node)
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, cred_hash, 32);
    crypto_generichash_update(&st, (const uint8_t *)node, strlen(node));
    crypto_generichash_final(&st, out, 32);
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

/* Decodes a handshake payload of the given kind: a hello's (client nonce,
 * share and fan-out key) or a reply's (node, both nonces, agent share).
 * -EPROTO with why in err. */
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
    const char *node = kind == SESSION_KIND_REPLY ? rpc_get_str(&r) : "";
    get_raw(&r, what->client_nonce, SESSION_NONCE_BYTES);
    if (kind == SESSION_KIND_HELLO) {
        get_raw(&r, what->client_share, 32);
        get_raw(&r, what->key, SESSION_KEY_BYTES);
    } else {
        get_raw(&r, what->agent_nonce, SESSION_NONCE_BYTES);
        get_raw(&r, what->agent_share, 32);
    }
    /* A hello's offer; a reply's choice (one bit). */
    what->ciphers = rpc_get_u32(&r);
    if (!node || !rpc_reader_done(&r) || strlen(node) > SESSION_NODE_MAX)
        return fail(err, errlen, -EPROTO, "a malformed %s", kind_name[kind]);
    if (kind == SESSION_KIND_REPLY)
        memcpy(what->node, node, strlen(node) + 1);
    return 0;
}

static bool node_name_ok(const char *node)
{
    size_t len = strlen(node);
    return len > 0 && len <= SESSION_NODE_MAX && !strpbrk(node, " \t\r\n");
}

int session_fanout_make(const struct session_auth *a, struct session_fanout *f, char *err,
                        size_t errlen)
{
    memset(f, 0, sizeof(*f));
    if (sodium_init() < 0)
        return fail(err, errlen, -ENOMEM, "libsodium does not initialise");
    randombytes_buf(f->client_nonce, sizeof(f->client_nonce));
    crypto_kx_keypair(f->client_share, f->own_secret);
    randombytes_buf(f->key, sizeof(f->key));
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, SESSION_MAGIC);
    rpc_put_u32(&w, SESSION_VERSION);
    rpc_put_u32(&w, SESSION_KIND_HELLO);
    rpc_put_raw(&w, f->client_nonce, SESSION_NONCE_BYTES);
    rpc_put_raw(&w, f->client_share, 32);
    rpc_put_raw(&w, f->key, SESSION_KEY_BYTES);
    rpc_put_u32(&w, session_ciphers());
    int rc = rpc_writer_ok(&w) ? 0 : fail(err, errlen, -ENOMEM, "out of memory");
    if (rc == 0) {
        crypto_generichash(f->cred_hash, 32, w.data, w.len, NULL, 0);
        rc = a->seal(a, w.data, w.len, 0, &f->cred, err, errlen);
        sodium_memzero(w.data, w.len);   /* it holds the key */
    }
    rpc_writer_free(&w);
    if (rc < 0)
        session_fanout_clear(f);
    return rc;
}

int session_fanout_hello(const struct session_fanout *f, const char *node,
                         struct session_handshake *hs, char **hello, char *err, size_t errlen)
{
    *hello = NULL;
    memset(hs, 0, sizeof(*hs));
    if (!f->cred)
        return fail(err, errlen, -EINVAL, "no fan-out credential");
    if (!node_name_ok(node))
        return fail(err, errlen, -EINVAL, "node name \"%.80s\" is empty, longer than %d or holds "
                    "a blank", node, SESSION_NODE_MAX);
    size_t nlen = strlen(node), clen = strlen(f->cred);
    char *text = malloc(nlen + 1 + 64 + 1 + clen + 1);
    if (!text)
        return fail(err, errlen, -ENOMEM, "out of memory");
    memcpy(hs->node, node, nlen + 1);
    memcpy(hs->client_nonce, f->client_nonce, SESSION_NONCE_BYTES);
    memcpy(hs->client_share, f->client_share, 32);
    memcpy(hs->own_secret, f->own_secret, 32);
    memcpy(hs->key, f->key, SESSION_KEY_BYTES);
    hello_hash_of(hs->hello_hash, f->cred_hash, node);
    uint8_t mac[32];
    mac_of(mac, f->key, HELLO_LABEL, f->cred_hash, 32, node, nlen);
    memcpy(text, node, nlen);
    text[nlen] = ' ';
    sodium_bin2hex(text + nlen + 1, 65, mac, sizeof(mac));
    text[nlen + 65] = ' ';
    memcpy(text + nlen + 66, f->cred, clen + 1);
    *hello = text;
    return 0;
}

void session_fanout_clear(struct session_fanout *f)
{
    free(f->cred);
    sodium_memzero(f, sizeof(*f));
}

int session_hello_make(const struct session_auth *a, const char *node, struct session_handshake *hs,
                       char **cred, char *err, size_t errlen)
{
    *cred = NULL;
    memset(hs, 0, sizeof(*hs));
    if (!node_name_ok(node))
        return fail(err, errlen, -EINVAL, "node name \"%.80s\" is empty, longer than %d or holds "
                    "a blank", node, SESSION_NODE_MAX);
    struct session_fanout f;
    int rc = session_fanout_make(a, &f, err, errlen);
    if (rc == 0)
        rc = session_fanout_hello(&f, node, hs, cred, err, errlen);
    session_fanout_clear(&f);
    return rc;
}

/* --- the hellos this process took --------------------------------------
 * munge's replay cache cannot refuse a hello sent twice: one credential
 * serves every node of a fan-out, and nodes may share a munged (simulated
 * agents, several agents per host). So the agent refuses a (fan-out nonce,
 * node) it took before, for as long as the credential could still open. */

#define TAKEN_BUCKETS 4096
struct taken {
    uint8_t tag[16];
    int64_t until;
    struct taken *bucket_next, *fifo_next;
};
static pthread_mutex_t taken_lock = PTHREAD_MUTEX_INITIALIZER;
static struct taken *taken_buckets[TAKEN_BUCKETS], *taken_head, *taken_tail;

static int remember_hello(const uint8_t nonce[SESSION_NONCE_BYTES], const char *node)
{
    uint8_t tag[16];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof(tag));
    crypto_generichash_update(&st, nonce, SESSION_NONCE_BYTES);
    crypto_generichash_update(&st, (const uint8_t *)node, strlen(node));
    crypto_generichash_final(&st, tag, sizeof(tag));
    size_t b = ((size_t)tag[0] << 8 | tag[1]) % TAKEN_BUCKETS;
    int64_t now = net_now_ms();
    int rc = 0;
    pthread_mutex_lock(&taken_lock);
    /* Entries expire in the order they were made: drop the old ones. */
    while (taken_head && taken_head->until <= now) {
        struct taken *t = taken_head;
        size_t tb = ((size_t)t->tag[0] << 8 | t->tag[1]) % TAKEN_BUCKETS;
        for (struct taken **q = &taken_buckets[tb]; *q; q = &(*q)->bucket_next)
            if (*q == t) {
                *q = t->bucket_next;
                break;
            }
        taken_head = t->fifo_next;
        if (!taken_head)
            taken_tail = NULL;
        free(t);
    }
    for (struct taken *t = taken_buckets[b]; t && rc == 0; t = t->bucket_next)
        if (sodium_memcmp(t->tag, tag, sizeof(tag)) == 0)
            rc = -EEXIST;
    struct taken *t = rc == 0 ? calloc(1, sizeof(*t)) : NULL;
    if (rc == 0 && !t)
        rc = -ENOMEM;
    if (t) {
        memcpy(t->tag, tag, sizeof(tag));
        t->until = now + SESSION_HELLO_MEMORY_S * 1000LL;
        t->bucket_next = taken_buckets[b];
        taken_buckets[b] = t;
        if (taken_tail)
            taken_tail->fifo_next = t;
        else
            taken_head = t;
        taken_tail = t;
    }
    pthread_mutex_unlock(&taken_lock);
    return rc;
}

int session_hello_take(const struct session_auth *a, const char *node, uid_t trusted,
                       const char *text, struct session_handshake *hs, char *err, size_t errlen)
{
    memset(hs, 0, sizeof(*hs));
    if (sodium_init() < 0)
        return fail(err, errlen, -ENOMEM, "libsodium does not initialise");
    /* "node MAC credential" */
    const char *blank = strchr(text, ' ');
    size_t nlen = blank ? (size_t)(blank - text) : 0;
    uint8_t mac[32];
    size_t got = 0;
    if (!blank || nlen == 0 || nlen > SESSION_NODE_MAX || strnlen(blank + 1, 66) < 66 ||
        blank[65] != ' ' ||
        sodium_hex2bin(mac, sizeof(mac), blank + 1, 64, NULL, &got, NULL) != 0 ||
        got != sizeof(mac))
        return fail(err, errlen, -EPROTO, "a malformed hello (not a node, a MAC and a credential)");
    memcpy(hs->node, text, nlen);
    hs->node[nlen] = '\0';
    void *payload = NULL;
    size_t len = 0;
    uid_t uid = (uid_t)-1;
    /* -EALREADY: it opened, but this munged opened it before (for another
     * node of the fan-out, or replayed): remember_hello decides. */
    int rc = a->open(a, blank + 66, &payload, &len, &uid, err, errlen);
    if (rc < 0 && rc != -EALREADY)
        return rc;
    rc = 0;
    if (uid != trusted && uid != 0)
        rc = fail(err, errlen, -EACCES, "uid %u may not use the agent (only uid %u and root)",
                  (unsigned)uid, (unsigned)trusted);
    else if ((rc = get_handshake(payload, len, SESSION_KIND_HELLO, hs, err, errlen)) == 0 &&
             strcmp(hs->node, node) != 0)
        rc = fail(err, errlen, -EACCES, "the hello is for node %s, this is %s", hs->node, node);
    if (rc == 0) {
        uint8_t cred_hash[32], want[32];
        crypto_generichash(cred_hash, 32, payload, len, NULL, 0);
        mac_of(want, hs->key, HELLO_LABEL, cred_hash, 32, hs->node, nlen);
        if (sodium_memcmp(want, mac, sizeof(mac)) != 0)
            rc = fail(err, errlen, -EACCES, "the hello's MAC for node %s is not its credential's",
                      node);
        else
            hello_hash_of(hs->hello_hash, cred_hash, hs->node);
    }
    if (rc == 0 && (rc = remember_hello(hs->client_nonce, hs->node)) < 0)
        rc = rc == -ENOMEM ? fail(err, errlen, rc, "out of memory")
                           : fail(err, errlen, -EACCES, "a replayed hello (this agent took it "
                                  "before)");
    if (rc == 0)
        hs->peer_uid = uid;
    else
        session_handshake_clear(hs);
    if (payload)
        sodium_memzero(payload, len);
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

int session_reply_make(const struct session_auth *a, struct session_handshake *hs, char **reply,
                       struct session_keys *keys, char *err, size_t errlen)
{
    (void)a;   /* the fan-out's key proves the agent: no credential */
    *reply = NULL;
    memset(keys, 0, sizeof(*keys));
    randombytes_buf(hs->agent_nonce, sizeof(hs->agent_nonce));
    crypto_kx_keypair(hs->agent_share, hs->own_secret);
    uint8_t rx[32], tx[32], reply_hash[32], mac[32];
    if (crypto_kx_server_session_keys(rx, tx, hs->agent_share, hs->own_secret, hs->client_share) != 0) {
        session_handshake_clear(hs);
        return fail(err, errlen, -EACCES, "the client's key share is not a usable X25519 key");
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, SESSION_MAGIC);
    rpc_put_u32(&w, SESSION_VERSION);
    rpc_put_u32(&w, SESSION_KIND_REPLY);
    rpc_put_str(&w, hs->node);
    rpc_put_raw(&w, hs->client_nonce, SESSION_NONCE_BYTES);
    rpc_put_raw(&w, hs->agent_nonce, SESSION_NONCE_BYTES);
    rpc_put_raw(&w, hs->agent_share, 32);
    int cipher = hs->ciphers & session_ciphers() & (1u << SESSION_CIPHER_AES256GCM)
                     ? SESSION_CIPHER_AES256GCM : SESSION_CIPHER_SECRETBOX;
    rpc_put_u32(&w, 1u << cipher);
    if (rpc_writer_ok(&w)) {
        mac_of(mac, hs->key, REPLY_LABEL, hs->hello_hash, 32, w.data, w.len);
        rpc_put_raw(&w, mac, sizeof(mac));
    }
    int rc = 0;
    char *text = rpc_writer_ok(&w) ? malloc(2 * w.len + 1) : NULL;
    if (!text) {
        rc = fail(err, errlen, -ENOMEM, "out of memory");
    } else {
        sodium_bin2hex(text, 2 * w.len + 1, w.data, w.len);
        crypto_generichash(reply_hash, 32, w.data, w.len, NULL, 0);
        derive(rx, tx, hs->hello_hash, reply_hash, keys->rx, keys->tx);
        session_keys_use(keys, cipher);
        *reply = text;
    }
    rpc_writer_free(&w);
    sodium_memzero(rx, sizeof(rx));
    sodium_memzero(tx, sizeof(tx));
    session_handshake_clear(hs);
    return rc;
}

int session_reply_take(const struct session_auth *a, struct session_handshake *hs, const char *text,
                       struct session_keys *keys, char *err, size_t errlen)
{
    (void)a;
    memset(keys, 0, sizeof(*keys));
    size_t hexlen = strnlen(text, 2 * SESSION_HELLO_MAX + 1), len = 0;
    uint8_t *buf = hexlen % 2 == 0 && hexlen >= 2 * (12 + 32) && hexlen <= 2 * SESSION_HELLO_MAX
                       ? malloc(hexlen / 2) : NULL;
    int rc = 0;
    if (!buf || sodium_hex2bin(buf, hexlen / 2, text, hexlen, NULL, &len, NULL) != 0 ||
        len != hexlen / 2) {
        free(buf);
        session_handshake_clear(hs);
        return fail(err, errlen, -EACCES, "the reply is not an adafs agent's (malformed)");
    }
    size_t plen = len - 32;
    uint8_t want[32];
    mac_of(want, hs->key, REPLY_LABEL, hs->hello_hash, 32, buf, plen);
    struct session_handshake got;
    memset(&got, 0, sizeof(got));
    if (sodium_memcmp(want, buf + plen, sizeof(want)) != 0)
        rc = fail(err, errlen, -EACCES, "the reply does not prove the hello's key: not root's "
                  "agent, or an answer to another hello");
    if (rc == 0 && get_handshake(buf, plen, SESSION_KIND_REPLY, &got, err, errlen) < 0)
        rc = -EACCES;
    if (rc == 0 && strcmp(got.node, hs->node) != 0)
        rc = fail(err, errlen, -EACCES, "the reply is from the agent of node %s, not %s", got.node,
                  hs->node);
    if (rc == 0 && sodium_memcmp(got.client_nonce, hs->client_nonce, SESSION_NONCE_BYTES) != 0)
        rc = fail(err, errlen, -EACCES, "the reply answers another hello (its nonce is not ours)");
    int cipher = got.ciphers == 1u << SESSION_CIPHER_AES256GCM ? SESSION_CIPHER_AES256GCM
                 : got.ciphers == 1u << SESSION_CIPHER_SECRETBOX ? SESSION_CIPHER_SECRETBOX : -1;
    if (rc == 0 && (cipher < 0 || !(session_ciphers() & got.ciphers)))
        rc = fail(err, errlen, -EACCES, "the agent chose cipher mask 0x%x, not one this side "
                  "offered (0x%x)", got.ciphers, session_ciphers());
    uint8_t rx[32], tx[32], reply_hash[32];
    if (rc == 0 &&
        crypto_kx_client_session_keys(rx, tx, hs->client_share, hs->own_secret, got.agent_share) != 0)
        rc = fail(err, errlen, -EACCES, "the agent's key share is not a usable X25519 key");
    if (rc == 0) {
        crypto_generichash(reply_hash, 32, buf, len, NULL, 0);
        derive(tx, rx, hs->hello_hash, reply_hash, keys->tx, keys->rx);
        session_keys_use(keys, cipher);
        sodium_memzero(rx, sizeof(rx));
        sodium_memzero(tx, sizeof(tx));
    }
    free(buf);
    session_handshake_clear(hs);
    return rc;
}

void session_handshake_clear(struct session_handshake *hs)
{
    sodium_memzero(hs->own_secret, sizeof(hs->own_secret));
    sodium_memzero(hs->key, sizeof(hs->key));
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

int agent_session_send_in_place(struct agent_session *s, uint16_t op, int32_t status, uint8_t *buf,
                                size_t len, int64_t deadline_ms)
{
    int rc = session_seal_in_place(&s->keys, op, 0, status, buf, len);
    if (rc < 0)
        return rc;
    struct rpc_header h = { .opcode = SESSION_OP_SEALED };
    rc = rpc_send(s->fd, &h, buf, SESSION_OVERHEAD + len, deadline_ms);
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
        rc = session_open_in_place(&s->keys, payload, h.length, m);
    if (rc < 0) {
        free(payload);
        s->keys.rx_failed = true;
        return rc;
    }
    m->plain = payload;   /* the message was opened where it arrived */
    return 0;
}

void agent_session_close(struct agent_session *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    sodium_memzero(&s->keys, sizeof(s->keys));
}
