/* lifecycle_set.c: sets of requests in flight (lifecycle_set.h) and the
 * outbox that sends them after the caller's lock (lifecycle.h). */
#include "lifecycle_set.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

void lc_set_free(struct lc_set *s)
{
    for (size_t k = 0; k < s->n; k++) {
        if (s->call)
            agent_reply_free(&s->call[k].reply);
        if (s->body)
            rpc_writer_free(&s->body[k]);
        if (s->digest)
            free(s->digest[k].why);
    }
    free(s->digest);
    free(s->port);
    free(s->server_port);
    free(s->numa);
    free(s->threads);
    free(s->stage_source);
    free(s->stage_destination);
    free(s->configure_text);
    free(s->call);
    free(s->node);
    free(s->body);
    free(s->shared);
    free(s->finished);
    free(s->sent_ms);
    free(s->names);
    free(s->name_of);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static void set_abandon(struct bb_calls *base)
{
    struct lc_set *s = (struct lc_set *)base;
    pthread_mutex_lock(&s->lock);
    s->abandoned = true;
    bool last = s->outstanding == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        lc_set_free(s);
}

void lc_set_drop(struct bb_job *j)
{
    if (j->calls)
        j->calls->abandon(j->calls);
    j->calls = NULL;
}

/* A WATCH answered with its stage still running (the hold ran out). */
static bool still_running(const struct agent_call *c)
{
    if (c->rc < 0 || c->reply.status < 0)
        return false;
    struct rpc_reader r = c->reply.reader;
    struct agent_stage_status st;
    return agent_stage_status_get(&r, &st) == 0 && st.state == AGENT_OP_RUNNING;
}

bool lc_stage_done(const struct agent_call *c)
{
    if (c->rc < 0 || c->reply.status < 0)
        return false;
    struct rpc_reader r = c->reply.reader;
    struct agent_stage_status st;
    return agent_stage_status_get(&r, &st) == 0 && st.state == AGENT_OP_DONE;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An answer came (or the request failed). */
static void set_answered(struct agent_call *c)
{
    struct lc_set *s = c->arg;
    size_t k = (size_t)(c - s->call);
    const struct lc_transport *t = s->transport;
    void (*ready)(void *) = s->ready;
    void *ready_arg = s->ready_arg;
    /* Only this thread touches call k until it is marked finished. */
    if (s->kind == SET_WATCH && lc_stage_done(c))
        lc_digest_answer(s, k);
    pthread_mutex_lock(&s->lock);
    if (!s->abandoned && s->kind == SET_WATCH && still_running(c)) {
        int64_t now = now_ms();
        if (now - s->sent_ms[k] >= s->hold_ms / 4) {
            /* Asked again at once: no step, no new session, no credential. */
            agent_reply_free(&c->reply);
            s->sent_ms[k] = now;
            pthread_mutex_unlock(&s->lock);
            t->send(t->ctx, c);
            return;
        }
        /* An agent that does not hold a WATCH would be asked in a loop: a
         * failure, tried again later (lc_fail_or_retry). */
        agent_reply_free(&c->reply);
        c->rc = -EPROTO;
        snprintf(c->err, sizeof(c->err), "node %s: its agent answers a WATCH at once while the "
                 "stage runs", c->node);
    }
    s->finished[k] = true;
    s->outstanding--;
    bool last = s->outstanding == 0, notify = false;
    if (s->abandoned) {
        pthread_mutex_unlock(&s->lock);
        if (last)
            lc_set_free(s);
        return;
    }
    if (last) {
        notify = true;
    } else if (s->kind == SET_WATCH && !s->failed && !lc_stage_done(c)) {
        s->failed = true;
        notify = true;
    }
    pthread_mutex_unlock(&s->lock);
    if (notify)
        ready(ready_arg);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* Where node i's server keeps its data. */
static const char *node_storage(const struct bb_job *j, size_t i)
{
    return j->nodes[i].storage ? j->nodes[i].storage : j->storage;
}

struct lc_set *lc_set_new(struct bb_job *j, enum set_kind kind, const struct lc_env *env)
{
    struct lc_set *s = calloc(1, sizeof(*s));
    if (!s) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    size_t n = j->nnodes ? j->nnodes : 1, names = 0;
    for (size_t i = 0; i < j->nnodes; i++)
        names += strlen(or_empty(j->nodes[i].name)) + strlen(or_empty(j->nodes[i].agent_host)) +
                 strlen(or_empty(node_storage(j, i))) + 3;
    s->node = malloc(n * sizeof(*s->node));
    s->port = malloc(n * sizeof(*s->port));
    s->finished = calloc(n, sizeof(*s->finished));
    s->sent_ms = calloc(n, sizeof(*s->sent_ms));
    s->names = malloc(names ? names : 1);
    s->name_of = malloc(3 * n * sizeof(*s->name_of));
    if (!s->node || !s->port || !s->finished || !s->sent_ms || !s->names || !s->name_of) {
        lc_set_free(s);
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        return NULL;
    }
    char *at = s->names;
    for (size_t i = 0; i < j->nnodes; i++) {
        s->name_of[3 * i] = at;
        at = stpcpy(at, or_empty(j->nodes[i].name)) + 1;
        s->name_of[3 * i + 1] = at;
        at = stpcpy(at, or_empty(j->nodes[i].agent_host)) + 1;
        s->name_of[3 * i + 2] = at;
        at = stpcpy(at, or_empty(node_storage(j, i))) + 1;
    }
    s->base.abandon = set_abandon;
    s->kind = kind;
    s->job_id = j->job_id;
    s->transport = env->transport;
    s->ready = env->ready;
    s->ready_arg = env->ready_arg;
    s->hold_ms = env->hold_ms;
    return s;
}

/* A request of the set to node i (every request of a set has one op);
 * made when the set is sent. */
void lc_set_add(struct lc_set *s, const struct bb_job *j, size_t i, uint16_t op)
{
    size_t k = s->n++;
    s->op = op;
    s->node[k] = i;
    s->port[k] = j->nodes[i].agent_port;
}

/* The one body every request of the set carries (w's data, taken over);
 * -1 if it could not be encoded (w freed). */
int lc_set_share(struct lc_set *s, struct rpc_writer *w)
{
    if (!rpc_writer_ok(w)) {
        rpc_writer_free(w);
        return -1;
    }
    /* A writer that never grew points at no memory of its own. */
    s->shared = w->owned ? w->owned : malloc(w->len ? w->len : 1);
    if (!w->owned && s->shared)
        memcpy(s->shared, w->data, w->len);
    s->shared_len = w->len;
    return s->shared ? 0 : -1;
}

/* Makes the set's calls and their bodies from what the set holds; -1
 * when out of memory. Reads nothing of the job. */
static int set_build(struct lc_set *s)
{
    s->call = calloc(s->n, sizeof(*s->call));
    if (!s->call || (s->build_shared && s->build_shared(s) < 0))
        return -1;
    if (!s->shared && !(s->body = calloc(s->n, sizeof(*s->body))))
        return -1;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = s->node[k];
        struct agent_call *c = &s->call[k];
        *c = (struct agent_call){ .node = s->name_of[3 * i], .host = s->name_of[3 * i + 1],
                                  .port = s->port[k], .op = s->op, .timeout_ms = s->timeout_ms,
                                  .done = set_answered, .arg = s };
        if (s->shared) {
            c->body = s->shared;
            c->len = s->shared_len;
            continue;
        }
        struct rpc_writer *w = &s->body[k];
        rpc_writer_init(w, NULL, 0);
        s->build(s, k, w);
        if (!rpc_writer_ok(w))
            return -1;
        c->body = w->data;
        c->len = w->len;
    }
    return 0;
}

/* A set that could not be built is answered as a whole, unsent: its step
 * tries again later (check_set), blaming no node. */
static void set_unbuilt(struct lc_set *s)
{
    void (*ready)(void *) = s->ready;
    void *ready_arg = s->ready_arg;
    pthread_mutex_lock(&s->lock);
    s->unbuilt = true;
    s->outstanding = 0;
    bool abandoned = s->abandoned;
    pthread_mutex_unlock(&s->lock);
    if (abandoned)
        lc_set_free(s);
    else
        ready(ready_arg);
}

/* Room for one more set in an outbox's list of n; false when out of
 * memory. */
static bool set_list_grow(struct lc_set ***list, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t more = *cap ? *cap * 2 : 16;
    struct lc_set **grown = realloc(*list, more * sizeof(*grown));
    if (!grown)
        return false;
    *list = grown;
    *cap = more;
    return true;
}

/* Sends the set and hands it to the job: through env->outbox, built when
 * the caller flushes it, or built and sent now. 0, or -1 (the set freed,
 * the job's error set) when it could not be built now; an empty set is
 * freed and nothing is sent. */
int lc_set_send(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    if (s->n == 0) {
        lc_set_free(s);
        return 0;
    }
    s->timeout_ms = env->call_ms + (s->kind == SET_WATCH ? env->hold_ms : 0);
    /* Out of memory for the outbox: built and sent now, under the caller's
     * lock (slower, not wrong). */
    struct lc_outbox *box = env->outbox;
    if (box && !set_list_grow(&box->sets, box->n, &box->cap))
        box = NULL;
    if (!box && set_build(s) < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a request");
        lc_set_free(s);
        return -1;
    }
    s->outstanding = s->n;
    j->calls = &s->base;
    if (box) {
        box->sets[box->n++] = s;
        return 0;
    }
    int64_t now = now_ms();
    for (size_t k = 0; k < s->n; k++)
        s->sent_ms[k] = now;
    /* Nothing of the set is touched after the last send: its answers may
     * already be acted upon. */
    size_t n = s->n;
    for (size_t k = 0; k < n; k++)
        env->transport->send(env->transport->ctx, &s->call[k]);
    return 0;
}

/* A set acted upon: freed by the caller's flush, after its lock (a
 * 4,096-node set is thousands of answers to free), or now. */
void lc_set_retire(struct lc_set *s, const struct lc_env *env)
{
    struct lc_outbox *box = env->outbox;
    if (box && set_list_grow(&box->spent, box->nspent, &box->spentcap))
        box->spent[box->nspent++] = s;
    else
        lc_set_free(s);
}

void lc_outbox_flush(struct lc_outbox *box, const struct lc_transport *t)
{
    for (size_t i = 0; i < box->nspent; i++)
        lc_set_free(box->spent[i]);
    box->nspent = 0;
    /* Every set is built before any is sent: once sent, a set's answers
     * may be acted upon and it freed. */
    size_t ncalls = 0;
    for (size_t i = 0; i < box->n; i++)
        ncalls += box->sets[i]->n;
    struct agent_call **calls = malloc((ncalls ? ncalls : 1) * sizeof(*calls));
    size_t sent = 0, unbuilt = 0;
    int64_t now = now_ms();
    for (size_t i = 0; i < box->n; i++) {
        struct lc_set *s = box->sets[i];
        if (!calls || set_build(s) < 0) {
            box->sets[unbuilt++] = s;   /* answered after the others are sent */
            continue;
        }
        for (size_t k = 0; k < s->n; k++) {
            s->sent_ms[k] = now;
            calls[sent++] = &s->call[k];
        }
    }
    if (sent && t->send_many)
        t->send_many(t->ctx, calls, sent);
    else
        for (size_t k = 0; k < sent; k++)
            t->send(t->ctx, calls[k]);
    free(calls);
    for (size_t i = 0; i < unbuilt; i++)
        set_unbuilt(box->sets[i]);
    box->n = 0;
}

void lc_outbox_free(struct lc_outbox *box)
{
    for (size_t i = 0; i < box->nspent; i++)
        lc_set_free(box->spent[i]);
    free(box->sets);
    free(box->spent);
    *box = (struct lc_outbox){ 0 };
}

