#include "agent_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_proto.h"
#include "net.h"
#include "rpc_io.h"
#include "stage_report.h"

#define THREAD_STACK (256u << 10)
/* Credentials opened at once. Each node's agent opens its hello's with its
 * own node's munged; here every simulated node shares one, whose socket
 * backlog thousands of hellos at once overflow: libmunge then fails with
 * EAGAIN, the agent refuses the hello and the client backs off for
 * seconds, which no real agent would make it do. More than munged's few
 * threads would not open them faster. */
#define OPENS_AT_ONCE 16

struct sim_job {
    uint32_t id;
    int state;                   /* enum agent_op_state */
    int64_t ends_at;
    int exit_status;
    uint32_t worker, nworkers, direction;
    char source[256], destination[256];
    struct sim_job *next;
};

struct sim_node {
    char name[64];
    int lfd, port;
    struct agent_sim_node set;
    struct sim_job *jobs;
    /* Its jobs or settings changed: only this node's waiting requests
     * (START's delay, WATCH) wake, not every node's. */
    pthread_cond_t changed;
};

struct agent_sim {
    const struct session_auth *auth;   /* the caller's */
    struct session_auth gated;         /* auth, its opens OPENS_AT_ONCE at a time */
    pthread_mutex_t gate_lock;
    pthread_cond_t gate_free;
    int opening;
    uid_t trusted;
    char host[64];
    int nnodes;
    struct sim_node *nodes;
    int epfd, evfd;
    /* Closed (the write end) when the simulation stops: every connection
     * thread blocks in poll on its socket and this, with no timeout, so an
     * idle session costs nothing (4,096 threads polling every 100 ms cost
     * the simulator more CPU than the plugin it serves). */
    int stop_rd, stop_wr;
    pthread_t acceptor;
    pthread_mutex_t lock;        /* nodes' settings and jobs, threads, stats */
    pthread_cond_t changed;      /* a thread ended or a session dropped a reference */
    bool stopping;
    int threads;                 /* connection and request threads alive */
    struct agent_sim_stats stats;
};

/* One session: its connection thread and its request threads share it. */
struct sim_session {
    struct agent_sim *sim;
    int node;
    struct agent_session s;
    pthread_mutex_t send_lock;
    int refs;                    /* under sim->lock */
};

struct sim_request {
    struct sim_session *ss;
    struct session_msg m;
};

static int64_t now_ms(void)
{
    return net_now_ms();
}

static int gated_seal(const struct session_auth *a, const void *payload, size_t len, uid_t reader,
                      char **cred, char *err, size_t errlen)
{
    const struct agent_sim *sim = a->data;
    return sim->auth->seal(sim->auth, payload, len, reader, cred, err, errlen);
}

static int gated_open(const struct session_auth *a, const char *cred, void **payload, size_t *len,
                      uid_t *uid, char *err, size_t errlen)
{
    struct agent_sim *sim = (struct agent_sim *)a->data;
    pthread_mutex_lock(&sim->gate_lock);
    while (sim->opening >= OPENS_AT_ONCE)
        pthread_cond_wait(&sim->gate_free, &sim->gate_lock);
    sim->opening++;
    pthread_mutex_unlock(&sim->gate_lock);
    int rc = sim->auth->open(sim->auth, cred, payload, len, uid, err, errlen);
    pthread_mutex_lock(&sim->gate_lock);
    sim->opening--;
    pthread_cond_signal(&sim->gate_free);
    pthread_mutex_unlock(&sim->gate_lock);
    return rc;
}

static void thread_done(struct agent_sim *sim)
{
    pthread_mutex_lock(&sim->lock);
    sim->threads--;
    pthread_cond_broadcast(&sim->changed);
    pthread_mutex_unlock(&sim->lock);
}

static int spawn(struct agent_sim *sim, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&sim->lock);
    sim->threads++;
    pthread_mutex_unlock(&sim->lock);
    pthread_t t;
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        thread_done(sim);
    return rc;
}

/* Sleeps until `until` (ms), or less if the simulation stops or node n
 * changes. sim->lock held. */
static void nap_locked(struct agent_sim *sim, struct sim_node *n, int64_t until)
{
    while (!sim->stopping && now_ms() < until) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t left = until - now_ms();
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&n->changed, &sim->lock, &ts);
    }
}

static struct sim_job *find_job(struct sim_node *n, uint32_t id)
{
    for (struct sim_job *j = n->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

static void refuse(struct rpc_writer *body, struct sim_node *n, uint32_t fault, const char *what)
{
    struct agent_error e = { .fault = fault };
    snprintf(e.text, sizeof(e.text), "node %s: %s", n->name, what);
    agent_error_put(body, &e);
}

static int stage_status(struct sim_job *j, struct rpc_writer *body)
{
    if (j->state == AGENT_OP_RUNNING && now_ms() >= j->ends_at)
        j->state = AGENT_OP_DONE;
    char *summary = NULL;
    if (j->state == AGENT_OP_DONE) {
        struct stage_report_failure f = { j->source, ENOENT, "No such file or directory",
                                          "open source" };
        struct stage_report r = {
            .direction = j->direction == AGENT_STAGE_IN ? "in" : "out", .source = j->source,
            .destination = j->destination, .worker = j->worker, .workers = j->nworkers,
            .files = 10, .bytes = 10 << 20, .errors = j->exit_status ? 1 : 0,
            .complete = j->exit_status == 0, .failures = j->exit_status ? &f : NULL,
            .nfailures = j->exit_status ? 1 : 0,
        };
        summary = stage_report_encode(&r);
    }
    agent_stage_status_put(body, &(struct agent_stage_status){
        .state = (uint32_t)j->state, .exit_status = j->exit_status,
        .summary = summary ? summary : "", .errors = "" });
    free(summary);
    return 0;
}

/* Runs one request as the node's agent would; sim->lock held. */
static int handle(struct agent_sim *sim, struct sim_node *n, int index, uint16_t op,
                  struct rpc_reader *r, struct rpc_writer *body)
{
    sim->stats.by_op[op < 16 ? op : 0]++;
    switch (op) {
    case AGENT_PING:
        rpc_put_str(body, n->name);
        return 0;
    case AGENT_START: {
        struct agent_start m;
        if (agent_start_get(r, &m) < 0)
            return refuse(body, n, AGENT_FAULT_JOB, "malformed start request"), -EBADMSG;
        if (n->set.mode == SIM_NODE_FAULT)
            return refuse(body, n, AGENT_FAULT_NODE, "storage root unusable (simulated)"), -EIO;
        if (n->set.mode == SIM_JOB_FAULT)
            return refuse(body, n, AGENT_FAULT_JOB, "refusing the job (simulated)"), -EINVAL;
        if (n->set.mode == SIM_EXITING)
            return refuse(body, n, AGENT_FAULT_TRANSIENT,
                          "server did not start: it exited (simulated)"), -ECHILD;
        nap_locked(sim, n, now_ms() + n->set.start_ms);
        if (!find_job(n, m.job_id)) {
            struct sim_job *j = calloc(1, sizeof(*j));
            if (!j)
                return refuse(body, n, AGENT_FAULT_TRANSIENT, "out of memory"), -ENOMEM;
            j->id = m.job_id;
            j->next = n->jobs;
            n->jobs = j;
        }
        agent_started_put(body, &(struct agent_started){ (uint32_t)(20000 + index % 40000), 4242 });
        return 0;
    }
    case AGENT_CONFIGURE: {
        struct agent_configure m;
        if (agent_configure_get(r, &m) < 0)
            return refuse(body, n, AGENT_FAULT_JOB, "malformed configure request"), -EBADMSG;
        if (!find_job(n, m.job_id))
            return refuse(body, n, AGENT_FAULT_TRANSIENT, "not deployed here"), -ENOENT;
        return 0;
    }
    case AGENT_STAGE: {
        struct agent_stage m;
        if (agent_stage_get(r, &m) < 0)
            return refuse(body, n, AGENT_FAULT_JOB, "malformed stage request"), -EBADMSG;
        struct sim_job *j = find_job(n, m.job_id);
        if (!j)
            return refuse(body, n, AGENT_FAULT_TRANSIENT, "not deployed here"), -ENOENT;
        if (j->state == AGENT_OP_RUNNING && now_ms() < j->ends_at)
            return refuse(body, n, AGENT_FAULT_TRANSIENT, "a stage is already running"), -EBUSY;
        j->state = AGENT_OP_RUNNING;
        j->ends_at = now_ms() + n->set.stage_ms;
        j->exit_status = n->set.mode == SIM_STAGE_FAILS ? 1 : 0;
        j->worker = m.worker;
        j->nworkers = m.nworkers;
        j->direction = m.direction;
        snprintf(j->source, sizeof(j->source), "%s", m.source);
        snprintf(j->destination, sizeof(j->destination), "%s", m.destination);
        pthread_cond_broadcast(&n->changed);
        return 0;
    }
    case AGENT_STATUS:
    case AGENT_WATCH: {
        uint32_t id, known = AGENT_OP_NONE;
        int64_t until = now_ms();
        if (op == AGENT_STATUS) {
            struct agent_job_ref m;
            if (agent_job_ref_get(r, &m) < 0)
                return refuse(body, n, AGENT_FAULT_JOB, "malformed status request"), -EBADMSG;
            id = m.job_id;
        } else {
            struct agent_watch m;
            if (agent_watch_get(r, &m) < 0)
                return refuse(body, n, AGENT_FAULT_JOB, "malformed watch request"), -EBADMSG;
            id = m.job_id;
            known = m.known;
            until += m.hold_ms;
        }
        for (;;) {
            struct sim_job *j = find_job(n, id);
            if (!j)
                return refuse(body, n, AGENT_FAULT_TRANSIENT, "not deployed here"), -ENOENT;
            if (j->state == AGENT_OP_RUNNING && now_ms() >= j->ends_at)
                j->state = AGENT_OP_DONE;
            if (op == AGENT_STATUS || j->state != (int)known || now_ms() >= until || sim->stopping)
                return stage_status(j, body);
            int64_t next = j->state == AGENT_OP_RUNNING && j->ends_at < until ? j->ends_at : until;
            nap_locked(sim, n, next);
        }
    }
    case AGENT_TEARDOWN: {
        struct agent_job_ref m;
        if (agent_job_ref_get(r, &m) < 0)
            return refuse(body, n, AGENT_FAULT_JOB, "malformed teardown request"), -EBADMSG;
        for (struct sim_job **p = &n->jobs; *p; p = &(*p)->next)
            if ((*p)->id == m.job_id) {
                struct sim_job *gone = *p;
                *p = gone->next;
                free(gone);
                break;
            }
        pthread_cond_broadcast(&n->changed);
        return 0;
    }
    }
    return refuse(body, n, AGENT_FAULT_JOB, "unknown request"), -EOPNOTSUPP;
}

static void session_put(struct sim_session *ss)
{
    struct agent_sim *sim = ss->sim;
    pthread_mutex_lock(&sim->lock);
    bool last = --ss->refs == 0;
    pthread_cond_broadcast(&sim->changed);
    pthread_mutex_unlock(&sim->lock);
    if (last) {
        agent_session_close(&ss->s);
        pthread_mutex_destroy(&ss->send_lock);
        free(ss);
    }
}

/* Handles q and sends its answer; frees q. sim->lock held on entry if
 * locked, never on return. */
static void answer(struct sim_request *q, bool locked)
{
    struct sim_session *ss = q->ss;
    struct agent_sim *sim = ss->sim;
    struct rpc_writer body;
    rpc_writer_init(&body, NULL, 0);
    struct rpc_reader r;
    rpc_reader_init(&r, q->m.body, q->m.len);
    if (!locked)
        pthread_mutex_lock(&sim->lock);
    int status = handle(sim, &sim->nodes[ss->node], ss->node, q->m.op, &r, &body);
    pthread_mutex_unlock(&sim->lock);
    pthread_mutex_lock(&ss->send_lock);
    if (agent_session_send_id(&ss->s, q->m.op, q->m.id, status, body.data, body.len,
                              now_ms() + 10000) == 0) {
        pthread_mutex_lock(&sim->lock);
        sim->stats.answers++;
        pthread_mutex_unlock(&sim->lock);
    }
    pthread_mutex_unlock(&ss->send_lock);
    rpc_writer_free(&body);
    free(q->m.plain);
    free(q);
}

static void *run_request(void *arg)
{
    struct sim_request *q = arg;
    struct sim_session *ss = q->ss;
    struct agent_sim *sim = ss->sim;
    answer(q, false);
    session_put(ss);
    thread_done(sim);
    return NULL;
}

/* Whether a request would wait (a WATCH held, a START delayed): it gets a
 * thread of its own, as on the agent, so the session's other requests are
 * answered meanwhile. The rest are answered at once by the connection's
 * thread, still under the lock this was decided under: a thread each cost
 * the simulator more than its answers. sim->lock held. */
static bool may_wait(const struct sim_session *ss, const struct session_msg *m)
{
    const struct sim_node *n = &ss->sim->nodes[ss->node];
    if (m->op == AGENT_START)
        return n->set.start_ms > 0;
    if (m->op != AGENT_WATCH)
        return false;
    /* A WATCH waits only while its job's state is the one the client
     * knows (handle's test, without changing the job). */
    struct rpc_reader r;
    rpc_reader_init(&r, m->body, m->len);
    struct agent_watch w;
    if (agent_watch_get(&r, &w) < 0 || w.hold_ms == 0)
        return false;
    for (const struct sim_job *j = n->jobs; j; j = j->next)
        if (j->id == w.job_id) {
            int state = j->state == AGENT_OP_RUNNING && now_ms() >= j->ends_at ? AGENT_OP_DONE
                                                                              : j->state;
            return state == (int)w.known;
        }
    return false;
}

struct sim_conn {
    struct agent_sim *sim;
    int node, fd;
};

/* Waits until fd can be read or the simulation stops: false when it stops. */
static bool wait_readable(struct agent_sim *sim, int fd)
{
    for (;;) {
        struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sim->stop_rd, .events = POLLIN } };
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        return n > 0 && !p[1].revents;
    }
}

/* Waits until the peer closes fd or the simulation stops. */
static void hold_open(struct agent_sim *sim, int fd)
{
    while (wait_readable(sim, fd) && recv(fd, (char[512]){ 0 }, 512, 0) > 0)
        ;
}

static void *serve_conn(void *arg)
{
    struct sim_conn c = *(struct sim_conn *)arg;
    free(arg);
    struct agent_sim *sim = c.sim;
    pthread_mutex_lock(&sim->lock);
    struct agent_sim_node set = sim->nodes[c.node].set;
    char name[64];
    snprintf(name, sizeof(name), "%s", sim->nodes[c.node].name);
    sim->stats.connections++;
    pthread_mutex_unlock(&sim->lock);
    net_set_timeouts(c.fd, 1000);
    char *cred = NULL;
    if (set.mode == SIM_SILENT || agent_session_recv_hello(c.fd, &cred, now_ms() + 5000) < 0) {
        hold_open(sim, c.fd);
        close(c.fd);
        free(cred);
        thread_done(sim);
        return NULL;
    }
    if (set.mode == SIM_SQUATTER || set.mode == SIM_GARBAGE) {
        char text[128];
        snprintf(text, sizeof(text), "node %s: storage root unusable: drain me", name);
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        rpc_put_str(&w, text);
        struct rpc_header h = { .opcode = SESSION_OP_HELLO, .status = -EIO };
        static const char junk[RPC_HEADER_SIZE + 8] = "HTTP/1.0 400 Bad Request\r\n\r\n";
        if (set.mode == SIM_SQUATTER)
            rpc_send(c.fd, &h, w.data, w.len, now_ms() + 5000);
        else
            net_write_full(c.fd, junk, sizeof(junk), now_ms() + 5000);
        rpc_writer_free(&w);
        free(cred);
        close(c.fd);
        thread_done(sim);
        return NULL;
    }
    struct sim_session *ss = calloc(1, sizeof(*ss));
    char why[600];
    if (!ss || agent_session_accept(&ss->s, c.fd, &sim->gated, name, sim->trusted, cred,
                                    now_ms() + 5000, why, sizeof(why)) < 0) {
        free(cred);
        free(ss);
        close(c.fd);
        thread_done(sim);
        return NULL;
    }
    free(cred);
    ss->sim = sim;
    ss->node = c.node;
    ss->refs = 1;
    pthread_mutex_init(&ss->send_lock, NULL);
    pthread_mutex_lock(&sim->lock);
    sim->stats.sessions++;
    pthread_mutex_unlock(&sim->lock);
    if (set.mode == SIM_BUSY) {
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        struct agent_error e = { .fault = AGENT_FAULT_TRANSIENT };
        snprintf(e.text, sizeof(e.text), "node %s: the agent serves 64 sessions already: try again",
                 name);
        agent_error_put(&w, &e);
        agent_session_send(&ss->s, 0, -EBUSY, w.data, w.len, now_ms() + 5000);
        rpc_writer_free(&w);
        session_put(ss);
        thread_done(sim);
        return NULL;
    }
    for (int requests = 0;;) {
        if (!wait_readable(sim, ss->s.fd))
            break;
        struct sim_request *q = calloc(1, sizeof(*q));
        if (!q || agent_session_recv(&ss->s, &q->m, AGENT_MAX_BODY, now_ms() + 10000) < 0) {
            free(q);
            break;
        }
        pthread_mutex_lock(&sim->lock);
        sim->stats.requests++;
        pthread_mutex_unlock(&sim->lock);
        if (set.mode == SIM_MUTE || (set.drop_after > 0 && ++requests >= set.drop_after)) {
            free(q->m.plain);
            free(q);
            if (set.mode == SIM_MUTE)
                continue;
            /* An agent that went away with this request and those after it
             * unanswered, once the ones before are. */
            pthread_mutex_lock(&sim->lock);
            while (ss->refs > 1)
                pthread_cond_wait(&sim->changed, &sim->lock);
            pthread_mutex_unlock(&sim->lock);
            break;
        }
        q->ss = ss;
        pthread_mutex_lock(&sim->lock);
        if (!may_wait(ss, &q->m)) {
            answer(q, true);
            continue;
        }
        ss->refs++;
        pthread_mutex_unlock(&sim->lock);
        if (spawn(sim, run_request, q) != 0) {
            free(q->m.plain);
            free(q);
            session_put(ss);
        }
    }
    shutdown(ss->s.fd, SHUT_RDWR);
    session_put(ss);
    thread_done(sim);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct agent_sim *sim = arg;
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(sim->epfd, evs, 64, 200);
        pthread_mutex_lock(&sim->lock);
        bool stop = sim->stopping;
        pthread_mutex_unlock(&sim->lock);
        if (stop)
            break;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u32 == UINT32_MAX) {
                uint64_t v;
                ssize_t got = read(sim->evfd, &v, sizeof(v));
                (void)got;
                continue;
            }
            int node = (int)evs[i].data.u32;
            pthread_mutex_lock(&sim->lock);
            int lfd = sim->nodes[node].lfd;
            pthread_mutex_unlock(&sim->lock);
            int fd = lfd >= 0 ? accept4(lfd, NULL, NULL, SOCK_CLOEXEC) : -1;
            if (fd < 0)
                continue;
            struct sim_conn *c = malloc(sizeof(*c));
            if (!c) {
                close(fd);
                continue;
            }
            *c = (struct sim_conn){ sim, node, fd };
            if (spawn(sim, serve_conn, c) != 0) {
                close(fd);
                free(c);
            }
        }
    }
    return NULL;
}

static int open_port(struct agent_sim *sim, int i, int port, char *err, size_t errlen)
{
    struct sim_node *n = &sim->nodes[i];
    int lfd = net_listen(sim->host, port, 1024, &n->port, err, errlen);
    if (lfd < 0)
        return lfd;
    n->lfd = lfd;
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
    epoll_ctl(sim->epfd, EPOLL_CTL_ADD, lfd, &ev);
    return 0;
}

struct agent_sim *agent_sim_start(const struct session_auth *auth, uid_t trusted,
                                  const char *host, int nnodes, const char *prefix,
                                  const struct agent_sim_node *all, char *err, size_t errlen)
{
    struct agent_sim *sim = calloc(1, sizeof(*sim));
    if (!sim || !(sim->nodes = calloc((size_t)nnodes, sizeof(*sim->nodes)))) {
        free(sim);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int stop[2];
    if (pipe2(stop, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(sim->nodes);
        free(sim);
        return NULL;
    }
    sim->stop_rd = stop[0];
    sim->stop_wr = stop[1];
    sim->auth = auth;
    sim->gated = (struct session_auth){ gated_seal, gated_open, sim };
    pthread_mutex_init(&sim->gate_lock, NULL);
    pthread_cond_init(&sim->gate_free, NULL);
    sim->trusted = trusted;
    snprintf(sim->host, sizeof(sim->host), "%s", host);
    sim->nnodes = nnodes;
    pthread_mutex_init(&sim->lock, NULL);
    pthread_cond_init(&sim->changed, NULL);
    for (int i = 0; i < nnodes; i++)
        pthread_cond_init(&sim->nodes[i].changed, NULL);
    sim->epfd = epoll_create1(EPOLL_CLOEXEC);
    sim->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
    epoll_ctl(sim->epfd, EPOLL_CTL_ADD, sim->evfd, &ev);
    for (int i = 0; i < nnodes; i++) {
        struct sim_node *n = &sim->nodes[i];
        snprintf(n->name, sizeof(n->name), "%s%d", prefix, i);
        n->set = *all;
        n->lfd = -1;
        if (open_port(sim, i, 0, err, errlen) < 0) {
            sim->nnodes = i;
            agent_sim_stop(sim);
            return NULL;
        }
        if (all->mode == SIM_DOWN) {
            close(n->lfd);   /* the port stays known, nothing listens */
            n->lfd = -1;
        }
    }
    if (pthread_create(&sim->acceptor, NULL, accept_main, sim) != 0) {
        snprintf(err, errlen, "cannot start a thread");
        agent_sim_stop(sim);
        return NULL;
    }
    return sim;
}

void agent_sim_stop(struct agent_sim *sim)
{
    if (!sim)
        return;
    pthread_mutex_lock(&sim->lock);
    bool started = !sim->stopping && sim->epfd >= 0;
    sim->stopping = true;
    pthread_cond_broadcast(&sim->changed);
    for (int i = 0; i < sim->nnodes; i++)
        pthread_cond_broadcast(&sim->nodes[i].changed);
    if (sim->stop_wr >= 0)
        close(sim->stop_wr);
    sim->stop_wr = -1;
    pthread_mutex_unlock(&sim->lock);
    uint64_t one = 1;
    ssize_t n = write(sim->evfd, &one, sizeof(one));
    (void)n;
    if (started && sim->acceptor)
        pthread_join(sim->acceptor, NULL);
    pthread_mutex_lock(&sim->lock);
    while (sim->threads > 0)
        pthread_cond_wait(&sim->changed, &sim->lock);
    pthread_mutex_unlock(&sim->lock);
    for (int i = 0; i < sim->nnodes; i++) {
        if (sim->nodes[i].lfd >= 0)
            close(sim->nodes[i].lfd);
        for (struct sim_job *j = sim->nodes[i].jobs, *next; j; j = next) {
            next = j->next;
            free(j);
        }
        pthread_cond_destroy(&sim->nodes[i].changed);
    }
    close(sim->epfd);
    close(sim->evfd);
    close(sim->stop_rd);
    pthread_cond_destroy(&sim->changed);
    pthread_mutex_destroy(&sim->lock);
    pthread_cond_destroy(&sim->gate_free);
    pthread_mutex_destroy(&sim->gate_lock);
    free(sim->nodes);
    free(sim);
}

const char *agent_sim_name(const struct agent_sim *sim, int node)
{
    return sim->nodes[node].name;
}

int agent_sim_port(const struct agent_sim *sim, int node)
{
    return sim->nodes[node].port;
}

void agent_sim_set(struct agent_sim *sim, int node, const struct agent_sim_node *set)
{
    char err[256];
    pthread_mutex_lock(&sim->lock);
    struct sim_node *n = &sim->nodes[node];
    n->set = *set;
    if (set->mode == SIM_DOWN && n->lfd >= 0) {
        epoll_ctl(sim->epfd, EPOLL_CTL_DEL, n->lfd, NULL);
        close(n->lfd);
        n->lfd = -1;
    } else if (set->mode != SIM_DOWN && n->lfd < 0) {
        open_port(sim, node, n->port, err, sizeof(err));
    }
    pthread_cond_broadcast(&n->changed);
    pthread_mutex_unlock(&sim->lock);
}

void agent_sim_stats(struct agent_sim *sim, struct agent_sim_stats *out)
{
    pthread_mutex_lock(&sim->lock);
    *out = sim->stats;
    pthread_mutex_unlock(&sim->lock);
}
