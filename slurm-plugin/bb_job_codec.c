/* bb_job_codec: one record as typed fields (bb_job_encode, bb_job_decode):
 * the request as parsed, its totals, a persistent instance's settings,
 * and the nodes; a record that does not decode becomes a marker naming
 * the job (bb_job.unreadable). The file around the records:
 * bb_job_file.c. */
#include "bb_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "persist.h"
#include "rpc.h"

enum record_kind { RECORD_JOB = 1, RECORD_UNREADABLE = 2 };

static void put_opt_str(struct rpc_writer *w, const char *s)
{
    rpc_put_u32(w, s != NULL);
    if (s)
        rpc_put_str(w, s);
}

/* A copy of an optional string; *ok turns false when a present one cannot
 * be read or copied. */
static char *get_opt_str(struct rpc_reader *r, bool *ok)
{
    uint32_t present = rpc_get_u32(r);
    if (!present)
        return NULL;
    const char *s = present == 1 ? rpc_get_str(r) : NULL;
    char *copy = s ? strdup(s) : NULL;
    if (!copy)
        *ok = false;
    return copy;
}

static char *get_str(struct rpc_reader *r, bool *ok)
{
    const char *s = rpc_get_str(r);
    char *copy = s ? strdup(s) : NULL;
    if (!copy)
        *ok = false;
    return copy;
}

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return u;
}

static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

static void put_totals(struct rpc_writer *w, const struct stage_totals *t)
{
    rpc_put_u64(w, t->files);
    rpc_put_u64(w, t->dirs);
    rpc_put_u64(w, t->bytes);
    rpc_put_u64(w, t->errors);
    rpc_put_u64(w, double_bits(t->seconds));
    rpc_put_u64(w, t->verified);
}

static void get_totals(struct rpc_reader *r, struct stage_totals *t)
{
    t->files = rpc_get_u64(r);
    t->dirs = rpc_get_u64(r);
    t->bytes = rpc_get_u64(r);
    t->errors = rpc_get_u64(r);
    t->seconds = bits_double(rpc_get_u64(r));
    t->verified = rpc_get_u64(r);
}

static void put_request(struct rpc_writer *w, const struct bb_request *q)
{
    rpc_put_u64(w, q->capacity);
    rpc_put_u64(w, q->chunk_size);
    rpc_put_u64(w, q->max_bw);
    rpc_put_u64(w, q->max_mdops);
    rpc_put_u32(w, (uint32_t)q->nstages);
    for (size_t i = 0; i < q->nstages; i++) {
        const struct stage_spec *s = &q->stages[i];
        rpc_put_u32(w, (uint32_t)s->direction);
        rpc_put_u32(w, (uint32_t)s->type);
        rpc_put_str(w, s->source);
        rpc_put_str(w, s->destination);
        rpc_put_u32(w, (uint32_t)s->line);
        rpc_put_u32(w, (uint32_t)s->verify);
    }
}

static bool get_request(struct rpc_reader *r, struct bb_request *q)
{
    q->capacity = rpc_get_u64(r);
    q->chunk_size = rpc_get_u64(r);
    q->max_bw = rpc_get_u64(r);
    q->max_mdops = rpc_get_u64(r);
    uint32_t n = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || n > DIRECTIVE_MAX_STAGES)
        return false;
    q->stages = calloc(n ? n : 1, sizeof(*q->stages));
    if (!q->stages)
        return false;
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        struct stage_spec *s = &q->stages[i];
        uint32_t dir = rpc_get_u32(r), type = rpc_get_u32(r);
        s->source = get_str(r, &ok);
        s->destination = get_str(r, &ok);
        s->line = (int)rpc_get_u32(r);
        s->verify = (int)rpc_get_u32(r);
        q->nstages = i + 1;
        if (dir > STAGE_OUT || type > STAGE_LIST)
            ok = false;
        s->direction = (enum stage_direction)dir;
        s->type = (enum stage_type)type;
    }
    return ok && rpc_reader_ok(r);
}

/* The persistent-instance lines: a trailing section of the job record,
 * written only when there are any, so records of before (and of jobs with
 * none) end where they always did. */
static void put_persist(struct rpc_writer *w, const struct bb_request *q)
{
    if (!q->npersist)
        return;
    rpc_put_u32(w, (uint32_t)q->npersist);
    for (size_t i = 0; i < q->npersist; i++) {
        const struct persist_spec *s = &q->persist[i];
        /* Above the op's byte, flags of what follows the line (a record of
         * before has none): bit 8, the fair_share= policy. */
        rpc_put_u32(w, (uint32_t)s->op | (uint32_t)(s->fair_share[0] != '\0') << 8);
        rpc_put_str(w, s->name);
        rpc_put_u64(w, s->capacity);
        rpc_put_u32(w, s->nodes);
        put_opt_str(w, s->group);
        rpc_put_u32(w, (uint32_t)s->line);
        if (s->fair_share[0])
            rpc_put_str(w, s->fair_share);
    }
}

static bool get_persist(struct rpc_reader *r, struct bb_request *q)
{
    if (!rpc_reader_ok(r) || r->off >= r->len)
        return true;
    uint32_t n = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || n == 0 || n > PERSIST_MAX_LINES)
        return false;
    if (!(q->persist = calloc(n, sizeof(*q->persist))))
        return false;
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        struct persist_spec *s = &q->persist[i];
        uint32_t word = rpc_get_u32(r), op = word & 0xff;
        const char *name = rpc_get_str(r);
        s->capacity = rpc_get_u64(r);
        s->nodes = rpc_get_u32(r);
        s->group = get_opt_str(r, &ok);
        s->line = (int)rpc_get_u32(r);
        const char *fair = word & 1u << 8 ? rpc_get_str(r) : "";
        s->origin = "--bb";   /* the canonical form it was parsed again from */
        q->npersist = i + 1;
        if (!name || strlen(name) > PERSIST_NAME_MAX || op < PERSIST_CREATE || op > PERSIST_DESTROY ||
            (word & ~(0xffu | 1u << 8)) || !fair || (fair[0] && fair_policy_parse(fair) < 0))
            ok = false;
        else {
            snprintf(s->name, sizeof(s->name), "%s", name);
            snprintf(s->fair_share, sizeof(s->fair_share), "%s", fair);
        }
        s->op = (enum persist_op)op;
        s->access = s->group ? PERSIST_ACCESS_GROUP : PERSIST_ACCESS_USER;
    }
    return ok && rpc_reader_ok(r);
}

void bb_job_encode(struct rpc_writer *w, const struct bb_job *j)
{
    if (j->unreadable) {
        /* Kept until the plugin settles it, across further restarts. */
        rpc_put_u32(w, RECORD_UNREADABLE);
        rpc_put_u32(w, j->job_id);
        rpc_put_str(w, j->unreadable);
        return;
    }
    rpc_put_u32(w, RECORD_JOB);
    rpc_put_u32(w, j->job_id);
    rpc_put_u32(w, j->uid);
    rpc_put_u32(w, j->gid);
    put_opt_str(w, j->user);
    put_request(w, &j->req);
    rpc_put_u32(w, (uint32_t)j->phase);
    rpc_put_u32(w, (uint32_t)j->failure);
    put_opt_str(w, j->error);
    rpc_put_u32(w, (uint32_t)j->hurry | (uint32_t)j->released << 1 |
                   (uint32_t)j->finalizing << 2 | (uint32_t)j->superseded << 3 |
                   /* bits 4-5: access= (a record of before it has 0: unset) */
                   (uint32_t)j->req.access << 4 |
                   /* bit 6: the servers' key follows the secret */
                   (uint32_t)(j->server_key_hex[0] != '\0') << 6 |
                   /* bit 7: a failed stage-out kept (its fields follow the times) */
                   (uint32_t)(j->t_out_failed != 0) << 7 |
                   /* bit 8: a stage-out pass failed on the job's file system */
                   (uint32_t)j->out_fs_lost << 8);
    rpc_put_u32(w, (uint32_t)j->nnodes);
    for (size_t i = 0; i < j->nnodes; i++) {
        const struct bb_node *n = &j->nodes[i];
        rpc_put_str(w, n->name);
        rpc_put_str(w, n->agent_host);
        rpc_put_u32(w, (uint32_t)n->agent_port);
        put_opt_str(w, n->storage);
        rpc_put_u32(w, (uint32_t)n->numa_node);
        rpc_put_u32(w, (uint32_t)n->server_port);
        /* bits 8-31: the job's CPUs there (a record of before has 0: unknown) */
        rpc_put_u32(w, (uint32_t)n->started | (uint32_t)n->stage_sent << 1 |
                       (n->cpus < (1u << 24) ? n->cpus : (1u << 24) - 1) << 8);
    }
    rpc_put_u64(w, j->node_capacity);
    rpc_put_u64(w, j->chunk_size);
    rpc_put_str(w, j->secret_hex);
    if (j->server_key_hex[0])
        rpc_put_str(w, j->server_key_hex);
    put_opt_str(w, j->storage);
    put_opt_str(w, j->mount);
    put_opt_str(w, j->instance_path);
    rpc_put_u64(w, j->stage_index);
    put_totals(w, &j->in);
    put_totals(w, &j->out);
    const time_t *times[] = { &j->t_begin, &j->t_deployed, &j->t_staged_in,
                              &j->t_ended, &j->t_staged_out, &j->t_done };
    for (size_t i = 0; i < sizeof(times) / sizeof(*times); i++)
        rpc_put_i64(w, (int64_t)*times[i]);
    if (j->t_out_failed) {
        rpc_put_i64(w, (int64_t)j->t_out_failed);
        rpc_put_i64(w, (int64_t)j->t_out_pass);
        rpc_put_u64(w, j->out_failed);
        rpc_put_u64(w, j->out_redo);
        rpc_put_u32(w, j->out_passes);
    }
    put_persist(w, &j->req);
    /* A persistent instance's servers: the instance's record (persist.c's
     * codec) follows its create_persistent line. */
    if (j->persist && j->req.npersist)
        persist_encode(w, j->persist);
}

static bool get_nodes(struct rpc_reader *r, struct bb_job *j)
{
    uint32_t n = rpc_get_u32(r);
    /* Each node takes at least 30 bytes: a count beyond what is left is
     * damage, not a reason to allocate. */
    if (!rpc_reader_ok(r) || n > (r->len - r->off) / 30)
        return false;
    j->nodes = calloc(n ? n : 1, sizeof(*j->nodes));
    if (!j->nodes)
        return false;
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        struct bb_node *node = &j->nodes[i];
        j->nnodes = i + 1;
        node->name = get_str(r, &ok);
        node->agent_host = get_str(r, &ok);
        node->agent_port = (int)rpc_get_u32(r);
        node->storage = get_opt_str(r, &ok);
        node->numa_node = (int)(int32_t)rpc_get_u32(r);
        node->server_port = (int)rpc_get_u32(r);
        uint32_t flags = rpc_get_u32(r);
        node->started = flags & 1;
        node->stage_sent = flags & 2;
        node->cpus = flags >> 8;
    }
    return ok && rpc_reader_ok(r);
}

struct bb_job *bb_job_decode(struct rpc_reader *r, char *err, size_t errlen)
{
    uint32_t kind = rpc_get_u32(r);
    uint32_t id = rpc_get_u32(r);
    if (!rpc_reader_ok(r) || (kind != RECORD_JOB && kind != RECORD_UNREADABLE)) {
        snprintf(err, errlen, "record of unknown kind %u", kind);
        return NULL;
    }
    struct bb_job *j = bb_job_new(id);
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    bool ok = true;
    const char *what = "fields";
    if (kind == RECORD_UNREADABLE) {
        j->unreadable = get_str(r, &ok);
        if (ok && !j->unreadable[0])
            ok = false;   /* its reason is what such a record is for */
        goto check;
    }
    j->uid = rpc_get_u32(r);
    j->gid = rpc_get_u32(r);
    j->user = get_opt_str(r, &ok);
    if (ok && !get_request(r, &j->req)) {
        ok = false;
        what = "request";
        goto check;
    }
    uint32_t phase = rpc_get_u32(r), failure = rpc_get_u32(r);
    j->error = get_opt_str(r, &ok);
    uint32_t flags = rpc_get_u32(r);
    if (phase > PHASE_COMPLETE || failure > FAIL_TRANSIENT) {
        ok = false;
        what = "phase";
        goto check;
    }
    j->phase = (enum bb_phase)phase;
    j->failure = (enum bb_failure)failure;
    j->hurry = flags & 1;
    j->released = flags & 2;
    j->finalizing = flags & 4;
    j->superseded = flags & 8;
    j->out_fs_lost = flags >> 8 & 1;
    j->req.access = (enum bb_access)(flags >> 4 & 3);
    if (ok && !get_nodes(r, j)) {
        ok = false;
        what = "nodes";
        goto check;
    }
    j->node_capacity = rpc_get_u64(r);
    j->chunk_size = rpc_get_u64(r);
    const char *secret = rpc_get_str(r);
    if (!secret || strlen(secret) >= sizeof(j->secret_hex)) {
        ok = false;
        what = "secret";
        goto check;
    }
    snprintf(j->secret_hex, sizeof(j->secret_hex), "%s", secret);
    const char *server_key = flags & 64 ? rpc_get_str(r) : "";
    if (!server_key || strlen(server_key) >= sizeof(j->server_key_hex)) {
        ok = false;
        what = "servers' key";
        goto check;
    }
    snprintf(j->server_key_hex, sizeof(j->server_key_hex), "%s", server_key);
    j->storage = get_opt_str(r, &ok);
    j->mount = get_opt_str(r, &ok);
    j->instance_path = get_opt_str(r, &ok);
    j->stage_index = (size_t)rpc_get_u64(r);
    get_totals(r, &j->in);
    get_totals(r, &j->out);
    time_t *times[] = { &j->t_begin, &j->t_deployed, &j->t_staged_in,
                        &j->t_ended, &j->t_staged_out, &j->t_done };
    for (size_t i = 0; i < sizeof(times) / sizeof(*times); i++)
        *times[i] = (time_t)rpc_get_i64(r);
    if (flags & 128) {
        j->t_out_failed = (time_t)rpc_get_i64(r);
        j->t_out_pass = (time_t)rpc_get_i64(r);
        j->out_failed = rpc_get_u64(r);
        j->out_redo = rpc_get_u64(r);
        j->out_passes = rpc_get_u32(r);
    }
    if (ok && !get_persist(r, &j->req)) {
        ok = false;
        what = "persistent-instance lines";
    }
    if (ok && j->req.npersist && r->off < r->len) {
        char why[256];
        if (!(j->persist = persist_decode(r, why, sizeof(why)))) {
            ok = false;
            what = "persistent instance";
        }
    }
check:
    if (!ok || !rpc_reader_done(r)) {
        snprintf(err, errlen, "job %u: its %s do not decode (%s)", id,
                 ok ? "fields" : what, rpc_reader_ok(r) ? "bad value or extra bytes"
                                                         : "truncated or malformed");
        bb_job_free(j);
        return NULL;
    }
    return j;
}

