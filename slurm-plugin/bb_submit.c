/* bb_submit.c: the submit-time checks of a request (bb_submit.h). */
#include "bb_submit.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "directive.h"
#include "persist_job.h"
#include "placement.h"
#include "qos_limits.h"
#include "size.h"

/* *err_msg, formatted; v for the caller's return. */
static enum bb_submit_verdict refuse(char **err_msg, enum bb_submit_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static enum bb_submit_verdict refuse(char **err_msg, enum bb_submit_verdict v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err_msg, fmt, ap) < 0)
        *err_msg = NULL;
    va_end(ap);
    return v;
}

/* Is group root among the groups (0 when none can be known)? */
static bool has_group_root(const uint32_t *groups, int n)
{
    for (int i = 0; i < n; i++)
        if (groups[i] == 0)
            return true;
    return false;
}

/* adafs servers and stagers run as the job's user and groups: never
 * root's. */
static enum bb_submit_verdict check_who(struct bb_driver *d, const struct bb_submit_job *job,
                                        const struct bb_submit_hooks *hooks, char **err_msg)
{
    if (job->uid == 0)
        return refuse(err_msg, BB_SUBMIT_PERMISSION,
                      "user root can not use adafs burst buffers: submit as the job's user");
    if (job->gid == 0)
        return refuse(err_msg, BB_SUBMIT_PERMISSION, "group root (gid 0) can not use adafs "
                      "burst buffers: submit with another group (sbatch --gid or newgrp)");
    uint32_t *groups = NULL;
    int n = hooks->groups(hooks->arg, job->uid, job->gid, &groups);
    bool root = has_group_root(groups, n);
    free(groups);
    if (root) {
        /* The agent gives servers and stagers the user's groups and refuses
         * group root among them: the job would fail on every node. */
        char *name = hooks->user_name(hooks->arg, job->uid);
        enum bb_submit_verdict v = refuse(err_msg, BB_SUBMIT_PERMISSION, "user %s is a member "
                                          "of group root (gid 0), which adafs servers and "
                                          "stagers never run with: such users can not use "
                                          "adafs burst buffers", name ? name : "(null)");
        free(name);
        return v;
    }
    char err[1024];
    pthread_mutex_lock(&d->lock);
    int rc = bb_config_check_user(&d->config, job->uid, err, sizeof(err));
    pthread_mutex_unlock(&d->lock);
    if (rc == 0)
        return BB_SUBMIT_OK;
    char *name = hooks->user_name(hooks->arg, job->uid);
    enum bb_submit_verdict v = refuse(err_msg, BB_SUBMIT_PERMISSION, "user %s: %s: this site "
                                      "does not let the user have adafs burst buffers",
                                      name ? name : "?", err);
    free(name);
    return v;
}

/* The site's limits, as the configuration said when the check began. */
struct site {
    char *prefix;
    uint64_t node_capacity, bw, mdops;
    struct qos_limits qos_max;
    bool qos;
};

static const char *where_origin(const struct bb_where *at)
{
    return at->origin ? at->origin : "--bb";
}

/* A job may stage more gently than the site allows, never harder, and
 * ask for its own I/O demand toward the PFS up to the site's maximum. */
static enum bb_submit_verdict check_rates(const struct site *site, const struct bb_request *req,
                                          char **err_msg)
{
    const char *prefix = site->prefix;
    if (site->bw && req->max_bw > site->bw)
        return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s (%s line %d): max_bw=%"PRIu64" bytes/s is "
                      "above this site's maximum of %"PRIu64" bytes/s per node "
                      "(AdafsMaxBandwidth)", prefix, where_origin(&req->max_bw_at),
                      req->max_bw_at.line, req->max_bw, site->bw);
    if (site->mdops && req->max_mdops > site->mdops)
        return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s (%s line %d): max_mdops=%"PRIu64" is above "
                      "this site's maximum of %"PRIu64" metadata operations/s per node "
                      "(AdafsMaxMetadataRate)", prefix, where_origin(&req->max_mdops_at),
                      req->max_mdops_at.line, req->max_mdops, site->mdops);
    char err[1024];
    if (qos_limits_any(&req->qos) &&
        (!site->qos || qos_limits_check_max(&req->qos, &site->qos_max, err, sizeof(err)) < 0))
        return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s (%s line %d): qos: %s%s", prefix,
                      req->qos_origin, req->qos_line, site->qos ? err : "this site has no I/O "
                      "quality of service (AdafsQosPaths is not set)",
                      site->qos ? " (AdafsQosMax)" : "");
    return BB_SUBMIT_OK;
}

/* A stage line may name an instance ($ADAFS_PERSISTENT_<NAME>/): one the
 * job must mount, in a request with no line of its own for it too. Who
 * may use, create or destroy what: the user's groups as slurmd gives them
 * to the job. */
static enum bb_submit_verdict check_persistent(struct bb_driver *d,
                                               const struct bb_submit_job *job,
                                               const struct bb_submit_hooks *hooks,
                                               const char *prefix, const struct bb_request *req,
                                               char **err_msg)
{
    char err[1024];
    pthread_mutex_lock(&d->lock);
    size_t persistent_nodes = d->config.persistent_nodes.count;
    uint64_t node_capacity = d->config.node_capacity;
    pthread_mutex_unlock(&d->lock);
    if (directive_check_persistent(prefix, req, persistent_nodes, err, sizeof(err)) < 0)
        return refuse(err_msg, BB_SUBMIT_INVALID, "%s", err);
    /* An instance's server takes its share of each node as a job's does,
     * and keeps it after the job: no more than AdafsNodeCapacity (without
     * AdafsTotalCapacity nothing else bounded a user's instance). */
    for (size_t i = 0; i < req->npersist; i++) {
        const struct persist_spec *s = &req->persist[i];
        uint64_t nodes = s->nodes ? s->nodes : persistent_nodes;
        if (s->op == PERSIST_CREATE && size_share(s->capacity, nodes) > node_capacity)
            return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s create_persistent name=%s capacity=%"
                          PRIu64" bytes needs more than the %"PRIu64" bytes a node may give "
                          "(AdafsNodeCapacity) on %"PRIu64" node(s)", prefix, s->name,
                          s->capacity, node_capacity, nodes);
    }
    uint32_t *groups = NULL;
    int ngroups = hooks->groups(hooks->arg, job->uid, job->gid, &groups);
    pthread_mutex_lock(&d->lock);
    enum bb_access access = req->access ? req->access : d->config.access;
    int refused = persist_job_check_submit(&d->persist, prefix, req,
                                           access == BB_ACCESS_FUSE || access == BB_ACCESS_BOTH,
                                           job->uid, groups,
                                           groups && ngroups > 0 ? (size_t)ngroups : 0,
                                           err, sizeof(err));
    pthread_mutex_unlock(&d->lock);
    free(groups);
    return refused < 0 ? refuse(err_msg, BB_SUBMIT_PERMISSION, "%s", err) : BB_SUBMIT_OK;
}

/* What a node may give, and what the partition's nodes can hold by
 * sysmap. */
static enum bb_submit_verdict check_capacity(const struct site *site,
                                             const struct bb_submit_job *job,
                                             const struct bb_submit_hooks *hooks,
                                             const struct bb_request *req, char **err_msg)
{
    uint32_t nodes = job->nodes ? job->nodes : 1;
    if (req->capacity && size_share(req->capacity, nodes) > site->node_capacity) {
        char asked[32], per_node[32], node_max[32], most[32];
        uint64_t all = site->node_capacity > UINT64_MAX / nodes ? UINT64_MAX
                                                                : site->node_capacity * nodes;
        size_format(req->capacity, asked, sizeof(asked));
        size_format(size_share(req->capacity, nodes), per_node, sizeof(per_node));
        size_format(site->node_capacity, node_max, sizeof(node_max));
        size_format(all, most, sizeof(most));
        return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s (%s line %d): capacity=%s needs %s on "
                      "each of the job's %u node(s), more than the %s a node may give "
                      "(AdafsNodeCapacity): ask for at most %s, or more nodes",
                      site->prefix, where_origin(&req->capacity_at), req->capacity_at.line,
                      asked, per_node, nodes, node_max, most);
    }
    const char *part_nodes, *part_name;
    char err[1024];
    if (req->capacity && placement_enabled() &&
        hooks->partition(hooks->arg, job->partition, &part_nodes, &part_name) &&
        placement_check_fit(part_nodes, part_name, req->capacity, err, sizeof(err)) < 0)
        return refuse(err_msg, BB_SUBMIT_LIMIT, "#%s %s", site->prefix, err);
    return BB_SUBMIT_OK;
}

enum bb_submit_verdict bb_submit_check(struct bb_driver *d, const struct bb_submit_job *job,
                                       const struct bb_submit_hooks *hooks, char **canonical,
                                       char **err_msg)
{
    *canonical = NULL;
    *err_msg = NULL;
    struct site site;
    pthread_mutex_lock(&d->lock);
    site = (struct site){ .prefix = strdup(d->config.directive),
                          .node_capacity = d->config.node_capacity,
                          .bw = d->config.max_bandwidth, .mdops = d->config.max_mdops,
                          .qos_max = d->config.qos.max, .qos = d->config.qos.paths != NULL };
    pthread_mutex_unlock(&d->lock);
    if (!site.prefix)
        return refuse(err_msg, BB_SUBMIT_INVALID, "out of memory checking the burst buffer "
                      "request");
    struct bb_request req = { 0 };
    char err[1024];
    enum bb_submit_verdict v = BB_SUBMIT_OK;
    int found = directive_parse(site.prefix, job->script, job->burst_buffer, &req, err,
                                sizeof(err));
    if (found < 0)
        v = refuse(err_msg, BB_SUBMIT_INVALID, "%s", err);
    else if (found == 0 && job->burst_buffer && job->burst_buffer[0])
        v = refuse(err_msg, BB_SUBMIT_INVALID, "--bb given without a #%s request", site.prefix);
    if (found <= 0)
        goto out;
    if ((v = check_who(d, job, hooks, err_msg)) != BB_SUBMIT_OK ||
        (v = check_rates(&site, &req, err_msg)) != BB_SUBMIT_OK ||
        ((req.npersist || req.nstages) &&
         (v = check_persistent(d, job, hooks, site.prefix, &req, err_msg)) != BB_SUBMIT_OK) ||
        (v = check_capacity(&site, job, hooks, &req, err_msg)) != BB_SUBMIT_OK)
        goto out;
    if (!(*canonical = bb_request_format(site.prefix, &req))) {
        v = refuse(err_msg, BB_SUBMIT_INVALID, "out of memory formatting the burst buffer "
                   "request");
    } else if (strlen(*canonical) > DIRECTIVE_MAX_REQUEST) {
        v = refuse(err_msg, BB_SUBMIT_LIMIT, "#%s: the request is %zu bytes written out "
                   "(%zu stage lines), more than the %u bytes a job may ask with: use "
                   "shorter paths, or a list file (type=list) for many files",
                   site.prefix, strlen(*canonical), req.nstages, DIRECTIVE_MAX_REQUEST);
        free(*canonical);
        *canonical = NULL;
    }
out:
    bb_request_free(&req);
    free(site.prefix);
    return v;
}
