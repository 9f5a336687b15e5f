/* Unit tests of agent_link against simulated agents on loopback
 * (agent_sim, with session_fake standing in for munge): many requests on
 * one session, answers out of order, many agents at once, and every way a
 * node or a squatter on its port can fail a request, each ending in one
 * answer (or one failure naming the node) per request, never a hang. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_link.h"
#include "agent_proto.h"
#include "agent_sim.h"
#include "net.h"
#include "session_fake.h"
#include "tap.h"

#define SLURM_UID 64030

static struct session_auth plugin_auth, agent_auth;
static struct session_fake plugin_id, agent_id;

static bool has(const char *text, const char *part)
{
    bool found = strstr(text, part) != NULL;
    if (!found)
        printf("#   \"%s\" does not contain \"%s\"\n", text, part);
    return found;
}

/* Requests finished, counted, in the order they finished. */
struct tally {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, ok;
    uint16_t order[16];
};

static void counted(struct agent_call *c)
{
    struct tally *t = c->arg;
    pthread_mutex_lock(&t->lock);
    if (t->done < 16)
        t->order[t->done] = c->op;
    t->done++;
    t->ok += c->rc == 0 && c->reply.status == 0;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void wait_for(struct tally *t, int n)
{
    pthread_mutex_lock(&t->lock);
    while (t->done < n)
        pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
}

static struct agent_link *new_link(int connect_ms, int idle_ms)
{
    char err[256];
    struct agent_link_config cfg = { .auth = &plugin_auth, .connect_timeout_ms = connect_ms,
                                     .idle_ms = idle_ms };
    struct agent_link *l = agent_link_new(&cfg, err, sizeof(err));
    if (!l)
        printf("# %s\n", err);
    return l;
}

static struct agent_sim *new_sim(int nodes, enum agent_sim_mode mode)
{
    char err[256];
    struct agent_sim_node all = { .mode = mode, .stage_ms = 60000 };
    struct agent_sim *sim = agent_sim_start(&agent_auth, SLURM_UID, "127.0.0.1", nodes, "n", &all,
                                            err, sizeof(err));
    if (!sim)
        printf("# %s\n", err);
    return sim;
}

/* One request to node 0 of sim, waited for. */
static int one(struct agent_link *l, struct agent_sim *sim, uint16_t op, const void *body,
               size_t len, int timeout_ms, struct agent_reply *reply, char *err, size_t errlen)
{
    return agent_link_call(l, agent_sim_name(sim, 0), "127.0.0.1", agent_sim_port(sim, 0), op,
                           body, len, timeout_ms, reply, err, errlen);
}

static void test_many_on_one(void)
{
    struct agent_sim *sim = new_sim(1, SIM_OK);
    struct agent_link *l = new_link(5000, 20000);
    struct tally t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, { 0 } };
    enum { N = 300 };
    struct agent_call *calls = calloc(N, sizeof(*calls));
    for (int i = 0; i < N; i++) {
        calls[i] = (struct agent_call){ .node = "n0", .host = "127.0.0.1",
                                        .port = agent_sim_port(sim, 0), .op = AGENT_PING,
                                        .timeout_ms = 10000, .done = counted, .arg = &t };
        agent_link_send(l, &calls[i]);
    }
    wait_for(&t, N);
    tap_is_int(t.ok, N, "300 requests to one agent, all answered");
    bool named = true;
    for (int i = 0; i < N; i++) {
        const char *name = calls[i].rc == 0 ? rpc_get_str(&calls[i].reply.reader) : NULL;
        named &= name && strcmp(name, "n0") == 0;
        agent_reply_free(&calls[i].reply);
    }
    tap_ok(named, "each with its own answer");
    struct agent_link_stats st;
    agent_link_stats(l, &st);
    tap_ok(st.sessions == 1 && st.sent == N && st.received == N,
           "on one session: one credential each way for them all (%llu sessions)",
           (unsigned long long)st.sessions);

    /* A WATCH held by the agent does not hold up the PING sent after it. */
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_start_put(&w, &(struct agent_start){ .job_id = 5, .uid = 1, .gid = 1, .nservers = 1,
                                               .listen_host = "h", .storage = "/s",
                                               .secret_hex = "00", .numa_node = -1 });
    struct agent_reply reply;
    char err[512];
    one(l, sim, AGENT_START, w.data, w.len, 5000, &reply, err, sizeof(err));
    agent_reply_free(&reply);
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_stage_put(&w, &(struct agent_stage){ .job_id = 5, .nworkers = 1, .source = "/a",
                                               .destination = "/b" });
    one(l, sim, AGENT_STAGE, w.data, w.len, 5000, &reply, err, sizeof(err));
    agent_reply_free(&reply);
    rpc_writer_free(&w);
    rpc_writer_init(&w, NULL, 0);
    agent_watch_put(&w, &(struct agent_watch){ 5, AGENT_OP_RUNNING, 600 });
    struct tally t2 = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, { 0 } };
    struct agent_call watch = { .node = "n0", .host = "127.0.0.1", .port = agent_sim_port(sim, 0),
                                .op = AGENT_WATCH, .body = w.data, .len = w.len,
                                .timeout_ms = 5000, .done = counted, .arg = &t2 };
    struct agent_call ping = { .node = "n0", .host = "127.0.0.1", .port = agent_sim_port(sim, 0),
                               .op = AGENT_PING, .timeout_ms = 5000, .done = counted, .arg = &t2 };
    int64_t start = net_now_ms();
    agent_link_send(l, &watch);
    agent_link_send(l, &ping);
    wait_for(&t2, 2);
    int64_t took = net_now_ms() - start;
    tap_ok(t2.order[0] == AGENT_PING && t2.order[1] == AGENT_WATCH && t2.ok == 2,
           "a PING sent after a WATCH the agent holds is answered first, on the same session");
    struct agent_stage_status ss;
    tap_ok(agent_stage_status_get(&watch.reply.reader, &ss) == 0 && ss.state == AGENT_OP_RUNNING &&
           took >= 550, "the WATCH comes back after its hold with the stage still running (%lld ms)",
           (long long)took);
    agent_reply_free(&watch.reply);
    agent_reply_free(&ping.reply);
    rpc_writer_free(&w);
    agent_link_stats(l, &st);
    tap_is_int(st.sessions, 1, "still one session");
    agent_link_free(l);
    agent_sim_stop(sim);
    free(calls);
}

static void test_many_agents(void)
{
    enum { NODES = 200, PER = 5 };
    struct agent_sim *sim = new_sim(NODES, SIM_OK);
    struct agent_link *l = new_link(5000, 20000);
    struct tally t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, { 0 } };
    struct agent_call *calls = calloc(NODES * PER, sizeof(*calls));
    for (int i = 0; i < NODES * PER; i++) {
        calls[i] = (struct agent_call){ .node = agent_sim_name(sim, i % NODES), .host = "127.0.0.1",
                                        .port = agent_sim_port(sim, i % NODES), .op = AGENT_PING,
                                        .timeout_ms = 20000, .done = counted, .arg = &t };
        if (i < NODES)
            agent_link_send(l, &calls[i]);
    }
    /* The rest handed over at once, as the driver hands a set. */
    struct agent_call **rest = calloc(NODES * (PER - 1), sizeof(*rest));
    for (int i = NODES; i < NODES * PER; i++)
        rest[i - NODES] = &calls[i];
    agent_link_send_many(l, rest, NODES * (PER - 1));
    wait_for(&t, NODES * PER);
    free(rest);
    bool right = true;
    for (int i = 0; i < NODES * PER; i++) {
        const char *name = calls[i].rc == 0 ? rpc_get_str(&calls[i].reply.reader) : NULL;
        right &= name && strcmp(name, agent_sim_name(sim, i % NODES)) == 0;
        agent_reply_free(&calls[i].reply);
    }
    tap_ok(t.ok == NODES * PER && right, "200 agents, 5 requests each (4 handed over in one batch): each answered by its node");
    struct agent_link_stats st;
    agent_link_stats(l, &st);
    tap_ok(st.sessions == NODES && st.open_sessions == NODES,
           "one session per agent (%llu opened, %u open)", (unsigned long long)st.sessions,
           st.open_sessions);
    agent_link_free(l);
    agent_sim_stop(sim);
    free(calls);
}

static void test_failures(void)
{
    struct agent_reply reply;
    char err[512];
    struct agent_link *l = new_link(700, 300);

    struct agent_sim *sim = new_sim(1, SIM_DOWN);
    int64_t start = net_now_ms();
    int rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    int64_t took = net_now_ms() - start;
    tap_ok(rc == -ECONNREFUSED && has(err, "node n0: agent cannot connect to 127.0.0.1:") &&
           took >= 550, "nobody listening: tried 3 times (%lld ms), then refused, naming the node",
           (long long)took);
    agent_sim_stop(sim);

    sim = new_sim(1, SIM_SQUATTER);
    rc = one(l, sim, AGENT_START, "x", 1, 5000, &reply, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "refused the handshake: node n0: storage root unusable: drain "
                                     "me (unauthenticated answer)"),
           "a squatter's refusal is shown as an unauthenticated answer and never believed");
    agent_sim_stop(sim);

    sim = new_sim(1, SIM_GARBAGE);
    rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    tap_ok(rc == -EPROTO && has(err, "the answer is not an adafs agent's"),
           "a squatter answering something else is not believed");
    agent_sim_stop(sim);

    sim = new_sim(1, SIM_SILENT);
    start = net_now_ms();
    rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    took = net_now_ms() - start;
    tap_ok(rc == -ETIMEDOUT && has(err, "node n0: agent 127.0.0.1:") && has(err, "handshake timed out") &&
           took < 2000, "a node that accepts and says nothing: the handshake times out (%lld ms)",
           (long long)took);
    agent_sim_stop(sim);

    sim = new_sim(1, SIM_MUTE);
    rc = one(l, sim, AGENT_PING, NULL, 0, 800, &reply, err, sizeof(err));
    tap_ok(rc == -ETIMEDOUT && has(err, "ping: no answer within 1 s"),
           "an agent that takes a request and never answers: the request times out (%s)", err);
    agent_sim_stop(sim);

    sim = new_sim(1, SIM_BUSY);
    rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    tap_ok(rc == 0 && reply.status == -EBUSY && reply.fault == AGENT_FAULT_TRANSIENT &&
           has(reply.message, "serves 64 sessions already"),
           "an agent at its session limit: its authenticated, transient refusal");
    agent_reply_free(&reply);
    agent_sim_stop(sim);

    /* An agent that goes away with requests unanswered (a restart): they
     * are sent again on a new session, once. */
    char aerr[256];
    struct agent_sim_node drop = { .mode = SIM_OK, .drop_after = 3 };
    sim = agent_sim_start(&agent_auth, SLURM_UID, "127.0.0.1", 1, "n", &drop, aerr, sizeof(aerr));
    struct tally t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, { 0 } };
    struct agent_call calls[5];
    for (int i = 0; i < 5; i++) {
        calls[i] = (struct agent_call){ .node = "n0", .host = "127.0.0.1",
                                        .port = agent_sim_port(sim, 0), .op = AGENT_PING,
                                        .timeout_ms = 5000, .done = counted, .arg = &t };
        agent_link_send(l, &calls[i]);
    }
    wait_for(&t, 5);
    struct agent_link_stats st;
    agent_link_stats(l, &st);
    tap_ok(t.ok == 4 && st.resent == 3,
           "a session cut with 3 requests in flight: they are sent again on a new one (%d of 5 "
           "answered, %llu sent again)", t.ok, (unsigned long long)st.resent);
    int again = 0;
    for (int i = 0; i < 5; i++) {
        again += calls[i].rc < 0 && has(calls[i].err, "node n0: agent 127.0.0.1:");
        agent_reply_free(&calls[i].reply);
    }
    tap_ok(again == 1, "the one cut twice fails, naming the node, and is not sent a third time");
    agent_sim_stop(sim);

    /* Sessions idle for idle_ms close; the next request opens another. */
    sim = new_sim(1, SIM_OK);
    uint64_t before = st.sessions;
    rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    agent_reply_free(&reply);
    usleep(500000);
    agent_link_stats(l, &st);
    tap_is_int(st.open_sessions, 0, "a session idle longer than idle_ms is closed");
    rc = one(l, sim, AGENT_PING, NULL, 0, 5000, &reply, err, sizeof(err));
    agent_reply_free(&reply);
    agent_link_stats(l, &st);
    tap_ok(rc == 0 && st.sessions == before + 2, "and the next request opens another");

    /* A hello for a node the agent is not. */
    rc = agent_link_call(l, "n9", "127.0.0.1", agent_sim_port(sim, 0), AGENT_PING, NULL, 0, 5000,
                         &reply, err, sizeof(err));
    tap_ok(rc == -EACCES && has(err, "the hello is for node n9, this is n0"),
           "an agent refuses a session for another node");
    agent_sim_stop(sim);
    agent_link_free(l);
}

int main(void)
{
    session_fake_init(&plugin_auth, &plugin_id, SLURM_UID);
    session_fake_init(&agent_auth, &agent_id, 0);
    test_many_on_one();
    test_many_agents();
    test_failures();
    return tap_done();
}
