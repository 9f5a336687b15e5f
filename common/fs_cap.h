/* fs_cap: a capability of the file system protocol (agent/proto.h): what a
 * server several users share (adafsd --owner with --server-key) hands a
 * caller with a file's data key, so that the chunk servers, which serve
 * data by key and do not know the file's mode bits, can tell what that
 * caller may do with it without asking the record's server.
 *
 *   MAC = HMAC-SHA256(server key, "adafs cap v1" || u32 rights
 *                     || u64 expires_ms || u32 uid || u64 data key
 *                     [|| directory path, for FS_CAP_DIR])
 *         truncated to 128 bits
 *
 * (little-endian). The server key is the instance's servers' own
 * (--server-key), never given to a client; the uid is the one the caller
 * proved at connect, so a capability is worth nothing on another user's
 * connection, and it is not sent: the verifier takes it from its own
 * connection. expires_ms: CLOCK_REALTIME of the issuer plus
 * FS_CAP_LIFETIME_MS, so a chmod holds everywhere once the capabilities
 * issued before it have expired. A server that makes no capabilities (one
 * job's, or one without a server key) answers the zero capability and
 * ignores the ones it is sent, so one job's requests carry 28 bytes more,
 * nothing else.
 *
 * On the wire: u32 rights, u64 expires_ms, u64 mac[0], u64 mac[1]. */
#ifndef ADAFS_FS_CAP_H
#define ADAFS_FS_CAP_H

#include "linknames.h"

#include <stdint.h>

#include "rpc.h"

/* Rights: read and write the data of the key; drop it (TRUNC_DATA of a
 * file whose record the caller just removed or replaced); own the file (a
 * rename may move its record: PUT). */
#define FS_CAP_READ  4u
#define FS_CAP_WRITE 2u
#define FS_CAP_DROP  1u
#define FS_CAP_OWN   8u
/* Kind: the capability is a directory's (then READ: list it, WRITE: make,
 * move or rename entries in it), and its MAC covers the directory's path
 * after the data key (0). */
#define FS_CAP_DIR   0x100u

#define FS_CAP_LIFETIME_MS 10000
#define FS_CAP_WIRE_SIZE 28

struct fs_cap {
    uint32_t rights;          /* 0: none (the zero capability) */
    uint64_t expires_ms;
    uint64_t mac[2];
};

static inline void fs_cap_put(struct rpc_writer *w, const struct fs_cap *c)
{
    rpc_put_u32(w, c->rights);
    rpc_put_u64(w, c->expires_ms);
    rpc_put_u64(w, c->mac[0]);
    rpc_put_u64(w, c->mac[1]);
}

static inline void fs_cap_get(struct rpc_reader *r, struct fs_cap *c)
{
    c->rights = rpc_get_u32(r);
    c->expires_ms = rpc_get_u64(r);
    c->mac[0] = rpc_get_u64(r);
    c->mac[1] = rpc_get_u64(r);
}

#endif
