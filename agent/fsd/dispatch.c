/* dispatch: the one place every request a server handles passes through.
 *
 * Keep it that way: I/O quality of service (per-job token buckets, fair
 * sharing between clients) belongs here, in front of the handler call, where
 * it sees every opcode with its payload size. */
#include "server.h"

#include <errno.h>

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
