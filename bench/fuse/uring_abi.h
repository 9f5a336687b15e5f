/* uring_abi.h: FUSE over io_uring, the kernel's ABI, for builds whose
 * <linux/fuse.h> predates it (Debian 12's linux-libc-dev is Linux 6.1,
 * FUSE protocol 7.38; libfuse 3.14 cannot use it either).
 *
 * Copied by hand from Linux's include/uapi/linux/fuse.h (FUSE protocol
 * 7.42, Linux 6.14, unchanged through Linux 6.18, the kernel this was
 * measured on) and fs/fuse/dev_uring.c's use of it: the daemon answers
 * INIT through /dev/fuse with FUSE_OVER_IO_URING, then registers ring
 * entries (IORING_OP_URING_CMD on the /dev/fuse descriptor, in a ring made
 * with IORING_SETUP_SQE128: the command is in the SQE's 80-byte tail), at
 * least one per queue, a queue per possible CPU; once every queue has one
 * the kernel sends every request but FORGET and INTERRUPT through them.
 * Where the kernel refuses (fuse.enable_uring off) a REGISTER completes
 * with -EOPNOTSUPP. */
#ifndef ADAFS_FUSE_URING_ABI_H
#define ADAFS_FUSE_URING_ABI_H

#include <stdint.h>

/* fuse_init_out.flags2 bit: the daemon will fetch requests over io_uring
 * (FUSE_OVER_IO_URING, 1ULL << 41, in flags2 with FUSE_INIT_EXT). */
#define ADAFS_FUSE_OVER_IO_URING_FLAGS2 (1u << 9)

#define ADAFS_FUSE_URING_IN_OUT_HEADER_SZ 128
#define ADAFS_FUSE_URING_OP_IN_OUT_SZ 128

/* What the kernel and the daemon tell each other of one ring entry. */
struct adafs_fuse_uring_ent_in_out {
    uint64_t flags;
    uint64_t commit_id;    /* the request's unique: the commit names it */
    uint32_t payload_sz;   /* bytes of payload: the request's, the reply's */
    uint32_t padding;
    uint64_t reserved;
};

/* A ring entry's header buffer (the first of the two iovecs registered):
 * fuse_in_header (request) / fuse_out_header (reply); the opcode's own
 * in-header (e.g. fuse_read_in); the exchange above. The opcode's other
 * arguments (a LOOKUP's name) and a reply's arguments (fuse_entry_out, a
 * READ's data) are in the payload buffer, the second iovec. */
struct adafs_fuse_uring_req_header {
    char in_out[ADAFS_FUSE_URING_IN_OUT_HEADER_SZ];
    char op_in[ADAFS_FUSE_URING_OP_IN_OUT_SZ];
    struct adafs_fuse_uring_ent_in_out ring_ent_in_out;
};

/* The SQE's cmd_op. */
enum {
    ADAFS_FUSE_IO_URING_CMD_REGISTER = 1,          /* addr: iovec[2], len 2 */
    ADAFS_FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,  /* reply in the entry */
};

/* In the SQE's command area (IORING_SETUP_SQE128). */
struct adafs_fuse_uring_cmd_req {
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;          /* queue: the CPU whose readers it serves */
    uint8_t padding[6];
};

#endif
