/* libFuzzer target: the plugin's saved table (bb_job_parse), read by
 * slurmctld at every start, must never crash, leak or overrun whatever the
 * file holds; a record that loads must encode back to a record that loads
 * and encodes to the same bytes (what is saved is read back exactly); and
 * each unreadable record must say why. */
#include "bb_job.h"
#include "rpc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* With FUZZ_BB_JOB_SEED=FILE: writes a table of the current form there
 * (two jobs, one with hostile names, one unreadable marker) to seed the
 * corpus, and exits. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *seed = getenv("FUZZ_BB_JOB_SEED");
    if (!seed)
        return 0;
    struct bb_job *a = bb_job_new(7), *b = bb_job_new(8);
    char err[256];
    directive_parse("X", NULL, "capacity=2G\nstage_in source=/p/in destination=in type=directory\n"
                    "stage_out source=o destination=/p/out-%x-100%% type=file",
                    &a->req, err, sizeof(err));
    a->user = strdup("us\ner");
    a->phase = PHASE_STAGING_IN;
    a->nnodes = 1;
    a->nodes = calloc(1, sizeof(*a->nodes));
    a->nodes[0] = (struct bb_node){ strdup("n1"), strdup("10.0.0.1"), 6830, NULL, -1, 4000, true, false };
    snprintf(a->secret_hex, sizeof(a->secret_hex), "%064d", 5);
    a->mount = strdup("/adafs/7");
    b->unreadable = strdup("job 8: its fields do not decode");
    a->next = b;
    int rc = bb_job_save(seed, a);
    bb_job_free(a);
    bb_job_free(b);
    exit(rc == 0 ? 0 : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    struct bb_job *head = NULL;
    char err[512];
    if (size && data[0] == 'R') {
        /* One record's fields without frame or checksum, which mutated
         * bytes would otherwise seldom get past. */
        struct rpc_reader r;
        rpc_reader_init(&r, data + 1, size - 1);
        head = bb_job_decode(&r, err, sizeof(err));
        if (!head && !err[0])
            abort();   /* refused without saying why */
    } else {
        bb_job_parse((const char *)data, size, "fuzz", &head, err, sizeof(err));
    }
    for (struct bb_job *j = head; j; j = j->next) {
        if (j->unreadable && !j->unreadable[0])
            abort();
        struct rpc_writer w1, w2;
        rpc_writer_init(&w1, NULL, 0);
        bb_job_encode(&w1, j);
        struct rpc_reader r;
        rpc_reader_init(&r, w1.data, w1.len);
        char why[256];
        struct bb_job *again = rpc_writer_ok(&w1) ? bb_job_decode(&r, why, sizeof(why)) : NULL;
        if (!again)
            abort();   /* saved, and not read back */
        rpc_writer_init(&w2, NULL, 0);
        bb_job_encode(&w2, again);
        if (!rpc_writer_ok(&w2) || w1.len != w2.len || memcmp(w1.data, w2.data, w1.len) != 0)
            abort();   /* read back, but not as it was */
        rpc_writer_free(&w1);
        rpc_writer_free(&w2);
        bb_job_free(again);
    }
    while (head) {
        struct bb_job *next = head->next;
        bb_job_free(head);
        head = next;
    }
    return 0;
}
