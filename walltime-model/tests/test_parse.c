/* SWF and sacct line parsing, and whole-trace reading with malformed lines. */
#include "tap.h"
#include "walltime.h"

#include <stdlib.h>
#include <unistd.h>

static char err[256];

static void swf(void)
{
    struct walltime_job j;
    const char *ok = "  7   100  20  3600 16 -1 -1 16 7200 1024 1 42 5 3 -1 2 -1 -1\n";
    tap_is_int(walltime_parse_swf_line(ok, &j, err, sizeof(err)), 1, "swf: a job line parses");
    tap_ok(j.job_id == 7 && j.submit_time == 100 && j.wait_time == 20 && j.run_time == 3600 &&
           j.procs == 16 && j.req_time == 7200 && j.uid == 42 && j.gid == 5 && j.status == 1,
           "swf: fields 1-4, 8, 9, 11-13 land in the job");
    tap_is_int(j.req_mem_kb, 1024 * 16, "swf: requested memory is per processor");
    tap_ok(j.exe == walltime_key_id(3) && j.partition == walltime_key_id(2) && j.account == 0,
           "swf: executable and partition ids kept, unknown queue is 0");
    tap_is_int(walltime_parse_swf_line("; Version: 2.2\n", &j, err, sizeof(err)), 0,
               "swf: header comment is not a job");
    tap_is_int(walltime_parse_swf_line("   \n", &j, err, sizeof(err)), 0, "swf: blank line is not a job");

    tap_is_int(walltime_parse_swf_line("1 2 3\n", &j, err, sizeof(err)), -1, "swf: short line rejected");
    tap_is_str(err, "expected 18 fields, got 3", "swf: short line error names the count");
    tap_is_int(walltime_parse_swf_line("1 0 0 10 1 -1 -1 1 abc -1 1 1 1 -1 -1 -1 -1 -1", &j,
                                       err, sizeof(err)), -1, "swf: non-number rejected");
    tap_is_str(err, "field 9 (requested time) is not a number: 'abc'",
               "swf: non-number error names field and text");
    walltime_parse_swf_line("1 -5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 2 (submit time) is negative: -5", "swf: negative submit rejected");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 0 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 9 (requested time) must be > 0 or -1: 0", "swf: zero request rejected");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 .34 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 9 (requested time) must be > 0 or -1: 0.34",
               "swf: request rounding to 0 s rejected (found by the fuzzer)");
    walltime_parse_swf_line("1 5 -3 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 3 (wait time) is negative: -3", "swf: negative wait rejected");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1 9", &j, err, sizeof(err));
    tap_is_str(err, "more than 18 fields", "swf: extra field rejected");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 1e300 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 9 (requested time) is not a number: '1e300'", "swf: out-of-range number rejected");
    /* Found by the fuzzer (UBSan): values whose conversion is undefined. */
    tap_is_int(walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 60 -1 66666666666 1 1 -1 -1 -1 -1 -1", &j,
                                       err, sizeof(err)), -1, "swf: a status beyond int refused");
    tap_is_str(err, "field 11 (status) must be -1 or 0 to 5: 6.66667e+10", "... naming it");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 60 -1 7 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 11 (status) must be -1 or 0 to 5: 7", "swf: an unknown status code refused");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 9e15 60 9e15 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "field 10 (requested memory) 9e+15 KB x field 8 (requested procs) 9e+15 is too large",
               "swf: a memory total beyond 64 bits refused");
    walltime_parse_swf_line("1 5 0 10 1 -1 -1 1 2e12 -1 1 1 1 -1 -1 -1 -1 -1", &j, err, sizeof(err));
    tap_is_str(err, "requested time 2000000000000 is out of range (-1 for unknown, or 1 to 1099511627776)",
               "swf: a request the model's sums could overflow refused");
}

static void job_check(void)
{
    struct walltime_job j;
    walltime_job_init(&j);
    tap_is_int(walltime_job_check(&j, err, sizeof(err)), 0, "check: all unknown is fine");
    j.req_time = 3600;
    j.submit_time = WALLTIME_MAX_SECONDS;
    j.status = 5;
    tap_is_int(walltime_job_check(&j, err, sizeof(err)), 0, "check: the limits themselves are fine");
    j.wait_time = -2;
    tap_is_int(walltime_job_check(&j, err, sizeof(err)), -22, "check: a negative wait refused");
    tap_is_str(err, "wait time -2 is out of range (-1 for unknown, or 0 to 1099511627776)", "... naming it");
    j.wait_time = 0;
    j.req_time = 0;
    walltime_job_check(&j, err, sizeof(err));
    tap_is_str(err, "requested time 0 is out of range (-1 for unknown, or 1 to 1099511627776)",
               "check: a zero request refused");
    j.req_time = 60;
    j.status = 6;
    walltime_job_check(&j, err, sizeof(err));
    tap_is_str(err, "status 6 is out of range (-1 for unknown, or 0 to 5)", "check: status beyond SWF's codes");
}

static void sacct(void)
{
    struct walltime_job j;
    const char *ok = "1234|1000|100|proj|batch|sim|2024-01-02T03:00:00|2024-01-02T03:10:00|"
                     "120|3000|8|2|2Gc|COMPLETED\n";
    tap_is_int(walltime_parse_sacct_line(ok, &j, err, sizeof(err)), 1, "sacct: a job line parses");
    tap_ok(j.job_id == 1234 && j.uid == 1000 && j.gid == 100 && j.req_time == 7200 &&
           j.run_time == 3000 && j.procs == 8 && j.nodes == 2 && j.wait_time == 600 &&
           j.status == 1, "sacct: ids, TimelimitRaw (min), ElapsedRaw, CPUs, nodes, wait");
    tap_is_int(j.submit_time, 1704164400, "sacct: ISO submit time read as UTC");
    tap_is_int(j.req_mem_kb, 8LL * 2 * 1024 * 1024, "sacct: ReqMem 2Gc is per CPU");
    tap_ok(j.account == walltime_key("proj") && j.partition == walltime_key("batch") &&
           j.exe == walltime_key("sim"), "sacct: account, partition, job name keyed");
    walltime_parse_sacct_line("5|1|1|a|p|n|1700000000|1700000100|10|60|1|1|100Mn|CANCELLED by 0",
                              &j, err, sizeof(err));
    tap_ok(j.submit_time == 1700000000 && j.status == 5 && j.req_mem_kb == 100 * 1024,
           "sacct: epoch times, 'CANCELLED by N', ReqMem per node");
    tap_is_int(walltime_parse_sacct_line("5|1|1|a|p|n|1700000000|1700000100|UNLIMITED|60|1|1||FAILED",
                                         &j, err, sizeof(err)), 1, "sacct: UNLIMITED time limit is a job");
    tap_ok(j.req_time == -1 && j.req_mem_kb == -1 && j.status == 0,
           "sacct: no request (-1), unknown memory, FAILED is status 0");

    tap_is_int(walltime_parse_sacct_line("1234.batch|1000|100|proj|batch|batch|2024-01-02T03:00:00|"
                                         "2024-01-02T03:10:00|120|3000|8|2|2Gc|COMPLETED", &j, err,
                                         sizeof(err)), 0, "sacct: job step ignored");
    tap_is_int(walltime_parse_sacct_line("9|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|1G|RUNNING",
                                         &j, err, sizeof(err)), 0, "sacct: running job ignored");
    tap_is_int(walltime_parse_sacct_line("9|1|1|a|p|n|2024-01-02T03:00:00|Unknown|10|0|1|1|1G|CANCELLED by 5",
                                         &j, err, sizeof(err)), 0, "sacct: never-started job ignored");
    tap_is_int(walltime_parse_sacct_line("JobIDRaw|UID|GID|Account|Partition|JobName|Submit|Start|"
                                         "TimelimitRaw|ElapsedRaw|NCPUS|NNodes|ReqMem|State", &j, err,
                                         sizeof(err)), 0, "sacct: header line ignored");

    tap_is_int(walltime_parse_sacct_line("1|2|3", &j, err, sizeof(err)), -1, "sacct: short line rejected");
    tap_is_str(err, "expected 14 '|'-separated fields (" WALLTIME_SACCT_FORMAT "), got 3",
               "sacct: short line error names the expected format");
    walltime_parse_sacct_line("x1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|1G|COMPLETED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 1 (JobIDRaw) is not a job id: 'x1'", "sacct: bad job id");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|1G|EXPLODED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 14 (State) is not a Slurm job state: 'EXPLODED'", "sacct: bad state");
    walltime_parse_sacct_line("1|1|1|a|p|n|yesterday|2024-01-02T03:10:00|10|60|1|1|1G|COMPLETED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 7 (Submit) is not a time: 'yesterday'", "sacct: bad submit time");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|1:00:00|60|1|1|1G|COMPLETED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 9 (TimelimitRaw) is not minutes > 0: '1:00:00'", "sacct: bad time limit");
    /* Found by the fuzzer: a limit whose seconds do not fit in 64 bits. */
    tap_is_int(walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|611111111111111110|60|1|1|1G|COMPLETED",
                                         &j, err, sizeof(err)), -1, "sacct: an overflowing time limit is refused");
    tap_is_str(err, "field 9 (TimelimitRaw) is not minutes > 0: '611111111111111110'", "... naming it");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|-4|1|1|1G|COMPLETED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 10 (ElapsedRaw) is not a non-negative integer: '-4'", "sacct: bad elapsed");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|lots|COMPLETED",
                              &j, err, sizeof(err));
    tap_is_str(err, "field 13 (ReqMem) is not a memory size under 8 EiB: 'lots'", "sacct: bad memory");
    /* Found by the fuzzer (UBSan): a total whose conversion is undefined. */
    tap_is_int(walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|"
                                         "99999999999999T|COMPLETED", &j, err, sizeof(err)), -1,
               "sacct: a memory size beyond 64 bits refused");
    tap_is_str(err, "field 13 (ReqMem) is not a memory size under 8 EiB: '99999999999999T'", "... naming it");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|9000000000000000|1|1|"
                              "1G|COMPLETED", &j, err, sizeof(err));
    tap_is_str(err, "run time 9000000000000000 is out of range (-1 for unknown, or 0 to 1099511627776)",
               "sacct: an elapsed time the model's sums could overflow refused");
    walltime_parse_sacct_line("1|1|1|a|p|n|2024-01-02T03:00:00|2024-01-02T03:10:00|10|60|1|1|1G|COMPLETED|x",
                              &j, err, sizeof(err));
    tap_is_str(err, "more than 14 '|'-separated fields", "sacct: extra field rejected");
}

static char *write_temp(const char *text)
{
    char *path = strdup("/tmp/walltime-test-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        abort();
    close(fd);
    return path;
}

/* What sacct prints for job 7 of uid 1001 named "x\n999|2002|...|COMPLETED\ny":
 * the name is the one field a user writes, printed as it is. */
#define FORGED "999|2002|2002|a|batch|victim|2024-01-01T00:00:00|2024-01-01T00:00:00|600|1|1|1|1G|COMPLETED"
static const char forged_fields[] =
    "7%s1001%s1001%sa%sbatch%sx\n" FORGED "\n"
    "y%s2024-01-01T01:00:00%s2024-01-01T01:00:00%s60%s120%s1%s1%s1G%sCOMPLETED\n"
    "8%s2002%s2002%sa%sbatch%sown%s2024-01-01T02:00:00%s2024-01-01T02:00:00%s600%s500%s1%s1%s1G%sCOMPLETED\n";

static void sacct_forged(const char *delim, int header, size_t want_jobs, int want_forged,
                         const char *what)
{
    char text[2048], *p = text;
    const char *d = delim;
    if (header)
        p += sprintf(p, "JobIDRaw%sUID%sGID%sAccount%sPartition%sJobName%sSubmit%sStart%s"
                     "TimelimitRaw%sElapsedRaw%sNCPUS%sNNodes%sReqMem%sState\n",
                     d, d, d, d, d, d, d, d, d, d, d, d, d);
    sprintf(p, forged_fields, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d, d,
            d, d, d, d);
    char *path = write_temp(text);
    FILE *report = tmpfile();
    struct walltime_trace t;
    tap_is_int(walltime_trace_read(path, WALLTIME_SACCT, report, &t, err, sizeof(err)), 0,
               "sacct: a trace with a job name holding a newline is read");
    int forged = 0;
    for (size_t i = 0; i < t.n; i++)
        forged += t.jobs[i].job_id == 999;
    tap_ok(t.n == want_jobs && forged == want_forged, "%s (%zu jobs, %d forged)", what, t.n, forged);
    char buf[1024] = "";
    rewind(report);
    buf[fread(buf, 1, sizeof(buf) - 1, report)] = '\0';
    int warned = strstr(buf, "a job name with a newline can add lines") != NULL;
    tap_ok(warned == (strcmp(delim, "|") == 0), "sacct: the reader warns of '|', of no other "
           "delimiter (%s: %s)", delim, warned ? "warned" : "not warned");
    fclose(report);
    walltime_trace_free(&t);
    unlink(path);
    free(path);
}

static void trace(void)
{
    char *path = write_temp(
        "; UnixStartTime: 1000\n"
        "; MaxProcs: 64\n"
        "2 50 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "1 2\n"
        "1 20 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "3 70 0 10 1 -1 -1 1 sixty -1 1 1 1 -1 -1 -1 -1 -1\n"
        "4 90 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
    FILE *report = tmpfile();
    struct walltime_trace t;
    tap_is_int(walltime_trace_read(path, WALLTIME_SWF, report, &t, err, sizeof(err)), 0,
               "trace: file with malformed lines is read");
    tap_ok(t.n == 3 && t.malformed == 2, "trace: 3 jobs kept, 2 malformed lines skipped");
    tap_ok(t.n == 3 && t.jobs[0].job_id == 1 && t.jobs[0].submit_time == 1020 &&
           t.jobs[2].job_id == 4, "trace: jobs in submit order, times shifted by UnixStartTime");
    tap_is_int(t.max_procs, 64, "trace: MaxProcs header read");
    char buf[512] = "", want[512];
    rewind(report);
    size_t got = fread(buf, 1, sizeof(buf) - 1, report);
    buf[got] = '\0';
    snprintf(want, sizeof(want),
             "%s:4: expected 18 fields, got 2 (line skipped)\n"
             "%s:6: field 9 (requested time) is not a number: 'sixty' (line skipped)\n", path, path);
    tap_is_str(buf, want, "trace: each malformed line reported with its number");
    fclose(report);
    walltime_trace_free(&t);
    unlink(path);
    free(path);

    path = write_temp("; UnixStartTime: 9223372036854775807\n"
                      ";MaxProcs:  0\n"
                      "1 20 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n");
    report = tmpfile();
    tap_is_int(walltime_trace_read(path, WALLTIME_SWF, report, &t, err, sizeof(err)), 0,
               "trace: file with bad headers is read");
    tap_ok(t.n == 1 && t.malformed == 2 && t.jobs[0].submit_time == 20 && t.max_procs == -1,
           "trace: bad headers reported and not applied (times cannot overflow)");
    rewind(report);
    got = fread(buf, 1, sizeof(buf) - 1, report);
    buf[got] = '\0';
    snprintf(want, sizeof(want),
             "%s:1: header UnixStartTime is not a number from 0 to 1099511627776: "
             "'9223372036854775807' (line skipped)\n"
             "%s:2: header MaxProcs is not a number from 1 to 1099511627776: '0' (line skipped)\n",
             path, path);
    tap_is_str(buf, want, "trace: each bad header reported with its line");
    fclose(report);
    walltime_trace_free(&t);
    unlink(path);
    free(path);

    tap_is_int(walltime_trace_read("/nonexistent/trace.swf", WALLTIME_SWF, NULL, &t, err, sizeof(err)),
               -2, "trace: missing file is -ENOENT");
    tap_is_str(err, "cannot open trace /nonexistent/trace.swf: No such file or directory",
               "trace: missing file error names the path");
}

int main(void)
{
    swf();
    job_check();
    sacct();
    trace();
    /* With '|' the user's line is read (as a job of uid 2002) whatever the
     * reader does; a delimiter no user knows, named by the header, makes
     * it one field: only job 8 is left. */
    sacct_forged("|", 0, 2, 1, "sacct: '|', no header: the forged line is one of 2 jobs");
    sacct_forged("|", 1, 2, 1, "sacct: '|' in the header: the same");
    sacct_forged("|Zq7vR2pX|", 1, 1, 0, "sacct: a random delimiter from the header: no forged job, job 8 read");
    return tap_done();
}
