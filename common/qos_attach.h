/* qos_attach: how a job's process asks its node agent for the job's
 * budget segment (qos_seg.h).
 *
 * Over the agent's attach socket (SOCK_SEQPACKET, one exchange per
 * connection), all integers little-endian:
 *   process -> agent   u32 QOS_ATTACH_MAGIC, u32 QOS_ATTACH_VERSION, u32 job id
 *   agent -> process   u32 QOS_ATTACH_MAGIC, u32 QOS_ATTACH_VERSION, i32 status
 *                      (0, with the segment's memfd in SCM_RIGHTS; or -errno:
 *                      -ENOENT the agent has no budget for the job yet,
 *                      -EACCES the caller's uid is not the job's)
 * The agent knows the caller by SO_PEERCRED, never by what it says. Plain
 * byte encoders: the interposer calls them where malloc is unwelcome. */
#ifndef ADAFS_QOS_ATTACH_H
#define ADAFS_QOS_ATTACH_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define QOS_ATTACH_MAGIC 0x54415141u   /* "AQAT" read as little-endian */
#define QOS_ATTACH_VERSION 1
#define QOS_ATTACH_LEN 12

void qos_attach_req_encode(uint32_t job_id, uint8_t out[QOS_ATTACH_LEN]);
/* 0 or -EPROTO (wrong length, magic or version). */
int qos_attach_req_decode(const uint8_t *in, size_t len, uint32_t *job_id);
void qos_attach_rep_encode(int32_t status, uint8_t out[QOS_ATTACH_LEN]);
/* 0 or -EPROTO; a status must be 0 or a negative errno. */
int qos_attach_rep_decode(const uint8_t *in, size_t len, int32_t *status);

/* Agent: answers one request on an accepted connection. The request must
 * arrive within timeout_ms; lookup(ctx, job, uid of the peer by
 * SO_PEERCRED) returns the job's segment descriptor (still the caller's)
 * or -errno, which is sent back. Returns lookup's result, or -errno for a
 * request that never came or is not one (-EPROTO); *job and *uid are
 * filled as far as known, for the caller's log line. */
int qos_attach_answer(int conn, int timeout_ms, int (*lookup)(void *ctx, uint32_t job, uid_t uid),
                      void *ctx, uint32_t *job, uid_t *uid);

#endif
