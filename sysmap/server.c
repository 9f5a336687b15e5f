/* sysmap-server: receives collector reports over HTTP and writes them into
 * the database. It is the database's only writer (sqlite must not be shared
 * over NFS), so it serves one connection at a time; each connection has a
 * deadline (--timeout), which bounds how long a slow client can delay the
 * others.
 *
 *   POST /upload  body: a sysmap report (JSON), authenticated (auth.h)
 *   GET  /health  {"status":"ok"} for monitoring */
#include "auth.h"
#include "hostlist.h"
#include "http.h"
#include "log.h"
#include "sysmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PORT 8470
#define DEFAULT_MAX_BODY (4 << 20)
#define DEFAULT_TIMEOUT_S 10

struct config {
    const char *db_path;
    const char *listen_addr;
    int port;
    const char *port_file;
    char token[AUTH_TOKEN_MAX + 1];
    int use_token, use_munge;
    const char *munge_socket;
    uid_t munge_uid;
    struct hostlist allow;            /* empty: any host */
    long long max_body;
    long long lifetime_s;             /* 0: run until signalled */
    long long timeout_s;              /* per connection, all reads and writes */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void usage(FILE *out)
{
    fprintf(out,
        "usage: sysmap-server --db FILE (--token-file FILE | --munge) [options]\n"
        "  -d, --db FILE         the database to write\n"
        "  -a, --listen ADDR     address to listen on (default 0.0.0.0)\n"
        "  -p, --port N          TCP port (default %d; 0 picks a free one)\n"
        "      --port-file FILE  write the port listened on into FILE\n"
        "      --token-file FILE accept \"Authorization: Bearer TOKEN\" with this token\n"
        "      --munge           accept \"Authorization: Munge CRED\" credentials\n"
        "      --munge-socket S  munged socket (default: munge's own)\n"
        "      --munge-uid UID   uid munge credentials must come from (default 0)\n"
        "      --allow HOSTLIST  accept reports only for these hosts\n"
        "      --max-body BYTES  largest report accepted (default %d)\n"
        "      --timeout SEC     time one connection may take (default %d)\n"
        "      --lifetime SEC    exit after SEC seconds (tests)\n"
        "      --log FILE        log here instead of stderr\n", DEFAULT_PORT, DEFAULT_MAX_BODY,
        DEFAULT_TIMEOUT_S);
}

static void reply_error(int fd, long long deadline, int status, const char *peer, const char *msg)
{
    json_t *o = json_pack("{ss}", "error", msg);
    char *body = json_dumps(o, JSON_COMPACT);
    http_respond(fd, deadline, status, body ? body : "{\"error\":\"out of memory\"}");
    free(body);
    json_decref(o);
    log_warn("%s: %d: %s", peer, status, msg);
}

/* Returns 0 when the head's credentials are acceptable so far (a munge
 * credential is checked against the body later), else a status. */
static int check_bearer(const struct config *cfg, const struct http_request *req,
                        int *is_munge, char *err, size_t errlen)
{
    const char *a = req->authorization;
    *is_munge = 0;
    if (!a[0]) {
        snprintf(err, errlen, "no Authorization header");
        return 401;
    }
    if (strncmp(a, "Bearer ", 7) == 0) {
        if (!cfg->use_token) {
            snprintf(err, errlen, "token authentication is not enabled on this server");
            return 401;
        }
        if (!auth_token_equal(a + 7, cfg->token)) {
            snprintf(err, errlen, "wrong token");
            return 401;
        }
        return 0;
    }
    if (strncmp(a, "Munge ", 6) == 0) {
        if (!cfg->use_munge) {
            snprintf(err, errlen, "munge authentication is not enabled on this server");
            return 401;
        }
        *is_munge = 1;
        return 0;
    }
    snprintf(err, errlen, "unknown Authorization scheme (want Bearer or Munge)");
    return 401;
}

static int host_allowed(const struct config *cfg, const char *host)
{
    if (cfg->allow.count == 0)
        return 1;
    for (size_t i = 0; i < cfg->allow.count; i++)
        if (strcmp(cfg->allow.names[i], host) == 0)
            return 1;
    return 0;
}

/* The report's host, for the allow list, before the database sees it. */
static int report_host(const struct http_request *req, char *host, size_t len,
                       char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "report is not valid JSON: line %d column %d: %s",
                 jerr.line, jerr.column, jerr.text);
        return 400;
    }
    const char *h = json_string_value(json_object_get(root, "host"));
    int status = 0;
    if (!h || !hostlist_valid_name(h)) {
        snprintf(err, errlen, "report has no valid \"host\"");
        status = 400;
    } else {
        snprintf(host, len, "%s", h);
    }
    json_decref(root);
    return status;
}

static int handle_upload(const struct config *cfg, struct sysmap_db *db, int fd,
                         long long deadline, struct http_request *req, const char *peer)
{
    char err[1024], host[HOSTLIST_MAX_NAME + 1], munge_host[HOSTLIST_MAX_NAME + 1] = "";
    int is_munge, status;
    if (req->chunked) {
        reply_error(fd, deadline, 501, peer, "chunked request bodies are not supported");
        return 501;
    }
    if (req->content_length < 0) {
        reply_error(fd, deadline, 411, peer, "Content-Length required");
        return 411;
    }
    if ((status = check_bearer(cfg, req, &is_munge, err, sizeof(err)))) {
        reply_error(fd, deadline, status, peer, err);
        return status;
    }
    if (req->content_length > cfg->max_body) {
        snprintf(err, sizeof(err), "report of %lld bytes is over the limit of %lld",
                 req->content_length, cfg->max_body);
        reply_error(fd, deadline, 413, peer, err);
        return 413;
    }
    if ((status = http_read_body(fd, deadline, req, err, sizeof(err)))) {
        reply_error(fd, deadline, status, peer, err);
        return status;
    }
    if (is_munge && auth_munge_decode(cfg->munge_socket, req->authorization + 6, req->body,
                                      req->body_len, cfg->munge_uid, munge_host,
                                      sizeof(munge_host), err, sizeof(err)) < 0) {
        reply_error(fd, deadline, 401, peer, err);
        return 401;
    }
    if ((status = report_host(req, host, sizeof(host), err, sizeof(err)))) {
        reply_error(fd, deadline, status, peer, err);
        return status;
    }
    if (!host_allowed(cfg, host)) {
        snprintf(err, sizeof(err), "host %s is not in the --allow list", host);
        reply_error(fd, deadline, 403, peer, err);
        return 403;
    }
    int rc = sysmap_store(db, req->body, req->body_len, (int64_t)time(NULL),
                          is_munge ? munge_host : NULL, err, sizeof(err));
    if (rc < 0) {
        status = rc == -EPERM ? 403 : rc == -EINVAL ? 400 : 500;
        reply_error(fd, deadline, status, peer, err);
        return status;
    }
    json_t *o = json_pack("{ssss}", "status", "stored", "host", host);
    char *body = json_dumps(o, JSON_COMPACT);
    http_respond(fd, deadline, 200, body);
    free(body);
    json_decref(o);
    log_info("%s: stored the report of %s (%zu bytes)", peer, host, req->body_len);
    return 200;
}

static void serve_connection(const struct config *cfg, struct sysmap_db *db, int fd,
                             const char *peer)
{
    long long deadline = http_now_ms() + cfg->timeout_s * 1000;
    struct http_request req;
    char err[512];
    int status = http_read_head(fd, deadline, &req, err, sizeof(err));
    if (status) {
        reply_error(fd, deadline, status, peer, err);
    } else if (strcmp(req.path, "/upload") == 0) {
        if (strcmp(req.method, "POST") == 0)
            handle_upload(cfg, db, fd, deadline, &req, peer);
        else
            reply_error(fd, deadline, 405, peer, "/upload takes POST");
    } else if (strcmp(req.path, "/health") == 0 && strcmp(req.method, "GET") == 0) {
        http_respond(fd, deadline, 200, "{\"status\":\"ok\"}");
    } else {
        snprintf(err, sizeof(err), "no such resource: %.40s %.80s", req.method, req.path);
        reply_error(fd, deadline, 404, peer, err);
    }
    http_request_free(&req);
}

/* After an early error reply (413, 401) the client may still be sending
 * its body; closing at once would reset the connection and the client would
 * see "connection reset" instead of the reply. Drain briefly, then close. */
static void close_gently(int fd)
{
    char sink[4096];
    long long deadline = http_now_ms() + 500;
    shutdown(fd, SHUT_WR);
    while (http_now_ms() < deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 100) == 1 && recv(fd, sink, sizeof(sink), 0) <= 0)
            break;
    }
    close(fd);
}

static int listen_on(struct config *cfg)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port) };
    if (inet_pton(AF_INET, cfg->listen_addr, &addr.sin_addr) != 1) {
        log_error("--listen %s is not an IPv4 address", cfg->listen_addr);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) {
        log_error("socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 1024) < 0) {
        log_error("cannot listen on %s:%d: %s", cfg->listen_addr, cfg->port, strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t alen = sizeof(addr);
    getsockname(fd, (struct sockaddr *)&addr, &alen);
    cfg->port = ntohs(addr.sin_port);
    if (cfg->port_file) {
        FILE *f = fopen(cfg->port_file, "we");
        if (!f || fprintf(f, "%d\n", cfg->port) < 0 || fclose(f) != 0) {
            log_error("cannot write the port to %s: %s", cfg->port_file, strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int parse_args(int argc, char **argv, struct config *cfg, const char **log_path)
{
    enum { OPT_PORT_FILE = 256, OPT_TOKEN, OPT_MUNGE, OPT_MUNGE_SOCKET, OPT_MUNGE_UID,
           OPT_ALLOW, OPT_MAX_BODY, OPT_LIFETIME, OPT_LOG, OPT_TIMEOUT };
    static const struct option opts[] = {
        { "db", required_argument, NULL, 'd' }, { "listen", required_argument, NULL, 'a' },
        { "port", required_argument, NULL, 'p' }, { "help", no_argument, NULL, 'h' },
        { "port-file", required_argument, NULL, OPT_PORT_FILE },
        { "token-file", required_argument, NULL, OPT_TOKEN },
        { "munge", no_argument, NULL, OPT_MUNGE },
        { "munge-socket", required_argument, NULL, OPT_MUNGE_SOCKET },
        { "munge-uid", required_argument, NULL, OPT_MUNGE_UID },
        { "allow", required_argument, NULL, OPT_ALLOW },
        { "max-body", required_argument, NULL, OPT_MAX_BODY },
        { "lifetime", required_argument, NULL, OPT_LIFETIME },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "log", required_argument, NULL, OPT_LOG },
        { NULL, 0, NULL, 0 },
    };
    char err[512], *end;
    int c;
    while ((c = getopt_long(argc, argv, "d:a:p:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': cfg->db_path = optarg; break;
        case 'a': cfg->listen_addr = optarg; break;
        case 'p':
            cfg->port = (int)strtol(optarg, &end, 10);
            if (*end || cfg->port < 0 || cfg->port > 65535) {
                fprintf(stderr, "sysmap-server: --port \"%s\" is not a port number\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); exit(0);
        case OPT_PORT_FILE: cfg->port_file = optarg; break;
        case OPT_TOKEN:
            if (auth_read_token(optarg, cfg->token, sizeof(cfg->token), err, sizeof(err)) < 0) {
                fprintf(stderr, "sysmap-server: %s\n", err);
                return 1;
            }
            cfg->use_token = 1;
            break;
        case OPT_MUNGE: cfg->use_munge = 1; break;
        case OPT_MUNGE_SOCKET: cfg->munge_socket = optarg; break;
        case OPT_MUNGE_UID:
            cfg->munge_uid = (uid_t)strtoul(optarg, &end, 10);
            if (*end || !*optarg) {
                fprintf(stderr, "sysmap-server: --munge-uid \"%s\" is not a uid\n", optarg);
                return 2;
            }
            break;
        case OPT_ALLOW:
            if (hostlist_expand(optarg, &cfg->allow, err, sizeof(err)) < 0) {
                fprintf(stderr, "sysmap-server: --allow: %s\n", err);
                return 2;
            }
            break;
        case OPT_MAX_BODY:
            cfg->max_body = strtoll(optarg, &end, 10);
            if (*end || cfg->max_body <= 0) {
                fprintf(stderr, "sysmap-server: --max-body \"%s\" is not a byte count\n", optarg);
                return 2;
            }
            break;
        case OPT_LIFETIME:
        case OPT_TIMEOUT: {
            long long *secs = c == OPT_LIFETIME ? &cfg->lifetime_s : &cfg->timeout_s;
            *secs = strtoll(optarg, &end, 10);
            if (*end || *secs <= 0 || *secs > 86400 * 365) {
                fprintf(stderr, "sysmap-server: --%s \"%s\" is not a number of seconds\n",
                        c == OPT_LIFETIME ? "lifetime" : "timeout", optarg);
                return 2;
            }
            break;
        }
        case OPT_LOG: *log_path = optarg; break;
        default: usage(stderr); return 2;
        }
    }
    if (!cfg->db_path || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (!cfg->use_token && !cfg->use_munge) {
        fprintf(stderr, "sysmap-server: refusing to accept unauthenticated uploads;"
                " give --token-file FILE and/or --munge\n");
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg = { .listen_addr = "0.0.0.0", .port = DEFAULT_PORT,
                          .max_body = DEFAULT_MAX_BODY, .timeout_s = DEFAULT_TIMEOUT_S };
    const char *log_path = NULL;
    int rc = parse_args(argc, argv, &cfg, &log_path);
    if (rc)
        return rc;
    log_open("sysmap-server", LOG_LEVEL_INFO, NULL);
    if (log_path && (rc = log_open("sysmap-server", LOG_LEVEL_INFO, log_path)) < 0) {
        fprintf(stderr, "sysmap-server: cannot open log %s: %s\n", log_path, strerror(-rc));
        return 1;
    }
    char err[1024];
    struct sysmap_db *db;
    if (sysmap_open(cfg.db_path, SYSMAP_OPEN_WRITE, &db, err, sizeof(err)) < 0) {
        log_error("%s", err);
        return 1;
    }
    int lfd = listen_on(&cfg);
    if (lfd < 0) {
        sysmap_close(db);
        return 1;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    log_info("listening on %s:%d, database %s, auth:%s%s", cfg.listen_addr, cfg.port,
             cfg.db_path, cfg.use_token ? " token" : "", cfg.use_munge ? " munge" : "");

    long long end = cfg.lifetime_s ? http_now_ms() + cfg.lifetime_s * 1000 : 0;
    while (!stopping && (!end || http_now_ms() < end)) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        if (poll(&p, 1, 1000) <= 0)
            continue;
        struct sockaddr_in peer_addr;
        socklen_t plen = sizeof(peer_addr);
        int fd = accept4(lfd, (struct sockaddr *)&peer_addr, &plen, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
                log_warn("accept: %s", strerror(errno));
            continue;
        }
        char peer[64];
        snprintf(peer, sizeof(peer), "%s:%d", inet_ntoa(peer_addr.sin_addr),
                 ntohs(peer_addr.sin_port));
        serve_connection(&cfg, db, fd, peer);
        close_gently(fd);
    }
    log_info("stopping%s", stopping ? " on a signal" : ": lifetime over");
    close(lfd);
    sysmap_close(db);
    hostlist_free(&cfg.allow);
    return 0;
}
