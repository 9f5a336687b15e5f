/* rpc: the framing of adafs' request/response protocols.
 *
 * Generic on purpose: the file system (adafsd/libadafs) and the node agent
 * share it, each with their own opcodes. A message is a fixed header followed
 * by `length` payload bytes:
 *
 *   u32 magic "ADFS"  u16 version  u16 opcode  u64 request id
 *   u32 payload length  i32 status (0 or -errno in responses)
 *
 * All integers are little-endian. Nothing in a message proves who sent it:
 * a protocol authenticates its peers before the first message (the file
 * system with agent/handshake.h, the node agent with munge credentials in
 * its payloads). Version 1 had 32 more header bytes that carried the file
 * system's secret in every request. Payload fields are encoded with the
 * rpc_put_* / rpc_get_* helpers below; decoding is bounds-checked and sticky:
 * the first error marks the reader failed and every later get returns
 * nothing, so a handler checks rpc_reader_ok() once at the end. */
#ifndef ADAFS_RPC_H
#define ADAFS_RPC_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

#define RPC_MAGIC       0x53464441u /* "ADFS" read as little-endian */
#define RPC_VERSION     2
#define RPC_HEADER_SIZE 24
/* Largest payload a peer may announce: bounds what a malicious or broken
 * peer can make the other side allocate. */
#define RPC_MAX_PAYLOAD (80u << 20)

struct rpc_header {
    uint16_t opcode;
    uint64_t id;
    uint32_t length;
    int32_t status;
};

void rpc_header_encode(const struct rpc_header *h, uint8_t out[RPC_HEADER_SIZE]);
/* Returns 0, -EPROTO for a wrong magic or version, -EMSGSIZE for a payload
 * length above RPC_MAX_PAYLOAD. */
int rpc_header_decode(const uint8_t in[RPC_HEADER_SIZE], struct rpc_header *h);

/* A growable payload being encoded. An allocation failure is sticky like a
 * decode error: check rpc_writer_ok() before sending. */
struct rpc_writer {
    uint8_t *data;
    size_t len, cap;
    int failed;
    uint8_t *owned;      /* heap buffer, NULL while data is the caller's */
};

/* Starts encoding into buf[cap] (may be NULL/0), growing onto the heap if it
 * does not fit. */
void rpc_writer_init(struct rpc_writer *w, void *buf, size_t cap);
void rpc_writer_free(struct rpc_writer *w);
static inline int rpc_writer_ok(const struct rpc_writer *w) { return !w->failed; }
void rpc_put_u32(struct rpc_writer *w, uint32_t v);
/* Overwrites the u32 put at offset at (a count known only at the end). */
void rpc_patch_u32(struct rpc_writer *w, size_t at, uint32_t v);
void rpc_put_u64(struct rpc_writer *w, uint64_t v);
void rpc_put_i64(struct rpc_writer *w, int64_t v);
/* Appends len raw bytes (no length prefix) and returns where they are, so a
 * caller can fill them in later (a header whose length is known last). */
uint8_t *rpc_put_raw(struct rpc_writer *w, const void *data, size_t len);
/* u32 length, then the bytes. */
void rpc_put_bytes(struct rpc_writer *w, const void *data, size_t len);
/* Like bytes, with a terminating NUL included so a reader can use the
 * string in place. */
void rpc_put_str(struct rpc_writer *w, const char *s);

struct rpc_reader {
    const uint8_t *data;
    size_t len, off;
    int failed;
};

void rpc_reader_init(struct rpc_reader *r, const void *data, size_t len);
static inline int rpc_reader_ok(const struct rpc_reader *r) { return !r->failed; }
/* True when everything was read and nothing failed. */
int rpc_reader_done(const struct rpc_reader *r);
uint32_t rpc_get_u32(struct rpc_reader *r);
uint64_t rpc_get_u64(struct rpc_reader *r);
int64_t rpc_get_i64(struct rpc_reader *r);
/* Points *data into the payload (no copy); returns the length. */
size_t rpc_get_bytes(struct rpc_reader *r, const void **data);
/* Returns a NUL-terminated string inside the payload, or NULL (and fails the
 * reader) if it is missing its NUL or has one inside. */
const char *rpc_get_str(struct rpc_reader *r);
/* Points *data at everything not yet read (a payload's trailing bulk data,
 * perhaps only its first part) and returns its length; 0 if failed. */
size_t rpc_get_rest(struct rpc_reader *r, const void **data);

#endif
