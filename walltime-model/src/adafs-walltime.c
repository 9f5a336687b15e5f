/* adafs-walltime: train, query and evaluate the walltime model.
 *
 *   adafs-walltime train    (--swf FILE | --sacct FILE) --model OUT
 *   adafs-walltime predict  --model FILE [--job JSON] [--update]
 *   adafs-walltime evaluate (--swf FILE | --sacct FILE) [--json] [--simulate easy]
 *
 * Malformed trace lines are reported on stderr with their line number and
 * skipped. Exit status: 0 ok, 1 runtime error, 2 usage error. */
#include "walltime.h"
#include "lib/easy.h"
#include "predict_json.h"
#include "lib/replay.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define USAGE \
    "usage: adafs-walltime train    (--swf FILE | --sacct FILE) --model OUT [TUNING]\n" \
    "       adafs-walltime predict  --model FILE [--job JSON] [--update]\n" \
    "       adafs-walltime evaluate (--swf FILE | --sacct FILE) [--json]\n" \
    "                               [--simulate easy [--cores-per-node N]] [TUNING]\n" \
    "TUNING: --trees N --depth N --learning-rate X --min-leaf N --quantile Q\n" \
    "        --target-miss R --calib-eta X --inflight-k0 X --episode-gap S\n" \
    "        --retrain-every N\n" \
    "sacct files: sacct --parsable2 --noheader --format=" WALLTIME_SACCT_FORMAT "\n"

struct options {
    const char *swf, *sacct, *model, *job, *simulate;
    int json, update;
    long cores_per_node;
    struct walltime_params params;
};

/* Prints "adafs-walltime: WHAT 'ARG'" (ARG may be NULL) and the usage. */
static int usage_error(const char *what, const char *arg)
{
    if (arg)
        fprintf(stderr, "adafs-walltime: %s '%s'\n%s", what, arg, USAGE);
    else
        fprintf(stderr, "adafs-walltime: %s\n%s", what, USAGE);
    return 2;
}

static int parse_number(const char *opt, const char *s, double lo, double hi, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (errno || *end || !*s || *v < lo || *v > hi) {
        fprintf(stderr, "adafs-walltime: %s must be a number in [%g, %g], not '%s'\n",
                opt, lo, hi, s);
        return -1;
    }
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        { "swf", required_argument, NULL, 's' },
        { "sacct", required_argument, NULL, 'a' },
        { "model", required_argument, NULL, 'm' },
        { "job", required_argument, NULL, 'j' },
        { "json", no_argument, NULL, 'J' },
        { "update", no_argument, NULL, 'u' },
        { "simulate", required_argument, NULL, 'S' },
        { "trees", required_argument, NULL, 1 },
        { "depth", required_argument, NULL, 2 },
        { "learning-rate", required_argument, NULL, 3 },
        { "min-leaf", required_argument, NULL, 4 },
        { "quantile", required_argument, NULL, 5 },
        { "target-miss", required_argument, NULL, 6 },
        { "retrain-every", required_argument, NULL, 7 },
        { "calib-eta", required_argument, NULL, 8 },
        { "inflight-k0", required_argument, NULL, 9 },
        { "episode-gap", required_argument, NULL, 10 },
        { "cores-per-node", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    memset(o, 0, sizeof(*o));
    o->cores_per_node = 1;
    walltime_params_default(&o->params);
    struct walltime_params *p = &o->params;
    int c;
    double v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", longopts, NULL)) != -1) {
        const char *name = c > 0 && c < 11 ? longopts[c + 6].name : "";
        switch (c) {
        case 's': o->swf = optarg; break;
        case 'a': o->sacct = optarg; break;
        case 'm': o->model = optarg; break;
        case 'j': o->job = optarg; break;
        case 'J': o->json = 1; break;
        case 'u': o->update = 1; break;
        case 'S': o->simulate = optarg; break;
        case 'c':
            if (parse_number("cores-per-node", optarg, 1, 1e6, &v)) return -1;
            o->cores_per_node = (long)v;
            break;
        case 1: if (parse_number(name, optarg, 1, 1000, &v)) return -1; p->trees = (int)v; break;
        case 2: if (parse_number(name, optarg, 1, 20, &v)) return -1; p->depth = (int)v; break;
        case 3: if (parse_number(name, optarg, 1e-4, 1, &v)) return -1; p->learning_rate = v; break;
        case 4: if (parse_number(name, optarg, 1, 1e6, &v)) return -1; p->min_leaf = (int)v; break;
        case 5: if (parse_number(name, optarg, 0.5, 0.999, &v)) return -1; p->quantile = v; break;
        case 6: if (parse_number(name, optarg, 0.001, 0.5, &v)) return -1; p->target_miss = v; break;
        case 7: if (parse_number(name, optarg, 1, 1e8, &v)) return -1; p->retrain_every = (int)v; break;
        case 8: if (parse_number(name, optarg, 1e-4, 1, &v)) return -1; p->calib_eta = v; break;
        case 9: if (parse_number(name, optarg, 0.1, 1e6, &v)) return -1; p->inflight_k0 = v; break;
        case 10: if (parse_number(name, optarg, 0, 86400, &v)) return -1; p->episode_gap_s = (int)v; break;
        case 'h': fputs(USAGE, stdout); exit(0);
        default: return -1;
        }
    }
    if (optind < argc) {
        usage_error("unexpected argument", argv[optind]);
        return -1;
    }
    return 0;
}

static int read_trace(const struct options *o, struct walltime_trace *t)
{
    char err[512];
    if (!o->swf == !o->sacct) {
        fprintf(stderr, "adafs-walltime: give exactly one of --swf FILE or --sacct FILE\n%s", USAGE);
        return 2;
    }
    const char *path = o->swf ? o->swf : o->sacct;
    if (walltime_trace_read(path, o->swf ? WALLTIME_SWF : WALLTIME_SACCT, stderr, t,
                            err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-walltime: %s\n", err);
        return 1;
    }
    if (t->malformed)
        fprintf(stderr, "adafs-walltime: %s: %zu malformed lines skipped\n", path, t->malformed);
    if (t->n == 0) {
        fprintf(stderr, "adafs-walltime: %s holds no jobs\n", path);
        walltime_trace_free(t);
        return 1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- train ------------------------------------------------------------ */

static int cmd_train(const struct options *o)
{
    if (!o->model)
        return usage_error("train needs --model OUT", NULL);
    struct walltime_trace t;
    int rc = read_trace(o, &t);
    if (rc)
        return rc;
    char err[512];
    double t0 = now_s();
    /* A time-ordered replay, as in evaluate: the model ends with the state
     * (histories, calibration) it would have after living through the
     * trace, then learns once more from every job. */
    struct walltime_model *m = NULL;
    if (replay_model(&t, &o->params, &m, err, sizeof(err)) < 0 ||
        walltime_train(m, err, sizeof(err)) < 0 ||
        walltime_model_save(m, o->model, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-walltime: %s\n", err);
        rc = 1;
        goto out;
    }
    size_t skipped = 0;
    for (size_t i = 0; i < t.n; i++)
        skipped += t.jobs[i].req_time <= 0 || t.jobs[i].run_time < 0;
    printf("trained on %ld finished jobs (%zu without request or run time skipped) "
           "in %.2f s; model written to %s\n", walltime_model_observed(m), skipped,
           now_s() - t0, o->model);
out:
    walltime_model_free(m);
    walltime_trace_free(&t);
    return rc;
}

/* ---- predict ---------------------------------------------------------- */

/* A bad input line: the reason on stderr and, for a program reading the
 * answers, in the line's answer too. Returns 1. */
static int report_bad_line(long lineno, const char *what, const char *err)
{
    fprintf(stderr, "adafs-walltime: input line %ld: %s\n", lineno, err);
    char reason[600];
    snprintf(reason, sizeof(reason), "%s: %s", what, err);
    json_t *answer = json_pack("{s:I,s:s}", "line", (json_int_t)lineno, "error", reason);
    char *text = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
    if (text)
        printf("%s\n", text);
    else
        printf("{\"line\":%ld,\"error\":\"%s, see stderr\"}\n", lineno, what);
    free(text);
    json_decref(answer);
    fflush(stdout);
    return 1;
}

/* One JSON job in, one JSON line out. Returns 0, or 1 after reporting. */
static int predict_one(struct walltime_model *m, const char *text, long lineno)
{
    struct walltime_job job;
    struct walltime_prediction p;
    char err[512];
    if (job_from_json(text, &job, err, sizeof(err)) < 0) {
        return report_bad_line(lineno, "bad job", err);
    }
    if (job.run_time >= 0) {
        if (walltime_observe_finished(m, &job, err, sizeof(err)) < 0) {
            return report_bad_line(lineno, "bad finished job", err);
        }
        printf("{\"job_id\":%lld,\"observed\":true}\n", (long long)job.job_id);
    } else if (job.wait_time >= 0) {
        if (walltime_observe_started(m, &job, err, sizeof(err)) < 0) {
            return report_bad_line(lineno, "bad started job", err);
        }
        printf("{\"job_id\":%lld,\"started\":true}\n", (long long)job.job_id);
    } else {
        if (walltime_submit(m, &job, &p, err, sizeof(err)) < 0) {
            return report_bad_line(lineno, "cannot predict", err);
        }
        printf("{\"job_id\":%lld,\"median_s\":%.0f,\"conservative_s\":%.0f,"
               "\"group\":\"%s\",\"miss_probability\":%.4f}\n", (long long)job.job_id,
               p.median_s, p.conservative_s, walltime_group_name(p.group), p.miss_probability);
    }
    fflush(stdout);
    return 0;
}

static int cmd_predict(const struct options *o)
{
    if (!o->model)
        return usage_error("predict needs --model FILE", NULL);
    char err[512];
    struct walltime_model *m = walltime_model_load(o->model, err, sizeof(err));
    if (!m) {
        fprintf(stderr, "adafs-walltime: %s\n", err);
        return 1;
    }
    int rc = 0;
    if (o->job) {
        rc = predict_one(m, o->job, 1);
    } else {
        char *line = NULL;
        size_t cap = 0;
        long lineno = 0;
        while (getline(&line, &cap, stdin) >= 0) {
            lineno++;
            if (line[strspn(line, " \t\r\n")] == '\0')
                continue;
            rc |= predict_one(m, line, lineno);
        }
        free(line);
    }
    if (o->update && walltime_model_save(m, o->model, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-walltime: %s\n", err);
        rc = 1;
    }
    walltime_model_free(m);
    return rc;
}

/* ---- evaluate --------------------------------------------------------- */

/* The EASY simulations: planning with the request, the median, the
 * conservative estimate, and the real run time (an oracle). */
#define SIM_COUNT 4
#define SIM_NAMES { "request", "model", "model_safe", "exact" }

static void print_json(const char *path, const struct replay_result *r,
                       const struct easy_result *sim)
{
    printf("{\"trace\":\"");
    for (const char *c = path; *c; c++)
        printf(*c == '"' || *c == '\\' ? "\\%c" : (unsigned char)*c < 0x20 ? "?" : "%c", *c);
    printf("\",\"jobs\":%zu,\"skipped\":%zu,\"predictors\":{", r->n, r->skipped);
    for (int k = 0; k < P_COUNT; k++) {
        const struct replay_metrics *m = &r->metrics[k];
        printf("%s\"%s\":{\"n\":%zu,\"mae_s\":%.3f,\"medae_s\":%.3f,"
               "\"underestimation_rate\":%.6f}", k ? "," : "", replay_predictor_names[k],
               m->n, m->mae_s, m->medae_s, m->underestimation_rate);
    }
    printf("},\"per_user_medae_s\":{");
    for (int k = 0; k < P_COUNT; k++) {
        const struct replay_metrics *m = &r->metrics[k];
        printf("%s\"%s\":{\"users\":%zu,\"p25\":%.3f,\"p50\":%.3f,\"p75\":%.3f,\"p90\":%.3f}",
               k ? "," : "", replay_predictor_names[k], m->users, m->user_medae_p25,
               m->user_medae_p50, m->user_medae_p75, m->user_medae_p90);
    }
    printf("},\"windows\":{\"size\":%d,\"underestimation_rates\":{", REPLAY_WINDOW);
    for (int k = 0; k < P_COUNT; k++) {
        const struct replay_metrics *m = &r->metrics[k];
        printf("%s\"%s\":{\"rates\":[", k ? "," : "", replay_predictor_names[k]);
        for (size_t w = 0; w < m->windows; w++)
            printf("%s%.4f", w ? "," : "", m->window_rate[w]);
        printf("],\"worst\":");
        if (m->windows)
            printf("{\"index\":%zu,\"rate\":%.4f}}", m->worst_window,
                   m->window_rate[m->worst_window]);
        else
            printf("null}");
    }
    printf("}}");
    printf(",\"conservative_groups\":{");
    for (int g = 0; g < 3; g++)
        printf("%s\"%s\":%zu", g ? "," : "", walltime_group_name((enum walltime_group)g),
               r->group[g]);
    printf("}");
    printf(",\"trainings\":%ld,\"train_seconds\":%.3f", r->trainings, r->train_seconds);
    if (sim) {
        static const char *const names[] = SIM_NAMES;
        printf(",\"simulate_easy\":{");
        for (int k = 0; k < SIM_COUNT; k++)
            printf("%s\"%s\":{\"jobs\":%zu,\"avg_wait_s\":%.3f,\"avg_bounded_slowdown\":%.4f,"
                   "\"t_nap\":{\"at_once\":%zu,\"le_1s\":%zu,\"le_10min\":%zu,\"gt_10min\":%zu}}",
                   k ? "," : "", names[k], sim[k].jobs, sim[k].avg_wait_s,
                   sim[k].avg_bounded_slowdown, sim[k].nap.at_once, sim[k].nap.le_1s,
                   sim[k].nap.le_10min, sim[k].nap.gt_10min);
        printf("}");
    }
    printf("}\n");
}

static void print_text(const char *path, const struct replay_result *r,
                       const struct easy_result *sim)
{
    printf("%s: %zu jobs (%zu skipped), time-ordered replay, %ld trainings (%.1f s)\n",
           path, r->n, r->skipped, r->trainings, r->train_seconds);
    printf("%-11s %7s %9s %9s %7s %8s   per-user median abs. error (h): p25 p50 p75 p90\n",
           "predictor", "n", "MAE(h)", "MedAE(h)", "under", "worst1k");
    for (int k = 0; k < P_COUNT; k++) {
        const struct replay_metrics *m = &r->metrics[k];
        /* worst1k: the worst window of 1,000 jobs; "-" for a trace shorter than one. */
        char worst[16] = "-";
        if (m->windows)
            snprintf(worst, sizeof(worst), "%.1f%%", 100 * m->window_rate[m->worst_window]);
        printf("%-11s %7zu %9.3f %9.3f %6.1f%% %8s   %.3f %.3f %.3f %.3f\n",
               replay_predictor_names[k], m->n, m->mae_s / 3600, m->medae_s / 3600,
               100 * m->underestimation_rate, worst, m->user_medae_p25 / 3600,
               m->user_medae_p50 / 3600, m->user_medae_p75 / 3600, m->user_medae_p90 / 3600);
    }
    printf("conservative estimates by calibration group:");
    for (int g = 0; g < 3; g++)
        printf(" %s %zu", walltime_group_name((enum walltime_group)g), r->group[g]);
    printf("\n");
    if (sim) {
        static const char *const names[] = SIM_NAMES;
        printf("EASY backfilling (planning with each estimate; jobs killed at their request):\n");
        for (int k = 0; k < SIM_COUNT; k++)
            printf("  %-11s avg wait %10.1f s   avg bounded slowdown %8.2f\n", names[k],
                   sim[k].avg_wait_s, sim[k].avg_bounded_slowdown);
        printf("Nodes known before the start (T_NAP): started at once / <= 1 s / 1 s-10 min / "
               "> 10 min ahead\n");
        for (int k = 0; k < SIM_COUNT; k++) {
            double n = sim[k].jobs ? (double)sim[k].jobs / 100 : 1;
            printf("  %-11s %5.1f%% %5.1f%% %5.1f%% %5.1f%%\n", names[k],
                   (double)sim[k].nap.at_once / n, (double)sim[k].nap.le_1s / n,
                   (double)sim[k].nap.le_10min / n, (double)sim[k].nap.gt_10min / n);
        }
    }
}

static int cmd_evaluate(const struct options *o)
{
    if (o->simulate && strcmp(o->simulate, "easy") != 0)
        return usage_error("--simulate takes only 'easy', not", o->simulate);
    struct walltime_trace t;
    int rc = read_trace(o, &t);
    if (rc)
        return rc;
    char err[512];
    struct replay_result r;
    if (replay_run(&t, &o->params, &r, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-walltime: %s\n", err);
        walltime_trace_free(&t);
        return 1;
    }
    struct easy_result sim[SIM_COUNT];
    if (o->simulate) {
        /* The last, the real run times, is what no estimate can beat. */
        double *exact = malloc((t.n + 1) * sizeof(double));
        for (size_t i = 0; exact && i < t.n; i++)
            exact[i] = isnan(r.pred[P_REQUEST][i]) ? NAN : (double)t.jobs[i].run_time;
        const double *est[SIM_COUNT] = { r.pred[P_REQUEST], r.pred[P_MODEL],
                                         r.pred[P_MODEL_SAFE], exact };
        double *nap = malloc((t.n + 1) * sizeof(double));
        for (int k = 0; k < SIM_COUNT; k++)
            if (!nap || !exact || easy_simulate(&t, est[k], t.max_procs, o->cores_per_node,
                                                &sim[k], nap) < 0) {
                fprintf(stderr, "adafs-walltime: out of memory simulating %zu jobs\n", t.n);
                free(nap);
                free(exact);
                rc = 1;
                goto out;
            }
        free(nap);
        free(exact);
    }
    const char *path = o->swf ? o->swf : o->sacct;
    if (o->json)
        print_json(path, &r, o->simulate ? sim : NULL);
    else
        print_text(path, &r, o->simulate ? sim : NULL);
out:
    replay_free(&r);
    walltime_trace_free(&t);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(USAGE, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    struct options o;
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (parse_options(argc - 1, argv + 1, &o) < 0)
        return 2;
    if (strcmp(cmd, "train") == 0)
        return cmd_train(&o);
    if (strcmp(cmd, "predict") == 0)
        return cmd_predict(&o);
    if (strcmp(cmd, "evaluate") == 0)
        return cmd_evaluate(&o);
    return usage_error("unknown command", cmd);
}
