#include "handshake.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "identity.h"
#include "instance.h"
#include "net.h"
#include "rpc.h"

/* The instance secret (common/instance.h) is the handshake's key. */
_Static_assert(INSTANCE_SECRET_SIZE == HANDSHAKE_KEY_SIZE, "the instance secret is the handshake key");

static const char client_label[] = "adafs handshake v1 client";
static const char server_label[] = "adafs handshake v1 server";

/* The u32 at p (little-endian, as all of adafs' wire). */
static uint32_t get_u32(const uint8_t *p)
{
    struct rpc_reader r;
    rpc_reader_init(&r, p, 4);
    return rpc_get_u32(&r);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    struct rpc_writer w;
    rpc_writer_init(&w, p, 4);
    rpc_put_u32(&w, v);
}

/* getrandom(2) directly, not libsodium's generator: inside an LD_PRELOAD
 * interposer nothing may open files behind the application's back, and a
 * forked child must not share a pool with its parent. */
static int fresh_nonce(uint8_t nonce[HANDSHAKE_NONCE_SIZE])
{
    for (size_t got = 0; got < HANDSHAKE_NONCE_SIZE;) {
        ssize_t n = getrandom(nonce + got, HANDSHAKE_NONCE_SIZE - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        got += (size_t)n;
    }
    return 0;
}

/* No sodium_init(): HMAC-SHA256 and the helpers used here need no runtime
 * set-up, and libadafs runs inside applications (LD_PRELOAD), where
 * libsodium's initialisation (its random pool, allocator probes) has no
 * business. */
static void mac(const struct handshake *hs, const char *label,
                const uint8_t key[HANDSHAKE_KEY_SIZE], uint8_t out[HANDSHAKE_MAC_SIZE])
{
    crypto_auth_hmacsha256_state st;
    uint8_t bind[4];
    put_u32(bind, hs->bind);
    crypto_auth_hmacsha256_init(&st, key, HANDSHAKE_KEY_SIZE);
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label));
    crypto_auth_hmacsha256_update(&st, bind, sizeof(bind));
    crypto_auth_hmacsha256_update(&st, hs->server_nonce, HANDSHAKE_NONCE_SIZE);
    crypto_auth_hmacsha256_update(&st, hs->client_nonce, HANDSHAKE_NONCE_SIZE);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

int handshake_server_hello(struct handshake *hs, uint32_t bind, uint32_t flags,
                           uint8_t hello[HANDSHAKE_HELLO_SIZE])
{
    memset(hs, 0, sizeof(*hs));
    hs->bind = bind;
    hs->flags = flags & 0xffff;
    int rc = fresh_nonce(hs->server_nonce);
    if (rc < 0)
        return rc;
    put_u32(hello, HANDSHAKE_MAGIC);
    put_u32(hello + 4, HANDSHAKE_VERSION | hs->flags << 16);   /* u16 version, u16 flags */
    memcpy(hello + 8, hs->server_nonce, HANDSHAKE_NONCE_SIZE);
    return 0;
}

int handshake_identity_size(const uint8_t *msg, size_t got)
{
    if (got < 4)
        return 4;
    uint32_t len = get_u32(msg);
    return len == 0 || len > HANDSHAKE_CRED_MAX ? -EBADMSG : (int)(4 + len);
}

int handshake_identity_cred(const uint8_t *msg, size_t size, char cred[HANDSHAKE_CRED_MAX + 1])
{
    if (handshake_identity_size(msg, size) != (int)size || size <= 4)
        return -EBADMSG;
    if (memchr(msg + 4, '\0', size - 4))
        return -EBADMSG;
    memcpy(cred, msg + 4, size - 4);
    cred[size - 4] = '\0';
    return 0;
}

void handshake_identity_payload(const struct handshake *hs,
                                uint8_t out[HANDSHAKE_IDENTITY_PAYLOAD_SIZE])
{
    size_t label = sizeof(HANDSHAKE_IDENTITY_LABEL) - 1;
    memcpy(out, HANDSHAKE_IDENTITY_LABEL, label);
    put_u32(out + label, hs->bind);
    memcpy(out + label + 4, hs->server_nonce, HANDSHAKE_NONCE_SIZE);
    memcpy(out + label + 4 + HANDSHAKE_NONCE_SIZE, hs->client_nonce, HANDSHAKE_NONCE_SIZE);
}

void handshake_server_deny(uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    put_u32(answer, (uint32_t)-EACCES);
}

void handshake_server_refusal(int status, uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    memset(answer, 0, HANDSHAKE_ANSWER_SIZE);
    put_u32(answer, (uint32_t)status);
}

int handshake_server_answer(struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                            const uint8_t proof[HANDSHAKE_PROOF_SIZE],
                            uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    uint8_t want[HANDSHAKE_MAC_SIZE];
    memcpy(hs->client_nonce, proof, HANDSHAKE_NONCE_SIZE);
    mac(hs, client_label, key, want);
    if (sodium_memcmp(want, proof + HANDSHAKE_NONCE_SIZE, HANDSHAKE_MAC_SIZE) != 0) {
        handshake_server_refusal(-EACCES, answer);
        return -EACCES;
    }
    put_u32(answer, 0);
    mac(hs, server_label, key, answer + 4);
    return 0;
}

int handshake_client_proof(struct handshake *hs, uint32_t bind,
                           const uint8_t key[HANDSHAKE_KEY_SIZE],
                           const uint8_t hello[HANDSHAKE_HELLO_SIZE],
                           uint8_t proof[HANDSHAKE_PROOF_SIZE])
{
    memset(hs, 0, sizeof(*hs));
    if (get_u32(hello) != HANDSHAKE_MAGIC || (get_u32(hello + 4) & 0xffff) != HANDSHAKE_VERSION)
        return -EPROTO;
    hs->bind = bind;
    hs->flags = get_u32(hello + 4) >> 16;
    memcpy(hs->server_nonce, hello + 8, HANDSHAKE_NONCE_SIZE);
    int rc = fresh_nonce(hs->client_nonce);
    if (rc < 0)
        return rc;
    memcpy(proof, hs->client_nonce, HANDSHAKE_NONCE_SIZE);
    mac(hs, client_label, key, proof + HANDSHAKE_NONCE_SIZE);
    return 0;
}

int handshake_client_check(const struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                           const uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    int32_t status = (int32_t)get_u32(answer);
    if (status < 0)
        return status >= -4095 ? status : -EPROTO;
    if (status > 0)
        return -EPROTO;
    uint8_t want[HANDSHAKE_MAC_SIZE];
    mac(hs, server_label, key, want);
    return sodium_memcmp(want, answer + 4, HANDSHAKE_MAC_SIZE) == 0 ? 0 : -EPERM;
}

int handshake_client_denied(const struct handshake *hs, const uint8_t key[HANDSHAKE_KEY_SIZE],
                            const uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    uint8_t want[HANDSHAKE_MAC_SIZE];
    mac(hs, server_label, key, want);
    return (int32_t)get_u32(answer) == -EACCES &&
           sodium_memcmp(want, answer + 4, HANDSHAKE_MAC_SIZE) == 0;
}

/* The IDENTITY message for hs, after the PROOF: one write, so the server
 * has both in one round trip. 0, or -EACCES (munge gave no credential) or
 * the write's error. */
static int send_identity(int fd, const struct handshake *hs, int64_t deadline_ms,
                         char *why, size_t whylen)
{
    char *cred;
    int rc = identity_encode(hs, getenv(HANDSHAKE_ENV_MUNGE_SOCKET), &cred, why, whylen);
    if (rc < 0)
        return rc;
    size_t len = strlen(cred);
    uint8_t msg[HANDSHAKE_IDENTITY_MAX];
    if (len == 0 || len > HANDSHAKE_CRED_MAX) {
        snprintf(why, whylen, "munge's credential is %zu bytes, more than the %d the "
                 "handshake carries", len, HANDSHAKE_CRED_MAX);
        free(cred);
        return -EACCES;
    }
    put_u32(msg, (uint32_t)len);
    memcpy(msg + 4, cred, len);
    free(cred);
    return net_write_full(fd, msg, 4 + len, deadline_ms);
}

int handshake_client(int fd, uint32_t bind, const uint8_t key[HANDSHAKE_KEY_SIZE],
                     int64_t deadline_ms, const char *peer, char *err, size_t errlen)
{
    uint8_t hello[HANDSHAKE_HELLO_SIZE], proof[HANDSHAKE_PROOF_SIZE];
    uint8_t answer[HANDSHAKE_ANSWER_SIZE];
    struct handshake hs;
    const char *step = "reading its greeting";
    int rc = net_read_full(fd, hello, sizeof(hello), deadline_ms);
    if (rc == 0) {
        step = "checking its greeting";
        rc = handshake_client_proof(&hs, bind, key, hello, proof);
    }
    if (rc == 0) {
        step = "sending our proof";
        rc = net_write_full(fd, proof, sizeof(proof), deadline_ms);
    }
    char why[300] = "";
    if (rc == 0 && (hs.flags & HANDSHAKE_WANT_IDENTITY)) {
        step = "sending our identity";
        rc = send_identity(fd, &hs, deadline_ms, why, sizeof(why));
    }
    int denied = 0;
    if (rc == 0) {
        step = "reading its answer";
        rc = net_read_full(fd, answer, sizeof(answer), deadline_ms);
    }
    if (rc == 0) {
        step = NULL;
        rc = handshake_client_check(&hs, key, answer);
        denied = rc == -EACCES && handshake_client_denied(&hs, key, answer);
    }
    sodium_memzero(&hs, sizeof(hs));
    if (rc == -EACCES && *why)
        snprintf(err, errlen, "%s wants our uid proved by munge: %s", peer, why);
    else if (denied)
        snprintf(err, errlen, "%s refused access to uid %u: not the instance's owner nor "
                 "in its access group (or munge's credential was refused: see the "
                 "server's log)", peer, (unsigned)getuid());
    else if (rc == -EACCES)
        snprintf(err, errlen, "%s refused our proof of the instance's secret "
                 "(the instance file's secret is not this server's)", peer);
    else if (rc == -EPERM)
        snprintf(err, errlen, "%s did not prove it knows the instance's secret: "
                 "not this instance's server (another process on its address?)", peer);
    else if (rc == -EPROTO)
        snprintf(err, errlen, "%s does not speak the adafs handshake (version %d)", peer,
                 HANDSHAKE_VERSION);
    else if (rc < 0 && !step)
        snprintf(err, errlen, "%s refused the connection: %s", peer, strerror(-rc));
    else if (rc < 0)
        snprintf(err, errlen, "%s: handshake failed %s: %s", peer, step, strerror(-rc));
    return rc;
}
