/* libFuzzer target for agent_session's decoders: everything a peer of the
 * node agent can send before and after authenticating. The first input
 * byte picks what the rest is:
 *   0  the payload of a hello, sealed by slurmctld's user, as the agent takes it
 *      (in a hello for n1 whose MAC is zeros: the payload's decoding runs)
 *   1  the text of a reply, as the plugin takes it (hex, its MAC)
 *   2  a sealed message's bytes off the wire (must never open: no key), with
 *      each cipher
 *   3  a plaintext sealed with the session's key (the inner decoder)
 *   4  a body sealed and opened again (must come back the same), with each
 *      cipher
 *   5  a handshake frame as the agent receives it from a socket
 * Nothing may crash, read out of bounds or leak; what is accepted must
 * satisfy the checks the session promises. */
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_session.h"
#include "net.h"
#include "session_fake.h"

static struct session_auth plugin, agent;
static struct session_fake plugin_id, agent_id;

static void keys_for(struct session_keys *k)
{
    memset(k, 0, sizeof(*k));
    memset(k->tx, 0x11, sizeof(k->tx));
    memset(k->rx, 0x11, sizeof(k->rx));
}

/* The ciphers this CPU runs, each in turn (AES-256-GCM needs AES-NI). */
static int ncipher(void)
{
    return session_ciphers() & 1u << SESSION_CIPHER_AES256GCM ? 2 : 1;
}

static void take_hello(const uint8_t *data, size_t size)
{
    char *cred, err[256];
    struct session_handshake hs;
    if (plugin.seal(&plugin, data, size, 0, &cred, err, sizeof(err)) < 0)
        return;
    char *text = malloc(strlen(cred) + 70);
    sprintf(text, "n1 %064d %s", 0, cred);
    free(cred);
    cred = text;
    if (session_hello_take(&agent, "n1", 64030, cred, &hs, err, sizeof(err)) == 0) {
        if (strcmp(hs.node, "n1") != 0 || hs.peer_uid != 64030)
            abort();
        char *reply;
        struct session_keys k;
        if (session_reply_make(&agent, &hs, &reply, &k, err, sizeof(err)) == 0)
            free(reply);
    }
    free(cred);
}

static void take_reply(const uint8_t *data, size_t size)
{
    char *hello, err[256];
    struct session_handshake hs;
    struct session_keys k;
    if (session_hello_make(&plugin, "n1", &hs, &hello, err, sizeof(err)) < 0)
        return;
    free(hello);
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    if (session_reply_take(&plugin, &hs, text, &k, err, sizeof(err)) == 0)
        abort();   /* no reply holds without the hello's key */
    free(text);
}

static void open_wire(const uint8_t *data, size_t size)
{
    for (int c = 0; c < ncipher(); c++) {
        struct session_keys k;
        struct session_msg m;
        keys_for(&k);
        session_keys_use(&k, c);
        if (session_open(&k, data, size, &m) == 0)
            abort();   /* forged without the key */
    }
}

static void open_plain(const uint8_t *data, size_t size)
{
    struct session_keys k;
    struct session_msg m;
    keys_for(&k);
    uint8_t *box = malloc(size + crypto_secretbox_MACBYTES);
    uint8_t nonce[crypto_secretbox_NONCEBYTES] = { 0 };
    crypto_secretbox_easy(box, data, size, nonce, k.tx);
    int rc = session_open(&k, box, size + crypto_secretbox_MACBYTES, &m);
    if ((rc == 0) != (size >= SESSION_PLAIN_HEAD && data[2] == 0 && data[3] == 0))
        abort();
    if (rc == 0 && (m.len != size - SESSION_PLAIN_HEAD ||
                    (m.len && memcmp(m.body, data + SESSION_PLAIN_HEAD, m.len) != 0)))
        abort();
    free(m.plain);
    free(box);
}

static void round_trip_with(int cipher, const uint8_t *data, size_t size)
{
    struct session_keys a, b;
    struct session_msg m;
    keys_for(&a);
    keys_for(&b);
    session_keys_use(&a, cipher);
    session_keys_use(&b, cipher);
    uint16_t op = size >= 2 ? (uint16_t)(data[0] | data[1] << 8) : 0;
    uint8_t *sealed;
    size_t len;
    for (int i = 0; i < 2; i++) {
        if (session_seal(&a, op, -(int32_t)size, data, size, &sealed, &len) < 0)
            return;
        if (session_open(&b, sealed, len, &m) < 0 || m.op != op || m.status != -(int32_t)size ||
            m.len != size || (size && memcmp(m.body, data, size) != 0))
            abort();
        free(m.plain);
        free(sealed);
    }
}

static void round_trip(const uint8_t *data, size_t size)
{
    for (int c = 0; c < ncipher(); c++)
        round_trip_with(c, data, size);
}

static void frame(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return;
    if (write(sv[0], data, size) == (ssize_t)size) {
        close(sv[0]);
        char *cred = NULL;
        if (agent_session_recv_hello(sv[1], &cred, net_now_ms() + 1000) == 0 && !cred)
            abort();
        free(cred);
    } else {
        close(sv[0]);
    }
    close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!plugin.seal) {
        if (sodium_init() < 0)
            abort();
        session_fake_init(&plugin, &plugin_id, 64030);
        session_fake_init(&agent, &agent_id, 0);
    }
    session_fake_forget();
    switch (data[0] % 6) {
    case 0: take_hello(data + 1, size - 1); break;
    case 1: take_reply(data + 1, size - 1); break;
    case 2: open_wire(data + 1, size - 1); break;
    case 3: open_plain(data + 1, size - 1); break;
    case 4: round_trip(data + 1, size - 1); break;
    case 5: frame(data + 1, size - 1); break;
    }
    return 0;
}
