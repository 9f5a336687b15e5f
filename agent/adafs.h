/* adafs.h: the client library of the adafs per-job file system.
 *
 * One adafs file system lives for one job, spread over that job's nodes: one
 * server (adafsd) per node keeps metadata in a key-value store keyed by path
 * and file data in fixed-size chunks; every client computes where a path's
 * metadata and each chunk live by hashing, so there is no central server.
 *
 * This is the real API that the stager, the tests and the LD_PRELOAD
 * interposer use. Conventions:
 *  - Paths are absolute inside the file system ("/", "/in/a.dat"): the mount
 *    point is stripped by the caller. "." and ".." components and repeated
 *    slashes are normalised by the library; a path leaving "/" is -EINVAL.
 *  - Every call returns >= 0 on success or -errno on failure (never sets
 *    errno), so it is thread-safe and the interposer decides what errno is.
 *  - A server that does not answer within the instance's timeout gives -EIO,
 *    never a hang. A full node gives -ENOSPC and loses nothing written before.
 *  - File descriptors returned here are the library's own small integers, not
 *    kernel descriptors. A dup shares the open file (offset and flags).
 *  - Relaxed POSIX: no hard links or symlinks (-ENOTSUP); rename of a regular
 *    file or an empty directory is supported; directory listings are
 *    eventually consistent; mmap is the business of the interposer and of
 *    adafs-fuse (doc/preload.md, doc/fuse.md).
 *  - After fork() the child may keep using the handle and its open files:
 *    connections are re-established lazily in the child.
 */
#ifndef ADAFS_H
#define ADAFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is libadafs's API and exported; the library is
 * built with hidden visibility, so nothing else is (agent/libadafs.sym). */
#pragma GCC visibility push(default)

/* Environment variables that carry an instance to a job's processes. */
#define ADAFS_ENV_INSTANCE "ADAFS_INSTANCE" /* path of the instance file */
#define ADAFS_ENV_MOUNT    "ADAFS_MOUNT"    /* the mount point prefix */
/* More file systems for the interposer, beside $ADAFS_MOUNT's (a job's own
 * and the persistent instances it uses): "MOUNT=INSTANCE_FILE" entries
 * separated by ':'; a path goes to the mount with the longest prefix. */
#define ADAFS_ENV_MOUNTS   "ADAFS_MOUNTS"
/* "tcp": reach the servers of this node over TCP too, not through their
 * Unix socket (which also lets them copy data straight from the caller's
 * files into their chunk files: adafs_pwrite_from_fd,
 * adafs_create_write_fd). For comparing
 * the two in benchmarks and tests. */
#define ADAFS_ENV_TRANSPORT "ADAFS_TRANSPORT"

/* The instance file, written by the deployer, readable only by the job user
 * (0600), one "key=value" per line, '#' starts a comment:
 *   mount=/adafs/job.1234      prefix the interposer routes to the file system
 *   chunk_size=524288          bytes per data chunk
 *   timeout_ms=5000            a request not answered by then fails with EIO
 *   secret=<64 hex digits>     clients and servers prove it to each other
 *                              on every new connection, never sending it
 *   server=host:port           one line per server, in placement order
 */

typedef struct adafs adafs;
typedef struct adafs_dir adafs_dir;

struct adafs_dirent {
    const char *name;     /* valid until the next adafs_readdir() */
    unsigned char type;   /* DT_REG or DT_DIR */
    uint64_t ino;
};

/* Connects to the instance described by instance_file (NULL: the file named
 * by $ADAFS_INSTANCE). Connections are opened lazily; this only reads and
 * checks the instance file, and $ADAFS_TRANSPORT ("tcp", or empty or unset
 * for the default; anything else is EINVAL). On failure writes a message
 * naming the file or variable and the problem into err (if errlen > 0). */
int adafs_connect(adafs **out, const char *instance_file, char *err, size_t errlen);
void adafs_disconnect(adafs *fs);

/* Why the last connection to a server failed, naming the server (e.g.
 * "server 1 (n2:40021) did not prove it knows the instance's secret: ...",
 * "server 1 (n2:40021): connection lost awaiting an answer ..."),
 * or "" if none did: for a caller whose call gave -EIO, -EACCES (a server
 * refused the instance file's secret) or -EPERM (what listens at a
 * server's address is not this instance's server). Copies it into
 * buf[len] and returns buf. */
const char *adafs_last_error(adafs *fs, char *buf, size_t len);

const char *adafs_mount_point(const adafs *fs);
uint64_t adafs_chunk_size(const adafs *fs);
int adafs_server_count(const adafs *fs);

/* The one option of the calls that take "unsigned flags" (0 or this):
 * the caller knows the path's parent directory is there (it has just made
 * or stat'ed it, or polls it for the next message). A create then sends no
 * check of it (a request less whenever the parent's record is on another
 * server; should the parent have been removed since, the file is created
 * anyway and no listing shows it, as with any create racing an rmdir). A
 * read or stat of a name not there is then ENOENT at once, without the
 * second round trip (a stat of every ancestor, a request each) that tells
 * it from a missing or non-directory ancestor. adafs_stat_entry is
 * adafs_stat with it. Any other bit is EINVAL. */
#define ADAFS_PARENT_KNOWN 1u

/* Files. flags are open(2) flags (O_CREAT, O_EXCL, O_TRUNC, O_APPEND,
 * O_DIRECTORY, O_RDONLY/O_WRONLY/O_RDWR...). */
int adafs_open(adafs *fs, const char *path, int flags, mode_t mode);
/* The same, and *st as adafs_fstat would give it right after the open,
 * without another round trip. */
int adafs_open_stat(adafs *fs, const char *path, int flags, mode_t mode, struct stat *st);
/* Opens read-only like adafs_open_stat and, in the same round trip, reads
 * the file's first min(size, cap) bytes into buf when the server holding
 * its record holds them too (small files made by adafs_create_write):
 * *got is then that count, else 0 and the caller reads with adafs_pread. */
int adafs_open_read(adafs *fs, const char *path, struct stat *st, void *buf, size_t cap,
                    size_t *got);
/* The same; flags 0 or ADAFS_PARENT_KNOWN (above: a file not there is
 * ENOENT at once). */
int adafs_open_read_flags(adafs *fs, const char *path, struct stat *st, void *buf, size_t cap,
                          size_t *got, unsigned flags);
/* Opens read-only, without a round trip, the regular file st describes:
 * what adafs_read_batch or adafs_stat (of this instance, on any of its
 * connections) gave for path. Reads check that the name still names that
 * file (ESTALE if it was replaced, ENOENT if another client removed it).
 * EINVAL if st is not an adafs regular file. */
int adafs_open_known(adafs *fs, const char *path, const struct stat *st);
int adafs_close(adafs *fs, int fd);
int adafs_dup(adafs *fs, int fd);
ssize_t adafs_read(adafs *fs, int fd, void *buf, size_t count);
ssize_t adafs_write(adafs *fs, int fd, const void *buf, size_t count);
ssize_t adafs_pread(adafs *fs, int fd, void *buf, size_t count, off_t offset);
ssize_t adafs_pwrite(adafs *fs, int fd, const void *buf, size_t count, off_t offset);
off_t adafs_lseek(adafs *fs, int fd, off_t offset, int whence);
/* Large files without passing through the caller's memory (the stager):
 * adafs_pwrite_from_fd writes count bytes read from the caller's regular
 * file src_fd at src_off (sendfile: no copy on the client; a server on
 * the caller's node is passed src_fd and copies from it) at offset of
 * fd; adafs_pread_to_fd reads count bytes of fd at offset into the caller's
 * regular file dst_fd at dst_off (spliced from the sockets: the only copy
 * is into dst_fd's page cache). Neither moves src_fd's or dst_fd's file
 * offset, nor fd's. Both return the bytes moved, or -errno if none were:
 *  - pwrite_from_fd stops at the end of src_fd as it is when called (a
 *    short count; 0 at or past it); pread_to_fd at the end of fd's file
 *    (short; 0 at or past it), holes below it written as zeros into dst_fd.
 *  - Each round trip carries up to 32 chunks; on an error after some were
 *    done the count so far is returned, the next call gives the error.
 *  - -EBADF: fd not open here or not open for this direction, src_fd/dst_fd
 *    not an open descriptor, or src_fd not readable (O_WRONLY, O_PATH) or
 *    dst_fd not writable (a directory too); -EISDIR: fd or src_fd a
 *    directory; -EINVAL: a negative offset, src_fd/dst_fd
 *    not a regular file, or dst_fd opened with O_APPEND; an error writing
 *    dst_fd (-ENOSPC...) as is; -EIO if a server did not answer, or if
 *    src_fd shrank while it was being sent (-ENODATA when a server of this
 *    node found it shorter as it copied from it). */
ssize_t adafs_pwrite_from_fd(adafs *fs, int fd, int src_fd, off_t src_off, size_t count,
                             off_t offset);
ssize_t adafs_pread_to_fd(adafs *fs, int fd, int dst_fd, off_t dst_off, size_t count,
                          off_t offset);
/* adafs_pread_to_fd, but bytes no server holds are not written into dst_fd:
 * what dst_fd had there stays (in a fresh file that is later extended with
 * ftruncate to the size, a hole). A server holds no bytes of a chunk it has
 * no data for, nor past the last byte it stores of that file; it answers
 * such a read short. A hole inside what a server stores (between two
 * chunks it holds, or inside one) arrives as zeros and is written; *zeros
 * (if not NULL) is then set to 1, else left as it was: a copier keeping
 * holes needs to look for zero blocks only then. Same return values and
 * errors; the count includes the skipped bytes. */
ssize_t adafs_pread_to_fd_sparse(adafs *fs, int fd, int dst_fd, off_t dst_off, size_t count,
                                 off_t offset, int *zeros);

/* A read whose bytes the caller moves on without copying them (adafs-fuse
 * answers a READ with a reply spliced from them, doc/fuse.md): as
 * adafs_pread of count bytes at offset, but the pieces that a server of
 * this node holds are not read: they are given as that server's data
 * file (a read-only descriptor of the library's) and the offset in it.
 * The rest (other nodes' pieces, zeros of holes) is read into buf (count
 * bytes) and given as memory. take(arg, pieces, n) is called once, with
 * pieces covering the result in order (their lens add up to the return
 * value; not called for 0 bytes), and must consume them before it returns:
 * a descriptor is valid only during the call, and it must call nothing
 * of libadafs on fd (the open file is locked). After take, every
 * descriptor given is checked to be still the file's data file (as a
 * short-circuit read checks after its pread: a remove or a truncate to
 * zero replaces it); if one is not, the call returns -EAGAIN and what
 * take did must be undone and the range read with adafs_pread. Returns
 * the bytes given (short at the end of the file, 0 at or past it), take's
 * own negative answer, or -errno as adafs_pread. */
struct adafs_piece {
    int fd;            /* >= 0: len bytes of this descriptor from off */
    off_t off;
    const void *mem;   /* fd < 0: the len bytes here (within buf) */
    size_t len;
};
typedef int (*adafs_pieces_fn)(void *arg, const struct adafs_piece *pieces, size_t n);
ssize_t adafs_pread_pieces(adafs *fs, int fd, void *buf, size_t count, off_t offset,
                           adafs_pieces_fn take, void *arg);

int adafs_fstat(adafs *fs, int fd, struct stat *st);
int adafs_ftruncate(adafs *fs, int fd, off_t length);
int adafs_fsync(adafs *fs, int fd);
int adafs_get_flags(adafs *fs, int fd);              /* O_* status flags */
int adafs_set_flags(adafs *fs, int fd, int flags);   /* O_APPEND, O_NONBLOCK */
const char *adafs_fd_path(adafs *fs, int fd);        /* NULL if fd is not open */

/* Paths. */
int adafs_stat(adafs *fs, const char *path, struct stat *st);
/* adafs_stat with ADAFS_PARENT_KNOWN (above), for a kernel's lookup of a
 * name in a directory it holds: a missing entry is -ENOENT at once, where
 * adafs_stat asks about every ancestor (one round trip more) to tell
 * -ENOTDIR or the first missing one. */
int adafs_stat_entry(adafs *fs, const char *path, struct stat *st);
int adafs_access(adafs *fs, const char *path, int mode);
int adafs_mkdir(adafs *fs, const char *path, mode_t mode);
int adafs_rmdir(adafs *fs, const char *path);
int adafs_unlink(adafs *fs, const char *path);
int adafs_rename(adafs *fs, const char *from, const char *to);
int adafs_truncate(adafs *fs, const char *path, off_t length);
int adafs_chmod(adafs *fs, const char *path, mode_t mode);
int adafs_utimens(adafs *fs, const char *path, const struct timespec times[2]);
int adafs_statvfs(adafs *fs, struct statvfs *st);

/* Creates (or replaces) a whole small file in as few round trips as the file
 * system allows: for the stager's many small files. */
int adafs_create_write(adafs *fs, const char *path, mode_t mode,
                       const void *data, size_t len);
/* The same with the file's modification time set in the same request (a
 * copier preserving mtimes saves the round trip of adafs_utimens). mtime
 * NULL, or its tv_nsec UTIME_NOW or UTIME_OMIT: the time of creation; a
 * tv_nsec outside [0, 1e9) is EINVAL. flags: 0 or ADAFS_PARENT_KNOWN. */
int adafs_create_write_attr(adafs *fs, const char *path, mode_t mode,
                            const void *data, size_t len, const struct timespec *mtime,
                            unsigned flags);
/* The same with the data taken from the caller's file src_fd (len bytes
 * from src_off, open for reading): sent with sendfile (or src_fd passed to
 * a server on the caller's node), not copied through memory, for a
 * copier's whole files of a few chunks. len is at most
 * ADAFS_CREATE_FD_CHUNKS chunks (EFBIG); a source holding fewer bytes is
 * ENODATA. */
#define ADAFS_CREATE_FD_CHUNKS 32
int adafs_create_write_fd(adafs *fs, const char *path, mode_t mode, int src_fd,
                          off_t src_off, size_t len, const struct timespec *mtime,
                          unsigned flags);
/* Many whole small files at once (the stager's stage-in): the files whose
 * records share a server go in one request, the requests to all servers in
 * one round trip, and each server writes its share with one store write.
 * Each entry is created as by adafs_create_write_attr (flags: 0 or
 * ADAFS_PARENT_KNOWN) and gets its own status: one file's error (EEXIST,
 * ENOSPC, EISDIR, ENOENT...) never fails the others, and an ENOSPC loses
 * nothing written before. A batch names each path at most once (a repeat
 * gets EINVAL) and each file's data is at most adafs_chunk_size() bytes
 * (EFBIG). Returns how many entries failed (0: all were created), or
 * -errno if none was tried (EINVAL flags, ENOMEM). */
struct adafs_create_entry {
    const char *path;
    mode_t mode;
    const void *data;
    size_t len;
    struct timespec mtime;      /* tv_nsec UTIME_NOW or UTIME_OMIT: time of creation */
    int status;                 /* out: 0 or -errno */
};
int adafs_create_batch(adafs *fs, struct adafs_create_entry *entries, size_t n,
                       unsigned flags);

/* The stat and data of many small files in one round trip (the stager's
 * stage-out). For each entry: status 0 or -errno, st, and in buf the whole
 * file (got = its size) when it has at most cap bytes and the server of
 * its record holds them (a file of one chunk, as small files are); else
 * got is 0, no data was sent, and the caller reads with adafs_open and
 * adafs_pread. cap is at most adafs_chunk_size() (EINVAL). Returns how
 * many entries failed, or -errno (ENOMEM). */
struct adafs_read_entry {
    const char *path;
    void *buf;
    size_t cap;
    struct stat st;             /* out */
    size_t got;                 /* out */
    int status;                 /* out: 0 or -errno */
};
int adafs_read_batch(adafs *fs, struct adafs_read_entry *entries, size_t n);

/* A directory's entries with their stat and small files' data (the
 * stager's stage-out: listing a directory of small files is all it takes
 * to copy them out). fn gets each entry but "." and "..", in no set order,
 * page by page from all servers at once, so memory stays bounded however
 * big the directory. A regular file of at most max bytes (max at most
 * adafs_chunk_size(), else EINVAL) whose record's server holds its data,
 * as it does a small file's, comes whole: data points to st.st_size bytes,
 * valid during the call; otherwise data is NULL. status is -errno if that
 * server could not read the file's data (st is then zeroed). Stops at fn's
 * first nonzero answer and returns it; else 0, or -errno (ENOENT, ENOTDIR,
 * EIO, ENOMEM). Entries created or removed meanwhile may or may not show. */
struct adafs_listed {
    const char *name;
    int status;
    struct stat st;
    const void *data;
};
typedef int (*adafs_list_fn)(void *arg, const struct adafs_listed *e);
int adafs_list_plus(adafs *fs, const char *dir, size_t max, adafs_list_fn fn, void *arg);

/* Directories: a snapshot of the entries, gathered from all servers. */
int adafs_opendir(adafs *fs, const char *path, adafs_dir **out);
/* Returns 1 and fills *ent, 0 at the end, or -errno. */
int adafs_readdir(adafs_dir *dir, struct adafs_dirent *ent);
void adafs_rewinddir(adafs_dir *dir);
long adafs_telldir(adafs_dir *dir);
void adafs_seekdir(adafs_dir *dir, long pos);
void adafs_closedir(adafs_dir *dir);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
