/* qos: see qos.h. */
#include "qos.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "qos_attach.h"
#include "qos_proto.h"
#include "qos_seg.h"

#define BEAT_MS 1000
#define ATTACH_TIMEOUT_MS 200
/* How often a waiting AGENT_QOS looks whether its session is over. */
#define ANSWER_SLICE_MS 100

/* One job's budget on this node. The table is sorted by job id. */
struct qjob {
    uint32_t job_id;
    uid_t uid;
    int fd;
    struct qos_seg *seg;
    unsigned missing;      /* cycles since qosd last named the job */
    bool provisional;      /* made at a process's request, not yet named by qosd */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct qjob *jobs;
static size_t njobs;
/* The cycle whose usage qosd last asked for alone (0: none): its limits
 * are answered with no jobs, qosd has their usage already. */
static uint64_t reported_cycle;
/* now_ms() of qosd's last request (0: none since the agent started): told
 * in every budget, so a process knows whether limits are coming. */
static uint64_t controlled_ms;
static int listen_fd = -1, wake[2] = { -1, -1 };
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pthread_t beat_thread;
static atomic_bool running;   /* read by waiting AGENT_QOS requests */

/* Lines a local user can cause, on a budget. */
static struct log_limit attach_log = LOG_LIMIT_INIT(10, 10000);

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Where job_id is or would go in the table. */
static size_t find_locked(uint32_t job_id)
{
    size_t lo = 0, hi = njobs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (jobs[mid].job_id < job_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void drop_at_locked(size_t i)
{
    qos_seg_unmap(jobs[i].seg, QOS_SEG_SLOTS);
    close(jobs[i].fd);
    memmove(&jobs[i], &jobs[i + 1], (njobs - i - 1) * sizeof(*jobs));
    njobs--;
}

/* The job's entry, made with a fresh budget if new. NULL with err. */
static struct qjob *get_locked(uint32_t job_id, uid_t uid, char *err, size_t errlen)
{
    size_t i = find_locked(job_id);
    if (i < njobs && jobs[i].job_id == job_id) {
        if (jobs[i].uid == uid)
            return &jobs[i];
        /* A job id reused by another user (a requeue cannot change the
         * owner): never hand the old budget to the new one. */
        log_warn("job %u: qosd names uid %u, its budget here is uid %u's: made anew", job_id,
                 (unsigned)uid, (unsigned)jobs[i].uid);
        drop_at_locked(i);
    }
    if (njobs == QOS_AGENT_MAX_JOBS) {
        snprintf(err, errlen, "job %u: this agent holds budgets for %d jobs already", job_id,
                 QOS_AGENT_MAX_JOBS);
        return NULL;
    }
    struct qjob *grown = realloc(jobs, (njobs + 1) * sizeof(*jobs));
    if (!grown) {
        snprintf(err, errlen, "job %u: out of memory", job_id);
        return NULL;
    }
    jobs = grown;
    struct qjob j = { .job_id = job_id, .uid = uid };
    int rc = qos_seg_create(job_id, QOS_SEG_SLOTS, &j.fd, &j.seg);
    if (rc < 0) {
        snprintf(err, errlen, "job %u: cannot make its budget: %s", job_id, strerror(-rc));
        return NULL;
    }
    qos_seg_beat(j.seg, now_ms(), controlled_ms);
    memmove(&jobs[i + 1], &jobs[i], (njobs - i) * sizeof(*jobs));
    jobs[i] = j;
    njobs++;
    log_info("job %u: I/O budget made for uid %u", job_id, (unsigned)uid);
    return &jobs[i];
}

void qos_agent_ensure(uint32_t job_id, uid_t uid)
{
    if (!running)
        return;
    char err[256];
    pthread_mutex_lock(&lock);
    struct qjob *j = get_locked(job_id, uid, err, sizeof(err));
    if (!j)
        log_warn("%s", err);
    else
        j->provisional = false;   /* the plugin's START names the job's owner */
    pthread_mutex_unlock(&lock);
}

/* Every budget's usage now, as a report for cycle into out. */
static int report_locked(uint64_t cycle, struct rpc_writer *out, char *err, size_t errlen)
{
    struct qos_report rep = { .cycle = cycle, .njobs = (uint32_t)njobs,
                              .jobs = calloc(njobs ? njobs : 1, sizeof(*rep.jobs)) };
    if (!rep.jobs) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < njobs; i++) {
        struct qos_usage u;
        qos_seg_collect(jobs[i].seg, QOS_SEG_SLOTS, &u);
        rep.jobs[i].job_id = jobs[i].job_id;
        rep.jobs[i].procs = u.procs;
        memcpy(rep.jobs[i].used, u.used, sizeof(u.used));
        memcpy(rep.jobs[i].waited_ns, u.waited_ns, sizeof(u.waited_ns));
    }
    qos_report_put(out, &rep);
    free(rep.jobs);
    return 0;
}

/* Until answer_in_ms has passed, the session is over (*cancel) or the
 * agent stops: the long poll of an AGENT_QOS (qos_proto.h). */
static void wait_answer_due(uint32_t answer_in_ms, const atomic_bool *cancel)
{
    uint64_t due = now_ms() + answer_in_ms;
    for (uint64_t t = now_ms(); t < due && running && !(cancel && atomic_load(cancel)); t = now_ms()) {
        uint64_t left = due - t < ANSWER_SLICE_MS ? due - t : ANSWER_SLICE_MS;
        nanosleep(&(struct timespec){ .tv_sec = 0, .tv_nsec = (long)left * 1000000 }, NULL);
    }
}

/* Limits of a cycle older than the last applied, within this window of
 * it, are ignored: a member may hear both its relay and qosd directly
 * while a relay fails over, and the older must not undo the newer. Past
 * the window an older cycle is taken: qosd restarted without its state
 * and counts from 1 again. */
#define STALE_WINDOW_MS 10000
static uint64_t applied_cycle, applied_ms;

/* Applies c's limits: 0, 1 when ignored (an older cycle), or -ENOSPC. */
static int apply_locked(const struct qos_cycle *c, char *err, size_t errlen)
{
    uint64_t t = now_ms();
    controlled_ms = t;
    if (c->cycle && c->cycle < applied_cycle && t - applied_ms < STALE_WINDOW_MS) {
        log_debug("limits of cycle %llu ignored: cycle %llu's are in force",
                  (unsigned long long)c->cycle, (unsigned long long)applied_cycle);
        return 1;
    }
    applied_cycle = c->cycle;
    applied_ms = t;
    int rc = 0;
    for (size_t i = 0; i < njobs; i++)
        jobs[i].missing++;
    for (uint32_t k = 0; k < c->njobs && rc == 0; k++) {
        struct qjob *j = get_locked(c->jobs[k].job_id, c->jobs[k].uid, err, errlen);
        if (!j) {
            rc = -ENOSPC;
            break;
        }
        j->missing = 0;
        j->provisional = false;
        qos_seg_set_limits(j->seg, &c->jobs[k].limit);
    }
    for (size_t i = njobs; i-- > 0;)
        if (jobs[i].missing > QOS_AGENT_GRACE) {
            log_info("job %u: I/O budget dropped (qosd stopped naming the job)", jobs[i].job_id);
            drop_at_locked(i);
        }
    return rc;
}

bool qos_agent_enabled(void)
{
    return running;
}

int qos_agent_apply(const uint8_t *body, size_t len, uint64_t *cycle, uint32_t *answer_in_ms,
                    char *err, size_t errlen)
{
    if (!running) {
        snprintf(err, errlen, "I/O quality of service is not enabled on this agent (--qos-socket)");
        return -EOPNOTSUPP;
    }
    struct rpc_reader r;
    rpc_reader_init(&r, body, len);
    struct qos_cycle c;
    int rc = qos_cycle_get(&r, &c);
    if (rc < 0) {
        snprintf(err, errlen, "malformed qos request");
        return rc;
    }
    pthread_mutex_lock(&lock);
    rc = apply_locked(&c, err, errlen);
    pthread_mutex_unlock(&lock);
    free(c.jobs);
    *cycle = c.cycle;
    *answer_in_ms = c.answer_in_ms;
    return rc < 0 ? rc : 0;
}

int qos_agent_put_report(uint64_t cycle, struct rpc_writer *out, char *err, size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (cycle && cycle == reported_cycle)
        qos_report_put(out, &(struct qos_report){ .cycle = cycle });
    else
        rc = report_locked(cycle, out, err, errlen);
    pthread_mutex_unlock(&lock);
    return rc;
}

int qos_agent_cycle(struct rpc_reader *r, struct rpc_writer *out, const atomic_bool *cancel,
                    char *err, size_t errlen)
{
    const void *body;
    size_t len = rpc_get_rest(r, &body);
    uint64_t cycle;
    uint32_t answer_in;
    int rc = qos_agent_apply(body, len, &cycle, &answer_in, err, errlen);
    if (rc < 0)
        return rc;
    /* The limits are in force; the usage goes back when qosd wants it. */
    wait_answer_due(answer_in, cancel);
    return qos_agent_put_report(cycle, out, err, errlen);
}

int qos_agent_report(struct rpc_reader *r, struct rpc_writer *out, char *err, size_t errlen)
{
    if (!running) {
        snprintf(err, errlen, "I/O quality of service is not enabled on this agent (--qos-socket)");
        return -EOPNOTSUPP;
    }
    uint32_t version = rpc_get_u32(r);
    uint64_t cycle = rpc_get_u64(r);
    if (!rpc_reader_done(r) || version != QOS_PROTO_VERSION) {
        snprintf(err, errlen, "malformed qos report request");
        return -EBADMSG;
    }
    pthread_mutex_lock(&lock);
    controlled_ms = now_ms();
    int rc = report_locked(cycle, out, err, errlen);
    reported_cycle = cycle;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* A job qosd has not named yet (it is down, or has not seen the job):
 * its processes still share one budget on this node, at the site's
 * default, the uid that asks first taken for the owner until qosd or the
 * plugin says otherwise (then the budget is made anew for the right one).
 * A user may have a few such budgets only, so none can fill the table. */
#define PROVISIONAL_PER_UID 16

static struct qjob *provisional_locked(uint32_t job_id, uid_t uid)
{
    unsigned mine = 0;
    for (size_t i = 0; i < njobs; i++)
        mine += jobs[i].provisional && jobs[i].uid == uid;
    if (mine >= PROVISIONAL_PER_UID)
        return NULL;
    char err[256];
    struct qjob *j = get_locked(job_id, uid, err, sizeof(err));
    if (j)
        j->provisional = true;
    return j;
}

/* For qos_attach_answer: a duplicate of the job's budget descriptor (the
 * table may drop the job while the answer is sent), kept in *ctx. */
static int lookup(void *ctx, uint32_t job_id, uid_t uid)
{
    int rc;
    pthread_mutex_lock(&lock);
    size_t i = find_locked(job_id);
    if ((i == njobs || jobs[i].job_id != job_id) && provisional_locked(job_id, uid))
        i = find_locked(job_id);
    if (i == njobs || jobs[i].job_id != job_id)
        rc = -ENOENT;
    else if (uid != jobs[i].uid && uid != 0)
        rc = -EACCES;
    else if ((rc = fcntl(jobs[i].fd, F_DUPFD_CLOEXEC, 0)) < 0)
        rc = -errno;
    pthread_mutex_unlock(&lock);
    *(int *)ctx = rc;
    return rc;
}

/* Connections to the budget socket whose request has not come yet. A
 * process sends its request as it connects, so almost every connection is
 * answered as it is accepted; the others wait here, in the beat thread's
 * poll, each at most ATTACH_TIMEOUT_MS, at most ATTACH_WAITING_PER_UID of
 * one uid (a newer one evicts its oldest): a user's silent connections can
 * neither fill the socket's backlog nor hold up the beat and everyone
 * else's answers, as they did when each was awaited in turn. */
#define ATTACH_WAITING 32
#define ATTACH_WAITING_PER_UID 4
#define ACCEPT_BATCH 64

struct waiting {
    int fd;                /* -1: free */
    uid_t uid;
    uint64_t deadline_ms, seq;
};
static struct waiting waiting[ATTACH_WAITING];
static uint64_t waiting_seq;

static void answer(int conn)
{
    int dup_fd = -1;
    uint32_t job;
    uid_t uid;
    int rc = qos_attach_answer(conn, 0, lookup, &dup_fd, &job, &uid);
    if (dup_fd >= 0)
        close(dup_fd);
    close(conn);
    if (rc == -EACCES)
        log_limited(&attach_log, LOG_LEVEL_WARN, "uid %u asked for job %u's I/O budget: not its"
                    " job, refused", (unsigned)uid, job);
    else if (rc < 0 && rc != -ENOENT)
        log_limited(&attach_log, LOG_LEVEL_WARN, "an attach request from uid %d: %s",
                    (int)uid, rc == -EPROTO ? "malformed" : strerror(-rc));
    else if (rc == -ENOENT)
        log_debug("uid %u asked for job %u's I/O budget: none yet", (unsigned)uid, job);
}

static void give_up(struct waiting *w, const char *why)
{
    log_limited(&attach_log, LOG_LEVEL_WARN, "an attach request from uid %u: %s",
                (unsigned)w->uid, why);
    close(w->fd);
    w->fd = -1;
}

/* A place for a connection of uid: a free one, unless uid has its share
 * waiting (then its oldest) or all are taken (then the oldest of the uid
 * with the most), whose connection is given up. */
static struct waiting *waiting_slot(uid_t uid)
{
    struct waiting *free_w = NULL, *mine = NULL;
    unsigned of_uid = 0;
    for (int i = 0; i < ATTACH_WAITING; i++) {
        struct waiting *w = &waiting[i];
        if (w->fd < 0) {
            free_w = free_w ? free_w : w;
        } else if (w->uid == uid) {
            of_uid++;
            if (!mine || w->seq < mine->seq)
                mine = w;
        }
    }
    if (of_uid >= ATTACH_WAITING_PER_UID) {
        give_up(mine, "no request in time (evicted by a newer connection of its uid)");
        return mine;
    }
    if (free_w)
        return free_w;
    /* Full with ATTACH_WAITING_PER_UID or fewer of each uid: at least 8
     * uids wait; the busiest gives way. */
    struct waiting *victim = NULL;
    unsigned most = 0;
    for (int i = 0; i < ATTACH_WAITING; i++) {
        unsigned n = 0;
        for (int k = 0; k < ATTACH_WAITING; k++)
            n += waiting[k].uid == waiting[i].uid;
        if (n > most || (n == most && waiting[i].seq < victim->seq)) {
            most = n;
            victim = &waiting[i];
        }
    }
    give_up(victim, "no request in time (evicted: every waiting place taken)");
    return victim;
}

/* Takes the connections queued on the socket: each answered now if its
 * request is there, else set waiting. */
static void accept_some(void)
{
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (conn < 0)
            return;
        struct pollfd p = { .fd = conn, .events = POLLIN };
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        if (poll(&p, 1, 0) == 1 || getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
            answer(conn);
            continue;
        }
        struct waiting *w = waiting_slot(cred.uid);
        *w = (struct waiting){ .fd = conn, .uid = cred.uid, .seq = ++waiting_seq,
                               .deadline_ms = now_ms() + ATTACH_TIMEOUT_MS };
    }
}

static void *beat_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < ATTACH_WAITING; i++)
        waiting[i].fd = -1;
    uint64_t last = 0;
    for (;;) {
        struct pollfd p[2 + ATTACH_WAITING] = { { .fd = listen_fd, .events = POLLIN },
                                                { .fd = wake[0], .events = POLLIN } };
        uint64_t t = now_ms(), next = last + BEAT_MS / 2;
        for (int i = 0; i < ATTACH_WAITING; i++) {
            p[2 + i] = (struct pollfd){ .fd = waiting[i].fd, .events = POLLIN };
            if (waiting[i].fd >= 0 && waiting[i].deadline_ms < next)
                next = waiting[i].deadline_ms;
        }
        int n = poll(p, 2 + ATTACH_WAITING, next > t ? (int)(next - t) : 0);
        if (n > 0 && p[1].revents) {
            for (int i = 0; i < ATTACH_WAITING; i++)
                if (waiting[i].fd >= 0)
                    close(waiting[i].fd);
            return NULL;
        }
        t = now_ms();
        for (int i = 0; i < ATTACH_WAITING; i++) {
            if (waiting[i].fd >= 0 && n > 0 && p[2 + i].revents) {
                answer(waiting[i].fd);
                waiting[i].fd = -1;
            } else if (waiting[i].fd >= 0 && waiting[i].deadline_ms <= t) {
                give_up(&waiting[i], "no request in time");
            }
        }
        if (n > 0 && p[0].revents)
            accept_some();
        if (t - last >= BEAT_MS / 2) {
            pthread_mutex_lock(&lock);
            for (size_t i = 0; i < njobs; i++)
                qos_seg_beat(jobs[i].seg, t, controlled_ms);
            pthread_mutex_unlock(&lock);
            last = t;
            log_limit_flush(&attach_log);
        }
    }
}

int qos_agent_start(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(a.sun_path)) {
        snprintf(err, errlen, "--qos-socket %s: too long", path);
        return -ENAMETOOLONG;
    }
    strcpy(a.sun_path, path);
    strcpy(sock_path, path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "--qos-socket: socket: %s", strerror(errno));
        return -errno;
    }
    unlink(path);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, 0666) < 0 ||
        listen(fd, 128) < 0 || pipe2(wake, O_CLOEXEC) < 0) {
        int rc = -errno;
        snprintf(err, errlen, "--qos-socket %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    listen_fd = fd;
    int rc = pthread_create(&beat_thread, NULL, beat_main, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "--qos-socket: cannot start a thread: %s", strerror(rc));
        close(fd);
        listen_fd = -1;
        return -rc;
    }
    running = true;
    return 0;
}

void qos_agent_stop(void)
{
    if (!running)
        return;
    running = false;
    if (write(wake[1], "x", 1) == 1)
        pthread_join(beat_thread, NULL);
    close(listen_fd);
    unlink(sock_path);
    pthread_mutex_lock(&lock);
    while (njobs)
        drop_at_locked(njobs - 1);
    free(jobs);
    jobs = NULL;
    pthread_mutex_unlock(&lock);
}
