#include "agent_client.h"

#include <errno.h>
#include <munge.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_proto.h"
#include "log.h"
#include "net.h"
#include "rpc_io.h"

static const char *munge_socket_path;

void agent_client_init(const char *munge_socket)
{
    munge_socket_path = munge_socket;
}

static int seal(const void *body, size_t len, char **cred, char *err, size_t errlen)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx) {
        snprintf(err, errlen, "munge: out of memory");
        return -ENOMEM;
    }
    if (munge_socket_path)
        munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket_path);
    /* Only root (the agent) may decode it: a request carries the job's
     * secret, and a user process squatting on the agent's port must not
     * be able to read it with unmunge. */
    munge_err_t e = munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, (uid_t)0);
    if (e == EMUNGE_SUCCESS)
        e = munge_encode(cred, ctx, body, (int)len);
    if (e != EMUNGE_SUCCESS)
        snprintf(err, errlen, "munge: %s", munge_ctx_strerror(ctx));
    munge_ctx_destroy(ctx);
    return e == EMUNGE_SUCCESS ? 0 : -EACCES;
}

int agent_call(const struct agent_target *t, uint16_t op, const void *body, size_t len,
               int timeout_ms, struct agent_reply *reply, char *err, size_t errlen)
{
    *reply = (struct agent_reply){ 0 };
    char *cred = NULL, cerr[256];
    struct rpc_writer sealed;
    rpc_writer_init(&sealed, NULL, 0);
    agent_seal_head_put(&sealed, op, t->node);
    rpc_put_raw(&sealed, body, len);
    int sealed_rc = -ENOMEM;
    snprintf(cerr, sizeof(cerr), "out of memory");
    if (rpc_writer_ok(&sealed))
        sealed_rc = seal(sealed.data, sealed.len, &cred, cerr, sizeof(cerr));
    rpc_writer_free(&sealed);
    if (sealed_rc < 0) {
        snprintf(err, errlen, "node %s: %s", t->node, cerr);
        return -EACCES;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_str(&w, cred);
    free(cred);
    if (!rpc_writer_ok(&w)) {
        rpc_writer_free(&w);
        snprintf(err, errlen, "node %s: out of memory", t->node);
        return -ENOMEM;
    }

    int64_t deadline = net_now_ms() + timeout_ms;
    char nerr[256];
    int fd = net_connect(t->host, t->port, timeout_ms < 10000 ? timeout_ms : 10000, nerr, sizeof(nerr));
    int rc = fd;
    struct rpc_header h = { .opcode = op, .id = 1 };
    if (fd >= 0)
        rc = rpc_send(fd, &h, w.data, w.len, deadline);
    if (rc >= 0)
        rc = rpc_recv(fd, &h, &reply->body, AGENT_MAX_BODY, deadline);
    if (fd >= 0)
        close(fd);
    rpc_writer_free(&w);
    if (rc < 0) {
        snprintf(err, errlen, "node %s: agent %s:%d: %s: %s", t->node, t->host, t->port,
                 agent_op_name(op), fd < 0 ? nerr : strerror(-rc));
        agent_reply_free(reply);
        return rc;
    }
    reply->len = h.length;
    reply->status = h.status;
    rpc_reader_init(&reply->reader, reply->body, reply->len);
    if (reply->status < 0) {
        reply->message = rpc_get_str(&reply->reader);
        if (!reply->message)
            reply->message = strerror(-reply->status);
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
