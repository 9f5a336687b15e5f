/* fuse_int.h: what adafs-fuse's files share, not an API. adafs-fuse.c
 * keeps the mount (options, connections, the operations table, main);
 * kernel_io.c the program's own I/O on /dev/fuse (requests taken, replies
 * amended on their way out); handoff.c a lookup's attributes handed to the
 * GETATTR after it; attr.c the operations on paths (attributes, names);
 * dir.c open directories; file.c open files; read.c READs (spliced replies
 * and their pipes); write.c WRITEs (the thread's write map and memfd). */
#ifndef ADAFS_FUSE_INT_H
#define ADAFS_FUSE_INT_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "adafs.h"

/* ---- adafs-fuse.c: the mount */
/* The handle for path operations of this thread, and for a new open file. */
adafs *thread_fs(void);
adafs *spread_fs(void);
/* The mount's max_read: set by main from its options. */
extern unsigned mount_max_read;
/* The mount answers from now on: tell whoever waits for it. */
void say_ready(void);

/* ---- kernel_io.c: requests and replies on /dev/fuse */
extern int fuse_fd;      /* /dev/fuse: a request spliced from it is not seen */
extern bool direct_io;   /* the INIT answer asked for direct I/O with mmap */
/* The request this thread serves (kernel_io.c). */
extern __thread uint32_t req_opcode, req_pid;
extern __thread uint64_t req_nodeid, req_unique, answered;
/* The kernel's order of requests and replies made the program's own
 * (kernel_io.c, at kernel_order). */
extern atomic_uint kernel_order;

static inline void before_reply(void)
{
    atomic_fetch_add_explicit(&kernel_order, 1, memory_order_release);
}

static inline void after_request(void)
{
    (void)atomic_load_explicit(&kernel_order, memory_order_acquire);
}

ssize_t io_read(int fd, void *buf, size_t len, void *userdata);
ssize_t io_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                  unsigned int flags, void *userdata);
ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata);
void open_forgets_lookup(void);

/* ---- handoff.c: a lookup's attributes for the GETATTR after it */
extern atomic_bool handoff_off;   /* some requests went unseen (spliced) */
void handoffs_init(void);
void handoff_set(uint32_t pid, const char *path, const struct stat *st);
bool handoff_take(uint32_t pid, const char *path, struct stat *st);

/* ---- write.c: WRITEs */
struct write_map {
    int fd;
    char *mem;
    size_t len;
};
extern __thread struct write_map wmap;
extern __thread bool write_in_map;   /* this thread's request is a WRITE, its data in wmap */
int write_map_init(void);
ssize_t receive(int fd, char *buf, size_t len);
int x_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
                struct fuse_file_info *fi);

/* ---- file.c: open files */
/* An open file (fi->fh). The stat of a file just created is kept for the
 * getattr libfuse asks right after: one round trip less per create.
 *
 * The kernel sends many reads of one file at once (readahead), which the
 * library serves one after the other. When a server is gone, each would
 * wait out the instance's timeout in turn: after the first EIO, the
 * others, and every later read or write of this open file, fail at once,
 * so a reader gets EIO after one timeout, not after one per read queued. */
struct handle {
    pthread_mutex_t io;
    adafs *fs;
    int lfd;
    bool append;
    atomic_bool fresh;   /* st is still the file's: taken by one getattr */
    bool failed;       /* an I/O gave EIO: a server is gone */
    struct stat st;
};

static inline struct handle *handle_of(const struct fuse_file_info *fi)
{
    return (struct handle *)(uintptr_t)fi->fh;
}
ssize_t handle_io(struct handle *h, ssize_t (*io)(struct handle *, void *), void *arg);
int x_open(const char *path, struct fuse_file_info *fi);
int x_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int x_release(const char *path, struct fuse_file_info *fi);
int x_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int x_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi);
off_t x_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi);

/* ---- read.c: READs */
/* The pipes' size, for the mount's max_read: set by x_init. */
extern size_t read_pipe_bytes;
int x_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi);

/* ---- attr.c: operations on paths */
int x_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
int x_access(const char *path, int mask);
int x_mkdir(const char *path, mode_t mode);
int x_mknod(const char *path, mode_t mode, dev_t dev);
int x_unlink(const char *path);
int x_rmdir(const char *path);
int x_symlink(const char *target, const char *path);
int x_link(const char *from, const char *to);
int x_rename(const char *from, const char *to, unsigned int flags);
int x_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int x_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int x_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int x_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi);
int x_statfs(const char *path, struct statvfs *st);

/* ---- dir.c: open directories */
int x_opendir(const char *path, struct fuse_file_info *fi);
int x_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
              struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int x_releasedir(const char *path, struct fuse_file_info *fi);

#endif
