/* direct: short-circuit reads of the chunks this node's server holds.
 *
 * A 64 KiB READ is one round trip, and on a node whose cores are shared
 * the two wake-ups of every round trip were most of its cost (doc/bench/
 * fs.md). A client on the server's own node asks that server once per
 * open file for a read-only descriptor of the file's local data file
 * (DATA_FD, proto.h) and from then on preads the chunks that server holds:
 * the same page cache the server writes through, so what any client wrote
 * or truncated is seen at once, and pread of the data file answers
 * exactly what a READ answers (its bytes up to the data file's end; the
 * caller tells holes from the end of the file as for a READ). files.c
 * sends the READs of a read's other pieces first and preads these while
 * the servers answer (fs_call_meanwhile).
 *
 * The data file of a key is only ever replaced by unlinking it (a remove,
 * a truncate to zero) and creating a new one; so after every pread the
 * descriptor is checked: still linked, still the inode it was (a program
 * that closed a number it never opened could have put another file
 * there). If not, the bytes are not used, the descriptor is dropped and
 * the piece is read with a READ; a later read may ask again.
 *
 * It costs one round trip per server and open file, so adafs_pread asks
 * for it only at the second read of an open file (a file read once gains
 * nothing), of the server of the read's first piece, and holds one (a job
 * has one server per node); adafs_pread_pieces asks at the first read
 * (the copy it saves is worth the round trip), of every server of this
 * node that holds a piece of the read (a test or a benchmark may run
 * several on one machine), up to DIRECT_SLOTS of them. At most
 * DIRECT_ASKS requests (a file with no data file yet: inline, or not written
 * on that server), and while this process holds fewer than DIRECT_MAX
 * (descriptors are a bounded resource of the program's). Servers that
 * refuse (TCP: not on this node; another uid) are not asked again.
 *
 * adafs_pread_pieces (files.c) does not read a piece: it gives the
 * caller the descriptor and offset (direct_extent), the caller splices
 * the pages into a pipe, and the same check follows (direct_still): a
 * pipe holds the data file's pages themselves, so a page it took before
 * the file was replaced is of the file the reader opened, as bytes a
 * pread took before would be. */
#include "client.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIRECT_ASKS 4   /* per server held or asked for */

static struct direct_slot *slot_of(struct open_file *of, int server)
{
    for (int i = 0; i < of->ndirect; i++)
        if (of->direct[i].server == server)
            return &of->direct[i];
    return NULL;
}

int direct_holds(struct open_file *of, int server)
{
    return slot_of(of, server) != NULL;
}

void direct_count(struct open_file *of)
{
    of->reads++;
}

void direct_consider(adafs *fs, struct open_file *of, int server, int eager)
{
    if ((!eager && (of->reads < 2 || of->ndirect > 0)) || of->ndirect >= DIRECT_SLOTS ||
        of->direct_asks >= DIRECT_ASKS * (unsigned)(eager ? DIRECT_SLOTS : 1) || S_ISDIR(of->mode) ||
        atomic_load(&fs->conns[server].no_direct) || slot_of(of, server))
        return;
    /* After a miss (no data file yet), every 8th read asks again. */
    if (of->direct_asks > (unsigned)of->ndirect && of->reads % 8 != 0)
        return;
    if (atomic_fetch_add(&fs->direct_open, 1) >= DIRECT_MAX) {
        atomic_fetch_sub(&fs->direct_open, 1);
        return;
    }
    of->direct_asks++;
    int fd = fs_data_fd(fs, server, of->key);
    struct stat st;
    if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode)) {
        of->direct[of->ndirect++] = (struct direct_slot){ .fd = fd, .server = server,
                                                          .dev = st.st_dev, .ino = st.st_ino };
        return;
    }
    if (fd >= 0)
        close(fd);
    if (fd == -EPERM)
        atomic_store(&fs->conns[server].no_direct, 1);
    atomic_fetch_sub(&fs->direct_open, 1);
}

/* Is the slot's descriptor still of's data file, linked? st: its stat. */
static int still_ours(const struct direct_slot *d, struct stat *st, int *gone)
{
    if (syscall(SYS_fstat, d->fd, st) < 0 || st->st_dev != d->dev || st->st_ino != d->ino) {
        /* Not ours any more: must not be closed by us. (The interposer
         * sees the number hold another file: preload/ownfd.c.) */
        *gone = 1;
        return 0;
    }
    return st->st_nlink > 0;
}

static void forget(adafs *fs, struct open_file *of, struct direct_slot *d, int close_it)
{
    if (close_it)
        close(d->fd);   /* libc's: an interposer sees the library close it */
    *d = of->direct[--of->ndirect];
    atomic_fetch_sub(&fs->direct_open, 1);
}

ssize_t direct_read(adafs *fs, struct open_file *of, uint64_t index, uint32_t chunk_off,
                    size_t len, char *buf)
{
    struct direct_slot *d = slot_of(of, chunk_server(fs, of->key, index));
    if (!d)
        return -1;
    off_t pos = (off_t)(index * fs->inst.chunk_size + chunk_off);
    size_t done = 0;
    while (done < len) {
        ssize_t n = syscall(SYS_pread64, d->fd, buf + done, len - done, pos + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                done = (size_t)-1;
            break;
        }
        done += (size_t)n;
    }
    int gone = 0;
    struct stat st;
    if (done != (size_t)-1 && still_ours(d, &st, &gone))
        return (ssize_t)done;
    forget(fs, of, d, !gone);
    return -1;
}

ssize_t direct_extent(adafs *fs, struct open_file *of, uint64_t index, uint32_t chunk_off,
                      size_t len, int *fd, off_t *pos)
{
    struct direct_slot *d = slot_of(of, chunk_server(fs, of->key, index));
    if (!d)
        return -1;
    int gone = 0;
    struct stat st;
    if (!still_ours(d, &st, &gone)) {
        forget(fs, of, d, !gone);
        return -1;
    }
    *fd = d->fd;
    *pos = (off_t)(index * fs->inst.chunk_size + chunk_off);
    if (st.st_size <= *pos)
        return 0;
    return (uint64_t)(st.st_size - *pos) < len ? (ssize_t)(st.st_size - *pos) : (ssize_t)len;
}

int direct_still(adafs *fs, struct open_file *of, int fd)
{
    for (int i = 0; i < of->ndirect; i++) {
        struct direct_slot *d = &of->direct[i];
        if (d->fd != fd)
            continue;
        int gone = 0;
        struct stat st;
        if (still_ours(d, &st, &gone))
            return 1;
        forget(fs, of, d, !gone);
        return 0;
    }
    return 0;   /* dropped meanwhile: not to be trusted either */
}

void direct_drop(adafs *fs, struct open_file *of)
{
    while (of->ndirect > 0) {
        int gone = 0;
        struct stat st;
        struct direct_slot *d = &of->direct[of->ndirect - 1];
        still_ours(d, &st, &gone);
        forget(fs, of, d, !gone);
    }
}
