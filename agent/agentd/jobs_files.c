/* jobs_files: a job's paths on this node (jobs.h's layout) and how root
 * makes and removes them safely: every directory on the way root's and
 * not writable by users (check_root_path), the job user's directories and
 * files appearing with their owner already set, and a job's directory
 * emptied as its user, never following a link or leaving its file system. */
#include "jobs_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "instance.h"
#include "net.h"

/* A storage path from the plugin must be absolute, free of "..", and one of
 * this agent's storage roots or below one. */
bool storage_allowed(const char *path)
{
    if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") ||
        (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0))
        return false;
    for (size_t i = 0; i < cfg->nroots; i++) {
        size_t len = strlen(cfg->storage_roots[i]);
        if (strncmp(path, cfg->storage_roots[i], len) == 0 &&
            (path[len] == '\0' || path[len] == '/'))
            return true;
    }
    return false;
}

/* Checks one component of a path root writes below (last: the path
 * itself). Returns 0 or -errno with why filled. */
static int check_root_component(const char *dir, bool last, char *why, size_t whylen)
{
    struct stat st;
    int rc = 0;
    if (lstat(dir, &st) < 0)
        rc = -errno;
    else if (S_ISLNK(st.st_mode))
        rc = -ELOOP;
    else if (!S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    else if (st.st_uid != 0)
        rc = -EPERM;
    else if ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX)))
        rc = -EPERM;
    if (rc == 0)
        return 0;
    if (rc == -ELOOP)
        snprintf(why, whylen, "%s is a symbolic link", dir);
    else if (rc == -EPERM && st.st_uid != 0)
        snprintf(why, whylen, "%s is owned by uid %u, not root", dir, (unsigned)st.st_uid);
    else if (rc == -EPERM)
        snprintf(why, whylen, "%s is group/world-writable%s", dir, last ? "" : " and not sticky");
    else
        snprintf(why, whylen, "%s: %s", dir, strerror(-rc));
    return rc;
}

/* Root makes and writes files below the storage paths and the mount
 * prefix, so no user may be able to change any directory on the way
 * there (a user-owned /var/tmp/adafs would let them plant links): every
 * component from / must be a real directory of root's, not writable by
 * others unless sticky (so /tmp may be on the way; the path itself may
 * not be writable at all). create: mkdir -p what is missing, 0755;
 * otherwise a missing component ends the check (it is made, and checked,
 * when first used). Returns 0 or -errno with why naming the component. */
int check_root_path(const char *path, bool create, char *why, size_t whylen)
{
    char buf[PATH_MAX];
    pathf(buf, sizeof(buf), "%s", path);
    size_t len = strlen(buf);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    int rc = check_root_component("/", len == 1, why, whylen);
    for (size_t i = 1; rc == 0 && i <= len; i++) {
        if ((buf[i] != '/' && buf[i] != '\0') || buf[i - 1] == '/')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (create && mkdir(buf, 0755) == 0) {
            if (chmod(buf, 0755) < 0)   /* whatever the umask */
                rc = -errno;
        } else if (create && errno != EEXIST) {
            rc = -errno;
        }
        if (rc < 0)
            snprintf(why, whylen, "cannot create %s: %s", buf, strerror(-rc));
        else
            rc = check_root_component(buf, i == len, why, whylen);
        buf[i] = saved;
        if (rc == -ENOENT && !create)
            return 0;
    }
    return rc;
}

/* Creates dir (in a root-owned parent) for the job user, 0700. An existing
 * directory is accepted only if it is a real directory of that user. The
 * directory appears with its owner already set (made under a temporary
 * name, then renamed without replacing), because agents sharing a mount
 * prefix create a job's mount point at the same moment and one must never
 * see the other's directory while it still belongs to root. */
int make_user_dir(const char *dir, const struct user_id *u)
{
    char tmp[PATH_MAX];
    pathf(tmp, sizeof(tmp), "%s.tmp.%d.%lu", dir, (int)getpid(), (unsigned long)pthread_self());
    if (mkdir(tmp, 0700) < 0)
        return -errno;
    int rc = 0;
    if (lchown(tmp, u->uid, u->gid) < 0 || renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) < 0)
        rc = -errno;
    if (rc == 0)
        return 0;
    rmdir(tmp);
    if (rc != -EEXIST)
        return rc;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != u->uid)
        return -EEXIST;
    return 1;
}

/* Writes text to path (in a root-owned directory) as a private file of the
 * job user: temporary name, owner set before any byte is written, rename. */
int write_user_file(const char *path, const char *text, const struct user_id *u)
{
    char tmp[PATH_MAX];
    pathf(tmp, sizeof(tmp), "%s.tmp.%d.%lu", path, (int)getpid(),
             (unsigned long)pthread_self());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (fchown(fd, u->uid, u->gid) < 0 || net_write_full(fd, text, strlen(text), 0) < 0 ||
        fsync(fd) < 0)
        rc = -errno;
    close(fd);
    if (!rc && rename(tmp, path) < 0)
        rc = -errno;
    if (rc)
        unlink(tmp);
    return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (ftw->level == 0)
        return 0;   /* the top directory stays: it lives in a root-owned parent */
    return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

#define WIPE_WALK (FTW_PHYS | FTW_MOUNT)   /* never follow a link, never leave the file system */

/* Gives the user rwx on every directory, before anything is removed: a
 * directory the job made read-only or unreadable must not stop the wipe
 * (a failed teardown drains the node). Pre-order, so each directory is
 * opened up before its entries are visited; one that could not even be
 * read is opened up, then walked on its own. A chmod that fails shows up
 * as a failed removal. */
static int open_up_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_D && (st->st_mode & 0700) != 0700)
        chmod(path, 0700);
    if (flag == FTW_DNR && chmod(path, 0700) == 0)
        return nftw(path, open_up_entry, 16, WIPE_WALK) == 0 ? 0 : -1;
    return 0;
}

/* Runs as the job user: empties the job's server root (or mount point). */
int wipe_as_user(void *dir)
{
    if (nftw(dir, open_up_entry, 16, WIPE_WALK) != 0)
        return 1;
    return nftw(dir, remove_entry, 32, FTW_DEPTH | WIPE_WALK) == 0 ? 0 : 1;
}

void path_join(char *out, size_t len, const char *a, const char *b)
{
    if ((size_t)snprintf(out, len, "%s/%s", a, b) >= len)
        out[0] = '\0';
}

/* The instance file and the secret: in the mount prefix, so their path is
 * the same on every node whatever storage each node uses. */
void job_file_path(char *out, size_t len, uint32_t id, const char *what)
{
    instance_file_path(out, len, cfg->mount_prefix, id, what);
}

/* Removes the instance and secret files of a job once no node directory of
 * it is left under storage (several agents may share a host). */
void remove_job_files_if_last(const char *storage, uint32_t id)
{
    char lockpath[PATH_MAX], path[PATH_MAX], name[64];
    path_join(lockpath, sizeof(lockpath), storage, ".lock");
    int lock = open(lockpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock >= 0)
        flock(lock, LOCK_EX);
    bool others = false;
    DIR *d = opendir(storage);
    snprintf(name, sizeof(name), "job.%u", id);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || e->d_type != DT_DIR)
            continue;
        char nodedir[PATH_MAX];
        path_join(nodedir, sizeof(nodedir), storage, e->d_name);
        path_join(path, sizeof(path), nodedir, name);
        struct stat st;
        if (lstat(path, &st) == 0)
            others = true;
    }
    if (d)
        closedir(d);
    if (!others) {
        job_file_path(path, sizeof(path), id, INSTANCE_FILE);
        unlink(path);
        job_file_path(path, sizeof(path), id, INSTANCE_SECRET);
        unlink(path);
        job_file_path(path, sizeof(path), id, INSTANCE_SERVER_KEY);
        unlink(path);
    }
    if (lock >= 0)
        close(lock);
}

void pidfile_path(char *out, size_t len, const struct job *j)
{
    pathf(out, len, "%s.pid", j->dir);
}

/* The server's --secret-file: a job's in the mount prefix (the same path
 * on every node), a persistent instance's next to its storage, which
 * outlives the mount prefix's contents (persistent.h). */
void secret_path(char *out, size_t len, const struct job *j)
{
    if (j->persist)
        pathf(out, len, "%s.secret", j->dir);
    else
        job_file_path(out, len, j->id, INSTANCE_SECRET);
}

/* Beside the secret (adafsd finds them there, by the secret's name): the
 * servers' key (their usage exchange) and, for a persistent instance, the
 * instance file of its servers (a job's is in the mount prefix already). */
void beside_secret(char *out, size_t len, const struct job *j, const char *what)
{
    if (j->persist)
        pathf(out, len, "%s.%s", j->dir, what);
    else
        job_file_path(out, len, j->id, what);
}

/* Writes the servers' key beside the secret, the server's user's like the
 * secret (doc/fairshare.md says who may read it and why that is enough);
 * without one (hex ""), removes a key an earlier run left, so the server
 * does not take it. 0 or -errno. */
int write_server_key(const struct job *j, const char *hex, char *path, size_t len)
{
    beside_secret(path, len, j, INSTANCE_SERVER_KEY);
    if (!hex[0])
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
    char text[80];
    snprintf(text, sizeof(text), "%s\n", hex);
    return write_user_file(path, text, &j->user);
}

/* The directory of a job's server's rates and usage (tbf_loop.h): next to
 * its root, the job user's (the server writes its usage there). */
int tbf_dir(const struct job *j, char *dir, size_t len)
{
    pathf(dir, len, "%s.bw", j->dir);
    int rc = make_user_dir(dir, &j->user);
    return rc < 0 ? rc : 0;
}
