/* adafs-ctl: starts, checks and stops an adafs instance on this machine.
 *
 *   adafs-ctl start --servers N --base DIR [--port-base P] [--chunk-size 512K]
 *                   [--quota SIZE] [--timeout-ms MS] [--mount PREFIX]
 *                   [--adafsd PATH] [--log-level LEVEL] [--max-clients N]
 *   adafs-ctl stop --base DIR
 *   adafs-ctl status --base DIR
 *   adafs-ctl persistent list [--socket PATH]
 *
 * start runs N adafsd on 127.0.0.1 (port 0 unless --port-base: the kernel
 * picks free ports and each server reports its own over its ready pipe, so
 * parallel test runs never collide), waits until all are ready, writes
 * DIR/instance and prints its path. Under DIR: secret, serverkey (the key
 * only the servers hold, for their fair-share exchange: never give it to
 * a client), servers (index pid port), root.I (server roots), server.I.log. stop ends them (SIGTERM; they
 * wipe their roots) and removes what start wrote except the logs. status
 * authenticates to every server (handshake.h) and pings it.
 *
 * persistent list asks this node's agent (as root, on its local socket:
 * --socket, else $ADAFS_AGENT_SOCKET, else AGENT_SOCKET_DEFAULT, "%n" the
 * node's name from $SLURMD_NODENAME or the host's) which persistent
 * instances it serves, and prints one line each. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_proto.h"
#include "handshake.h"
#include "instance.h"
#include "net.h"
#include "proto.h"
#include "rpc.h"
#include "rpc_io.h"
#include "size.h"

#define START_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 5000

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-ctl start --servers N --base DIR [--port-base P] [--chunk-size SIZE]\n"
            "                       [--quota SIZE] [--timeout-ms MS] [--mount PREFIX]\n"
            "                       [--adafsd PATH] [--log-level LEVEL] [--max-clients N]\n"
            "       adafs-ctl stop --base DIR\n"
            "       adafs-ctl status --base DIR\n"
            "       adafs-ctl persistent list [--socket PATH]\n");
}

struct options {
    int servers, port_base, timeout_ms;
    const char *base, *chunk_size, *quota, *mount, *adafsd, *log_level, *max_clients;
};

/* The adafsd next to this program (build tree or bindir), unless told. */
static void find_adafsd(const struct options *o, char *out, size_t len)
{
    const char *env = getenv("ADAFSD");
    if (o->adafsd || env) {
        snprintf(out, len, "%s", o->adafsd ? o->adafsd : env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        snprintf(out, len, "%s/adafsd", dirname(self));
        if (access(out, X_OK) == 0)
            return;
    }
    snprintf(out, len, "%s/adafsd", BINDIR);
}

static void path_in(char *out, size_t len, const char *base, const char *name, int index)
{
    if (index >= 0)
        snprintf(out, len, "%s/%s.%d", base, name, index);
    else
        snprintf(out, len, "%s/%s", base, name);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (remove(path) < 0 && errno != ENOENT)
        fprintf(stderr, "adafs-ctl: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void wipe(const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Is pid an adafsd (and not a stranger that got a recycled pid)? */
static int is_adafsd(pid_t pid)
{
    char path[64], cmd[256] = "";
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    cmd[n] = '\0';
    const char *slash = strrchr(cmd, '/');
    return strcmp(slash ? slash + 1 : cmd, "adafsd") == 0;
}

/* Sends sig to each live pid and waits (pidfds, no polling loop) until they
 * are gone or timeout_ms passes. Returns how many are still alive. */
static int signal_and_wait(pid_t *pids, int n, int sig, int timeout_ms)
{
    struct pollfd *p = calloc((size_t)n, sizeof(*p));
    int alive = 0;
    for (int i = 0; i < n; i++) {
        p[i].fd = -1;
        if (pids[i] <= 0)
            continue;
        int fd = (int)pidfd_open(pids[i], 0);
        if (fd < 0 || !is_adafsd(pids[i]) || pidfd_send_signal(fd, sig, NULL, 0) < 0) {
            if (fd >= 0)
                close(fd);
            pids[i] = 0;
            continue;
        }
        p[i].fd = fd;
        p[i].events = POLLIN;
        alive++;
    }
    int64_t deadline = net_now_ms() + timeout_ms;
    while (alive > 0) {
        int64_t left = deadline - net_now_ms();
        if (left <= 0 || poll(p, (nfds_t)n, (int)left) <= 0)
            break;
        for (int i = 0; i < n; i++)
            if (p[i].fd >= 0 && p[i].revents) {
                close(p[i].fd);
                p[i].fd = -1;
                pids[i] = 0;
                alive--;
            }
    }
    for (int i = 0; i < n; i++)
        if (p[i].fd >= 0)
            close(p[i].fd);
    free(p);
    return alive;
}

/* Stops the servers listed in DIR/servers and removes what start made. */
static int stop(const char *base, int quiet)
{
    int64_t t0 = net_now_ms();
    char path[PATH_MAX];
    path_in(path, sizeof(path), base, "servers", -1);
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "adafs-ctl: no instance in %s (%s: %s)\n", base, path, strerror(errno));
        return 1;
    }
    pid_t pids[INSTANCE_MAX_SERVERS];
    int idx[INSTANCE_MAX_SERVERS], n = 0, pid, index, port;
    while (n < INSTANCE_MAX_SERVERS && fscanf(f, "%d %d %d", &index, &pid, &port) == 3) {
        idx[n] = index;
        pids[n++] = pid;
    }
    fclose(f);
    if (signal_and_wait(pids, n, SIGTERM, STOP_TIMEOUT_MS) > 0) {
        fprintf(stderr, "adafs-ctl: servers did not stop within %d ms; killing them\n",
                STOP_TIMEOUT_MS);
        signal_and_wait(pids, n, SIGKILL, 1000);
    }
    for (int i = 0; i < n; i++) {
        char root[PATH_MAX];
        path_in(root, sizeof(root), base, "root", idx[i]);
        wipe(root);   /* normally already gone: the server wipes it */
    }
    static const char *files[] = { "instance", "secret", "serverkey", "servers" };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        path_in(path, sizeof(path), base, files[i], -1);
        unlink(path);
    }
    if (!quiet)
        fprintf(stderr, "adafs-ctl: stopped %d servers in %lld ms\n", n,
                (long long)(net_now_ms() - t0));
    return 0;
}

/* Forks and execs server i; returns its pid and the read end of its ready
 * pipe. */
static pid_t spawn(const struct options *o, const char *adafsd, const char *hosts, int i,
                   int *ready)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    char index[16], root[PATH_MAX], secret[PATH_MAX], log[PATH_MAX];
    snprintf(index, sizeof(index), "%d", i);
    path_in(root, sizeof(root), o->base, "root", i);
    path_in(secret, sizeof(secret), o->base, "secret", -1);
    path_in(log, sizeof(log), o->base, "server", i);
    strncat(log, ".log", sizeof(log) - strlen(log) - 1);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int devnull = open("/dev/null", O_RDWR);
        /* All three: a server must not keep the caller's pipes open (a
         * shell waiting for `adafs-ctl start | ...` to end). Its errors go
         * to its log and the ready pipe. */
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        dup2(p[1], 3);   /* dup2 clears close-on-exec on 3 */
        char *argv[] = { (char *)adafsd, "--index", index, "--hosts", (char *)hosts,
                         "--root", root, "--secret-file", secret,
                         "--chunk-size", (char *)o->chunk_size, "--quota", (char *)o->quota,
                         "--log", log, "--log-level", (char *)o->log_level,
                         "--ready-fd", "3", "--foreground",
                         o->max_clients ? "--max-clients" : NULL, (char *)o->max_clients, NULL };
        execv(adafsd, argv);
        dprintf(3, "error cannot run %s: %s\n", adafsd, strerror(errno));
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return -1;
    }
    *ready = p[0];
    return pid;
}

static int start(const struct options *o)
{
    int64_t t0 = net_now_ms();
    if (mkdir(o->base, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "adafs-ctl: cannot create %s: %s\n", o->base, strerror(errno));
        return 1;
    }
    char path[PATH_MAX], err[512], adafsd[PATH_MAX];
    path_in(path, sizeof(path), o->base, "servers", -1);
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "adafs-ctl: %s already holds an instance (%s exists); stop it first\n",
                o->base, path);
        return 1;
    }
    struct instance inst = { .chunk_size = 0, .timeout_ms = o->timeout_ms, .nservers = o->servers };
    if (size_parse(o->chunk_size, &inst.chunk_size) < 0 || inst.chunk_size < INSTANCE_CHUNK_MIN ||
        inst.chunk_size > INSTANCE_CHUNK_MAX) {
        fprintf(stderr, "adafs-ctl: --chunk-size '%s' is not a size between 4K and 64M\n",
                o->chunk_size);
        return 1;
    }
    if (o->mount)
        snprintf(inst.mount, sizeof(inst.mount), "%s", o->mount);
    else
        snprintf(inst.mount, sizeof(inst.mount), "/adafs");
    if (secret_generate(inst.secret) < 0) {
        fprintf(stderr, "adafs-ctl: cannot get random bytes: %s\n", strerror(errno));
        return 1;
    }
    path_in(path, sizeof(path), o->base, "secret", -1);
    if (secret_write_file(path, inst.secret, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-ctl: %s\n", err);
        return 1;
    }
    /* The servers' own key (fsd/exchange.h), made like the secret: the
     * servers find it, and the instance file, beside the secret. */
    uint8_t server_key[INSTANCE_SECRET_SIZE];
    path_in(path, sizeof(path), o->base, INSTANCE_SERVER_KEY, -1);
    if (secret_generate(server_key) < 0) {
        fprintf(stderr, "adafs-ctl: cannot get random bytes: %s\n", strerror(errno));
        return 1;
    }
    if (secret_write_file(path, server_key, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-ctl: %s\n", err);
        return 1;
    }
    find_adafsd(o, adafsd, sizeof(adafsd));
    size_t hlen = (size_t)o->servers * 24 + 1;
    char *hosts = calloc(1, hlen);
    for (int i = 0; i < o->servers; i++)
        snprintf(hosts + strlen(hosts), hlen - strlen(hosts), "%s127.0.0.1:%d", i ? "," : "",
                 o->port_base ? o->port_base + i : 0);
    inst.servers = calloc((size_t)o->servers, sizeof(*inst.servers));
    pid_t *pids = calloc((size_t)o->servers, sizeof(*pids));
    struct pollfd *p = calloc((size_t)o->servers, sizeof(*p));
    char **answers = calloc((size_t)o->servers, sizeof(*answers));
    int failed = 0;
    for (int i = 0; i < o->servers; i++) {
        pids[i] = spawn(o, adafsd, hosts, i, &p[i].fd);
        p[i].events = POLLIN;
        answers[i] = calloc(1, 1024);
        if (pids[i] < 0) {
            fprintf(stderr, "adafs-ctl: cannot start server %d: %s\n", i, strerror(errno));
            p[i].fd = -1;
            failed = 1;
        }
    }
    /* Each server writes one line and closes its end: wait for all of them. */
    int64_t deadline = net_now_ms() + START_TIMEOUT_MS;
    int open_pipes = failed ? 0 : o->servers;
    while (open_pipes > 0) {
        int64_t left = deadline - net_now_ms();
        if (left <= 0 || poll(p, (nfds_t)o->servers, (int)left) <= 0)
            break;
        for (int i = 0; i < o->servers; i++) {
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            size_t have = strlen(answers[i]);
            ssize_t n = read(p[i].fd, answers[i] + have, 1023 - have);
            if (n <= 0 || have + (size_t)n >= 1023) {
                close(p[i].fd);
                p[i].fd = -1;
                open_pipes--;
            }
        }
    }
    for (int i = 0; i < o->servers; i++) {
        int port, pid;
        if (p[i].fd >= 0)
            close(p[i].fd);
        answers[i][strcspn(answers[i], "\n")] = '\0';
        if (instance_ready_parse(answers[i], &port, &pid) == 0) {
            snprintf(inst.servers[i].host, sizeof(inst.servers[i].host), "127.0.0.1");
            inst.servers[i].port = port;
            continue;
        }
        fprintf(stderr, "adafs-ctl: server %d did not start: %s\n", i,
                answers[i][0] ? answers[i] : "no answer within the start timeout");
        failed = 1;
    }
    /* Reap the exits of servers that failed; running ones stay unreaped
     * until we exit, then init adopts them. */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    path_in(path, sizeof(path), o->base, "servers", -1);
    FILE *f = fopen(path, "we");
    for (int i = 0; f && i < o->servers; i++)
        fprintf(f, "%d %d %d\n", i, (int)pids[i], inst.servers[i].port);
    if (f)
        fclose(f);
    int rc = 0;
    if (failed || !f) {
        stop(o->base, 1);
        rc = 1;
    } else {
        path_in(path, sizeof(path), o->base, "instance", -1);
        if (instance_write(path, &inst, err, sizeof(err)) < 0) {
            fprintf(stderr, "adafs-ctl: %s\n", err);
            stop(o->base, 1);
            rc = 1;
        } else {
            printf("%s\n", path);
            fprintf(stderr, "adafs-ctl: %d servers ready in %lld ms\n", o->servers,
                    (long long)(net_now_ms() - t0));
        }
    }
    for (int i = 0; i < o->servers; i++)
        free(answers[i]);
    free(answers);
    free(p);
    free(pids);
    free(hosts);
    instance_free(&inst);
    return rc;
}

/* Pings every server of the instance with its secret. */
static int status(const char *base)
{
    char path[PATH_MAX], err[512];
    path_in(path, sizeof(path), base, "instance", -1);
    struct instance inst;
    if (instance_read(path, &inst, err, sizeof(err)) < 0) {
        fprintf(stderr, "adafs-ctl: %s\n", err);
        return 1;
    }
    int down = 0;
    for (int i = 0; i < inst.nservers; i++) {
        const struct instance_server *s = &inst.servers[i];
        int64_t t0 = net_now_ms();
        int fd = net_connect(s->host, s->port, inst.timeout_ms, err, sizeof(err));
        int rc = fd;
        if (fd >= 0) {
            int64_t deadline = net_now_ms() + inst.timeout_ms;
            char peer[INSTANCE_HOST_MAX + 32];
            snprintf(peer, sizeof(peer), "server %d (%s:%d)", i, s->host, s->port);
            rc = handshake_client(fd, (uint32_t)i, inst.secret, deadline, peer, err,
                                  sizeof(err));
            if (rc == 0) {   /* else err says why, naming the server */
                struct rpc_header h = { .opcode = FS_PING, .id = 1 };
                uint8_t *payload = NULL;
                rc = rpc_send(fd, &h, NULL, 0, deadline);
                if (rc == 0)
                    rc = rpc_recv(fd, &h, &payload, 0, deadline);
                if (rc == 0)
                    rc = h.status;
                free(payload);
                snprintf(err, sizeof(err), "ping: %s", strerror(-rc));
            }
            close(fd);
        }
        if (rc < 0)
            down++;
        printf("server %d %s:%d %s (%lld ms)%s%s\n", i, s->host, s->port, rc < 0 ? "down" : "up",
               (long long)(net_now_ms() - t0), rc < 0 ? ": " : "", rc < 0 ? err : "");
    }
    instance_free(&inst);
    return down ? 1 : 0;
}

/* The persistent instances the local agent serves, one line each. */
static int persistent_list(const char *pattern)
{
    char node[256], path[256];
    const char *env = getenv("SLURMD_NODENAME");
    if (env) {
        snprintf(node, sizeof(node), "%s", env);
    } else {
        if (gethostname(node, sizeof(node)) < 0)
            snprintf(node, sizeof(node), "localhost");
        node[strcspn(node, ".")] = '\0';   /* the short host name, as Slurm's */
    }
    if (!pattern)
        pattern = getenv("ADAFS_AGENT_SOCKET") ? getenv("ADAFS_AGENT_SOCKET") : AGENT_SOCKET_DEFAULT;
    if (agent_socket_path(pattern, node, path, sizeof(path)) < 0) {
        fprintf(stderr, "adafs-ctl: socket path %s too long for node %s\n", pattern, node);
        return 2;
    }
    int fd = net_connect_unix(path);
    if (fd < 0) {
        fprintf(stderr, "adafs-ctl: cannot reach the agent at %s: %s\n", path, strerror(-fd));
        return 1;
    }
    /* Only root's agent answers for the node: the kernel says who listens. */
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
        fprintf(stderr, "adafs-ctl: %s is not served by root: not the agent\n", path);
        close(fd);
        return 1;
    }
    struct rpc_header h = { .opcode = AGENT_LIST, .id = 1 };
    int64_t deadline = net_now_ms() + 30000;
    uint8_t *reply = NULL;
    int rc = rpc_send(fd, &h, NULL, 0, deadline);
    if (rc == 0)
        rc = rpc_recv(fd, &h, &reply, AGENT_MAX_BODY, deadline);
    close(fd);
    struct rpc_reader r;
    rpc_reader_init(&r, reply, rc == 0 ? h.length : 0);
    if (rc == 0 && h.status < 0) {
        const char *msg = rpc_get_str(&r);
        fprintf(stderr, "adafs-ctl: the agent at %s: %s\n", path, msg ? msg : strerror(-h.status));
        free(reply);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "adafs-ctl: the agent at %s: %s\n", path, strerror(-rc));
        return 1;
    }
    uint32_t n = rpc_get_u32(&r);
    printf("%-32s %-10s %-7s %-7s %-5s %-7s %12s %12s %s\n", "NAME", "ID", "OWNER", "GROUP",
           "PORT", "PID", "USED", "QUOTA", "ROOT");
    for (uint32_t i = 0; rpc_reader_ok(&r) && i < n; i++) {
        struct agent_instance in;
        if (agent_instance_get(&r, &in) < 0)
            break;
        char pid[16] = "down", group[16] = "-";
        if (in.pid)
            snprintf(pid, sizeof(pid), "%u", in.pid);
        if (in.access_gid)
            snprintf(group, sizeof(group), "%u", in.access_gid);
        printf("%-32s %-10u %-7u %-7s %-5u %-7s %12llu %12llu %s\n", in.name, in.id, in.uid, group,
               in.port, pid, (unsigned long long)in.used, (unsigned long long)in.quota, in.root);
    }
    int bad = !rpc_reader_done(&r);
    if (bad)
        fprintf(stderr, "adafs-ctl: the agent at %s sent a malformed list\n", path);
    free(reply);
    return bad;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "servers", required_argument, NULL, 'n' },
        { "base", required_argument, NULL, 'b' },
        { "port-base", required_argument, NULL, 'p' },
        { "chunk-size", required_argument, NULL, 'c' },
        { "quota", required_argument, NULL, 'q' },
        { "timeout-ms", required_argument, NULL, 't' },
        { "mount", required_argument, NULL, 'm' },
        { "adafsd", required_argument, NULL, 'a' },
        { "log-level", required_argument, NULL, 'L' },
        { "max-clients", required_argument, NULL, 'M' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "persistent") == 0) {
        static const struct option popts[] = { { "socket", required_argument, NULL, 's' },
                                                { NULL, 0, NULL, 0 } };
        const char *socket_path = NULL;
        optind = 3;
        int pc;
        while ((pc = getopt_long(argc, argv, "", popts, NULL)) != -1) {
            if (pc != 's') {
                usage(stderr);
                return 2;
            }
            socket_path = optarg;
        }
        if (argc < 3 || strcmp(argv[2], "list") != 0 || optind != argc) {
            fprintf(stderr, "adafs-ctl: persistent: the one command is 'list [--socket PATH]'\n");
            return 2;
        }
        return persistent_list(socket_path);
    }
    if (strcmp(cmd, "start") != 0 && strcmp(cmd, "stop") != 0 && strcmp(cmd, "status") != 0) {
        fprintf(stderr, "adafs-ctl: unknown command '%s' (known: start, stop, status, "
                "persistent list)\n", cmd);
        usage(stderr);
        return 2;
    }
    struct options o = { .servers = 1, .timeout_ms = 5000, .chunk_size = "512K",
                         .quota = "8E", .log_level = "info" };
    char *end;
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        long v;
        switch (c) {
        case 'n':
        case 'p':
        case 't':
            v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 0 || (c == 'n' && (v < 1 || v > 256)) ||
                (c == 'p' && v > 65535) || (c == 't' && (v < 1 || v > 3600000))) {
                fprintf(stderr, "adafs-ctl: bad value '%s' for --%s (%s)\n", optarg,
                        c == 'n' ? "servers" : c == 'p' ? "port-base" : "timeout-ms",
                        c == 'n' ? "1 to 256" : c == 'p' ? "0 to 65535" : "1 to 3600000");
                return 2;
            }
            if (c == 'n')
                o.servers = (int)v;
            else if (c == 'p')
                o.port_base = (int)v;
            else
                o.timeout_ms = (int)v;
            break;
        case 'b': o.base = optarg; break;
        case 'c': o.chunk_size = optarg; break;
        case 'q': o.quota = optarg; break;
        case 'm': o.mount = optarg; break;
        case 'a': o.adafsd = optarg; break;
        case 'L': o.log_level = optarg; break;
        case 'M': o.max_clients = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "adafs-ctl %s: unexpected argument '%s'\n", cmd, argv[optind]);
        return 2;
    }
    if (!o.base) {
        fprintf(stderr, "adafs-ctl %s: --base DIR is required\n", cmd);
        return 2;
    }
    if (strcmp(cmd, "start") == 0) {
        uint64_t q;
        if (size_parse(o.quota, &q) < 0) {
            fprintf(stderr, "adafs-ctl: --quota '%s' is not a size\n", o.quota);
            return 2;
        }
        return start(&o);
    }
    if (strcmp(cmd, "stop") == 0)
        return stop(o.base, 0);
    return status(o.base);
}
