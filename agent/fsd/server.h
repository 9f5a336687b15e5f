/* server: the state of one adafsd and the interface between its parts.
 *
 *   main.c     command line, root directory, listening, readiness, shutdown
 *   gate.c     accepting: every connection's handshake, without a thread
 *   access.c   who may connect to a server several users share (--owner)
 *   perm.c     what each request of such a server's users may do
 *   conn.c     one thread per authenticated connection: framing, replies
 *   dispatch.c the single table every request passes through
 *   meta.c     the requests on metadata records
 *   meta_store.c those records in RocksDB, keyed by path, and inline data
 *   chunks.c   file data in chunk files
 *   datafile.c those files, kept open across requests
 *   batch.c    many small files created or read in one request
 *   quota.c    the per-node byte quota
 *   fairshare.c which waiting job, user or group the next service slot
 *              goes to when several share this server
 *   exchange.c what each of them was served, told to the instance's other
 *              servers every period, so the shares hold across servers
 */
#ifndef ADAFSD_SERVER_H
#define ADAFSD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "bucket.h"
#include "fairshare.h"
#include "instance.h"
#include "proto.h"
#include "rpc.h"

#define SERVER_STRIPES 256

struct server {
    unsigned index, nservers;
    uint64_t chunk_size;
    uint64_t inline_max;             /* chunk 0 up to this size: in RocksDB */
    uint64_t quota;                  /* bytes of chunk data on this node */
    _Atomic uint64_t used;
    /* The file system under root: new data and metadata are refused while
     * less than headroom is free there (0: no such floor), so RocksDB can
     * always flush and compact (quota.c). */
    uint64_t headroom;
    uint64_t write_buffer;           /* RocksDB's memtable size; 0: its default */
    _Atomic int64_t room_checked_ms; /* when free space was last looked at */
    _Atomic uint64_t room_free;      /* what it was */
    uint8_t secret[INSTANCE_SECRET_SIZE];
    /* Bounds of gate.c: handshakes at once, overall and per peer; clients
     * served (connections with a thread), and how many are now. */
    unsigned handshakes_max, handshakes_per_peer, max_clients;
    _Atomic unsigned clients;
    /* A server several users share: the most of max_clients one uid may
     * hold (access_hold), so one user cannot take every client's place. */
    unsigned max_clients_per_user;
    /* And the most memory its connections' requests may hold beyond
     * their first buffers (access_buffer_take), so that one user's
     * requests, sent in part and held, cannot exhaust the server's. */
    uint64_t max_buffered_per_user;
    /* --owner, --access-group (access.c): a server several users share;
     * multiuser 0: one job's server, the secret is the only key. */
    int multiuser, has_access_group;
    /* --keep-root: the root's data outlives this run (a persistent
     * instance's): RocksDB logs its writes, reopens what is there, and is
     * closed in order; chunk files already there count against the quota. */
    int keep_root;
    uid_t owner;
    gid_t access_group;
    char munge_socket[4096];         /* --munge-socket; "": munged's default */
    uid_t self_uid;                  /* the owner of what one job's server creates */
    uint8_t key_mask[16];            /* perm.c's key for stand-in data keys */
    /* A server several users share with a server key (--server-key):
     * it makes and checks capabilities (common/fs_cap.h) under cap_key. */
    int caps;
    uint8_t cap_key[32];
    gid_t self_gid;
    char root[4096];
    char data_dir[4200];
    struct meta_store *meta;
    /* Serialise read-modify-write of one record or one chunk file; striped
     * by hash so unrelated paths proceed in parallel. Two arrays, because a
     * record lock may be held while a chunk lock is taken. */
    pthread_mutex_t record_locks[SERVER_STRIPES];
    pthread_mutex_t chunk_locks[SERVER_STRIPES];
    /* Fair sharing at dispatch (fairshare.h): NULL when off. fair_jobs:
     * the agent's file of jobs' node counts ("": none), looked at twice a
     * period by whichever request comes. */
    struct fair *fair;
    char fair_jobs[4096];
    _Atomic int64_t fair_jobs_checked_ns;
    /* --test-service-time (benchmarks only): every request also occupies
     * an emulated device for base + per_mib x MiB moved, one request at a
     * time, so throughput does not depend on the machine's load. */
    uint64_t test_service_ns, test_service_ns_per_mib;
    pthread_mutex_t device_lock;
    int64_t device_free_ns;          /* when the emulated device is next idle */
    /* --bandwidth-file: per-job token buckets (bucket.h), NULL: none; the
     * file is looked at once a period by whichever request comes. */
    struct buckets *buckets;
    char bandwidth_file[4096];
    pthread_mutex_t bandwidth_lock;  /* the look, and the usage file */
    _Atomic int64_t bandwidth_checked_ns;
    int64_t bandwidth_mtime_ns;
};

/* The data of a large write not in memory: the tail of a request's
 * payload still in the socket (spliced from the socket into the file), or
 * (FS_BULK_FD) bytes of a file the client passed, from src_off on. */
struct stream {
    int sock;                        /* -1: from src_fd */
    int *pipe;                       /* the connection's pipe, [0] read end */
    size_t left;                     /* bytes still to take */
    int src_fd;
    uint64_t src_off;
};
#define STREAM_PIPE_SIZE (1u << 20)

/* What a handler sends back: a payload, and optionally bytes of a local
 * data file sent after it with sendfile (the data of a READ). rest: the
 * part of the request not in the reader (NULL: all of it is); the
 * connection drops whatever the handler leaves of it. */
/* Who a client of a server several users share proved to be at connect
 * (access.c): uid, gid and its groups, fixed for the connection. */
#define ACCESS_GROUPS_MAX 64
struct caller {
    uid_t uid;
    gid_t gid;
    unsigned ngroups;
    gid_t groups[ACCESS_GROUPS_MAX];
};

struct datafile;
struct reply {
    /* The connection's caller (NULL: one job's server, no checks). */
    const struct caller *caller;
    struct rpc_writer out;
    struct datafile *file;           /* NULL: none; datafile_put after sending */
    uint64_t file_off;
    size_t file_len;
    struct stream *rest;
    int fd_ok;                       /* the peer may be given a descriptor (DATA_FD) */
    int pass_fd;                     /* >= 0: sent with the answer, then closed */
};

/* A request handler: decodes req, fills rep, returns 0 or -errno. */
typedef int (*handler_fn)(struct server *srv, struct rpc_reader *req, struct reply *rep);

/* Runs the handler of an opcode (see dispatch.c). */
int dispatch(struct server *srv, uint16_t opcode, struct rpc_reader *req, struct reply *rep);
const char *dispatch_op_name(uint16_t opcode);
/* The gate in front of dispatch: enter waits for the request's turn
 * (fairshare.h) as the client who, and for its job's bucket (bucket.h) to
 * allow bytes_in; leave, once its answer is sent, charges what it cost and
 * lets the next one in. bytes_out: what the answer moved. */
struct dispatch_gate {
    struct fair_pass pass;
    int gated;
    int64_t start_ns;
    uint64_t job;
    uint64_t bytes_in;
};
void dispatch_enter(struct server *srv, const struct fair_who *who, uint64_t bytes_in,
                    struct dispatch_gate *g);
void dispatch_leave(struct server *srv, struct dispatch_gate *g, uint64_t bytes_out);

/* Accepts connections on lfd (TCP) and ufd (the node's Unix socket, -1:
 * none) and authenticates them (gate.c) until a signal arrives on the
 * signalfd sfd. Returns 0 then, or -errno if the loop itself failed. */
int gate_run(struct server *srv, int lfd, int ufd, int sfd);

/* access.c: the uid and gid of a client that proved the secret (the
 * kernel's on the Unix socket, local; else its munge credential cred for
 * handshake hs), then whether they may in. 0, or -EACCES with err naming
 * why (the uid when known). */
struct handshake;
int access_identify(struct server *srv, int fd, int local, const struct handshake *hs,
                    const char *cred, uid_t *uid, gid_t *gid, char *err, size_t errlen);
int access_admit(const struct server *srv, uid_t uid, gid_t gid, struct caller *c,
                 char *err, size_t errlen);
/* A server several users share: hold counts one more authenticated
 * connection of uid, or returns -EUSERS when it holds
 * srv->max_clients_per_user already (held: how many); release, when such a
 * connection ends. */
int access_hold(struct server *srv, uid_t uid, unsigned *held);
void access_release(struct server *srv, uid_t uid);
/* A connection of uid (held) would buffer bytes more of a request: 0 once
 * uid's connections buffer at most srv->max_buffered_per_user with them
 * (waiting until deadline_ms for others' to be given back; one request
 * alone is always let through), else -ENOBUFS. give: bytes no longer
 * buffered. */
int access_buffer_take(struct server *srv, uid_t uid, uint64_t bytes, int64_t deadline_ms);
void access_buffer_give(struct server *srv, uid_t uid, uint64_t bytes);
/* perm.c, for the handlers. in_groups: is group one of c's. stamp: the owner of a new record (the caller, else
 * the server's uid). may: 0 if the caller has want (R_OK, W_OK, X_OK
 * bits) on rec by its mode bits, -EACCES if not. owns: 0 if the caller
 * owns rec (or is root), -EPERM if not. Without a caller both are 0. */
struct fs_record;
int access_in_groups(const struct caller *c, gid_t group);
void access_stamp(const struct server *srv, const struct reply *rep, struct fs_record *rec);
int access_may(const struct reply *rep, const struct fs_record *rec, unsigned want);
int access_owns(const struct reply *rep, const struct fs_record *rec);
/* The data key a record's answer carries: its own, or (a caller that may
 * neither read nor write it) a stand-in from which the key cannot be
 * found, so that the chunks, read and written by key, stay out of reach.
 * answer: rec's key replaced so. */
uint64_t access_key(const struct server *srv, const struct reply *rep,
                    const struct fs_record *rec);
void access_answer(const struct server *srv, const struct reply *rep, struct fs_record *rec);
/* Capabilities (common/fs_cap.h; all no-ops when !srv->caps):
 * cap_for: the caller's rights on rec's data key by its mode bits, or for
 * a directory (path: its path) on the directory (the zero capability for
 * no rights, or without a caller).
 * cap_drop: FS_CAP_DROP on a key whose record the caller just removed or
 * replaced (0: none). cap_check: 0 if cap gives the caller any of want on
 * key, -EKEYEXPIRED if it is none or expired, -EACCES otherwise.
 * new_key: the data key a record made for a caller gets (the request's
 * key when capabilities are off, else a fresh random one whose chunk 0 is
 * where the request's is). */
void access_cap_for(const struct server *srv, const struct reply *rep, const char *path,
                    const struct fs_record *rec, struct fs_cap *cap);
void access_cap_drop(const struct server *srv, const struct reply *rep, uint64_t key,
                     struct fs_cap *cap);
int access_cap_check(const struct server *srv, const struct reply *rep, uint64_t key,
                     const struct fs_cap *cap, unsigned want);
uint64_t access_new_key(const struct server *srv, const struct reply *rep, uint64_t asked);
/* Directories (a capability of kind FS_CAP_DIR, from STAT of the
 * directory, path: the record's path): dir_check: 0 if cap gives the
 * caller want (FS_CAP_READ: list, FS_CAP_WRITE: make or move entries in)
 * on the directory of dirlen bytes at dir ("/" and root: always), else as
 * cap_check. parent_check: dir_check of write on path's parent. */
int access_dir_check(const struct server *srv, const struct reply *rep, const char *dir,
                     size_t dirlen, const struct fs_cap *cap, unsigned want);
int access_parent_check(const struct server *srv, const struct reply *rep, const char *path,
                        const struct fs_cap *cap);

/* Serves one authenticated connection (a blocking socket) on a thread of
 * its own until the peer closes it; local: it came through the node's Unix
 * socket, and its requests may pass descriptors; peer: its name for the
 * log; who: its job, user and group as the gate established them; caller:
 * who it proved to be to a server several users share (NULL: one job's). When it ends, srv->clients goes down by one (gate.c counted it
 * up). */
int conn_start(struct server *srv, int fd, int local, const char *peer,
               const struct fair_who *who, const struct caller *caller);


/* meta.c (the requests) and meta_store.c (RocksDB) */
int meta_open(struct server *srv, const char *dir, char *err, size_t errlen);
/* Closes RocksDB in order (memtables flushed): for --keep-root's stop. */
void meta_close(struct server *srv);
int op_stat(struct server *, struct rpc_reader *, struct reply *);
int op_create(struct server *, struct rpc_reader *, struct reply *);
int op_mkdir(struct server *, struct rpc_reader *, struct reply *);
int op_remove(struct server *, struct rpc_reader *, struct reply *);
int op_size(struct server *, struct rpc_reader *, struct reply *);
int op_append(struct server *, struct rpc_reader *, struct reply *);
int op_size_undo(struct server *, struct rpc_reader *, struct reply *);
int op_truncate(struct server *, struct rpc_reader *, struct reply *);
int op_setattr(struct server *, struct rpc_reader *, struct reply *);
int op_put(struct server *, struct rpc_reader *, struct reply *);
int op_remove_if(struct server *, struct rpc_reader *, struct reply *);
int op_list(struct server *, struct rpc_reader *, struct reply *);
/* Calls fn for each entry of directory dir after the name after (""; from
 * the first), in name order; stops at fn's first nonzero answer, which it
 * returns (0 when all were seen). -EINVAL for a bad dir, -EIO. */
typedef int (*meta_scan_fn)(void *arg, const char *name, const struct fs_record *rec);
int meta_scan_dir(struct server *srv, const char *dir, const char *after, meta_scan_fn fn,
                  void *arg);
int op_create_write(struct server *, struct rpc_reader *, struct reply *);
int op_stat_read(struct server *, struct rpc_reader *, struct reply *);
/* Inline data of a data key, for chunks.c: get copies it into buf and
 * returns its length, or -ENOENT if there is none, or -EIO. */
int meta_blob_get(struct server *srv, uint64_t data_key, void *buf, size_t cap);
int meta_blob_put(struct server *srv, uint64_t data_key, const void *data, size_t len);
int meta_blob_del(struct server *srv, uint64_t data_key);
/* For batch.c: a batch of records and inline data written at once, with
 * meta.c's key rules and locks (the record lock of a key is
 * srv->record_locks[meta_record_stripe(...)]). */
#define META_KEY_MAX (FS_PATH_MAX + 2)
int meta_path_key(const char *path, char key[META_KEY_MAX]);
unsigned meta_record_stripe(struct server *srv, const char *key, int klen);
int meta_check_parent(struct server *srv, const char *path);
struct meta_batch *meta_batch_new(void);
void meta_batch_put_record(struct meta_batch *b, const char *key, int klen,
                           const struct fs_record *rec);
void meta_batch_put_blob(struct meta_batch *b, uint64_t data_key, const void *data, size_t len);
int meta_batch_commit(struct server *srv, struct meta_batch *b);
void meta_batch_free(struct meta_batch *b);
/* Many records or inline data looked up at once; lookup i's answer by
 * meta_values_record/blob: 0, -ENOENT, or -EIO. A blob's bytes stay valid
 * until meta_values_free. NULL: out of memory. */
struct meta_values *meta_get_records(struct server *srv, size_t n, const char *const *keys,
                                     const size_t *klens);
struct meta_values *meta_get_blobs(struct server *srv, size_t n, const uint64_t *data_keys);
int meta_values_record(const struct meta_values *v, size_t i, struct fs_record *rec);
int meta_values_blob(const struct meta_values *v, size_t i, const void **data, size_t *len);
void meta_values_free(struct meta_values *v);

/* batch.c */
int op_create_batch(struct server *, struct rpc_reader *, struct reply *);
int op_read_batch(struct server *, struct rpc_reader *, struct reply *);
int op_list_plus(struct server *, struct rpc_reader *, struct reply *);

/* chunks.c */
int chunks_init(struct server *srv, char *err, size_t errlen);
/* Drops this server's chunks of a file beyond new_size (0: all of them). */
void chunks_truncate(struct server *srv, uint64_t key, uint64_t new_size, uint64_t old_size);
/* Writes have bytes from data, then rest->left bytes from rest (if not
 * NULL), at offset into chunk index of key, within the quota. */
int chunks_write(struct server *srv, uint64_t key, uint64_t index, uint64_t offset,
                 const void *data, size_t have, struct stream *rest);
/* Appends what this server holds of bytes [0, len) of chunk index of key
 * to out (less if the chunk is shorter); returns how many, or -errno. */
int chunks_read_into(struct server *srv, uint64_t key, uint64_t index, size_t len,
                     struct rpc_writer *out);
/* datafile.c: the local file of a data key, open (see there). get: with a
 * reference, or NULL with errno (ENOENT: there is none); create (under the
 * key's chunk lock, when there is none): made. remove (under that lock):
 * unlinks it, 0 or -errno. exists: 1, 0, or -errno. all_data: is [pos,
 * pos + len) of f, which st describes, all data (no hole)? truncated: f was
 * shrunk (holes may come back). stop: the root goes away: close them all. */
struct stat;
int datafile_init(struct server *srv, char *err, size_t errlen);
struct datafile *datafile_get(struct server *srv, uint64_t key, int create);
int datafile_fd(const struct datafile *f);
void datafile_put(struct datafile *f);
int datafile_remove(struct server *srv, uint64_t key);
int datafile_exists(struct server *srv, uint64_t key);
_Bool datafile_all_data(struct datafile *f, const struct stat *st, uint64_t pos, size_t len);
void datafile_truncated(struct datafile *f);
void datafile_stop(void);
/* A new read-only descriptor of key's local file (for DATA_FD), or -errno
 * (-ENOENT: there is none). */
int datafile_open_read(struct server *srv, uint64_t key);
/* quota.c: take is all or nothing (-ENOSPC leaves the quota untouched, as
 * when the file system under root has no room for bytes above the
 * headroom), give saturates at zero. quota_room: 0 while metadata may
 * grow, -ENOSPC once only the headroom is left (deletes always pass). */
int quota_take(struct server *srv, uint64_t bytes);
void quota_give(struct server *srv, uint64_t bytes);
int quota_room(struct server *srv, uint64_t bytes);
int op_write(struct server *, struct rpc_reader *, struct reply *);
int op_read(struct server *, struct rpc_reader *, struct reply *);
int op_trunc_data(struct server *, struct rpc_reader *, struct reply *);
int op_data_fd(struct server *, struct rpc_reader *, struct reply *);
int op_statfs(struct server *, struct rpc_reader *, struct reply *);

#endif
