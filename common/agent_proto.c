#include "agent_proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fair_policy.h"

static int finish(struct rpc_reader *r)
{
    return rpc_reader_done(r) ? 0 : -EBADMSG;
}

void agent_start_put(struct rpc_writer *w, const struct agent_start *m)
{
    rpc_put_u32(w, m->job_id);
    rpc_put_u32(w, m->uid);
    rpc_put_u32(w, m->gid);
    rpc_put_u32(w, m->index);
    rpc_put_u32(w, m->nservers);
    rpc_put_u64(w, m->chunk_size);
    rpc_put_u64(w, m->quota);
    rpc_put_str(w, m->listen_host);
    rpc_put_str(w, m->storage);
    rpc_put_str(w, m->secret_hex);
    rpc_put_u32(w, (uint32_t)m->numa_node);
    rpc_put_u32(w, m->flags);
    rpc_put_str(w, m->persist_name ? m->persist_name : "");
    rpc_put_u32(w, m->access_gid);
    rpc_put_str(w, m->server_key_hex ? m->server_key_hex : "");
    rpc_put_str(w, m->fair_policy ? m->fair_policy : "");
}

int agent_start_get(struct rpc_reader *r, struct agent_start *m)
{
    m->job_id = rpc_get_u32(r);
    m->uid = rpc_get_u32(r);
    m->gid = rpc_get_u32(r);
    m->index = rpc_get_u32(r);
    m->nservers = rpc_get_u32(r);
    m->chunk_size = rpc_get_u64(r);
    m->quota = rpc_get_u64(r);
    m->listen_host = rpc_get_str(r);
    m->storage = rpc_get_str(r);
    m->secret_hex = rpc_get_str(r);
    m->numa_node = (int32_t)rpc_get_u32(r);
    m->flags = rpc_get_u32(r);
    m->persist_name = rpc_get_str(r);
    m->access_gid = rpc_get_u32(r);
    m->server_key_hex = rpc_get_str(r);
    m->fair_policy = rpc_get_str(r);
    if (finish(r) < 0 || (m->flags & ~AGENT_START_PERSISTENT))
        return -EBADMSG;
    if (m->fair_policy[0] && fair_policy_parse(m->fair_policy) < 0)
        return -EBADMSG;
    /* A persistent START names its instance, a job's names none; whether
     * the id fits the flag the agent says itself, naming the id. */
    if ((m->flags & AGENT_START_PERSISTENT) ? !agent_persist_name_ok(m->persist_name)
                                            : m->persist_name[0] != '\0' || m->access_gid != 0 ||
                                              m->fair_policy[0] != '\0')
        return -EBADMSG;
    return 0;
}

int agent_persist_name_ok(const char *name)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    size_t len = name ? strlen(name) : 0;
    /* ASCII whatever the locale: strspn, not isalpha. */
    return len && len <= AGENT_PERSIST_NAME_MAX && strchr(letters, name[0]) &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len;
}

void agent_started_put(struct rpc_writer *w, const struct agent_started *m)
{
    rpc_put_u32(w, m->port);
    rpc_put_u32(w, m->pid);
}

int agent_started_get(struct rpc_reader *r, struct agent_started *m)
{
    m->port = rpc_get_u32(r);
    m->pid = rpc_get_u32(r);
    return finish(r) == 0 && m->port > 0 && m->port <= 65535 ? 0 : -EBADMSG;
}

void agent_stage_status_put(struct rpc_writer *w, const struct agent_stage_status *m)
{
    rpc_put_u32(w, m->state);
    rpc_put_u32(w, (uint32_t)m->exit_status);
    rpc_put_str(w, m->summary ? m->summary : "");
    rpc_put_str(w, m->errors ? m->errors : "");
    if (m->has_server) {
        rpc_put_u32(w, m->port);
        rpc_put_u32(w, m->pid);
        rpc_put_u64(w, m->used);
    }
}

int agent_stage_status_get(struct rpc_reader *r, struct agent_stage_status *m)
{
    m->state = rpc_get_u32(r);
    m->exit_status = (int32_t)rpc_get_u32(r);
    m->summary = rpc_get_str(r);
    m->errors = rpc_get_str(r);
    m->has_server = 0;
    m->port = m->pid = 0;
    m->used = 0;
    if (rpc_reader_ok(r) && r->off < r->len) {
        m->has_server = 1;
        m->port = rpc_get_u32(r);
        m->pid = rpc_get_u32(r);
        m->used = rpc_get_u64(r);
        if (m->port == 0 || m->port > 65535)
            return -EBADMSG;
    }
    return finish(r) == 0 && m->state <= AGENT_OP_DONE ? 0 : -EBADMSG;
}

void agent_watch_put(struct rpc_writer *w, const struct agent_watch *m)
{
    rpc_put_u32(w, m->job_id);
    rpc_put_u32(w, m->known);
    rpc_put_u32(w, m->hold_ms);
}

int agent_watch_get(struct rpc_reader *r, struct agent_watch *m)
{
    m->job_id = rpc_get_u32(r);
    m->known = rpc_get_u32(r);
    m->hold_ms = rpc_get_u32(r);
    return finish(r) == 0 && m->known <= AGENT_OP_DONE && m->hold_ms <= AGENT_WATCH_HOLD_MAX_MS
               ? 0 : -EBADMSG;
}

void agent_configure_put(struct rpc_writer *w, const struct agent_configure *m)
{
    rpc_put_u32(w, m->job_id);
    rpc_put_str(w, m->instance_text);
    rpc_put_str(w, m->mount);
    rpc_put_u32(w, m->access);
    rpc_put_u32(w, m->uid);
    rpc_put_u32(w, m->gid);
    rpc_put_str(w, m->name ? m->name : "");
}

int agent_configure_get(struct rpc_reader *r, struct agent_configure *m)
{
    m->job_id = rpc_get_u32(r);
    m->instance_text = rpc_get_str(r);
    m->mount = rpc_get_str(r);
    m->access = rpc_get_u32(r);
    m->uid = rpc_get_u32(r);
    m->gid = rpc_get_u32(r);
    m->name = rpc_get_str(r);
    if (finish(r) < 0 || m->access > AGENT_ACCESS_BOTH || (m->uid == 0) != (m->gid == 0))
        return -EBADMSG;
    /* A further mount is an instance's, through the interposer only. */
    if (m->name[0] && (!agent_persist_name_ok(m->name) || m->access != AGENT_ACCESS_PRELOAD))
        return -EBADMSG;
    return 0;
}

void agent_stage_put(struct rpc_writer *w, const struct agent_stage *m)
{
    rpc_put_u32(w, m->job_id);
    rpc_put_u32(w, m->direction);
    rpc_put_u32(w, m->type);
    rpc_put_u32(w, m->worker);
    rpc_put_u32(w, m->nworkers);
    rpc_put_u32(w, m->threads);
    rpc_put_u32(w, m->flags);
    rpc_put_u64(w, m->max_mdops);
    rpc_put_u64(w, m->max_bandwidth);
    rpc_put_str(w, m->source);
    rpc_put_str(w, m->destination);
    rpc_put_str(w, m->name ? m->name : "");
    rpc_put_u32(w, m->threads_per_cpu);
}

int agent_stage_get(struct rpc_reader *r, struct agent_stage *m)
{
    m->job_id = rpc_get_u32(r);
    m->direction = rpc_get_u32(r);
    m->type = rpc_get_u32(r);
    m->worker = rpc_get_u32(r);
    m->nworkers = rpc_get_u32(r);
    m->threads = rpc_get_u32(r);
    m->flags = rpc_get_u32(r);
    m->max_mdops = rpc_get_u64(r);
    m->max_bandwidth = rpc_get_u64(r);
    m->source = rpc_get_str(r);
    m->destination = rpc_get_str(r);
    m->name = rpc_get_str(r);
    m->threads_per_cpu = rpc_get_u32(r);
    if (finish(r) < 0 || (m->name[0] && !agent_persist_name_ok(m->name)) || m->direction > AGENT_STAGE_OUT || m->type >= STAGE_TYPE_COUNT ||
        m->nworkers == 0 || m->worker >= m->nworkers)
        return -EBADMSG;
    return 0;
}

void agent_job_ref_put(struct rpc_writer *w, const struct agent_job_ref *m)
{
    rpc_put_u32(w, m->job_id);
    rpc_put_u32(w, m->arg);
}

int agent_job_ref_get(struct rpc_reader *r, struct agent_job_ref *m)
{
    m->job_id = rpc_get_u32(r);
    m->arg = rpc_get_u32(r);
    return finish(r);
}

void agent_instance_put(struct rpc_writer *w, const struct agent_instance *m)
{
    rpc_put_u32(w, m->id);
    rpc_put_str(w, m->name);
    rpc_put_u32(w, m->uid);
    rpc_put_u32(w, m->access_gid);
    rpc_put_u32(w, m->port);
    rpc_put_u32(w, m->pid);
    rpc_put_u64(w, m->used);
    rpc_put_u64(w, m->quota);
    rpc_put_str(w, m->root);
}

int agent_instance_get(struct rpc_reader *r, struct agent_instance *m)
{
    m->id = rpc_get_u32(r);
    m->name = rpc_get_str(r);
    m->uid = rpc_get_u32(r);
    m->access_gid = rpc_get_u32(r);
    m->port = rpc_get_u32(r);
    m->pid = rpc_get_u32(r);
    m->used = rpc_get_u64(r);
    m->quota = rpc_get_u64(r);
    m->root = rpc_get_str(r);
    return rpc_reader_ok(r) && agent_id_is_persistent(m->id) && agent_persist_name_ok(m->name) &&
                   m->port > 0 && m->port <= 65535
               ? 0 : -EBADMSG;
}

int agent_socket_path(const char *pattern, const char *node, char *out, size_t len)
{
    const char *pn = strstr(pattern, "%n");
    size_t n = pn ? (size_t)snprintf(out, len, "%.*s%s%s", (int)(pn - pattern), pattern, node, pn + 2)
                  : (size_t)snprintf(out, len, "%s", pattern);
    if (n >= len) {
        if (len)
            out[0] = '\0';
        return -ENAMETOOLONG;
    }
    return 0;
}

const char *agent_op_name(uint16_t op)
{
    switch (op) {
    case AGENT_PING: return "ping";
    case AGENT_START: return "start";
    case AGENT_CONFIGURE: return "configure";
    case AGENT_STAGE: return "stage";
    case AGENT_STATUS: return "status";
    case AGENT_TEARDOWN: return "teardown";
    case AGENT_RELEASE: return "release";
    case AGENT_WATCH: return "watch";
    case AGENT_QOS: return "qos";
    case AGENT_QOS_REPORT: return "qos report";
    case AGENT_LIST: return "list";
    case AGENT_QOS_GROUP: return "qos group";
    }
    return "unknown";
}

const char *agent_fault_name(uint32_t fault)
{
    switch (fault) {
    case AGENT_FAULT_TRANSIENT: return "transient";
    case AGENT_FAULT_JOB: return "job";
    case AGENT_FAULT_NODE: return "node";
    }
    return "unknown";
}

void agent_error_put(struct rpc_writer *w, const struct agent_error *e)
{
    rpc_put_str(w, e->text);
    rpc_put_u32(w, e->fault);
}

int agent_error_get(struct rpc_reader *r, const char **text, uint32_t *fault)
{
    *text = rpc_get_str(r);
    *fault = rpc_get_u32(r);
    return finish(r) == 0 && *fault <= AGENT_FAULT_NODE ? 0 : -EBADMSG;
}
