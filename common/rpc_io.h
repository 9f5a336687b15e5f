/* rpc_io: one framed message over a blocking socket, with a deadline.
 *
 * For request/response protocols that send one message at a time (the node
 * agent's); the file system's pipelined hot path has its own I/O. */
#ifndef ADAFS_RPC_IO_H
#define ADAFS_RPC_IO_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

/* Sends header h (its length is set from len) and payload. Returns 0 or
 * -errno (-ETIMEDOUT past deadline_ms, -EPIPE if the peer went away). */
int rpc_send(int fd, struct rpc_header *h, const void *payload, size_t len,
             int64_t deadline_ms);

/* Receives one message: fills h and a malloc'd *payload (NULL when empty;
 * the caller frees it). Refuses payloads above max_len with -EMSGSIZE.
 * Returns 0 or -errno; -ECONNRESET when the peer closed first, -ETIMEDOUT
 * once deadline_ms has passed, even if bytes still come (checked between
 * socket calls: fd needs I/O timeouts for a peer that sends nothing). */
int rpc_recv(int fd, struct rpc_header *h, uint8_t **payload, size_t max_len,
             int64_t deadline_ms);

#endif
