/* lifecycle_deploy.c: an instance's deploy (lifecycle_phases.h): START on
 * each node (a leftover of a lost record cleared first), then CONFIGURE
 * with the instance file (and one per further mount), then staging in. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle_phases.h"
#include "log.h"
#include "persist_job.h"

/* The instance's description but its servers, mounted at mount; -1 when
 * the mount or the record's secret cannot be written. */
static int instance_head(struct instance *in, const struct bb_job *j, const char *mount,
                         const struct bb_config *cfg)
{
    *in = (struct instance){ .chunk_size = j->chunk_size, .timeout_ms = (int)cfg->server_timeout_ms,
                             .nservers = (int)j->nnodes };
    if (!mount || strlen(mount) >= sizeof(in->mount) ||
        secret_from_hex(j->secret_hex, in->secret) < 0)
        return -1;
    strcpy(in->mount, mount);
    return 0;
}

/* The instance text of the servers of j, mounted at mount. */
static char *instance_text(const struct bb_job *j, const char *mount, const struct bb_config *cfg)
{
    struct instance in;
    if (instance_head(&in, j, mount, cfg) < 0)
        return NULL;
    in.servers = calloc(j->nnodes ? j->nnodes : 1, sizeof(*in.servers));
    if (!in.servers)
        return NULL;
    for (size_t i = 0; i < j->nnodes; i++) {
        snprintf(in.servers[i].host, sizeof(in.servers[i].host), "%s", j->nodes[i].agent_host);
        in.servers[i].port = j->nodes[i].server_port;
    }
    char *text = instance_format(&in, j->job_id);
    instance_free(&in);
    return text;
}

char *lifecycle_instance_text(const struct bb_job *j, const struct bb_config *cfg)
{
    return instance_text(j, j->mount, cfg);
}

char *lifecycle_persist_text(const struct bb_job *servers, const char *mount,
                             const struct bb_config *cfg)
{
    return instance_text(servers, mount, cfg);
}

static int send_configure(struct bb_job *j, const struct lc_env *env);

/* Node k's START: the set's copy of the job's fields and its node's. */
static void build_start(const struct lc_set *s, size_t k, struct rpc_writer *w)
{
    size_t i = s->node[k];
    struct agent_start m = s->start;
    m.index = (uint32_t)i;
    m.listen_host = s->name_of[3 * i + 1];
    m.storage = s->name_of[3 * i + 2];
    m.numa_node = s->numa[i];
    agent_start_put(w, &m);
}

/* START on every node not yet started, then (all started) CONFIGURE.
 * Unless strict, a START refused as "already deployed" (after a slurmctld
 * restart, the START that was in flight: its record was lost) marks its
 * node's leftover to clear. */
static int deploy_next(struct bb_job *j, const struct lc_env *env, bool strict)
{
    if (!persist_job_own_servers(j))
        return send_configure(j, env);   /* mounts a persistent instance, or nothing */
    struct lc_set *s = lc_set_new(j, SET_START, env);
    if (!s) {
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    s->strict = strict;
    s->numa = malloc((j->nnodes ? j->nnodes : 1) * sizeof(*s->numa));
    if (!s->numa) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory preparing requests to %zu nodes",
                         j->nnodes);
        lc_set_free(s);
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    memcpy(s->secret_hex, j->secret_hex, sizeof(s->secret_hex));
    memcpy(s->server_key_hex, j->server_key_hex, sizeof(s->server_key_hex));
    if (j->persist) {
        snprintf(s->persist_name, sizeof(s->persist_name), "%s", j->persist->name);
        snprintf(s->fair_policy, sizeof(s->fair_policy), "%s", j->persist->fair_share);
    }
    s->start = (struct agent_start){
        .job_id = j->job_id, .uid = j->uid, .gid = j->gid, .nservers = (uint32_t)j->nnodes,
        .chunk_size = j->chunk_size, .quota = j->node_capacity, .secret_hex = s->secret_hex,
        /* A persistent instance's servers: run as their owner on storage
         * of their own, tied to no job (persist_job.h). */
        .flags = j->persist ? AGENT_START_PERSISTENT : 0,
        .persist_name = j->persist ? s->persist_name : NULL,
        .access_gid = j->persist ? j->persist->access_gid : 0,
        /* Beside the secret, for the servers only (doc/fairshare.md). */
        .server_key_hex = s->server_key_hex,
        /* How its servers share themselves among its jobs; a job's own
         * instance serves one job: nothing to share (doc/fairshare.md). */
        .fair_policy = s->fair_policy,
    };
    s->build = build_start;
    for (size_t i = 0; i < j->nnodes; i++) {
        s->numa[i] = j->nodes[i].numa_node;
        if (!j->nodes[i].started)
            lc_set_add(s, j, i, AGENT_START);
    }
    if (s->n == 0) {
        lc_set_free(s);
        return send_configure(j, env);
    }
    return lc_set_send(j, s, env) < 0 ? (lc_to_teardown(j), LC_CHANGED) : 0;
}

static int deployed(struct bb_job *j, const struct lc_env *env);

/* CONFIGURE's body, one for every node (an instance of N servers goes to
 * N agents): the instance file from the set's copy of the job's. */
static int build_configure(struct lc_set *s)
{
    struct instance *in = &s->instance;
    char *made = NULL;
    if (!s->configure_text) {
        in->servers = calloc(s->n, sizeof(*in->servers));
        if (!in->servers)
            return -1;
        for (size_t k = 0; k < s->n; k++) {
            snprintf(in->servers[k].host, sizeof(in->servers[k].host), "%s",
                     s->name_of[3 * s->node[k] + 1]);
            in->servers[k].port = s->server_port[s->node[k]];
        }
        made = instance_format(in, s->job_id);
        instance_free(in);
    }
    const char *text = s->configure_text ? s->configure_text : made;
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    if (text)
        agent_configure_put(&w, &(struct agent_configure){ s->job_id, text, in->mount,
                                                           s->access, s->uid, s->gid,
                                                           s->further_name });
    free(made);
    if (!text || lc_set_share(s, &w) < 0) {
        rpc_writer_free(&w);
        return -1;
    }
    return 0;
}

static int send_configure(struct bb_job *j, const struct lc_env *env)
{
    /* A job that starts no server mounts the instance it names, if any
     * (persist_job_step wrote its text). A persistent instance's servers
     * get their own instance's file too, though no job runs there: the
     * agent puts it beside their secret, where they find each other's
     * ports for the usage exchange (no process mounts it: mount=/). */
    bool own = persist_job_own_servers(j);
    if (j->nnodes == 0 || (!own && !j->persist_text))
        return deployed(j, env);
    struct lc_set *s = lc_set_new(j, SET_CONFIGURE, env);
    if (s && (own ? instance_head(&s->instance, j, j->persist ? "/" : j->mount, env->cfg) < 0
                  : !j->mount || strlen(j->mount) >= sizeof(s->instance.mount))) {
        bb_job_set_error(j, FAIL_TRANSIENT, "the record's mount or secret cannot be written "
                         "to an instance file");
        lc_set_free(s);
        s = NULL;
    }
    if (s && !own)
        strcpy(s->instance.mount, j->mount);
    /* Its own servers' file is made when the set is sent; a persistent
     * instance's was made when the instance was ready (persist_job_step). */
    if (s && (own ? !(s->server_port = malloc(j->nnodes * sizeof(*s->server_port)))
                  : !(s->configure_text = strdup(j->persist_text)))) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file");
        lc_set_free(s);
        s = NULL;
    }
    if (!s) {
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    s->access = j->req.access == BB_ACCESS_FUSE ? AGENT_ACCESS_FUSE
              : j->req.access == BB_ACCESS_BOTH ? AGENT_ACCESS_BOTH : AGENT_ACCESS_PRELOAD;
    s->uid = j->uid;
    s->gid = j->gid;
    s->build_shared = build_configure;
    for (size_t i = 0; own && i < j->nnodes; i++)
        s->server_port[i] = j->nodes[i].server_port;
    for (size_t i = 0; i < j->nnodes; i++)
        lc_set_add(s, j, i, AGENT_CONFIGURE);
    return lc_set_send(j, s, env) < 0 ? (lc_to_teardown(j), LC_CHANGED) : 0;
}

/* Tears down, on the nodes whose START found a leftover, what an instance
 * of this job whose record was lost left there. The plugin keeps one live
 * record per job, so whatever the agent has for the job is stale. */
static int send_clear(struct bb_job *j, const struct lc_env *env, const bool *leftover)
{
    struct lc_set *s = lc_set_new(j, SET_CLEAR, env);
    if (!s) {
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    agent_job_ref_put(&w, &(struct agent_job_ref){ j->job_id, true });
    if (lc_set_share(s, &w) < 0) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory encoding a request");
        lc_set_free(s);
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    for (size_t i = 0; i < j->nnodes; i++)
        if (leftover[i]) {
            log_warn("job %u: node %s already has a server of this job, left by a lost "
                     "record: tearing it down to start again", j->job_id, j->nodes[i].name);
            lc_set_add(s, j, i, AGENT_TEARDOWN);
        }
    return lc_set_send(j, s, env) < 0 ? (lc_to_teardown(j), LC_CHANGED) : 0;
}

int lc_finish_start(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct lc_failures f;
    lc_set_failures(s, j, s->strict ? 0 : -EEXIST, NULL, &f);
    bool *leftover = calloc(j->nnodes ? j->nnodes : 1, sizeof(*leftover));
    bool any = false;
    for (size_t k = 0; k < s->n; k++) {
        struct bb_node *n = &j->nodes[s->node[k]];
        struct agent_call *c = &s->call[k];
        if (c->rc < 0 || c->reply.status < 0) {
            if (c->rc == 0 && !s->strict && c->reply.status == -EEXIST && leftover)
                any = leftover[s->node[k]] = true;
            continue;
        }
        struct agent_started started;
        n->started = agent_started_get(&c->reply.reader, &started) == 0;
        n->server_port = n->started ? (int)started.port : 0;
        if (!n->started) {
            char why[256];
            snprintf(why, sizeof(why), "node %s: agent gave no server port", n->name);
            lc_note_failure(&f, FAIL_TRANSIENT, why);
        }
    }
    if (f.count == 0 && s->n > 0)
        j->attempts = 0;   /* progress: a later failure counts from one */
    int events;
    if (f.count)
        events = lc_fail_or_retry(j, &f, env->now);
    else if (!leftover)
        events = (bb_job_set_error(j, FAIL_TRANSIENT, "out of memory"), lc_to_teardown(j), LC_CHANGED);
    else if (any)
        events = send_clear(j, env, leftover) | LC_CHANGED;   /* once: then START strictly */
    else
        events = deploy_next(j, env, s->strict) | LC_CHANGED;
    free(leftover);
    return events;
}

static int deployed(struct bb_job *j, const struct lc_env *env)
{
    j->attempts = 0;
    j->t_deployed = env->now;
    j->retry_at = 0;
    j->phase = PHASE_STAGING_IN;
    j->stage_index = 0;
    log_info("job %u: adafs deployed on %zu nodes in %lds", j->job_id, j->nnodes,
             (long)(j->t_deployed - j->t_begin));
    return LC_CHANGED;
}

/* CONFIGURE of the job's k-th further mount (persist_job.h), after its
 * first: the instance file persist_job_step made, through the interposer. */
static int send_further_configure(struct bb_job *j, const struct lc_env *env, size_t k)
{
    const struct persist_spec *spec = persist_job_further(&j->req, k);
    char *mount = spec && j->mount ? persist_job_further_mount(j->mount, spec->name) : NULL;
    struct lc_set *s = mount ? lc_set_new(j, SET_CONFIGURE, env) : NULL;
    if (s && (strlen(mount) >= sizeof(s->instance.mount) ||
              !(s->configure_text = strdup(j->further_text[k])))) {
        lc_set_free(s);
        s = NULL;
    }
    if (!s) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file of a "
                         "further mount");
        free(mount);
        lc_to_teardown(j);
        return LC_CHANGED;
    }
    strcpy(s->instance.mount, mount);
    free(mount);
    snprintf(s->further_name, sizeof(s->further_name), "%s", spec->name);
    s->further = k + 1;
    s->access = AGENT_ACCESS_PRELOAD;
    s->uid = j->uid;
    s->gid = j->gid;
    s->build_shared = build_configure;
    for (size_t i = 0; i < j->nnodes; i++)
        lc_set_add(s, j, i, AGENT_CONFIGURE);
    return lc_set_send(j, s, env) < 0 ? (lc_to_teardown(j), LC_CHANGED) : 0;
}

int lc_finish_configure(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct lc_failures f;
    lc_set_failures(s, j, 0, NULL, &f);
    if (f.count)
        return lc_fail_or_retry(j, &f, env->now);
    j->further_configured = s->further;
    if (j->further_configured < j->nfurther)
        return send_further_configure(j, env, j->further_configured) | LC_CHANGED;
    return deployed(j, env);
}

int lc_step_deploy(struct bb_job *j, const struct lc_env *env)
{
    return deploy_next(j, env, false);
}

/* The leftovers are cleared: every START again, strictly. */
int lc_finish_clear(struct bb_job *j, struct lc_set *s, const struct lc_env *env)
{
    struct lc_failures f;
    lc_set_failures(s, j, 0, NULL, &f);
    return f.count ? lc_fail_or_retry(j, &f, env->now) : deploy_next(j, env, true) | LC_CHANGED;
}

