/* adafsd: the server of one node of an adafs instance.
 *
 *   adafsd --index I (--hosts host:port,... | --listen host:port --servers N)
 *          --root DIR --secret-file F [--chunk-size 512K] [--quota SIZE]
 *          [--log FILE] [--ready-fd N] [--log-level LEVEL] [--foreground]
 *          [--max-clients N] [--max-handshakes N] [--max-handshakes-per-peer N]
 *          [--max-clients-per-user N] [--max-buffered-per-user SIZE]
 *          [--fair-policy POLICY] [--fair-slots N] [--test-service-time US[,US_PER_MIB]]
 *          [--bandwidth-file FILE] [--fair-jobs FILE]
 *          [--server-key FILE [--instance FILE] [--fair-exchange MS]]
 *          [--owner UID [--access-group GID] [--munge-socket PATH]] [--keep-root]
 *
 * A server needs only its own address and how many servers the instance
 * has: --listen and --servers say just that, whatever the instance's size,
 * and are what the node agent passes; --hosts (the whole list, for
 * starting an instance by hand) is read for its entry number --index and
 * its length. The servers talk to each other only under a fair-share
 * policy with --server-key: every --fair-exchange ms (default 500) they
 * tell each other what each entity was served (exchange.h), so fairness
 * holds across servers; the peers' addresses come from --hosts (ports
 * set) or the --instance file.
 *
 * Listens on its own address (port 0: any free port), keeps its
 * metadata and chunks under --root (created 0700, must not exist or be
 * empty), and when ready writes "ready port=P pid=N" to --ready-fd, or
 * "error <reason>" if it cannot start. --quota bounds the bytes its chunks
 * may occupy (0 or none: no bound). Every connection first proves it holds
 * the secret (gate.c): --max-handshakes bound the connections doing so at
 * once (overall and per peer), --max-clients those served after (on a
 * server several users share, --max-clients-per-user of them per uid, a
 * quarter by default, whose requests hold at most --max-buffered-per-user
 * bytes in memory beyond their first buffers, 1 GiB by default). SIGTERM
 * or SIGINT stop it: the root is wiped before it exits.
 *
 * --fair-policy shares the server among the jobs, users or groups of its
 * clients (fairshare.h; default off), --fair-slots requests at a time
 * among them; --test-service-time (benchmarks only) makes every request
 * also hold an emulated device, so the bottleneck is deterministic.
 * --bandwidth-file bounds each job's bytes by the rates the node agent
 * writes there (bucket.h). --fair-jobs names the agent's file of jobs' node
 * counts ("JOB NODES" lines, root's) for size-fair and user-then-size.
 *
 * --owner makes it a server several users share (a persistent instance's):
 * besides the secret, every client proves its uid at connect (a munge
 * credential over TCP, from --munge-socket's munged; the kernel's word on
 * the Unix socket) and only the owner and the members of --access-group
 * get in (access.c). Without it, one job's server: the secret is the key.
 *
 * --keep-root (a persistent instance's server): the root may hold what an
 * earlier run left, which is opened again (the bytes its chunk files hold
 * count against --quota), and it is not wiped when the server stops: the
 * node agent wipes it when the instance is destroyed. */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sys/random.h>
#include <pwd.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "daemon.h"
#include "exchange.h"
#include "instance.h"
#include "log.h"
#include "net.h"
#include "size.h"

/* Defaults of the connection bounds. Every process of a job holds one
 * connection to each server (128 ranks on each of 64 nodes: 8192 per
 * server); a handshake takes a round trip, so a few per peer at once
 * would do, but all ranks of a node start together. */
#define DEFAULT_MAX_CLIENTS 16384
#define DEFAULT_MAX_HANDSHAKES 1024
#define DEFAULT_MAX_HANDSHAKES_PER_PEER 256
/* A server several users share lets one uid hold at most 1/this of
 * --max-clients (--max-clients-per-user): one user's processes, however
 * many, leave the others three quarters of the places. */
#define DEFAULT_USERS_SHARING 4
/* And its connections hold at most this much memory in requests beyond
 * their first buffers: a dozen large batches at once; more wait their turn
 * (a request alone may always take RPC_MAX_PAYLOAD). */
#define DEFAULT_BUFFERED_PER_USER (1ull << 30)
/* Descriptors kept for RocksDB and chunk files beside the connections. */
#define FILES_RESERVE 1024
/* Requests served at once under a fair-share policy: enough to keep the
 * disk and both RocksDB and chunk paths busy, few enough that the draw,
 * not the scheduler, decides who goes next. */
#define DEFAULT_FAIR_SLOTS 8

static struct server srv;
static int ready_fd = -1;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafsd --index I (--hosts host:port,... | --listen host:port --servers N)\n"
            "              --root DIR --secret-file FILE [--chunk-size SIZE] [--quota SIZE] [--log FILE]\n"
            "              [--log-level error|warn|info|debug] [--ready-fd N] [--foreground]\n"
            "              [--max-clients N] [--max-handshakes N] [--max-handshakes-per-peer N]\n"
            "              [--max-clients-per-user N] [--max-buffered-per-user SIZE]\n"
            "              [--fair-policy off|job-fair|user-fair|group-fair|size-fair|user-then-size]\n"
            "              [--fair-slots N] [--test-service-time US[,US_PER_MIB]]\n"
            "              [--bandwidth-file FILE] [--fair-jobs FILE]\n"
            "              [--server-key FILE [--instance FILE] [--fair-exchange MS]]\n"
            "              [--owner UID [--access-group GID] [--munge-socket PATH]] [--keep-root]\n");
}

/* Reports a start-up failure on the log and to whoever waits for readiness,
 * then exits. */
static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_error("%s", msg);
    if (ready_fd >= 0)
        dprintf(ready_fd, "error %s\n", msg);
    exit(1);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (remove(path) < 0 && errno != ENOENT)
        log_error("cannot remove %s: %s", path, strerror(errno));
    return 0;
}

static void wipe(const char *root)
{
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* --keep-root: the root holds what an earlier run of this server left (a
 * persistent instance's data): it is opened again, and never wiped here. */
static int keep_root;

/* The root must be ours alone: create it 0700, or accept an empty directory
 * we own (a deployer may have made it); with --keep-root, one holding an
 * earlier run's data. */
static void make_root(const char *root)
{
    if (mkdir(root, 0700) == 0)
        return;
    if (errno != EEXIST)
        die("cannot create root %s: %s", root, strerror(errno));
    struct stat st;
    if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        die("root %s exists and is not a directory owned by uid %d", root, (int)getuid());
    DIR *d = opendir(root);
    struct dirent *e;
    int entries = 0;
    while (d && (e = readdir(d)))
        entries += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    if (!d || (entries && !keep_root))
        die("root %s exists and is not empty: refusing to use (and later wipe) it", root);
    if (chmod(root, 0700) < 0)
        die("cannot chmod 0700 %s: %s", root, strerror(errno));
}

/* Picks entry `index` out of the comma-separated host list. */
static void own_address(const char *hosts, unsigned index, char *host, size_t hostlen,
                        int *port, unsigned *count)
{
    unsigned n = 0;
    int found = 0;
    for (const char *p = hosts; p; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char entry[INSTANCE_HOST_MAX + 16];
        if (len == 0 || len >= sizeof(entry))
            die("--hosts: entry %u is empty or too long", n);
        memcpy(entry, p, len);
        entry[len] = '\0';
        char h[INSTANCE_HOST_MAX];
        int pt;
        if (net_parse_hostport(entry, h, sizeof(h), &pt) < 0)
            die("--hosts: entry %u '%s' is not host:port", n, entry);
        if (n == index) {
            snprintf(host, hostlen, "%s", h);
            *port = pt;
            found = 1;
        }
        p = comma ? comma + 1 : NULL;
    }
    if (!found)
        die("--index %u is out of range: --hosts lists %u servers", index, n);
    *count = n;
}

/* Without --foreground the server detaches; the parent returns only once the
 * child is ready (or failed), so a shell script can go on right after. */
static int notify_fd = -1;

static void daemonize(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        die("pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid > 0) {
        close(p[1]);
        char buf[16];
        ssize_t n;
        do
            n = read(p[0], buf, 1);
        while (n < 0 && errno == EINTR);
        _exit(n == 1 ? 0 : 1);
    }
    close(p[0]);
    setsid();
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        close(devnull);
    }
    notify_fd = p[1];   /* the parent learns of readiness through it */
}

/* Every connection is a descriptor: raises the soft limit to the hard one,
 * and lowers --max-clients to what the limit leaves beside handshakes and
 * files, saying so, rather than failing accept() when clients come. */
static void fit_descriptors(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t need = (rlim_t)srv.max_clients + srv.handshakes_max + FILES_RESERVE;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rlim_t spare = rl.rlim_cur > (rlim_t)srv.handshakes_max + FILES_RESERVE + 16
                       ? rl.rlim_cur - srv.handshakes_max - FILES_RESERVE : 16;
        log_warn("the descriptor limit (%llu, RLIMIT_NOFILE) leaves room for %llu clients, "
                 "not --max-clients %u: serving at most %llu", (unsigned long long)rl.rlim_cur,
                 (unsigned long long)spare, srv.max_clients, (unsigned long long)spare);
        srv.max_clients = (unsigned)spare;
    }
}

/* What each entity was served, for whoever checks the fair sharing
 * (bench/fair/run.sh): nobody took it in periods, so it is the total. */
static void log_fair_service(void)
{
    struct fair_usage use[256];
    size_t n = srv.fair ? fair_usage_take(srv.fair, use, 256) : 0;
    for (size_t i = 0; i < n; i++)
        log_info("fair sharing: entity %#llx was served %llu us", (unsigned long long)use[i].key,
                 (unsigned long long)use[i].used / 1000);
}

/* Under a fair-share policy, the exchange of usage with the other servers
 * (exchange.h), if there are any and they share a key (--server-key). */
static void start_exchange(const uint8_t *key, unsigned lambda_ms, int lfd, const char *hosts,
                           const char *instance_path)
{
    if (!srv.fair || srv.nservers < 2)
        return;
    if (lambda_ms == 0) {
        log_info("fair sharing holds within this server only: --fair-exchange 0");
        return;
    }
    if (!key) {
        log_info("fair sharing holds within this server only: no --server-key to exchange "
                 "usage with the other servers");
        return;
    }
    char err[512];
    struct exchange *x = exchange_new(srv.fair, key, srv.index, srv.nservers, lambda_ms);
    int rc = x ? exchange_start(x, lfd, hosts, instance_path, srv.secret, err, sizeof(err))
               : -ENOMEM;
    if (rc < 0)
        die("%s", x ? err : "out of memory for the fair exchange");
    log_info("fair sharing across the instance's %u servers: usage exchanged every %u ms "
             "(peers from %s)", srv.nservers, lambda_ms,
             instance_path ? instance_path : "--hosts");
}

/* An absolute path option into its buffer (room: the longest it may be,
 * plus one), or a start-up failure naming the option. */
static void set_path(char *dst, size_t room, const char *option, const char *arg)
{
    if (arg[0] != '/' || strlen(arg) >= room)
        die("%s: '%s' must be an absolute path", option, arg);
    snprintf(dst, room, "%s", arg);
}

/* A user or group option: a name this node knows, else a number. */
static unsigned long id_of(const char *arg, const char *option, bool group)
{
    struct passwd *pw = group ? NULL : getpwnam(arg);
    struct group *gr = group ? getgrnam(arg) : NULL;
    if (pw)
        return pw->pw_uid;
    if (gr)
        return gr->gr_gid;
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    unsigned long none = group ? (unsigned long)(gid_t)-1 : (unsigned long)(uid_t)-1;
    if (*end || end == arg || arg[0] == '-' || v >= none)
        die("%s: '%s' is neither a %s nor a %s this node knows", option, arg,
            group ? "gid" : "uid", group ? "group" : "user");
    return v;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "index", required_argument, NULL, 'i' },
        { "hosts", required_argument, NULL, 'H' },
        { "listen", required_argument, NULL, 'A' },
        { "servers", required_argument, NULL, 'N' },
        { "root", required_argument, NULL, 'r' },
        { "secret-file", required_argument, NULL, 's' },
        { "chunk-size", required_argument, NULL, 'c' },
        { "quota", required_argument, NULL, 'q' },
        { "log", required_argument, NULL, 'l' },
        { "log-level", required_argument, NULL, 'L' },
        { "ready-fd", required_argument, NULL, 'R' },
        { "foreground", no_argument, NULL, 'f' },
        { "max-clients", required_argument, NULL, 'M' },
        { "max-handshakes", required_argument, NULL, 'K' },
        { "max-handshakes-per-peer", required_argument, NULL, 'P' },
        { "max-clients-per-user", required_argument, NULL, 'u' },
        { "max-buffered-per-user", required_argument, NULL, 'b' },
        { "fair-policy", required_argument, NULL, 'F' },
        { "fair-slots", required_argument, NULL, 'S' },
        { "test-service-time", required_argument, NULL, 'T' },
        { "bandwidth-file", required_argument, NULL, 'B' },
        { "fair-jobs", required_argument, NULL, 'J' },
        { "owner", required_argument, NULL, 'O' },
        { "access-group", required_argument, NULL, 'G' },
        { "munge-socket", required_argument, NULL, 'U' },
        { "keep-root", no_argument, NULL, 'E' },
        { "server-key", required_argument, NULL, 'k' },
        { "instance", required_argument, NULL, 'I' },
        { "fair-exchange", required_argument, NULL, 'X' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *hosts = NULL, *listen = NULL, *root = NULL, *secret_file = NULL;
    const char *log_path = NULL, *server_key = NULL, *instance_path = NULL;
    long index = -1, servers = 0, lambda_ms = EXCHANGE_DEFAULT_LAMBDA_MS;
    int foreground = 0, level = LOG_LEVEL_INFO;
    int fair_policy = FAIR_OFF;
    long fair_slots = DEFAULT_FAIR_SLOTS;
    srv.chunk_size = 512 * 1024;
    srv.quota = UINT64_MAX;
    srv.max_clients = DEFAULT_MAX_CLIENTS;
    srv.max_buffered_per_user = DEFAULT_BUFFERED_PER_USER;
    srv.self_uid = getuid();
    srv.self_gid = getgid();
    srv.handshakes_max = DEFAULT_MAX_HANDSHAKES;
    srv.handshakes_per_peer = DEFAULT_MAX_HANDSHAKES_PER_PEER;
    log_open("adafsd", LOG_LEVEL_INFO, NULL);
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
            index = strtol(optarg, &end, 10);
            if (*end || end == optarg || index < 0 || index >= INSTANCE_MAX_SERVERS)
                die("--index: '%s' is not a server index", optarg);
            break;
        case 'H': hosts = optarg; break;
        case 'A': listen = optarg; break;
        case 'N':
            servers = strtol(optarg, &end, 10);
            if (*end || end == optarg || servers < 1 || servers > INSTANCE_MAX_SERVERS)
                die("--servers: '%s' is not a count from 1 to %d", optarg, INSTANCE_MAX_SERVERS);
            break;
        case 'r': root = optarg; break;
        case 's': secret_file = optarg; break;
        case 'l': log_path = optarg; break;
        case 'f': foreground = 1; break;
        case 'c':
            if (size_parse(optarg, &srv.chunk_size) < 0 || srv.chunk_size < INSTANCE_CHUNK_MIN ||
                srv.chunk_size > INSTANCE_CHUNK_MAX)
                die("--chunk-size: '%s' is not a size between 4K and 64M", optarg);
            break;
        case 'q':
            if (size_parse(optarg, &srv.quota) < 0)
                die("--quota: '%s' is not a size", optarg);
            if (srv.quota == 0)
                srv.quota = UINT64_MAX;   /* 0: no quota */
            break;
        case 'L':
            if ((level = log_level_parse(optarg)) < 0)
                die("--log-level: '%s' is not error, warn, info or debug", optarg);
            break;
        case 'R': {
            long fd = strtol(optarg, &end, 10);
            if (*end || end == optarg || fd < 3 || fcntl((int)fd, F_GETFD) < 0)
                die("--ready-fd: '%s' is not an open descriptor above 2", optarg);
            ready_fd = (int)fd;
            fcntl(ready_fd, F_SETFD, FD_CLOEXEC);
            break;
        }
        case 'M':
        case 'K':
        case 'P':
        case 'u': {
            unsigned *bound = c == 'M' ? &srv.max_clients : c == 'K' ? &srv.handshakes_max
                              : c == 'P' ? &srv.handshakes_per_peer : &srv.max_clients_per_user;
            long n = strtol(optarg, &end, 10);
            if (*end || end == optarg || n < 1 || n > 1000000)
                die("--%s: '%s' is not a count between 1 and 1000000",
                    c == 'M' ? "max-clients" : c == 'K' ? "max-handshakes"
                    : c == 'P' ? "max-handshakes-per-peer" : "max-clients-per-user", optarg);
            *bound = (unsigned)n;
            break;
        }
        case 'b':
            if (size_parse(optarg, &srv.max_buffered_per_user) < 0 ||
                srv.max_buffered_per_user < RPC_MAX_PAYLOAD)
                die("--max-buffered-per-user: '%s' is not a size of at least %uM (one request's "
                    "most)", optarg, RPC_MAX_PAYLOAD >> 20);
            break;
        case 'F':
            if ((fair_policy = fair_policy_parse(optarg)) < 0)
                die("--fair-policy: '%s' is not " FAIR_POLICY_NAMES, optarg);
            break;
        case 'S':
            fair_slots = strtol(optarg, &end, 10);
            if (*end || end == optarg || fair_slots < 1 || fair_slots > 4096)
                die("--fair-slots: '%s' is not a count between 1 and 4096", optarg);
            break;
        case 'T': {
            double base, per_mib = 0;
            int n = 0;
            if ((sscanf(optarg, "%lf%n,%lf%n", &base, &n, &per_mib, &n) < 1) || optarg[n] ||
                !(base >= 0 && base <= 1e7) || !(per_mib >= 0 && per_mib <= 1e7))
                die("--test-service-time: '%s' is not microseconds per request[,per MiB]",
                    optarg);
            srv.test_service_ns = (uint64_t)(base * 1000);
            srv.test_service_ns_per_mib = (uint64_t)(per_mib * 1000);
            break;
        }
        case 'B':
            set_path(srv.bandwidth_file, sizeof(srv.bandwidth_file) - 16, "--bandwidth-file", optarg);
            break;
        case 'J':
            set_path(srv.fair_jobs, sizeof(srv.fair_jobs), "--fair-jobs", optarg);
            break;
        case 'O':
            srv.owner = (uid_t)id_of(optarg, "--owner", false);
            srv.multiuser = 1;
            break;
        case 'G':
            srv.access_group = (gid_t)id_of(optarg, "--access-group", true);
            srv.has_access_group = 1;
            break;
        case 'U':
            set_path(srv.munge_socket, sizeof(srv.munge_socket), "--munge-socket", optarg);
            break;
        case 'E': keep_root = srv.keep_root = 1; break;
        case 'k': server_key = optarg; break;
        case 'I':
            if (optarg[0] != '/')
                die("--instance: '%s' must be an absolute path", optarg);
            instance_path = optarg;
            break;
        case 'X':
            lambda_ms = strtol(optarg, &end, 10);
            if (*end || end == optarg || (lambda_ms != 0 && lambda_ms < 10) || lambda_ms > 60000)
                die("--fair-exchange: '%s' is not 0 (off) or milliseconds between 10 and 60000",
                    optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        die("unexpected argument '%s'", argv[optind]);
    if (index < 0 || (!hosts == !listen) || (listen && !servers) || !root || !secret_file) {
        usage(stderr);
        die("--index, --hosts (or --listen and --servers), --root and --secret-file are required");
    }
    if ((srv.has_access_group || srv.munge_socket[0]) && !srv.multiuser)
        die("--access-group and --munge-socket are for a server several users share: "
            "give --owner too");
    if (root[0] != '/' || strlen(root) >= sizeof(srv.root) - 64)
        die("--root: '%s' must be an absolute path", root);
    if (log_path && log_open("adafsd", (enum log_level)level, log_path) < 0)
        die("cannot open log %s: %s", log_path, strerror(errno));
    log_set_level((enum log_level)level);

    fit_descriptors();
    if (!srv.max_clients_per_user)
        srv.max_clients_per_user = srv.max_clients / DEFAULT_USERS_SHARING > 0
                                   ? srv.max_clients / DEFAULT_USERS_SHARING : 1;
    if (srv.max_clients_per_user > srv.max_clients)
        srv.max_clients_per_user = srv.max_clients;
    char host[INSTANCE_HOST_MAX];
    int port = 0;
    if (hosts) {
        own_address(hosts, (unsigned)index, host, sizeof(host), &port, &srv.nservers);
    } else {
        if (net_parse_hostport(listen, host, sizeof(host), &port) < 0)
            die("--listen: '%s' is not host:port (port 0: any free port)", listen);
        if (index >= servers)
            die("--index %ld is out of range: --servers is %ld", index, servers);
        srv.nservers = (unsigned)servers;
    }
    char err[512];
    if (secret_read_file(secret_file, srv.secret, err, sizeof(err)) < 0)
        die("%s", err);
    /* Beside a secret file named as deployers name it (common/instance.h:
     * ".../secret", ".../.job.ID.secret"), the instance file and the
     * servers' key have the same name with "instance" and "serverkey". */
    char beside_instance[4200], beside_key[4200];
    size_t sl = strlen(secret_file), tl = strlen(INSTANCE_SECRET);
    int beside = sl >= tl && strcmp(secret_file + sl - tl, INSTANCE_SECRET) == 0 &&
                 sl + 16 < sizeof(beside_key);
    if (beside) {
        snprintf(beside_instance, sizeof(beside_instance), "%.*s%s", (int)(sl - tl), secret_file,
                 INSTANCE_FILE);
        snprintf(beside_key, sizeof(beside_key), "%.*s%s", (int)(sl - tl), secret_file,
                 INSTANCE_SERVER_KEY);
        if (!instance_path)
            instance_path = beside_instance;
        if (!server_key && access(beside_key, F_OK) == 0)
            server_key = beside_key;
    }
    uint8_t exchange_key[EXCHANGE_KEY_SIZE];
    if (server_key && secret_read_file(server_key, exchange_key, err, sizeof(err)) < 0)
        die("--server-key: %s", err);
    if (server_key && sodium_memcmp(exchange_key, srv.secret, sizeof(exchange_key)) == 0)
        die("--server-key %s holds the instance's secret, which every client has: the "
            "servers' key must be another", server_key);

    if (!foreground)
        daemonize();
    srv.index = (unsigned)index;
    pthread_mutex_init(&srv.device_lock, NULL);
    pthread_mutex_init(&srv.bandwidth_lock, NULL);
    if (srv.bandwidth_file[0] && !(srv.buckets = buckets_new()))
        die("out of memory for --bandwidth-file");
    if (fair_policy != FAIR_OFF && !(srv.fair = fair_new(fair_policy, (unsigned)fair_slots, 0)))
        die("out of memory for --fair-policy");
    if (!srv.fair)
        srv.fair_jobs[0] = '\0';   /* nothing to weigh: the agent passes it to every server */
    int jrc = srv.fair_jobs[0] ? fair_jobs_load(srv.fair, srv.fair_jobs) : 0;
    if (jrc < 0 && jrc != -ENOENT)
        die("--fair-jobs %s: %s", srv.fair_jobs,
            jrc == -EPERM ? "not a regular file that only root may write"
                         : jrc == -EINVAL ? "a line is not JOB NODES" : strerror(-jrc));
    for (int i = 0; i < SERVER_STRIPES; i++) {
        pthread_mutex_init(&srv.record_locks[i], NULL);
        pthread_mutex_init(&srv.chunk_locks[i], NULL);
    }
    int sfd = daemon_signals((const int[]){ SIGTERM, SIGINT, SIGHUP, 0 });
    if (sfd < 0)
        die("signalfd: %s", strerror(-sfd));

    int bound;
    int lfd = net_listen(host, port, 1024, &bound, err, sizeof(err));
    if (lfd < 0)
        die("%s", err);
    /* Clients on this node may also come through a Unix socket, to pass
     * descriptors (conn.c). Without it they use TCP: slower, not wrong. */
    char local_name[INSTANCE_LOCAL_NAME_MAX];
    instance_local_name(host, bound, local_name);
    int ufd = net_listen_abstract(local_name, 1024);
    if (ufd < 0)
        log_warn("cannot listen on the local socket @%s: %s; clients on this node use TCP",
                 local_name, strerror(-ufd));
    snprintf(srv.root, sizeof(srv.root), "%s", root);
    if (srv.quota != UINT64_MAX) {
        struct instance_space space;
        instance_space(srv.quota, &space);
        srv.headroom = space.headroom;
        srv.write_buffer = space.write_buffer;
    }
    make_root(root);
    char dbdir[4200];
    snprintf(dbdir, sizeof(dbdir), "%s/db", root);
    if (meta_open(&srv, dbdir, err, sizeof(err)) < 0 || chunks_init(&srv, err, sizeof(err)) < 0) {
        if (!keep_root)
            wipe(root);
        die("%s", err);
    }
    log_info("server %u of %u listening on %s:%d, root %s, chunk size %llu, quota %llu, "
             "%llu kept free for metadata, fair sharing %s", srv.index, srv.nservers, host,
             bound, root, (unsigned long long)srv.chunk_size, (unsigned long long)srv.quota,
             (unsigned long long)srv.headroom, fair_policy_name((enum fair_policy)fair_policy));
    if (srv.multiuser && getrandom(srv.key_mask, sizeof(srv.key_mask), 0) !=
                             (ssize_t)sizeof(srv.key_mask))
        die("no random bytes for the data key mask: %s", strerror(errno));
    if (srv.multiuser && srv.has_access_group)
        log_info("shared by its owner uid %u and the members of gid %u: clients prove their "
                 "uid at connect", (unsigned)srv.owner, (unsigned)srv.access_group);
    else if (srv.multiuser)
        log_info("shared by the jobs of its owner uid %u: clients prove their uid at connect",
                 (unsigned)srv.owner);
    /* The record's server knows the mode bits, the chunk servers do not:
     * capabilities carry them (common/fs_cap.h), under the servers' key. */
    if (srv.multiuser && server_key) {
        srv.caps = 1;
        memcpy(srv.cap_key, exchange_key, sizeof(srv.cap_key));
        log_info("data served only with a capability from the file's record server (mode "
                 "bits hold within %d s of a chmod)", FS_CAP_LIFETIME_MS / 1000);
    } else if (srv.multiuser) {
        log_warn("no --server-key: chunk servers cannot check capabilities, so a user who may "
                 "read a file may also overwrite its data, and keeps its key after a chmod");
    }
    if (srv.test_service_ns || srv.test_service_ns_per_mib)
        log_warn("--test-service-time: every request waits %llu us + %llu us per MiB on an "
                 "emulated device (for benchmarks only)",
                 (unsigned long long)srv.test_service_ns / 1000,
                 (unsigned long long)srv.test_service_ns_per_mib / 1000);
    if (ready_fd >= 0) {
        dprintf(ready_fd, "ready port=%d pid=%d\n", bound, (int)getpid());
        close(ready_fd);
        ready_fd = -1;
    }
    if (notify_fd >= 0) {
        if (write(notify_fd, "r", 1) < 0)
            log_warn("cannot notify the starting parent: %s", strerror(errno));
        close(notify_fd);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0 && log_path)
            dup2(devnull, 2);   /* detached: messages go to the log only */
        if (devnull >= 0)
            close(devnull);
    }

    start_exchange(server_key ? exchange_key : NULL, (unsigned)lambda_ms, lfd, hosts,
                   instance_path);
    int rc = gate_run(&srv, lfd, ufd, sfd);
    if (rc < 0)
        log_error("stopping: the accept loop failed: %s", strerror(-rc));
    log_fair_service();
    if (keep_root) {
        /* Its data outlives this run: RocksDB closed in order, nothing wiped. */
        close(lfd);
        if (ufd >= 0)
            close(ufd);
        meta_close(&srv);
        log_info("root %s kept (--keep-root); exiting", root);
        log_close();
        _exit(0);
    }
    /* No orderly close of RocksDB: it would flush memtables only to have
     * them deleted. Wipe and leave; the kernel closes the connections. */
    int64_t t0 = net_now_ms();
    close(lfd);
    if (ufd >= 0)
        close(ufd);
    /* Move the root aside first: threads still serving open chunk and
     * database files by path then find nothing, so the wipe is not racing
     * against files being created. */
    char dead[4200];
    snprintf(dead, sizeof(dead), "%s.wipe.%d", root, (int)getpid());
    const char *victim = rename(root, dead) == 0 ? dead : root;
    datafile_stop();   /* the data files kept open go with the root */
    struct stat st;
    for (int i = 0; i < 3 && lstat(victim, &st) == 0; i++)
        wipe(victim);
    log_info("root %s wiped in %lld ms; exiting", root, (long long)(net_now_ms() - t0));
    log_close();
    _exit(0);
}
