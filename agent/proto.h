/* proto: the adafs file system protocol between libadafs and adafsd, on top
 * of the generic framing in common/rpc.h.
 *
 * Metadata of a path lives on server hash(path) mod N, as a record keyed by
 * the path. Each file also has a 64-bit data key chosen at creation; chunk i
 * of its data lives on server hash(key, i) mod N. Keeping the data key in the
 * record is what makes rename cheap: only the record moves, never the data.
 *
 * Payloads, request -> response (str = rpc_put_str, rec = fs_record_put,
 * cap = fs_cap_put, common/fs_cap.h: the rights of the caller on a data key;
 * the zero capability from a server that makes none):
 *   PING        ()                                         -> ()
 *   STAT        str path                                   -> rec, cap (on rec's key)
 *   CREATE      str path, u32 mode, u32 flags, u64 key, cap (the parent's: below)
 *                                                          -> rec, cap, u64 old_key, u64 old_size,
 *                                                             cap (FS_CAP_DROP on old_key)
 *   MKDIR       str path, u32 mode, u32 flags, u64 key, cap (the parent's) -> ()
 *   REMOVE      str path, u32 want_dir, u32 keep_data      -> rec (of what was removed), cap (DROP)
 *   SIZE        str path, u64 key, u64 end                 -> u64 before, u64 after (max-merged)
 *   APPEND      str path, u64 key, u64 len                 -> u64 before (the offset reserved), u64 after
 *   SIZE_UNDO   str path, u64 key, u64 expect, u64 to      -> u64 before, u64 after
 *               (size := to, if it is still expect: a write sent with its
 *               SIZE failed part way)
 *   TRUNCATE    str path, u64 length                       -> rec (before), cap (DROP)
 *   SETATTR     str path, u32 what, u32 mode, i64 atime, i64 mtime -> ()
 *   PUT         str path, rec, u32 flags, cap (OWN on rec's key, from the source's STAT),
 *               cap (the parent's)
 *                                                          -> u64 old_key, u64 old_size, u32 old_mode,
 *                                                             cap (DROP on old_key)
 *   REMOVE_IF   str path, u64 key                          -> ()
 *   LIST        str dir, str after, u32 max_entries, cap (dir's, READ)
 *                                                          -> u32 n, n * (str name, u32 mode, u64 key), u32 more
 *   WRITE       u64 key, u64 index, u32 offset, u32 len, cap (WRITE), data (raw) -> ()
 *   READ        u64 key, u64 index, u32 offset, u32 len, u32 flags, cap (READ)
 *                                                          -> u32 flags, the bytes the chunk
 *               holds there (raw); flags: FS_READ_HOLES (asked: say whether
 *               the answer may hold holes; answered: it may)
 *   TRUNC_DATA  u64 key, u64 new_size, u64 old_size, cap (WRITE or DROP) -> ()
 *   CREATE_WRITE str path, u32 mode, u32 flags, u64 key, u64 size,
 *               [i64 mtime if flags has FS_CREATE_MTIME], cap (the parent's), bytes chunk0
 *                                                          -> u64 old_key, u64 old_size, cap (DROP),
 *                                                             u64 key, cap
 *   STATFS      ()                                         -> u64 quota, u64 used
 *   STAT_READ   str path, u32 max                          -> rec, cap, u32 here, [bytes]
 *               (here = 1: this server holds chunk 0 and the file's first
 *               min(size, max) bytes fit in it; they follow raw, less if
 *               the chunk ends in a hole: the rest reads as zeros)
 *   CREATE_BATCH u32 n, n * (str path, u32 mode, u32 flags, u64 key, i64 mtime,
 *               cap (the parent's), bytes data)                    -> u32 n, n * (i32 status, u64 old_key, u64 old_size,
 *                                                 cap (DROP), u64 key)
 *               (n whole small files, each as CREATE_WRITE with size = the
 *               data's length, at most one chunk, chunk 0 on this server;
 *               flags: FS_CHECK_PARENT, FS_CREATE_MTIME. One status per
 *               entry: one file's error does not fail the others)
 *   READ_BATCH  u32 n, u32 max, n * str path   -> u32 n, n * (i32 status, rec, cap, u32 here,
 *               bytes data)   (n STAT_READs in one request)
 *   LIST_PLUS   str dir, str after, u32 max_entries, u32 max, cap (dir's, READ)
 *               -> u32 n, n * (str name, i32 status, rec, cap, u32 here, bytes data), u32 more
 *               (a LIST page whose entries come as READ_BATCH answers them;
 *               the page also ends at about 4 MiB of payload)
 *   A batch has at most FS_BATCH_MAX entries and names each path once.
 *   DATA_FD     u64 key                                    -> (), and a
 *               descriptor (SCM_RIGHTS, with the answer's first byte): this
 *               server's local file of key, open read-only (see below)
 *
 *
 * On the node's Unix socket (a client on the server's own node), a WRITE
 * or CREATE_WRITE may take its data from a file of the client instead of
 * the socket: its opcode has FS_BULK_FD set, the client's descriptor comes
 * with its first bytes (SCM_RIGHTS), and its payload is
 *   u64 file_off, u32 len, then the request without its trailing data
 * whose len bytes the server copies from the passed file at file_off into
 * its chunk file itself (copy_file_range; ENODATA if the file holds fewer).
 * The answer is the request's, under the same opcode. Reads have no such
 * form: servers writing into the caller's file at once contend for its
 * inode lock, measured slower than the caller splicing READ answers itself
 * (doc/bench/stager.md).
 *
 * DATA_FD is the short-circuit read of a client on the server's own node
 * (doc/filesystem.md): the client preads the chunks this server holds
 * from the descriptor (chunk i at i * chunk size, as chunks.c keeps them)
 * instead of sending a READ, and gets exactly what a READ would answer.
 * Only on the Unix socket and only to a peer of the server's own uid
 * (else EPERM); ENOENT when the key has no local file (inline or not yet
 * written). A truncate shrinks that file in place (the client sees it at
 * once); a remove, or a truncate to zero, unlinks it, and a later write
 * makes a new one: the client checks st_nlink after every pread, and a
 * descriptor whose file is unlinked is dropped and the read sent as a
 * READ. The file's inode is so the generation of the descriptor.
 * Servers that remove or shrink a file's record also drop the chunks of that
 * file they hold themselves; the client tells the other chunk holders.
 *
 * A server several users share with a server key (adafsd --owner,
 * --server-key) makes capabilities: it answers a record's key with the
 * caller's rights on it (read, write by the mode bits; own), and as a
 * chunk server it serves READ, WRITE and TRUNC_DATA only with a capability
 * of the right kind for the connection's uid (EACCES; EKEYEXPIRED for
 * none or an expired one: the client asks the record again and retries).
 * A STAT of a directory answers a capability of kind FS_CAP_DIR on its
 * path: READ to list it (LIST, LIST_PLUS), WRITE (write and search by
 * its mode bits) to make, rename or move entries in it ("the parent's":
 * CREATE, MKDIR, CREATE_WRITE, CREATE_BATCH, PUT), which such a server
 * checks for every path whose parent is not the root (the root is open to
 * every user it admits).
 * Such a server also chooses the data key of what it creates itself (the
 * request's key says only where chunk 0 is to be: the answer says the
 * key), so that no user can make a record, and so capabilities, for a key
 * it learnt from another's file. */
#ifndef ADAFS_PROTO_H
#define ADAFS_PROTO_H

#include <stdint.h>

#include "fs_cap.h"
#include "rpc.h"

enum fs_op {
    FS_PING = 1,
    FS_STAT,
    FS_CREATE,
    FS_MKDIR,
    FS_REMOVE,
    FS_SIZE,
    FS_APPEND,
    FS_TRUNCATE,
    FS_SETATTR,
    FS_PUT,
    FS_REMOVE_IF,
    FS_LIST,
    FS_WRITE,
    FS_READ,
    FS_TRUNC_DATA,
    FS_CREATE_WRITE,
    FS_STATFS,
    FS_SIZE_UNDO,
    FS_STAT_READ,
    FS_CREATE_BATCH,
    FS_READ_BATCH,
    FS_LIST_PLUS,
    FS_DATA_FD,
    FS_OP_COUNT
};

/* Opcode flag: the request's bulk data is in the file passed with it. */
#define FS_BULK_FD 0x8000u

/* CREATE / MKDIR / PUT flags. */
#define FS_CREATE_EXCL   1u   /* fail with EEXIST if the path exists */
#define FS_CREATE_TRUNC  2u   /* an existing file is emptied */
#define FS_CHECK_PARENT  4u   /* the parent's record is on this server: check it */
#define FS_CREATE_MTIME  8u   /* CREATE_WRITE: the request carries the mtime */
/* READ request: say whether the answer holds holes (a hole search, only
 * for a copier that keeps them). READ answer: the bytes sent may hold
 * holes of the server's storage, as zeros (without it they are all data,
 * or the client did not ask). */
#define FS_READ_HOLES    1u

/* CREATE_BATCH, READ_BATCH: most entries in one request. */
#define FS_BATCH_MAX 1024

/* SETATTR what. */
#define FS_SET_MODE  1u
#define FS_SET_ATIME 2u
#define FS_SET_MTIME 4u

/* One path's metadata. mode carries S_IFREG or S_IFDIR. uid, gid: its
 * owner, set by the server that created it from who it knows the caller
 * to be (a server several users share, adafsd --owner: the uid the client
 * proved at connect; else the server's own, the job's user), never from
 * what a request says. */
struct fs_record {
    uint32_t mode;
    uint64_t size;
    uint64_t key;
    int64_t atime_ns, mtime_ns, ctime_ns;
    uint32_t uid, gid;
};

#define FS_RECORD_SIZE 52

static inline void fs_record_put(struct rpc_writer *w, const struct fs_record *r)
{
    rpc_put_u32(w, r->mode);
    rpc_put_u64(w, r->size);
    rpc_put_u64(w, r->key);
    rpc_put_i64(w, r->atime_ns);
    rpc_put_i64(w, r->mtime_ns);
    rpc_put_i64(w, r->ctime_ns);
    rpc_put_u32(w, r->uid);
    rpc_put_u32(w, r->gid);
}

static inline void fs_record_get(struct rpc_reader *r, struct fs_record *rec)
{
    rec->mode = rpc_get_u32(r);
    rec->size = rpc_get_u64(r);
    rec->key = rpc_get_u64(r);
    rec->atime_ns = rpc_get_i64(r);
    rec->mtime_ns = rpc_get_i64(r);
    rec->ctime_ns = rpc_get_i64(r);
    rec->uid = rpc_get_u32(r);
    rec->gid = rpc_get_u32(r);
}

/* Longest path the protocol carries (PATH_MAX of Linux). */
#define FS_PATH_MAX 4096

#endif
