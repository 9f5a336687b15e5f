#include "bb_job.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *phase_names[] = {
    [PHASE_DEPLOYING] = "deploying", [PHASE_STAGING_IN] = "staging_in",
    [PHASE_RUNNING] = "running", [PHASE_STAGING_OUT] = "staging_out",
    [PHASE_TEARDOWN] = "teardown", [PHASE_COMPLETE] = "complete",
};

const char *bb_phase_name(enum bb_phase phase)
{
    return phase <= PHASE_COMPLETE ? phase_names[phase] : "?";
}

struct bb_job *bb_job_find(struct bb_job *head, uint32_t job_id)
{
    for (; head; head = head->next)
        if (head->job_id == job_id)
            return head;
    return NULL;
}

struct bb_job *bb_job_new(uint32_t job_id)
{
    struct bb_job *job = calloc(1, sizeof(*job));
    if (job)
        job->job_id = job_id;
    return job;
}

void bb_job_free(struct bb_job *job)
{
    if (!job)
        return;
    for (size_t i = 0; i < job->nnodes; i++) {
        free(job->nodes[i].name);
        free(job->nodes[i].agent_host);
        free(job->nodes[i].storage);
    }
    free(job->nodes);
    bb_request_free(&job->req);
    free(job->user);
    free(job->error);
    free(job->storage);
    free(job->mount);
    free(job->instance_path);
    free(job);
}

void bb_job_remove(struct bb_job **head, uint32_t job_id)
{
    for (struct bb_job **p = head; *p; p = &(*p)->next)
        if ((*p)->job_id == job_id) {
            struct bb_job *gone = *p;
            *p = gone->next;
            bb_job_free(gone);
            return;
        }
}

int bb_job_set_error(struct bb_job *job, enum bb_failure failure, const char *fmt, ...)
{
    va_list ap;
    char *text = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    /* The first failure is the cause; later ones are consequences. */
    if (job->failure == FAIL_NONE || job->failure == FAIL_CANCELLED) {
        free(job->error);
        job->error = text;
        job->failure = failure;
    } else {
        free(text);
    }
    return 0;
}

/* --- saving ----------------------------------------------------------- */

static json_t *totals_json(const struct stage_totals *t)
{
    return json_pack("{s:I,s:I,s:I,s:I,s:f,s:I}", "files", (json_int_t)t->files,
                     "dirs", (json_int_t)t->dirs, "bytes", (json_int_t)t->bytes,
                     "errors", (json_int_t)t->errors, "seconds", t->seconds,
                     "verified", (json_int_t)t->verified);
}

static json_t *job_json(const struct bb_job *j)
{
    json_t *nodes = json_array();
    for (size_t i = 0; i < j->nnodes; i++) {
        const struct bb_node *n = &j->nodes[i];
        json_array_append_new(nodes, json_pack("{s:s,s:s,s:i,s:s?,s:i,s:i,s:b,s:b}", "name",
                                               n->name, "agent_host", n->agent_host,
                                               "agent_port", n->agent_port, "storage",
                                               n->storage, "numa_node", n->numa_node,
                                               "server_port", n->server_port, "started",
                                               n->started, "stage_sent", n->stage_sent));
    }
    char *req = bb_request_format("X", &j->req);
    json_t *o = json_pack(
        "{s:I,s:I,s:I,s:s?,s:s?,s:i,s:i,s:s?,s:b,s:b,s:o,s:I,s:I,s:s,s:s?,s:s?,s:s?,"
        "s:I,s:b,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I}",
        "job_id", (json_int_t)j->job_id, "uid", (json_int_t)j->uid, "gid", (json_int_t)j->gid,
        "user", j->user, "request", req, "phase", (int)j->phase, "failure", (int)j->failure,
        "error", j->error, "hurry", j->hurry, "released", j->released, "nodes", nodes,
        "node_capacity", (json_int_t)j->node_capacity, "chunk_size", (json_int_t)j->chunk_size,
        "secret", j->secret_hex, "storage", j->storage, "mount", j->mount,
        "instance", j->instance_path, "stage_index", (json_int_t)j->stage_index,
        "finalizing", j->finalizing, "in", totals_json(&j->in), "out", totals_json(&j->out),
        "t_begin", (json_int_t)j->t_begin, "t_deployed", (json_int_t)j->t_deployed,
        "t_staged_in", (json_int_t)j->t_staged_in, "t_ended", (json_int_t)j->t_ended,
        "t_staged_out", (json_int_t)j->t_staged_out, "t_done", (json_int_t)j->t_done);
    free(req);
    return o;
}

int bb_job_save(const char *path, struct bb_job *head)
{
    json_t *all = json_array();
    for (struct bb_job *j = head; j; j = j->next) {
        json_t *o = job_json(j);
        if (!o) {
            json_decref(all);
            return -ENOMEM;
        }
        json_array_append_new(all, o);
    }
    json_t *doc = json_pack("{s:i,s:o}", "version", 1, "jobs", all);
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    /* It holds every live job's secret: readable by its owner (slurmctld's
     * user) only, whatever the umask, made fresh so no earlier file's mode
     * or link is inherited. */
    int rc = 0;
    if (unlink(tmp) < 0 && errno != ENOENT)
        rc = -errno;
    int fd = rc < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = -errno;
    if (rc == 0 && json_dumpfd(doc, fd, JSON_INDENT(1)) != 0)
        rc = -EIO;
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0 && close(fd) < 0 && rc == 0)
        rc = -errno;
    json_decref(doc);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    return rc;
}

/* --- loading ---------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Saved strings may be JSON null (pack's "s?"); unpack has no nullable
 * string, so they are read as values. */
static const char *str_of(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void totals_from(json_t *o, struct stage_totals *t)
{
    json_int_t files = 0, dirs = 0, bytes = 0, errors = 0, verified = 0;
    double seconds = 0;
    json_unpack(o, "{s?I,s?I,s?I,s?I,s?F,s?I}", "files", &files, "dirs", &dirs, "bytes", &bytes,
                "errors", &errors, "seconds", &seconds, "verified", &verified);
    *t = (struct stage_totals){ (uint64_t)files, (uint64_t)dirs, (uint64_t)bytes,
                                (uint64_t)errors, seconds, (uint64_t)verified };
}

static struct bb_job *job_from(json_t *o, char *err, size_t errlen)
{
    json_int_t id, uid, gid, cap, chunk, index, tb, td, tsi, te, tso, tdone;
    int phase, failure, hurry, released, finalizing;
    const char *secret;
    json_t *user_v = NULL, *req_v = NULL, *error_v = NULL, *storage_v = NULL;
    json_t *mount_v = NULL, *instance_v = NULL;
    json_t *nodes, *in, *out;
    json_error_t je;
    if (json_unpack_ex(o, &je, 0,
                       "{s:I,s:I,s:I,s?o,s?o,s:i,s:i,s?o,s:b,s:b,s:o,s:I,s:I,s:s,s?o,s?o,"
                       "s?o,s:I,s:b,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I}",
                       "job_id", &id, "uid", &uid, "gid", &gid, "user", &user_v, "request", &req_v,
                       "phase", &phase, "failure", &failure, "error", &error_v, "hurry", &hurry,
                       "released", &released, "nodes", &nodes, "node_capacity", &cap,
                       "chunk_size", &chunk, "secret", &secret, "storage", &storage_v,
                       "mount", &mount_v, "instance", &instance_v, "stage_index", &index,
                       "finalizing", &finalizing, "in", &in, "out", &out, "t_begin", &tb,
                       "t_deployed", &td, "t_staged_in", &tsi, "t_ended", &te,
                       "t_staged_out", &tso, "t_done", &tdone) < 0 ||
        phase < 0 || phase > PHASE_COMPLETE || strlen(secret) >= sizeof(((struct bb_job *)0)->secret_hex)) {
        snprintf(err, errlen, "bad job record: %s", je.text);
        return NULL;
    }
    const char *user = str_of(user_v), *req = str_of(req_v), *error = str_of(error_v);
    const char *storage = str_of(storage_v), *mount = str_of(mount_v);
    const char *instance = str_of(instance_v);
    struct bb_job *j = bb_job_new((uint32_t)id);
    if (!j)
        return NULL;
    j->uid = (uint32_t)uid;
    j->gid = (uint32_t)gid;
    j->user = dup_or_null(user);
    char perr[256];
    if (req && directive_parse("X", NULL, req, &j->req, perr, sizeof(perr)) < 0) {
        snprintf(err, errlen, "job %u: saved request does not parse: %s", j->job_id, perr);
        bb_job_free(j);
        return NULL;
    }
    j->phase = (enum bb_phase)phase;
    j->failure = (enum bb_failure)failure;
    j->error = dup_or_null(error);
    j->hurry = hurry;
    j->released = released;
    j->node_capacity = (uint64_t)cap;
    j->chunk_size = (uint64_t)chunk;
    snprintf(j->secret_hex, sizeof(j->secret_hex), "%s", secret);
    j->storage = dup_or_null(storage);
    j->mount = dup_or_null(mount);
    j->instance_path = dup_or_null(instance);
    j->stage_index = (size_t)index;
    j->finalizing = finalizing;
    totals_from(in, &j->in);
    totals_from(out, &j->out);
    j->t_begin = tb, j->t_deployed = td, j->t_staged_in = tsi;
    j->t_ended = te, j->t_staged_out = tso, j->t_done = tdone;
    size_t n = json_array_size(nodes);
    j->nodes = calloc(n ? n : 1, sizeof(*j->nodes));
    j->nnodes = j->nodes ? n : 0;
    for (size_t i = 0; i < j->nnodes; i++) {
        const char *name, *host;
        json_t *storage_n = NULL;
        int port, sport, started, sent, numa = -1;
        if (json_unpack(json_array_get(nodes, i), "{s:s,s:s,s:i,s?o,s?i,s:i,s:b,s:b}", "name",
                        &name, "agent_host", &host, "agent_port", &port, "storage", &storage_n,
                        "numa_node", &numa, "server_port", &sport, "started", &started,
                        "stage_sent", &sent) < 0) {
            snprintf(err, errlen, "job %u: bad node record %zu", j->job_id, i);
            bb_job_free(j);
            return NULL;
        }
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup(host),
                                        .agent_port = port, .storage = dup_or_null(str_of(storage_n)),
                                        .numa_node = numa, .server_port = sport,
                                        .started = started, .stage_sent = sent };
    }
    return j;
}

int bb_job_load(const char *path, struct bb_job **head, char *err, size_t errlen)
{
    *head = NULL;
    if (access(path, F_OK) < 0 && errno == ENOENT)
        return 0;
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    json_t *jobs = doc ? json_object_get(doc, "jobs") : NULL;
    if (!jobs || !json_is_array(jobs)) {
        snprintf(err, errlen, "%s: %s (line %d)", path, doc ? "no jobs array" : je.text, je.line);
        json_decref(doc);
        return -1;
    }
    struct bb_job **tail = head;
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        char jerr[512];
        struct bb_job *j = job_from(json_array_get(jobs, i), jerr, sizeof(jerr));
        if (!j) {
            snprintf(err, errlen, "%s: %s", path, jerr);
            json_decref(doc);
            return -1;
        }
        *tail = j;
        tail = &j->next;
    }
    json_decref(doc);
    return 0;
}
