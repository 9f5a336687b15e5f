/* attr.c: the operations on paths: attributes (getattr, chmod, chown,
 * truncate, utimens, statfs) and names (mknod, mkdir, unlink, rmdir,
 * rename; no links), each on the calling thread's handle to adafs. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "fuse/fuse_int.h"

int x_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi && fi->fh) {
        struct handle *h = handle_of(fi);
        if (atomic_exchange(&h->fresh, false)) {
            *st = h->st;
            return 0;
        }
        return adafs_fstat(h->fs, h->lfd, st);
    }
    if (!path)
        return -ENOENT;
    if (req_opcode == FUSE_GETATTR && handoff_take(req_pid, path, st))
        return 0;
    /* A lookup is of a name in a directory the kernel holds: a missing
     * name is ENOENT without asking about the ancestors (doc/fuse.md). */
    int rc = req_opcode == FUSE_LOOKUP ? adafs_stat_entry(thread_fs(), path, st)
                                       : adafs_stat(thread_fs(), path, st);
    if (rc == 0 && req_opcode == FUSE_LOOKUP && req_pid &&
        !atomic_load_explicit(&handoff_off, memory_order_relaxed))
        handoff_set(req_pid, path, st);
    return rc;
}

int x_access(const char *path, int mask)
{
    return adafs_access(thread_fs(), path, mask);
}

int x_mkdir(const char *path, mode_t mode)
{
    return adafs_mkdir(thread_fs(), path, mode);
}

/* A regular file is created; FIFOs, devices and sockets do not exist in
 * adafs (EPERM, as mknod(2) documents for such a file system). */
int x_mknod(const char *path, mode_t mode, dev_t dev)
{
    (void)dev;
    if (!S_ISREG(mode))
        return -EPERM;
    adafs *fs = thread_fs();
    int fd = adafs_open(fs, path, O_CREAT | O_EXCL | O_WRONLY, mode & 07777);
    return fd < 0 ? fd : adafs_close(fs, fd);
}

int x_unlink(const char *path)
{
    return adafs_unlink(thread_fs(), path);
}

int x_rmdir(const char *path)
{
    return adafs_rmdir(thread_fs(), path);
}

/* No symbolic or hard links in adafs: EPERM, as link(2) and symlink(2)
 * document for a file system without them (git, cp -l then copy). */
int x_symlink(const char *target, const char *path)
{
    (void)target;
    (void)path;
    return -EPERM;
}

int x_link(const char *from, const char *to)
{
    (void)from;
    (void)to;
    return -EPERM;
}

int x_rename(const char *from, const char *to, unsigned int flags)
{
    adafs *fs = thread_fs();
    if (flags & ~RENAME_NOREPLACE)
        return -EINVAL;   /* RENAME_EXCHANGE, RENAME_WHITEOUT */
    if (flags & RENAME_NOREPLACE) {
        /* checked, then renamed: not atomic against a concurrent creator */
        struct stat st;
        int rc = adafs_stat(fs, to, &st);
        if (rc == 0)
            return -EEXIST;
        if (rc != -ENOENT)
            return rc;
    }
    return adafs_rename(fs, from, to);
}

int x_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    (void)fi;
    return path ? adafs_chmod(thread_fs(), path, mode) : -ENOENT;
}

/* Files belong to the job's user: chown succeeds when it changes nothing
 * (the owner, or a group of the caller), else EPERM, as the interposer. */
int x_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct stat st;
    int rc = x_getattr(path, &st, fi);
    if (rc < 0)
        return rc;
    if (uid != (uid_t)-1 && uid != st.st_uid)
        return -EPERM;
    if (gid == (gid_t)-1 || gid == st.st_gid || gid == getgid())
        return 0;
    gid_t groups[NGROUPS_MAX];
    int n = getgroups(NGROUPS_MAX, groups);
    for (int i = 0; i < n; i++)
        if (groups[i] == gid)
            return 0;
    return -EPERM;
}

int x_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi && fi->fh)
        return adafs_ftruncate(handle_of(fi)->fs, handle_of(fi)->lfd, size);
    return path ? adafs_truncate(thread_fs(), path, size) : -ENOENT;
}

int x_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (!path)
        return -ENOENT;
    struct timespec t[2] = { tv[0], tv[1] };
    struct stat st;
    bool omit = t[0].tv_nsec == UTIME_OMIT || t[1].tv_nsec == UTIME_OMIT;
    if (omit) {
        int rc = x_getattr(path, &st, fi);
        if (rc < 0)
            return rc;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < 2; i++) {
        if (t[i].tv_nsec == UTIME_NOW)
            t[i] = now;
        else if (t[i].tv_nsec == UTIME_OMIT)
            t[i] = i == 0 ? st.st_atim : st.st_mtim;
    }
    return adafs_utimens(thread_fs(), path, t);
}

int x_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return adafs_statvfs(thread_fs(), st);
}
