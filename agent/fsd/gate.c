/* gate: adafsd's front door. One event loop accepts every connection (TCP
 * and the node's Unix socket) and runs its handshake (handshake.h): only a
 * client that proved it holds the instance's secret is handed to conn.c,
 * which gives it a thread. Until then a connection costs a descriptor and
 * a slot of this table, nothing more.
 *
 * What unauthenticated peers may cost is bounded, and they cannot keep the
 * job's own clients out:
 *  - at most --max-handshakes run at once, and --max-handshakes-per-peer
 *    of them per peer (its IPv4 address; its uid on the Unix socket);
 *  - a new connection that finds its peer's share used evicts that peer's
 *    oldest handshake, one that finds the table full the oldest of all. A
 *    client's handshake takes a round trip, so idle connections only push
 *    each other out (and a client whose handshake was cut short retries);
 *  - a handshake not finished within GATE_HANDSHAKE_MS is dropped;
 *  - what they make us log goes through log_limited.
 * Authenticated connections are bounded too (--max-clients): past it, a
 * client that proved itself is told EUSERS in the handshake's answer; on a
 * server several users share, also past --max-clients-per-user of its
 * uid's.
 *
 * On a server several users share, who a client is (its munge credential
 * decoded by munged, its groups from NSS) may take as long as munged or
 * the directory service takes: that runs on IDENT_WORKERS threads, never
 * in this loop, so a slow munged or NSS delays only the clients waiting
 * for it (each still bound by the handshake's deadline), not every
 * connection of the server. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "handshake.h"
#include "log.h"
#include "net.h"

#define GATE_HANDSHAKE_MS 5000
/* Connections accepted per listener and wake-up: handshakes in progress
 * get their turn between batches. */
#define ACCEPT_BATCH 64
#define LOG_WINDOW_MS 10000

/* Threads that learn who clients of a shared server are: one for the
 * node's own (the kernel named them: NSS only), the others for TCP
 * clients (munged, then NSS), so that credentials munged is slow to decode
 * never hold up the node's own processes. */
#define IDENT_WORKERS 4

/* epoll tags beyond the slot indexes. */
enum { TAG_TCP = -1, TAG_UNIX = -2, TAG_SIGNAL = -3, TAG_IDENT = -4 };

struct pending {
    int fd;                           /* -1: free slot */
    int local;
    uint64_t peer_key;                /* address or uid, kind in the top bit */
    uint64_t seq;                     /* accept order: the oldest is evicted */
    int64_t deadline_ms;
    size_t got;
    uint8_t proof[HANDSHAKE_PROOF_SIZE];
    struct handshake hs;
    char peer[64];
    /* A server several users share (--owner): how much of the client's
     * IDENTITY (TCP; in the gate's ident_bufs) came, and who it proved
     * to be. */
    size_t ident_got;
    int identified;
    uid_t uid;
    gid_t gid;
    struct caller caller;
    /* Waiting for a worker's word on its identity (out of the loop's
     * watch meanwhile); the answer to send if it may in. */
    int identifying;
    uint8_t answer[HANDSHAKE_ANSWER_SIZE];
};

/* One client's identity, learnt by a worker: the job (its slot and
 * accept order, to find it again unless it was dropped meanwhile), then
 * the result. */
struct ident_job {
    struct ident_job *next;
    size_t slot;
    uint64_t seq;
    int local;
    struct handshake hs;
    char cred[HANDSHAKE_CRED_MAX + 1];
    int rc;
    uid_t uid;
    gid_t gid;
    struct caller caller;
    char why[400];
};

/* The workers' queues (todo[1]: local clients, todo[0]: TCP ones); done
 * is signalled on efd. */
struct idents {
    pthread_mutex_t lock;
    pthread_cond_t cv[2];
    struct ident_job *todo[2], *todo_tail[2], *done;
    int efd;
    struct server *srv;
};

struct ident_worker {
    struct idents *q;
    int local;
};

struct gate {
    struct server *srv;
    int epfd;
    struct pending *slots;
    unsigned nslots, used;
    uint64_t next_seq;
    struct idents *idents;            /* NULL: one job's server */
    /* HANDSHAKE_IDENTITY_MAX bytes per slot, a shared server's only: in
     * the slots themselves they were 1 MiB of every server's table (1,024
     * slots), all of it touched at start and torn down at exit. */
    uint8_t *ident_bufs;
};

static uint8_t *ident_of(const struct gate *g, const struct pending *p)
{
    return g->ident_bufs + (size_t)(p - g->slots) * HANDSHAKE_IDENTITY_MAX;
}

/* Budgets for the lines unauthenticated peers cause. */
static struct log_limit refused_log = LOG_LIMIT_INIT(5, LOG_WINDOW_MS);
static struct log_limit dropped_log = LOG_LIMIT_INIT(5, LOG_WINDOW_MS);
static struct log_limit full_log = LOG_LIMIT_INIT(5, LOG_WINDOW_MS);
/* Only peers holding the secret get this far: a larger budget. */
static struct log_limit denied_log = LOG_LIMIT_INIT(50, LOG_WINDOW_MS);

static void flush_logs(void)
{
    log_limit_flush(&refused_log);
    log_limit_flush(&dropped_log);
    log_limit_flush(&full_log);
    log_limit_flush(&denied_log);
}

/* Names and keys the peer: IPv4 address and port, or the uid and pid of a
 * process of this node. */
static void identify(struct pending *p)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (p->local && getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
        p->peer_key = 1ull << 63 | cred.uid;
        snprintf(p->peer, sizeof(p->peer), "local pid %d uid %u", (int)cred.pid,
                 (unsigned)cred.uid);
    } else if (!p->local && getpeername(p->fd, (struct sockaddr *)&sa, &sl) == 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
        p->peer_key = sa.sin_addr.s_addr;
        snprintf(p->peer, sizeof(p->peer), "%s:%d", ip, ntohs(sa.sin_port));
    } else {
        p->peer_key = 1ull << 62;   /* unknown: all such peers share one share */
        snprintf(p->peer, sizeof(p->peer), "fd %d", p->fd);
    }
}

static void release(struct gate *g, struct pending *p)
{
    if (p->fd >= 0) {
        epoll_ctl(g->epfd, EPOLL_CTL_DEL, p->fd, NULL);
        close(p->fd);
        g->used--;
    }
    p->fd = -1;
}

static void drop(struct gate *g, struct pending *p, const char *why)
{
    log_limited(&dropped_log, LOG_LEVEL_INFO, "dropped the connection of %s before it "
                "authenticated: %s", p->peer, why);
    release(g, p);
}

/* Sends a whole small message on a non-blocking socket whose buffer is
 * empty or nearly: it goes at once or the connection is not worth it. */
static int send_now(int fd, const void *buf, size_t len)
{
    ssize_t n;
    do
        n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EAGAIN;
}

/* The slot for a new connection of peer_key: a free one, unless the peer
 * has its share (then its oldest) or the table is full (the oldest of all),
 * whose handshake is dropped. */
static struct pending *slot_for(struct gate *g, uint64_t peer_key)
{
    struct pending *free_slot = NULL, *oldest = NULL, *peer_oldest = NULL;
    unsigned of_peer = 0;
    for (unsigned i = 0; i < g->nslots; i++) {
        struct pending *p = &g->slots[i];
        if (p->fd < 0) {
            if (!free_slot)
                free_slot = p;
            continue;
        }
        if (!oldest || p->seq < oldest->seq)
            oldest = p;
        if (p->peer_key == peer_key) {
            of_peer++;
            if (!peer_oldest || p->seq < peer_oldest->seq)
                peer_oldest = p;
        }
    }
    struct pending *victim = of_peer >= g->srv->handshakes_per_peer ? peer_oldest :
                             !free_slot ? oldest : NULL;
    if (victim) {
        drop(g, victim, of_peer >= g->srv->handshakes_per_peer
                        ? "evicted by a newer connection of the same peer (too many handshakes at once)"
                        : "evicted by a newer connection (too many handshakes at once)");
        return victim;
    }
    return free_slot;
}

/* Takes a new connection: a slot, the HELLO, and a place in the loop. */
static void admit(struct gate *g, int fd, int local)
{
    struct pending probe = { .fd = fd, .local = local };
    identify(&probe);
    struct pending *p = slot_for(g, probe.peer_key);
    *p = probe;
    p->seq = g->next_seq++;
    p->deadline_ms = net_now_ms() + GATE_HANDSHAKE_MS;
    g->used++;
    uint8_t hello[HANDSHAKE_HELLO_SIZE];
    int rc = handshake_server_hello(&p->hs, g->srv->index,
                                    g->srv->multiuser && !local ? HANDSHAKE_WANT_IDENTITY : 0,
                                    hello);
    if (rc < 0) {
        log_error("no random bytes for a handshake nonce: %s", strerror(-rc));
        release(g, p);
        return;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)(p - g->slots) };
    if ((rc = send_now(fd, hello, sizeof(hello))) < 0 ||
        (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && (rc = -errno)))
        drop(g, p, rc == -EAGAIN ? "the greeting did not fit its socket" : strerror(-rc));
}

static void accept_some(struct gate *g, int lfd, int local)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                log_limited(&full_log, LOG_LEVEL_WARN, "accept: %s", strerror(errno));
            else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                log_warn("accept: %s", strerror(errno));
            return;
        }
        admit(g, fd, local);
    }
}

/* The Slurm job of a process of this node (0: none), from the kernel's
 * record of its cgroups. */
static uint64_t job_of_pid(pid_t pid, uid_t uid)
{
    char name[64], line[1024];
    snprintf(name, sizeof(name), "/proc/%d/cgroup", (int)pid);
    FILE *fp = fopen(name, "re");
    if (!fp)
        return 0;
    uint64_t job = 0;
    while (!job && fgets(line, sizeof(line), fp)) {
        line[strcspn(line, "\n")] = '\0';
        char *path = strchr(line, ':');
        path = path ? strchr(path + 1, ':') : NULL;
        if (path)
            job = fair_job_of_cgroup(path + 1, uid);
    }
    fclose(fp);
    return job;
}

/* Who the client is, for fair sharing: on the Unix socket, the uid and
 * group the kernel gives and the Slurm job of its process; over TCP only
 * the instance's secret is proved, so it counts as the instance's own job
 * and user (job 0, this server's uid). */
static void client_of(struct server *srv, struct pending *p, struct fair_who *who)
{
    *who = (struct fair_who){ .job = 0, .uid = (uint32_t)getuid(), .gid = (uint32_t)getgid(),
                              .nodes = srv->nservers };
    if (p->identified && !p->local) {
        /* Proved by munge (access.c): the remote user is its own entity,
         * under the job policies too (no Slurm job id reaches 2^61). */
        who->uid = p->uid;
        who->gid = p->gid;
        who->job = 1ull << 61 | p->uid;
        return;
    }
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    if (!srv->fair || !p->local || getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
        return;
    who->uid = cred.uid;
    who->gid = cred.gid;
    who->job = job_of_pid(cred.pid, cred.uid);
    if (who->job)
        who->nodes = 1;   /* until the deployer says (--fair-jobs) */
    log_debug("%s shares this server as job %llu, uid %u, gid %u", p->peer,
              (unsigned long long)who->job, (unsigned)who->uid, (unsigned)who->gid);
}

/* The client proved itself: hands its connection to conn.c, if there is
 * room. */
static void authenticated(struct gate *g, struct pending *p, const uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    struct server *srv = g->srv;
    /* On a server several users share, one user's connections are bounded
     * first: else one user could hold every place and keep the others out. */
    unsigned held;
    int rc = p->identified ? access_hold(srv, p->uid, &held) : 0;
    if (rc < 0) {
        log_limited(&full_log, LOG_LEVEL_WARN, "refused %s: uid %u holds %u connections, this "
                    "server's most for one user (--max-clients-per-user)%s", p->peer,
                    (unsigned)p->uid, held, rc == -ENOMEM ? ": no memory to count them" : "");
        uint8_t refusal[HANDSHAKE_ANSWER_SIZE];
        handshake_server_refusal(-EUSERS, refusal);
        send_now(p->fd, refusal, sizeof(refusal));
        release(g, p);
        return;
    }
    unsigned clients = atomic_fetch_add(&srv->clients, 1);
    if (clients >= srv->max_clients) {
        atomic_fetch_sub(&srv->clients, 1);
        if (p->identified)
            access_release(srv, p->uid);
        /* Logged before the answer goes: whoever sees the answer finds
         * the line. */
        log_limited(&full_log, LOG_LEVEL_WARN, "refused %s: this server has its maximum of "
                    "%u clients (--max-clients)", p->peer, srv->max_clients);
        uint8_t refusal[HANDSHAKE_ANSWER_SIZE];
        handshake_server_refusal(-EUSERS, refusal);
        send_now(p->fd, refusal, sizeof(refusal));
        release(g, p);
        return;
    }
    rc = send_now(p->fd, answer, HANDSHAKE_ANSWER_SIZE);
    if (rc < 0) {
        atomic_fetch_sub(&srv->clients, 1);
        if (p->identified)
            access_release(srv, p->uid);
        drop(g, p, "it left during the handshake");
        return;
    }
    struct fair_who who;
    client_of(srv, p, &who);
    int fd = p->fd;
    epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, NULL);
    p->fd = -1;
    g->used--;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if ((rc = conn_start(srv, fd, p->local, p->peer, &who,
                         p->identified ? &p->caller : NULL)) < 0) {
        atomic_fetch_sub(&srv->clients, 1);
        if (p->identified)
            access_release(srv, p->uid);
        log_error("cannot serve the connection of %s: %s", p->peer, strerror(-rc));
        close(fd);
    }
}

/* Reads what came of the IDENTITY a client sends after its PROOF: 1 once
 * whole, 0 while more is due, -errno (-EBADMSG: a bad length). */
static int read_identity(struct pending *p, uint8_t *ident)
{
    for (;;) {
        int need = handshake_identity_size(ident, p->ident_got);
        if (need < 0)
            return need;
        if (need > 4 && p->ident_got == (size_t)need)
            return 1;
        ssize_t n;
        do
            n = recv(p->fd, ident + p->ident_got, (size_t)need - p->ident_got, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0)
            return n == 0 ? -ECONNRESET : -errno;
        p->ident_got += (size_t)n;
    }
}

/* A worker: the identity of each job of its queue (access.c: munged,
 * NSS). */
static void *ident_worker(void *arg)
{
    struct idents *q = ((struct ident_worker *)arg)->q;
    int k = ((struct ident_worker *)arg)->local;
    free(arg);
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (!q->todo[k])
            pthread_cond_wait(&q->cv[k], &q->lock);
        struct ident_job *j = q->todo[k];
        q->todo[k] = j->next;
        if (!q->todo[k])
            q->todo_tail[k] = NULL;
        pthread_mutex_unlock(&q->lock);
        j->rc = j->local ? 0 : access_identify(q->srv, -1, 0, &j->hs, j->cred, &j->uid, &j->gid,
                                               j->why, sizeof(j->why));
        if (j->rc == 0)
            j->rc = access_admit(q->srv, j->uid, j->gid, &j->caller, j->why, sizeof(j->why));
        pthread_mutex_lock(&q->lock);
        j->next = q->done;
        q->done = j;
        pthread_mutex_unlock(&q->lock);
        uint64_t one = 1;
        if (write(q->efd, &one, sizeof(one)) < 0)
            log_warn("identity workers: cannot wake the gate: %s", strerror(errno));
    }
    return NULL;
}

/* The workers and their queues, for a server several users share. */
static struct idents *idents_start(struct server *srv, char *err, size_t errlen)
{
    struct idents *q = calloc(1, sizeof(*q));
    if (!q || (q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "identity workers: %s", q ? strerror(errno) : "no memory");
        free(q);
        return NULL;
    }
    q->srv = srv;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cv[0], NULL);
    pthread_cond_init(&q->cv[1], NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started[2] = { 0, 0 };
    for (int i = 0; i < IDENT_WORKERS; i++) {
        pthread_t t;
        struct ident_worker *w = malloc(sizeof(*w));
        if (!w)
            break;
        *w = (struct ident_worker){ .q = q, .local = i == 0 };
        if (pthread_create(&t, &attr, ident_worker, w) == 0)
            started[i == 0]++;   /* w is the thread's now */
        else
            free(w);
    }
    pthread_attr_destroy(&attr);
    if (!started[0] || !started[1]) {
        snprintf(err, errlen, "identity workers: no thread");
        close(q->efd);
        free(q);
        return NULL;
    }
    return q;
}

/* A server several users share (--owner): the client proved the secret;
 * a worker learns who it is and whether it may in (identified). The
 * kernel's word on a local peer is taken here: the descriptor is the
 * loop's. */
static void identify_later(struct gate *g, struct pending *p,
                           const uint8_t answer[HANDSHAKE_ANSWER_SIZE])
{
    struct ident_job *j = calloc(1, sizeof(*j));
    if (!j) {
        drop(g, p, "no memory to learn its identity");
        return;
    }
    j->slot = (size_t)(p - g->slots);
    j->seq = p->seq;
    j->local = p->local;
    j->hs = p->hs;
    int rc = p->local ? access_identify(g->srv, p->fd, 1, &p->hs, "", &j->uid, &j->gid, j->why,
                                        sizeof(j->why))
                      : handshake_identity_cred(ident_of(g, p), p->ident_got, j->cred);
    if (rc < 0) {
        if (!p->local)
            snprintf(j->why, sizeof(j->why), "its identity message holds a NUL");
        log_limited(&denied_log, LOG_LEVEL_WARN, "refused %s: %s", p->peer, j->why);
        free(j);
        uint8_t deny[HANDSHAKE_ANSWER_SIZE];
        memcpy(deny, answer, sizeof(deny));
        handshake_server_deny(deny);
        send_now(p->fd, deny, sizeof(deny));
        release(g, p);
        return;
    }
    memcpy(p->answer, answer, HANDSHAKE_ANSWER_SIZE);
    p->identifying = 1;
    epoll_ctl(g->epfd, EPOLL_CTL_DEL, p->fd, NULL);   /* it waits for our answer */
    struct idents *q = g->idents;
    int k = p->local;
    pthread_mutex_lock(&q->lock);
    if (q->todo_tail[k])
        q->todo_tail[k]->next = j;
    else
        q->todo[k] = j;
    q->todo_tail[k] = j;
    pthread_cond_signal(&q->cv[k]);
    pthread_mutex_unlock(&q->lock);
}

/* The workers' answers: each client still waiting is let in, or refused
 * with a warning naming peer and uid and EACCES (with our MAC: the client
 * tells it from a wrong secret). */
static void identified(struct gate *g)
{
    struct idents *q = g->idents;
    uint64_t n;
    if (read(q->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_warn("identity workers: %s", strerror(errno));
    pthread_mutex_lock(&q->lock);
    struct ident_job *done = q->done;
    q->done = NULL;
    pthread_mutex_unlock(&q->lock);
    while (done) {
        struct ident_job *j = done;
        done = j->next;
        struct pending *p = &g->slots[j->slot];
        if (p->fd >= 0 && p->identifying && p->seq == j->seq) {
            p->identifying = 0;
            if (j->rc == 0) {
                p->identified = 1;
                p->uid = j->uid;
                p->gid = j->gid;
                p->caller = j->caller;
                authenticated(g, p, p->answer);
            } else {
                log_limited(&denied_log, LOG_LEVEL_WARN, "refused %s: %s", p->peer, j->why);
                handshake_server_deny(p->answer);
                send_now(p->fd, p->answer, HANDSHAKE_ANSWER_SIZE);
                release(g, p);
            }
        }
        free(j);
    }
}

/* Reads what came of a client's PROOF (and IDENTITY, when asked); once
 * whole, answers it. */
static void on_readable(struct gate *g, struct pending *p)
{
    if (p->got < sizeof(p->proof)) {
        ssize_t n;
        do
            n = recv(p->fd, p->proof + p->got, sizeof(p->proof) - p->got, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            drop(g, p, n == 0 ? "it hung up" : strerror(errno));
            return;
        }
        p->got += (size_t)n;
        if (p->got < sizeof(p->proof))
            return;
    }
    if (p->hs.flags & HANDSHAKE_WANT_IDENTITY) {
        int rc = read_identity(p, ident_of(g, p));
        if (rc <= 0) {
            if (rc < 0)
                drop(g, p, rc == -EBADMSG ? "its identity message has a bad length"
                           : rc == -ECONNRESET ? "it hung up" : strerror(-rc));
            return;
        }
    }
    uint8_t answer[HANDSHAKE_ANSWER_SIZE];
    if (handshake_server_answer(&p->hs, g->srv->secret, p->proof, answer) < 0) {
        log_limited(&refused_log, LOG_LEVEL_WARN, "refused %s: wrong proof of the "
                    "instance's secret", p->peer);
        send_now(p->fd, answer, sizeof(answer));
        release(g, p);
        return;
    }
    if (g->srv->multiuser)
        identify_later(g, p, answer);
    else
        authenticated(g, p, answer);
}

/* Drops handshakes past their deadline; returns the ms until the next one
 * is due (-1: none). */
static int expire(struct gate *g, int64_t now)
{
    int64_t next = -1;
    for (unsigned i = 0; g->used && i < g->nslots; i++) {
        struct pending *p = &g->slots[i];
        if (p->fd < 0)
            continue;
        if (p->deadline_ms <= now) {
            drop(g, p, "no proof of the instance's secret in time");
            continue;
        }
        if (next < 0 || p->deadline_ms - now < next)
            next = p->deadline_ms - now;
    }
    return (int)next;
}

/* Adds fd to the loop; a listener is made non-blocking, as accept_some
 * takes connections until none is left. */
static int watch(int epfd, int fd, int tag)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)(int64_t)tag };
    if (fd < 0)
        return 0;
    if (tag != TAG_SIGNAL && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
        return -1;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int gate_run(struct server *srv, int lfd, int ufd, int sfd)
{
    struct gate g = { .srv = srv, .nslots = srv->handshakes_max };
    g.slots = calloc(g.nslots, sizeof(*g.slots));
    g.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!g.slots || g.epfd < 0 || watch(g.epfd, lfd, TAG_TCP) < 0 ||
        watch(g.epfd, ufd, TAG_UNIX) < 0 || watch(g.epfd, sfd, TAG_SIGNAL) < 0) {
        int rc = g.slots ? -errno : -ENOMEM;
        free(g.slots);
        if (g.epfd >= 0)
            close(g.epfd);
        return rc;
    }
    for (unsigned i = 0; i < g.nslots; i++)
        g.slots[i].fd = -1;
    if (srv->multiuser) {
        char err[256];
        if (!(g.ident_bufs = calloc(g.nslots, HANDSHAKE_IDENTITY_MAX))) {
            log_error("no memory for %u identity buffers", g.nslots);
            free(g.slots);
            close(g.epfd);
            return -ENOMEM;
        }
        if (!(g.idents = idents_start(srv, err, sizeof(err))) ||
            watch(g.epfd, g.idents->efd, TAG_IDENT) < 0) {
            log_error("%s", g.idents ? strerror(errno) : err);
            free(g.ident_bufs);
            free(g.slots);
            close(g.epfd);
            return -ENOMEM;
        }
    }
    int64_t flushed_ms = net_now_ms();
    int rc = 0;
    for (;;) {
        int64_t now = net_now_ms();
        int timeout = expire(&g, now);
        int64_t to_flush = flushed_ms + LOG_WINDOW_MS - now;
        if (to_flush <= 0) {
            flush_logs();
            flushed_ms = now;
            to_flush = LOG_WINDOW_MS;
        }
        if (timeout < 0 || timeout > to_flush)
            timeout = (int)to_flush;
        struct epoll_event evs[128];
        int n = epoll_wait(g.epfd, evs, 128, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            log_error("epoll_wait: %s", strerror(errno));
            break;
        }
        /* Handshakes first, then new connections: one batch of newcomers
         * cannot evict a handshake whose proof is already waiting. */
        int listeners = 0, stop = 0;
        for (int i = 0; i < n; i++) {
            int64_t tag = (int64_t)evs[i].data.u64;
            if (tag >= 0 && g.slots[tag].fd >= 0)
                on_readable(&g, &g.slots[tag]);
            else if (tag == TAG_SIGNAL)
                stop = 1;
            else if (tag == TAG_IDENT)
                identified(&g);
            else if (tag < 0)
                listeners |= tag == TAG_TCP ? 1 : 2;
        }
        if (stop) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == sizeof(si))
                log_info("signal %u: stopping", si.ssi_signo);
            break;
        }
        if (listeners & 1)
            accept_some(&g, lfd, 0);
        if (listeners & 2)
            accept_some(&g, ufd, 1);
    }
    flush_logs();
    for (unsigned i = 0; i < g.nslots; i++)
        release(&g, &g.slots[i]);
    free(g.slots);
    free(g.ident_bufs);
    close(g.epfd);
    return rc;
}
