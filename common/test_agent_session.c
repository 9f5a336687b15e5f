/* Unit tests of agent_session: the handshake's checks (who sealed, for
 * whom, which node, which hello), and sealed messages that are tampered
 * with, replayed, reordered, truncated or sent the wrong way. munge is
 * stood in for by session_fake; the last part runs the handshake over a
 * real TCP connection, against an agent and against squatters. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_session.h"
#include "net.h"
#include "rpc.h"
#include "rpc_io.h"
#include "session_fake.h"
#include "tap.h"

#define SLURM_UID 64030
#define USER_UID 1001

static struct session_auth plugin_auth, agent_auth, user_auth;
static struct session_fake plugin_id, agent_id, user_id;

static bool has(const char *text, const char *part)
{
    bool found = strstr(text, part) != NULL;
    if (!found)
        printf("#   \"%s\" does not contain \"%s\"\n", text, part);
    return found;
}

/* A credential made into a hello for n1 (its MAC all zeros: the tests
 * that use it fail before the MAC is checked). */
static char *as_hello(char *cred)
{
    char *text = malloc(strlen(cred) + 70);
    sprintf(text, "n1 %064d %s", 0, cred);
    free(cred);
    return text;
}

/* A handshake between the plugin and agent n1: 0 and both sides' keys,
 * or the failing step's rc with its message in err. */
static int handshake(struct session_keys *client, struct session_keys *agent, char *err, size_t errlen)
{
    struct session_handshake c, a;
    char *hello, *reply;
    int rc = session_hello_make(&plugin_auth, "n1", &c, &hello, err, errlen);
    if (rc == 0)
        rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, errlen);
    free(hello);
    if (rc == 0)
        rc = session_reply_make(&agent_auth, &a, &reply, agent, err, errlen);
    if (rc == 0) {
        rc = session_reply_take(&plugin_auth, &c, reply, client, err, errlen);
        free(reply);
    }
    return rc;
}

static void test_handshake(void)
{
    struct session_keys ck, ak;
    char err[512] = "";
    int rc = handshake(&ck, &ak, err, sizeof(err));
    tap_ok(rc == 0, "the plugin and agent n1 complete a handshake (%s)", err);
    tap_ok(memcmp(ck.tx, ak.rx, 32) == 0 && memcmp(ck.rx, ak.tx, 32) == 0,
           "both hold the same key for each direction");
    tap_ok(memcmp(ck.tx, ck.rx, 32) != 0, "the two directions' keys differ");
    struct session_keys ck2, ak2;
    handshake(&ck2, &ak2, err, sizeof(err));
    tap_ok(memcmp(ck.tx, ck2.tx, 32) != 0, "each session has keys of its own");

    /* The hello: only root may open it. */
    struct session_handshake c, a, stolen;
    char *hello, *reply;
    session_hello_make(&plugin_auth, "n1", &c, &hello, err, sizeof(err));
    rc = session_hello_take(&user_auth, "n1", USER_UID, hello, &stolen, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "Unauthorized"),
           "a user squatting on the port cannot open the plugin's hello");
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    tap_is_int(rc, 0, "the agent opens it");
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "a replayed hello"), "the same hello again is a replay, refused");
    free(hello);

    /* A fan-out: one credential, a hello per node, every agent on one
     * munged (which reports the credential replayed from the second on). */
    struct session_fanout f;
    rc = session_fanout_make(&plugin_auth, &f, err, sizeof(err));
    tap_ok(rc == 0, "a fan-out's credential is made (%s)", err);
    char *hellos[3];
    struct session_handshake cs[3], as[3];
    struct session_keys cks[3], aks[3];
    const char *names[3] = { "n1", "n2", "n3" };
    int taken = 0, keyed = 0;
    for (int i = 0; i < 3; i++) {
        session_fanout_hello(&f, names[i], &cs[i], &hellos[i], err, sizeof(err));
        if (session_hello_take(&agent_auth, names[i], SLURM_UID, hellos[i], &as[i], err,
                               sizeof(err)) == 0 &&
            session_reply_make(&agent_auth, &as[i], &reply, &aks[i], err, sizeof(err)) == 0) {
            taken++;
            if (session_reply_take(&plugin_auth, &cs[i], reply, &cks[i], err, sizeof(err)) == 0 &&
                memcmp(cks[i].tx, aks[i].rx, 32) == 0)
                keyed++;
            free(reply);
        }
    }
    tap_ok(taken == 3 && keyed == 3, "each of 3 agents takes its hello of one credential and "
           "both sides agree on keys (%d, %d: %s)", taken, keyed, err);
    tap_ok(memcmp(cks[0].tx, cks[1].tx, 32) != 0 && memcmp(cks[1].tx, cks[2].tx, 32) != 0,
           "each session of the fan-out has keys of its own");
    rc = session_hello_take(&agent_auth, "n2", SLURM_UID, hellos[1], &a, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "a replayed hello"), "n2's hello sent to n2 again is refused");
    /* n1's hello with its node rewritten: the MAC binds it to n1. */
    char *moved = malloc(strlen(hellos[0]) + 1);
    strcpy(moved, hellos[0]);
    moved[1] = '4';
    rc = session_hello_take(&agent_auth, "n4", SLURM_UID, moved, &a, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "MAC for node n4 is not its credential's"),
           "n1's hello made into n4's is refused (the MAC)");
    free(moved);
    for (int i = 0; i < 3; i++)
        free(hellos[i]);
    session_fanout_clear(&f);

    /* The agent checks who and for which node. */
    struct session_handshake u;
    session_hello_make(&user_auth, "n1", &u, &hello, err, sizeof(err));
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "uid 1001 may not use the agent (only uid 64030 and root)"),
           "a hello of an ordinary user is refused, naming the uid");
    free(hello);
    session_hello_make(&plugin_auth, "n2", &c, &hello, err, sizeof(err));
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "the hello is for node n2, this is n1"),
           "a hello for another node is refused");
    free(hello);
    session_hello_make(&agent_auth, "n1", &c, &hello, err, sizeof(err));
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    tap_is_int(rc, 0, "root's own hello is accepted (adafs tools run as root)");
    free(hello);

    /* The client checks the reply: root's, for its node and its nonce. */
    struct session_handshake c1, c2, a1;
    char *hello1, *hello2;
    struct session_keys k;
    session_hello_make(&plugin_auth, "n1", &c1, &hello1, err, sizeof(err));
    session_hello_make(&plugin_auth, "n1", &c2, &hello2, err, sizeof(err));
    session_hello_take(&agent_auth, "n1", SLURM_UID, hello1, &a1, err, sizeof(err));
    session_reply_make(&agent_auth, &a1, &reply, &k, err, sizeof(err));
    rc = session_reply_take(&plugin_auth, &c2, reply, &k, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "an answer to another hello"),
           "a reply to another hello is refused");
    free(reply);
    free(hello1);
    free(hello2);

    /* A squatter, as itself, answering a hello it could not open. */
    struct session_handshake fake = { .peer_uid = SLURM_UID };
    strcpy(fake.node, "n1");
    session_hello_make(&plugin_auth, "n1", &c, &hello, err, sizeof(err));
    memcpy(fake.client_nonce, c.client_nonce, SESSION_NONCE_BYTES);   /* even knowing the nonce */
    memcpy(fake.client_share, c.client_share, 32);
    session_reply_make(&user_auth, &fake, &reply, &k, err, sizeof(err));
    rc = session_reply_take(&plugin_auth, &c, reply, &k, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "does not prove the hello's key: not root's agent"),
           "a reply of a user who could not open the hello, even with the right nonce, is "
           "refused");
    free(reply);
    free(hello);

    /* The agent of another node answering. */
    session_hello_make(&plugin_auth, "n1", &c, &hello, err, sizeof(err));
    session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    strcpy(a.node, "n2");
    session_reply_make(&agent_auth, &a, &reply, &k, err, sizeof(err));
    rc = session_reply_take(&plugin_auth, &c, reply, &k, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "the reply is from the agent of node n2, not n1"),
           "a reply from another node's agent is refused");
    free(reply);
    free(hello);

    /* Root's hello reflected back at a client running as root. */
    struct session_handshake r;
    session_hello_make(&agent_auth, "n1", &r, &hello, err, sizeof(err));
    rc = session_reply_take(&agent_auth, &r, hello, &k, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "not an adafs agent's"),
           "a client's own hello sent back as the reply is refused");
    free(hello);

    /* Payloads not of this protocol, sealed by the right uids. */
    char *junk;
    plugin_auth.seal(&plugin_auth, "garbage", 7, 0, &junk, err, sizeof(err));
    junk = as_hello(junk);
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, junk, &a, err, sizeof(err));
    tap_ok(rc == -EPROTO && has(err, "does not hold an adafs agent hello"),
           "a credential of the right uid sealing something else is refused");
    free(junk);
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, SESSION_MAGIC);
    rpc_put_u32(&w, SESSION_VERSION + 1);
    rpc_put_u32(&w, SESSION_KIND_HELLO);
    plugin_auth.seal(&plugin_auth, w.data, w.len, 0, &junk, err, sizeof(err));
    junk = as_hello(junk);
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, junk, &a, err, sizeof(err));
    tap_ok(rc == -EPROTO && has(err, "agent session version 5, this side speaks 4"),
           "another protocol version is refused, naming both");
    free(junk);
    rpc_writer_free(&w);
    /* A hello cut short after its node. */
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, SESSION_MAGIC);
    rpc_put_u32(&w, SESSION_VERSION);
    rpc_put_u32(&w, SESSION_KIND_HELLO);
    rpc_put_raw(&w, err, 40);
    plugin_auth.seal(&plugin_auth, w.data, w.len, 0, &junk, err, sizeof(err));
    junk = as_hello(junk);
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, junk, &a, err, sizeof(err));
    tap_ok(rc == -EPROTO && has(err, "a malformed hello"), "a truncated hello is refused");
    free(junk);
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, "n1 00 FAKE:", &a, err, sizeof(err));
    tap_ok(rc == -EPROTO && has(err, "not a node, a MAC and a credential"),
           "a hello without its MAC is refused");
    rpc_writer_free(&w);
}

/* Seals body from a to b's side; 0 if b opens it as op 7 with that body
 * and id. */
static int pass(struct session_keys *from, struct session_keys *to, const char *body)
{
    uint8_t *sealed;
    size_t len;
    struct session_msg m;
    if (session_seal_id(from, 7, 0xabcdef01u, -5, body, strlen(body), &sealed, &len) < 0)
        return -1;
    int rc = session_open(to, sealed, len, &m);
    free(sealed);
    if (rc == 0 && (m.op != 7 || m.status != -5 || m.id != 0xabcdef01u || m.len != strlen(body) ||
                    memcmp(m.body, body, m.len) != 0))
        rc = -2;
    free(m.plain);
    return rc;
}

/* A handshake whose sealed messages then use cipher (both sides). */
static void handshake_with(int cipher, struct session_keys *ck, struct session_keys *ak)
{
    char err[256];
    handshake(ck, ak, err, sizeof(err));
    session_keys_use(ck, cipher);
    session_keys_use(ak, cipher);
}

/* The cipher: AES-256-GCM when both sides' CPUs run it, else secretbox. */
static void test_ciphers(void)
{
    bool aes = session_ciphers() & 1u << SESSION_CIPHER_AES256GCM;
    struct session_keys ck, ak;
    char err[512] = "";
    int rc = handshake(&ck, &ak, err, sizeof(err));
    int want = aes ? SESSION_CIPHER_AES256GCM : SESSION_CIPHER_SECRETBOX;
    tap_ok(rc == 0 && ck.cipher == want && ak.cipher == want,
           "both sides seal with %s (this CPU %s AES-NI)", aes ? "AES-256-GCM" : "XSalsa20-Poly1305",
           aes ? "has" : "lacks");
    /* A client whose CPU lacks AES-NI offers secretbox alone. */
    struct session_handshake c, a;
    char *hello, *reply;
    session_hello_make(&plugin_auth, "n1", &c, &hello, err, sizeof(err));
    rc = session_hello_take(&agent_auth, "n1", SLURM_UID, hello, &a, err, sizeof(err));
    free(hello);
    tap_ok(rc == 0 && a.ciphers == session_ciphers(), "the agent reads the client's offer (0x%x)",
           a.ciphers);
    a.ciphers = 1u << SESSION_CIPHER_SECRETBOX;
    c.ciphers = 0;
    rc = session_reply_make(&agent_auth, &a, &reply, &ak, err, sizeof(err));
    if (rc == 0) {
        rc = session_reply_take(&plugin_auth, &c, reply, &ck, err, sizeof(err));
        free(reply);
    }
    tap_ok(rc == 0 && ck.cipher == SESSION_CIPHER_SECRETBOX && ak.cipher == SESSION_CIPHER_SECRETBOX,
           "offered secretbox alone, the agent chooses it and the client follows (%s)", err);
    tap_is_int(session_keys_use(&ck, 7), -ENOTSUP, "an unknown cipher is refused");
    if (aes) {
        /* One side on each cipher: nothing opens (the choice is MAC'd in
         * the reply, so only a bug could lead here). */
        handshake_with(SESSION_CIPHER_AES256GCM, &ck, &ak);
        session_keys_use(&ak, SESSION_CIPHER_SECRETBOX);
        uint8_t *sealed;
        size_t len;
        struct session_msg m;
        session_seal(&ck, 1, 0, "x", 1, &sealed, &len);
        tap_is_int(session_open(&ak, sealed, len, &m), -EBADMSG,
                   "a message sealed with AES-256-GCM does not open as secretbox");
        free(sealed);
    } else {
        tap_skip(1, "no AES-NI on this CPU");
    }
}

static void test_messages(int cipher)
{
    struct session_keys ck, ak;
    handshake_with(cipher, &ck, &ak);
    printf("# sealed messages with %s\n", cipher == SESSION_CIPHER_AES256GCM ? "AES-256-GCM"
                                                                          : "XSalsa20-Poly1305");
    tap_is_int(pass(&ck, &ak, "start job 5"), 0, "a request opens on the agent's side");
    tap_is_int(pass(&ak, &ck, "port 4000"), 0, "and its answer on the client's");
    tap_is_int(pass(&ck, &ak, ""), 0, "an empty body passes");
    for (int i = 0; i < 50; i++)
        if (pass(i % 2 ? &ak : &ck, i % 2 ? &ck : &ak, "again") != 0)
            break;
    tap_ok(ck.tx_seq == 27 && ak.rx_seq == 27, "many messages on one session (counters at %llu)",
           (unsigned long long)ck.tx_seq);

    struct session_msg m;
    uint8_t *one, *two;
    size_t len1, len2;
    session_seal(&ck, 1, 0, "first", 5, &one, &len1);
    session_seal(&ck, 2, 0, "second", 6, &two, &len2);
    struct session_keys saved = ak;
    tap_is_int(session_open(&ak, two, len2, &m), -EBADMSG, "a message out of order does not open");
    tap_ok(ak.rx_failed, "and the session has failed");
    tap_is_int(session_open(&ak, one, len1, &m), -EBADMSG,
               "after a failure even the right next message is refused");
    ak = saved;
    tap_is_int(session_open(&ak, one, len1, &m), 0, "(on a fresh copy) the first opens");
    free(m.plain);
    struct session_keys before_replay = ak;
    tap_is_int(session_open(&ak, one, len1, &m), -EBADMSG, "the same message again is a replay, refused");
    ak = before_replay;
    tap_is_int(session_open(&ak, two, len2 - 1, &m), -EBADMSG, "a truncated message is refused");
    ak = before_replay;
    tap_is_int(session_open(&ak, two, 10, &m), -EBADMSG, "one shorter than the MAC is refused");
    int opened = 0;
    for (size_t i = 0; i < len2; i++) {
        ak = before_replay;
        two[i] ^= 0x20;
        if (session_open(&ak, two, len2, &m) == 0) {
            opened++;
            free(m.plain);
        }
        two[i] ^= 0x20;
    }
    tap_is_int(opened, 0, "a bit flipped at any byte of a message: it never opens");
    ak = before_replay;
    tap_is_int(session_open(&ak, two, len2, &m), 0, "the untouched message opens");
    free(m.plain);
    free(one);
    free(two);

    /* Sent the wrong way: a client message given back to the client. */
    uint8_t *own;
    size_t own_len;
    session_seal(&ck, 1, 0, "echo", 4, &own, &own_len);
    tap_is_int(session_open(&ck, own, own_len, &m), -EBADMSG,
               "a client's own message reflected back does not open");
    free(own);
    /* Another session's message. */
    struct session_keys ck2, ak2;
    handshake_with(cipher, &ck2, &ak2);
    session_seal(&ck2, 1, 0, "other", 5, &own, &own_len);
    struct session_keys fresh_ck, fresh_ak;
    handshake_with(cipher, &fresh_ck, &fresh_ak);
    tap_is_int(session_open(&fresh_ak, own, own_len, &m), -EBADMSG,
               "a message of another session does not open");
    free(own);

    /* Decoding an opened plaintext. */
    uint8_t plain[12] = { 3, 0, 0, 0, 0xf3, 0xff, 0xff, 0xff, 9, 0, 0, 0 };
    tap_ok(session_plain_decode(plain, 12, &m) == 0 && m.op == 3 && m.status == -13 &&
           m.id == 9 && m.len == 0, "a plaintext of op 3, status -13, id 9 and no body decodes");
    tap_is_int(session_plain_decode(plain, 11, &m), -EBADMSG, "a plaintext of 11 bytes does not");
    plain[2] = 1;
    tap_is_int(session_plain_decode(plain, 12, &m), -EBADMSG, "nor one whose op is above 16 bits");
}

/* --- over TCP --------------------------------------------------------- */

struct server {
    int lfd, port;
    int mode;           /* 0 agent, 1 refuse in plain, 2 garbage, 3 silent */
    char err[512];
    int rc;
};

static void *serve_one(void *arg)
{
    struct server *s = arg;
    int fd = accept(s->lfd, NULL, NULL);
    int64_t deadline = net_now_ms() + 5000;
    net_set_timeouts(fd, 1000);
    char *cred = NULL;
    s->rc = agent_session_recv_hello(fd, &cred, deadline);
    if (s->rc == 0 && s->mode == 0) {
        struct agent_session as;
        s->rc = agent_session_accept(&as, fd, &agent_auth, "n1", SLURM_UID, cred, deadline, s->err,
                                     sizeof(s->err));
        struct session_msg m;
        while (s->rc == 0 && agent_session_recv(&as, &m, 1 << 20, deadline) == 0) {
            agent_session_send(&as, m.op, 0, m.body, m.len, deadline);   /* echo */
            free(m.plain);
        }
        if (s->rc == 0)
            agent_session_close(&as);
    } else if (s->rc == 0 && s->mode == 1) {
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        rpc_put_str(&w, "node n1: all is lost, drain me");
        struct rpc_header h = { .opcode = SESSION_OP_HELLO, .status = -EIO };
        rpc_send(fd, &h, w.data, w.len, deadline);
        rpc_writer_free(&w);
    } else if (s->rc == 0 && s->mode == 2) {
        struct rpc_header h = { .opcode = SESSION_OP_SEALED };
        rpc_send(fd, &h, "0123456789abcdefghijklmnopqrstuvwxyz", 36, deadline);
    } else if (s->rc == 0 && s->mode == 3) {
        sleep(2);
    }
    free(cred);
    if (s->mode != 0 || s->rc != 0)
        close(fd);
    return NULL;
}

static int connect_to(int mode, struct agent_session *cs, char *err, size_t errlen,
                      struct server *srv)
{
    *srv = (struct server){ .mode = mode };
    char lerr[256];
    srv->lfd = net_listen("127.0.0.1", 0, 4, &srv->port, lerr, sizeof(lerr));
    pthread_t t;
    pthread_create(&t, NULL, serve_one, srv);
    int rc = agent_session_connect(cs, &plugin_auth, "n1", "127.0.0.1", srv->port,
                                   mode == 3 ? 1000 : 5000, err, errlen);
    if (rc == 0) {
        struct session_msg m;
        int64_t deadline = net_now_ms() + 5000;
        for (int i = 0; i < 3 && rc == 0; i++) {
            rc = agent_session_send(cs, 42, 0, "ping", 4, deadline);
            if (rc == 0)
                rc = agent_session_recv(cs, &m, 1 << 20, deadline);
            if (rc == 0 && (m.len != 4 || memcmp(m.body, "ping", 4) != 0))
                rc = -EBADMSG;
            if (rc == 0)
                free(m.plain);
        }
        agent_session_close(cs);
    }
    pthread_join(t, NULL);
    close(srv->lfd);
    return rc;
}

static void test_socket(void)
{
    struct agent_session cs;
    struct server srv;
    char err[512] = "";
    int rc = connect_to(0, &cs, err, sizeof(err), &srv);
    tap_ok(rc == 0, "over TCP: handshake and three requests on one connection (%s)", err);
    rc = connect_to(1, &cs, err, sizeof(err), &srv);
    tap_ok(rc == -EACCES && has(err, "refused the handshake: node n1: all is lost, drain me"
                                     " (unauthenticated answer)"),
           "a plain refusal is reported as an unauthenticated answer");
    rc = connect_to(2, &cs, err, sizeof(err), &srv);
    tap_ok(rc == -EPROTO && has(err, "handshake: the answer is not an adafs agent's"),
           "a squatter answering with something else is not believed");
    rc = connect_to(3, &cs, err, sizeof(err), &srv);
    tap_ok(rc == -ETIMEDOUT && has(err, "node n1: agent 127.0.0.1:"),
           "a squatter that says nothing: a timeout naming the node and address");
    rc = agent_session_connect(&cs, &plugin_auth, "n1", "127.0.0.1", srv.port, 1000, err,
                               sizeof(err));
    tap_ok(rc == -ECONNREFUSED && has(err, "node n1: agent cannot connect to 127.0.0.1:"),
           "nobody listening: connection refused, naming the node");
}

int main(void)
{
    session_fake_init(&plugin_auth, &plugin_id, SLURM_UID);
    session_fake_init(&agent_auth, &agent_id, 0);
    session_fake_init(&user_auth, &user_id, USER_UID);
    test_handshake();
    test_ciphers();
    test_messages(SESSION_CIPHER_SECRETBOX);
    if (session_ciphers() & 1u << SESSION_CIPHER_AES256GCM)
        test_messages(SESSION_CIPHER_AES256GCM);
    test_socket();
    return tap_done();
}
