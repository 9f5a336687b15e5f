/* Unit tests of the handshake (handshake.h): both ends prove the secret,
 * and nothing a party without it can make up, record or reflect passes. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "handshake.h"
#include "tap.h"

static const uint8_t key[HANDSHAKE_KEY_SIZE] = "0123456789abcdef0123456789abcde";
static const uint8_t other_key[HANDSHAKE_KEY_SIZE] = "fedcba9876543210fedcba987654321";

static void put_status(uint8_t answer[HANDSHAKE_ANSWER_SIZE], int32_t status)
{
    for (int i = 0; i < 4; i++)
        answer[i] = (uint8_t)((uint32_t)status >> (8 * i));
}

int main(void)
{
    struct handshake srv, cli;
    uint8_t hello[HANDSHAKE_HELLO_SIZE], proof[HANDSHAKE_PROOF_SIZE];
    uint8_t answer[HANDSHAKE_ANSWER_SIZE], zero_mac[HANDSHAKE_MAC_SIZE] = { 0 };

    tap_is_int(handshake_server_hello(&srv, 3, 0, hello), 0, "the server greets");
    tap_ok(memcmp(hello, "ADFH\1\0\0\0", 8) == 0, "HELLO starts with the magic and version 1");
    tap_is_int(handshake_client_proof(&cli, 3, key, hello, proof), 0, "the client proves");
    tap_ok(!memmem(proof, sizeof(proof), key, sizeof(key)), "the proof does not carry the key");
    tap_is_int(handshake_server_answer(&srv, key, proof, answer), 0, "the server takes the proof");
    tap_is_int(handshake_client_check(&cli, key, answer), 0, "the client takes the server's");

    /* A client without the key. */
    handshake_server_hello(&srv, 3, 0, hello);
    handshake_client_proof(&cli, 3, other_key, hello, proof);
    tap_is_int(handshake_server_answer(&srv, key, proof, answer), -EACCES,
               "a proof made with another key: EACCES");
    tap_ok(answer[0] == (uint8_t)-EACCES && memcmp(answer + 4, zero_mac, sizeof(zero_mac)) == 0,
           "the refusal carries no MAC");
    tap_is_int(handshake_client_check(&cli, other_key, answer), -EACCES,
               "and the client learns it was refused");

    /* A listener without the key: it can only make up its answer. */
    handshake_server_hello(&srv, 3, 0, hello);
    handshake_client_proof(&cli, 3, key, hello, proof);
    put_status(answer, 0);
    memset(answer + 4, 0x42, HANDSHAKE_MAC_SIZE);
    tap_is_int(handshake_client_check(&cli, key, answer), -EPERM,
               "a success without a valid MAC: EPERM");
    memcpy(answer + 4, proof + HANDSHAKE_NONCE_SIZE, HANDSHAKE_MAC_SIZE);
    tap_is_int(handshake_client_check(&cli, key, answer), -EPERM,
               "the client's own MAC reflected back: EPERM");

    /* A recorded proof replayed to a server: its nonce is another. */
    struct handshake srv2;
    uint8_t hello2[HANDSHAKE_HELLO_SIZE];
    handshake_server_hello(&srv2, 3, 0, hello2);
    tap_ok(memcmp(hello + 8, hello2 + 8, HANDSHAKE_NONCE_SIZE) != 0, "each HELLO has a fresh nonce");
    tap_is_int(handshake_server_answer(&srv2, key, proof, answer), -EACCES,
               "a proof replayed to another handshake: EACCES");
    /* A proof for server 3 relayed to server 4 with server 4's nonce. */
    handshake_server_hello(&srv2, 4, 0, hello2);
    handshake_client_proof(&cli, 3, key, hello2, proof);
    tap_is_int(handshake_server_answer(&srv2, key, proof, answer), -EACCES,
               "a proof made for another server index: EACCES");

    /* Greetings and answers that are not the protocol's. */
    memcpy(hello2, "HTTP/1.1 200 OK\r\n", 17);
    tap_is_int(handshake_client_proof(&cli, 3, key, hello2, proof), -EPROTO, "a foreign greeting: EPROTO");
    handshake_server_hello(&srv2, 4, 0, hello2);
    hello2[4] = 2;
    tap_is_int(handshake_client_proof(&cli, 3, key, hello2, proof), -EPROTO, "another version: EPROTO");
    handshake_server_hello(&srv2, 4, 0, hello2);
    handshake_client_proof(&cli, 4, key, hello2, proof);
    handshake_server_refusal(-EUSERS, answer);
    tap_is_int(handshake_client_check(&cli, key, answer), -EUSERS, "a server that is full: EUSERS");
    put_status(answer, 7);
    tap_is_int(handshake_client_check(&cli, key, answer), -EPROTO, "a positive status: EPROTO");
    put_status(answer, INT_MIN);
    tap_is_int(handshake_client_check(&cli, key, answer), -EPROTO, "a status that is no errno: EPROTO");

    /* A server several users share asks for an IDENTITY (handshake.h). */
    handshake_server_hello(&srv, 5, HANDSHAKE_WANT_IDENTITY, hello);
    handshake_client_proof(&cli, 5, key, hello, proof);
    tap_ok(cli.flags == HANDSHAKE_WANT_IDENTITY, "the client sees the server wants its identity");
    tap_is_int(handshake_server_answer(&srv, key, proof, answer), 0, "the version check ignores the flags");
    uint8_t mine[HANDSHAKE_IDENTITY_PAYLOAD_SIZE], theirs[HANDSHAKE_IDENTITY_PAYLOAD_SIZE];
    handshake_identity_payload(&cli, mine);
    handshake_identity_payload(&srv, theirs);
    tap_ok(memcmp(mine, theirs, sizeof(mine)) == 0, "both ends make the same identity payload");
    handshake_server_hello(&srv2, 5, HANDSHAKE_WANT_IDENTITY, hello2);
    handshake_identity_payload(&srv2, theirs);
    tap_ok(memcmp(mine, theirs, sizeof(mine)) != 0, "another connection's payload differs");
    handshake_server_deny(answer);
    tap_is_int(handshake_client_check(&cli, key, answer), -EACCES, "an identity refused: EACCES");
    tap_ok(handshake_client_denied(&cli, key, answer), "with the server's MAC: the secret was taken");
    handshake_server_refusal(-EACCES, answer);
    tap_ok(!handshake_client_denied(&cli, key, answer), "a refusal without it is a wrong secret");
    uint8_t msg[HANDSHAKE_IDENTITY_MAX] = { 5, 0, 0, 0, 'M', 'U', 'N', 'G', 'E' };
    char cred[HANDSHAKE_CRED_MAX + 1];
    tap_is_int(handshake_identity_size(msg, 2), 4, "IDENTITY: its length first");
    tap_is_int(handshake_identity_size(msg, 4), 9, "then the whole message");
    tap_is_int(handshake_identity_cred(msg, 9, cred), 0, "whose credential is taken");
    tap_ok(strcmp(cred, "MUNGE") == 0, "as the string sent");
    msg[6] = 0;
    tap_is_int(handshake_identity_cred(msg, 9, cred), -EBADMSG, "a NUL in it: EBADMSG");
    put_status(msg, 0);
    tap_is_int(handshake_identity_size(msg, 4), -EBADMSG, "an empty credential: EBADMSG");
    put_status(msg, HANDSHAKE_CRED_MAX + 1);
    tap_is_int(handshake_identity_size(msg, 4), -EBADMSG, "one too long: EBADMSG");
    return tap_done();
}
