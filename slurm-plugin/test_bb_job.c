#include "bb_job.h"
#include "tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[] = "/tmp/test_bb_job.XXXXXX";

static void free_all(struct bb_job *j)
{
    while (j) {
        struct bb_job *n = j->next;
        bb_job_free(j);
        j = n;
    }
}

static unsigned char *slurp(const char *file, size_t *size)
{
    FILE *f = fopen(file, "rb");
    unsigned char *buf = malloc(1 << 20);
    *size = f && buf ? fread(buf, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    return buf;
}

static void spit(const char *file, const unsigned char *data, size_t size)
{
    FILE *f = fopen(file, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
}

/* Where the record of job_id starts: its frame is "ABJR" and the id. */
static size_t find_frame(const unsigned char *data, size_t size, uint32_t job_id)
{
    const unsigned char want[8] = { 'A', 'B', 'J', 'R', job_id & 0xff, (job_id >> 8) & 0xff,
                                    (job_id >> 16) & 0xff, job_id >> 24 };
    for (size_t i = 0; i + 8 <= size; i++)
        if (memcmp(data + i, want, 8) == 0)
            return i;
    return 0;
}

/* The first failure is kept as the cause; a replace always takes. */
static void test_errors(void)
{
    struct bb_job *j = bb_job_new(9);
    bb_job_set_error(j, FAIL_CANCELLED, "cancelled");
    bb_job_set_error(j, FAIL_NODE, "node n%d: %s", 2, "storage unusable");
    bb_job_set_error(j, FAIL_USER, "a consequence");
    tap_ok(j->failure == FAIL_NODE && strcmp(j->error, "node n2: storage unusable") == 0,
           "a cancel is replaced, a cause is kept (%s)", j->error);
    bb_job_replace_error(j, FAIL_USER, "pass %d failed", 2);
    tap_ok(j->failure == FAIL_USER && strcmp(j->error, "pass 2 failed") == 0,
           "bb_job_replace_error replaces a cause (%s)", j->error);
    bb_job_free(j);
}

int main(void)
{
    int fd = mkstemp(path);
    close(fd);
    char err[512];

    struct bb_job *a = bb_job_new(7);
    a->uid = 1001;
    a->gid = 1001;
    a->user = strdup("alice");
    directive_parse("X", NULL, "capacity=2G\nstage_in source=/p/in destination=\"in put\" type=directory\n"
                    "create_persistent name=proj capacity=3G nodes=2 access=group:users "
                    "fair_share=user-then-size\nuse_persistent name=other",
                    &a->req, err, sizeof(err));
    a->req.access = BB_ACCESS_FUSE;   /* the site's default, fixed at begin */
    a->phase = PHASE_STAGING_IN;
    a->nnodes = 2;
    a->nodes = calloc(2, sizeof(*a->nodes));
    a->nodes[0] = (struct bb_node){ strdup("n1"), strdup("10.0.0.1"), 6830, strdup("/nvme/adafs"), 1, 4000, true, true, 48 };
    a->nodes[1] = (struct bb_node){ strdup("n2"), strdup("10.0.0.2"), 6830, NULL, -1, 4001, true, false, 0 };
    a->node_capacity = 1ULL << 30;
    a->chunk_size = 512 << 10;
    snprintf(a->secret_hex, sizeof(a->secret_hex), "%064d", 5);
    snprintf(a->server_key_hex, sizeof(a->server_key_hex), "%064d", 6);
    a->storage = strdup("/var/lib/adafs");
    a->mount = strdup("/adafs/7");
    /* instance_path and error stay NULL: they must survive as NULL */
    a->in.files = 1002;
    a->in.seconds = 1.5;
    a->t_begin = 1000;
    struct bb_job *b = bb_job_new(8);
    b->phase = PHASE_COMPLETE;
    b->failure = FAIL_USER;
    b->error = strdup("stage_in source=/x on node n1: No such file or directory");
    snprintf(b->secret_hex, sizeof(b->secret_hex), "ab");
    a->next = b;

    /* A state file left by an older version with a loose mode, and a
     * permissive umask: the new file is still the owner's alone. */
    char stale[4200];
    snprintf(stale, sizeof(stale), "%s.new", path);
    FILE *sf = fopen(stale, "w");
    if (sf)
        fclose(sf);
    chmod(stale, 0666);
    mode_t old_mask = umask(0);
    tap_is_int(bb_job_save(path, a), 0, "a table of two jobs saves");
    umask(old_mask);
    struct stat st;
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600,
           "the state file (it holds the jobs' secrets) is 0600 under umask 0");
    struct bb_job *loaded = NULL;
    tap_is_int(bb_job_load(path, &loaded, err, sizeof(err)), 0, "and loads back");
    if (!loaded) {
        tap_ok(0, "loaded: %s", err);
        return tap_done();
    }
    struct bb_job *j = bb_job_find(loaded, 7);
    tap_ok(j != NULL, "job 7 is there");
    if (j) {
        tap_is_str(j->user, "alice", "user");
        tap_is_int(j->phase, PHASE_STAGING_IN, "phase");
        tap_is_int(j->nnodes, 2, "nodes");
        tap_is_str(j->nodes[0].storage, "/nvme/adafs", "per-node storage");
        tap_is_int(j->nodes[0].numa_node, 1, "per-node NUMA node");
        tap_ok(j->nodes[1].storage == NULL, "a NULL storage stays NULL");
        tap_is_int(j->nodes[1].server_port, 4001, "server port");
        tap_ok(j->nodes[0].stage_sent && !j->nodes[1].stage_sent, "stage flags");
        tap_ok(j->nodes[0].cpus == 48 && j->nodes[1].cpus == 0,
               "the job's CPUs per node (0: not known) beside them");
        tap_ok(j->instance_path == NULL && j->error == NULL, "NULL strings stay NULL");
        tap_is_int(j->req.nstages, 1, "the request is kept");
        tap_is_str(j->req.nstages ? j->req.stages[0].destination : NULL, "in put", "quoted value kept");
        tap_ok(j->req.capacity == 2ULL << 30, "capacity kept");
        tap_is_int(j->req.access, BB_ACCESS_FUSE, "access kept (CONFIGURE and the job's env need it)");
        tap_ok(j->req.npersist == 2 && j->req.persist[0].op == PERSIST_CREATE &&
               strcmp(j->req.persist[0].name, "proj") == 0 && j->req.persist[0].nodes == 2 &&
               j->req.persist[0].capacity == 3ULL << 30 && j->req.persist[0].group &&
               strcmp(j->req.persist[0].group, "users") == 0 &&
               j->req.persist[0].access == PERSIST_ACCESS_GROUP &&
               j->req.persist[1].op == PERSIST_USE && !j->req.persist[1].group,
               "persistent-instance lines kept");
        tap_ok(j->req.npersist == 2 && strcmp(j->req.persist[0].fair_share, "user-then-size") == 0 &&
               j->req.persist[1].fair_share[0] == '\0', "a create line's fair_share= kept; a line "
               "without one (saved as lines were before it) loads with none");
        tap_is_int(j->in.files, 1002, "totals kept");
        tap_is_int(j->t_begin, 1000, "times kept");
        tap_ok(strcmp(j->secret_hex, a->secret_hex) == 0 &&
               strcmp(j->server_key_hex, a->server_key_hex) == 0,
               "the secret and the servers' key kept (a restarted server exchanges again)");
    }
    struct bb_job *k = bb_job_find(loaded, 8);
    tap_ok(k && k->req.npersist == 0 && !k->req.persist,
           "a job without them loads with none (its record ends where records always did)");
    tap_ok(k && k->server_key_hex[0] == '\0' && strcmp(k->secret_hex, "ab") == 0,
           "a record without a servers' key (saved before there was one) loads with none");
    struct bb_job *made = bb_job_new(11);
    tap_ok(made && bb_job_make_secrets(made) == 0 && strlen(made->secret_hex) == 64 &&
           strlen(made->server_key_hex) == 64 && strcmp(made->secret_hex, made->server_key_hex) != 0,
           "a new instance gets a secret and a servers' key, two random 32-byte keys");
    bb_job_free(made);
    tap_ok(k && k->failure == FAIL_USER && k->error && strstr(k->error, "No such file"),
           "a failed job keeps its cause");
    if (k) {
        /* Held after its retries ran out: read back after a restart too. */
        k->failure = FAIL_TRANSIENT;
        struct rpc_writer tw;
        rpc_writer_init(&tw, NULL, 0);
        bb_job_encode(&tw, k);
        struct rpc_reader tr;
        rpc_reader_init(&tr, tw.data, tw.len);
        struct bb_job *t = bb_job_decode(&tr, err, sizeof(err));
        tap_ok(t && t->failure == FAIL_TRANSIENT, "a transient failure's record decodes (%s)",
               t ? "" : err);
        bb_job_free(t);
        rpc_writer_free(&tw);
    } else {
        tap_ok(0, "a transient failure's record decodes");
    }

    /* Whatever bytes a job name or a path holds come back as they went. */
    const char *hostile[] = { "/home/u/out-x%q", "/home/u/out-100%", "out\nname\"with\\quotes",
                              "/p/ \t%%j %x", "\xff\xfe\x01 bytes" };
    struct bb_job *h = bb_job_new(9);
    h->req.nstages = 5;
    h->req.stages = calloc(5, sizeof(*h->req.stages));
    for (int i = 0; i < 5; i++)
        h->req.stages[i] = (struct stage_spec){ i % 2 ? STAGE_OUT : STAGE_IN, STAGE_FILE,
                                                strdup(hostile[i]), strdup(hostile[4 - i]), i, 1 };
    h->user = strdup("us\ner");
    h->phase = PHASE_RUNNING;
    h->superseded = true;
    struct bb_job *u = bb_job_new(10);
    u->unreadable = strdup("job 10: its request does not decode");
    h->next = u;
    b->next = h;
    tap_is_int(bb_job_save(path, a), 0, "a table with hostile names and an unreadable marker saves");
    struct bb_job *again = NULL;
    tap_is_int(bb_job_load(path, &again, err, sizeof(err)), 0, "and loads (a kept marker is no new loss)");
    struct bb_job *h2 = bb_job_find(again, 9);
    int same = h2 && h2->req.nstages == 5 && h2->superseded && h2->req.access == BB_ACCESS_UNSET &&
               strcmp(h2->user, "us\ner") == 0;
    for (int i = 0; same && i < 5; i++)
        same = strcmp(h2->req.stages[i].source, hostile[i]) == 0 &&
               strcmp(h2->req.stages[i].destination, hostile[4 - i]) == 0 &&
               h2->req.stages[i].verify == 1 && h2->req.stages[i].direction == (i % 2 ? STAGE_OUT : STAGE_IN);
    tap_ok(same, "paths with %%, newlines, quotes and high bytes are read back exactly");
    struct bb_job *u2 = bb_job_find(again, 10);
    tap_ok(u2 && u2->unreadable && strstr(u2->unreadable, "does not decode"),
           "an unreadable marker is kept across saves");
    free_all(again);

    /* One damaged record costs its job only. */
    size_t size;
    unsigned char *data = slurp(path, &size);
    size_t at7 = find_frame(data, size, 7), at8 = find_frame(data, size, 8);
    tap_ok(at7 && at8 && at8 > at7, "records are framed by job (%zu, %zu)", at7, at8);
    data[at7 + BB_JOB_FRAME_SIZE + 40] ^= 0x55;            /* a byte inside job 7's fields */
    spit(path, data, size);
    again = NULL;
    tap_is_int(bb_job_load(path, &again, err, sizeof(err)), 1, "a flipped byte: one record unreadable");
    struct bb_job *j7 = bb_job_find(again, 7);
    tap_ok(j7 && j7->unreadable && strstr(j7->unreadable, "job 7: its saved record"),
           "job 7 is a marker saying why (%s)", j7 && j7->unreadable ? j7->unreadable : "-");
    tap_ok(bb_job_find(again, 8) && !bb_job_find(again, 8)->unreadable &&
           bb_job_find(again, 9) && !bb_job_find(again, 9)->unreadable,
           "the other jobs load whole");
    tap_ok(strstr(err, path) && strstr(err, "job 7"), "the message names the file and job (%s)", err);
    free_all(again);
    data[at7 + BB_JOB_FRAME_SIZE + 40] ^= 0x55;
    memset(data + at7, 0, 4);               /* job 7's frame itself */
    spit(path, data, size);
    again = NULL;
    tap_is_int(bb_job_load(path, &again, err, sizeof(err)), 1,
               "a damaged frame is skipped up to the next good record");
    tap_ok(bb_job_find(again, 8) && bb_job_find(again, 9) && !bb_job_find(again, 7),
           "jobs after it load (%s)", err);
    free_all(again);
    data[sizeof("ADAFSBB")] = 4;            /* a version from the future */
    spit(path, data, size);
    tap_is_int(bb_job_load(path, &again, err, sizeof(err)), -1, "a later version is refused whole");
    tap_ok(strstr(err, "version 4") != NULL, "saying so (%s)", err);
    free(data);

    /* adafs 0.x's JSON table is read once; a request whose text does not
     * parse again (the escape %% was saved expanded) costs its job only. */
    FILE *f = fopen(path, "w");
    fputs("{\"version\":1,\"jobs\":[{\"job_id\":21,\"uid\":5,\"gid\":5,\"user\":\"bob\",\"request\":"
          "\"#X stage_out source=r destination=/p/out-100% type=file\\n\",\"phase\":2,\"failure\":0,"
          "\"error\":null,\"hurry\":false,\"released\":true,\"nodes\":[],\"node_capacity\":1,"
          "\"chunk_size\":4096,\"secret\":\"ab\",\"storage\":null,\"mount\":null,\"instance\":null,"
          "\"stage_index\":0,\"finalizing\":false,\"in\":{},\"out\":{},\"t_begin\":0,\"t_deployed\":0,"
          "\"t_staged_in\":0,\"t_ended\":0,\"t_staged_out\":0,\"t_done\":0},"
          "{\"job_id\":22,\"uid\":5,\"gid\":5,\"user\":\"bob\",\"request\":"
          "\"#X stage_out source=r destination=/p/out type=file\\n\",\"phase\":2,\"failure\":0,"
          "\"error\":null,\"hurry\":false,\"released\":true,\"nodes\":[{\"name\":\"n1\","
          "\"agent_host\":\"h\",\"agent_port\":1,\"server_port\":2,\"started\":true,"
          "\"stage_sent\":false}],\"node_capacity\":1,"
          "\"chunk_size\":4096,\"secret\":\"ab\",\"storage\":null,\"mount\":null,\"instance\":null,"
          "\"stage_index\":0,\"finalizing\":false,\"in\":{},\"out\":{},\"t_begin\":0,\"t_deployed\":0,"
          "\"t_staged_in\":0,\"t_ended\":0,\"t_staged_out\":0,\"t_done\":0},{\"job_id\":\"x\"}]}", f);
    fclose(f);
    struct bb_job *old = NULL;
    tap_is_int(bb_job_load(path, &old, err, sizeof(err)), 2, "a 0.x table loads, two records lost");
    struct bb_job *o21 = bb_job_find(old, 21), *o22 = bb_job_find(old, 22);
    tap_ok(o21 && o21->unreadable && strstr(o21->unreadable, "does not parse"),
           "job 21 (out-100%%) is a marker (%s)", o21 && o21->unreadable ? o21->unreadable : "-");
    tap_ok(o22 && !o22->unreadable && o22->nnodes == 1 && o22->req.nstages == 1 &&
           strcmp(o22->req.stages[0].destination, "/p/out") == 0, "job 22 loads whole");
    free_all(old);
    f = fopen(path, "w");
    fputs("not a state file", f);
    fclose(f);
    struct bb_job *bad = NULL;
    tap_is_int(bb_job_load(path, &bad, err, sizeof(err)), -1, "a file of something else is refused");
    tap_ok(strstr(err, path) != NULL, "naming the file (%s)", err);
    unlink(path);
    tap_is_int(bb_job_load(path, &bad, err, sizeof(err)), 0, "a missing file is an empty table");
    tap_ok(bad == NULL, "empty");
    free_all(loaded);
    free_all(a);
    test_errors();
    return tap_done();
}
