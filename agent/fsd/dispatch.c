/* dispatch: the one place every request a server handles passes through.
 *
 * Keep it that way: I/O quality of service (per-job token buckets, fair
 * sharing between clients) belongs here, in front of the handler call, where
 * it sees every opcode with its payload size. */
#include "server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static struct log_limit bandwidth_log = LOG_LIMIT_INIT(5, 60000);

static int op_ping(struct server *srv, struct rpc_reader *req, struct reply *rep)
{
    return rpc_reader_done(req) ? 0 : -EBADMSG;
}

static const struct {
    const char *name;
    handler_fn fn;
} handlers[FS_OP_COUNT] = {
    [FS_PING] = { "ping", op_ping },
    [FS_STAT] = { "stat", op_stat },
    [FS_CREATE] = { "create", op_create },
    [FS_MKDIR] = { "mkdir", op_mkdir },
    [FS_REMOVE] = { "remove", op_remove },
    [FS_SIZE] = { "size", op_size },
    [FS_APPEND] = { "append", op_append },
    [FS_TRUNCATE] = { "truncate", op_truncate },
    [FS_SETATTR] = { "setattr", op_setattr },
    [FS_PUT] = { "put", op_put },
    [FS_REMOVE_IF] = { "remove_if", op_remove_if },
    [FS_LIST] = { "list", op_list },
    [FS_WRITE] = { "write", op_write },
    [FS_READ] = { "read", op_read },
    [FS_TRUNC_DATA] = { "trunc_data", op_trunc_data },
    [FS_CREATE_WRITE] = { "create_write", op_create_write },
    [FS_STATFS] = { "statfs", op_statfs },
    [FS_SIZE_UNDO] = { "size_undo", op_size_undo },
    [FS_STAT_READ] = { "stat_read", op_stat_read },
    [FS_CREATE_BATCH] = { "create_batch", op_create_batch },
    [FS_READ_BATCH] = { "read_batch", op_read_batch },
    [FS_LIST_PLUS] = { "list_plus", op_list_plus },
    [FS_DATA_FD] = { "data_fd", op_data_fd },
};

const char *dispatch_op_name(uint16_t opcode)
{
    return opcode < FS_OP_COUNT && handlers[opcode].name ? handlers[opcode].name : "unknown";
}

int dispatch(struct server *srv, uint16_t opcode, struct rpc_reader *req, struct reply *rep)
{
    if (opcode >= FS_OP_COUNT || !handlers[opcode].fn)
        return -EOPNOTSUPP;
    return handlers[opcode].fn(srv, req, rep);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Twice a period: the agent's rates, if it rewrote them, and this
 * server's use so far (FILE.usage, replaced whole), so whenever the agent
 * looks, an active server's figures are at most half a period old. */
static void bandwidth_period(struct server *srv, int64_t now)
{
    int64_t last = atomic_load(&srv->bandwidth_checked_ns);
    if (now - last < BUCKET_PERIOD_NS / 2 ||
        !atomic_compare_exchange_strong(&srv->bandwidth_checked_ns, &last, now))
        return;
    if (pthread_mutex_trylock(&srv->bandwidth_lock) != 0)
        return;
    struct stat st;
    if (stat(srv->bandwidth_file, &st) == 0) {
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        int rc = mtime != srv->bandwidth_mtime_ns
                 ? buckets_load(srv->buckets, srv->bandwidth_file, now) : 0;
        if (rc < 0)
            log_limited(&bandwidth_log, LOG_LEVEL_WARN, "--bandwidth-file %s: %s",
                        srv->bandwidth_file, rc == -EINVAL ? "a line is not JOB RATE"
                                                           : strerror(-rc));
        srv->bandwidth_mtime_ns = mtime;
    }
    struct bucket_usage use[64];
    size_t n = buckets_usage(srv->buckets, use, 64);
    char path[4200], tmp[4220];
    snprintf(path, sizeof(path), "%s.usage", srv->bandwidth_file);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *fp = fopen(tmp, "we");
    if (fp) {
        for (size_t i = 0; i < n; i++)
            fprintf(fp, "%llu %llu %lld\n", (unsigned long long)use[i].job,
                    (unsigned long long)use[i].bytes, (long long)use[i].waited_ns);
        if (fclose(fp) != 0 || rename(tmp, path) != 0)
            unlink(tmp);
    }
    pthread_mutex_unlock(&srv->bandwidth_lock);
}

/* The agent's node counts, if it rewrote them (fair_jobs_load looks at the
 * mtime), twice a period. */
static void fair_jobs_period(struct server *srv)
{
    int64_t now = now_ns(), last = atomic_load(&srv->fair_jobs_checked_ns);
    if (now - last < BUCKET_PERIOD_NS / 2 ||
        !atomic_compare_exchange_strong(&srv->fair_jobs_checked_ns, &last, now))
        return;
    int rc = fair_jobs_load(srv->fair, srv->fair_jobs);
    if (rc < 0 && rc != -ENOENT)
        log_limited(&bandwidth_log, LOG_LEVEL_WARN, "--fair-jobs %s: %s", srv->fair_jobs,
                    rc == -EPERM ? "not a regular file that only root may write"
                                 : rc == -EINVAL ? "a line is not JOB NODES" : strerror(-rc));
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void dispatch_enter(struct server *srv, const struct fair_who *who, uint64_t bytes_in,
                    struct dispatch_gate *g)
{
    g->gated = 0;
    if (!srv->fair && !srv->buckets && !srv->test_service_ns && !srv->test_service_ns_per_mib)
        return;
    g->job = who->job;
    if (srv->buckets) {
        /* Held back by its job's bucket before it takes a slot, so a
         * throttled job does not keep others from theirs. */
        int64_t now = now_ns();
        bandwidth_period(srv, now);
        int64_t wait = buckets_charge(srv->buckets, who->job, bytes_in, now);
        if (wait > 0)
            sleep_ns(wait);
    }
    if (srv->fair_jobs[0])
        fair_jobs_period(srv);
    /* Out of memory for the gate's records: served ungated rather than
     * refused (fair_enter said so). */
    g->gated = srv->fair && fair_enter(srv->fair, who, &g->pass) == 0;
    g->bytes_in = bytes_in;
    g->start_ns = now_ns();
}

/* --test-service-time: the request holds the emulated device for its
 * time, after whatever holds it already; returns that time. */
static int64_t emulate_device(struct server *srv, uint64_t bytes)
{
    int64_t cost = (int64_t)(srv->test_service_ns +
                             (uint64_t)((double)srv->test_service_ns_per_mib *
                                        (double)bytes / (1 << 20)));
    pthread_mutex_lock(&srv->device_lock);
    int64_t now = now_ns();
    int64_t start = srv->device_free_ns > now ? srv->device_free_ns : now;
    srv->device_free_ns = start + cost;
    pthread_mutex_unlock(&srv->device_lock);
    struct timespec until = { .tv_sec = (start + cost) / 1000000000,
                              .tv_nsec = (start + cost) % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
    return cost;
}

void dispatch_leave(struct server *srv, struct dispatch_gate *g, uint64_t bytes_out)
{
    if (!srv->fair && !srv->buckets && !srv->test_service_ns && !srv->test_service_ns_per_mib)
        return;
    /* An answer's bytes (a read's data) are known only now: the job's
     * bucket carries them as a debt its next request waits out. */
    if (srv->buckets && bytes_out)
        buckets_charge(srv->buckets, g->job, bytes_out, now_ns());
    uint64_t bytes = g->bytes_in + bytes_out;
    /* The charge: the time the request took in its slot; under
     * --test-service-time the emulated device is the bottleneck, and its
     * time (not the wait behind others for it) is the charge. */
    int64_t cost = now_ns() - g->start_ns;
    if (srv->test_service_ns || srv->test_service_ns_per_mib)
        cost = emulate_device(srv, bytes);
    if (g->gated)
        fair_leave(srv->fair, &g->pass, cost > 0 ? (uint64_t)cost : 1);
    g->gated = 0;
}
