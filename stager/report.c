#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "stage_report.h"

static double per_s(double x, double s)
{
    return s > 0 ? x / s : 0;
}

char *report_json(const struct stage_options *opt, const struct stage_result *r)
{
    struct stage_report_failure *fails = calloc(r->nfailures ? r->nfailures : 1, sizeof(*fails));
    if (!fails)
        return NULL;
    for (size_t i = 0; i < r->nfailures; i++)
        fails[i] = (struct stage_report_failure){
            .path = r->failures[i].path, .err = r->failures[i].err,
            .error = strerror(r->failures[i].err), .what = (char *)r->failures[i].what };
    struct stage_report rep = {
        .direction = (char *)stage_direction_name(opt->direction),
        .source = (char *)opt->src, .destination = (char *)opt->dst,
        .worker = opt->worker, .workers = opt->workers ? opt->workers : 1,
        .files = r->files, .dirs = r->dirs, .bytes = r->bytes, .unchanged = r->unchanged,
        .skipped = r->skipped, .pieces = r->pieces, .errors = r->errors,
        .fs_faults = r->fs_faults,
        /* every file it copied was re-read and compared */
        .verified = opt->verify ? r->files : 0,
        .src_mdops = r->src_mdops, .dst_mdops = r->dst_mdops, .coord_ops = r->coord_ops,
        .lost_workers = r->lost_workers, .taken_over = r->taken_over,
        .given_back = r->given_back,
        .finalize_seconds = r->finalize_seconds, .tail_seconds = r->tail_seconds,
        .idle_seconds = r->idle_seconds, .idle_start_seconds = r->idle_start_seconds,
        .seconds = r->seconds, .files_per_s = per_s((double)r->files, r->seconds),
        .mib_per_s = per_s((double)r->bytes / 1048576.0, r->seconds),
        .complete = r->errors == 0, .failures = fails, .nfailures = r->nfailures,
    };
    char *text = stage_report_encode(&rep);
    free(fails);
    return text;
}

void report_text(FILE *out, const struct stage_options *opt, const struct stage_result *r)
{
    fprintf(out, "adafs-stage %s: %llu files, %llu dirs, %.1f MiB in %.2f s "
            "(%.0f files/s, %.1f MiB/s); %llu unchanged, %llu skipped, %llu pieces, "
            "%llu errors%s\n",
            stage_direction_name(opt->direction), (unsigned long long)r->files,
            (unsigned long long)r->dirs, (double)r->bytes / 1048576.0, r->seconds,
            per_s((double)r->files, r->seconds),
            per_s((double)r->bytes / 1048576.0, r->seconds),
            (unsigned long long)r->unchanged, (unsigned long long)r->skipped,
            (unsigned long long)r->pieces, (unsigned long long)r->errors,
            r->errors ? ": NOT everything was copied (the FAILED lines above)" : "");
}

void report_progress(FILE *out, const struct stage_progress *p)
{
    double frac = p->bytes_seen ? (double)p->bytes_done / (double)p->bytes_seen : 0;
    if (frac > 1)
        frac = 1;
    int width = 24, fill = (int)(frac * width);
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    double rate = per_s((double)p->bytes_done / 1048576.0, p->seconds);
    double left = p->bytes_seen > p->bytes_done ? (double)(p->bytes_seen - p->bytes_done) : 0;
    /* Capped before the conversion: a first trickle of bytes over a long
     * scan can give an estimate beyond what a long holds. */
    double eta_s = rate > 0 ? left / 1048576.0 / rate : 0;
    long eta = eta_s < 1e9 ? (long)eta_s : 1000000000L;
    fprintf(out, "\r[%s] %3.0f%% %llu/%llu files %.0f MiB/s ETA %ld:%02ld %llu err ",
            bar, frac * 100, (unsigned long long)p->files_done,
            (unsigned long long)p->files_seen, rate, eta / 60, eta % 60,
            (unsigned long long)p->errors);
    fflush(out);
}

void report_progress_json(FILE *out, const struct stage_progress *p)
{
    fprintf(out, "{\"seconds\":%.3f,\"files_done\":%llu,\"files_seen\":%llu,"
            "\"bytes_done\":%llu,\"bytes_seen\":%llu,\"errors\":%llu,"
            "\"pfs_mdops\":%llu,\"pfs_bytes\":%llu}\n",
            p->seconds, (unsigned long long)p->files_done, (unsigned long long)p->files_seen,
            (unsigned long long)p->bytes_done, (unsigned long long)p->bytes_seen,
            (unsigned long long)p->errors, (unsigned long long)p->pfs_mdops,
            (unsigned long long)p->pfs_bytes);
    fflush(out);
}
