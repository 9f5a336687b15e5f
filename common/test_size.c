#include "size.h"
#include "tap.h"

#include <errno.h>

static void good(const char *text, uint64_t want)
{
    uint64_t got = 0;
    int rc = size_parse(text, &got);
    tap_ok(rc == 0 && got == want, "size_parse(\"%s\") = %llu (got rc %d, %llu)",
           text, (unsigned long long)want, rc, (unsigned long long)got);
}

static void bad(const char *text, int want_rc)
{
    uint64_t got = 0;
    tap_is_int(size_parse(text, &got), want_rc, text);
}

int main(void)
{
    good("0", 0);
    good("4096", 4096);
    good("512K", 512 * 1024);
    good("512k", 512 * 1024);
    good("200G", 200ULL << 30);
    good("200GB", 200ULL << 30);
    good("200GiB", 200ULL << 30);
    good("1.5T", 3ULL << 39);
    bad("16E", -ERANGE);
    good("15E", 15ULL << 60);
    bad("", -EINVAL);
    bad("12QB", -EINVAL);
    bad("G", -EINVAL);
    bad("-1G", -EINVAL);
    bad("1.5", -EINVAL);
    bad("10 G", -EINVAL);
    bad("1GX", -EINVAL);
    bad("99999999999999999999", -ERANGE);
    good("18446744073709551615", UINT64_MAX);   /* what size_format writes for it */
    bad("18446744073709551616", -ERANGE);
    bad("17179869184G", -ERANGE);

    uint64_t n = 0;
    tap_ok(count_parse("2000", &n) == 0 && n == 2000, "count_parse 2000");
    tap_is_int(count_parse("99999999999999999999", &n), -ERANGE, "count_parse past 64 bits: ERANGE");
    tap_ok(count_parse("18446744073709551615", &n) == 0 && n == UINT64_MAX, "count_parse 2^64-1");
    tap_is_int(count_parse("18446744073709551616", &n), -ERANGE, "count_parse 2^64: ERANGE");
    tap_is_int(count_parse("2K", &n), -EINVAL, "count_parse takes no unit");
    tap_is_int(count_parse("", &n), -EINVAL, "count_parse of nothing");
    tap_is_int(count_parse("-1", &n), -EINVAL, "count_parse takes no sign");
    tap_is_int(count_parse(" 1", &n), -EINVAL, "count_parse takes no blank");

    tap_ok(size_share(10, 4) == 3 && size_share(8, 4) == 2 && size_share(5, 0) == 5,
           "size_share rounds up");
    tap_ok(size_share(UINT64_MAX, 2) == (UINT64_MAX >> 1) + 1,
           "size_share of 2^64-1 over 2 nodes does not wrap to 0");
    tap_ok(size_parse("18014398509481983.999999K", &n) == 0 && n == UINT64_MAX &&
           size_share(n, 7) > 0, "a capacity of 2^64-1 bytes parses; its share is not 0");

    char buf[32];
    size_format(512 * 1024, buf, sizeof(buf));
    tap_is_str(buf, "512K", "size_format 512K");
    size_format(1000, buf, sizeof(buf));
    tap_is_str(buf, "1000", "size_format 1000");
    size_format(200ULL << 30, buf, sizeof(buf));
    tap_is_str(buf, "200G", "size_format 200G");
    return tap_done();
}
