/* bb_begin.c: a job's instance and environment at its begin (bb_begin.h). */
#include "bb_begin.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "directive.h"
#include "instance.h"
#include "log_sink.h"
#include "persist.h"
#include "persist_job.h"
#include "placement.h"
#include "qos_conf.h"
#include "size.h"

static void say(const struct bb_begin_job *job, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const struct bb_begin_job *job, int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (job->say)
        job->say(job->say_arg, level, line);
}

int bb_begin_agent_port(const struct bb_config *cfg, int slurmd_port)
{
    return cfg->agent_port_offset ? slurmd_port + cfg->agent_port_offset : cfg->agent_port;
}

/* Expands %-symbols in every stage path of req for this job. */
static int expand_symbols(const struct bb_begin_job *job, struct bb_request *req,
                          const char *user, const char *first_node)
{
    struct symbol_values v = {
        .job_id = job->job_id, .array_job_id = job->array_job_id,
        .array_task_id = job->array_task_id,
        .user = user, .job_name = job->name, .first_node = first_node,
    };
    for (size_t i = 0; i < req->nstages; i++) {
        char **fields[2] = { &req->stages[i].source, &req->stages[i].destination };
        for (int f = 0; f < 2; f++) {
            char *x = directive_expand(*fields[f], &v);
            if (!x)
                return -1;
            free(*fields[f]);
            *fields[f] = x;
        }
    }
    return 0;
}

/* Nodes placed per sysmap query: one query for a chunk, a bounded buffer. */
#define PLACE_CHUNK 256

/* The job's nodes into j, each with its agent and storage (sysmap, or the
 * site's); how many. */
static size_t place_nodes(struct bb_job *j, const struct bb_begin_job *job,
                          const struct bb_config *cfg)
{
    static const size_t whylen = 512;
    struct node_place *places = calloc(PLACE_CHUNK, sizeof(*places));
    char *why = calloc(PLACE_CHUNK, whylen);
    const char *names[PLACE_CHUNK];
    size_t k = 0;
    for (size_t from = 0; j->nodes && places && why && from < job->nnodes; from += PLACE_CHUNK) {
        size_t n = job->nnodes - from < PLACE_CHUNK ? job->nnodes - from : PLACE_CHUNK;
        for (size_t i = 0; i < n; i++)
            names[i] = job->nodes[from + i].name;
        placement_nodes(names, n, cfg->storage_path, places, why, whylen);
        for (size_t i = 0; i < n; i++) {
            const struct bb_begin_node *node = &job->nodes[from + i];
            const struct node_place *place = &places[i];
            if (why[i * whylen])
                say(job, LOG_SINK_INFO, ": %s", why + i * whylen);
            if (place->from_sysmap && place->available &&
                place->available < j->req.capacity / (uint64_t)job->nnodes)
                say(job, LOG_SINK_INFO, ": node %s has %"PRIu64" bytes free by sysmap, less "
                    "than the job's share", node->name, place->available);
            j->nodes[k++] = (struct bb_node){
                .name = strdup(node->name), .agent_host = strdup(node->host),
                .agent_port = bb_begin_agent_port(cfg, node->slurmd_port),
                .storage = strdup(place->storage), .numa_node = place->numa_node,
                .cpus = node->cpus };
        }
    }
    free(places);
    free(why);
    return k;
}

struct bb_job *bb_begin_instance(const struct bb_begin_job *job, const struct bb_config *cfg,
                                 char *err, size_t errlen, bool *users_fault)
{
    *users_fault = false;
    struct bb_job *j = bb_job_new(job->job_id);
    if (!j)
        return NULL;
    j->uid = job->uid;
    j->gid = job->gid;
    j->user = strdup(job->user ? job->user : "");
    if (directive_parse(cfg->directive, NULL, job->burst_buffer, &j->req, err, errlen) < 0) {
        *users_fault = true;
        bb_job_free(j);
        return NULL;
    }
    /* A job that mounts a persistent instance or only destroys one has no
     * servers of its own (persist_job.h). */
    bool own = persist_request_own_servers(&j->req);
    j->nnodes = job->nnodes;
    j->nodes = calloc(j->nnodes ? j->nnodes : 1, sizeof(*j->nodes));
    size_t k = place_nodes(j, job, cfg);
    j->nnodes = k;
    if (k < job->nnodes) {
        snprintf(err, errlen, "out of memory placing the job's %zu nodes", job->nnodes);
        bb_job_free(j);
        return NULL;
    }
    uint64_t capacity = !own ? 0 : j->req.capacity ? j->req.capacity : cfg->default_capacity;
    j->node_capacity = size_share(capacity, k);
    if (j->node_capacity > cfg->node_capacity) {
        /* Checked at submit for the nodes asked then; the owner may have
         * shrunk the job since (scontrol update NumNodes). */
        snprintf(err, errlen, "capacity=%"PRIu64" on %zu node(s) needs %"PRIu64" bytes per node, "
                 "more than AdafsNodeCapacity=%"PRIu64, capacity, k, j->node_capacity,
                 cfg->node_capacity);
        *users_fault = true;
        bb_job_free(j);
        return NULL;
    }
    j->chunk_size = j->req.chunk_size ? j->req.chunk_size : cfg->chunk_size;
    /* Fixed now: a later change of the site's default leaves the job as it began. */
    if (!j->req.access && (own || persist_job_mount(&j->req)))
        j->req.access = cfg->access;
    int rc = bb_job_make_secrets(j);
    if (rc < 0) {
        snprintf(err, errlen, "getrandom: %s", strerror(-rc));
        bb_job_free(j);
        return NULL;
    }
    j->storage = strdup(cfg->storage_path);
    char path[PATH_MAX];
    if (instance_mount_path(path, sizeof(path), cfg->mount_prefix, job->job_id) == 0)
        j->mount = strdup(path);
    if (instance_file_path(path, sizeof(path), cfg->mount_prefix, job->job_id,
                           INSTANCE_FILE) == 0)
        j->instance_path = strdup(path);
    if (expand_symbols(job, &j->req, j->user, k ? j->nodes[0].name : "") < 0 ||
        !j->mount || !j->instance_path || !j->storage) {
        snprintf(err, errlen, "out of memory");
        bb_job_free(j);
        return NULL;
    }
    j->t_begin = time(NULL);
    j->phase = PHASE_DEPLOYING;
    return j;
}

/* The job's destroy_persistent lines, first: a refused one creates
 * nothing. */
static int destroy_lines(struct bb_driver *d, const struct bb_begin_job *job, struct bb_job *j,
                         const struct bb_begin_persist_hooks *h, char *err, size_t errlen)
{
    for (size_t i = 0; i < j->req.npersist; i++) {
        const struct persist_spec *s = &j->req.persist[i];
        if (s->op != PERSIST_DESTROY)
            continue;
        uint32_t ids[8];
        size_t n = 0;
        h->users_of(h->arg, s->name, job->job_id, ids, &n);
        struct bb_job *servers = persist_job_destroy(&d->persist, d->jobs, s->name, j->uid, ids,
                                                     n, err, errlen);
        if (!servers)
            return -1;
        say(job, LOG_SINK_INFO, " destroys persistent instance %s: tearing down its servers",
            s->name);
        driver_save(d, servers);
    }
    return 0;
}

int bb_begin_persistent(struct bb_driver *d, const struct bb_begin_job *job, struct bb_job *j,
                        const struct bb_begin_persist_hooks *h, char *err, size_t errlen)
{
    if (destroy_lines(d, job, j, h, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < j->req.npersist; i++) {
        const struct persist_spec *s = &j->req.persist[i];
        if (s->op != PERSIST_CREATE)
            continue;
        /* A requeued creator: the instance its earlier run created lives
         * on (it mounts it), one torn down is forgotten. */
        struct bb_job *old = persist_job_record(d->jobs, s->name, j->job_id);
        if (old && old->phase != PHASE_COMPLETE)
            continue;
        if (old && old->phase == PHASE_COMPLETE)
            driver_forget(d, old);
        uint32_t gid = 0;
        if (s->group && h->group_id(h->arg, s->group, &gid) < 0) {
            snprintf(err, errlen, "create_persistent name=%s access=group:%s: no such group",
                     s->name, s->group);
            return -1;
        }
        size_t n = 0;
        struct persist_node *nodes = h->nodes(h->arg, &n);
        struct bb_job *servers = nodes ?
            persist_job_servers(&d->persist, d->jobs, s, j, gid, nodes, n, d->config.storage_path,
                                d->config.chunk_size, time(NULL), err, errlen) : NULL;
        if (!nodes)
            snprintf(err, errlen, "out of memory");
        free(nodes);
        if (!servers)
            return -1;
        driver_add(d, servers);
        driver_save(d, servers);
        say(job, LOG_SINK_INFO, " creates persistent instance %s (id %u): deploying %zu servers "
            "of %"PRIu64" bytes", s->name, servers->job_id, servers->nnodes,
            servers->node_capacity);
    }
    return 0;
}

/* Does text hold "name=<name>" as a whole word? */
static bool names(const char *text, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = strstr(text, "name="); p; p = strstr(p + 5, "name=")) {
        const char *end = p + 5 + len;
        if (strncmp(p + 5, name, len) == 0 && strchr(" \t\r\n", *end))   /* '\0' too */
            return true;
    }
    return false;
}

bool bb_begin_request_mounts(const struct bb_config *cfg, const char *burst_buffer,
                             const char *name)
{
    /* A destroy asks this of every pending and running job under
     * slurmctld's job lock: a request is parsed (70 us at 64 KiB) only
     * when it names the instance. The job's burst_buffer is the canonical
     * form bb_p_job_validate wrote (Slurm lets nobody change it), where a
     * line that mounts an instance says name=<name>. */
    if (!burst_buffer || !names(burst_buffer, name))
        return false;
    struct bb_request req = { 0 };
    char err[256];
    bool mounts = directive_parse(cfg->directive, NULL, burst_buffer, &req, err,
                                  sizeof(err)) > 0 && persist_job_mounts_name(&req, name);
    bb_request_free(&req);
    return mounts;
}

bool bb_begin_qos_only(const struct bb_config *cfg, const char *burst_buffer)
{
    struct bb_request req = { 0 };
    char err[256];
    bool only = directive_parse(cfg->directive, NULL, burst_buffer, &req, err,
                                sizeof(err)) > 0 && bb_request_qos_only(&req);
    bb_request_free(&req);
    return only;
}

void bb_env_free(struct bb_env *env)
{
    for (size_t i = 0; i < env->n; i++) {
        free(env->names[i]);
        free(env->values[i]);
    }
    free(env->names);
    free(env->values);
    *env = (struct bb_env){ 0 };
}

static int env_add(struct bb_env *env, const char *name, const char *value)
{
    if (env->n == env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 8;
        char **names = realloc(env->names, cap * sizeof(*names));
        if (names)
            env->names = names;
        char **values = names ? realloc(env->values, cap * sizeof(*values)) : NULL;
        if (!values)
            return -1;
        env->values = values;
        env->cap = cap;
    }
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return -1;
    }
    env->names[env->n] = n;
    env->values[env->n++] = v;
    return 0;
}

/* Appends ":mount=file" (the first without ':') to *list; -1 when out of
 * memory. */
static int list_add(char **list, const char *mount, const char *file)
{
    char *grown = NULL;
    if (asprintf(&grown, "%s%s%s=%s", *list ? *list : "", *list ? ":" : "", mount, file) < 0)
        return -1;
    free(*list);
    *list = grown;
    return 0;
}

int bb_begin_fs_env(const struct bb_begin_job *job, const struct bb_job *j,
                    const struct bb_config *cfg, struct bb_env *env)
{
    if (!persist_job_mounts(j))
        return 0;   /* it only destroys a persistent instance */
    int rc = 0;
    const struct persist_spec *persistent = persist_job_mount(&j->req);
    char name[PERSIST_ENV_MAX];
    if (persistent && !persist_job_own_servers(j)) {
        persist_env_name(persistent->name, name);
        rc |= env_add(env, name, j->mount);
    }
    /* Further mounts (its own and instances, or several instances): each
     * at <mount>.<NAME>, all listed for the interposer (preload/pathres.h). */
    char *mounts = NULL;
    for (size_t k = 0; persist_job_further(&j->req, k); k++) {
        const char *iname = persist_job_further(&j->req, k)->name;
        char *m = persist_job_further_mount(j->mount, iname);
        char file[PATH_MAX];
        if (!m || instance_named_file_path(file, sizeof(file), cfg->mount_prefix,
                                           j->job_id, iname) < 0) {
            say(job, LOG_SINK_ERROR, ": the mount or instance file of persistent instance %s "
                "does not fit in a path under %s", iname, cfg->mount_prefix);
            free(m);
            continue;
        }
        persist_env_name(iname, name);
        rc |= env_add(env, name, m);
        rc |= list_add(&mounts, m, file);
        free(m);
    }
    if (mounts)
        rc |= env_add(env, "ADAFS_MOUNTS", mounts);
    free(mounts);
    /* An instance's servers make every user but its owner prove their uid
     * with a munge credential: from the site's munged. */
    if (persistent && cfg->munge_socket)
        rc |= env_add(env, "ADAFS_MUNGE_SOCKET", cfg->munge_socket);
    rc |= env_add(env, "ADAFS_MOUNT", j->mount);
    rc |= env_add(env, "ADAFS_INSTANCE", j->instance_path);
    /* access=fuse: every program goes through the kernel mount. */
    if (cfg->preload && cfg->preload[0] && j->req.access != BB_ACCESS_FUSE)
        rc |= env_add(env, "LD_PRELOAD", cfg->preload);
    return rc < 0 ? -1 : 0;
}

int bb_begin_qos_env(const struct bb_config *cfg, bool preload, struct bb_env *env)
{
    char *vars[3];
    int n = qos_conf_job_env(&cfg->qos, vars);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char *eq = strchr(vars[i], '=');
        *eq = '\0';
        rc |= env_add(env, vars[i], eq + 1);
        free(vars[i]);
    }
    if (n && preload && cfg->preload && cfg->preload[0])
        rc |= env_add(env, "LD_PRELOAD", cfg->preload);
    return rc < 0 ? -1 : 0;
}
