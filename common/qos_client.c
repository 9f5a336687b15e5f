/* qos_client: see qos_client.h.
 *
 * Everything here may run inside an intercepted call of a program under
 * LD_PRELOAD: no malloc, no stdio, and raw system calls for the agent's
 * socket and the mapping, so nothing comes back through the interposer. */
#include "qos_client.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "qos_attach.h"
#include "qos_seg.h"

__thread struct qos_tls qos_tls __attribute__((tls_model("initial-exec")));
/* Starts above every thread's 0: a thread's first charge takes the slow path. */
_Atomic uint64_t qos_epoch = 1;

/* The budget when no agent gives one: this process alone, one slot. */
static _Alignas(QOS_CACHELINE) unsigned char private_mem[sizeof(struct qos_seg) +
                                                         sizeof(struct qos_seg_slot)];

static struct {
    atomic_bool on;
    pthread_once_t once;
    struct qos_client_conf conf;
    _Atomic(struct qos_seg *) seg;
    _Atomic(struct qos_seg_slot *) slot;
    _Atomic int32_t slot_pid;          /* who owns slot: released at exit */
    atomic_bool shared;
    _Atomic uint64_t gen_seen;
    _Atomic uint64_t limit[QOS_NCLASSES];
    _Atomic int64_t next_check_ms;
    atomic_flag checking;
} qc = { .once = PTHREAD_ONCE_INIT, .checking = ATOMIC_FLAG_INIT };

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int qos_client_conf_from_env(struct qos_client_conf *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const char *job = getenv("SLURM_JOB_ID"), *sock = getenv(QOS_ENV_SOCKET);
    const char *node = getenv("SLURMD_NODENAME"), *dflt = getenv(QOS_ENV_DEFAULT);
    if (job && *job) {
        char *end;
        unsigned long v = strtoul(job, &end, 10);
        if (*end || v == 0 || v > UINT32_MAX) {
            snprintf(err, errlen, "SLURM_JOB_ID=%s is not a job id", job);
            return -EINVAL;
        }
        c->job_id = (uint32_t)v;
    }
    if (sock && *sock) {
        /* "%n" is the node, as in the agent's --qos-socket: several
         * agents share one host on a test cluster. */
        const char *pn = strstr(sock, "%n");
        int n = pn ? snprintf(c->socket, sizeof(c->socket), "%.*s%s%s", (int)(pn - sock), sock,
                              node ? node : "", pn + 2)
                   : snprintf(c->socket, sizeof(c->socket), "%s", sock);
        if (n < 0 || (size_t)n >= sizeof(c->socket) || (pn && (!node || !*node))) {
            snprintf(err, errlen, "%s=%s: %s", QOS_ENV_SOCKET, sock,
                     pn && (!node || !*node) ? "%n needs SLURMD_NODENAME" : "too long");
            return -EINVAL;
        }
    }
    char why[256];
    if (qos_limits_parse(dflt, &c->dflt, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s: %s", QOS_ENV_DEFAULT, why);
        return -EINVAL;
    }
    return 0;
}

/* The class limits in force: the segment's where it gives one, else the
 * static default, else none. */
static void load_limits(struct qos_seg *s)
{
    for (int c = 0; c < QOS_NCLASSES; c++) {
        uint64_t v = atomic_load_explicit(&s->head.limit[c], memory_order_relaxed);
        if (v == QOS_NOT_GIVEN)
            v = qc.conf.dflt.v[c];
        atomic_store_explicit(&qc.limit[c], v == QOS_NOT_GIVEN ? QOS_UNLIMITED : v,
                              memory_order_relaxed);
    }
}

/* Asks the agent for the job's segment: its descriptor, or -errno. */
static int request_segment(void)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    size_t plen = strlen(qc.conf.socket);
    if (plen == 0 || plen >= sizeof(a.sun_path))
        return -EINVAL;
    memcpy(a.sun_path, qc.conf.socket, plen + 1);
    int s = (int)syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return -errno;
    int rc = -EPROTO, fd = -1;
    uint8_t req[QOS_ATTACH_LEN], rep[QOS_ATTACH_LEN + 1];
    qos_attach_req_encode(qc.conf.job_id, req);
    struct pollfd p = { .fd = s, .events = POLLIN };
    if (syscall(SYS_connect, s, &a, sizeof(a)) < 0 ||
        syscall(SYS_sendto, s, req, sizeof(req), MSG_NOSIGNAL, NULL, 0) != (long)sizeof(req)) {
        rc = -errno;
        goto out;
    }
    if (syscall(SYS_poll, &p, 1, QOS_ATTACH_TIMEOUT_MS) != 1) {
        rc = -ETIMEDOUT;
        goto out;
    }
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct iovec iov = { rep, sizeof(rep) };
    struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf) };
    long got = syscall(SYS_recvmsg, s, &m, MSG_CMSG_CLOEXEC);
    if (got < 0) {
        rc = -errno;
        goto out;
    }
    /* Every descriptor received is ours to close, whatever else is wrong. */
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
            if (fd < 0)
                fd = f;
            else
                syscall(SYS_close, f);
        }
    }
    int32_t status;
    if (qos_attach_rep_decode(rep, (size_t)got, &status) < 0 || (m.msg_flags & MSG_CTRUNC))
        rc = -EPROTO;
    else if (status < 0)
        rc = status;
    else if (fd < 0)
        rc = -EPROTO;
    else {
        rc = fd;
        fd = -1;
    }
out:
    if (fd >= 0)
        syscall(SYS_close, fd);
    syscall(SYS_close, s);
    return rc;
}

static struct qos_seg_slot *slot_for(struct qos_seg *s, int32_t pid, bool *owned)
{
    struct qos_seg_slot *slot = qos_seg_claim(s, pid);
    *owned = slot != NULL;
    /* All taken: count in a shared one; the totals stay right. */
    return slot ? slot : &s->slot[(uint32_t)pid % s->head.nslots];
}

static void try_attach(void)
{
    if (!qc.conf.job_id || !qc.conf.socket[0])
        return;
    int fd = request_segment();
    if (fd < 0)
        return;
    struct qos_seg *s;
    int rc = qos_seg_map(fd, qc.conf.job_id, &s);
    syscall(SYS_close, fd);
    if (rc < 0)
        return;
    int32_t pid = (int32_t)getpid();
    bool owned;
    struct qos_seg_slot *slot = slot_for(s, pid, &owned);
    struct qos_seg_slot *old = atomic_exchange(&qc.slot, slot);
    int32_t old_pid = atomic_exchange(&qc.slot_pid, owned ? pid : 0);
    /* The old mapping stays: other threads may be using it right now. */
    atomic_store(&qc.seg, s);
    if (atomic_exchange(&qc.shared, true) && old_pid)
        qos_seg_release(old, old_pid);
    atomic_store(&qc.gen_seen, atomic_load(&s->head.gen));
    load_limits(s);
    atomic_fetch_add(&qos_epoch, 1);
}

/* New limits in the segment, the agent's liveness, a first or new
 * segment: cheap checks each slow path, the rest once per QOS_RETRY_MS. */
static void refresh(void)
{
    struct qos_seg *s = atomic_load_explicit(&qc.seg, memory_order_acquire);
    uint64_t gen = atomic_load_explicit(&s->head.gen, memory_order_acquire);
    if (gen != atomic_load_explicit(&qc.gen_seen, memory_order_relaxed)) {
        atomic_store(&qc.gen_seen, gen);
        load_limits(s);
        atomic_fetch_add(&qos_epoch, 1);
    }
    int64_t now_ms = clock_ns(CLOCK_MONOTONIC_COARSE) / 1000000;
    if (now_ms < atomic_load_explicit(&qc.next_check_ms, memory_order_relaxed) ||
        atomic_flag_test_and_set(&qc.checking))
        return;
    atomic_store(&qc.next_check_ms, now_ms + QOS_RETRY_MS);
    int64_t beat = (int64_t)atomic_load(&s->head.heartbeat_ms);
    if (!atomic_load(&qc.shared) || now_ms - beat > QOS_STALE_MS)
        try_attach();
    atomic_flag_clear(&qc.checking);
}

/* Sleeps wait_ns in slices, stopping early when the limits change (the
 * new ones may be higher). Returns the time slept. */
static int64_t delay(struct qos_seg *s, int64_t wait_ns)
{
    uint64_t gen = atomic_load(&s->head.gen);
    int64_t start = clock_ns(CLOCK_MONOTONIC), end = start + wait_ns, now = start;
    while (now < end && atomic_load(&s->head.gen) == gen) {
        int64_t slice = end - now < QOS_WAIT_SLICE_NS ? end - now : QOS_WAIT_SLICE_NS;
        struct timespec ts = { .tv_sec = slice / 1000000000, .tv_nsec = slice % 1000000000 };
        nanosleep(&ts, NULL);
        now = clock_ns(CLOCK_MONOTONIC);
    }
    return now - start;
}

static void charge(int c, uint64_t n);

/* The thread's next lease, sized to its pace (see qos_client.h), at most
 * `most`: a short-lived process is counted for what it did, not for a
 * lease it never used. */
static uint64_t paced_grant(struct qos_tls *t, int c, uint64_t need, uint64_t most)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC), took = now - t->lease_at[c];
    uint64_t lease = t->lease[c];
    if (took < 1000000)
        lease = 2 * (lease > need ? lease : need);
    else if (took > 10000000)
        lease /= 2;
    if (lease > most)
        lease = most;
    t->lease[c] = lease;
    t->lease_at[c] = now;
    return need > lease ? need : lease;
}

/* Inside an intercepted call: the program's errno is left as it was. */
void qos_charge_slow(int c, uint64_t n)
{
    int saved = errno;
    charge(c, n);
    errno = saved;
}

static void charge(int c, uint64_t n)
{
    struct qos_tls *t = &qos_tls;
    if (!atomic_load_explicit(&qc.on, memory_order_relaxed)) {
        t->epoch = atomic_load(&qos_epoch);
        t->credit[c] = INT64_MAX / 2;
        return;
    }
    refresh();   /* may move the epoch: new limits, a new segment */
    uint64_t epoch = atomic_load_explicit(&qos_epoch, memory_order_acquire);
    if (t->epoch != epoch) {
        /* Credit granted under other limits (or inherited over fork) is
         * given up; this call's charge is still owed. */
        memset(t->credit, 0, sizeof(t->credit));
        t->credit[c] = -(int64_t)n;
        t->epoch = epoch;
    }
    if (t->credit[c] >= 0)
        return;
    struct qos_seg *s = atomic_load_explicit(&qc.seg, memory_order_acquire);
    struct qos_seg_slot *slot = atomic_load_explicit(&qc.slot, memory_order_acquire);
    uint64_t limit = atomic_load_explicit(&qc.limit[c], memory_order_relaxed);
    uint64_t need = (uint64_t)-t->credit[c], grant;
    if (limit == QOS_UNLIMITED) {
        grant = paced_grant(t, c, need, qos_class_is_data(c) ? QOS_LEASE_BYTES : QOS_LEASE_OPS);
    } else {
        grant = paced_grant(t, c, need, (uint64_t)((long double)limit * QOS_LEASE_NS / 1e9L));
        int64_t wait = qos_seg_reserve(s, c, limit, grant, clock_ns(CLOCK_MONOTONIC),
                                       QOS_BURST_NS);
        if (wait > 0)
            atomic_fetch_add_explicit(&slot->waited_ns[c], (uint64_t)delay(s, wait),
                                      memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&slot->used[c], grant, memory_order_relaxed);
    t->credit[c] += (int64_t)grant;
}

static void release_at_exit(void)
{
    int32_t pid = atomic_exchange(&qc.slot_pid, 0);
    if (pid && pid == (int32_t)getpid())
        qos_seg_release(atomic_load(&qc.slot), pid);
}

void qos_client_after_fork(void)
{
    if (!atomic_load(&qc.on))
        return;
    if (atomic_load(&qc.shared)) {
        int32_t pid = (int32_t)getpid();
        bool owned;
        atomic_store(&qc.slot, slot_for(atomic_load(&qc.seg), pid, &owned));
        atomic_store(&qc.slot_pid, owned ? pid : 0);
    }
    atomic_fetch_add(&qos_epoch, 1);
}

static void init_once(void)
{
    struct qos_seg *s = (struct qos_seg *)private_mem;
    qos_seg_init(s, qc.conf.job_id, 1);
    atomic_store(&s->slot[0].pid, (int32_t)getpid());
    atomic_store(&qc.seg, s);
    atomic_store(&qc.slot, &s->slot[0]);
    load_limits(s);
    atomic_store(&qc.on, true);
    atomic_fetch_add(&qos_epoch, 1);
    atexit(release_at_exit);
    pthread_atfork(NULL, NULL, qos_client_after_fork);
}

void qos_client_init(const struct qos_client_conf *c)
{
    if (atomic_load(&qc.on))
        return;
    qc.conf = *c;
    pthread_once(&qc.once, init_once);
}

bool qos_client_on(void)
{
    return atomic_load(&qc.on);
}

int qos_client_await(int timeout_ms)
{
    if (!atomic_load(&qc.on))
        return 0;
    try_attach();
    if (!atomic_load(&qc.shared))
        return -ENOTCONN;
    struct qos_seg *s = atomic_load(&qc.seg);
    /* No controller drives this node's agent (QoS off): nothing is
     * coming, and waiting would only delay the stage. */
    if (atomic_load(&s->head.gen) == 0 && atomic_load(&s->head.controlled_ms) == 0)
        return 0;
    int64_t end = clock_ns(CLOCK_MONOTONIC) + (int64_t)timeout_ms * 1000000;
    while (atomic_load(&s->head.gen) == 0 && clock_ns(CLOCK_MONOTONIC) < end) {
        struct timespec ts = { 0, 50000000 };
        nanosleep(&ts, NULL);
    }
    atomic_store(&qc.gen_seen, atomic_load(&s->head.gen));
    load_limits(s);
    atomic_fetch_add(&qos_epoch, 1);
    return atomic_load(&s->head.gen) != 0 ? 1 : -ETIMEDOUT;
}

void qos_client_state(struct qos_client_state *st)
{
    memset(st, 0, sizeof(*st));
    if (!atomic_load(&qc.on))
        return;
    st->attached = atomic_load(&qc.shared);
    struct qos_seg_slot *slot = atomic_load(&qc.slot);
    for (int c = 0; c < QOS_NCLASSES; c++) {
        st->limit[c] = atomic_load(&qc.limit[c]);
        st->used[c] = atomic_load(&slot->used[c]);
        st->waited_ns[c] = atomic_load(&slot->waited_ns[c]);
    }
}
