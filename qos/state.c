/* state: see state.h. */
#include "state.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "rpc.h"

void state_init(struct state *s)
{
    memset(s, 0, sizeof(*s));
    s->policy = -1;
}

void state_free(struct state *s)
{
    free(s->jobs);
    free(s->limits);
    state_init(s);
}

static void put_limits(struct rpc_writer *w, const struct qos_limits *l)
{
    for (int c = 0; c < QOS_NCLASSES; c++)
        rpc_put_u64(w, l->v[c]);
}

static void get_limits(struct rpc_reader *r, struct qos_limits *l)
{
    for (int c = 0; c < QOS_NCLASSES; c++)
        l->v[c] = rpc_get_u64(r);
}

int state_save(const char *path, const struct state *s, char *err, size_t errlen)
{
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    rpc_put_u32(&w, STATE_MAGIC);
    rpc_put_u32(&w, STATE_VERSION);
    rpc_put_u64(&w, s->cycle);
    rpc_put_u32(&w, (uint32_t)s->policy);
    rpc_put_u32(&w, s->period_ms);
    rpc_put_u32(&w, s->capacity_set);
    put_limits(&w, &s->capacity);
    rpc_put_u32(&w, s->njobs);
    for (uint32_t i = 0; i < s->njobs; i++) {
        rpc_put_u32(&w, s->jobs[i].job_id);
        rpc_put_u32(&w, s->jobs[i].seen);
        put_limits(&w, &s->jobs[i].limits);
    }
    rpc_put_u32(&w, s->nlimits);
    for (uint32_t i = 0; i < s->nlimits; i++) {
        rpc_put_u32(&w, s->limits[i].job_id);
        rpc_put_str(&w, s->limits[i].node);
        put_limits(&w, &s->limits[i].limits);
    }
    int rc = rpc_writer_ok(&w) ? fileio_replace(path, w.data, w.len, 0600) : -ENOMEM;
    rpc_writer_free(&w);
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
    return rc;
}

int state_load(const char *path, struct state *s, char *err, size_t errlen)
{
    state_init(s);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    char *data = NULL;
    size_t len = 0;
    int rc = fstat(fd, &st) < 0 ? -errno : fileio_read_all(fd, (size_t)st.st_size, &data, &len);
    close(fd);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return -1;
    }
    struct rpc_reader r;
    rpc_reader_init(&r, data, len);
    rc = -1;
    if (rpc_get_u32(&r) != STATE_MAGIC || rpc_get_u32(&r) != STATE_VERSION)
        goto out;
    s->cycle = rpc_get_u64(&r);
    s->policy = (int)rpc_get_u32(&r);
    s->period_ms = rpc_get_u32(&r);
    s->capacity_set = rpc_get_u32(&r) != 0;
    get_limits(&r, &s->capacity);
    s->njobs = rpc_get_u32(&r);
    if (!rpc_reader_ok(&r) || s->njobs > len / 8 ||
        (s->njobs && !(s->jobs = calloc(s->njobs, sizeof(*s->jobs)))))
        goto out;
    for (uint32_t i = 0; i < s->njobs; i++) {
        s->jobs[i].job_id = rpc_get_u32(&r);
        s->jobs[i].seen = rpc_get_u32(&r) != 0;
        get_limits(&r, &s->jobs[i].limits);
    }
    s->nlimits = rpc_get_u32(&r);
    if (!rpc_reader_ok(&r) || s->nlimits > len / 8 ||
        (s->nlimits && !(s->limits = calloc(s->nlimits, sizeof(*s->limits)))))
        goto out;
    for (uint32_t i = 0; i < s->nlimits && rpc_reader_ok(&r); i++) {
        s->limits[i].job_id = rpc_get_u32(&r);
        const char *node = rpc_get_str(&r);
        snprintf(s->limits[i].node, sizeof(s->limits[i].node), "%s", node ? node : "");
        get_limits(&r, &s->limits[i].limits);
    }
    if (rpc_reader_done(&r) && s->policy >= -1 && s->policy < 4)
        rc = 0;
out:
    free(data);
    if (rc < 0) {
        snprintf(err, errlen, "%s: not a state file of this version of adafs-qosd", path);
        state_free(s);
    }
    return rc;
}

const struct qos_limits *state_job(const struct state *s, uint32_t job_id)
{
    for (uint32_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].job_id == job_id)
            return &s->jobs[i].limits;
    return NULL;
}

int state_set_job(struct state *s, uint32_t job_id, const struct qos_limits *l)
{
    for (uint32_t i = 0; i < s->njobs; i++)
        if (s->jobs[i].job_id == job_id) {
            if (qos_limits_any(l))
                s->jobs[i].limits = *l;
            else
                s->jobs[i] = s->jobs[--s->njobs];
            return 0;
        }
    if (!qos_limits_any(l))
        return 0;
    struct state_job *grown = realloc(s->jobs, (s->njobs + 1) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    s->jobs = grown;
    s->jobs[s->njobs++] = (struct state_job){ .job_id = job_id, .limits = *l };
    return 0;
}

unsigned state_prune_jobs(struct state *s, const uint32_t *running, size_t n)
{
    unsigned dropped = 0;
    for (uint32_t i = 0; i < s->njobs;) {
        bool runs = false;
        for (size_t k = 0; k < n && !runs; k++)
            runs = running[k] == s->jobs[i].job_id;
        if (runs)
            s->jobs[i].seen = true;
        if (!runs && s->jobs[i].seen) {
            s->jobs[i] = s->jobs[--s->njobs];
            dropped++;
        } else {
            i++;
        }
    }
    return dropped;
}
