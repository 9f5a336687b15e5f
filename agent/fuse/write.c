/* write.c: WRITEs: the data received into a memfd of the thread's (its
 * write map) and sent to the servers from there by descriptor, or from
 * memory, or (spliced by libfuse) through the thread's memfd. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse/fuse_int.h"

/* A WRITE's data is received straight into a memfd of the thread's (one
 * copy, from the writer's pages), and the servers take it from there: a
 * server of this node copies it into its chunk file (one copy more,
 * copy_file_range), a remote one is sent it with sendfile. Through
 * libfuse's buffer it was copied twice more (into the buffer, into the
 * socket). The request's headers go to libfuse's buffer, what follows
 * them to the mapped memfd: back into the buffer unless it is a WRITE's
 * data (a few bytes of a path, for other requests). libfuse hands a
 * thread's buffer to one request at a time, taken and answered by that
 * thread before it reads the next, so one memfd per thread is enough. */
#define WRITE_HEAD (sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))
__thread struct write_map wmap = { .fd = -1 };
__thread bool write_in_map;   /* this thread's request is a WRITE, its data in wmap */
/* libfuse ends threads it has too many of: each thread's map goes with it. */
static pthread_key_t wmap_key;

static void write_map_free(void *arg)
{
    struct write_map *m = arg;
    if (m->mem)
        munmap(m->mem, m->len);
    if (m->fd >= 0)
        close(m->fd);
    *m = (struct write_map){ .fd = -1 };
}

/* The key that frees a thread's map when libfuse ends the thread; 0 or an
 * error number (pthread_key_create). */
int write_map_init(void)
{
    return pthread_key_create(&wmap_key, write_map_free);
}

static bool write_map_ready(size_t len)
{
    if (wmap.len >= len)
        return true;
    if (wmap.fd < 0 && pthread_setspecific(wmap_key, &wmap) != 0)
        return false;
    if (wmap.mem) {
        munmap(wmap.mem, wmap.len);
        wmap.mem = NULL;
        wmap.len = 0;
    }
    if (wmap.fd < 0 && (wmap.fd = memfd_create("adafs-fuse-write", MFD_CLOEXEC)) < 0)
        return false;
    if (ftruncate(wmap.fd, (off_t)len) < 0)
        return false;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, wmap.fd, 0);
    if (p == MAP_FAILED)
        return false;
    wmap.mem = p;
    wmap.len = len;
    return true;
}

ssize_t receive(int fd, char *buf, size_t len)
{
    write_in_map = false;
    if (len <= WRITE_HEAD || !write_map_ready(len - WRITE_HEAD)) {
        static atomic_bool said;
        if (len > WRITE_HEAD && !atomic_exchange(&said, true))
            fprintf(stderr, "adafs-fuse: no memfd to receive writes into (%s): "
                    "they are received into libfuse's buffer and copied once more\n",
                    strerror(errno));
        return read(fd, buf, len);
    }
    struct iovec iov[2] = { { buf, WRITE_HEAD }, { wmap.mem, len - WRITE_HEAD } };
    ssize_t n = readv(fd, iov, 2);
    if (n <= (ssize_t)WRITE_HEAD)
        return n;
    const struct fuse_in_header *h = (const void *)buf;
    const struct fuse_write_in *w = (const void *)(h + 1);
    if (h->opcode == FUSE_WRITE && (size_t)n - WRITE_HEAD == w->size)
        write_in_map = true;
    else
        memcpy(buf + WRITE_HEAD, wmap.mem, (size_t)n - WRITE_HEAD);
    return n;
}

/* A write's data that libfuse spliced from /dev/fuse (FUSE_CAP_SPLICE_READ:
 * the writer's pages, no copy) is spliced into a memfd of the thread's
 * (one copy), and a server copies it from there into its chunk file.
 * libfuse uses a thread's buffer before the thread takes its next
 * request, so one memfd per thread is enough. libfuse 3.14 does not
 * splice a 1 MiB write (its pipe cannot hold a request of 1 MiB and a
 * header): such data is received into the thread's write map (receive,
 * above) and sent from there. A read goes into libfuse's buffer from the
 * sockets and from there to the kernel (two copies): libfuse 3.14
 * answered a read given as a memfd by copying it into a buffer first
 * (pread, then writev: three), slower on this machine (1 MiB reads
 * through the mount, 4 alternating pairs: 404-837 MiB/s from memory
 * against 370-518 from a memfd). */
int thread_memfd(size_t size)
{
    static __thread int fd = -1;
    static __thread size_t have;
    if (fd < 0 && (fd = memfd_create("adafs-fuse-io", MFD_CLOEXEC)) < 0)
        return -errno;
    if (size > have) {
        if (ftruncate(fd, (off_t)size) < 0)
            return -errno;
        have = size;
    }
    return fd;
}

struct write_args {
    struct fuse_bufvec *data;
    size_t size;
    off_t off;
    bool in_map;   /* data is the thread's write map (receive) */
};

/* Smaller writes are sent from the map's memory like any buffer: passing
 * the descriptor to a server costs about what copying that much does. */
#define FD_WRITE_MIN (64u << 10)

/* Sends count bytes of fd's data at its offset 0 to the servers at off. */
static ssize_t pwrite_fd(struct handle *h, int fd, size_t count, off_t off)
{
    size_t done = 0;
    while (done < count) {
        ssize_t w = adafs_pwrite_from_fd(h->fs, h->lfd, fd, (off_t)done, count - done,
                                         off + (off_t)done);
        if (w <= 0)
            return done ? (ssize_t)done : (w < 0 ? w : -EIO);
        done += (size_t)w;
    }
    return (ssize_t)done;
}

/* From the thread's write map (receive), from libfuse's buffer, or
 * through the thread's memfd when libfuse spliced the data, to the
 * servers; O_APPEND from memory: the library appends at the end the
 * servers know (another node may have grown the file), not where the
 * kernel thinks it is. */
static ssize_t write_io(struct handle *h, void *arg)
{
    struct write_args *a = arg;
    atomic_store(&h->fresh, false);
    if (h->append) {
        char *mem = malloc(a->size ? a->size : 1);
        struct fuse_bufvec dst = FUSE_BUFVEC_INIT(a->size);
        dst.buf[0].mem = mem;
        ssize_t n = mem ? fuse_buf_copy(&dst, a->data, 0) : -ENOMEM;
        size_t done = 0;
        while (n >= 0 && done < (size_t)n) {
            ssize_t w = adafs_write(h->fs, h->lfd, mem + done, (size_t)n - done);
            if (w <= 0) {
                n = done ? (ssize_t)done : (w < 0 ? w : -EIO);
                break;
            }
            done += (size_t)w;
        }
        free(mem);
        return n;
    }
    if (a->in_map)
        return pwrite_fd(h, wmap.fd, a->size, a->off);
    const struct fuse_buf *b = &a->data->buf[0];
    if (a->data->count == 1 && a->data->idx == 0 && a->data->off == 0 &&
        !(b->flags & FUSE_BUF_IS_FD)) {
        size_t done = 0;
        while (done < a->size) {
            ssize_t w = adafs_pwrite(h->fs, h->lfd, (const char *)b->mem + done, a->size - done,
                                     a->off + (off_t)done);
            if (w <= 0)
                return done ? (ssize_t)done : (w < 0 ? w : -EIO);
            done += (size_t)w;
        }
        return (ssize_t)done;
    }
    int memfd = thread_memfd(a->size);
    if (memfd < 0)
        return memfd;
    struct fuse_bufvec dst = FUSE_BUFVEC_INIT(a->size);
    dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    dst.buf[0].fd = memfd;
    dst.buf[0].pos = 0;
    ssize_t n = fuse_buf_copy(&dst, a->data, 0);
    return n > 0 ? pwrite_fd(h, memfd, (size_t)n, a->off) : n;
}

int x_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
                       struct fuse_file_info *fi)
{
    (void)path;
    struct write_args a = { .data = buf, .size = fuse_buf_size(buf), .off = off };
    struct fuse_bufvec mapped = FUSE_BUFVEC_INIT(a.size);
    if (write_in_map && a.size <= wmap.len) {
        mapped.buf[0].mem = wmap.mem;
        a.data = &mapped;
        a.in_map = a.size >= FD_WRITE_MIN;
    }
    return (int)handle_io(handle_of(fi), write_io, &a);
}
