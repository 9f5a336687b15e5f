/* handle: connecting to an instance, the descriptor table, and fork.
 *
 * Nothing here runs before adafs_connect(): no constructors, so an
 * LD_PRELOAD interposer decides when the library wakes up. After fork() the
 * child's copies of our locks may be held by threads that no longer exist;
 * an atfork handler re-initialises them, and each connection remembers the
 * pid that opened it so the child reconnects instead of sharing the parent's
 * socket (call.c). */
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "hash.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static adafs *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
    pthread_mutex_lock(&registry_lock);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

static void after_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
    for (adafs *fs = registry; fs; fs = fs->next) {
        pthread_mutex_init(&fs->table_lock, NULL);
        pthread_mutex_init(&fs->dircap_lock, NULL);
        for (int i = 0; i < fs->nfiles; i++)
            if (fs->files[i])
                pthread_mutex_init(&fs->files[i]->lock, NULL);
        conns_reset_after_fork(fs);
        fs->key_seed ^= (uint64_t)getpid() << 32;
    }
}

static void register_atfork(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

int adafs_connect(adafs **out, const char *instance_file, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    *out = NULL;
    if (!instance_file)
        instance_file = getenv(ADAFS_ENV_INSTANCE);
    if (!instance_file || !*instance_file) {
        snprintf(err, errlen, "no instance file given and $%s is not set", ADAFS_ENV_INSTANCE);
        return -EINVAL;
    }
    adafs *fs = calloc(1, sizeof(*fs));
    if (!fs)
        return -ENOMEM;
    int rc = instance_read(instance_file, &fs->inst, err, errlen);
    if (rc < 0) {
        free(fs);
        return rc;
    }
    fs->conns = calloc((size_t)fs->inst.nservers, sizeof(*fs->conns));
    if (!fs->conns) {
        instance_free(&fs->inst);
        free(fs);
        return -ENOMEM;
    }
    for (int i = 0; i < fs->inst.nservers; i++) {
        pthread_mutex_init(&fs->conns[i].lock, NULL);
        fs->conns[i].fd = -1;
        fs->conns[i].pipe[0] = fs->conns[i].pipe[1] = -1;
    }
    pthread_mutex_init(&fs->table_lock, NULL);
    pthread_mutex_init(&fs->error_lock, NULL);
    pthread_mutex_init(&fs->dircap_lock, NULL);
    /* Set but empty is the default, as for any variable a shell or a
     * job script may leave empty. */
    const char *transport = getenv(ADAFS_ENV_TRANSPORT);
    if (transport && *transport && strcmp(transport, "tcp") != 0) {
        snprintf(err, errlen,
                 "$%s is '%s': set it to 'tcp', or leave it empty or unset for the default "
                 "(a server's Unix socket on this node, TCP to the others)",
                 ADAFS_ENV_TRANSPORT, transport);
        free(fs->conns);
        instance_free(&fs->inst);
        free(fs);
        return -EINVAL;
    }
    fs->local_sockets = !transport || !*transport;
    fs->uid = getuid();
    fs->gid = getgid();
    if (getrandom(&fs->key_seed, sizeof(fs->key_seed), 0) != sizeof(fs->key_seed))
        fs->key_seed = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)fs;
    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&registry_lock);
    fs->next = registry;
    registry = fs;
    pthread_mutex_unlock(&registry_lock);
    *out = fs;
    return 0;
}

void adafs_disconnect(adafs *fs)
{
    if (!fs)
        return;
    pthread_mutex_lock(&registry_lock);
    for (adafs **p = &registry; *p; p = &(*p)->next)
        if (*p == fs) {
            *p = fs->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    for (int i = 0; i < fs->nfiles; i++)
        if (fs->files[i])
            adafs_close(fs, i);
    conns_close(fs);
    free(fs->conns);
    free(fs->files);
    instance_free(&fs->inst);
    free(fs);
}

const char *adafs_mount_point(const adafs *fs)
{
    return fs->inst.mount;
}

uint64_t adafs_chunk_size(const adafs *fs)
{
    return fs->inst.chunk_size;
}

int adafs_server_count(const adafs *fs)
{
    return fs->inst.nservers;
}

uint64_t new_key(adafs *fs, int server)
{
    for (;;) {
        /* Blocks of 65,536 consecutive keys, each block at a random place
         * (splitmix64 of a per-process seed and the block number): unique
         * without a system call per file, and the keys one process hands
         * out rise, so a server inserts a client's new files next to each
         * other in its ordered store instead of at random places. */
        uint64_t n = atomic_fetch_add(&fs->key_counter, 1);
        uint64_t z = fs->key_seed + (n >> 16) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        z = (z & ~0xFFFFull) | (n & 0xFFFF);
        if (z != 0 && chunk_server(fs, z, 0) == server)
            return z;
    }
}

int fd_alloc(adafs *fs, struct open_file *of)
{
    pthread_mutex_lock(&fs->table_lock);
    int fd = 0;
    while (fd < fs->nfiles && fs->files[fd])
        fd++;
    if (fd == fs->nfiles) {
        int n = fs->nfiles ? fs->nfiles * 2 : 64;
        struct open_file **p = realloc(fs->files, (size_t)n * sizeof(*p));
        if (!p) {
            pthread_mutex_unlock(&fs->table_lock);
            return -ENOMEM;
        }
        memset(p + fs->nfiles, 0, (size_t)(n - fs->nfiles) * sizeof(*p));
        fs->files = p;
        fs->nfiles = n;
    }
    fs->files[fd] = of;
    of->refs++;
    pthread_mutex_unlock(&fs->table_lock);
    return fd;
}

/* An open file is freed when no descriptor names it (refs) and no thread
 * is using it (holds): a close racing with a read waits for nothing and
 * frees nothing under the reader. */
struct open_file *fd_get(adafs *fs, int fd)
{
    pthread_mutex_lock(&fs->table_lock);
    struct open_file *of = fd >= 0 && fd < fs->nfiles ? fs->files[fd] : NULL;
    if (of)
        of->holds++;
    pthread_mutex_unlock(&fs->table_lock);
    if (of)
        pthread_mutex_lock(&of->lock);
    return of;
}

static void release(adafs *fs, struct open_file *of)
{
    if (of->orphan)
        drop_data(fs, of->key, &of->cap, 0, of->orphan_size, -1);
    direct_drop(fs, of);
    pthread_mutex_destroy(&of->lock);
    free(of->path);
    free(of);
}

void fd_put(adafs *fs, struct open_file *of)
{
    pthread_mutex_unlock(&of->lock);
    pthread_mutex_lock(&fs->table_lock);
    of->holds--;
    int last = of->refs == 0 && of->holds == 0;
    pthread_mutex_unlock(&fs->table_lock);
    if (last)
        release(fs, of);
}

int adafs_close(adafs *fs, int fd)
{
    pthread_mutex_lock(&fs->table_lock);
    struct open_file *of = fd >= 0 && fd < fs->nfiles ? fs->files[fd] : NULL;
    int last = 0;
    if (of) {
        fs->files[fd] = NULL;
        last = --of->refs == 0 && of->holds == 0;
    }
    pthread_mutex_unlock(&fs->table_lock);
    if (!of)
        return -EBADF;
    if (last)
        release(fs, of);
    return 0;
}

int adafs_dup(adafs *fs, int fd)
{
    struct open_file *of = fd_get(fs, fd);
    if (!of)
        return -EBADF;
    pthread_mutex_unlock(&of->lock);
    int nfd = fd_alloc(fs, of);
    pthread_mutex_lock(&of->lock);
    fd_put(fs, of);
    return nfd;
}

int files_orphan_path(adafs *fs, const char *path, const struct fs_record *rec)
{
    int found = 0;
    pthread_mutex_lock(&fs->table_lock);
    for (int i = 0; i < fs->nfiles; i++) {
        struct open_file *of = fs->files[i];
        if (!of || strcmp(of->path, path) != 0)
            continue;
        if (!rec) {
            found++;
            continue;
        }
        /* Table lock, then the file's lock: the documented order. */
        pthread_mutex_lock(&of->lock);
        if (!of->orphan && of->key == rec->key) {
            of->orphan = 1;
            of->orphan_size = rec->size;
            of->orphan_rec = *rec;
            found++;
        }
        pthread_mutex_unlock(&of->lock);
    }
    pthread_mutex_unlock(&fs->table_lock);
    return found;
}

void files_rename_path(adafs *fs, const char *from, const char *to)
{
    pthread_mutex_lock(&fs->table_lock);
    for (int i = 0; i < fs->nfiles; i++) {
        struct open_file *of = fs->files[i];
        if (!of || strcmp(of->path, from) != 0)
            continue;
        char *copy = strdup(to);
        if (copy) {
            pthread_mutex_lock(&of->lock);   /* no I/O is using the old path */
            free(of->path);
            of->path = copy;
            pthread_mutex_unlock(&of->lock);
        }
    }
    pthread_mutex_unlock(&fs->table_lock);
}
