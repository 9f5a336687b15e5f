/* Unit tests of bucket: per-job token buckets on a simulated clock, and
 * the rates file the node agent writes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include "bucket.h"
#include "tap.h"

#define MS 1000000ll

/* A job sending size-byte requests back to back for ms milliseconds:
 * bytes moved. */
static double run(struct buckets *b, uint64_t job, uint64_t size, int64_t *now, int64_t ms)
{
    double moved = 0;
    int64_t end = *now + ms * MS;
    while (*now < end) {
        int64_t wait = buckets_charge(b, job, size, *now);
        *now += wait + 1000;   /* 1 us of service */
        moved += (double)size;
    }
    return moved;
}

int main(void)
{
    struct buckets *b = buckets_new();
    int64_t now = 1000 * MS;
    buckets_set(b, 1, 100e6, now);   /* 100 MB/s */
    double moved = run(b, 1, 1 << 20, &now, 2000);
    double rate = moved / 2.0;
    tap_ok(rate > 100e6 * 0.97 && rate < 100e6 * 1.08, "a bound job moves its rate "
           "(%.1f MB/s for 100)", rate / 1e6);
    int64_t t0 = now;
    double free_moved = run(b, 2, 1 << 20, &now, 100);
    tap_ok(free_moved / ((now - t0) / 1e9) > 1e11, "a job without a rate is not held back");
    struct bucket_usage u[4];
    size_t n = buckets_usage(b, u, 4);
    int have1 = 0;
    for (size_t i = 0; i < n; i++)
        if (u[i].job == 1)
            have1 = u[i].bytes == (uint64_t)moved && u[i].waited_ns > 1000 * MS;
    tap_ok(n == 2 && have1, "usage: bytes moved and time held back per job");
    struct bucket_usage again[4];
    tap_ok(buckets_usage(b, again, 4) == n && again[0].bytes == u[0].bytes,
           "usage is the total so far: a reader takes differences");

    /* the rates file */
    char path[] = "/tmp/test_bucket.XXXXXX";
    int fd = mkstemp(path);
    dprintf(fd, "# job rate\n1 50000000\n7 1e6\n");
    close(fd);
    tap_is_int(buckets_load(b, path, now), 0, "the rates file loads");
    now += 1000 * MS;
    moved = run(b, 1, 1 << 20, &now, 2000);
    tap_ok(moved / 2.0 < 50e6 * 1.08 && moved / 2.0 > 50e6 * 0.95, "a new rate holds (%.1f MB/s "
           "for 50)", moved / 2.0 / 1e6);
    fd = open(path, O_WRONLY | O_TRUNC);
    dprintf(fd, "7 1e6\n");
    close(fd);
    buckets_load(b, path, now);
    t0 = now;
    free_moved = run(b, 1, 1 << 20, &now, 100);
    tap_ok(free_moved / ((now - t0) / 1e9) > 1e11, "a job the file no longer lists is free");
    fd = open(path, O_WRONLY | O_TRUNC);
    dprintf(fd, "7 fast\n");
    close(fd);
    tap_is_int(buckets_load(b, path, now), -EINVAL, "a line that is not JOB RATE is refused");
    /* "*": every job without a line, in one bucket */
    fd = open(path, O_WRONLY | O_TRUNC);
    dprintf(fd, "* 40000000\n7 1e9\n");
    close(fd);
    tap_is_int(buckets_load(b, path, now), 0, "a '* RATE' line loads");
    now += 1000 * MS;
    t0 = now;
    for (int i = 0; i < 2000; i++)
        for (uint64_t job = 1; job <= 2; job++)
            now += buckets_charge(b, job, 1 << 20, now);
    double both = 2000.0 * 2 * (1 << 20) / ((now - t0) / 1e9);
    tap_ok(both < 40e6 * 1.08 && both > 40e6 * 0.95, "jobs without a line share the '*' "
           "bucket (%.1f MB/s together for 40)", both / 1e6);
    fd = open(path, O_WRONLY | O_TRUNC);
    dprintf(fd, "* x\n");
    close(fd);
    tap_is_int(buckets_load(b, path, now), -EINVAL, "a '*' line without a rate is refused");
    unlink(path);
    tap_is_int(buckets_load(b, path, now), -ENOENT, "a missing file says so");
    buckets_free(b);
    return tap_done();
}
