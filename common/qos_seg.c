/* qos_seg: see qos_seg.h. Raw system calls where a call could come back
 * through an LD_PRELOAD interposer that links this file. */
#include "qos_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The head keeps its size: a process and an agent built before or after a
 * field was added still map each other's segments (a missing field reads
 * as 0). */
_Static_assert(sizeof(struct qos_seg_head) == 2 * QOS_CACHELINE, "qos_seg_head grew");

void qos_seg_init(struct qos_seg *s, uint32_t job_id, unsigned nslots)
{
    s->head.magic = QOS_SEG_MAGIC;
    s->head.version = QOS_SEG_VERSION;
    s->head.job_id = job_id;
    s->head.nslots = nslots;
    s->head.size = qos_seg_size(nslots);
}

int qos_seg_create(uint32_t job_id, unsigned nslots, int *fd, struct qos_seg **seg)
{
    size_t size = qos_seg_size(nslots);
    int f = memfd_create("adafs-qos", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0)
        return -errno;
    void *p = MAP_FAILED;
    if (ftruncate(f, (off_t)size) < 0 ||
        fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0 ||
        (p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) == MAP_FAILED) {
        int rc = -errno;
        close(f);
        return rc;
    }
    qos_seg_init(p, job_id, nslots);
    *fd = f;
    *seg = p;
    return 0;
}

void qos_seg_unmap(struct qos_seg *s, unsigned nslots)
{
    if (s)
        munmap(s, qos_seg_size(nslots));
}

/* What was reserved ahead of now under the old rate, in time at the new
 * one: the tokens are owed whatever the rate (dropping them let every
 * process through at each change: 10-15% over a limit split anew over a
 * job's nodes every period), at most QOS_CARRY_MAX_NS. */
static int64_t carried(int64_t next, int64_t now, uint64_t old_rate, uint64_t new_rate)
{
    if (next <= now || old_rate == QOS_NOT_GIVEN || old_rate == QOS_UNLIMITED ||
        new_rate == QOS_NOT_GIVEN || new_rate == QOS_UNLIMITED)
        return 0;
    long double debt = (long double)(next - now) * (long double)old_rate / (long double)new_rate;
    return now + (int64_t)(debt > QOS_CARRY_MAX_NS ? QOS_CARRY_MAX_NS : debt);
}

int qos_seg_set_limits(struct qos_seg *s, const struct qos_limits *l)
{
    int changed = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    for (int c = 0; c < QOS_NCLASSES; c++) {
        uint64_t old = atomic_load(&s->head.limit[c]);
        if (old == l->v[c])
            continue;
        atomic_store(&s->head.limit[c], l->v[c]);
        atomic_store(&s->bucket[c].next_ns,
                     carried(atomic_load(&s->bucket[c].next_ns), now, old, l->v[c]));
        changed = 1;
    }
    if (changed)
        atomic_fetch_add(&s->head.gen, 1);
    return changed;
}

void qos_seg_beat(struct qos_seg *s, uint64_t now_ms, uint64_t controlled_ms)
{
    atomic_store_explicit(&s->head.heartbeat_ms, now_ms, memory_order_relaxed);
    atomic_store_explicit(&s->head.controlled_ms, controlled_ms, memory_order_relaxed);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void qos_seg_collect(struct qos_seg *s, unsigned nslots, struct qos_usage *u)
{
    memset(u, 0, sizeof(*u));
    for (unsigned i = 0; i < nslots; i++) {
        struct qos_seg_slot *slot = &s->slot[i];
        int32_t pid = atomic_load_explicit(&slot->pid, memory_order_relaxed);
        /* A slot's counters outlive its owner: the next one continues
         * them, so the totals never go back. */
        if (pid > 0 && kill(pid, 0) < 0 && errno == ESRCH)
            atomic_compare_exchange_strong(&slot->pid, &pid, 0);
        else if (pid != 0)
            u->procs++;
        for (int c = 0; c < QOS_NCLASSES; c++) {
            u->used[c] = add_sat(u->used[c], atomic_load_explicit(&slot->used[c],
                                                                  memory_order_relaxed));
            u->waited_ns[c] = add_sat(u->waited_ns[c],
                                      atomic_load_explicit(&slot->waited_ns[c],
                                                           memory_order_relaxed));
        }
    }
}

int qos_seg_map(int fd, uint32_t job_id, struct qos_seg **seg)
{
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) < 0)
        return -errno;
    if (st.st_size < (off_t)qos_seg_size(1) || st.st_size > (off_t)qos_seg_size(QOS_SEG_SLOTS))
        return -EPROTO;
    void *p = (void *)syscall(SYS_mmap, NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                              MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -errno;
    struct qos_seg *s = p;
    if (s->head.magic != QOS_SEG_MAGIC || s->head.version != QOS_SEG_VERSION ||
        s->head.job_id != job_id || s->head.nslots == 0 || s->head.nslots > QOS_SEG_SLOTS ||
        qos_seg_size(s->head.nslots) != (size_t)st.st_size) {
        syscall(SYS_munmap, p, (size_t)st.st_size);
        return -EPROTO;
    }
    *seg = s;
    return 0;
}

struct qos_seg_slot *qos_seg_claim(struct qos_seg *s, int32_t pid)
{
    /* Start where the pid points, so processes spread without scanning. */
    unsigned n = s->head.nslots;
    for (unsigned k = 0; k < n; k++) {
        struct qos_seg_slot *slot = &s->slot[((unsigned)pid + k) % n];
        int32_t free_ = 0;
        if (atomic_load_explicit(&slot->pid, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&slot->pid, &free_, pid))
            return slot;
    }
    return NULL;
}

void qos_seg_release(struct qos_seg_slot *slot, int32_t pid)
{
    if (slot)
        atomic_compare_exchange_strong(&slot->pid, &pid, 0);
}

int64_t qos_seg_reserve(struct qos_seg *s, int c, uint64_t rate, uint64_t n, int64_t now_ns,
                        int64_t burst_ns)
{
    if (rate == 0 || rate == QOS_UNLIMITED || n == 0)
        return 0;
    /* long double: 1 byte/s stays exact, GiB at GB/s cannot overflow. */
    long double costl = (long double)n * 1e9L / (long double)rate;
    int64_t cost = costl > 4e18L ? (int64_t)4e18 : (int64_t)costl;
    _Atomic int64_t *next = &s->bucket[c].next_ns;
    int64_t old = atomic_load_explicit(next, memory_order_relaxed), start;
    do {
        start = old < now_ns ? now_ns : old;   /* idle time is not saved up */
    } while (!atomic_compare_exchange_weak_explicit(next, &old, start + cost,
                                                    memory_order_relaxed, memory_order_relaxed));
    int64_t wait = start + cost - burst_ns - now_ns;
    return wait > 0 ? wait : 0;
}
