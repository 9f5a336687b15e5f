/* libFuzzer target for the handshake (handshake.h): whatever a peer sends
 * as HELLO, PROOF, IDENTITY or ANSWER, nothing crashes or reads out of
 * bounds, and nothing made up without the key is ever taken: a server
 * accepts no fuzzed proof and a client no fuzzed answer claiming success
 * (nor takes a fuzzed refusal for the server's). An IDENTITY is framed as
 * the gate reads it, a byte count at a time: the size never exceeds
 * HANDSHAKE_IDENTITY_MAX and the credential comes out as the string sent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handshake.h"

static const uint8_t key[HANDSHAKE_KEY_SIZE] = "fuzzing key, 32 bytes long.....";

/* The gate's reading of an IDENTITY from the whole input. */
static void identity(const uint8_t *data, size_t size)
{
    uint8_t msg[HANDSHAKE_IDENTITY_MAX];
    size_t got = 0;
    for (;;) {
        int need = handshake_identity_size(msg, got);
        if (need < 0)
            return;
        if (need > HANDSHAKE_IDENTITY_MAX || (size_t)need < got)
            abort();
        if (need > 4 && got == (size_t)need)
            break;
        size_t take = (size_t)need - got;
        if (take > size)
            return;
        memcpy(msg + got, data, take);
        data += take, size -= take, got += take;
    }
    char cred[HANDSHAKE_CRED_MAX + 1];
    if (handshake_identity_cred(msg, got, cred) == 0 &&
        (strlen(cred) != got - 4 || memcmp(cred, msg + 4, got - 4) != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    identity(data, size);
    uint8_t hello[HANDSHAKE_HELLO_SIZE] = { 0 }, proof[HANDSHAKE_PROOF_SIZE] = { 0 };
    uint8_t answer[HANDSHAKE_ANSWER_SIZE] = { 0 };
    /* The input is a HELLO, then an ANSWER, then a PROOF, each as far as
     * it goes (zeros after). */
    size_t n = size < sizeof(hello) ? size : sizeof(hello);
    memcpy(hello, data, n);
    data += n, size -= n;
    n = size < sizeof(answer) ? size : sizeof(answer);
    memcpy(answer, data, n);
    data += n, size -= n;
    n = size < sizeof(proof) ? size : sizeof(proof);
    memcpy(proof, data, n);

    struct handshake cli, srv;
    uint8_t my_proof[HANDSHAKE_PROOF_SIZE], my_hello[HANDSHAKE_HELLO_SIZE];
    if (handshake_client_proof(&cli, 1, key, hello, my_proof) == 0 &&
        (handshake_client_check(&cli, key, answer) == 0 ||
         handshake_client_denied(&cli, key, answer)))
        abort();   /* a made-up answer passed for the server's proof */
    uint8_t out[HANDSHAKE_ANSWER_SIZE];
    if (handshake_server_hello(&srv, 1, 0, my_hello) == 0 &&
        handshake_server_answer(&srv, key, proof, out) == 0)
        abort();   /* a made-up proof passed for the client's */
    return 0;
}
