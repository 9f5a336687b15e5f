#include "bb_job.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char path[] = "/tmp/test_bb_job.XXXXXX";

int main(void)
{
    int fd = mkstemp(path);
    close(fd);
    char err[512];

    struct bb_job *a = bb_job_new(7);
    a->uid = 1001;
    a->gid = 1001;
    a->user = strdup("alice");
    directive_parse("X", NULL, "capacity=2G\nstage_in source=/p/in destination=\"in put\" type=directory",
                    &a->req, err, sizeof(err));
    a->phase = PHASE_STAGING_IN;
    a->nnodes = 2;
    a->nodes = calloc(2, sizeof(*a->nodes));
    a->nodes[0] = (struct bb_node){ strdup("n1"), strdup("10.0.0.1"), 6830, strdup("/nvme/adafs"), 1, 4000, true, true };
    a->nodes[1] = (struct bb_node){ strdup("n2"), strdup("10.0.0.2"), 6830, NULL, -1, 4001, true, false };
    a->node_capacity = 1ULL << 30;
    a->chunk_size = 512 << 10;
    snprintf(a->secret_hex, sizeof(a->secret_hex), "%064d", 5);
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
        tap_ok(j->instance_path == NULL && j->error == NULL, "NULL strings stay NULL");
        tap_is_int(j->req.nstages, 1, "the request is kept");
        tap_is_str(j->req.nstages ? j->req.stages[0].destination : NULL, "in put", "quoted value kept");
        tap_ok(j->req.capacity == 2ULL << 30, "capacity kept");
        tap_is_int(j->in.files, 1002, "totals kept");
        tap_is_int(j->t_begin, 1000, "times kept");
    }
    struct bb_job *k = bb_job_find(loaded, 8);
    tap_ok(k && k->failure == FAIL_USER && k->error && strstr(k->error, "No such file"),
           "a failed job keeps its cause");

    FILE *f = fopen(path, "w");
    fputs("{\"version\":1,\"jobs\":[{\"job_id\":\"x\"}]}", f);
    fclose(f);
    struct bb_job *bad = NULL;
    tap_is_int(bb_job_load(path, &bad, err, sizeof(err)), -1, "a damaged file is refused");
    tap_ok(strstr(err, path) != NULL, "naming the file (%s)", err);
    unlink(path);
    tap_is_int(bb_job_load(path, &bad, err, sizeof(err)), 0, "a missing file is an empty table");
    tap_ok(bad == NULL, "empty");
    while (loaded) {
        struct bb_job *n = loaded->next;
        bb_job_free(loaded);
        loaded = n;
    }
    while (a) {
        struct bb_job *n = a->next;
        bb_job_free(a);
        a = n;
    }
    return tap_done();
}
