/* qos_proto: see qos_proto.h. */
#include "qos_proto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
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

/* --- relays: the group messages --------------------------------------- */

/* A nested body: u32 length, patched when the body is written. */
static size_t nested_start(struct rpc_writer *w)
{
    size_t at = w->len;
    rpc_put_u32(w, 0);
    return at;
}

static void nested_end(struct rpc_writer *w, size_t at)
{
    if (rpc_writer_ok(w))
        rpc_patch_u32(w, at, (uint32_t)(w->len - at - 4));
}

void qos_group_request_start(struct qos_group_writer *gw, struct rpc_writer *w, uint64_t cycle,
                             uint32_t answer_in_ms, uint32_t epoch, uint32_t self,
                             const struct qos_group_member *members, uint32_t nmembers)
{
    *gw = (struct qos_group_writer){ .w = w };
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, cycle);
    rpc_put_u32(w, answer_in_ms);
    rpc_put_u32(w, epoch);
    rpc_put_u32(w, self);
    rpc_put_u32(w, members ? nmembers : 0);
    for (uint32_t i = 0; members && i < nmembers; i++) {
        rpc_put_str(w, members[i].node);
        rpc_put_str(w, members[i].host);
        rpc_put_u32(w, members[i].port);
    }
    gw->count_at = w->len;
    rpc_put_u32(w, 0);
}

void qos_group_part_start(struct qos_group_writer *gw, uint32_t index)
{
    rpc_put_u32(gw->w, index);
    gw->part_at = nested_start(gw->w);
    gw->nparts++;
}

void qos_group_part_end(struct qos_group_writer *gw)
{
    nested_end(gw->w, gw->part_at);
}

void qos_group_request_end(struct qos_group_writer *gw)
{
    if (rpc_writer_ok(gw->w))
        rpc_patch_u32(gw->w, gw->count_at, gw->nparts);
}

void qos_group_request_put(struct rpc_writer *w, const struct qos_group_request *g)
{
    struct qos_group_writer gw;
    qos_group_request_start(&gw, w, g->cycle, g->answer_in_ms, g->epoch, g->self,
                            g->nmembers ? g->members : NULL, g->nmembers);
    for (uint32_t i = 0; i < g->nparts; i++) {
        qos_group_part_start(&gw, g->parts[i].index);
        rpc_put_raw(w, g->parts[i].body, g->parts[i].len);
        qos_group_part_end(&gw);
    }
    qos_group_request_end(&gw);
}

/* A string of 1 to max bytes (NUL excluded), or NULL with r failed. */
static const char *get_name(struct rpc_reader *r, size_t max)
{
    const char *s = rpc_get_str(r);
    if (s && (!s[0] || strlen(s) > max)) {
        r->failed = 1;
        return NULL;
    }
    return s;
}

/* Whether index is below n and not seen yet (seen: QOS_GROUP_MAX bits). */
static bool take_index(uint64_t *seen, uint32_t index, uint32_t n)
{
    if (index >= n || seen[index / 64] >> (index % 64) & 1)
        return false;
    seen[index / 64] |= 1ull << (index % 64);
    return true;
}

int qos_group_request_get(struct rpc_reader *r, struct qos_group_request *g, uint32_t known)
{
    g->nmembers = g->nparts = 0;
    if (rpc_get_u32(r) != QOS_PROTO_VERSION)
        return -EBADMSG;
    g->cycle = rpc_get_u64(r);
    g->answer_in_ms = rpc_get_u32(r);
    g->epoch = rpc_get_u32(r);
    g->self = rpc_get_u32(r);
    uint32_t nmembers = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || g->answer_in_ms > QOS_ANSWER_MAX_MS || nmembers > QOS_GROUP_MAX)
        return -EBADMSG;
    for (uint32_t i = 0; i < nmembers && rpc_reader_ok(r); i++) {
        struct qos_group_member *m = &g->members[i];
        m->node = get_name(r, 64);
        m->host = get_name(r, 255);
        m->port = rpc_get_u32(r);
        if (m->port == 0 || m->port > 65535)
            r->failed = 1;
    }
    uint32_t size = nmembers ? nmembers : known;
    uint32_t nparts = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || size > QOS_GROUP_MAX || g->self >= size || nparts > size)
        return -EBADMSG;
    uint64_t seen[QOS_GROUP_MAX / 64] = { 0 };
    for (uint32_t i = 0; i < nparts && rpc_reader_ok(r); i++) {
        struct qos_group_part *p = &g->parts[i];
        p->index = rpc_get_u32(r);
        const void *body;
        p->len = (uint32_t)rpc_get_bytes(r, &body);
        p->body = body;
        if (rpc_reader_ok(r) && !take_index(seen, p->index, size))
            return -EBADMSG;
    }
    if (!rpc_reader_done(r))
        return -EBADMSG;
    g->nmembers = nmembers;
    g->nparts = nparts;
    return 0;
}

void qos_group_report_start(struct qos_group_writer *gw, struct rpc_writer *w, uint64_t cycle)
{
    *gw = (struct qos_group_writer){ .w = w };
    rpc_put_u32(w, QOS_PROTO_VERSION);
    rpc_put_u64(w, cycle);
    gw->count_at = w->len;
    rpc_put_u32(w, 0);
}

void qos_group_entry_start(struct qos_group_writer *gw, uint32_t index, uint32_t status,
                           const char *reason)
{
    char cut[QOS_GROUP_REASON_MAX + 1];
    snprintf(cut, sizeof(cut), "%s", reason ? reason : "");
    rpc_put_u32(gw->w, index);
    rpc_put_u32(gw->w, status);
    rpc_put_str(gw->w, cut);
    gw->part_at = nested_start(gw->w);
    gw->nparts++;
}

void qos_group_entry_end(struct qos_group_writer *gw)
{
    nested_end(gw->w, gw->part_at);
}

void qos_group_report_end(struct qos_group_writer *gw)
{
    qos_group_request_end(gw);
}

void qos_group_report_put(struct rpc_writer *w, const struct qos_group_report *g)
{
    struct qos_group_writer gw;
    qos_group_report_start(&gw, w, g->cycle);
    for (uint32_t i = 0; i < g->n; i++) {
        qos_group_entry_start(&gw, g->e[i].index, g->e[i].status, g->e[i].reason);
        rpc_put_raw(w, g->e[i].report, g->e[i].len);
        qos_group_entry_end(&gw);
    }
    qos_group_report_end(&gw);
}

int qos_group_report_get(struct rpc_reader *r, struct qos_group_report *g, uint32_t nmembers)
{
    g->n = 0;
    if (rpc_get_u32(r) != QOS_PROTO_VERSION)
        return -EBADMSG;
    g->cycle = rpc_get_u64(r);
    uint32_t n = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || nmembers > QOS_GROUP_MAX || n > nmembers)
        return -EBADMSG;
    uint64_t seen[QOS_GROUP_MAX / 64] = { 0 };
    for (uint32_t i = 0; i < n && rpc_reader_ok(r); i++) {
        struct qos_group_entry *e = &g->e[i];
        e->index = rpc_get_u32(r);
        e->status = rpc_get_u32(r);
        e->reason = rpc_get_str(r);
        const void *rep;
        e->len = (uint32_t)rpc_get_bytes(r, &rep);
        e->report = rep;
        if (!rpc_reader_ok(r))
            break;
        if (!take_index(seen, e->index, nmembers) || e->status >= QOS_MEMBER_NSTATUS ||
            strlen(e->reason) > QOS_GROUP_REASON_MAX ||
            (e->status == QOS_MEMBER_REPORTED) != (e->len > 0))
            return -EBADMSG;
    }
    if (!rpc_reader_done(r))
        return -EBADMSG;
    g->n = n;
    return 0;
}
