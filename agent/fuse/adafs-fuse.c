/* adafs-fuse: a job's adafs file system as a kernel mount, through FUSE.
 *
 *   adafs-fuse [--instance FILE] [--connections N] [--foreground]
 *              [--ready-fd N] [-o OPTION[,OPTION...]] MOUNTPOINT
 *
 * The LD_PRELOAD interposer reaches adafs from dynamically linked programs
 * only. A kernel mount serves the rest: static binaries, programs the
 * kernel itself runs (srun steps, exec), and mmap with the kernel's full
 * coherence. Every request goes to libadafs, so the file system keeps its
 * guarantees: the instance's secret, quotas (ENOSPC), EIO after the
 * instance's timeout when a server is gone (a process waiting on the mount
 * is never stuck for longer), and what the preload and every other node
 * see.
 *
 * The mount and the interposer stay consistent (doc/fuse.md): the kernel
 * caches no file's name and no absence (entry_timeout and
 * negative_timeout are 0 by default; only directories' names are kept,
 * for a second, see keep_directory_name), and attributes only for the
 * clock tick of the lookup that fetched them (attr_timeout is 0; see
 * keep_lookup_attributes), so every lookup and stat of a path asks the
 * servers as the interposer does; file data is read and written directly
 * (no page cache) where the kernel lets such files be mapped (below), and
 * otherwise cached while a file is open here, dropped at every open (no
 * keep_cache) and whenever a read finds the size or modification time
 * changed (auto_inval_data); writes go through to the servers before
 * write() returns (no writeback cache). Record locks are the kernel's, per
 * node.
 *
 * MOUNTPOINT may be /dev/fd/N, a /dev/fuse descriptor already mounted by a
 * privileged parent: the node agent mounts as root for the job and runs
 * this program as the job's user (libfuse's "mount by parent").
 *
 * This file keeps the mount: its options, the connections to the servers,
 * what INIT asks of the kernel, the operations table and main. The
 * operations and the program's I/O on /dev/fuse are in the other files of
 * fuse/ (fuse_int.h says which is which). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse/fuse_int.h"
#include "fuse/max_read.h"

#define CONNECTIONS_MAX 64

/* Several handles, each with its own connection to every server: one
 * handle's requests to a server are answered in order, so files used by
 * different processes at once go through different handles. */
static adafs *pool[CONNECTIONS_MAX];
static int npool;
static atomic_uint next_handle;
static int ready_fd = -1;   /* told "ready" once the kernel's INIT is answered */

/* The handle for path operations of this thread, and for a new open file. */
adafs *thread_fs(void)
{
    static __thread int slot = -1;
    if (slot < 0)
        slot = (int)(atomic_fetch_add(&next_handle, 1) % (unsigned)npool);
    return pool[slot];
}

adafs *spread_fs(void)
{
    return pool[atomic_fetch_add(&next_handle, 1) % (unsigned)npool];
}

/* The mount's max_read: set by main from its options. */
unsigned mount_max_read;

/* The last max_read=N of a -o list, into *max_read; false if one is not a
 * number of at least a page. */
static bool option_max_read(const char *opts, unsigned *max_read)
{
    for (const char *o = opts; o; o = strchr(o, ',') ? strchr(o, ',') + 1 : NULL) {
        if (strncmp(o, "max_read=", 9) != 0)
            continue;
        char *end;
        errno = 0;
        unsigned long v = strtoul(o + 9, &end, 10);
        if (errno || (*end && *end != ',') || v < 4096 || v > UINT_MAX)
            return false;
        *max_read = (unsigned)v;
    }
    return true;
}

static void *x_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    /* Inode numbers are adafs's (git keeps them in its index); a file
     * removed while open keeps its data in adafs, not as a hidden name. */
    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->hard_remove = 1;
    cfg->nullpath_ok = 1;
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
        conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    if (conn->capable & FUSE_CAP_READDIRPLUS)
        conn->want |= FUSE_CAP_READDIRPLUS;
    /* No splicing by libfuse: 3.14 splices neither a request nor a reply
     * of 1 MiB (its pipe cannot hold one), yet grows a pipe of 1 MiB per
     * thread trying, pipe pages the user has only so many of; and READ
     * replies are spliced by x_read, which drops libfuse's answer written
     * with writev (io_writev), not spliced. */
    conn->want &= ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    conn->max_background = 64;
    /* The kernel sets the mount's readahead to at most this when it takes
     * the answer: 1 MiB, what the agent sets once told "ready" (after
     * the answer, see io_writev), so neither undoes the other. */
    conn->max_readahead = 1 << 20;
    /* The mount's (main's default, or the last -o max_read: the agent's,
     * fuse/max_read.h), which libfuse requires here; the READ pipes are
     * sized to hold its replies. */
    conn->max_read = mount_max_read;
    read_pipe_bytes = adafs_fuse_pipe_bytes(mount_max_read);
    return NULL;
}

/* The mount answers from now on: tell whoever waits for it (once the
 * INIT answer is written, see io_writev). */
void say_ready(void)
{
    if (ready_fd < 0)
        return;
    if (write(ready_fd, "ready\n", 6) != 6)
        fprintf(stderr, "adafs-fuse: cannot write to --ready-fd %d: %s\n", ready_fd,
                strerror(errno));
    close(ready_fd);
    if (ready_fd <= 2)
        open("/dev/null", O_WRONLY);   /* takes its number back */
    ready_fd = -1;
}

static const struct fuse_operations ops = {
    .init = x_init,
    .getattr = x_getattr,
    .access = x_access,
    .mknod = x_mknod,
    .mkdir = x_mkdir,
    .unlink = x_unlink,
    .rmdir = x_rmdir,
    .symlink = x_symlink,
    .link = x_link,
    .rename = x_rename,
    .chmod = x_chmod,
    .chown = x_chown,
    .truncate = x_truncate,
    .utimens = x_utimens,
    .open = x_open,
    .create = x_create,
    .read = x_read,
    .write_buf = x_write_buf,
    .statfs = x_statfs,
    .release = x_release,
    .fsync = x_fsync,
    .opendir = x_opendir,
    .readdir = x_readdir,
    .releasedir = x_releasedir,
    .fallocate = x_fallocate,
    .lseek = x_lseek,
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: adafs-fuse [--instance FILE] [--connections N] [--foreground]\n"
            "                  [--ready-fd N] [-o OPTION[,OPTION...]] MOUNTPOINT\n"
            "Mounts an adafs instance at MOUNTPOINT (a directory, or /dev/fd/N: a\n"
            "/dev/fuse descriptor a privileged parent mounted).\n"
            "  --instance FILE   the instance file (default $ADAFS_INSTANCE)\n"
            "  --connections N   handles to the servers, each with its own\n"
            "                    connections (default 4, at most %d)\n"
            "  --foreground, -f  stay in the foreground (otherwise detach once mounted)\n"
            "  --ready-fd N      write \"ready\" to descriptor N once the mount answers\n"
            "  -o OPTIONS        FUSE options, e.g. entry_timeout=SECONDS,\n"
            "                    attr_timeout=SECONDS (both 0 by default), ro,\n"
            "                    max_read=BYTES (by default 1 MiB where fs.pipe-max-size\n"
            "                    allows pipes of 2 MiB, else 1032192)\n"
            "  --help, -h        this text\n", CONNECTIONS_MAX);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "instance", required_argument, NULL, 'i' },
        { "connections", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "ready-fd", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *instance = NULL;
    int connections = 4, foreground = 0, opt;
    /* No caching of names, attributes or absence by default: every lookup
     * and stat reaches the servers, as from the interposer. Options the
     * user gives with -o come after, and win. */
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    char defaults[160];
    mount_max_read = adafs_fuse_max_read();
    snprintf(defaults, sizeof defaults, "fsname=adafs,subtype=adafs,entry_timeout=0,"
             "attr_timeout=0,negative_timeout=0,max_read=%u", mount_max_read);
    if (fuse_opt_add_arg(&args, argv[0]) < 0 || fuse_opt_add_arg(&args, "-o") < 0 ||
        fuse_opt_add_arg(&args, defaults) < 0) {
        fprintf(stderr, "adafs-fuse: out of memory\n");
        return 1;
    }
    while ((opt = getopt_long(argc, argv, "fho:", longopts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'i':
            instance = optarg;
            break;
        case 'c':
            connections = (int)strtol(optarg, &end, 10);
            if (*end || connections < 1 || connections > CONNECTIONS_MAX) {
                fprintf(stderr, "adafs-fuse: --connections %s: a number from 1 to %d\n", optarg,
                        CONNECTIONS_MAX);
                fuse_opt_free_args(&args);
                return 2;
            }
            break;
        case 'f':
            foreground = 1;
            break;
        case 'r':
            ready_fd = (int)strtol(optarg, &end, 10);
            if (*end || ready_fd < 0 || fcntl(ready_fd, F_GETFD) < 0) {
                fprintf(stderr, "adafs-fuse: --ready-fd %s: not an open descriptor\n", optarg);
                fuse_opt_free_args(&args);
                return 2;
            }
            break;
        case 'o':
            if (!option_max_read(optarg, &mount_max_read)) {
                fprintf(stderr, "adafs-fuse: -o %s: max_read must be a number of bytes, "
                        "at least 4096\n", optarg);
                fuse_opt_free_args(&args);
                return 2;
            }
            if (fuse_opt_add_arg(&args, "-o") < 0 || fuse_opt_add_arg(&args, optarg) < 0) {
                fprintf(stderr, "adafs-fuse: out of memory\n");
                fuse_opt_free_args(&args);
                return 1;
            }
            break;
        case 'h':
            usage(stdout);
            fuse_opt_free_args(&args);
            return 0;
        default:
            usage(stderr);
            fuse_opt_free_args(&args);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        fuse_opt_free_args(&args);
        return 2;
    }
    const char *mountpoint = argv[optind];
    for (npool = 0; npool < connections; npool++) {
        char err[512] = "";
        int rc = adafs_connect(&pool[npool], instance, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "adafs-fuse: %s\n", err[0] ? err : strerror(-rc));
            fuse_opt_free_args(&args);
            return 1;
        }
    }
    struct fuse *f = fuse_new(&args, &ops, sizeof ops, NULL);
    if (!f) {
        fprintf(stderr, "adafs-fuse: bad FUSE options (see above)\n");
        fuse_opt_free_args(&args);
        return 2;
    }
    int rc = 1;
    if (fuse_mount(f, mountpoint) != 0) {
        fprintf(stderr, "adafs-fuse: cannot mount at %s (see above)\n", mountpoint);
        goto out;
    }
    static const struct fuse_custom_io io = { .read = io_read, .writev = io_writev,
                                              .splice_receive = io_splice,
                                              .splice_send = io_splice };
    struct fuse_session *se = fuse_get_session(f);
    handoffs_init();
    if (write_map_init() != 0) {
        fprintf(stderr, "adafs-fuse: cannot make a thread key\n");
        goto unmount;
    }
    fuse_fd = fuse_session_fd(se);
    if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) {
        fprintf(stderr, "adafs-fuse: cannot set up its I/O on /dev/fuse\n");
        goto unmount;
    }
    /* Reads and writes of up to 1 MiB each take a buffer that size: from
     * the heap, reused, not a fresh mapping faulted in every time. */
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    if (fuse_daemonize(foreground) != 0 || fuse_set_signal_handlers(fuse_get_session(f)) != 0) {
        fprintf(stderr, "adafs-fuse: cannot detach or set signal handlers\n");
        goto unmount;
    }
    struct fuse_loop_config *loop = fuse_loop_cfg_create();
    if (!loop) {
        fprintf(stderr, "adafs-fuse: out of memory\n");
        goto unmount;
    }
    fuse_loop_cfg_set_max_threads(loop, 32);
    fuse_loop_cfg_set_idle_threads(loop, 4);
    rc = fuse_loop_mt(f, loop) == 0 ? 0 : 1;
    fuse_loop_cfg_destroy(loop);
    fuse_remove_signal_handlers(fuse_get_session(f));
unmount:
    fuse_unmount(f);
out:
    fuse_destroy(f);
    fuse_opt_free_args(&args);
    for (int i = 0; i < npool; i++)
        adafs_disconnect(pool[i]);
    return rc;
}
