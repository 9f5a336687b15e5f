#include "agent_client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_proto.h"
#include "agent_session.h"
#include "log.h"
#include "munge_auth.h"
#include "net.h"

/* A reconfigure may change the socket while the driver calls agents. */
static pthread_mutex_t socket_lock = PTHREAD_MUTEX_INITIALIZER;
static char *munge_socket_path;

void agent_client_init(const char *munge_socket)
{
    char *copy = munge_socket ? strdup(munge_socket) : NULL;
    pthread_mutex_lock(&socket_lock);
    free(munge_socket_path);
    munge_socket_path = copy;
    pthread_mutex_unlock(&socket_lock);
}

/* A connection refused before any request went out (an agent restarting)
 * is tried CONNECT_TRIES times; one the agent accepted and then cut (its
 * admission evicting or refusing newcomers under a flood of unproven
 * connections) comes from a live, busy agent and is tried again until the
 * deadline. Both are safe: nothing was asked yet. */
#define CONNECT_TRIES 3
#define CONNECT_BACKOFF_MS 200
#define CONNECT_BACKOFF_MAX_MS 1000

static int open_session(const struct agent_target *t, int64_t deadline, struct agent_session *s,
                        char *err, size_t errlen)
{
    char path[PATH_MAX] = "";
    pthread_mutex_lock(&socket_lock);
    if (munge_socket_path)
        snprintf(path, sizeof(path), "%s", munge_socket_path);
    pthread_mutex_unlock(&socket_lock);
    struct session_auth munge;
    munge_auth_init(&munge, path[0] ? path : NULL);
    int rc = -ETIMEDOUT, refused = 0, pause = CONNECT_BACKOFF_MS;
    for (int attempt = 0;; attempt++) {
        int64_t left = deadline - net_now_ms();
        if (attempt > 0) {
            if (left <= pause)
                break;
            poll(NULL, 0, pause);
            left -= pause;
            pause = pause * 2 > CONNECT_BACKOFF_MAX_MS ? CONNECT_BACKOFF_MAX_MS : pause * 2;
        }
        if (left <= 0)
            break;
        rc = agent_session_connect(s, &munge, t->node, t->host, t->port,
                                   left < 10000 ? (int)left : 10000, err, errlen);
        if (rc == -ECONNREFUSED && ++refused < CONNECT_TRIES)
            continue;
        if (rc != -ECONNRESET && rc != -EPIPE)
            break;
    }
    if (rc == -ETIMEDOUT && !err[0])
        snprintf(err, errlen, "node %s: agent %s:%d: no time left to connect", t->node, t->host,
                 t->port);
    return rc;
}

int agent_call(const struct agent_target *t, uint16_t op, const void *body, size_t len,
               int timeout_ms, struct agent_reply *reply, char *err, size_t errlen)
{
    *reply = (struct agent_reply){ 0 };
    err[0] = '\0';
    int64_t deadline = net_now_ms() + timeout_ms;
    struct agent_session s;
    int rc = open_session(t, deadline, &s, err, errlen);
    if (rc < 0)
        return rc;
    struct session_msg m;
    rc = agent_session_send(&s, op, 0, body, len, deadline);
    if (rc == 0)
        rc = agent_session_recv(&s, &m, AGENT_MAX_BODY, deadline);
    agent_session_close(&s);
    /* An agent at its session limit answers before reading the request,
     * so its refusal names no request (op 0). */
    if (rc == 0 && m.op != op && !(m.op == 0 && m.status < 0)) {
        free(m.plain);
        rc = -EBADMSG;
    }
    if (rc < 0) {
        snprintf(err, errlen, "node %s: agent %s:%d: %s: %s", t->node, t->host, t->port,
                 agent_op_name(op), rc == -EBADMSG ? "the session's reply did not open"
                                                   : strerror(-rc));
        return rc;
    }
    reply->body = m.plain;
    reply->len = m.len;
    reply->status = m.status;
    reply->fault = AGENT_FAULT_TRANSIENT;
    rpc_reader_init(&reply->reader, m.body, m.len);
    if (reply->status < 0 &&
        agent_error_get(&reply->reader, &reply->message, &reply->fault) < 0) {
        reply->message = "the agent's error reply is malformed";
        reply->fault = AGENT_FAULT_TRANSIENT;
    }
    return 0;
}

void agent_reply_free(struct agent_reply *reply)
{
    free(reply->body);
    *reply = (struct agent_reply){ 0 };
}

struct fan_out {
    struct agent_request *reqs;
    size_t n;
    int timeout_ms;
    atomic_size_t next;
};

static void *fan_out_worker(void *arg)
{
    struct fan_out *f = arg;
    for (size_t i; (i = atomic_fetch_add(&f->next, 1)) < f->n;) {
        struct agent_request *q = &f->reqs[i];
        q->rc = agent_call(&q->target, q->op, q->body, q->len, f->timeout_ms, &q->reply, q->err,
                           sizeof(q->err));
    }
    return NULL;
}

void agent_call_all(struct agent_request *reqs, size_t n, int timeout_ms)
{
    struct fan_out f = { .reqs = reqs, .n = n, .timeout_ms = timeout_ms };
    atomic_init(&f.next, 0);
    pthread_t threads[AGENT_FAN_OUT];
    size_t want = n < AGENT_FAN_OUT ? n : AGENT_FAN_OUT, started = 0;
    /* The calling thread is one of the workers. */
    while (started + 1 < want) {
        int rc = pthread_create(&threads[started], NULL, fan_out_worker, &f);
        if (rc != 0) {
            log_warn("agent fan-out: pthread_create: %s; going on with %zu threads",
                     strerror(rc), started + 1);
            break;
        }
        started++;
    }
    fan_out_worker(&f);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
}
