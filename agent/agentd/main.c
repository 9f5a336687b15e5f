/* adafs-agentd: the adafs node agent, one per compute node (or per slurmd
 * of a multiple-slurmd test cluster).
 *
 *   adafs-agentd --node NAME --listen HOST:PORT --storage-root DIR
 *                [--mount-prefix DIR] [--socket PATH] [--adafsd PATH] [--stager PATH]
 *                [--fuse PATH]
 *                [--slurm-user USER] [--munge-socket PATH] [--log FILE]
 *                [--log-dir DIR] [--log-level LEVEL] [--pidfile FILE]
 *                [--request-timeout SECONDS] [--foreground]
 *
 * Serves the plugin over TCP (munge-sealed requests from slurmctld's user)
 * and the Epilog over a Unix socket (root only). Every request passes one
 * dispatch point, dispatch(), where admission control can later go.
 * SIGTERM stops every instance it runs and wipes their data. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_proto.h"
#include "auth.h"
#include "child.h"
#include "jobs.h"
#include "log.h"
#include "net.h"
#include "rpc_io.h"

/* Anyone who can reach the port may connect before munge has said who they
 * are, so what a connection may cost is bounded: its time (each socket call
 * waits at most IO_SLICE_MS, so the request deadline is checked), the
 * network connections open at once, and a request's size (a sealed START
 * or CONFIGURE is a few KB; replies may still be AGENT_MAX_BODY). The
 * local socket is root's alone and never refused: a refused Epilog would
 * drain the node. */
#define IO_SLICE_MS 1000
#define MAX_CONNECTIONS 64
#define MAX_REQUEST (1u << 20)

static int request_timeout_ms = 30000;
static atomic_int open_connections[2];   /* [local] */
static atomic_bool at_capacity;          /* the refusal is logged once per episode */

struct conn {
    int fd;
    bool local;   /* Unix socket: the Epilog */
};

struct reply {
    struct rpc_writer body;
    char err[1024];
};

static struct agent_settings settings;

static int handle_ping(struct rpc_reader *r, struct reply *out)
{
    rpc_put_str(&out->body, settings.node);
    return rpc_reader_done(r) ? 0 : -EBADMSG;
}

static int handle_start(struct rpc_reader *r, struct reply *out)
{
    struct agent_start m;
    if (agent_start_get(r, &m) < 0)
        return -EBADMSG;
    int port;
    pid_t pid;
    int rc = jobs_start(&m, &port, &pid, out->err, sizeof(out->err));
    if (rc == 0) {
        rpc_put_u32(&out->body, (uint32_t)port);
        rpc_put_u32(&out->body, (uint32_t)pid);
    }
    return rc;
}

static int handle_configure(struct rpc_reader *r, struct reply *out)
{
    struct agent_configure m;
    if (agent_configure_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_configure(&m, out->err, sizeof(out->err));
}

static int handle_stage(struct rpc_reader *r, struct reply *out)
{
    struct agent_stage m;
    if (agent_stage_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_stage(&m, out->err, sizeof(out->err));
}

static int handle_status(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    struct stage_status st;
    int rc = jobs_status(m.job_id, &st);
    if (rc == -ENOENT) {
        snprintf(out->err, sizeof(out->err), "node %s: job %u: not deployed here",
                 settings.node, m.job_id);
        return rc;
    }
    if (rc < 0)
        return rc;
    rpc_put_u32(&out->body, (uint32_t)st.state);
    rpc_put_u32(&out->body, (uint32_t)st.exit_status);
    rpc_put_str(&out->body, st.summary);
    rpc_put_str(&out->body, st.errors);
    stage_status_free(&st);
    return 0;
}

static int handle_teardown(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_teardown(m.job_id, m.arg != 0, out->err, sizeof(out->err));
}

static int handle_release(struct rpc_reader *r, struct reply *out)
{
    struct agent_job_ref m;
    if (agent_job_ref_get(r, &m) < 0)
        return -EBADMSG;
    return jobs_release(m.job_id, (int)m.arg, out->err, sizeof(out->err));
}

typedef int (*handler_fn)(struct rpc_reader *, struct reply *);

static const struct {
    handler_fn fn;
    bool remote;   /* may come over TCP */
    bool local;    /* may come over the Unix socket */
} handlers[] = {
    [AGENT_PING] = { handle_ping, true, true },
    [AGENT_START] = { handle_start, true, false },
    [AGENT_CONFIGURE] = { handle_configure, true, false },
    [AGENT_STAGE] = { handle_stage, true, false },
    [AGENT_STATUS] = { handle_status, true, true },
    [AGENT_TEARDOWN] = { handle_teardown, true, true },
    [AGENT_RELEASE] = { handle_release, false, true },
};

/* The one place every request passes. */
static int dispatch(const struct conn *c, uint16_t op, struct rpc_reader *r, struct reply *out)
{
    if (op >= sizeof(handlers) / sizeof(handlers[0]) || !handlers[op].fn) {
        snprintf(out->err, sizeof(out->err), "node %s: unknown request %u", settings.node, op);
        return -EOPNOTSUPP;
    }
    if (c->local ? !handlers[op].local : !handlers[op].remote) {
        snprintf(out->err, sizeof(out->err), "node %s: %s is not allowed over %s", settings.node,
                 agent_op_name(op), c->local ? "the local socket" : "the network");
        return -EPERM;
    }
    int rc = handlers[op].fn(r, out);
    if (rc == -EBADMSG && !out->err[0])
        snprintf(out->err, sizeof(out->err), "node %s: malformed %s request", settings.node,
                 agent_op_name(op));
    return rc;
}

static void *serve(void *arg)
{
    struct conn c = *(struct conn *)arg;
    free(arg);
    struct rpc_header h;
    uint8_t *payload = NULL;
    struct reply out = { .err = "" };
    rpc_writer_init(&out.body, NULL, 0);
    void *body = NULL;
    size_t len = 0;
    int64_t deadline = net_now_ms() + request_timeout_ms;
    int rc = net_set_timeouts(c.fd, request_timeout_ms < IO_SLICE_MS ? request_timeout_ms
                                                                    : IO_SLICE_MS);
    if (rc == 0)
        rc = rpc_recv(c.fd, &h, &payload, MAX_REQUEST, deadline);
    if (rc < 0) {
        log_warn("dropping a %s connection: %s", c.local ? "local" : "network", strerror(-rc));
        goto done;
    }
    if (c.local) {
        rc = auth_check_peer(c.fd, out.err, sizeof(out.err));
        body = payload;
        len = h.length;
        payload = NULL;
    } else {
        struct rpc_reader cred;
        rpc_reader_init(&cred, payload, h.length);
        const char *text = rpc_get_str(&cred);
        rc = text ? auth_unseal(text, &body, &len, out.err, sizeof(out.err)) : -EBADMSG;
    }
    if (rc == 0) {
        struct rpc_reader r;
        rpc_reader_init(&r, body, len);
        if (!c.local)
            rc = agent_seal_head_check(&r, h.opcode, settings.node, out.err, sizeof(out.err));
        if (rc == 0)
            rc = dispatch(&c, h.opcode, &r, &out);
    }
    if (rc < 0 && out.err[0])
        log_warn("%s request refused: %s", agent_op_name(h.opcode), out.err);
    if (rc < 0) {
        rpc_writer_free(&out.body);
        rpc_writer_init(&out.body, NULL, 0);
        rpc_put_str(&out.body, out.err[0] ? out.err : strerror(-rc));
    }
    struct rpc_header resp = { .opcode = h.opcode, .id = h.id, .status = rc < 0 ? rc : 0 };
    if (rpc_writer_ok(&out.body))
        rpc_send(c.fd, &resp, out.body.data, out.body.len, net_now_ms() + request_timeout_ms);
done:
    rpc_writer_free(&out.body);
    free(payload);
    free(body);
    close(c.fd);
    atomic_fetch_sub(&open_connections[c.local], 1);
    return NULL;
}

static void accept_one(int lfd, bool local)
{
    static atomic_bool out_of_fds;
    const char *kind = local ? "local" : "network";
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        /* The connection stays queued: without a pause poll() would
         * report it again at once and this loop would spin. */
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            if (!atomic_exchange(&out_of_fds, true))
                log_error("accepting a %s connection: %s: pausing 100 ms between attempts",
                          kind, strerror(errno));
            poll(NULL, 0, 100);
        }
        return;
    }
    atomic_store(&out_of_fds, false);
    if (!local && atomic_load(&open_connections[false]) >= MAX_CONNECTIONS) {
        if (!atomic_exchange(&at_capacity, true))
            log_warn("refusing network connections: %d are open, the most this agent serves at once",
                     MAX_CONNECTIONS);
        close(fd);
        return;
    }
    if (!local)
        atomic_store(&at_capacity, false);
    struct conn *c = malloc(sizeof(*c));
    pthread_t t;
    if (!c) {
        close(fd);
        return;
    }
    *c = (struct conn){ fd, local };
    atomic_fetch_add(&open_connections[local], 1);
    /* Requests like RELEASE wait for long; a thread each keeps it simple. */
    if (pthread_create(&t, NULL, serve, c) != 0) {
        atomic_fetch_sub(&open_connections[local], 1);
        close(fd);
        free(c);
        return;
    }
    pthread_detach(t);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-agentd --node NAME --listen HOST:PORT --storage-root DIR\n"
            "                    [--mount-prefix DIR] [--socket PATH] [--adafsd PATH] [--stager PATH]\n"
            "                    [--fuse PATH]\n"
            "                    [--slurm-user USER] [--munge-socket PATH] [--log FILE]\n"
            "                    [--log-dir DIR] [--log-level LEVEL] [--pidfile FILE]\n"
            "                    [--request-timeout SECONDS] [--foreground]\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "adafs-agentd: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *listen_addr = NULL, *socket_path = NULL, *slurm_user = "slurm";
    const char *munge_socket = NULL, *log_path = NULL, *pidfile = NULL;
    int level = LOG_LEVEL_INFO;
    bool foreground = false;
    settings = (struct agent_settings){
        .adafsd_path = ADAFS_BINDIR "/adafsd", .stage_path = ADAFS_BINDIR "/adafs-stage",
        .fuse_path = ADAFS_BINDIR "/adafs-fuse",
        .log_dir = "/var/log/adafs", .mount_prefix = "/adafs",
        .start_timeout_ms = 30000, .stop_timeout_ms = 10000,
    };
    static const struct option opts[] = {
        { "node", required_argument, NULL, 'n' }, { "listen", required_argument, NULL, 'l' },
        { "socket", required_argument, NULL, 's' }, { "storage-root", required_argument, NULL, 'S' },
        { "mount-prefix", required_argument, NULL, 'M' },
        { "adafsd", required_argument, NULL, 'a' }, { "stager", required_argument, NULL, 'g' },
        { "fuse", required_argument, NULL, 'F' },
        { "slurm-user", required_argument, NULL, 'u' }, { "munge-socket", required_argument, NULL, 'm' },
        { "log", required_argument, NULL, 'L' }, { "log-dir", required_argument, NULL, 'D' },
        { "log-level", required_argument, NULL, 'v' }, { "pidfile", required_argument, NULL, 'p' },
        { "request-timeout", required_argument, NULL, 't' },
        { "foreground", no_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': settings.node = optarg; break;
        case 'l': listen_addr = optarg; break;
        case 's': socket_path = optarg; break;
        case 'S': {
            char **grown = realloc(settings.storage_roots, (settings.nroots + 1) * sizeof(char *));
            if (!grown)
                die("out of memory");
            settings.storage_roots = grown;
            if (optarg[0] != '/')
                die("--storage-root %s: must be an absolute path", optarg);
            settings.storage_roots[settings.nroots++] = optarg;
            break;
        }
        case 'M':
            if (optarg[0] != '/' || strlen(optarg) < 2)
                die("--mount-prefix %s: must be an absolute path below /", optarg);
            settings.mount_prefix = optarg;
            break;
        case 'a': settings.adafsd_path = optarg; break;
        case 'g': settings.stage_path = optarg; break;
        case 'F': settings.fuse_path = optarg; break;
        case 'u': slurm_user = optarg; break;
        case 'm': munge_socket = optarg; break;
        case 'L': log_path = optarg; break;
        case 'D': settings.log_dir = optarg; break;
        case 'v':
            if ((level = log_level_parse(optarg)) < 0)
                die("--log-level %s: use error, warn, info or debug", optarg);
            break;
        case 'p': pidfile = optarg; break;
        case 't': {
            char *end;
            long secs = strtol(optarg, &end, 10);
            if (*end || secs <= 0 || secs > 3600)
                die("--request-timeout %s: expected seconds in 1..3600", optarg);
            request_timeout_ms = (int)secs * 1000;
            break;
        }
        case 'f': foreground = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!settings.node || !listen_addr || settings.nroots == 0) {
        usage(stderr);
        die("--node, --listen and --storage-root are required");
    }
    if (geteuid() != 0)
        die("must run as root: it starts servers and stagers as job users");
    if (settings.adafsd_path[0] != '/' || settings.stage_path[0] != '/' ||
        settings.fuse_path[0] != '/')
        die("--adafsd, --stager and --fuse must be absolute paths");
    struct passwd *pw = getpwnam(slurm_user);
    if (!pw)
        die("--slurm-user %s: no such user", slurm_user);
    char host[256];
    int port;
    if (net_parse_hostport(listen_addr, host, sizeof(host), &port) < 0)
        die("--listen %s: expected HOST:PORT", listen_addr);
    mkdir(settings.log_dir, 0755);

    char err[512];
    int lfd = net_listen(host, port, 128, &port, err, sizeof(err));
    if (lfd < 0)
        die("%s", err);
    /* "%n" in the socket path is the node name: the Epilog finds it the
     * same way from $SLURMD_NODENAME. */
    char socket_buf[108];
    if (socket_path) {
        const char *pn = strstr(socket_path, "%n");
        if (pn)
            snprintf(socket_buf, sizeof(socket_buf), "%.*s%s%s", (int)(pn - socket_path),
                     socket_path, settings.node, pn + 2);
        else
            snprintf(socket_buf, sizeof(socket_buf), "%s", socket_path);
        socket_path = socket_buf;
        char dir[108];
        snprintf(dir, sizeof(dir), "%s", socket_path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = '\0';
            mkdir(dir, 0755);
        }
    }
    int ufd = -1;
    if (socket_path && (ufd = net_listen_unix(socket_path, 64)) < 0)
        die("--socket %s: %s", socket_path, strerror(-ufd));
    if (log_path && log_open("adafs-agentd", (enum log_level)level, log_path) < 0)
        die("--log %s: %s", log_path, strerror(errno));
    log_set_level((enum log_level)level);
    if (jobs_init(&settings, err, sizeof(err)) < 0) {
        log_error("%s", err);
        die("%s", err);
    }
    if (!foreground && daemon(0, 0) < 0)
        die("daemon: %s", strerror(errno));
    if (pidfile) {
        FILE *f = fopen(pidfile, "we");
        if (!f)
            die("--pidfile %s: %s", pidfile, strerror(errno));
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }

    signal(SIGPIPE, SIG_IGN);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
    if (auth_init(munge_socket, pw->pw_uid) < 0 || child_init() < 0 || sfd < 0) {
        log_error("cannot initialise munge, the reaper or signals");
        return 1;
    }
    jobs_recover();
    log_info("node %s: agent listening on %s:%d%s%s, storage %s, servers %s, stager %s",
             settings.node, host, port, socket_path ? " and " : "", socket_path ? socket_path : "",
             settings.storage_roots[0], settings.adafsd_path, settings.stage_path);

    struct pollfd p[3] = { { .fd = sfd, .events = POLLIN }, { .fd = lfd, .events = POLLIN },
                           { .fd = ufd, .events = POLLIN } };
    for (;;) {
        if (poll(p, ufd >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        if (p[1].revents)
            accept_one(lfd, false);
        if (ufd >= 0 && p[2].revents)
            accept_one(ufd, true);
    }
    log_info("node %s: stopping: tearing down every instance on this node", settings.node);
    jobs_shutdown();
    if (socket_path)
        unlink(socket_path);
    if (pidfile)
        unlink(pidfile);
    return 0;
}
