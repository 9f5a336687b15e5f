/* preload.h: what every module of libadafs_preload.so shares.
 *
 * libadafs_preload.so is an LD_PRELOAD interposer: it defines open, read,
 * stat, opendir, fopen... so that unmodified dynamically linked programs see
 * the adafs file system under $ADAFS_MOUNT (and those of $ADAFS_MOUNTS).
 * Calls on paths under a mount (absolute, or relative to a working
 * directory or directory fd inside it) and on descriptors opened there go
 * to libadafs, to the handle of that mount; everything else goes to the C
 * library untouched.
 *
 * Modules: real (the C library's functions), fdmap (kernel fd -> library
 * fd), pathres (mount, working directory, path routing), route (the one door
 * into libadafs), ownfd (libadafs's own descriptors kept out of the
 * program's way), ptrmap (our DIR* and FILE*), and the interception
 * families: file.c (descriptors; file_io.c their reads and writes),
 * meta.c, stat.c and attr.c (path operations), dir.c (directory streams), stdio.c (FILE*),
 * misc.c (mmap, xattr, copy offload, preallocation), exec.c (exec and
 * spawn; exec_handover.c the environment and descriptors it hands on). */
#ifndef ADAFS_PRELOAD_H
#define ADAFS_PRELOAD_H

/* The wrappers must be real functions with the C library's names. */
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "adafs.h"
#include "real.h"
#include "fdmap.h"
#include "pathres.h"
#include "ptrmap.h"
#include "ownfd.h"
#include "route.h"

/* Only the wrappers are visible outside the library: internal names must
 * never be interposed by a program's own symbols of the same name. */
#define PL_EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(off_t) == sizeof(off64_t), "the *64 wrappers assume LP64");

/* Runs the one-time initialisation (libc table, mount, working directory,
 * descriptors inherited over exec) and says whether this call may be
 * routed: false inside libadafs (its own I/O) and when no mount is set. */
extern pthread_once_t pl_once;
void pl_init(void);
static inline bool pl_active(void)
{
    if (route_depth)
        return false;
    pthread_once(&pl_once, pl_init);
    return pathres_active();
}

/* For wrappers that look at their own objects first (DIR*, FILE*): only
 * makes sure the libc table is filled. */
static inline void pl_ready(void)
{
    if (!route_depth)
        pthread_once(&pl_once, pl_init);
}

/* True when fd is an adafs descriptor this call may route; sets lfd. */
#define PL_ADAFS_FD(fd, lfd) (pl_active() && ((lfd) = fdmap_get(fd)) >= 0)

/* In a wrapper: resolves (dirfd, path) into *r; on a resolution error
 * returns err with errno set, for a kernel path returns kernel_call (which
 * uses r->kpath); for an adafs path falls through with r->mount and
 * r->inner set. */
#define PL_ROUTE_PATH(dirfd, path, r, err, kernel_call) do {                   \
        int rc_ = pathres_resolve((dirfd), (path), (r));                       \
        if (rc_ < 0) {                                                         \
            errno = -rc_;                                                      \
            return (err);                                                      \
        }                                                                      \
        if (!(r)->adafs)                                                       \
            return (kernel_call);                                              \
    } while (0)

/* The mode argument of open()-like variadic calls. */
#define PL_OPEN_MODE(flags) __extension__ ({                                   \
        mode_t m_ = 0;                                                         \
        if (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE) {       \
            va_list ap_;                                                       \
            va_start(ap_, flags);                                              \
            m_ = (mode_t)va_arg(ap_, int);                                     \
            va_end(ap_);                                                       \
        }                                                                      \
        m_; })

/* Shared by the families (file.c): opens inner in adafs mount m and returns
 * a new kernel descriptor standing for it, or -1 with errno. */
int pl_open_adafs(int m, const char *inner, int flags, mode_t mode);
/* stat.c: stats inner in adafs mount m (st_dev telling the mount), for the
 * path family (meta.c); -1 with errno set. */
struct stat;
int pl_stat_inner(int m, const char *inner, struct stat *st);
/* meta.c: the inner path of an adafs descriptor (lfd: the library's), for
 * calls libadafs takes by path (chdir, chmod, utimens...); -1 with errno. */
int pl_fd_inner(int lfd, char *buf, size_t len);
/* Closes the library side of a descriptor taken out of fdmap (rfd: route.h's
 * descriptor): 0 or -errno. */
int pl_release(int rfd, void *dirstate);

/* Our DIR* (dir.c) and FILE* (stdio.c) streams. */
extern struct ptrmap pl_dir_streams;
extern struct ptrmap pl_file_streams;

/* stdio.c: descriptor fd (0, 1 or 2) now stands for an adafs file, or is
 * about to stop doing so: points stdin/stdout/stderr at a stream on it,
 * or back at glibc's own (flushing ours first). */
void pl_std_attach(int fd);
void pl_std_detach(int fd);

/* dir.c: the getdents64 state kept per descriptor. */
void pl_dirstate_free(void *dirstate);
off_t pl_dirstate_seek(void *dirstate, off_t pos);

/* exec.c: adopts the adafs descriptors a parent handed over exec. */
void pl_exec_adopt(void);
/* exec.c: when this program was run from adafs (a memfd) and kpath names
 * its /proc/.../exe link, the adafs path the link stands for; else NULL. */
const char *pl_exec_self_exe(const char *kpath);

/* glibc declares many pointer arguments nonnull, yet the kernel calls
 * accept NULL (utimensat's path) or must answer EFAULT: test them through
 * this so the compiler cannot drop the check. */
static inline bool pl_null(const void *p)
{
    const void *volatile v = p;
    return v == NULL;
}

/* One line on stderr, prefixed "adafs_preload[pid]: ". Never allocates. */
void pl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The process's umask, tracked so that files created in adafs get the same
 * mode the kernel would give them. */
mode_t pl_umask(void);

/* Sets errno from a negative library result; returns -1 (or r if r >= 0). */
static inline long pl_ret(long r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

#endif
