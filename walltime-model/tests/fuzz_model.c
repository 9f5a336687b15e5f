/* libFuzzer target: the model file reader must never crash, overrun or
 * accept a file it cannot use. A file it accepts gives, for a job of each
 * of its users, estimates with 0 <= median <= conservative <= request; it
 * learns from that job finishing (the path a job in flight takes); and it
 * writes a file that reads back and writes the same text again. */
#include "walltime.h"
#include "lib/model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char *save(const struct walltime_model *m, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f || model_save_stream(m, f) < 0)
        abort();
    fclose(f);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    err[0] = '\0';
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    struct walltime_model *m = model_load_stream(f, "fuzz", err, sizeof(err));
    fclose(f);
    if (!m) {
        if (!err[0])
            abort();                      /* a refusal must say why */
        return 0;
    }
    int probes = 0;
    for (size_t s = 0; s < m->hist.cap && probes < 8; s++) {
        const struct user_hist *u = &m->hist.slots[s];
        if (u->uid == -1)
            continue;
        struct walltime_job j;
        walltime_job_init(&j);
        j.uid = u->uid;
        j.job_id = u->npending ? u->pending[0].job_id : 1;
        j.submit_time = u->npending ? u->pending[0].submit : 1000;
        j.req_time = u->npending ? u->pending[0].req : 3600;
        j.procs = u->npending ? u->pending[0].procs : 1;
        struct walltime_prediction p;
        if (walltime_predict(m, &j, &p, err, sizeof(err)) < 0)
            abort();
        if (!(p.median_s >= 0 && p.median_s <= p.conservative_s &&
              p.conservative_s <= (double)j.req_time) ||
            !(p.miss_probability >= 0 && p.miss_probability <= 1.000001))
            abort();
        j.wait_time = 10;
        j.run_time = j.req_time / 2;
        if (walltime_observe_finished(m, &j, err, sizeof(err)) < 0)
            abort();
        probes++;
    }
    size_t len, len2;
    char *text = save(m, &len);
    walltime_model_free(m);
    f = fmemopen(text, len, "r");
    m = model_load_stream(f, "saved", err, sizeof(err));
    fclose(f);
    if (!m)
        abort();                          /* what it writes, it reads */
    char *again = save(m, &len2);
    if (len != len2 || memcmp(text, again, len) != 0)
        abort();
    free(text);
    free(again);
    walltime_model_free(m);
    return 0;
}
