/* sysmap: collects this node's resources and stores them in a database file
 * (--db), sends them to sysmap-server (--upload) or prints them (--print).
 * Run from cron or the sysmap.timer systemd unit on every compute node. */
#include "auth.h"
#include "extract/extract.h"
#include "hostlist.h"
#include "sysmap.h"
#include "upload.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SELECTED 32

static void usage(FILE *out)
{
    fprintf(out,
        "usage: sysmap (--db FILE | --upload URL | --print) [-e NAME ...] [options]\n"
        "       sysmap -l\n"
        "  -d, --db FILE          store the report in this sqlite database\n"
        "  -u, --upload URL       POST the report to sysmap-server\n"
        "  -p, --print            print the report as JSON\n"
        "  -e, --extractor NAME   run only this extractor (repeatable; default: all but fabric)\n"
        "  -l, --list             list the extractors\n"
        "  -r, --root DIR         read /proc and /sys below DIR (default $SYSMAP_ROOT or /)\n"
        "  -H, --host NAME        report as this host (default: short host name)\n"
        "      --hwloc-xml FILE   cpu: read this hwloc XML topology\n"
        "      --ib-cache FILE    fabric: read this ibnetdiscover --cache file\n"
        "      --token-file FILE  upload: authenticate with the shared token in FILE\n"
        "      --munge            upload: authenticate with a munge credential\n"
        "      --munge-socket S   upload: munged socket (default: munge's own)\n"
        "      --time SECONDS     --db: record the report as of this time (default: now)\n");
}

static void list_extractors(void)
{
    for (const struct extractor *e = extractors; e->name; e++)
        printf("%-8s %s%s\n", e->name, e->description, e->by_default ? "" : " [not default]");
}

/* Runs the selected extractors; failures are reported and the rest kept. */
static json_t *collect(const struct source *src, const char *host, const char **selected,
                       size_t nselected, int *failures)
{
    json_t *values = json_object();
    for (const struct extractor *e = extractors; e->name; e++) {
        int chosen = nselected == 0 && e->by_default;
        for (size_t i = 0; i < nselected; i++)
            chosen |= strcmp(selected[i], e->name) == 0;
        if (!chosen)
            continue;
        char err[1024] = "";
        json_t *v = e->run(src, err, sizeof(err));
        if (!v) {
            fprintf(stderr, "sysmap: %s\n", err[0] ? err : e->name);
            (*failures)++;
            continue;
        }
        json_object_set_new(values, e->name, v);
    }
    return json_pack("{sssIso}", "host", host, "time", (json_int_t)time(NULL),
                     "extractors", values);
}

static int store_local(const char *path, const char *text, long long when)
{
    char err[1024];
    struct sysmap_db *db;
    int rc = sysmap_open(path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err));
    if (rc == 0) {
        rc = sysmap_store(db, text, strlen(text), when, NULL, err, sizeof(err));
        sysmap_close(db);
    }
    if (rc < 0)
        fprintf(stderr, "sysmap: %s\n", err);
    return rc;
}

static int short_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) < 0)
        return -errno;
    buf[len - 1] = '\0';
    buf[strcspn(buf, ".")] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    enum { OPT_HWLOC = 256, OPT_IBCACHE, OPT_TOKEN, OPT_MUNGE, OPT_MUNGE_SOCKET, OPT_TIME };
    static const struct option opts[] = {
        { "db", required_argument, NULL, 'd' }, { "upload", required_argument, NULL, 'u' },
        { "print", no_argument, NULL, 'p' }, { "extractor", required_argument, NULL, 'e' },
        { "list", no_argument, NULL, 'l' }, { "root", required_argument, NULL, 'r' },
        { "host", required_argument, NULL, 'H' }, { "help", no_argument, NULL, 'h' },
        { "hwloc-xml", required_argument, NULL, OPT_HWLOC },
        { "ib-cache", required_argument, NULL, OPT_IBCACHE },
        { "token-file", required_argument, NULL, OPT_TOKEN },
        { "munge", no_argument, NULL, OPT_MUNGE },
        { "munge-socket", required_argument, NULL, OPT_MUNGE_SOCKET },
        { "time", required_argument, NULL, OPT_TIME },
        { NULL, 0, NULL, 0 },
    };
    const char *db_path = NULL, *url = NULL, *token_file = NULL, *selected[MAX_SELECTED];
    size_t nselected = 0;
    int print = 0;
    long long when = 0;
    char host[HOSTLIST_MAX_NAME + 1] = "";
    struct source src = { .root = getenv("SYSMAP_ROOT") ? getenv("SYSMAP_ROOT") : "/" };
    struct upload_auth auth = { 0 };
    int c;
    while ((c = getopt_long(argc, argv, "d:u:pe:lr:H:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': db_path = optarg; break;
        case 'u': url = optarg; break;
        case 'p': print = 1; break;
        case 'e':
            if (!extractor_find(optarg)) {
                fprintf(stderr, "sysmap: unknown extractor \"%s\" (sysmap -l lists them)\n", optarg);
                return 2;
            }
            if (nselected == MAX_SELECTED) {
                fprintf(stderr, "sysmap: more than %d -e options\n", MAX_SELECTED);
                return 2;
            }
            selected[nselected++] = optarg;
            break;
        case 'l': list_extractors(); return 0;
        case 'r': src.root = optarg; break;
        case 'H':
            if (!hostlist_valid_name(optarg)) {
                fprintf(stderr, "sysmap: --host \"%s\" is not a valid host name\n", optarg);
                return 2;
            }
            snprintf(host, sizeof(host), "%s", optarg);
            break;
        case 'h': usage(stdout); return 0;
        case OPT_HWLOC: src.hwloc_xml = optarg; break;
        case OPT_IBCACHE: src.ib_cache = optarg; break;
        case OPT_TOKEN: token_file = optarg; break;
        case OPT_MUNGE: auth.munge = 1; break;
        case OPT_MUNGE_SOCKET: auth.munge_socket = optarg; break;
        case OPT_TIME: {
            char *end;
            when = strtoll(optarg, &end, 10);
            if (*end || when <= 0) {
                fprintf(stderr, "sysmap: --time \"%s\" is not seconds since the epoch\n", optarg);
                return 2;
            }
            break;
        }
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || (!db_path && !url && !print)) {
        usage(stderr);
        return 2;
    }
    if (!host[0] && short_hostname(host, sizeof(host)) < 0) {
        fprintf(stderr, "sysmap: cannot get the host name: %s\n", strerror(errno));
        return 1;
    }
    char token[AUTH_TOKEN_MAX + 1], err[1024];
    if (url && token_file) {
        if (auth_read_token(token_file, token, sizeof(token), err, sizeof(err)) < 0) {
            fprintf(stderr, "sysmap: %s\n", err);
            return 1;
        }
        auth.token = token;
    }
    if (url && !auth.token && !auth.munge) {
        fprintf(stderr, "sysmap: --upload needs --token-file FILE or --munge\n");
        return 2;
    }
    auth.host = host;

    int failures = 0;
    json_t *report = collect(&src, host, selected, nselected, &failures);
    char *text = json_dumps(report, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(report);
    if (!text) {
        fprintf(stderr, "sysmap: cannot encode the report\n");
        return 1;
    }
    int rc = failures ? 1 : 0;
    if (print)
        printf("%s\n", text);
    if (db_path && store_local(db_path, text, when ? when : (long long)time(NULL)) < 0)
        rc = 1;
    if (url) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        if (upload_report(url, text, strlen(text), &auth, err, sizeof(err)) < 0) {
            fprintf(stderr, "sysmap: %s\n", err);
            rc = 1;
        }
        curl_global_cleanup();
    }
    free(text);
    return rc;
}
