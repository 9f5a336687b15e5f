/* client: the inside of libadafs, shared by its modules.
 *
 *   handle.c     connect/disconnect, fork handling, data keys, fd table
 *   call.c       batches of requests over one connection per server
 *   direct.c     short-circuit reads from this node's servers' data files
 *   paths.c      path normalisation and placement helpers
 *   files_open.c the open family: a file's record, then a descriptor
 *   files.c      read/write
 *   files_fd.c   the *_fd calls: read/write with a file of the caller
 *   files_desc.c the other descriptor calls: seek, stat, truncate, flags
 *   namespace.c  stat, mkdir, rmdir, unlink, rename, truncate, setattr
 *   create.c     a whole small file in one round trip (adafs_create_write*)
 *   dirs.c       opendir/readdir: a snapshot gathered from every server
 *
 * Locking order: table lock, then one open file's lock, then connection
 * locks in ascending server index (call.c takes those itself). */
#ifndef ADAFS_CLIENT_H
#define ADAFS_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "adafs.h"
#include "instance.h"
#include "proto.h"
#include "rpc.h"

struct server_conn {
    pthread_mutex_t lock;
    int fd;                  /* -1: connect on next use */
    int local;               /* fd is the server's Unix socket: descriptors may pass */
    pid_t pid;               /* process that opened fd: a forked child reconnects */
    int pipe[2];             /* for splicing bulk data; lives and dies with fd; -1: none yet */
    size_t pipe_size;
    uint8_t *in;             /* receive buffer */
    size_t cap, start, end;
    _Atomic int no_direct;   /* the server gives no data descriptors (DATA_FD) */
};

/* A data file of an open file's key held by a server of this node
 * (direct.c): the descriptor DATA_FD gave, and what it was then. */
struct direct_slot {
    int fd;
    int server;
    dev_t dev;
    ino_t ino;
};
/* Servers of one node whose data files one open file keeps: a job has
 * one per node; tests and benchmarks run several on one machine. */
#define DIRECT_SLOTS 4

struct open_file {
    pthread_mutex_t lock;    /* offset, and one I/O at a time per open file */
    int refs;                /* descriptors sharing it (dup) */
    int holds;               /* threads using it now (fd_get..fd_put) */
    char *path;
    uint64_t key;
    struct fs_cap cap;       /* the caller's rights on key (proto.h), maybe none */
    uint32_t mode;
    int flags;
    uint64_t offset;
    int orphan;              /* unlinked while open: data kept until last close */
    uint64_t orphan_size;
    struct fs_record orphan_rec;
    /* The size as this descriptor last learned it (open, its own writes
     * and truncates, fstat, the reads that asked): a read below it goes
     * without the size (files.c). */
    uint64_t known_size;
    int ask_size;            /* the last read came back short: ask with the next */
    /* Short-circuit reads (direct.c): the data files of key on servers
     * of this node, read-only, ndirect of them. */
    struct direct_slot direct[DIRECT_SLOTS];
    int ndirect;
    unsigned reads;          /* reads through this open file */
    unsigned direct_asks;    /* DATA_FD requests made for it */
};

/* A directory's capability (proto.h) kept for the creates and listings
 * that follow; paths longer than DIRCAP_PATH_MAX are not kept. */
#define DIRCAP_SLOTS 16
#define DIRCAP_PATH_MAX 256
struct dircap {
    char path[DIRCAP_PATH_MAX];
    struct fs_cap cap;
};

struct adafs {
    struct instance inst;
    struct server_conn *conns;
    int local_sockets;          /* try the servers' Unix sockets first */
    uid_t uid;
    gid_t gid;
    uint64_t key_seed;
    _Atomic uint64_t key_counter;
    _Atomic uint64_t request_id;
    pthread_mutex_t table_lock;
    struct open_file **files;   /* by library descriptor */
    int nfiles;
    struct adafs *next;         /* registry for fork handling */
    _Atomic int direct_open;    /* open_file.direct[] held, at most DIRECT_MAX */
    pthread_mutex_t error_lock;
    char last_error[512];       /* why a connection last failed (call.c) */
    pthread_mutex_t dircap_lock;
    struct dircap dircaps[DIRCAP_SLOTS];
};

/* One request of a batch and, after fs_call(), its answer. */
struct call {
    int server;
    uint16_t op;
    struct rpc_writer req;       /* payload (before bulk) */
    uint8_t req_inline[256];
    const void *bulk;            /* raw bytes sent after req, e.g. chunk data */
    size_t bulk_len;
    int bulk_fd;                 /* >= 0: the bulk_len bytes come from this file */
    uint64_t bulk_fd_off;        /* at this offset instead (sendfile), not from bulk */
    void *dest;                  /* if set, the answer payload goes here raw */
    size_t dest_cap;
    int dest_fd;                 /* >= 0: the answer payload (at most dest_cap) */
    uint64_t dest_off;           /* goes into this file at dest_off (splice) */
    int dest_err;                /* -errno writing into dest_fd (the call itself worked) */
    int dest_flags;              /* with dest: a successful answer starts with a u32 */
    uint32_t flags;              /* of flags (READ's), read into here, not into dest */
    int status;                  /* 0 or -errno (-EIO: server unreachable) */
    int pass_fd;                 /* sent with FS_BULK_FD: this descriptor goes along */
    int last;                    /* fs_call: the last answer due on its connection */
    uint8_t *resp;               /* answer payload (not with dest) */
    size_t resp_len;
    uint8_t resp_inline[128];
};

void call_init(struct call *c, int server, uint16_t op);
void call_free(struct call *c);
/* A reader over the answer payload. */
void call_reader(const struct call *c, struct rpc_reader *r);
/* Sends every request, then collects every answer, with one connection per
 * server; requests to one server are answered in order. Returns 0 (see
 * each call's status). */
void fs_call(adafs *fs, struct call *calls, int n);
/* fs_call, running meanwhile(arg) once every request is sent, before the
 * answers are read (work of the caller's that overlaps the servers'). */
void fs_call_meanwhile(adafs *fs, struct call *calls, int n, void (*meanwhile)(void *),
                       void *arg);
/* One request; returns its status. */
int fs_call1(adafs *fs, struct call *c);
void conns_reset_after_fork(adafs *fs);
/* Closes every connection (adafs_disconnect). */
void conns_close(adafs *fs);

/* DATA_FD to server (proto.h): the descriptor of key's data file there,
 * received over its Unix socket; -EPERM without a round trip when the
 * connection is TCP, else the server's answer (-ENOENT: no file), -EIO. */
int fs_data_fd(adafs *fs, int server, uint64_t key);

/* direct.c: short-circuit reads from the data files of this node's
 * server (proto.h, DATA_FD). */
#define DIRECT_MAX 64
/* Counts a read of of (its lock held). */
void direct_count(struct open_file *of);
/* Does of hold a descriptor of server's data file? */
int direct_holds(struct open_file *of, int server);
/* Before a read of of (its lock held) with a piece on server: asks for
 * that server's descriptor of the file when the file is read again and
 * again (eager: at once, for adafs_pread_pieces) and holds none yet. */
void direct_consider(adafs *fs, struct open_file *of, int server, int eager);
/* Whether chunk piece (index, chunk_off, len) of of can be read directly:
 * if so, preads it into buf and returns the count (short at the end of
 * the data file, as a READ's answer). -1: send a READ (no descriptor, or
 * the file it names is gone: then it is dropped). */
ssize_t direct_read(adafs *fs, struct open_file *of, uint64_t index, uint32_t chunk_off,
                    size_t len, char *buf);
/* The same piece described, not read: *fd (of's, valid while of's lock
 * is held) and *pos, where its bytes are in the data file, and the count
 * it holds there now (short at the data file's end); -1: send a READ.
 * The caller checks with direct_still after moving the bytes on. */
ssize_t direct_extent(adafs *fs, struct open_file *of, uint64_t index, uint32_t chunk_off,
                      size_t len, int *fd, off_t *pos);
/* Is fd (from direct_extent) still of's data file, linked? If not, it is
 * dropped and 0 returned: what was taken from it may be another file's
 * state, not the one the reader opened. */
int direct_still(adafs *fs, struct open_file *of, int fd);
/* Drops of's descriptors (close). */
void direct_drop(adafs *fs, struct open_file *of);

/* paths.c */
/* Normalises an absolute path into out[FS_PATH_MAX]: -EINVAL if not
 * absolute or leaving "/", -ENAMETOOLONG. */
int path_normalize(const char *in, char *out);
/* path_normalize for calls that cannot act on "/" itself: root_err for it
 * (each call has its own answer: EBUSY for rmdir, EISDIR for unlink...). */
int path_take(const char *in, char *out, int root_err);
/* Writes the parent of a normalised path ("/" for "/a"). */
void path_parent(const char *path, char *out);
int meta_server(const adafs *fs, const char *path);
int chunk_server(const adafs *fs, uint64_t key, uint64_t index);
/* A fresh data key whose chunk 0 lives on `server` (so a small file sits
 * with its metadata). */
uint64_t new_key(adafs *fs, int server);

/* namespace.c */
int stat_record(adafs *fs, const char *path, struct fs_record *rec);
/* stat_record with the capability that came with the record (NULL: not
 * wanted). */
int stat_record_cap(adafs *fs, const char *path, struct fs_record *rec, struct fs_cap *cap);
/* A new capability for of's key from its record (after a chunk server's
 * EKEYEXPIRED): 0, or -ESTALE if the path now names another file. */
int cap_refresh(adafs *fs, struct open_file *of);
/* Directory capabilities, for the requests that make entries in a
 * directory or list it. dir_cap: the one kept for the normalised dir, if
 * it is not about to expire, else the zero capability (a server that
 * wants one answers EKEYEXPIRED: the caller learns it and tries again);
 * parent_cap: dir_cap of a normalised path's parent. dir_cap_keep: keeps
 * one a STAT of dir answered. parent_cap_learn: STATs the parent of path
 * (any absolute path) and keeps its capability: 0, or the STAT's error. */
void dir_cap(adafs *fs, const char *dir, struct fs_cap *cap);
void parent_cap(adafs *fs, const char *path, struct fs_cap *cap);
void dir_cap_keep(adafs *fs, const char *dir, const struct fs_cap *cap);
int parent_cap_learn(adafs *fs, const char *path);
int dir_cap_learn(adafs *fs, const char *dir);
/* Normalises path into p[FS_PATH_MAX] and fetches its record; a missing
 * path is told apart from one below a file (ENOENT / ENOTDIR). */
int lookup(adafs *fs, const char *path, char *p, struct fs_record *rec);
/* dirs.c: asks every server for its entries of the directory p (normalised)
 * in pages of LIST or LIST_PLUS (data_max: its max), those with more being
 * asked again, all at once; take gets each page's answer and sets *more
 * and the name to go on after. Returns 0, or the first error. */
#define LIST_PAGE 4096
typedef int (*page_fn)(void *arg, const struct call *c, int *more, char *after);
int list_pages(adafs *fs, const char *p, uint16_t op, uint32_t data_max, page_fn take,
               void *arg);
void record_to_stat(const adafs *fs, const struct fs_record *rec, struct stat *st);
/* st_dev of every file (adafs_open_known tells our stat results by it). */
#define FS_DEV 0xada5
/* For a lookup that gave ENOENT: ENOTDIR if some ancestor is a file. */
int refine_enoent(adafs *fs, const char *path);
/* Tells the chunk holders of key (except skip_server, -1: none) to drop
 * data beyond new_size; cap: the caller's (write, or drop: proto.h). */
void drop_data(adafs *fs, uint64_t key, const struct fs_cap *cap, uint64_t new_size,
               uint64_t old_size, int skip_server);
/* Adds a parent check to a batch when the parent's record is on another
 * server; returns FS_CHECK_PARENT when the server of path can check it
 * itself, 0 otherwise (also for "/"). */
uint32_t parent_check(adafs *fs, const char *path, struct call *c, int *used);
/* After the batch: the status of op (which created path's record under
 * key), or the parent check's error, in which case that record is removed
 * again. Frees the check call. */
int parent_check_finish(adafs *fs, const char *path, struct call *op, struct call *check,
                        int used, uint64_t key);
/* Removes the record of path created under key (its parent check failed,
 * or its data could not be written). */
void undo_create(adafs *fs, const char *path, uint64_t key);

/* files.c: data */
/* Where the bytes of a read go, or a write's come from: the caller's
 * memory, or a file of the caller (adafs_pread_to_fd, adafs_pwrite_from_fd,
 * adafs_create_write_fd) from fd_off on. */
struct span {
    char *buf;          /* NULL: fd */
    /* With buf: the pieces this node's servers hold are not read but
     * given to take as descriptors (adafs_pread_pieces). */
    adafs_pieces_fn take;
    void *take_arg;
    int fd;
    uint64_t fd_off;
    int keep_holes;     /* fd: bytes no server holds are not written */
    int *zeros;         /* fd, if not NULL: set to 1 when zeros of holes were written */
};
/* Makes len bytes of src from off the bulk data of c. */
void span_bulk(struct call *c, const struct span *src, uint64_t off, size_t len);
/* A WRITE of len bytes of src from src_off into chunk index of key at
 * chunk_off, with the caller's capability cap. */
void write_call(struct call *c, adafs *fs, uint64_t key, const struct fs_cap *cap,
                uint64_t index, uint32_t chunk_off, const struct span *src, uint64_t src_off,
                size_t len);
/* count bytes of an open file at off into dst, or from src into it
 * (size_reserved: O_APPEND reserved the range already); a capability about
 * to expire, or found expired, is renewed. The count, or -errno. */
ssize_t do_pread(adafs *fs, struct open_file *of, const struct span *dst, size_t count,
                 uint64_t off);
ssize_t do_pwrite(adafs *fs, struct open_file *of, const struct span *src, size_t count,
                  uint64_t off, int size_reserved);
/* files_fd.c: the caller's file for a *_fd call (reading: data comes from
 * it): a regular file open that way, not O_APPEND when written; its size. */
int check_caller_file(int fd, int reading, uint64_t *size);

/* handle.c: descriptors */
int fd_alloc(adafs *fs, struct open_file *of);
/* Returns the open file with its lock held and a reference, or NULL. */
struct open_file *fd_get(adafs *fs, int fd);
void fd_put(adafs *fs, struct open_file *of);
/* Is a file with this path open here? Marks them orphans if so. */
int files_orphan_path(adafs *fs, const char *path, const struct fs_record *rec);
void files_rename_path(adafs *fs, const char *from, const char *to);

#endif
