/* Unit tests for the Slurm-style host list expressions. */
#include "hostlist.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

/* Expands expr and returns the names joined by spaces (static buffer). */
static const char *expand_joined(const char *expr, int *rc_out, char *err, size_t errlen)
{
    static char joined[8192];
    struct hostlist hl = { 0 };
    int rc = hostlist_expand(expr, &hl, err, errlen);
    *rc_out = rc;
    joined[0] = '\0';
    for (size_t i = 0; i < hl.count; i++) {
        if (i)
            strcat(joined, " ");
        strcat(joined, hl.names[i]);
    }
    hostlist_free(&hl);
    return joined;
}

static void expect(const char *expr, const char *want)
{
    int rc;
    char err[256] = "";
    const char *got = expand_joined(expr, &rc, err, sizeof(err));
    char what[300];
    snprintf(what, sizeof(what), "expand %s", expr);
    tap_is_str(rc ? err : got, want, what);
}

static void expect_error(const char *expr, int code, const char *msg)
{
    int rc;
    char err[256] = "";
    expand_joined(expr, &rc, err, sizeof(err));
    char what[300];
    snprintf(what, sizeof(what), "error for \"%s\"", expr);
    tap_is_int(rc, code, what);
    tap_is_str(err, msg, what);
}

static void compress_is(const char *const *names, size_t n, const char *want, const char *what)
{
    char *got = hostlist_compress(names, n);
    tap_is_str(got, want, what);
    free(got);
}

int main(void)
{
    expect("n1", "n1");
    expect("n[1-3]", "n1 n2 n3");
    expect("n[001-003],gpu[1,3-4]", "n001 n002 n003 gpu1 gpu3 gpu4");
    expect("n[8-11]", "n8 n9 n10 n11");
    expect("n[098-101]", "n098 n099 n100 n101");
    expect("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
    expect("n[1-2]-ib", "n1-ib n2-ib");
    expect("a.b_c-d", "a.b_c-d");
    expect("n[5],n[5]", "n5 n5");

    struct hostlist big = { 0 };
    char err[256];
    tap_is_int(hostlist_expand("n[00001-10000]", &big, err, sizeof(err)), 0, "10000 hosts expand");
    tap_is_int(big.count, 10000, "10000 names");
    tap_is_str(big.count ? big.names[9999] : NULL, "n10000", "last of 10000");
    char *back = hostlist_compress((const char *const *)big.names, big.count);
    tap_is_str(back, "n[00001-10000]", "10000 hosts compress back");
    free(back);
    hostlist_free(&big);

    expect_error("", -EINVAL, "hostlist \"\": position 1: empty host list");
    expect_error("n[1-", -EINVAL, "hostlist \"n[1-\": position 5: expected a digit, found the end");
    expect_error("n[1-3", -EINVAL, "hostlist \"n[1-3\": position 6: missing ']'");
    expect_error("n[3-1]", -EINVAL, "hostlist \"n[3-1]\": position 5: range end 1 is below its start 3");
    expect_error("n[a]", -EINVAL, "hostlist \"n[a]\": position 3: expected a digit, found 'a'");
    expect_error("n1,,n2", -EINVAL, "hostlist \"n1,,n2\": position 4: empty host name");
    expect_error("n1,", -EINVAL, "hostlist \"n1,\": position 4: empty host name after ','");
    expect_error("n1 n2", -EINVAL, "hostlist \"n1 n2\": position 3: unexpected character ' '");
    expect_error("n[1;2]", -EINVAL, "hostlist \"n[1;2]\": position 4: expected ',', '-' or ']', found ';'");
    expect_error("n]", -EINVAL, "hostlist \"n]\": position 2: unexpected character ']'");
    expect_error("n[1234567890]", -ERANGE,
                 "hostlist \"n[1234567890]\": position 3: number has more than 9 digits");
    expect_error("n[0-9999999]", -E2BIG,
                 "hostlist \"n[0-9999999]\": position 13: expands to more than 1048576 hosts");
    expect_error("a[0-999]b[0-9999]", -E2BIG,
                 "hostlist \"a[0-999]b[0-9999]\": position 18: expands to more than 1048576 hosts");
    expect_error("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", -E2BIG,
                 "hostlist \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\": "
                 "position 1: host name longer than 64 characters");

    const char *mixed[] = { "n003", "gpu4", "n001", "gpu1", "n002", "gpu3", "n007", "login" };
    compress_is(mixed, 8, "gpu[1,3-4],login,n[001-003,007]", "compress sorts and groups");
    const char *dups[] = { "n1", "n1", "n2", "n2" };
    compress_is(dups, 4, "n[1-2]", "compress drops duplicates");
    const char *one[] = { "n5", "n5" };
    compress_is(one, 2, "n5", "compress one name without brackets");
    const char *widths[] = { "n9", "n10", "n08" };
    compress_is(widths, 3, "n08,n[9-10]", "compress keeps padded and unpadded apart");
    compress_is(NULL, 0, "", "compress of nothing");

    tap_ok(hostlist_valid_name("n001"), "n001 is a valid name");
    tap_ok(!hostlist_valid_name("n0;drop"), "n0;drop is not a valid name");
    tap_ok(!hostlist_valid_name(""), "empty is not a valid name");
    return tap_done();
}
