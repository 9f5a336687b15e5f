/* sysquery: prints what the resource database knows about hosts, as JSON
 * (schema: doc/sysquery.schema.json). */
#include "sysmap.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SELECTED 32

static void usage(FILE *out)
{
    fprintf(out,
        "usage: sysquery --db FILE [-n HOSTLIST] [-e NAME ...] [--at TIME] [--deploy] [--pretty]\n"
        "  -d, --db FILE        the sysmap database\n"
        "  -n, --nodes HOSTLIST hosts as a Slurm expression, e.g. n[001-128] (default: all)\n"
        "  -e, --extractor NAME only this extractor's values (repeatable)\n"
        "  -t, --at TIME        values as of TIME: seconds since the epoch or\n"
        "                       YYYY-MM-DDTHH:MM:SS (UTC) (default: current values)\n"
        "  -D, --deploy         the deployment view: burst buffer path, bytes, NUMA nodes\n"
        "  -p, --pretty         indented JSON (default: one line, --compact)\n");
}

/* Seconds since the epoch, or an ISO 8601 UTC date and time. */
static int parse_time(const char *text, long long *out)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*text && !*end && v > 0) {
        *out = v;
        return 0;
    }
    struct tm tm = { 0 };
    const char *formats[] = { "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
                              "%Y-%m-%d" };
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        memset(&tm, 0, sizeof(tm));
        const char *rest = strptime(text, formats[i], &tm);
        if (rest && !*rest) {
            *out = (long long)timegm(&tm);
            return *out > 0 ? 0 : -1;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "db", required_argument, NULL, 'd' }, { "nodes", required_argument, NULL, 'n' },
        { "extractor", required_argument, NULL, 'e' }, { "at", required_argument, NULL, 't' },
        { "deploy", no_argument, NULL, 'D' }, { "compact", no_argument, NULL, 'c' },
        { "pretty", no_argument, NULL, 'p' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    const char *db_path = NULL, *selected[MAX_SELECTED];
    struct sysmap_query q = { 0 };
    long long at;
    int c;
    while ((c = getopt_long(argc, argv, "d:n:e:t:Dcph", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db_path = optarg; break;
        case 'n': q.hostlist = optarg; break;
        case 'e':
            if (q.nextractors == MAX_SELECTED) {
                fprintf(stderr, "sysquery: more than %d -e options\n", MAX_SELECTED);
                return 2;
            }
            selected[q.nextractors++] = optarg;
            break;
        case 't':
            if (parse_time(optarg, &at) < 0) {
                fprintf(stderr, "sysquery: --at \"%s\" is neither seconds since the epoch nor"
                        " YYYY-MM-DDTHH:MM:SS\n", optarg);
                return 2;
            }
            q.at = at;
            break;
        case 'D': q.deploy = 1; break;
        case 'c': q.pretty = 0; break;
        case 'p': q.pretty = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!db_path || optind < argc) {
        usage(stderr);
        return 2;
    }
    q.extractors = selected;
    char err[1024], *out = NULL;
    struct sysmap_db *db;
    int rc = sysmap_open(db_path, SYSMAP_OPEN_READONLY, &db, err, sizeof(err));
    if (rc == 0) {
        rc = sysmap_query_json(db, &q, &out, err, sizeof(err));
        sysmap_close(db);
    }
    if (rc < 0) {
        fprintf(stderr, "sysquery: %s\n", err);
        return 1;
    }
    fputs(out, stdout);
    fputc('\n', stdout);
    free(out);
    return ferror(stdout) ? 1 : 0;
}
