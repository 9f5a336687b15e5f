/* exchange: fair-share usage between the servers of an instance (see
 * exchange.h). */
#include "exchange.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "instance.h"
#include "log.h"
#include "net.h"

/* A peer's reports: the one being assembled (stamp, parts got) and the
 * last whole one. */
struct peer {
    uint64_t stamp;                  /* of the report being assembled; 0: none */
    uint64_t got;                    /* its parts taken, one bit each */
    unsigned nparts;
    struct fair_usage *parts;        /* its entries so far */
    size_t n, cap;
    uint64_t done_stamp;             /* the last whole report */
    struct fair_usage *done;
    size_t ndone, done_cap;
    struct sockaddr_in addr;         /* exchange_start's */
};

struct exchange {
    struct fair *fair;
    uint8_t key[EXCHANGE_KEY_SIZE];
    unsigned index, nservers, lambda_ms;
    struct peer *peers;              /* nservers, ours unused */
    struct fair_usage *scratch;      /* own + peers' entries of a period */
    size_t scratch_cap;
    /* The thread's. */
    int fd;
    int have_addrs;
    char *hosts, *instance_path;
    int from_file;                   /* the addresses came from the instance file, */
    struct stat learnt;              /* as it was then */
    uint8_t secret[INSTANCE_SECRET_SIZE];
};

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << 8 * i;
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << 8 * i;
    return v;
}

static void mac(const uint8_t key[EXCHANGE_KEY_SIZE], const uint8_t *msg, size_t len,
                uint8_t out[EXCHANGE_MAC_SIZE])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, EXCHANGE_KEY_SIZE);
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)EXCHANGE_LABEL, sizeof(EXCHANGE_LABEL) - 1);
    crypto_auth_hmacsha256_update(&st, msg, len);
    crypto_auth_hmacsha256_final(&st, out);
}

struct exchange *exchange_new(struct fair *f, const uint8_t key[EXCHANGE_KEY_SIZE],
                              unsigned index, unsigned nservers, unsigned lambda_ms)
{
    struct exchange *x = calloc(1, sizeof(*x));
    if (!x || !(x->peers = calloc(nservers ? nservers : 1, sizeof(*x->peers)))) {
        free(x);
        return NULL;
    }
    x->fair = f;
    memcpy(x->key, key, EXCHANGE_KEY_SIZE);
    x->index = index;
    x->nservers = nservers;
    x->lambda_ms = lambda_ms ? lambda_ms : EXCHANGE_DEFAULT_LAMBDA_MS;
    x->fd = -1;
    return x;
}

void exchange_free(struct exchange *x)
{
    if (!x)
        return;
    for (unsigned i = 0; i < x->nservers; i++) {
        free(x->peers[i].parts);
        free(x->peers[i].done);
    }
    free(x->peers);
    free(x->scratch);
    free(x->hosts);
    free(x->instance_path);
    sodium_memzero(x->key, sizeof(x->key));
    free(x);
}

static int grow(struct fair_usage **v, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    struct fair_usage *g = realloc(*v, c * sizeof(*g));
    if (!g)
        return -ENOMEM;
    *v = g;
    *cap = c;
    return 0;
}

int exchange_receive(struct exchange *x, const uint8_t *msg, size_t len, uint64_t now_ns,
                     char *why, size_t whylen)
{
    if (len < EXCHANGE_HEADER_SIZE + EXCHANGE_MAC_SIZE || get32(msg) != EXCHANGE_MAGIC ||
        get16(msg + 4) != EXCHANGE_VERSION) {
        snprintf(why, whylen, "not a usage report (%zu bytes)", len);
        return -EBADMSG;
    }
    unsigned part = get16(msg + 6), nparts = get16(msg + 8), count = get16(msg + 10);
    uint32_t sender = get32(msg + 12), nservers = get32(msg + 16);
    uint64_t stamp = get64(msg + 20);
    if (len != EXCHANGE_HEADER_SIZE + (size_t)count * EXCHANGE_ENTRY_SIZE + EXCHANGE_MAC_SIZE ||
        count > EXCHANGE_PER_DGRAM || nparts == 0 || nparts > EXCHANGE_PARTS_MAX ||
        part >= nparts) {
        snprintf(why, whylen, "a malformed usage report (%zu bytes, %u entries, part %u of %u)",
                 len, count, part, nparts);
        return -EBADMSG;
    }
    uint8_t want[EXCHANGE_MAC_SIZE];
    mac(x->key, msg, len - EXCHANGE_MAC_SIZE, want);
    if (sodium_memcmp(want, msg + len - EXCHANGE_MAC_SIZE, EXCHANGE_MAC_SIZE) != 0) {
        snprintf(why, whylen, "a usage report not made with this instance's server key");
        return -EACCES;
    }
    /* The MAC holds: a server of the instance made it. Still, only a peer. */
    if (nservers != x->nservers || sender >= x->nservers || sender == x->index) {
        snprintf(why, whylen, "a usage report from server %u of %u, not a peer of server %u "
                 "of %u", sender, nservers, x->index, x->nservers);
        return -EBADMSG;
    }
    uint64_t skew = now_ns > stamp ? now_ns - stamp : stamp - now_ns;
    if (skew > (uint64_t)EXCHANGE_FRESH_MS * 1000000) {
        snprintf(why, whylen, "a usage report of server %u stamped %.1f s %s this server's clock",
                 sender, (double)skew / 1e9, stamp < now_ns ? "behind" : "ahead of");
        return -ESTALE;
    }
    struct peer *p = &x->peers[sender];
    if (stamp <= p->done_stamp || stamp < p->stamp ||
        (stamp == p->stamp && (p->got >> part & 1))) {
        snprintf(why, whylen, "a usage report of server %u already taken or older than the "
                 "last one (replayed?)", sender);
        return -ESTALE;
    }
    if (stamp > p->stamp) {   /* a newer report: the one assembled is given up */
        p->stamp = stamp;
        p->got = 0;
        p->nparts = nparts;
        p->n = 0;
    } else if (nparts != p->nparts) {
        snprintf(why, whylen, "a usage report of server %u whose parts disagree", sender);
        return -EBADMSG;
    }
    if (grow(&p->parts, &p->cap, p->n + count) < 0) {
        snprintf(why, whylen, "no memory for a usage report");
        return -ENOMEM;
    }
    const uint8_t *e = msg + EXCHANGE_HEADER_SIZE;
    for (unsigned i = 0; i < count; i++, e += EXCHANGE_ENTRY_SIZE) {
        uint64_t bits = get64(e + 8);
        double share;
        memcpy(&share, &bits, sizeof(share));
        if (!(share > 0 && share <= 1e9))   /* NaN too: a server's, but checked */
            share = 1;
        p->parts[p->n++] = (struct fair_usage){ .key = get64(e), .share = share,
                                                .used = get64(e + 16) };
    }
    p->got |= 1ull << part;
    if (p->got == (nparts == 64 ? ~0ull : (1ull << nparts) - 1)) {
        struct fair_usage *t = p->done;
        size_t tc = p->done_cap;
        p->done = p->parts;
        p->done_cap = p->cap;
        p->ndone = p->n;
        p->done_stamp = stamp;
        p->parts = t;
        p->cap = tc;
        p->n = 0;
        p->stamp = 0;
        p->got = 0;
    }
    return 0;
}

size_t exchange_period(struct exchange *x, uint64_t now_ns,
                       uint8_t out[][EXCHANGE_DGRAM_MAX], size_t *lens, unsigned *peers_used)
{
    size_t need = EXCHANGE_ENTRIES_MAX;
    uint64_t fresh_ns = 2ull * x->lambda_ms * 1000000;
    for (unsigned i = 0; i < x->nservers; i++)
        need += x->peers[i].ndone;
    unsigned used_peers = 0;
    size_t own = 0, n = 0;
    if (grow(&x->scratch, &x->scratch_cap, need) == 0) {
        own = fair_usage_take(x->fair, x->scratch, EXCHANGE_ENTRIES_MAX);
        n = own;
        for (unsigned i = 0; i < x->nservers; i++) {
            struct peer *p = &x->peers[i];
            if (i == x->index || !p->done_stamp || p->done_stamp + fresh_ns < now_ns)
                continue;
            if (p->ndone)   /* an idle peer's report is empty (and may have no array) */
                memcpy(x->scratch + n, p->done, p->ndone * sizeof(*p->done));
            n += p->ndone;
            used_peers++;
        }
        fair_usage_apply(x->fair, x->scratch, n);
    }
    if (peers_used)
        *peers_used = used_peers;
    size_t nparts = own ? (own + EXCHANGE_PER_DGRAM - 1) / EXCHANGE_PER_DGRAM : 1;
    for (size_t part = 0, at = 0; part < nparts; part++) {
        size_t count = own - at < EXCHANGE_PER_DGRAM ? own - at : EXCHANGE_PER_DGRAM;
        uint8_t *m = out[part];
        put32(m, EXCHANGE_MAGIC);
        put16(m + 4, EXCHANGE_VERSION);
        put16(m + 6, (uint16_t)part);
        put16(m + 8, (uint16_t)nparts);
        put16(m + 10, (uint16_t)count);
        put32(m + 12, x->index);
        put32(m + 16, x->nservers);
        put64(m + 20, now_ns);
        uint8_t *e = m + EXCHANGE_HEADER_SIZE;
        for (size_t i = 0; i < count; i++, e += EXCHANGE_ENTRY_SIZE) {
            const struct fair_usage *u = &x->scratch[at + i];
            uint64_t bits;
            memcpy(&bits, &u->share, sizeof(bits));
            put64(e, u->key);
            put64(e + 8, bits);
            put64(e + 16, u->used);
        }
        at += count;
        mac(x->key, m, (size_t)(e - m), e);
        lens[part] = (size_t)(e - m) + EXCHANGE_MAC_SIZE;
    }
    return nparts;
}

/* ---- the thread ---- */

static struct log_limit refused_log = LOG_LIMIT_INIT(5, 10000);

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int resolve(const char *host, int port, struct sockaddr_in *sa)
{
    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0)
        return -1;
    memcpy(sa, res->ai_addr, sizeof(*sa));
    freeaddrinfo(res);
    return 0;
}

/* Peers' addresses from the host list (every port set), else from the
 * instance file: 0 once known, -1 not yet (why says why). */
static int learn_peers(struct exchange *x, char *why, size_t whylen)
{
    struct instance inst = { .nservers = 0 };
    int from_hosts = 0;
    if (x->hosts) {
        unsigned n = 0;
        from_hosts = 1;
        for (const char *p = x->hosts; p && from_hosts; n++) {
            const char *comma = strchr(p, ',');
            char entry[INSTANCE_HOST_MAX + 16], host[INSTANCE_HOST_MAX];
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            int port = 0;
            snprintf(entry, sizeof(entry), "%.*s", (int)len, p);
            if (n >= x->nservers || net_parse_hostport(entry, host, sizeof(host), &port) < 0 ||
                port == 0)
                from_hosts = 0;
            else if (n != x->index && resolve(host, port, &x->peers[n].addr) < 0)
                from_hosts = 0;
            p = comma ? comma + 1 : NULL;
        }
        if (from_hosts) {
            x->from_file = 0;
            return 0;
        }
    }
    if (!x->instance_path) {
        snprintf(why, whylen, "the server list has ports the kernel picked and no --instance "
                 "file names them");
        return -1;
    }
    char err[512];
    struct stat st;
    if (stat(x->instance_path, &st) < 0)
        memset(&st, 0, sizeof(st));
    if (instance_read(x->instance_path, &inst, err, sizeof(err)) < 0) {
        snprintf(why, whylen, "%s", err);
        return -1;
    }
    int rc = -1;
    if ((unsigned)inst.nservers != x->nservers)
        snprintf(why, whylen, "%s lists %d servers, this server is one of %u", x->instance_path,
                 inst.nservers, x->nservers);
    else if (sodium_memcmp(inst.secret, x->secret, INSTANCE_SECRET_SIZE) != 0)
        snprintf(why, whylen, "%s is another instance's (its secret is not ours)",
                 x->instance_path);
    else
        rc = 0;
    for (unsigned i = 0; rc == 0 && i < x->nservers; i++)
        if (i != x->index && resolve(inst.servers[i].host, inst.servers[i].port,
                                     &x->peers[i].addr) < 0) {
            snprintf(why, whylen, "cannot resolve server %u's host %s", i, inst.servers[i].host);
            rc = -1;
        }
    instance_free(&inst);
    if (rc == 0) {
        x->from_file = 1;
        x->learnt = st;
    }
    return rc;
}

/* Has the instance file been replaced since the addresses were learnt
 * from it? The deployer rewrites it (CONFIGURE) after the servers start:
 * one read before that must not pin the ports of an earlier run. */
static int instance_replaced(const struct exchange *x)
{
    struct stat st;
    if (!x->from_file || stat(x->instance_path, &st) < 0)
        return 0;   /* gone: the addresses learnt stay */
    return st.st_ino != x->learnt.st_ino || st.st_dev != x->learnt.st_dev ||
           st.st_mtim.tv_sec != x->learnt.st_mtim.tv_sec ||
           st.st_mtim.tv_nsec != x->learnt.st_mtim.tv_nsec;
}

/* Datagrams read per wake-up: anyone may send to the port, and a sender
 * faster than the MACs are checked must not keep the period from coming
 * (the rest wait in the socket, or are dropped there). */
#define DRAIN_BATCH 256

static void drain(struct exchange *x)
{
    uint8_t buf[EXCHANGE_DGRAM_MAX + 1];
    for (int i = 0; i < DRAIN_BATCH; i++) {
        struct sockaddr_in from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(x->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return;
        char why[256];
        if (exchange_receive(x, buf, (size_t)n, realtime_ns(), why, sizeof(why)) < 0) {
            char ip[INET_ADDRSTRLEN] = "?";
            inet_ntop(AF_INET, &from.sin_addr, ip, sizeof(ip));
            log_limited(&refused_log, LOG_LEVEL_WARN, "fair exchange: refused %s from %s:%d",
                        why, ip, ntohs(from.sin_port));
        }
    }
}

static void *run(void *arg)
{
    struct exchange *x = arg;
    uint8_t (*out)[EXCHANGE_DGRAM_MAX] = malloc(EXCHANGE_PARTS_MAX * sizeof(*out));
    size_t lens[EXCHANGE_PARTS_MAX];
    if (!out) {
        log_error("fair exchange: no memory: fairness holds within this server only");
        return NULL;
    }
    int64_t next = net_now_ms() + x->lambda_ms;
    int64_t said_ms = 0;
    char said[600] = "";    /* the last reason logged for having no addresses */
    unsigned counted = 0;   /* peers whose reports counted last period */
    for (;;) {
        int64_t now = net_now_ms();
        if (now < next) {
            struct pollfd pfd = { .fd = x->fd, .events = POLLIN };
            if (poll(&pfd, 1, (int)(next - now)) > 0)
                drain(x);
            continue;
        }
        next = next + x->lambda_ms > now ? next + x->lambda_ms : now + x->lambda_ms;
        char why[600];
        if (x->have_addrs && instance_replaced(x)) {
            x->have_addrs = 0;
            log_debug("fair exchange: %s was replaced: the peers' addresses read again",
                     x->instance_path);
        }
        if (!x->have_addrs && !(x->have_addrs = learn_peers(x, why, sizeof(why)) == 0)) {
            /* Each new reason at once (the first is often only that the
             * deployer has not written the file yet), the same at most
             * once a minute. */
            if (strcmp(why, said) != 0 || now - said_ms > 60000) {
                log_warn("fair exchange: no peers' addresses yet: %s", why);
                snprintf(said, sizeof(said), "%s", why);
                said_ms = now;
            }
            continue;
        }
        if (said[0]) {
            log_info("fair exchange: the peers' addresses are known now (%s)",
                     x->instance_path ? x->instance_path : "--hosts");
            said[0] = '\0';
        }
        unsigned used;
        size_t nd = exchange_period(x, realtime_ns(), out, lens, &used);
        log_debug("fair exchange: applied %u peers' reports, sending %zu datagrams", used, nd);
        /* Said when it changes, for whoever checks the exchange runs (a
         * peer that came or went silent), not every period. */
        if (used != counted)
            log_info("fair exchange: the reports of %u of the %u other servers count", used,
                     x->nservers - 1);
        counted = used;
        for (unsigned i = 0; i < x->nservers; i++)
            for (size_t d = 0; i != x->index && d < nd; d++)
                sendto(x->fd, out[d], lens[d], MSG_DONTWAIT, (struct sockaddr *)&x->peers[i].addr,
                       sizeof(x->peers[i].addr));
    }
    return NULL;
}

int exchange_start(struct exchange *x, int lfd, const char *hosts, const char *instance_path,
                   const uint8_t *secret, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    if (getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0 || sa.sin_family != AF_INET) {
        snprintf(err, errlen, "fair exchange: the listener has no IPv4 address");
        return -EINVAL;
    }
    x->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (x->fd < 0 || bind(x->fd, (struct sockaddr *)&sa, sl) < 0) {
        int rc = -errno;
        snprintf(err, errlen, "fair exchange: cannot bind UDP port %d: %s", ntohs(sa.sin_port),
                 strerror(errno));
        return rc;
    }
    x->hosts = hosts ? strdup(hosts) : NULL;
    x->instance_path = instance_path ? strdup(instance_path) : NULL;
    memcpy(x->secret, secret, INSTANCE_SECRET_SIZE);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, run, x);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "fair exchange: no thread: %s", strerror(rc));
        return -rc;
    }
    return 0;
}
