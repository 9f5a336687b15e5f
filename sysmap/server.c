/* sysmap-server: receives collector reports over HTTP and writes them into
 * the database, its only writer (sqlite must not be shared over NFS).
 *
 *   POST /upload  body: a sysmap report (JSON), authenticated (auth.h)
 *   GET  /health  {"status":"ok"} for monitoring
 *
 * Each connection is served by a thread of its own (conns.h: at most
 * --max-connections, --max-per-host from one address, those without valid
 * credentials evicted oldest first when the table is full), so a slow or
 * idle client delays nobody; the database writes take turns under a lock.
 * A request head must come within --head-timeout, the whole request within
 * --timeout, a report within --max-body; credentials are checked from the
 * head, before a body is read. */
#include "auth.h"
#include "conns.h"
#include "hostlist.h"
#include "http.h"
#include "log.h"
#include "sysmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
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
#define DEFAULT_HEAD_TIMEOUT_S 5
#define DEFAULT_MAX_CONNECTIONS 64
#define DEFAULT_MAX_PER_HOST 8

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
    long long head_timeout_s;         /* to send the request head */
    long long max_conns, max_per_host;
};

struct server {
    const struct config *cfg;
    struct sysmap_db *db;
    pthread_mutex_t db_lock;          /* one writer at a time */
};

/* The lines peers without valid credentials cause. */
static struct log_limit untrusted_log = LOG_LIMIT_INIT(10, 10000);

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
        "      --head-timeout SEC  time to send the request head (default %d)\n"
        "      --max-connections N connections served at once (default %d)\n"
        "      --max-per-host N  of them from one address (default %d)\n"
        "      --lifetime SEC    exit after SEC seconds (tests)\n"
        "      --log FILE        log here instead of stderr\n", DEFAULT_PORT, DEFAULT_MAX_BODY,
        DEFAULT_TIMEOUT_S, DEFAULT_HEAD_TIMEOUT_S, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_PER_HOST);
}

static void reply_error(struct conn *c, int status, const char *msg)
{
    json_t *o = json_pack("{ss}", "error", msg);
    char *body = json_dumps(o, JSON_COMPACT);
    http_respond(c->fd, c->deadline, status, body ? body : "{\"error\":\"out of memory\"}");
    free(body);
    json_decref(o);
    if (conns_trusted(c))
        log_warn("%s: %d: %s", c->peer, status, msg);
    else
        log_limited(&untrusted_log, LOG_LEVEL_WARN, "%s: %d: %s", c->peer, status, msg);
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

static int handle_upload(struct conn *c, struct http_request *req)
{
    struct server *srv = c->arg;
    const struct config *cfg = srv->cfg;
    char err[1024], host[HOSTLIST_MAX_NAME + 1];
    struct auth_munge_claim claim;
    int is_munge, status;
    if (req->chunked) {
        reply_error(c, 501, "chunked request bodies are not supported");
        return 501;
    }
    if (req->content_length < 0) {
        reply_error(c, 411, "Content-Length required");
        return 411;
    }
    if ((status = check_bearer(cfg, req, &is_munge, err, sizeof(err)))) {
        reply_error(c, status, err);
        return status;
    }
    if (is_munge && auth_munge_open(cfg->munge_socket, req->authorization + 6, cfg->munge_uid,
                                    &claim, err, sizeof(err)) < 0) {
        reply_error(c, 401, err);
        return 401;
    }
    if (is_munge && claim.len != req->content_length) {
        snprintf(err, sizeof(err), "munge credential is for a body of %lld bytes, not %lld",
                 claim.len, req->content_length);
        reply_error(c, 401, err);
        return 401;
    }
    conns_trust(c);
    if (req->content_length > cfg->max_body) {
        snprintf(err, sizeof(err), "report of %lld bytes is over the limit of %lld",
                 req->content_length, cfg->max_body);
        reply_error(c, 413, err);
        return 413;
    }
    if ((status = http_read_body(c->fd, c->deadline, req, err, sizeof(err)))) {
        reply_error(c, status, err);
        return status;
    }
    if (is_munge && auth_munge_matches(&claim, req->body, req->body_len, err, sizeof(err)) < 0) {
        reply_error(c, 401, err);
        return 401;
    }
    if ((status = report_host(req, host, sizeof(host), err, sizeof(err)))) {
        reply_error(c, status, err);
        return status;
    }
    if (!host_allowed(cfg, host)) {
        snprintf(err, sizeof(err), "host %s is not in the --allow list", host);
        reply_error(c, 403, err);
        return 403;
    }
    pthread_mutex_lock(&srv->db_lock);
    int rc = sysmap_store(srv->db, req->body, req->body_len, (int64_t)time(NULL),
                          is_munge ? claim.host : NULL, err, sizeof(err));
    pthread_mutex_unlock(&srv->db_lock);
    if (rc < 0) {
        status = rc == -EPERM ? 403 : rc == -EINVAL ? 400 : 500;
        reply_error(c, status, err);
        return status;
    }
    json_t *o = json_pack("{ssss}", "status", "stored", "host", host);
    char *body = json_dumps(o, JSON_COMPACT);
    http_respond(c->fd, c->deadline, 200, body);
    free(body);
    json_decref(o);
    log_info("%s: stored the report of %s (%zu bytes)", c->peer, host, req->body_len);
    return 200;
}

static void serve_connection(struct conn *c)
{
    const struct config *cfg = ((struct server *)c->arg)->cfg;
    long long now = http_now_ms();
    long long head_s = cfg->head_timeout_s < cfg->timeout_s ? cfg->head_timeout_s : cfg->timeout_s;
    struct http_request req;
    char err[512];
    c->deadline = now + cfg->timeout_s * 1000;
    int status = http_read_head(c->fd, now + head_s * 1000, &req, err, sizeof(err));
    if (status) {
        reply_error(c, status, err);
    } else if (strcmp(req.path, "/upload") == 0) {
        if (strcmp(req.method, "POST") == 0)
            handle_upload(c, &req);
        else
            reply_error(c, 405, "/upload takes POST");
    } else if (strcmp(req.path, "/health") == 0 && strcmp(req.method, "GET") == 0) {
        http_respond(c->fd, c->deadline, 200, "{\"status\":\"ok\"}");
    } else {
        snprintf(err, sizeof(err), "no such resource: %.40s %.80s", req.method, req.path);
        reply_error(c, 404, err);
    }
    http_request_free(&req);
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
    /* Non-blocking: a connection reset between poll and accept must not
     * leave the loop waiting in accept for the next one. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
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
           OPT_ALLOW, OPT_MAX_BODY, OPT_LIFETIME, OPT_LOG, OPT_TIMEOUT, OPT_HEAD_TIMEOUT,
           OPT_MAX_CONNS, OPT_MAX_PER_HOST };
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
        { "head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT },
        { "max-connections", required_argument, NULL, OPT_MAX_CONNS },
        { "max-per-host", required_argument, NULL, OPT_MAX_PER_HOST },
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
        case OPT_TIMEOUT:
        case OPT_HEAD_TIMEOUT: {
            long long *secs = c == OPT_LIFETIME ? &cfg->lifetime_s : c == OPT_TIMEOUT
                              ? &cfg->timeout_s : &cfg->head_timeout_s;
            *secs = strtoll(optarg, &end, 10);
            if (*end || *secs <= 0 || *secs > 86400 * 365) {
                fprintf(stderr, "sysmap-server: --%s \"%s\" is not a number of seconds\n",
                        c == OPT_LIFETIME ? "lifetime" : c == OPT_TIMEOUT ? "timeout"
                        : "head-timeout", optarg);
                return 2;
            }
            break;
        }
        case OPT_MAX_CONNS:
        case OPT_MAX_PER_HOST: {
            long long *n = c == OPT_MAX_CONNS ? &cfg->max_conns : &cfg->max_per_host;
            *n = strtoll(optarg, &end, 10);
            if (*end || *n < 1 || *n > 100000) {
                fprintf(stderr, "sysmap-server: --%s \"%s\" is not a count from 1 to 100000\n",
                        c == OPT_MAX_CONNS ? "max-connections" : "max-per-host", optarg);
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
                          .max_body = DEFAULT_MAX_BODY, .timeout_s = DEFAULT_TIMEOUT_S,
                          .head_timeout_s = DEFAULT_HEAD_TIMEOUT_S,
                          .max_conns = DEFAULT_MAX_CONNECTIONS,
                          .max_per_host = DEFAULT_MAX_PER_HOST };
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

    struct server srv = { .cfg = &cfg, .db = db };
    pthread_mutex_init(&srv.db_lock, NULL);
    struct conns *conns = conns_new(cfg.max_conns, cfg.max_per_host, serve_connection, &srv);
    if (!conns) {
        log_error("out of memory for %lld connection slots", cfg.max_conns);
        return 1;
    }
    long long end = cfg.lifetime_s ? http_now_ms() + cfg.lifetime_s * 1000 : 0;
    long long flushed = http_now_ms();
    while (!stopping && (!end || http_now_ms() < end)) {
        if (http_now_ms() - flushed >= 10000) {   /* a flood that stopped is summarised */
            log_limit_flush(&untrusted_log);
            conns_flush_log();
            flushed = http_now_ms();
        }
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        if (poll(&p, 1, 1000) <= 0)
            continue;
        if (!conns_make_room(conns, &stopping))
            break;
        struct sockaddr_in peer_addr;
        socklen_t plen = sizeof(peer_addr);
        int fd = accept4(lfd, (struct sockaddr *)&peer_addr, &plen, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
                log_limited(&untrusted_log, LOG_LEVEL_WARN, "accept: %s", strerror(errno));
            continue;
        }
        conns_admit(conns, fd, &peer_addr);
    }
    close(lfd);
    log_info("stopping%s", stopping ? " on a signal" : ": lifetime over");
    /* Uploads in progress end by their deadline; the database stays open
     * until they have. */
    conns_finish(conns);
    log_limit_flush(&untrusted_log);
    sysmap_close(db);
    hostlist_free(&cfg.allow);
    return 0;
}
