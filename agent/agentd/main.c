/* adafs-agentd: the adafs node agent, one per compute node (or per slurmd
 * of a multiple-slurmd test cluster).
 *
 *   adafs-agentd --node NAME --listen HOST:PORT --storage-root DIR
 *                [--mount-prefix DIR] [--socket PATH] [--adafsd PATH] [--stager PATH]
 *                [--fuse PATH]
 *                [--slurm-user USER] [--munge-socket PATH] [--log FILE]
 *                [--log-dir DIR] [--log-level LEVEL] [--pidfile FILE]
 *                [--request-timeout SECONDS] [--qos-socket PATH] [--foreground]
 *
 * Serves the plugin over TCP in agent sessions (common/agent_session.h:
 * slurmctld's user or root proved by munge, the agent proving it is root,
 * every message sealed) and the Epilog over a Unix socket (root only, both
 * ways). Started by systemd with a socket (adafs-agentd.socket), it takes
 * that instead of --listen. What an unauthenticated peer may cost is
 * bounded (admit.h, and the handshake deadline below). Every request
 * passes one dispatch point (dispatch.h).
 *
 * SIGTERM (systemctl stop/restart, the restart after an upgrade) ends the
 * agent alone: its jobs' servers and mounts keep running and their records
 * stay, for the next agent to re-adopt (jobs_recover.c) or wipe. SIGINT
 * is the admin's explicit "tear everything down": it stops every instance
 * it runs (persistent ones excepted) and wipes their data before exiting. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit.h"
#include "agent_proto.h"
#include "agent_session.h"
#include "auth.h"
#include "child.h"
#include "daemon.h"
#include "dispatch.h"
#include "fair_policy.h"
#include "jobs.h"
#include "log.h"
#include "munge_auth.h"
#include "net.h"
#include "qos.h"
#include "tbf_loop.h"
#include "rpc_io.h"
#include "size.h"

/* What a connection may cost the root agent. Before its peer has proved
 * who it is (admit.h bounds how many such connections there are): the
 * handshake deadline, and a hello of at most SESSION_HELLO_MAX bytes.
 * After: a request must arrive within the request timeout, each socket
 * call waits at most IO_SLICE_MS so the deadline is checked, and a request
 * is at most MAX_REQUEST bytes (a START or CONFIGURE is a few KB; replies
 * may be AGENT_MAX_BODY). The local socket is root's alone and never
 * refused: a refused Epilog would drain the node. */
#define IO_SLICE_MS 1000
#define HANDSHAKE_TIMEOUT_MS 5000
#define MAX_REQUEST (1u << 20)
#define THREAD_STACK (512u << 10)

static int request_timeout_ms = 30000;
static struct session_auth munge;
static uid_t trusted_uid;   /* slurmctld's user; root is always trusted */

/* Lines an unauthenticated peer can cause, each kind on a budget. */
#define LOG_BUDGET_MS 10000
static struct log_limit refused_log = LOG_LIMIT_INIT(10, LOG_BUDGET_MS);
static struct log_limit dropped_log = LOG_LIMIT_INIT(10, LOG_BUDGET_MS);
static struct log_limit crowd_log = LOG_LIMIT_INIT(5, LOG_BUDGET_MS);

static struct agent_settings settings;

/* The Epilog, over the local socket: one plain request. */
static void serve_local(struct conn *c)
{
    struct rpc_header h;
    uint8_t *payload = NULL;
    int64_t deadline = net_now_ms() + request_timeout_ms;
    int rc = rpc_recv(c->fd, &h, &payload, MAX_REQUEST, deadline);
    if (rc < 0) {
        log_warn("dropping a local connection: %s", strerror(-rc));
        return;
    }
    struct reply out = { .cancel = NULL };
    char why[256];
    if ((rc = auth_check_peer(c->fd, why, sizeof(why))) < 0) {
        rpc_writer_init(&out.body, NULL, 0);
        out.err = (struct agent_error){ .fault = AGENT_FAULT_JOB };
        snprintf(out.err.text, sizeof(out.err.text), "node %s: %s", settings.node, why);
        log_warn("%s request refused: %s", agent_op_name(h.opcode), out.err.text);
        agent_error_put(&out.body, &out.err);
    } else {
        rc = dispatch_run(c, h.opcode, payload, h.length, &out);
    }
    struct rpc_header resp = { .opcode = h.opcode, .id = h.id, .status = rc < 0 ? rc : 0 };
    if (rpc_writer_ok(&out.body))
        rpc_send(c->fd, &resp, out.body.data, out.body.len, net_now_ms() + request_timeout_ms);
    rpc_writer_free(&out.body);
    free(payload);
}

/* A proven session's requests overlap: each runs in a thread of its own
 * (a START may take 30 s, a WATCH waits for a stager), at most
 * SESSION_INFLIGHT at once (the reader waits for a free one: the plugin
 * keeps to the same bound), and each answer goes out when it is ready,
 * under the session's send lock, with its request's id. */
#define SESSION_INFLIGHT 64

struct live_session {
    struct agent_session s;
    const struct conn *c;
    pthread_mutex_t lock;      /* sending, and the fields below */
    pthread_cond_t changed;
    int inflight;
    atomic_bool over;          /* the reader is done: waiting requests may stop */
};

struct live_request {
    struct live_session *ls;
    struct session_msg m;
};

static void *run_request(void *arg)
{
    struct live_request *q = arg;
    struct live_session *ls = q->ls;
    struct reply out = { .cancel = &ls->over, .peer_uid = ls->s.peer_uid };
    int status = dispatch_run(ls->c, q->m.op, q->m.body, q->m.len, &out);
    free(q->m.plain);
    pthread_mutex_lock(&ls->lock);
    int rc = 0;
    if (!ls->s.keys.tx_failed)
        rc = agent_session_send_id(&ls->s, q->m.op, q->m.id, status < 0 ? status : 0,
                                   out.body.data, out.body.len, net_now_ms() + request_timeout_ms);
    if (rc < 0) {
        /* Nothing more can go out: end the reader too. */
        log_warn("%s: uid %u: cannot answer: %s", ls->c->peer, (unsigned)ls->s.peer_uid,
                 strerror(-rc));
        shutdown(ls->s.fd, SHUT_RDWR);
    }
    ls->inflight--;
    pthread_cond_broadcast(&ls->changed);
    pthread_mutex_unlock(&ls->lock);
    rpc_writer_free(&out.body);
    free(q);
    return NULL;
}

/* Reads requests until the peer closes, a message does not open, or the
 * session has been idle (nothing in flight) for the request timeout. */
static void read_requests(struct live_session *ls)
{
    int64_t idle_since = net_now_ms();
    for (;;) {
        pthread_mutex_lock(&ls->lock);
        while (ls->inflight >= SESSION_INFLIGHT)
            pthread_cond_wait(&ls->changed, &ls->lock);
        bool busy = ls->inflight > 0;
        pthread_mutex_unlock(&ls->lock);
        if (busy)
            idle_since = net_now_ms();
        else if (net_now_ms() - idle_since >= request_timeout_ms)
            return;   /* the plugin opens another when it needs one */
        struct pollfd p = { .fd = ls->s.fd, .events = POLLIN };
        int ready = poll(&p, 1, IO_SLICE_MS);
        if (ready < 0 && errno != EINTR)
            return;
        if (ready <= 0)
            continue;
        struct live_request *q = calloc(1, sizeof(*q));
        if (!q)
            return;
        q->ls = ls;
        int rc = agent_session_recv(&ls->s, &q->m, MAX_REQUEST, net_now_ms() + request_timeout_ms);
        if (rc < 0) {
            if (rc != -ECONNRESET)
                log_warn("%s: uid %u: session ended: %s", ls->c->peer, (unsigned)ls->s.peer_uid,
                         rc == -EBADMSG ? "a message did not open (changed, replayed or out of order)"
                                        : strerror(-rc));
            free(q);
            return;
        }
        idle_since = net_now_ms();
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, THREAD_STACK);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t t;
        pthread_mutex_lock(&ls->lock);
        ls->inflight++;
        pthread_mutex_unlock(&ls->lock);
        rc = pthread_create(&t, &attr, run_request, q);
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            log_limited(&crowd_log, LOG_LEVEL_ERROR, "%s: cannot start a thread: %s: answering"
                        " in turn", ls->c->peer, strerror(rc));
            run_request(q);
        }
    }
}

/* A network peer: the handshake, then requests until it closes. */
static void serve_network(struct conn *c)
{
    char *cred = NULL, why[600];
    int handshake_ms = request_timeout_ms < HANDSHAKE_TIMEOUT_MS ? request_timeout_ms
                                                                 : HANDSHAKE_TIMEOUT_MS;
    int rc = agent_session_recv_hello(c->fd, &cred, net_now_ms() + handshake_ms);
    if (rc < 0) {
        log_limited(&dropped_log, LOG_LEVEL_WARN, "%s: dropped before a hello: %s", c->peer,
                    rc == -EPROTO ? "not an agent session's hello" :
                    rc == -ECONNRESET ? "closed (or evicted)" : strerror(-rc));
        return;
    }
    if (!admit_hello(c->slot)) {
        free(cred);
        return;
    }
    struct live_session ls = { .c = c };
    rc = agent_session_accept(&ls.s, c->fd, &munge, settings.node, trusted_uid, cred,
                              net_now_ms() + handshake_ms, why, sizeof(why));
    free(cred);
    if (rc < 0) {
        log_limited(&refused_log, LOG_LEVEL_WARN, "%s: handshake refused: %s", c->peer, why);
        return;
    }
    if (!admit_proven(c->slot)) {
        struct reply out;
        out.err = (struct agent_error){ .fault = AGENT_FAULT_TRANSIENT };
        snprintf(out.err.text, sizeof(out.err.text), "node %s: the agent serves %d sessions"
                 " already: try again", settings.node, ADMIT_PROVEN);
        rpc_writer_init(&out.body, NULL, 0);
        agent_error_put(&out.body, &out.err);
        agent_session_send(&ls.s, 0, -EBUSY, out.body.data, out.body.len,
                           net_now_ms() + request_timeout_ms);
        rpc_writer_free(&out.body);
        log_warn("%s: uid %u: %s", c->peer, (unsigned)ls.s.peer_uid, out.err.text);
        goto end;
    }
    log_debug("%s: session of uid %u", c->peer, (unsigned)ls.s.peer_uid);
    pthread_mutex_init(&ls.lock, NULL);
    pthread_cond_init(&ls.changed, NULL);
    read_requests(&ls);
    /* Requests still running answer into a closed session; they end by
     * themselves (a WATCH is woken at once). */
    pthread_mutex_lock(&ls.lock);
    atomic_store(&ls.over, true);
    shutdown(c->fd, SHUT_RD);
    while (ls.inflight > 0) {
        pthread_mutex_unlock(&ls.lock);
        jobs_wake();
        pthread_mutex_lock(&ls.lock);
        if (ls.inflight > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&ls.changed, &ls.lock, &ts);
        }
    }
    pthread_mutex_unlock(&ls.lock);
    pthread_cond_destroy(&ls.changed);
    pthread_mutex_destroy(&ls.lock);
end:
    /* The descriptor is closed by the caller, after admit_done. */
    ls.s.fd = -1;
    agent_session_close(&ls.s);
}

static void *serve(void *arg)
{
    struct conn c = *(struct conn *)arg;
    free(arg);
    if (net_set_timeouts(c.fd, request_timeout_ms < IO_SLICE_MS ? request_timeout_ms : IO_SLICE_MS) == 0) {
        if (c.local)
            serve_local(&c);
        else
            serve_network(&c);
    }
    if (!c.local)
        admit_done(c.slot);
    close(c.fd);
    return NULL;
}

static void accept_one(int lfd, bool local)
{
    static atomic_bool out_of_fds;
    const char *kind = local ? "local" : "network";
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    int fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_CLOEXEC);
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
    struct conn *c = malloc(sizeof(*c));
    if (!c) {
        close(fd);
        return;
    }
    *c = (struct conn){ .fd = fd, .local = local, .slot = -1 };
    if (local) {
        snprintf(c->peer, sizeof(c->peer), "local");
    } else {
        admit_peer_name((struct sockaddr *)&sa, salen, c->peer, sizeof(c->peer));
        struct admit_outcome o;
        admit_new(fd, (struct sockaddr *)&sa, salen, &o);
        if (o.evicted)
            log_limited(&crowd_log, LOG_LEVEL_WARN,
                        "%s: %d unauthenticated connections (%d from its address): evicted the"
                        " oldest idle one, %s", c->peer, o.unproven, o.from_address, o.victim);
        if (o.slot < 0) {
            log_limited(&crowd_log, LOG_LEVEL_WARN,
                        "%s: refused: %d unauthenticated connections (%d from its address), all"
                        " checking their hello", c->peer, o.unproven, o.from_address);
            close(fd);
            free(c);
            return;
        }
        c->slot = o.slot;
    }
    /* Requests like RELEASE wait for long; a thread each keeps it simple
     * (admit.h bounds how many a network peer can have). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &attr, serve, c);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_limited(&crowd_log, LOG_LEVEL_ERROR, "%s: cannot start a thread: %s", c->peer,
                    strerror(rc));
        if (!local)
            admit_done(c->slot);
        close(fd);
        free(c);
    }
}

/* systemd socket activation (sd_listen_fds(3), without libsystemd): the
 * listening socket is descriptor 3 when LISTEN_PID names this process.
 * A .socket unit keeps the port bound while the agent restarts, so no
 * user's process can take it meanwhile. -1 when not activated. */
static int inherited_listener(char *why, size_t whylen)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    if (!pid || !fds || strtol(pid, NULL, 10) != (long)getpid())
        return -1;
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    int listening = 0, type = 0;
    socklen_t len = sizeof(listening);
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    if (strtol(fds, NULL, 10) != 1 ||
        getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening ||
        getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){ sizeof(type) }) < 0 ||
        type != SOCK_STREAM || getsockname(3, (struct sockaddr *)&sa, &salen) < 0 ||
        (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)) {
        snprintf(why, whylen, "LISTEN_FDS=%s: expected one listening TCP socket from systemd", fds);
        return -2;
    }
    fcntl(3, F_SETFD, FD_CLOEXEC);
    admit_peer_name((struct sockaddr *)&sa, salen, why, whylen);
    return 3;
}

/* Who holds a TCP port in LISTEN, from /proc/net/tcp{,6}: "uid N (name)",
 * or "" if it cannot be told. */
static void port_holder(int port, char *out, size_t outlen)
{
    out[0] = '\0';
    const char *tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
    for (int t = 0; t < 2 && !out[0]; t++) {
        FILE *f = fopen(tables[t], "re");
        char line[512];
        while (f && fgets(line, sizeof(line), f)) {
            char local[80];
            unsigned state, uid;
            if (sscanf(line, " %*d: %79s %*s %x %*s %*s %*s %u", local, &state, &uid) != 3)
                continue;
            const char *colon = strrchr(local, ':');
            if (state != 0x0A || !colon || strtol(colon + 1, NULL, 16) != port)
                continue;
            struct passwd *pw = getpwuid(uid);
            snprintf(out, outlen, "uid %u%s%s%s", uid, pw ? " (" : "", pw ? pw->pw_name : "",
                     pw ? ")" : "");
            break;
        }
        if (f)
            fclose(f);
    }
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-agentd --node NAME --listen HOST:PORT --storage-root DIR\n"
            "                    [--mount-prefix DIR] [--socket PATH] [--adafsd PATH] [--stager PATH]\n"
            "                    [--fuse PATH]\n"
            "                    [--slurm-user USER] [--munge-socket PATH] [--log FILE]\n"
            "                    [--log-dir DIR] [--log-level LEVEL] [--pidfile FILE]\n"
            "                    [--request-timeout SECONDS] [--qos-socket PATH]\n"
            "                    [--node-bandwidth BYTES_PER_SECOND] [--fair-policy POLICY]\n"
            "                    [--cpus N]\n"
            "                    [--foreground]\n");
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

/* path with its first "%n" replaced by the node's name. */
static void expand_node(const char *path, char *out, size_t len)
{
    if (agent_socket_path(path, settings.node, out, len) < 0)
        die("%s: too long once %%n is %s", path, settings.node);
}

int main(int argc, char **argv)
{
    const char *listen_addr = NULL, *socket_path = NULL, *slurm_user = "slurm";
    const char *munge_socket = NULL, *log_path = NULL, *pidfile = NULL, *qos_socket = NULL;
    int level = LOG_LEVEL_INFO;
    bool foreground = false;
    double node_bandwidth = 0;
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
        { "qos-socket", required_argument, NULL, 'Q' },
        { "node-bandwidth", required_argument, NULL, 'B' },
        { "fair-policy", required_argument, NULL, 'P' },
        { "cpus", required_argument, NULL, 'C' },
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
        case 'Q': qos_socket = optarg; break;
        case 'B': {
            uint64_t bw;
            if (size_parse(optarg, &bw) < 0 || bw == 0)
                die("--node-bandwidth: '%s' is not a positive size (bytes per second)", optarg);
            node_bandwidth = (double)bw;
            break;
        }
        case 'P':
            /* adafsd's own parser: the agent refuses at start what every
             * server would refuse at START. */
            if (fair_policy_parse(optarg) < 0)
                die("--fair-policy: '%s' is not " FAIR_POLICY_NAMES, optarg);
            settings.fair_policy = fair_policy_parse(optarg) == FAIR_OFF ? NULL : optarg;
            break;
        case 'C': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n <= 0 || n > 1 << 20)
                die("--cpus %s: expected a count of CPUs, at least 1", optarg);
            settings.cpus = (unsigned)n;
            break;
        }
        case 'f': foreground = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    char err[512], listening[300] = "";
    int lfd = inherited_listener(listening, sizeof(listening));
    if (lfd == -2)
        die("%s", listening);
    if (!settings.node || (!listen_addr && lfd < 0) || settings.nroots == 0) {
        usage(stderr);
        die("--node, --listen (or a socket from systemd) and --storage-root are required");
    }
    if (geteuid() != 0)
        die("must run as root: it starts servers and stagers as job users");
    if (!settings.cpus) {
        /* A node's own: the CPUs this agent, and so its stagers, may use. */
        cpu_set_t mine;
        settings.cpus = sched_getaffinity(0, sizeof(mine), &mine) == 0 && CPU_COUNT(&mine) > 0
                            ? (unsigned)CPU_COUNT(&mine) : 1;
    }
    if (settings.adafsd_path[0] != '/' || settings.stage_path[0] != '/' ||
        settings.fuse_path[0] != '/')
        die("--adafsd, --stager and --fuse must be absolute paths");
    struct passwd *pw = getpwnam(slurm_user);
    if (!pw)
        die("--slurm-user %s: no such user", slurm_user);
    mkdir(settings.log_dir, 0755);
    if (lfd < 0) {
        char host[256];
        int port;
        if (net_parse_hostport(listen_addr, host, sizeof(host), &port) < 0)
            die("--listen %s: expected HOST:PORT", listen_addr);
        lfd = net_listen(host, port, 128, &port, err, sizeof(err));
        if (lfd == -EADDRINUSE) {
            /* While the agent was down, anyone could take its port. */
            char holder[128];
            port_holder(port, holder, sizeof(holder));
            die("--listen %s: port %d is held by another process%s%s: while the agent was down"
                " a user's process may have taken it. Stop that process; to keep the port while"
                " the agent restarts, start the agent from adafs-agentd.socket (systemd), or"
                " give it a port below 1024", listen_addr, port, holder[0] ? ", " : "", holder);
        }
        if (lfd < 0)
            die("--listen %s: %s", listen_addr, err);
        snprintf(listening, sizeof(listening), "%s:%d", host, port);
    }
    /* "%n" in the socket paths is the node name: the Epilog and the
     * job's processes find them the same way from $SLURMD_NODENAME. */
    char socket_buf[108], qos_buf[108];
    if (qos_socket) {
        expand_node(qos_socket, qos_buf, sizeof(qos_buf));
        settings.qos_socket = qos_socket = qos_buf;
    }
    if (socket_path) {
        expand_node(socket_path, socket_buf, sizeof(socket_buf));
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
    if (daemon_start(foreground, pidfile, err, sizeof(err)) < 0)
        die("%s", err);
    int sfd = daemon_signals((const int[]){ SIGTERM, SIGINT, 0 });
    munge_auth_init(&munge, munge_socket);
    qos_agent_relay_init(&munge);
    settings.munge_socket = munge_socket;
    trusted_uid = pw->pw_uid;
    dispatch_init(settings.node, trusted_uid);
    if (child_init() < 0 || sfd < 0) {
        log_error("cannot start the reaper or take signals");
        return 1;
    }
    jobs_recover();
    /* The node's storage bandwidth, shared among its servers' jobs each
     * period (AdapTBF, tbf_loop.h). */
    int tbf_rc = 0;
    if (node_bandwidth > 0 && (!(settings.tbf = tbf_loop_new(node_bandwidth)) ||
                               (tbf_rc = tbf_loop_start(settings.tbf)) < 0)) {
        log_error("--node-bandwidth: cannot start the bandwidth loop: %s",
                  strerror(settings.tbf ? -tbf_rc : ENOMEM));
        return 1;
    }
    if (qos_socket && qos_agent_start(qos_socket, err, sizeof(err)) < 0) {
        log_error("%s", err);
        return 1;
    }
    log_info("node %s: agent listening on %s%s%s, storage %s, servers %s, stager %s",
             settings.node, listening, socket_path ? " and " : "", socket_path ? socket_path : "",
             settings.storage_roots[0], settings.adafsd_path, settings.stage_path);

    struct pollfd p[3] = { { .fd = sfd, .events = POLLIN }, { .fd = lfd, .events = POLLIN },
                           { .fd = ufd, .events = POLLIN } };
    int64_t flushed = net_now_ms();
    int stop_signal = 0;
    for (;;) {
        if (poll(p, ufd >= 0 ? 3 : 2, LOG_BUDGET_MS) < 0 && errno != EINTR)
            break;
        if (p[0].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                stop_signal = (int)si.ssi_signo;
            break;
        }
        if (p[1].revents)
            accept_one(lfd, false);
        if (ufd >= 0 && p[2].revents)
            accept_one(ufd, true);
        /* A flood that stopped is still summed up. */
        if (net_now_ms() - flushed >= LOG_BUDGET_MS) {
            log_limit_flush(&refused_log);
            log_limit_flush(&dropped_log);
            log_limit_flush(&crowd_log);
            flushed = net_now_ms();
        }
    }
    if (stop_signal == SIGINT) {
        log_info("node %s: stopping on SIGINT: tearing down every instance on this node",
                 settings.node);
        jobs_shutdown();
    } else {
        log_info("node %s: stopping on %s: its jobs left running for the next agent to "
                 "re-adopt (SIGINT would tear them down)", settings.node,
                 stop_signal ? strsignal(stop_signal) : "a failed poll");
    }
    /* With jobs left running a request may still be adding one to the
     * bandwidth loop: it ends with the process instead of being freed. */
    if (stop_signal == SIGINT)
        tbf_loop_free(settings.tbf);
    qos_agent_stop();
    /* Left in place while jobs run on, the socket refuses the Epilog, which
     * then waits for the next agent (--restart-wait) as after a crash;
     * gone, it would tell the Epilog there is no agent here at all. */
    if (socket_path && stop_signal == SIGINT)
        unlink(socket_path);
    if (pidfile)
        unlink(pidfile);
    return 0;
}
