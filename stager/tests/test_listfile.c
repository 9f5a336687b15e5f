/* List files: pairs, quoting, comments, and every kind of bad line reported
 * with its number while the good lines are kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "listfile.h"
#include "tap.h"

static const char *text =
    "# comment line\n"
    "/pfs/a.dat  in/a.dat\n"
    "\n"
    "   \t\n"
    "\"/pfs/with space.dat\" \"in/with space.dat\"\r\n"
    "/pfs/esc\\ aped in/esc\\ aped\n"
    "/pfs/only-one-field\n"
    "/pfs/x in/x extra\n"
    "\"/pfs/unterminated in/y\n"
    "/pfs/\xc3\xbc\xc3\xb1\xc3\xaf in/\xc3\xbc\n"
    "\"\" in/empty\n"
    "/pfs/q\"uote in/q\n"
    "\"/pfs/a\"b in/ab\n"
    "/pfs/trailing in/back\\\n"
    "\"/pfs/\\\"quoted\\\\\" in/q2";        /* last line without newline */

int main(void)
{
    struct list l;
    tap_is_int(list_parse(text, strlen(text), &l), 0, "parse returns 0 despite bad lines");
    tap_is_int(l.count, 5, "five good pairs");
    if (l.count == 5) {
        tap_is_str(l.entries[0].src, "/pfs/a.dat", "plain source");
        tap_is_str(l.entries[0].dst, "in/a.dat", "plain destination");
        tap_is_int(l.entries[0].line, 2, "line number of first pair");
        tap_is_str(l.entries[1].src, "/pfs/with space.dat", "quoted source with space");
        tap_is_str(l.entries[1].dst, "in/with space.dat", "quoted destination, CRLF line");
        tap_is_str(l.entries[2].src, "/pfs/esc aped", "backslash-escaped space");
        tap_is_str(l.entries[3].dst, "in/\xc3\xbc", "UTF-8 kept as bytes");
        tap_is_str(l.entries[4].src, "/pfs/\"quoted\\", "escapes inside quotes");
        tap_is_int(l.entries[4].line, 15, "last line without newline counted");
    }
    static const char *want[] = {
        "line 7: missing destination (expected `source destination`)",
        "line 8: unexpected third field (quote names with blanks)",
        "line 9: source: unterminated quote",
        "line 11: source: empty path",
        "line 12: source: quote inside an unquoted field",
        "line 13: source: text right after a closing quote",
        "line 14: destination: backslash at end of line",
    };
    size_t nwant = sizeof(want) / sizeof(want[0]);
    tap_is_int(l.error_count, nwant, "seven bad lines reported");
    for (size_t i = 0; i < nwant && i < l.error_count; i++)
        tap_is_str(l.errors[i].message, want[i], want[i]);
    list_free(&l);

    char nul[] = "/a b\n/c\0d e\n/f g\n";
    tap_is_int(list_parse(nul, sizeof(nul) - 1, &l), 0, "parse with a NUL byte");
    tap_ok(l.count == 2 && l.error_count == 1 &&
           !strcmp(l.errors[0].message, "line 2: NUL byte in line"), "NUL byte line reported");
    list_free(&l);

    char *longline = malloc(10000);
    memset(longline, 'x', 9999);
    longline[9999] = '\0';
    list_parse(longline, 9999, &l);
    tap_ok(l.count == 0 && l.error_count == 1 &&
           strstr(l.errors[0].message, "longer than 8192"), "overlong line reported");
    list_free(&l);
    free(longline);

    tap_is_int(list_load("/nonexistent/list.txt", &l), -ENOENT, "missing list file: -ENOENT");
    tap_is_int(list_load("/", &l), -EINVAL, "a directory as list file: -EINVAL");
    char path[] = "/tmp/test_listfile.XXXXXX";
    int fd = mkstemp(path);
    tap_ok(fd >= 0 && write(fd, "/s d\n", 5) == 5, "temp list written");
    close(fd);
    tap_ok(list_load(path, &l) == 0 && l.count == 1 && !strcmp(l.entries[0].dst, "d"),
           "list_load reads a file");
    list_free(&l);
    unlink(path);
    return tap_done();
}
