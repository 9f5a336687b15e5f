/* backend: the two kinds of storage the stager copies between.
 *
 * The POSIX backend is the parallel file system (or any local directory),
 * reached with ordinary system calls; the adafs backend is a job's file
 * system, reached through libadafs directly (no LD_PRELOAD). The copy engine
 * sees only this table.
 *
 * Every call after the root works relative to an open directory (openat and
 * friends on POSIX), never on a whole path: a path component cannot be
 * swapped for a symlink between our check and our use. Calls return >= 0 or
 * -errno. The POSIX backend charges the rate limits given to it (it is the
 * side toward the parallel file system). */
#ifndef ADAFS_STAGE_BACKEND_H
#define ADAFS_STAGE_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "ratelimit.h"

struct backend;

/* Connections of the adafs backend (see struct backend). */
#define BACKEND_ADAFS_CONNECTIONS 4

struct bdir {
    struct backend *b;
    int fd;          /* POSIX: the directory; adafs: unused */
    char *path;      /* full path, for messages (adafs: also for calls) */
};

struct bfile {
    struct backend *b;
    int fd;          /* kernel fd (POSIX) or libadafs fd */
    struct bdir *dir;
    char *name;
};


/* One whole small file of a create_many. */
struct bcreate {
    const char *name;
    mode_t mode;
    const void *data;
    size_t len;
    struct timespec mtime;
    int status;      /* out: 0 or -errno */
};

/* One file of an open_read_many. */
struct bopen {
    const char *name;
    struct bfile *f;  /* out, if rc is 0 */
    struct stat st;   /* out: fstat of f */
    int rc;           /* out: 0 or -errno, as open_read would give */
};

/* A directory entry; opened: if not NULL, the file as open_read_many would
 * have opened it (rc 0; its name is only the entry's for this call), the
 * callee's to close. */
typedef int (*bdir_list_cb)(void *arg, const char *name, unsigned char d_type,
                            struct bopen *opened);

struct backend_ops {
    const char *name;
    /* Opens the directory at a path the user gave (symlinks in it are
     * followed: we run as the user). create: make it and its parents. */
    int (*root_open)(struct backend *b, const char *path, int create,
                     struct bdir **out, struct stat *st);
    /* Opens a subdirectory; follow=0 refuses a symlink (ELOOP/ENOTDIR). */
    int (*dir_open)(struct bdir *parent, const char *name, int follow,
                    struct bdir **out, struct stat *st);
    /* Opens the directory at rel (components separated by '/', none of
     * them "", "." or ".."; "" is root itself) below root in one call;
     * follow=0 refuses a symlink in any component. A worker of a
     * distributed run reaches the directories others listed this way. */
    int (*dir_open_rel)(struct bdir *root, const char *rel, int follow,
                        struct bdir **out, struct stat *st);
    int (*dir_make)(struct bdir *parent, const char *name, mode_t mode);
    /* Calls cb for each entry except "." and ".."; stops at a cb error.
     * open_files: the caller would open every regular file listed with
     * open_read_many; a backend that can open some with the listing itself
     * (adafs: small files come with their data) hands them over opened. */
    int (*dir_list)(struct bdir *d, int open_files, bdir_list_cb cb, void *arg);
    int (*dir_set_attrs)(struct bdir *d, mode_t mode, const struct timespec *mtime);
    void (*dir_close)(struct bdir *d);
    /* lstat, or stat when follow is set. */
    int (*stat_at)(struct bdir *d, const char *name, int follow, struct stat *st);
    /* Opens for reading, then fstat()s the open file (no check-then-use). */
    int (*open_read)(struct bdir *d, const char *name, int follow,
                     struct bfile **out, struct stat *st);
    /* Opens for writing (and reading), creating with mode; truncate empties
     * it. Never follows a symlink. A file of ours left read-only or
     * write-only by an earlier run is made readable and writable (we are
     * its owner and are about to replace it). */
    int (*open_write)(struct bdir *d, const char *name, int truncate, mode_t mode,
                      struct bfile **out);
    ssize_t (*pread)(struct bfile *f, void *buf, size_t n, off_t off);
    ssize_t (*pwrite)(struct bfile *f, const void *buf, size_t n, off_t off);
    /* SEEK_DATA / SEEK_HOLE; -ENXIO past the last data; -EINVAL or
     * -EOPNOTSUPP when the file system cannot tell (then all is data).
     * NULL when the backend never can (adafs: asking would only cost a
     * round trip). */
    off_t (*seek)(struct bfile *f, off_t off, int whence);
    /* Makes [off, off+len) read as zeros (used only over stale data). */
    int (*punch)(struct bfile *f, off_t off, off_t len);
    int (*truncate)(struct bfile *f, off_t len);
    int (*set_attrs)(struct bfile *f, mode_t mode, const struct timespec *mtime);
    int (*close)(struct bfile *f);
    /* A whole small file in as few round trips as possible. */
    int (*create_write)(struct bdir *d, const char *name, mode_t mode,
                        const void *data, size_t len, const struct timespec *mtime);
    int (*unlink_at)(struct bdir *d, const char *name);
    /* Removes the empty directory name of d. */
    int (*rmdir_at)(struct bdir *d, const char *name);
    /* mkdir of a whole path the user gave (only to create request roots). */
    int (*mkdir_path)(struct backend *b, const char *path, mode_t mode);
    int (*set_attrs_at)(struct bdir *d, const char *name, mode_t mode,
                        const struct timespec *mtime);
    /* Optional (NULL: the backend has none): whole small files of one
     * directory, each of at most create_many_max bytes, in as few round
     * trips as possible; each entry gets its own status. Returns 0, or
     * -errno if none was tried. */
    int (*create_many)(struct bdir *d, struct bcreate *e, size_t n);
    size_t create_many_max;
    /* Optional: a whole file of len bytes taken from the start of src (a
     * file of a backend with kernel_fds), without passing through the
     * caller's memory, in as few round trips as possible; len at most
     * create_from_max of the backend. */
    int (*create_write_from)(struct bdir *d, const char *name, mode_t mode, struct bfile *src,
                             size_t len, const struct timespec *mtime);
    /* Optional: open_read of many entries of one directory at once (small
     * files come with their data). Returns 0, or -errno if none was tried. */
    int (*open_read_many)(struct bdir *d, struct bopen *e, size_t n);
    /* Optional: writes n bytes of src (a file of a backend with
     * kernel_fds) from src_off to f at off, without passing through the
     * caller's memory. Returns the bytes written (short at the end of
     * src), or -errno. The caller charges src's rate limits. */
    ssize_t (*pwrite_from)(struct bfile *f, struct bfile *src, off_t src_off, size_t n,
                           off_t off);
    /* Optional: reads n bytes of f from off into dst (a file of a backend
     * with kernel_fds) at dst_off, without passing through the caller's
     * memory. keep_holes: bytes f's storage holds no data for are not
     * written (dst keeps what it had there); *zeros is set to 1 if zeros
     * of holes it cannot skip so may have been written. Returns the bytes
     * covered (short at the end of f), or -errno. The caller charges dst's
     * rate limits. */
    ssize_t (*pread_to)(struct bfile *f, struct bfile *dst, off_t dst_off, size_t n, off_t off,
                        int keep_holes, int *zeros);
    /* Optional: makes the all-zero blocks of [off, off + len) holes, the
     * content unchanged (after a pread_to that wrote zeros of holes). */
    int (*zeros_to_holes)(struct bfile *f, off_t off, off_t len);
    /* bfile.fd is a kernel descriptor (the POSIX backend). */
    int kernel_fds;
};

struct backend {
    const struct backend_ops *ops;
    struct ratelimit *mdops;   /* NULL: metadata operations not limited */
    struct ratelimit *bw;      /* NULL: bytes not limited */
    uint64_t chunk_size;       /* pieces of big files align to this */
    uint64_t create_from_max;  /* largest file for ops->create_write_from */
    void *fs;                  /* adafs: the connected client */
    /* adafs: the connections open files are spread over, in turn (fs is
     * the first): libadafs sends one batch at a time per connection, so a
     * single one would make the copy threads take turns. */
    void *file_fs[BACKEND_ADAFS_CONNECTIONS];
    unsigned next_file_fs;     /* atomic */
    size_t listed_bytes;       /* adafs, atomic: data of files opened by listings */
    /* adafs: files are opened only in directories known to be there (the
     * workers' mailboxes, polled for messages not written yet): a missing
     * one is ENOENT in one request, not one more per ancestor. */
    int parent_known;
    /* Metadata operations made through this backend (atomic; see
     * BACKEND_COUNT): an open, a create, a stat, a mkdir, a change of mode,
     * times or size, an unlink, and a listing's start and each 1,024
     * entries it reads. Data moved and a descriptor's fstat are not. */
    uint64_t md_count;
};

/* Counts n metadata operations of backend b. */
#define BACKEND_COUNT(b, n) __atomic_fetch_add(&(b)->md_count, (n), __ATOMIC_RELAXED)
/* Entries of a listing that cost one more operation (a getdents call, a
 * page of a listing). */
#define BACKEND_LIST_PAGE 1024

/* The POSIX backend (no state besides the limits). */
void backend_posix_init(struct backend *b, struct ratelimit *mdops, struct ratelimit *bw);

#ifdef HAVE_LIBADAFS
/* Connects to the instance file (NULL: $ADAFS_INSTANCE). err gets a message
 * naming the file and the problem. */
int backend_adafs_init(struct backend *b, const char *instance, char *err, size_t errlen);
void backend_adafs_fini(struct backend *b);
/* Strips the instance's mount point from a path given as seen by the job
 * ("/adafs/job.7/in" -> "/in"); relative paths are taken from the root. */
/* Why a connection of b to the job's file system last failed, naming the
 * server and its address (adafs_last_error), into buf ("" if none did). */
void backend_adafs_why(struct backend *b, char *buf, size_t len);
int backend_adafs_path(struct backend *b, const char *user_path, char *out, size_t outlen);
#endif

/* A path joined for messages: "dir/name" (malloc'd, NULL on ENOMEM). */
char *backend_join(const char *dir, const char *name);
/* mkdir -p through b->ops->mkdir_path (mode 0700; existing ones are fine). */
int backend_make_path(struct backend *b, const char *path);
/* Writes len zero bytes at off through f's backend. */
int backend_write_zeros(struct bfile *f, off_t off, off_t len);

#endif
