/* qos_proto: see qos_proto.h. */
#include "qos_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A class vector is the bulk of every message, and most of its classes
 * are 0 (usage of a class a job does not use) or QOS_UNLIMITED (the limit
 * of a class the site does not cap): a u16 mask of the classes that are
 * not 0, then each of those as a LEB128 varint of value + 1, so that
 * QOS_UNLIMITED (all ones) wraps to one byte. A 1,000-node cycle's
 * messages were 80 bytes per vector, a quarter of qosd's cycle spent
 * sealing and copying them (issue 24's acceptance 5). */
#define VARINT_MAX 10

static void put_varint(uint8_t **p, uint64_t x)
{
    while (x >= 0x80) {
        *(*p)++ = (uint8_t)(x | 0x80);
        x >>= 7;
    }
    *(*p)++ = (uint8_t)x;
}

void qos_classes_put(struct rpc_writer *w, const uint64_t *v)
{
    uint8_t buf[2 + VARINT_MAX * QOS_NCLASSES], *p = buf + 2;
    unsigned mask = 0;
    for (int c = 0; c < QOS_NCLASSES; c++)
        if (v[c]) {
            mask |= 1u << c;
            put_varint(&p, v[c] + 1);
        }
    buf[0] = (uint8_t)mask;
    buf[1] = (uint8_t)(mask >> 8);
    rpc_put_raw(w, buf, (size_t)(p - buf));
}

/* One varint, in its one shortest form (a value has one encoding, so
 * what decodes encodes back the same): at most 10 bytes, the last adding
 * at most bit 63, and not 0 after the first. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *x)
{
    uint64_t v = 0;
    for (int i = 0; i < VARINT_MAX && *p < end; i++) {
        uint8_t b = *(*p)++;
        if ((i == VARINT_MAX - 1 && b > 1) || (i > 0 && b == 0))
            return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *x = v;
            return 0;
        }
    }
    return -1;
}

static void get_classes(struct rpc_reader *r, uint64_t *v)
{
    memset(v, 0, 8 * QOS_NCLASSES);
    if (r->failed || r->len - r->off < 2) {
        r->failed = 1;
        return;
    }
    const uint8_t *p = r->data + r->off, *end = r->data + r->len;
    unsigned mask = (unsigned)p[0] | (unsigned)p[1] << 8;
    p += 2;
    if (mask >> QOS_NCLASSES) {
        r->failed = 1;
        return;
    }
    for (int c = 0; c < QOS_NCLASSES; c++) {
        uint64_t x;
        if (!(mask >> c & 1))
            continue;
        /* 1 would decode as 0: not the encoding of any value. */
        if (get_varint(&p, end, &x) < 0 || x == 1) {
            r->failed = 1;
            memset(v, 0, 8 * QOS_NCLASSES);
            return;
        }
        v[c] = x - 1;
    }
    r->off = (size_t)(p - r->data);
}

/* The job count, checked against the bytes left (each job takes at least
 * min_bytes) so that a short message cannot make us allocate much. */
static int get_count(struct rpc_reader *r, size_t min_bytes, uint32_t *n, void **array, size_t size)
{
    *n = rpc_get_u32(r);
    *array = NULL;
    if (!rpc_reader_ok(r) || *n > QOS_PROTO_MAX_JOBS || (size_t)*n * min_bytes > r->len - r->off)
        return -EBADMSG;
    if (*n && !(*array = calloc(*n, size)))
        return -ENOMEM;
    return 0;
}

static int finish(struct rpc_reader *r, void **array)
{
    if (rpc_reader_done(r))
        return 0;
    free(*array);
    *array = NULL;
    return -EBADMSG;
}

void qos_cycle_put(struct rpc_writer *w, const struct qos_cycle *c)
{
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, c->cycle);
    rpc_put_u32(w, c->answer_in_ms);
    rpc_put_u32(w, c->njobs);
    for (uint32_t i = 0; i < c->njobs; i++) {
        rpc_put_u32(w, c->jobs[i].job_id);
        rpc_put_u32(w, c->jobs[i].uid);
        qos_classes_put(w, c->jobs[i].limit.v);
    }
}

int qos_cycle_get(struct rpc_reader *r, struct qos_cycle *c)
{
    memset(c, 0, sizeof(*c));
    if (rpc_get_u32(r) != QOS_PROTO_VERSION)
        return -EBADMSG;
    c->cycle = rpc_get_u64(r);
    c->answer_in_ms = rpc_get_u32(r);
    if (c->answer_in_ms > QOS_ANSWER_MAX_MS)
        return -EBADMSG;
    int rc = get_count(r, 8 + 2, &c->njobs, (void **)&c->jobs, sizeof(*c->jobs));
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < c->njobs && rpc_reader_ok(r); i++) {
        c->jobs[i].job_id = rpc_get_u32(r);
        c->jobs[i].uid = rpc_get_u32(r);
        get_classes(r, c->jobs[i].limit.v);
    }
    return finish(r, (void **)&c->jobs);
}

void qos_report_put(struct rpc_writer *w, const struct qos_report *rep)
{
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, rep->cycle);
    rpc_put_u32(w, rep->njobs);
    for (uint32_t i = 0; i < rep->njobs; i++) {
        rpc_put_u32(w, rep->jobs[i].job_id);
        rpc_put_u32(w, rep->jobs[i].procs);
        qos_classes_put(w, rep->jobs[i].used);
        qos_classes_put(w, rep->jobs[i].waited_ns);
    }
}

int qos_report_get_into(struct rpc_reader *r, struct qos_report *rep, uint32_t *cap)
{
    struct qos_job_usage *kept = rep->jobs;
    *rep = (struct qos_report){ .jobs = kept };
    if (rpc_get_u32(r) != QOS_PROTO_VERSION)
        return -EBADMSG;
    rep->cycle = rpc_get_u64(r);
    uint32_t n = rpc_get_u32(r);
    /* Bounded by the bytes left (each job takes at least 12) before
     * anything is allocated for it. */
    if (!rpc_reader_ok(r) || n > QOS_PROTO_MAX_JOBS || (size_t)n * (8 + 2 * 2) > r->len - r->off)
        return -EBADMSG;
    if (n > *cap) {
        struct qos_job_usage *grown = realloc(kept, n * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        rep->jobs = grown;
        *cap = n;
    }
    for (uint32_t i = 0; i < n && rpc_reader_ok(r); i++) {
        rep->jobs[i].job_id = rpc_get_u32(r);
        rep->jobs[i].procs = rpc_get_u32(r);
        get_classes(r, rep->jobs[i].used);
        get_classes(r, rep->jobs[i].waited_ns);
    }
    if (!rpc_reader_done(r))
        return -EBADMSG;
    rep->njobs = n;
    return 0;
}

int qos_report_get(struct rpc_reader *r, struct qos_report *rep)
{
    uint32_t cap = 0;
    rep->jobs = NULL;
    int rc = qos_report_get_into(r, rep, &cap);
    if (rc < 0) {
        free(rep->jobs);
        memset(rep, 0, sizeof(*rep));
    }
    return rc;
}

void qos_status_put(struct rpc_writer *w, const struct qos_status *s)
{
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, s->cycle);
    rpc_put_u64(w, s->time_ms);
    rpc_put_u32(w, s->period_ms);
    rpc_put_str(w, s->policy);
    qos_classes_put(w, s->capacity.v);
    rpc_put_u32(w, s->agents);
    rpc_put_u32(w, s->agents_up);
    rpc_put_u32(w, s->njobs);
    for (uint32_t i = 0; i < s->njobs; i++) {
        const struct qos_job_status *j = &s->jobs[i];
        rpc_put_u32(w, j->job_id);
        rpc_put_u32(w, j->uid);
        rpc_put_u32(w, j->nodes);
        rpc_put_u32(w, j->nodes_reporting);
        rpc_put_u32(w, j->procs);
        rpc_put_u32(w, j->weight_milli);
        qos_classes_put(w, j->asked);
        qos_classes_put(w, j->demand);
        qos_classes_put(w, j->alloc);
        qos_classes_put(w, j->usage);
    }
}

int qos_status_get(struct rpc_reader *r, struct qos_status *s)
{
    memset(s, 0, sizeof(*s));
    if (rpc_get_u32(r) != QOS_PROTO_VERSION)
        return -EBADMSG;
    s->cycle = rpc_get_u64(r);
    s->time_ms = rpc_get_u64(r);
    s->period_ms = rpc_get_u32(r);
    const char *policy = rpc_get_str(r);
    if (!policy || strlen(policy) >= sizeof(s->policy))
        return -EBADMSG;
    strcpy(s->policy, policy);
    get_classes(r, s->capacity.v);
    s->agents = rpc_get_u32(r);
    s->agents_up = rpc_get_u32(r);
    int rc = get_count(r, 24 + 4 * 2, &s->njobs, (void **)&s->jobs, sizeof(*s->jobs));
    if (rc < 0)
        return rc;
    for (uint32_t i = 0; i < s->njobs && rpc_reader_ok(r); i++) {
        struct qos_job_status *j = &s->jobs[i];
        j->job_id = rpc_get_u32(r);
        j->uid = rpc_get_u32(r);
        j->nodes = rpc_get_u32(r);
        j->nodes_reporting = rpc_get_u32(r);
        j->procs = rpc_get_u32(r);
        j->weight_milli = rpc_get_u32(r);
        get_classes(r, j->asked);
        get_classes(r, j->demand);
        get_classes(r, j->alloc);
        get_classes(r, j->usage);
    }
    return finish(r, (void **)&s->jobs);
}
