#include "persist_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_proto.h"
#include "instance.h"
#include "log.h"
#include "size.h"

const struct persist_spec *persist_job_mount(const struct bb_request *req)
{
    for (size_t i = 0; i < req->npersist; i++)
        if (req->persist[i].op == PERSIST_CREATE || req->persist[i].op == PERSIST_USE)
            return &req->persist[i];
    return NULL;
}

bool persist_job_mounts_name(const struct bb_request *req, const char *name)
{
    for (size_t i = 0; i < req->npersist; i++)
        if ((req->persist[i].op == PERSIST_CREATE || req->persist[i].op == PERSIST_USE) &&
            strcmp(req->persist[i].name, name) == 0)
            return true;
    return false;
}

size_t persist_job_nfurther(const struct bb_request *req)
{
    size_t n = 0;
    while (persist_job_further(req, n))
        n++;
    return n;
}

const char *persist_job_stage_mount(const struct bb_request *req, const char *inside,
                                    char name[PERSIST_NAME_MAX + 1])
{
    const char *rest = directive_inside_instance(inside, name);
    const struct persist_spec *first = persist_request_own_servers(req) ? NULL
                                                                        : persist_job_mount(req);
    if (first && strcmp(first->name, name) == 0)
        name[0] = '\0';   /* the job's first mount */
    return rest;
}

const struct persist_spec *persist_job_further(const struct bb_request *req, size_t k)
{
    /* With a file system of its own, every instance is a further mount;
     * else the first is its first mount. */
    const struct persist_spec *first = persist_request_own_servers(req) ? NULL
                                                                        : persist_job_mount(req);
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *s = &req->persist[i];
        if ((s->op == PERSIST_CREATE || s->op == PERSIST_USE) && s != first && k-- == 0)
            return s;
    }
    return NULL;
}

bool persist_request_own_servers(const struct bb_request *req)
{
    /* Records of before persistent instances have no such lines. A job
     * that mounts an instance asks servers of its own only by sizing them:
     * its stage lines and stager limits go to the instance. */
    if (!req->npersist)
        return true;
    return persist_job_mount(req) ? req->capacity || req->chunk_size
                                  : bb_request_wants_job_fs(req);
}

bool persist_job_own_servers(const struct bb_job *j)
{
    return j->persist || persist_request_own_servers(&j->req);
}

bool persist_job_mounts(const struct bb_job *j)
{
    return !j->persist && (persist_job_own_servers(j) || persist_job_mount(&j->req));
}

int persist_job_check_submit(const struct persist_table *t, const char *prefix,
                             const struct bb_request *req, bool kernel_mount, uint32_t uid,
                             const uint32_t *groups, size_t ngroups, char *err, size_t errlen)
{
    size_t mounts = persist_job_mount(req) ? (req->capacity || req->chunk_size)
                                           : bb_request_wants_job_fs(req);
    char why[512];
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *s = &req->persist[i];
        int rc = 0;
        why[0] = '\0';
        switch (s->op) {
        case PERSIST_CREATE:
        case PERSIST_USE:
            if (++mounts > 1 && kernel_mount) {
                snprintf(why, sizeof(why), "%s name=%s: a job that mounts several file systems "
                         "(its own and instances, or several instances) reaches them through "
                         "the interposer (access=preload): a kernel mount (access=fuse or "
                         "both) serves one", persist_op_name(s->op), s->name);
                rc = -1;
            } else if (s->op == PERSIST_USE) {
                rc = persist_check_use(t, s->name, uid, groups, ngroups, why, sizeof(why));
            } else if (persist_find(t, s->name)) {
                const struct persist_instance *p = persist_find(t, s->name);
                snprintf(why, sizeof(why), "create_persistent name=%s: an instance of that name "
                         "exists (owner %s, created by job %u)", s->name,
                         p->owner ? p->owner : "?", p->creator_job);
                rc = -1;
            }
            break;
        case PERSIST_DESTROY:
            rc = persist_check_destroy(t, s->name, uid, NULL, 0, why, sizeof(why));
            break;
        }
        if (rc < 0) {
            snprintf(err, errlen, "#%s (%s line %d): %s", prefix, s->origin ? s->origin : "--bb",
                     s->line, why);
            return -1;
        }
    }
    /* A stage line into or out of an instance: one the job mounts. */
    for (size_t i = 0; i < req->nstages; i++) {
        const struct stage_spec *st = &req->stages[i];
        const char *inside = st->direction == STAGE_IN ? st->destination : st->source;
        char name[PERSIST_NAME_MAX + 1];
        if (st->type == STAGE_LIST && st->direction == STAGE_OUT)
            continue;
        directive_inside_instance(inside, name);
        if (name[0] && !persist_job_mounts_name(req, name)) {
            snprintf(err, errlen, "#%s (line %d): %s %s=%s: the job mounts no instance %s "
                     "(no create_persistent or use_persistent line names it)", prefix, st->line,
                     st->direction == STAGE_IN ? "stage_in" : "stage_out",
                     st->direction == STAGE_IN ? "destination" : "source", inside, name);
            return -1;
        }
    }
    return 0;
}

struct bb_job *persist_job_record(struct bb_job *jobs, const char *name, uint32_t creator)
{
    for (struct bb_job *j = jobs; j; j = j->next)
        if (j->persist && strcmp(j->persist->name, name) == 0 &&
            (!creator || j->persist->creator_job == creator))
            return j;
    return NULL;
}

/* The record of the servers of p. */
static struct bb_job *record_of(struct bb_job *jobs, const struct persist_instance *p)
{
    for (struct bb_job *j = jobs; j; j = j->next)
        if (j->persist == p)
            return j;
    return NULL;
}

/* The base plus the creating job's id, unless a record holds it (Slurm
 * reissues ids after a kill -9 before it saved its own state): then one
 * above the highest instance id; 0 when none is left. */
static uint32_t free_id(const struct bb_job *jobs, uint32_t creator)
{
    uint32_t want = AGENT_PERSIST_ID_BASE + creator, top = AGENT_PERSIST_ID_BASE;
    bool taken = false;
    for (const struct bb_job *j = jobs; j; j = j->next) {
        taken |= j->job_id == want;
        if (agent_id_is_persistent(j->job_id) && j->job_id > top)
            top = j->job_id;
    }
    return !taken ? want : top == UINT32_MAX ? 0 : top + 1;
}

struct bb_job *persist_job_servers(struct persist_table *t, const struct bb_job *jobs,
                                   const struct persist_spec *spec,
                                   const struct bb_job *creator, uint32_t access_gid,
                                   const struct persist_node *nodes, size_t nnodes,
                                   const char *storage, uint64_t chunk_size, time_t now,
                                   char *err, size_t errlen)
{
    size_t want = spec->nodes ? spec->nodes : nnodes;
    if (want == 0 || want > nnodes) {
        snprintf(err, errlen, "create_persistent name=%s nodes=%zu: AdafsPersistentNodes has %zu "
                 "node(s) this slurmctld knows", spec->name, want, nnodes);
        return NULL;
    }
    uint32_t id = free_id(jobs, creator->job_id);
    if (!id) {
        snprintf(err, errlen, "create_persistent name=%s: no instance id left", spec->name);
        return NULL;
    }
    struct persist_instance *p = persist_create(t, spec, creator->job_id, creator->uid,
                                                creator->gid, creator->user, access_gid, now,
                                                err, errlen);
    if (!p)
        return NULL;
    struct bb_job *j = bb_job_new(id);
    int rc = j ? bb_job_make_secrets(j) : -1;
    bool ok = j && rc == 0 && (j->req.persist = calloc(1, sizeof(*j->req.persist))) &&
              (j->nodes = calloc(want, sizeof(*j->nodes))) &&
              (j->user = strdup(creator->user ? creator->user : "")) &&
              (j->storage = strdup(storage));
    if (ok) {
        j->req.npersist = 1;
        j->req.persist[0] = *spec;
        j->req.persist[0].op = PERSIST_CREATE;
        j->req.persist[0].group = NULL;
        ok = !spec->group || (j->req.persist[0].group = strdup(spec->group));
    }
    for (size_t i = 0; ok && i < want; i++) {
        j->nodes[i] = (struct bb_node){ .name = strdup(nodes[i].name),
                                        .agent_host = strdup(nodes[i].agent_host),
                                        .agent_port = nodes[i].agent_port, .numa_node = -1 };
        j->nnodes = i + 1;
        ok = j->nodes[i].name && j->nodes[i].agent_host;
    }
    if (!ok) {
        snprintf(err, errlen, rc < 0 && j ? "getrandom failed" : "out of memory");
        bb_job_free(j);
        persist_remove(t, spec->name);
        return NULL;
    }
    j->uid = creator->uid;
    j->gid = creator->gid;
    j->node_capacity = size_share(spec->capacity, want);
    j->chunk_size = chunk_size;
    j->t_begin = now;
    j->phase = PHASE_DEPLOYING;
    j->released = true;   /* no Slurm job waits for it: never released, never held */
    j->persist = p;
    return j;
}

void persist_job_adopt(struct persist_table *t, struct bb_job *jobs)
{
    for (struct bb_job *j = jobs; j; j = j->next)
        if (j->persist && j->phase != PHASE_COMPLETE)
            persist_link(t, j->persist);
}

struct bb_job *persist_job_destroy(struct persist_table *t, struct bb_job *jobs, const char *name,
                                   uint32_t uid, const uint32_t *users, size_t nusers, char *err,
                                   size_t errlen)
{
    /* Slurm's running and pending jobs, and the plugin's records of jobs
     * that still mount it: one that ended may still stage out of it. */
    uint32_t all[8];
    size_t named = 0, n = nusers;   /* all counted, the first 8 named */
    for (size_t i = 0; i < nusers && named < 8; i++)
        all[named++] = users[i];
    for (const struct bb_job *j = jobs; j; j = j->next) {
        bool listed = false;
        for (size_t i = 0; i < named; i++)
            listed |= all[i] == j->job_id;
        if (j->persist || !persist_job_mounts_name(&j->req, name) ||
            j->phase == PHASE_COMPLETE || listed)
            continue;
        if (named < 8)
            all[named++] = j->job_id;
        n++;
    }
    if (persist_check_destroy(t, name, uid, all, n, err, errlen) < 0)
        return NULL;
    struct persist_instance *p = persist_find(t, name);
    struct bb_job *j = record_of(jobs, p);
    if (!j) {
        snprintf(err, errlen, "destroy_persistent name=%s: the record of its servers is missing",
                 name);
        return NULL;
    }
    p->state = PERSIST_STATE_DESTROYING;
    lifecycle_job_ended(j, true);   /* no stage-out: straight to teardown */
    log_info("persistent instance %s (id %u): destroyed by uid %u: tearing down its servers",
             name, j->job_id, (unsigned)uid);
    return j;
}

/* The live record of the servers of instance name (not torn down yet). */
static struct bb_job *servers_of(struct bb_job *jobs, const char *name)
{
    for (struct bb_job *j = jobs; j; j = j->next)
        if (j->persist && j->phase != PHASE_COMPLETE && strcmp(j->persist->name, name) == 0)
            return j;
    return NULL;
}

/* The instance follows its servers' record. */
static void follow(struct persist_table *t, struct bb_job *j)
{
    struct persist_instance *p = j->persist;
    switch (j->phase) {
    case PHASE_DEPLOYING:
    case PHASE_STAGING_IN:
        break;
    case PHASE_RUNNING:
        if (p->state == PERSIST_STATE_CREATING)
            log_info("persistent instance %s (id %u): ready on %zu node(s)", p->name, j->job_id,
                     j->nnodes);
        p->state = PERSIST_STATE_READY;
        break;
    case PHASE_STAGING_OUT:
    case PHASE_TEARDOWN:
        p->state = PERSIST_STATE_DESTROYING;
        break;
    case PHASE_COMPLETE:
        persist_unlink(t, p);   /* the name is free again; the record stays for bbstat */
        break;
    }
}

enum line_state { LINE_SETTLED, LINE_WAIT, LINE_FAILED };

char *persist_job_further_mount(const char *mount, const char *name)
{
    char *m = malloc(strlen(mount) + strlen(name) + 2);
    if (m)
        sprintf(m, "%s.%s", mount, name);
    return m;
}

static char *further_mount(const struct bb_job *j, const char *name)
{
    return j->mount ? persist_job_further_mount(j->mount, name) : NULL;
}

/* Where the instance one of j's lines names stands. why: on failure. */
static enum line_state line_state(struct persist_table *t, struct bb_job *jobs, struct bb_job *j,
                                  const struct persist_spec *s, struct bb_job **servers,
                                  char *why, size_t whylen)
{
    struct persist_instance *p = NULL;
    struct bb_job *rec = NULL;
    switch (s->op) {
    case PERSIST_DESTROY:
        return servers_of(jobs, s->name) ? LINE_WAIT : LINE_SETTLED;
    case PERSIST_CREATE:
        rec = persist_job_record(jobs, s->name, j->job_id);
        if (!rec) {
            snprintf(why, whylen, "create_persistent name=%s: the record of its servers is "
                     "missing", s->name);
            return LINE_FAILED;
        }
        if (rec->phase == PHASE_COMPLETE || rec->phase == PHASE_TEARDOWN) {
            if (rec->phase == PHASE_TEARDOWN && !rec->error)
                return LINE_WAIT;
            snprintf(why, whylen, "create_persistent name=%s: its servers did not start: %s",
                     s->name, rec->error ? rec->error : "torn down");
            return LINE_FAILED;
        }
        break;
    case PERSIST_USE:
        p = persist_find(t, s->name);
        rec = p ? record_of(jobs, p) : NULL;
        if (!rec || p->state == PERSIST_STATE_DESTROYING || rec->phase > PHASE_RUNNING) {
            snprintf(why, whylen, "use_persistent name=%s: %s", s->name,
                     p ? "being destroyed" : "no such persistent instance (destroyed since "
                     "the job was submitted?)");
            return LINE_FAILED;
        }
        break;
    }
    *servers = rec;
    return rec->phase == PHASE_RUNNING ? LINE_SETTLED : LINE_WAIT;
}

int persist_job_step(struct persist_table *t, struct bb_job *jobs, struct bb_job *j,
                     const struct lc_env *env)
{
    if (j->persist) {
        struct lc_env own = *env;
        own.used = &j->persist->used;
        int events = lifecycle_step(j, &own);
        follow(t, j);
        if (j->phase == PHASE_RUNNING && !lifecycle_waiting(j) &&
            env->now - j->persist->polled >= PERSIST_POLL_S) {
            j->persist->polled = env->now;
            lifecycle_poll(j, &own);
        }
        return events;
    }
    if (!j->req.npersist || j->phase != PHASE_DEPLOYING || lifecycle_waiting(j))
        return lifecycle_step(j, env);
    const struct persist_spec *mount = persist_request_own_servers(&j->req)
                                       ? NULL : persist_job_mount(&j->req);
    struct bb_job *mounted = NULL;
    size_t nfurther = persist_job_nfurther(&j->req);
    struct bb_job *further[PERSIST_MAX_LINES] = { NULL };
    for (size_t i = 0; i < j->req.npersist; i++) {
        const struct persist_spec *s = &j->req.persist[i];
        struct bb_job *servers = NULL;
        char why[1024];
        switch (line_state(t, jobs, j, s, &servers, why, sizeof(why))) {
        case LINE_WAIT:
            return 0;
        case LINE_FAILED:
            bb_job_set_error(j, FAIL_USER, "%s", why);
            log_warn("job %u: %s", j->job_id, why);
            lifecycle_job_ended(j, true);
            return LC_CHANGED;
        case LINE_SETTLED:
            if (s == mount)
                mounted = servers;
            for (size_t k = 0; k < nfurther && k < PERSIST_MAX_LINES; k++)
                if (persist_job_further(&j->req, k) == s)
                    further[k] = servers;
            break;
        }
    }
    bool ok = !mounted || j->persist_text ||
              (j->persist_text = lifecycle_persist_text(mounted, j->mount, env->cfg));
    if (ok && nfurther && !j->further_text) {
        ok = nfurther <= PERSIST_MAX_LINES &&
             (j->further_text = calloc(nfurther, sizeof(*j->further_text)));
        for (size_t k = 0; ok && k < nfurther; k++) {
            char *m = further_mount(j, persist_job_further(&j->req, k)->name);
            ok = m && (j->further_text[k] = lifecycle_persist_text(further[k], m, env->cfg));
            j->nfurther = k + 1;
            free(m);
        }
    }
    if (!ok) {
        bb_job_set_error(j, FAIL_TRANSIENT, "out of memory writing the instance file");
        lifecycle_job_ended(j, true);
        return LC_CHANGED;
    }
    return lifecycle_step(j, env);
}
