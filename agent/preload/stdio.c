/* stdio: FILE* streams on adafs files.
 *
 * glibc's stdio reads and writes through its internal __read/__write,
 * which an LD_PRELOAD library cannot replace, so a FILE* built on the
 * reserved kernel descriptor would miss adafs entirely. Instead fopen()
 * and fdopen() of adafs files return fopencookie() streams whose read,
 * write, seek and close go through the interposed read/write/lseek/close
 * (and so through route.c). All of stdio works on them (fprintf, fgets,
 * fread, fseek, ftell, setvbuf...). fileno() is answered from a registry,
 * since a cookie stream has no descriptor of its own in glibc.
 *
 * Standard streams: glibc's stdin, stdout and stderr use descriptors 0, 1
 * and 2 through the same internal calls. When one of those numbers comes
 * to stand for an adafs file (a shell's `cmd > /mount/f` reaching the
 * program over exec, or a dup2 in this process, as shells do around
 * builtins), the glibc variable is pointed at a cookie stream on that
 * number (glibc documents the three variables as assignable), and pointed
 * back at glibc's own stream, flushed first, when the number is closed or
 * reused. Data still buffered in the cookie stream at exit is flushed by
 * glibc's exit-time cleanup like any other stream.
 *
 * freopen() of one of our streams reopens in place; freopen() of stdin,
 * stdout or stderr onto an adafs path goes through the descriptor as
 * above; freopen() of any other glibc stream onto adafs cannot be done by
 * an interposer and fails with EOPNOTSUPP, leaving the stream open. */
#include "preload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pl_file {
    int fd;
    bool owns_fd;   /* false for the standard streams: 0-2 belong to the program */
    FILE *fp;
};

struct ptrmap pl_file_streams = PTRMAP_INIT;

/* fopen() mode text to open() flags and the plain mode fopencookie takes.
 * Returns 0 or -EINVAL. */
static int parse_mode(const char *mode, int *flags, char cookie_mode[3])
{
    int acc;
    if (!mode)
        return -EINVAL;
    switch (mode[0]) {
    case 'r': acc = O_RDONLY; *flags = 0; break;
    case 'w': acc = O_WRONLY; *flags = O_CREAT | O_TRUNC; break;
    case 'a': acc = O_WRONLY; *flags = O_CREAT | O_APPEND; break;
    default: return -EINVAL;
    }
    bool plus = false;
    for (const char *p = mode + 1; *p && *p != ','; p++) {
        switch (*p) {
        case '+': plus = true; break;
        case 'x': *flags |= O_EXCL; break;
        case 'e': *flags |= O_CLOEXEC; break;
        default: break; /* b, t, m, c: nothing to do */
        }
    }
    *flags |= plus ? O_RDWR : acc;
    cookie_mode[0] = mode[0];
    cookie_mode[1] = plus ? '+' : '\0';
    cookie_mode[2] = '\0';
    return 0;
}

static ssize_t cookie_read(void *c, char *buf, size_t size)
{
    return read(((struct pl_file *)c)->fd, buf, size);
}

static ssize_t cookie_write(void *c, const char *buf, size_t size)
{
    /* glibc treats a short count as an error; write until done. */
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(((struct pl_file *)c)->fd, buf + done, size - done);
        if (n <= 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static int cookie_seek(void *c, off64_t *pos, int whence)
{
    off_t r = lseek(((struct pl_file *)c)->fd, *pos, whence);
    if (r < 0)
        return -1;
    *pos = r;
    return 0;
}

static FILE *glibc_std[3]; /* glibc's own stream while ours replaces it */

static FILE **std_variable(int fd)
{
    return fd == 0 ? &stdin : fd == 1 ? &stdout : &stderr;
}

static int cookie_close(void *c)
{
    struct pl_file *f = c;
    ptrmap_get(&pl_file_streams, f->fp, true);
    bool close_fd = f->owns_fd;
    if (!f->owns_fd && glibc_std[f->fd] && *std_variable(f->fd) == f->fp) {
        /* The program itself closes stdin/stdout/stderr: as with glibc's
         * stream, the descriptor goes too, and the variable must not be
         * left pointing at freed memory. */
        *std_variable(f->fd) = glibc_std[f->fd];
        glibc_std[f->fd] = NULL;
        close_fd = true;
    }
    int rc = close_fd ? close(f->fd) : 0;
    free(f);
    return rc;
}

static const cookie_io_functions_t cookie_io = {
    .read = cookie_read,
    .write = cookie_write,
    .seek = cookie_seek,
    .close = cookie_close,
};

/* A stream on the adafs descriptor fd; on success the stream owns fd if
 * owns_fd. */
static FILE *cookie_stream(int fd, const char *cookie_mode, bool owns_fd)
{
    struct pl_file *f = malloc(sizeof *f);
    if (!f) {
        errno = ENOMEM;
        return NULL;
    }
    f->fd = fd;
    f->owns_fd = owns_fd;
    f->fp = fopencookie(f, cookie_mode, cookie_io);
    if (!f->fp) {
        free(f);
        return NULL;
    }
    if (ptrmap_put(&pl_file_streams, f->fp, f) < 0) {
        f->owns_fd = false;
        fclose(f->fp);
        errno = ENOMEM;
        return NULL;
    }
    return f->fp;
}

static FILE *fopen_adafs(int m, const char *inner, const char *mode)
{
    int flags;
    char cmode[3];
    if (parse_mode(mode, &flags, cmode) < 0) {
        errno = EINVAL;
        return NULL;
    }
    int fd = pl_open_adafs(m, inner, flags, 0666);
    if (fd < 0)
        return NULL;
    FILE *fp = cookie_stream(fd, cmode, true);
    if (!fp) {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return fp;
}

PL_EXPORT FILE *fopen(const char *path, const char *mode)
{
    struct pathres r;
    if (!pl_active())
        return real.fopen(path, mode);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, NULL, real.fopen(r.kpath, mode));
    return fopen_adafs(r.mount, r.inner, mode);
}

PL_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopen(path, mode);
}

PL_EXPORT FILE *fdopen(int fd, const char *mode)
{
    int lfd, flags;
    char cmode[3];
    if (!PL_ADAFS_FD(fd, lfd))
        return real.fdopen(fd, mode);
    if (parse_mode(mode, &flags, cmode) < 0) {
        errno = EINVAL;
        return NULL;
    }
    return cookie_stream(fd, cmode, true);
}

/* Reopens our stream f in place on path (NULL: the same file). */
static FILE *reopen_cookie(struct pl_file *f, const char *path, const char *mode)
{
    int flags;
    char cmode[3];
    char inner[PATH_MAX], full[PATH_MAX];
    if (parse_mode(mode, &flags, cmode) < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!path) {
        int lfd = fdmap_get(f->fd), rc;
        if (lfd < 0 || (rc = route_fd_path(lfd, inner, sizeof inner)) < 0 ||
            (rc = pathres_full_path(route_fd_mount(lfd), inner, full, sizeof full)) < 0) {
            errno = lfd < 0 ? EBADF : -rc;
            return NULL;
        }
        path = full;
    }
    fflush(f->fp);
    int fd = open(path, flags, 0666);
    if (fd < 0)
        return NULL;
    close(f->fd);
    f->fd = fd;
    clearerr(f->fp);
    fseeko(f->fp, 0, (flags & O_APPEND) ? SEEK_END : SEEK_SET);
    return f->fp;
}

/* freopen() of glibc's stdin, stdout or stderr onto an adafs file: the
 * file is opened and dup2()ed onto 0, 1 or 2, which points the variable at
 * a stream on it (pl_std_attach). That stream is returned: glibc's own one
 * could only reach the descriptor through calls we cannot see. Any other
 * glibc stream cannot be redirected: EOPNOTSUPP, the stream stays open. */
static FILE *reopen_std(int m, const char *inner, const char *mode, FILE *stream)
{
    int std = stream == stdin ? 0 : stream == stdout ? 1 : stream == stderr ? 2 : -1;
    int flags;
    char cmode[3];
    if (std < 0) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (parse_mode(mode, &flags, cmode) < 0) {
        errno = EINVAL;
        return NULL;
    }
    fflush(stream);
    int fd = pl_open_adafs(m, inner, flags & ~O_CLOEXEC, 0666);
    if (fd < 0)
        return NULL;
    int rc = fd == std ? 0 : dup2(fd, std);
    int saved = errno;
    if (fd != std)
        close(fd);
    if (rc < 0) {
        errno = saved;
        return NULL;
    }
    return *std_variable(std);
}

static FILE *freopen_common(const char *path, const char *mode, FILE *stream)
{
    struct pathres r;
    if (!pl_active())
        return real.freopen(path, mode, stream);
    struct pl_file *f = ptrmap_get(&pl_file_streams, stream, false);
    if (f)
        return reopen_cookie(f, path, mode);
    if (!path)
        return real.freopen(path, mode, stream);
    PL_ROUTE_PATH(AT_FDCWD, path, &r, NULL, real.freopen(r.kpath, mode, stream));
    return reopen_std(r.mount, r.inner, mode, stream);
}

PL_EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream)
{
    return freopen_common(path, mode, stream);
}

PL_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
    return freopen_common(path, mode, stream);
}

PL_EXPORT int fileno(FILE *stream)
{
    pl_ready();
    struct pl_file *f = ptrmap_get(&pl_file_streams, stream, false);
    return f ? f->fd : real.fileno(stream);
}

PL_EXPORT int fileno_unlocked(FILE *stream)
{
    pl_ready();
    struct pl_file *f = ptrmap_get(&pl_file_streams, stream, false);
    return f ? f->fd : real.fileno_unlocked(stream);
}

/* ---- standard streams ---- */

void pl_std_attach(int fd)
{
    if (fd < 0 || fd > 2 || glibc_std[fd])
        return;
    FILE **var = std_variable(fd);
    FILE *ours = cookie_stream(fd, fd == 0 ? "r" : "w", false);
    if (!ours) {
        pl_log("cannot give standard stream %d a stream on the adafs file it names: %s",
               fd, strerror(errno));
        return;
    }
    if (fd == 2)
        setvbuf(ours, NULL, _IONBF, 0);
    glibc_std[fd] = *var;
    *var = ours;
}

void pl_std_detach(int fd)
{
    if (fd < 0 || fd > 2 || !glibc_std[fd])
        return;
    FILE **var = std_variable(fd);
    FILE *ours = *var;
    *var = glibc_std[fd];
    glibc_std[fd] = NULL;
    fclose(ours); /* flushes into the adafs file, leaves the descriptor */
}
