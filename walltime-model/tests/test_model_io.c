/* A saved model reloads to bit-identical predictions, keeps learning the
 * same way, and bad model files are refused with the line that is wrong. */
#include "tap.h"
#include "walltime.h"
#include "synth.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROBES 200

static char err[512];

static void predict_all(const struct walltime_model *m, struct walltime_prediction *out)
{
    unsigned seed = 11;
    for (int i = 0; i < PROBES; i++) {
        struct walltime_job j = synth_job(5000 + i, 60000 + i * 30, 1 + i % 9, &seed);
        walltime_predict(m, &j, &out[i], err, sizeof(err));
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = calloc(1, (size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n)
        s[0] = '\0';
    fclose(f);
    return s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/walltime-model-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256], path2[256], bad[256];
    snprintf(path, sizeof(path), "%s/a.model", dir);
    snprintf(path2, sizeof(path2), "%s/b.model", dir);
    snprintf(bad, sizeof(bad), "%s/bad.model", dir);

    struct walltime_model *m = walltime_model_new(NULL);
    unsigned seed = 5;
    for (int i = 0; i < 600; i++) {
        struct walltime_job j = synth_job(i, i * 100, 1 + i % 9, &seed);
        j.wait_time = 0;
        walltime_observe_finished(m, &j, err, sizeof(err));
    }
    tap_is_int(walltime_train(m, err, sizeof(err)), 0, "train on 600 synthetic jobs");
    /* Jobs in flight: submitted (some started), not finished yet. */
    struct walltime_job flight[20];
    for (int i = 0; i < 20; i++) {
        flight[i] = synth_job(600 + i, 59000 + i * 10, 1 + i % 3, &seed);
        flight[i].wait_time = 100;
        struct walltime_prediction fp;
        walltime_submit(m, &flight[i], &fp, err, sizeof(err));
        if (i % 2)
            walltime_observe_started(m, &flight[i], err, sizeof(err));
    }
    tap_is_int(walltime_model_pending(m), 20, "20 submitted jobs are in flight");
    static struct walltime_prediction before[PROBES], after[PROBES];
    predict_all(m, before);
    tap_is_int(walltime_model_save(m, path, err, sizeof(err)), 0, "model saved");

    struct walltime_model *r = walltime_model_load(path, err, sizeof(err));
    tap_ok(r != NULL, "model reloaded (%s)", r ? "ok" : err);
    if (!r)
        return tap_done();
    predict_all(r, after);
    tap_ok(memcmp(before, after, sizeof(before)) == 0,
           "reloaded model gives bit-identical predictions for %d jobs", PROBES);
    tap_is_int(walltime_model_observed(r), 600, "reloaded model remembers 600 observed jobs");
    tap_is_int(walltime_model_pending(r), 20, "... and the 20 jobs in flight");
    walltime_model_save(r, path2, err, sizeof(err));
    char *a = slurp(path), *b = slurp(path2);
    tap_ok(strcmp(a, b) == 0 && strlen(a) > 1000, "save -> load -> save writes the same file");

    /* Both keep learning identically from the same finished jobs: those in
     * flight at the save (the calibration learns from the estimates they
     * were given before it) and new ones. */
    for (int i = 0; i < 20; i++) {
        flight[i].run_time = flight[i].req_time / (i % 2 ? 2 : 20);
        walltime_observe_finished(m, &flight[i], err, sizeof(err));
        walltime_observe_finished(r, &flight[i], err, sizeof(err));
    }
    tap_is_int(walltime_model_pending(r), 0, "finished jobs are no longer in flight");
    for (int i = 0; i < 50; i++) {
        struct walltime_job j = synth_job(700 + i, 60000 + i * 50, 1 + i % 4, &seed);
        j.wait_time = 0;
        walltime_observe_finished(m, &j, err, sizeof(err));
        walltime_observe_finished(r, &j, err, sizeof(err));
    }
    walltime_train(m, err, sizeof(err));
    walltime_train(r, err, sizeof(err));
    predict_all(m, before);
    predict_all(r, after);
    tap_ok(memcmp(before, after, sizeof(before)) == 0,
           "after 50 more observations and a retrain both still agree");

    /* Conservative >= median, both <= request. */
    int ordered = 1;
    unsigned s2 = 11;
    for (int i = 0; i < PROBES; i++) {
        struct walltime_job j = synth_job(5000 + i, 60000 + i * 30, 1 + i % 9, &s2);
        ordered &= after[i].median_s >= 0 && after[i].median_s <= after[i].conservative_s &&
                   after[i].conservative_s <= (double)j.req_time;
    }
    tap_ok(ordered, "0 <= median <= conservative <= requested time");

    struct walltime_job nojob;
    walltime_job_init(&nojob);
    nojob.job_id = 77;
    struct walltime_prediction p;
    tap_is_int(walltime_predict(m, &nojob, &p, err, sizeof(err)), -22, "predict without request is -EINVAL");
    tap_is_str(err, "job 77 has no requested time (-1)", "predict error names the job");
    tap_is_int(walltime_observe_finished(m, &nojob, err, sizeof(err)), -22,
               "observe without run time is -EINVAL");
    tap_is_str(err, "job 77 cannot be learned from: requested time -1, run time -1, "
               "submit time -1 (all must be known)", "observe error names what is missing");
    /* Out of range for the model's sums of times: refused, nothing learned. */
    struct walltime_job huge;
    walltime_job_init(&huge);
    huge.job_id = 78;
    huge.req_time = 3600;
    huge.submit_time = WALLTIME_MAX_SECONDS + 1;
    tap_is_int(walltime_predict(m, &huge, &p, err, sizeof(err)), -22,
               "predict with a submit time out of range is -EINVAL");
    tap_is_str(err, "submit time 1099511627777 is out of range (-1 for unknown, or 0 to "
               "1099511627776)", "... naming the field and value");
    huge.submit_time = 1000;
    huge.run_time = INT64_MAX;
    long seen = walltime_model_observed(m);
    tap_is_int(walltime_observe_finished(m, &huge, err, sizeof(err)), -22,
               "observe with a run time out of range is -EINVAL");
    tap_is_str(err, "run time 9223372036854775807 is out of range (-1 for unknown, or 0 to "
               "1099511627776)", "... naming the field and value");
    tap_ok(walltime_model_observed(m) == seen, "... and the model learned nothing from it");

    /* Bad files. */
    char want[512];
    tap_ok(walltime_model_load("/nonexistent/x.model", err, sizeof(err)) == NULL,
           "missing model file refused");
    tap_is_str(err, "cannot open model file /nonexistent/x.model: No such file or directory",
               "missing model file error names path and errno");
    tap_is_int(walltime_model_save(m, "/nonexistent/x.model", err, sizeof(err)), -2,
               "saving into a missing directory is -ENOENT");
    tap_is_str(err, "cannot create model file /nonexistent/x.model.tmp: No such file or directory",
               "save error names the file and errno");
    write_file(bad, "adafs-walltime-model 5\nparams x 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:2: field 2 is not an integer in [1, 1000]: 'x'", bad);
    tap_is_str(err, want, "a bad parameter is refused with its line and field");
    write_file(bad, "adafs-walltime-model 5\nstate 0 0 0\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:2: expected a 'params' line with 13 fields", bad);
    tap_is_str(err, want, "a missing section is refused with what was expected");
    write_file(bad, "adafs-walltime-model 6\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:1: unsupported model version '6' (this build reads 5; "
             "retrain with adafs-walltime train)", bad);
    tap_is_str(err, want, "future model version refused");
    write_file(bad, "adafs-walltime-model 1\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:1: unsupported model version '1' (this build reads 5; "
             "retrain with adafs-walltime train)", bad);
    tap_is_str(err, want, "a model file from before ratio_wq75 is refused, not misread");
    write_file(bad, "adafs-walltime-model 3\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:1: unsupported model version '3' (this build reads 5; "
             "retrain with adafs-walltime train)", bad);
    tap_is_str(err, want, "a model file without the calibration is refused, not misread");
    write_file(bad, "adafs-walltime-model 4\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:1: unsupported model version '4' (this build reads 5; "
             "retrain with adafs-walltime train)", bad);
    tap_is_str(err, want, "a model file with one price for all users is refused, not misread");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 1025 0\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:4: field 6 is not an integer in [0, 1024]: '1025'", bad);
    tap_is_str(err, want, "a calibration ring longer than the model's is refused");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 1 1\nstep 100 nan 0x1p+10 0 0\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:5: field 3 is not a number in [-20, 30]: 'nan'", bad);
    tap_is_str(err, want, "a calibration that is not a number in range is refused");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 0 0\n"
                    "ensemble median 0 0 0\nroots\nensemble upper 0 0 0\nroots\n"
                    "users 1\nuser 5 0 0 2\np 1 100 -1 3600 4 0x1p-1 0x1p-2 0x1p-2\n"
                    "p 1 100 -1 3600 4 0x1p-1 0x1p-2 0x1p-2\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:12: job 1 is pending twice", bad);
    tap_is_str(err, want, "a job in flight twice is refused");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 0 0\n"
                    "ensemble median 0 0 0\nroots\nensemble upper 0 0 0\nroots\n"
                    "users 1\nuser 5 0 0 1\np 1 100 -1 3600 4 2 0x1p-2 0x1p-2\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:11: field 7 is not a number in [0, 1]: '2'", bad);
    tap_is_str(err, want, "an estimate in flight beyond its request is refused");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 0 0\n"
                    "ensemble median 0 0 0\nroots\nensemble upper 0 0 0\nroots\n"
                    "users 1\nuser 5 1 1 0\ne 100 200 3600 100 4 -1 0 0 1 0 0x1p+6 1\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:11: field 12 is not a number in [-20, 30]: '0x1p+6'", bad);
    tap_is_str(err, want, "a user's price offset out of range is refused");
    a[strlen(a) / 2] = '\0';               /* truncated in the middle */
    *strrchr(a, '\n') = '\0';
    write_file(bad, a);
    tap_ok(walltime_model_load(bad, err, sizeof(err)) == NULL && strstr(err, bad) &&
           (strstr(err, "unexpected end of file") || strstr(err, "expected")),
           "truncated model file refused: %s", err);
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 1 1\nstep 100 0x1p+1 0x1p+10 0 1\n"
                    "ensemble median 0 1 1\nroots 0\nnode 0 0 0 0 0\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:8: node 0 has a child before it", bad);
    tap_is_str(err, want, "a tree that loops is refused");
    write_file(bad, "adafs-walltime-model 5\nparams 30 4 0x1p-1 100 0x1p-1 0x1p-5 0x1p-4 5 600 10 10 0\n"
                    "state 0 0 0\ncalib 0x1p+1 0x1p+10 0 0 0 0\n"
                    "ensemble median 0 0 0\nroots\nensemble upper 0 0 0\nroots\n"
                    "users 0\ntrain 0 3\nend\n");
    walltime_model_load(bad, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:10: ring head 3 with 0 training jobs", bad);
    tap_is_str(err, want, "a training ring whose head is not its count before it is full is "
               "refused (the next job learnt would leave unwritten slots to be saved)");

    free(a);
    free(b);
    walltime_model_free(m);
    walltime_model_free(r);
    unlink(path);
    unlink(path2);
    unlink(bad);
    rmdir(dir);
    return tap_done();
}
