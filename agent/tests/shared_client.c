/* shared_client: plays the client's side of the handshake (handshake.h)
 * against server 0 of an instance shared by several users (adafsd
 * --owner), the wrong way on purpose, for test_fs_shared.sh. Run as the
 * user to pretend to be:
 *
 *   shared_client INSTANCE_FILE MODE
 *
 * MODE: honest (a credential of ours for this connection), replay (the
 * credential of an admitted connection sent again on a new one), reuse (a
 * credential made for one connection, never sent there, sent on another),
 * forged (a made-up credential), tampered (a real one with a character
 * changed), purpose (a real one of ours for this connection's nonces but
 * another label), expired (a real one of ours, 1 s to live, sent after
 * 3 s), local (over the server's Unix socket, no credential), none (TCP,
 * the PROOF and no IDENTITY: the server drops us after its deadline).
 * Prints what the server answered to the last connection: "admitted",
 * "denied" (EACCES with the server's MAC: it took our secret, not our
 * identity), "refused: ERR" or "hung up". Exit 0 when it could tell.
 *
 *   shared_client INSTANCE_FILE hold N SECONDS
 *
 * opens N connections over the Unix socket, prints how many were admitted
 * ("admitted A of N"), and holds them open for SECONDS: one user taking
 * every place of the server it can.
 *
 *   shared_client INSTANCE_FILE partial N MIB SECONDS
 *
 * on each of N connections, a PING announcing MIB + 2 MiB of payload and
 * as much of MIB MiB as the server takes within 3 s, then holds them for
 * SECONDS: requests sent in part, to make the server hold memory. Prints
 * the MiB each connection got through ("sent A B ..."). */
#include <errno.h>
#include <munge.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "handshake.h"
#include "identity.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc.h"

static struct instance inst;
static const char *munge_socket;

/* A connection to server 0: TCP, or its Unix socket (whoever listens: the
 * server runs as the owner, and net_connect_abstract would check that). */
static int dial(int local)
{
    const struct instance_server *s = &inst.servers[0];
    char err[400];
    if (!local) {
        int fd = net_connect(s->host, s->port, 2000, err, sizeof(err));
        if (fd < 0)
            fprintf(stderr, "shared_client: %s\n", err);
        return fd;
    }
    char name[INSTANCE_LOCAL_NAME_MAX];
    instance_local_name(s->host, s->port, name);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t len = strlen(name);
    memcpy(addr.sun_path + 1, name, len);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) < 0) {
        perror("shared_client: the server's Unix socket");
        return -1;
    }
    return fd;
}

/* Reads HELLO and makes our PROOF for it. */
static int start(int fd, struct handshake *hs, uint8_t proof[HANDSHAKE_PROOF_SIZE])
{
    uint8_t hello[HANDSHAKE_HELLO_SIZE];
    int rc = net_read_full(fd, hello, sizeof(hello), net_now_ms() + 3000);
    return rc < 0 ? rc : handshake_client_proof(hs, 0, inst.secret, hello, proof);
}

static char *credential(const struct handshake *hs)
{
    char *cred, err[300];
    if (identity_encode(hs, munge_socket, &cred, err, sizeof(err)) < 0) {
        fprintf(stderr, "shared_client: %s\n", err);
        exit(1);
    }
    return cred;
}

/* A credential of ours with any payload and time to live. */
static char *credential_of(const void *payload, int len, int ttl)
{
    munge_ctx_t ctx = munge_ctx_create();
    char *cred = NULL;
    if (munge_socket)
        munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket);
    if (ttl)
        munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl);
    if (munge_encode(&cred, ctx, payload, len) != EMUNGE_SUCCESS) {
        fprintf(stderr, "shared_client: munge: %s\n", munge_ctx_strerror(ctx));
        exit(1);
    }
    munge_ctx_destroy(ctx);
    return cred;
}

/* Sends PROOF and (cred not NULL) IDENTITY; returns the server's answer
 * (0: admitted, 1: denied with its MAC, else -errno; -EPIPE: hung up). */
static int answer_of(int fd, const struct handshake *hs, const uint8_t proof[HANDSHAKE_PROOF_SIZE],
                     const char *cred)
{
    int64_t deadline = net_now_ms() + 8000;
    if (net_write_full(fd, proof, HANDSHAKE_PROOF_SIZE, deadline) < 0)
        return -EPIPE;
    if (cred) {
        uint8_t msg[4 + HANDSHAKE_CRED_MAX];
        uint32_t len = (uint32_t)strlen(cred);
        memcpy(msg, &len, 4);   /* little-endian hosts only, as the tests run */
        memcpy(msg + 4, cred, len);
        if (net_write_full(fd, msg, 4 + len, deadline) < 0)
            return -EPIPE;
    }
    uint8_t answer[HANDSHAKE_ANSWER_SIZE];
    if (net_read_full(fd, answer, sizeof(answer), deadline) < 0)
        return -EPIPE;
    int rc = handshake_client_check(hs, inst.secret, answer);
    return rc == 0 ? 0 : handshake_client_denied(hs, inst.secret, answer) ? 1 : rc;
}

/* N connections over the Unix socket held for secs seconds. */
static int hold(int n, int secs)
{
    int admitted = 0;
    for (int i = 0; i < n; i++) {
        struct handshake hs;
        uint8_t proof[HANDSHAKE_PROOF_SIZE];
        int fd = dial(1);
        if (fd < 0 || start(fd, &hs, proof) < 0)
            return 1;
        if (answer_of(fd, &hs, proof, NULL) == 0)
            admitted++;   /* kept open */
        else
            close(fd);
    }
    printf("admitted %d of %d\n", admitted, n);
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}

/* N connections, each with a request sent in part (see above). */
static int partial(int n, int mib, int secs)
{
    static uint8_t zeros[1 << 16];
    int fds[64];
    printf("sent");
    for (int i = 0; i < n && i < 64; i++) {
        struct handshake hs;
        uint8_t proof[HANDSHAKE_PROOF_SIZE];
        fds[i] = dial(1);
        if (fds[i] < 0 || start(fds[i], &hs, proof) < 0 || answer_of(fds[i], &hs, proof, NULL) != 0)
            return 1;
        uint8_t hdr[RPC_HEADER_SIZE];
        struct rpc_header h = { .opcode = FS_PING, .id = 1,
                                .length = ((uint32_t)mib + 2) << 20 };
        rpc_header_encode(&h, hdr);
        uint64_t sent = 0, want = (uint64_t)mib << 20;
        int64_t deadline = net_now_ms() + 3000;
        if (net_write_full(fds[i], hdr, sizeof(hdr), deadline) < 0)
            return 1;
        while (sent < want && net_now_ms() < deadline) {
            size_t k = want - sent < sizeof(zeros) ? want - sent : sizeof(zeros);
            ssize_t w = send(fds[i], zeros, k, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0)
                sent += (uint64_t)w;
            else if (w < 0 && errno != EAGAIN)
                break;
            else
                usleep(1000);
        }
        printf(" %llu", (unsigned long long)(sent >> 20));
    }
    printf("\n");
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}

/* Sends PROOF and (cred not NULL) IDENTITY; prints the server's answer. */
static int finish(int fd, const struct handshake *hs, const uint8_t proof[HANDSHAKE_PROOF_SIZE],
                  const char *cred)
{
    int rc = answer_of(fd, hs, proof, cred);
    if (rc == 0)
        puts("admitted");
    else if (rc == 1)
        puts("denied");
    else if (rc == -EPIPE)
        puts("hung up");
    else
        printf("refused: %s\n", strerror(-rc));
    return 0;
}

int main(int argc, char **argv)
{
    char err[512];
    int holding = argc == 5 && !strcmp(argv[2], "hold");
    int partly = argc == 6 && !strcmp(argv[2], "partial");
    if ((argc != 3 && !holding && !partly) || instance_read(argv[1], &inst, err, sizeof(err)) < 0) {
        fprintf(stderr, "usage: shared_client INSTANCE_FILE MODE | hold N SECONDS | "
                "partial N MIB SECONDS (%s)\n", argc == 3 || holding || partly ? err : "");
        return 2;
    }
    munge_socket = getenv(HANDSHAKE_ENV_MUNGE_SOCKET);
    const char *mode = argv[2];
    if (holding || partly) {
        int rc = holding ? hold(atoi(argv[3]), atoi(argv[4]))
                         : partial(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
        instance_free(&inst);
        return rc;
    }
    struct handshake hs, hs2;
    uint8_t proof[HANDSHAKE_PROOF_SIZE], proof2[HANDSHAKE_PROOF_SIZE];
    int local = strcmp(mode, "local") == 0;
    int fd = dial(local);
    if (fd < 0 || start(fd, &hs, proof) < 0)
        return 1;
    /* Credentials are munge's malloc'd strings: freed after use, so that
     * LeakSanitizer has nothing to say under the sanitizer build. */
    char *cred = NULL;
    int rc = 2;
    if (!strcmp(mode, "honest")) {
        cred = credential(&hs);
        rc = finish(fd, &hs, proof, cred);
    } else if (!strcmp(mode, "local") || !strcmp(mode, "none")) {
        rc = finish(fd, &hs, proof, NULL);
    } else if (!strcmp(mode, "forged")) {
        rc = finish(fd, &hs, proof, "MUNGE:AwQFAAB4mKpO3ZqDnY3d8sT0m2Gv1t7aJQ+oNO8SUd7vG1VcFg==:");
    } else if (!strcmp(mode, "tampered")) {
        cred = credential(&hs);
        size_t mid = strlen(cred) / 2;
        cred[mid] = cred[mid] == 'A' ? 'B' : 'A';
        rc = finish(fd, &hs, proof, cred);
    } else if (!strcmp(mode, "purpose")) {
        uint8_t payload[HANDSHAKE_IDENTITY_PAYLOAD_SIZE];
        handshake_identity_payload(&hs, payload);
        memcpy(payload, "slurm identity v1", 17);   /* same length, another label */
        cred = credential_of(payload, sizeof(payload), 0);
        rc = finish(fd, &hs, proof, cred);
    } else if (!strcmp(mode, "expired")) {
        uint8_t payload[HANDSHAKE_IDENTITY_PAYLOAD_SIZE];
        handshake_identity_payload(&hs, payload);
        cred = credential_of(payload, sizeof(payload), 1);
        sleep(3);
        rc = finish(fd, &hs, proof, cred);
    } else if (!strcmp(mode, "replay") || !strcmp(mode, "reuse")) {
        cred = credential(&hs);
        if (!strcmp(mode, "replay")) {
            /* Its first use, admitted: the credential is now recorded. */
            printf("first: ");
            fflush(stdout);
            finish(fd, &hs, proof, cred);
        }
        close(fd);
        int fd2 = dial(0);
        rc = fd2 < 0 || start(fd2, &hs2, proof2) < 0 ? 1 : finish(fd2, &hs2, proof2, cred);
    } else {
        fprintf(stderr, "shared_client: unknown mode %s\n", mode);
    }
    free(cred);
    return rc;
}
