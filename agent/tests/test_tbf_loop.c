/* Unit tests of tbf_loop: the agent's AdapTBF period over real files, as
 * two servers write them (totals in rates.usage) and read them (rates). */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "tbf_loop.h"

#define BW 10000000.0                 /* bytes per second: 1 MB a period */

static char dirs[2][64];

static void usage(int k, const char *text)
{
    char path[128], tmp[140];
    snprintf(path, sizeof(path), "%s/rates.usage", dirs[k]);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    fputs(text, fp);
    fclose(fp);
    rename(tmp, path);
    /* a new mtime even on a coarse clock */
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    static long bump;
    t[0].tv_sec += ++bump;
    t[1] = t[0];
    utimensat(AT_FDCWD, path, t, 0);
}

static double rate(int k)
{
    char path[128];
    double r = -1;
    snprintf(path, sizeof(path), "%s/rates", dirs[k]);
    FILE *fp = fopen(path, "r");
    if (fp) {
        if (fscanf(fp, "* %lf", &r) != 1)
            r = -2;
        fclose(fp);
    }
    return r;
}

int main(void)
{
    for (int k = 0; k < 2; k++) {
        snprintf(dirs[k], sizeof(dirs[k]), "/tmp/test_tbf_loop.XXXXXX");
        if (!mkdtemp(dirs[k]))
            return 1;
    }
    struct tbf_loop *t = tbf_loop_new(BW);
    tap_ok(t && tbf_loop_add(t, 1, 3, dirs[0]) == 0 && tbf_loop_add(t, 2, 1, dirs[1]) == 0,
           "two servers' directories are taken");
    tap_is_int(tbf_loop_add(t, 3, 1, "/nonexistent/tbf"), -ENOENT, "a missing directory says so");

    struct tbf_loop_job out[4];
    size_t n = tbf_loop_period(t, out, 4);
    tap_ok(n == 2 && rate(0) == BW * 0.75 && rate(1) == BW * 0.25,
           "idle: each server's rate is its due by weight (%.0f, %.0f)", rate(0), rate(1));

    /* both held back: 3:1 */
    usage(0, "0 500000 1000\n7 100000 0\n");
    usage(1, "0 250000 5000\n");
    n = tbf_loop_period(t, out, 4);
    tap_ok(out[0].moved == 600000 && out[0].held && out[1].moved == 250000 && out[1].held,
           "the usage of all of a server's jobs is summed, waits seen");
    tap_ok(rate(0) == BW * 0.75 && rate(1) == BW * 0.25, "both held back: 3:1");

    /* job 1 idle (its totals unchanged), job 2 held back: job 2 borrows
     * the whole node, job 1 keeps its due as its rate */
    usage(1, "0 500000 9000\n");
    n = tbf_loop_period(t, out, 4);
    tap_ok(out[0].moved == 0 && !out[0].held && out[1].moved == 250000,
           "totals: the difference since the last read is the period's");
    tap_ok(rate(1) == BW && rate(0) == BW * 0.75,
           "the busy job borrows all the idle one leaves (%.0f), the idle one keeps its due "
           "(%.0f)", rate(1), rate(0));
    tap_ok(fabs(out[0].balance + out[1].balance) < 1e-6 && out[0].balance > 0,
           "the lender's and the borrower's records sum to zero");

    /* job 1 wants its due again: paid back */
    usage(0, "0 900000 9000\n7 100000 0\n");
    usage(1, "0 750000 13000\n");
    n = tbf_loop_period(t, out, 4);
    tap_ok(rate(0) > BW * 0.75 && rate(1) < BW * 0.25, "the lender is paid back (%.0f, %.0f)",
           rate(0), rate(1));

    /* bad usage: refused, no demand taken from it */
    usage(1, "0 nonsense\n");
    n = tbf_loop_period(t, out, 4);
    tap_ok(out[1].moved == 0 && !out[1].held, "a usage line that is not JOB BYTES WAITED_NS "
           "counts for nothing");
    /* a link is not followed */
    char path[128];
    snprintf(path, sizeof(path), "%s/rates.usage", dirs[1]);
    unlink(path);
    symlink("/etc/passwd", path);
    n = tbf_loop_period(t, out, 4);
    tap_ok(out[1].moved == 0, "a usage file that is a symbolic link is not read");
    snprintf(path, sizeof(path), "%s/rates.new", dirs[1]);
    symlink("/nonexistent/tbf-target", path);
    tbf_loop_period(t, out, 4);
    tap_ok(access("/nonexistent/tbf-target", F_OK) != 0 && rate(1) > 0,
           "a link planted at the new rates file's name is replaced, not followed");

    tbf_loop_remove(t, 1);
    n = tbf_loop_period(t, out, 4);
    tap_ok(n == 1 && rate(1) == BW, "a job removed: the other has the node");
    tap_ok(tbf_loop_start(t) == 0, "the loop's thread starts");
    usleep(250000);
    tbf_loop_free(t);
    tap_ok(1, "and stops");
    for (int k = 0; k < 2; k++) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dirs[k]);
        if (system(cmd) != 0)
            return 1;
    }
    return tap_done();
}
