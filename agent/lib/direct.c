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
 * It costs one round trip per open file, so it is asked for only at the
 * second read of an open file (a file read once gains nothing), at most
 * DIRECT_ASKS times (a file with no data file yet: inline, or not written
 * on that server), and while this process holds fewer than DIRECT_MAX
 * (descriptors are a bounded resource of the program's). Servers that
 * refuse (TCP: not on this node; another uid) are not asked again. */
#include "client.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIRECT_ASKS 4

void direct_consider(adafs *fs, struct open_file *of, int server)
{
    if (of->reads++ == 0 || of->direct_fd >= 0 || of->direct_asks >= DIRECT_ASKS ||
        S_ISDIR(of->mode) || atomic_load(&fs->conns[server].no_direct))
        return;
    /* After a miss (no data file yet), every 8th read asks again. */
    if (of->direct_asks > 0 && of->reads % 8 != 0)
        return;
    if (atomic_fetch_add(&fs->direct_open, 1) >= DIRECT_MAX) {
        atomic_fetch_sub(&fs->direct_open, 1);
        return;
    }
    of->direct_asks++;
    int fd = fs_data_fd(fs, server, of->key);
    struct stat st;
    if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode)) {
        of->direct_fd = fd;
        of->direct_server = server;
        of->direct_dev = st.st_dev;
        of->direct_ino = st.st_ino;
        return;
    }
    if (fd >= 0)
        close(fd);
    if (fd == -EPERM)
        atomic_store(&fs->conns[server].no_direct, 1);
    atomic_fetch_sub(&fs->direct_open, 1);
}

/* Is fd still of's data file, linked? */
static int still_ours(const struct open_file *of, int *gone)
{
    struct stat st;
    if (syscall(SYS_fstat, of->direct_fd, &st) < 0 || st.st_dev != of->direct_dev ||
        st.st_ino != of->direct_ino) {
        /* Not ours any more: must not be closed by us. (The interposer
         * sees the number hold another file: preload/ownfd.c.) */
        *gone = 1;
        return 0;
    }
    return st.st_nlink > 0;
}

static void forget(adafs *fs, struct open_file *of, int close_it)
{
    if (close_it)
        close(of->direct_fd);   /* libc's: an interposer sees the library close it */
    of->direct_fd = -1;
    atomic_fetch_sub(&fs->direct_open, 1);
}

ssize_t direct_read(adafs *fs, struct open_file *of, uint64_t index, uint32_t chunk_off,
                    size_t len, char *buf)
{
    if (of->direct_fd < 0 || chunk_server(fs, of->key, index) != of->direct_server)
        return -1;
    off_t pos = (off_t)(index * fs->inst.chunk_size + chunk_off);
    size_t done = 0;
    while (done < len) {
        ssize_t n = syscall(SYS_pread64, of->direct_fd, buf + done, len - done,
                            pos + (off_t)done);
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
    if (done != (size_t)-1 && still_ours(of, &gone))
        return (ssize_t)done;
    forget(fs, of, !gone);
    return -1;
}

void direct_drop(adafs *fs, struct open_file *of)
{
    if (of->direct_fd < 0)
        return;
    int gone = 0;
    still_ours(of, &gone);
    forget(fs, of, !gone);
}
