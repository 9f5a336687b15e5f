/* bb_job_file: the saved table of records (the format below): framing,
 * saving, and loading with every damaged record skipped on its own, and
 * the older versions (2, and adafs 0.x's JSON). One record's fields:
 * bb_job_codec.c. */
#include "bb_job.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "hash.h"
#include "persist.h"
#include "rpc.h"

/* --- the saved table ---------------------------------------------------
 *
 *   "ADAFSBB\n"  u32 version (3)
 *   frames, each:  u32 RECORD_MAGIC  u32 job id  u64 key  u32 length  u64 check
 *                  length bytes of fields (bb_job_encode)
 *
 * A file is a journal (bb_store.h): a record is appended each time it
 * changes, and a later frame of the same key (the instance's identity,
 * kept across restarts) replaces an earlier one; a frame of length 0 says
 * that instance is gone. A compacted file holds each live record once.
 * check is hash_bytes() of the fields: a torn or bit-flipped record is
 * found and skipped on its own; a record whose framing is damaged is
 * skipped by looking for the next magic whose record checks out; a frame
 * cut short by the end of the file is a write that never finished (a
 * crash while appending) and is left out. Version 2 (no key, no journal)
 * and adafs 0.x's JSON table are read too. Integers are little-endian
 * (rpc.h). */

static const char FILE_MAGIC[8] = { 'A', 'D', 'A', 'F', 'S', 'B', 'B', '\n' };
#define FILE_VERSION 3
#define RECORD_MAGIC 0x524a4241u        /* "ABJR" */
#define FRAME_V2 20
#define FRAME_V3 BB_JOB_FRAME_SIZE
/* What one record may take: 4,096 nodes with long names fit many times. */
#define RECORD_MAX (64u << 20)

static void put_frame(struct rpc_writer *w, uint32_t job_id, uint64_t key, size_t at)
{
    size_t len = w->len - at - FRAME_V3;
    uint64_t check = hash_bytes(w->data + at + FRAME_V3, len);
    struct rpc_writer f;
    rpc_writer_init(&f, w->data + at, FRAME_V3);
    rpc_put_u32(&f, RECORD_MAGIC);
    rpc_put_u32(&f, job_id);
    rpc_put_u64(&f, key);
    rpc_put_u32(&f, (uint32_t)len);
    rpc_put_u64(&f, check);
}

int bb_job_frame(struct rpc_writer *w, const struct bb_job *j)
{
    uint8_t frame[FRAME_V3] = { 0 };
    size_t at = w->len;
    rpc_put_raw(w, frame, sizeof(frame));   /* filled in below */
    bb_job_encode(w, j);
    if (!rpc_writer_ok(w) || w->len - at - FRAME_V3 > RECORD_MAX)
        return -ENOMEM;
    put_frame(w, j->job_id, j->key, at);
    return 0;
}

int bb_job_frame_gone(struct rpc_writer *w, uint32_t job_id, uint64_t key)
{
    uint8_t frame[FRAME_V3] = { 0 };
    size_t at = w->len;
    rpc_put_raw(w, frame, sizeof(frame));
    if (!rpc_writer_ok(w))
        return -ENOMEM;
    put_frame(w, job_id, key, at);
    return 0;
}

void bb_job_file_begin(struct rpc_writer *w)
{
    rpc_writer_init(w, NULL, 0);
    rpc_put_raw(w, FILE_MAGIC, sizeof(FILE_MAGIC));
    rpc_put_u32(w, FILE_VERSION);
}

int bb_job_save(const char *path, struct bb_job *head)
{
    struct rpc_writer w;
    bb_job_file_begin(&w);
    int rc = 0;
    for (const struct bb_job *j = head; rc == 0 && j; j = j->next)
        rc = bb_job_frame(&w, j);
    if (rc == 0 && !rpc_writer_ok(&w))
        rc = -ENOMEM;
    if (rc == 0)
        rc = bb_job_write_file(path, w.data, w.len);
    rpc_writer_free(&w);
    return rc;
}

int bb_job_write_file(const char *path, const void *data, size_t len)
{
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    /* It holds every live job's secret: readable by its owner (slurmctld's
     * user) only, whatever the umask, made fresh so no earlier file's mode
     * or link is inherited. */
    int rc = 0;
    if (unlink(tmp) < 0 && errno != ENOENT)
        rc = -errno;
    int fd = rc < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = -errno;
    if (rc == 0)
        rc = fileio_write_all(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (fd >= 0 && close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0 && fd >= 0)
        unlink(tmp);
    return rc;
}

/* --- loading ------------------------------------------------------------ */

/* A journal's records by key while it is read: thousands of live
 * records, each written several times, are read in time linear in the
 * file (a list searched per frame made a restart quadratic). Fixed, so
 * reading needs no allocation that could fail. */
#define LOAD_BUCKETS 4096

/* The table being read, the first problem kept for the caller's message. */
struct loading {
    struct bb_job *head, **tail;  /* versions 1 and 2: in the order read */
    bool journal;                 /* version 3: frames carry keys, later ones win */
    /* version 3: by key, chained through next, until sort_loaded lists them */
    struct bb_job *by_key[LOAD_BUCKETS];
    int unreadable;
    char *err;
    size_t errlen;
};

static struct bb_job **key_chain(struct loading *l, uint64_t key)
{
    return &l->by_key[(key * 0x9e3779b97f4a7c15ull) >> 52];   /* 12 bits: LOAD_BUCKETS */
}

static struct bb_job **find_key_in(struct loading *l, uint64_t key)
{
    for (struct bb_job **p = key_chain(l, key); *p; p = &(*p)->next)
        if ((*p)->key == key)
            return p;
    return NULL;
}

/* Adds a record read (or a marker): in a journal it replaces the record of
 * the same key, if any. */
static void add_loaded(struct loading *l, struct bb_job *j)
{
    struct bb_job **at = l->journal ? find_key_in(l, j->key) : NULL;
    if (at) {
        struct bb_job *old = *at;
        j->next = old->next;
        *at = j;
        if (old->unreadable)
            l->unreadable--;   /* a later record of it came through */
        bb_job_free(old);
        return;
    }
    if (l->journal) {
        struct bb_job **chain = key_chain(l, j->key);
        j->next = *chain;
        *chain = j;
        return;
    }
    j->next = NULL;
    *l->tail = j;
    l->tail = &j->next;
}

static void remove_loaded(struct loading *l, uint64_t key)
{
    struct bb_job **at = find_key_in(l, key);
    if (!at)
        return;
    struct bb_job *gone = *at;
    *at = gone->next;
    if (gone->unreadable)
        l->unreadable--;
    bb_job_free(gone);
}

/* A record that could not be read: its job gets a marker saying why (when
 * the job is known) and the others go on. */
static void lost_record(struct loading *l, uint32_t job_id, uint64_t key, const char *why)
{
    if (l->unreadable++ == 0)
        snprintf(l->err, l->errlen, "%s", why);
    if (!job_id)
        return;
    struct bb_job *j = bb_job_new(job_id);
    if (!j)
        return;
    if (l->journal && key)
        j->key = key;
    j->unreadable = strdup(why);
    add_loaded(l, j);   /* counts a marker it replaces out */
}

struct frame {
    uint32_t id, len;
    uint64_t key;
    size_t size;                  /* of the frame's head */
};

/* What is at data[at]: 1 a frame whose record checks out; -1 a frame with
 * its magic whole whose checksum does not match; -2 one whose length runs
 * past the end of the file; 0 no frame. */
static int frame_at(const uint8_t *data, size_t size, size_t at, bool v3, struct frame *f)
{
    f->size = v3 ? FRAME_V3 : FRAME_V2;
    if (size - at < f->size)
        return 0;
    struct rpc_reader r;
    rpc_reader_init(&r, data + at, f->size);
    uint32_t magic = rpc_get_u32(&r);
    f->id = rpc_get_u32(&r);
    f->key = v3 ? rpc_get_u64(&r) : 0;
    f->len = rpc_get_u32(&r);
    uint64_t check = rpc_get_u64(&r);
    if (magic != RECORD_MAGIC)
        return 0;
    if (f->len > RECORD_MAX || f->len > size - at - f->size)
        return -2;
    return hash_bytes(data + at + f->size, f->len) == check ? 1 : -1;
}

static void load_frames(const uint8_t *data, size_t size, bool v3, struct loading *l)
{
    size_t at = sizeof(FILE_MAGIC) + 4;
    while (at < size) {
        struct frame f;
        int found = frame_at(data, size, at, v3, &f);
        if (found <= 0) {
            size_t next = at + 1;
            struct frame nf;
            while (next < size && frame_at(data, size, next, v3, &nf) != 1)
                next++;
            if (found == -2 && next >= size && v3)
                break;   /* the last append never finished: nothing acted on it */
            /* With its magic whole the job id is believable (the checksum
             * or length is not); without, nothing is. Resume at the next
             * record that checks out. */
            char why[160];
            if (found < 0)
                snprintf(why, sizeof(why), "job %u: its saved record (at byte %zu) is damaged: "
                         "its checksum or length does not match", f.id, at);
            else
                snprintf(why, sizeof(why), "bytes from %zu on are no record", at);
            lost_record(l, found < 0 ? f.id : 0, found < 0 ? f.key : 0, why);
            at = next;
            continue;
        }
        if (v3)
            bb_job_keys_above(f.key);
        if (v3 && f.len == 0) {
            remove_loaded(l, f.key);
            at += f.size;
            continue;
        }
        struct rpc_reader r;
        rpc_reader_init(&r, data + at + f.size, f.len);
        char why[256];
        struct bb_job *j = bb_job_decode(&r, why, sizeof(why));
        if (j && j->job_id != f.id) {
            snprintf(why, sizeof(why), "job %u: its saved record says job %u", f.id, j->job_id);
            bb_job_free(j);
            j = NULL;
        }
        if (j && v3)
            j->key = f.key;
        if (j)
            add_loaded(l, j);
        else
            lost_record(l, f.id, f.key, why);
        at += f.size + f.len;
    }
}

/* Newest instance first, as the plugin keeps its table (keys only grow). */
static int newest_first(const void *a, const void *b)
{
    uint64_t ka = (*(struct bb_job *const *)a)->key, kb = (*(struct bb_job *const *)b)->key;
    return ka < kb ? 1 : ka > kb ? -1 : 0;
}

static void sort_loaded(struct loading *l)
{
    /* One list of the chains first: kept whole even if sorting fails. */
    for (size_t b = 0; b < LOAD_BUCKETS; b++)
        while (l->by_key[b]) {
            struct bb_job *j = l->by_key[b];
            l->by_key[b] = j->next;
            j->next = NULL;
            *l->tail = j;
            l->tail = &j->next;
        }
    size_t n = 0;
    for (struct bb_job *j = l->head; j; j = j->next)
        n++;
    struct bb_job **all = n ? malloc(n * sizeof(*all)) : NULL;
    if (!all)
        return;
    n = 0;
    for (struct bb_job *j = l->head; j; j = j->next)
        all[n++] = j;
    qsort(all, n, sizeof(*all), newest_first);
    l->head = NULL;
    l->tail = &l->head;
    for (size_t i = 0; i < n; i++) {
        all[i]->next = NULL;
        *l->tail = all[i];
        l->tail = &all[i]->next;
    }
    free(all);
}

/* adafs 0.x saved a JSON table; its request is canonical directive text. */
static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

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

static struct bb_job *job_from_v1(json_t *o, char *err, size_t errlen)
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
        phase < 0 || phase > PHASE_COMPLETE || failure < 0 || failure > FAIL_CANCELLED ||
        strlen(secret) >= sizeof(((struct bb_job *)0)->secret_hex) || !json_is_array(nodes)) {
        snprintf(err, errlen, "its saved record does not decode: %s", je.text);
        return NULL;
    }
    struct bb_job *j = bb_job_new((uint32_t)id);
    if (!j)
        return NULL;
    j->uid = (uint32_t)uid;
    j->gid = (uint32_t)gid;
    j->user = dup_or_null(str_of(user_v));
    char perr[256];
    const char *req = str_of(req_v);
    if (req && directive_parse("X", NULL, req, &j->req, perr, sizeof(perr)) < 0) {
        snprintf(err, errlen, "its saved request (adafs 0.x text) does not parse: %s", perr);
        bb_job_free(j);
        return NULL;
    }
    j->phase = (enum bb_phase)phase;
    j->failure = (enum bb_failure)failure;
    j->error = dup_or_null(str_of(error_v));
    j->hurry = hurry;
    j->released = released;
    j->node_capacity = (uint64_t)cap;
    j->chunk_size = (uint64_t)chunk;
    snprintf(j->secret_hex, sizeof(j->secret_hex), "%s", secret);
    j->storage = dup_or_null(str_of(storage_v));
    j->mount = dup_or_null(str_of(mount_v));
    j->instance_path = dup_or_null(str_of(instance_v));
    j->stage_index = (size_t)index;
    j->finalizing = finalizing;
    totals_from(in, &j->in);
    totals_from(out, &j->out);
    j->t_begin = tb, j->t_deployed = td, j->t_staged_in = tsi;
    j->t_ended = te, j->t_staged_out = tso, j->t_done = tdone;
    size_t n = json_array_size(nodes);
    j->nodes = calloc(n ? n : 1, sizeof(*j->nodes));
    for (size_t i = 0; j->nodes && i < n; i++) {
        const char *name, *host;
        json_t *storage_n = NULL;
        int port, sport, started, sent, numa = -1;
        if (json_unpack(json_array_get(nodes, i), "{s:s,s:s,s:i,s?o,s?i,s:i,s:b,s:b}", "name",
                        &name, "agent_host", &host, "agent_port", &port, "storage", &storage_n,
                        "numa_node", &numa, "server_port", &sport, "started", &started,
                        "stage_sent", &sent) < 0) {
            snprintf(err, errlen, "its saved node %zu does not decode", i);
            bb_job_free(j);
            return NULL;
        }
        j->nnodes = i + 1;
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup(host),
                                        .agent_port = port, .storage = dup_or_null(str_of(storage_n)),
                                        .numa_node = numa, .server_port = sport,
                                        .started = started, .stage_sent = sent };
    }
    return j;
}

static int load_v1(const char *path, const char *text, size_t len, struct loading *l)
{
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    json_t *jobs = doc ? json_object_get(doc, "jobs") : NULL;
    if (!jobs || !json_is_array(jobs)) {
        snprintf(l->err, l->errlen, "%s: %s (line %d)", path, doc ? "no jobs array" : je.text,
                 je.line);
        json_decref(doc);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        json_t *o = json_array_get(jobs, i);
        char why[512];
        struct bb_job *j = job_from_v1(o, why, sizeof(why));
        if (j) {
            add_loaded(l, j);
            continue;
        }
        json_int_t id = 0;
        json_unpack(o, "{s:I}", "job_id", &id);
        char named[600];
        snprintf(named, sizeof(named), "job %lld: %s", (long long)id, why);
        lost_record(l, id > 0 && id <= UINT32_MAX ? (uint32_t)id : 0, 0, named);
    }
    json_decref(doc);
    return 0;
}

int bb_job_parse(const char *data, size_t size, const char *name, struct bb_job **head,
                 char *err, size_t errlen)
{
    *head = NULL;
    char first[512] = "";
    struct loading l = { .err = first, .errlen = sizeof(first) };
    l.tail = &l.head;
    int rc = 0;
    struct rpc_reader h;
    rpc_reader_init(&h, data, size);
    if (size >= sizeof(FILE_MAGIC) + 4 && memcmp(data, FILE_MAGIC, sizeof(FILE_MAGIC)) == 0) {
        h.off = sizeof(FILE_MAGIC);
        uint32_t version = rpc_get_u32(&h);
        if (version == FILE_VERSION || version == 2) {
            l.journal = version == FILE_VERSION;
            load_frames((const uint8_t *)data, size, l.journal, &l);
            if (l.journal)
                sort_loaded(&l);
        } else {
            snprintf(first, sizeof(first), "%s: version %u, this plugin reads versions 2 and %d "
                     "(and adafs 0.x's JSON)", name, version, FILE_VERSION);
            rc = -1;
        }
    } else if (size && data[0] == '{') {
        rc = load_v1(name, data, size, &l);
    } else {
        snprintf(first, sizeof(first), "%s: not an adafs state file", name);
        rc = -1;
    }
    *head = l.head;
    if (rc < 0) {
        while (*head) {
            struct bb_job *next = (*head)->next;
            bb_job_free(*head);
            *head = next;
        }
        snprintf(err, errlen, "%s", first);
        return -1;
    }
    if (l.unreadable)
        snprintf(err, errlen, "%s: %d record(s) unreadable, first: %s", name, l.unreadable, first);
    return l.unreadable;
}

int bb_job_load(const char *path, struct bb_job **head, char *err, size_t errlen)
{
    *head = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    struct stat st;
    char *data = NULL;
    size_t size = 0;
    int rc = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && !S_ISREG(st.st_mode))
        rc = -EINVAL;
    if (rc == 0)
        rc = fileio_read_all(fd, (size_t)st.st_size, &data, &size);
    if (fd >= 0)
        close(fd);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-rc));
        return -1;
    }
    rc = bb_job_parse(data, size, path, head, err, errlen);
    free(data);
    return rc;
}
