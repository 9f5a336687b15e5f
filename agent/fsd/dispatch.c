/* dispatch: the one place every request a server handles passes through.
 *
 * Keep it that way: I/O quality of service (per-job token buckets, fair
 * sharing between clients) belongs here, in front of the handler call, where
 * it sees every opcode with its payload size. */
#include "server.h"

#include <errno.h>
#include <time.h>

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

void dispatch_enter(struct server *srv, const struct fair_who *who, struct dispatch_gate *g)
{
    g->gated = 0;
    if (!srv->fair && !srv->test_service_ns && !srv->test_service_ns_per_mib)
        return;
    /* Out of memory for the gate's records: served ungated rather than
     * refused (fair_enter said so). */
    g->gated = srv->fair && fair_enter(srv->fair, who, &g->pass) == 0;
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

void dispatch_leave(struct server *srv, struct dispatch_gate *g, uint64_t bytes)
{
    if (!srv->fair && !srv->test_service_ns && !srv->test_service_ns_per_mib)
        return;
    /* The charge: the time the request itself took, plus its emulated
     * device time (not its wait behind others for that device). */
    int64_t cost = now_ns() - g->start_ns;
    if (srv->test_service_ns || srv->test_service_ns_per_mib)
        cost += emulate_device(srv, bytes);
    if (g->gated)
        fair_leave(srv->fair, &g->pass, cost > 0 ? (uint64_t)cost : 1);
    g->gated = 0;
}
