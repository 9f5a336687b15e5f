/* agent_session_seal: the messages of a session once its keys are made
 * (agent_session.h): the cipher chosen (XSalsa20-Poly1305, or AES-256-GCM
 * where both sides' CPUs have it), each message sealed under the
 * direction's key with its counter as nonce, and opened only in order. The
 * handshake that makes the keys, and the session over a socket:
 * agent_session.c. */
#include "agent_session.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

_Static_assert(crypto_secretbox_MACBYTES + SESSION_PLAIN_HEAD == SESSION_OVERHEAD &&
               crypto_aead_aes256gcm_ABYTES + SESSION_PLAIN_HEAD == SESSION_OVERHEAD,
               "sealing overhead");
_Static_assert(sizeof(crypto_aead_aes256gcm_state) == SESSION_AES_STATE &&
               _Alignof(crypto_aead_aes256gcm_state) <= 16, "AES-256-GCM state");

/* A CPU's features do not change: asked once, by whichever thread is
 * first (the plugin's link threads open sessions at once). */
static pthread_once_t aes_once = PTHREAD_ONCE_INIT;
static bool aes_available;

static void ask_aes(void)
{
    aes_available = sodium_init() >= 0 && crypto_aead_aes256gcm_is_available();
}

uint32_t session_ciphers(void)
{
    pthread_once(&aes_once, ask_aes);
    return 1u << SESSION_CIPHER_SECRETBOX | (aes_available ? 1u << SESSION_CIPHER_AES256GCM : 0);
}

int session_keys_use(struct session_keys *k, int cipher)
{
    if (cipher == SESSION_CIPHER_SECRETBOX) {
        sodium_memzero(k->tx_aes, sizeof(k->tx_aes));
        sodium_memzero(k->rx_aes, sizeof(k->rx_aes));
    } else if (cipher != SESSION_CIPHER_AES256GCM ||
               !(session_ciphers() & 1u << SESSION_CIPHER_AES256GCM)) {
        return -ENOTSUP;
    } else {
        crypto_aead_aes256gcm_beforenm((crypto_aead_aes256gcm_state *)k->tx_aes, k->tx);
        crypto_aead_aes256gcm_beforenm((crypto_aead_aes256gcm_state *)k->rx_aes, k->rx);
    }
    k->cipher = cipher;
    return 0;
}

/* The counter as nonce: little-endian in the first 8 bytes of the
 * cipher's nonce (24 bytes for secretbox, 12 for GCM), the rest 0. */
static void nonce_of(uint64_t seq, uint8_t nonce[crypto_secretbox_NONCEBYTES])
{
    memset(nonce, 0, crypto_secretbox_NONCEBYTES);
    for (int i = 0; i < 8; i++)
        nonce[i] = (uint8_t)(seq >> (8 * i));
}

int session_seal_in_place(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                          uint8_t *buf, size_t len)
{
    if (k->tx_failed)
        return -EPIPE;
    if (len > RPC_MAX_PAYLOAD - SESSION_OVERHEAD)
        return -EMSGSIZE;
    size_t plain_len = SESSION_PLAIN_HEAD + len;
    /* Encrypted in place: the plaintext lies where the ciphertext goes,
     * after the MAC. */
    uint8_t *plain = buf + crypto_secretbox_MACBYTES;
    struct rpc_writer w;
    rpc_writer_init(&w, plain, SESSION_PLAIN_HEAD);
    rpc_put_u32(&w, op);
    rpc_put_u32(&w, (uint32_t)status);
    rpc_put_u32(&w, id);
    uint8_t nonce[crypto_secretbox_NONCEBYTES];
    nonce_of(k->tx_seq++, nonce);
    if (k->cipher == SESSION_CIPHER_AES256GCM)
        crypto_aead_aes256gcm_encrypt_detached_afternm(
            plain, buf, NULL, plain, plain_len, NULL, 0, NULL, nonce,
            (const crypto_aead_aes256gcm_state *)k->tx_aes);
    else
        crypto_secretbox_detached(plain, buf, plain, plain_len, nonce, k->tx);
    return 0;
}

int session_seal_id(struct session_keys *k, uint16_t op, uint32_t id, int32_t status,
                    const void *body, size_t len, uint8_t **out, size_t *outlen)
{
    *out = NULL;
    if (k->tx_failed)
        return -EPIPE;
    if (len > RPC_MAX_PAYLOAD - SESSION_OVERHEAD)
        return -EMSGSIZE;
    uint8_t *buf = malloc(SESSION_OVERHEAD + len);
    if (!buf)
        return -ENOMEM;
    if (len)
        memcpy(buf + SESSION_OVERHEAD, body, len);
    int rc = session_seal_in_place(k, op, id, status, buf, len);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *outlen = SESSION_OVERHEAD + len;
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

int session_open_in_place(struct session_keys *k, uint8_t *buf, size_t len, struct session_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (k->rx_failed)
        return -EBADMSG;
    if (len < SESSION_OVERHEAD) {
        k->rx_failed = true;
        return -EBADMSG;
    }
    size_t plain_len = len - crypto_secretbox_MACBYTES;
    uint8_t *plain = buf + crypto_secretbox_MACBYTES;
    uint8_t nonce[crypto_secretbox_NONCEBYTES];
    nonce_of(k->rx_seq, nonce);
    int opened = k->cipher == SESSION_CIPHER_AES256GCM
                     ? crypto_aead_aes256gcm_decrypt_detached_afternm(
                           plain, NULL, plain, plain_len, buf, NULL, 0, nonce,
                           (const crypto_aead_aes256gcm_state *)k->rx_aes)
                     : crypto_secretbox_open_detached(plain, plain, buf, plain_len, nonce, k->rx);
    if (opened != 0 || session_plain_decode(plain, plain_len, m) < 0) {
        memset(m, 0, sizeof(*m));
        k->rx_failed = true;
        return -EBADMSG;
    }
    k->rx_seq++;
    return 0;
}

int session_open(struct session_keys *k, const uint8_t *in, size_t len, struct session_msg *m)
{
    memset(m, 0, sizeof(*m));
    if (k->rx_failed)
        return -EBADMSG;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, in, len);
    int rc = session_open_in_place(k, copy, len, m);
    if (rc < 0) {
        free(copy);
        return rc;
    }
    m->plain = copy;
    return 0;
}
