/* datafile: the local files that hold this server's chunks of each data key
 * (<root>/data/<key in hex>, see chunks.c), kept open across requests.
 *
 * Opening a file by name, and closing it again, for every 64 KiB read or
 * write was most of a request's system calls. So descriptors stay open in
 * a bounded cache: sets of a few entries chosen by the key's hash, the
 * least recently used one closed when a set is full. An entry is a
 * reference-counted struct datafile; a request holds a reference while it
 * uses the descriptor (a READ until its data is sent), so an entry evicted
 * or removed meanwhile is closed by its last user.
 *
 * A cached descriptor must always name the key's current file: a truncate
 * to zero or a remove unlinks it, and a later write creates a new one. A
 * file is unlinked, and created, only under the key's chunk lock
 * (chunks.c), and datafile_remove takes the key out of the cache there.
 * Readers take no chunk lock, so one may have opened the file by name just
 * before it was unlinked; every removal therefore also bumps its set's
 * generation after the unlink, and an opener that saw another generation
 * before opening uses what it opened for its one request (which raced the
 * removal) without caching it. Each request after a truncate, remove or
 * rename over the file (whichever client made it) sees the new state.
 *
 * Which keys have a file at all is a Bloom filter: most small files are
 * inline (RocksDB) and have none, and a lookup of a name that is not there
 * was a tenth of a small-file create. The data directory starts empty and
 * only datafile_get creates files in it; a kept root's (--keep-root) holds
 * an earlier run's files, whose keys go into the filter at start-up.
 *
 * One server per process: the cache and the filter are process-wide. */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

struct datafile {
    uint64_t key;
    int fd;
    unsigned refs;             /* users, plus one while cached; under the set's lock */
    uint64_t last_use;
    /* [data_lo, data_hi): found to hold no hole (SEEK_HOLE), under the
     * set's lock. Writes only turn holes into data, so this stays true
     * until a truncate (datafile_truncated). Empty: nothing known. */
    uint64_t data_lo, data_hi;
};

#define SETS 256
#define WAYS_MAX 4

static struct set {
    pthread_mutex_t lock;
    uint64_t gen;              /* bumped by every removal of a file of the set */
    uint64_t clock;
    struct datafile *way[WAYS_MAX];
} sets[SETS];
static unsigned ways = WAYS_MAX;
static _Atomic bool stopped;   /* the root is going: cache nothing more */
static int dir_fd = -1;        /* the data directory: a name in it is cheaper than a path */

static struct set *set_of(uint64_t key)
{
    return &sets[(key * 0x9E3779B97F4A7C15ull >> 40) % SETS];
}

/* ---- which keys have a file --------------------------------------------- */

#define MADE_BITS (1u << 23)
static _Atomic uint64_t made_files[MADE_BITS / 64];

static void made_bits(uint64_t key, uint32_t bit[2])
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    bit[0] = (uint32_t)(h >> 41);
    bit[1] = (uint32_t)(h >> 9) & (MADE_BITS - 1);
}

/* Before the file is created, so a key is never without its bits while
 * its file exists. */
static void made_add(uint64_t key)
{
    uint32_t bit[2];
    made_bits(key, bit);
    for (int i = 0; i < 2; i++)
        atomic_fetch_or(&made_files[bit[i] / 64], 1ull << (bit[i] % 64));
}

static bool may_have_file(uint64_t key)
{
    uint32_t bit[2];
    made_bits(key, bit);
    for (int i = 0; i < 2; i++)
        if (!(atomic_load(&made_files[bit[i] / 64]) & (1ull << (bit[i] % 64))))
            return false;
    return true;
}

static void file_name(uint64_t key, char name[20])
{
    snprintf(name, 20, "%016llx", (unsigned long long)key);
}

/* ---- the cache ------------------------------------------------------------ */

/* --keep-root: the files an earlier run left are found again (the filter)
 * and what they hold counts against the quota. At start-up, one thread. */
static void adopt_files(struct server *srv)
{
    DIR *d = fdopendir(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    uint64_t files = 0, bytes = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end;
        unsigned long long key = strtoull(e->d_name, &end, 16);
        struct stat st;
        if (strlen(e->d_name) != 16 || *end || fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(st.st_mode))
            continue;
        made_add((uint64_t)key);
        files++;
        bytes += (uint64_t)st.st_blocks * 512;
    }
    if (d)
        closedir(d);
    atomic_fetch_add(&srv->used, bytes);
    log_info("root kept: %llu data files of an earlier run, %llu bytes", (unsigned long long)files,
             (unsigned long long)bytes);
}

int datafile_init(struct server *srv, char *err, size_t errlen)
{
    dir_fd = open(srv->data_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "cannot open %s: %s", srv->data_dir, strerror(errno));
        return rc;
    }
    for (int i = 0; i < SETS; i++)
        pthread_mutex_init(&sets[i].lock, NULL);
    if (srv->keep_root)
        adopt_files(srv);
    /* Room for the cache and the connections: the soft limit is often
     * 1024 where the hard one allows far more. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            rlim_t want = rl.rlim_max < (1u << 20) ? rl.rlim_max : (1u << 20);
            if (want > rl.rlim_cur) {
                struct rlimit up = { want, rl.rlim_max };
                if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                    rl.rlim_cur = want;
            }
        }
        /* A quarter of the descriptors at most. */
        rlim_t fit = rl.rlim_cur / 4 / SETS;
        ways = fit < 1 ? 1 : fit > WAYS_MAX ? WAYS_MAX : (unsigned)fit;
        if (ways < WAYS_MAX)
            log_info("descriptor limit %llu: keeping at most %u data files open",
                     (unsigned long long)rl.rlim_cur, ways * SETS);
    }
    return 0;
}

static void release(struct datafile *f)
{
    close(f->fd);
    free(f);
}

void datafile_put(struct datafile *f)
{
    struct set *s = set_of(f->key);
    pthread_mutex_lock(&s->lock);
    bool last = --f->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        release(f);
}

int datafile_fd(const struct datafile *f)
{
    return f->fd;
}

/* The cached entry of key with a new reference, or NULL. Under s->lock. */
static struct datafile *lookup(struct set *s, uint64_t key)
{
    for (unsigned i = 0; i < ways; i++) {
        struct datafile *f = s->way[i];
        if (f && f->key == key) {
            f->refs++;
            f->last_use = ++s->clock;
            return f;
        }
    }
    return NULL;
}

/* Drops the cache's reference of every entry of s for which drop says so;
 * those no request uses are put on *closing. Under s->lock. */
static void drop_where(struct set *s, bool (*drop)(const struct datafile *, uint64_t),
                       uint64_t arg, struct datafile **closing, unsigned *nclosing)
{
    for (unsigned i = 0; i < WAYS_MAX; i++) {
        struct datafile *f = s->way[i];
        if (!f || !drop(f, arg))
            continue;
        s->way[i] = NULL;
        if (--f->refs == 0)
            closing[(*nclosing)++] = f;
    }
}

static bool any(const struct datafile *f, uint64_t arg)
{
    (void)f;
    (void)arg;
    return true;
}

static bool of_key(const struct datafile *f, uint64_t key)
{
    return f->key == key;
}

/* Closes every cached descriptor no request is using (out of descriptors,
 * or the server is stopping). */
static void drop_all(void)
{
    for (int i = 0; i < SETS; i++) {
        struct datafile *closing[WAYS_MAX];
        unsigned n = 0;
        pthread_mutex_lock(&sets[i].lock);
        drop_where(&sets[i], any, 0, closing, &n);
        pthread_mutex_unlock(&sets[i].lock);
        for (unsigned j = 0; j < n; j++)
            release(closing[j]);
    }
}

/* Caches f (which holds one reference, its opener's) unless the set
 * changed since gen was read or the key is cached already (then that
 * entry is returned instead and f closed). */
static struct datafile *insert(struct set *s, struct datafile *f, uint64_t gen)
{
    struct datafile *victim = NULL, *have;
    pthread_mutex_lock(&s->lock);
    if ((have = lookup(s, f->key))) {
        pthread_mutex_unlock(&s->lock);
        release(f);
        return have;
    }
    if (s->gen == gen && !atomic_load(&stopped)) {
        unsigned slot = 0;
        for (unsigned i = 0; i < ways; i++) {
            if (!s->way[i]) {
                slot = i;
                break;
            }
            if (s->way[i]->last_use < s->way[slot]->last_use)
                slot = i;
        }
        if (s->way[slot] && --s->way[slot]->refs == 0)
            victim = s->way[slot];
        s->way[slot] = f;
        f->refs++;
        f->last_use = ++s->clock;
    }
    pthread_mutex_unlock(&s->lock);
    if (victim)
        release(victim);
    return f;
}

struct datafile *datafile_get(struct server *srv, uint64_t key, int create)
{
    (void)srv;
    struct set *s = set_of(key);
    if (!create && !may_have_file(key)) {
        errno = ENOENT;
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    struct datafile *f = lookup(s, key);
    uint64_t gen = s->gen;
    pthread_mutex_unlock(&s->lock);
    if (f)
        return f;
    char name[20];
    file_name(key, name);
    if (create)
        made_add(key);
    int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
    int fd = openat(dir_fd, name, flags, 0600);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        /* Once, then every 1000th time: a server at its limit meets this
         * on every open. */
        static _Atomic unsigned long times;
        unsigned long n = atomic_fetch_add(&times, 1);
        if (n % 1000 == 0)
            log_warn("out of descriptors opening data file %s: closing the cached ones "
                     "(%lu times so far)", name, n + 1);
        drop_all();
        fd = openat(dir_fd, name, flags, 0600);
    }
    if (fd < 0)
        return NULL;
    f = calloc(1, sizeof(*f));
    if (!f) {
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    f->key = key;
    f->fd = fd;
    f->refs = 1;
    return insert(s, f, gen);
}

int datafile_exists(struct server *srv, uint64_t key)
{
    (void)srv;
    if (!may_have_file(key))
        return 0;
    struct set *s = set_of(key);
    pthread_mutex_lock(&s->lock);
    struct datafile *f = lookup(s, key);
    if (f)
        f->refs--;   /* only looked: the cache still holds it */
    pthread_mutex_unlock(&s->lock);
    if (f)
        return 1;
    char name[20];
    file_name(key, name);
    if (faccessat(dir_fd, name, F_OK, 0) == 0)
        return 1;
    return errno == ENOENT ? 0 : -errno;
}

int datafile_remove(struct server *srv, uint64_t key)
{
    char name[20];
    file_name(key, name);
    int rc = unlinkat(dir_fd, name, 0) == 0 ? 0 : -errno;
    if (rc < 0 && rc != -ENOENT)
        log_error("cannot remove %s/%s: %s", srv->data_dir, name, strerror(-rc));
    struct set *s = set_of(key);
    struct datafile *closing[WAYS_MAX];
    unsigned n = 0;
    pthread_mutex_lock(&s->lock);
    drop_where(s, of_key, key, closing, &n);
    s->gen++;   /* after the unlink: see the top of the file */
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < n; i++)
        release(closing[i]);
    return rc;
}

int datafile_open_read(struct server *srv, uint64_t key)
{
    (void)srv;
    if (!may_have_file(key))
        return -ENOENT;
    char name[20];
    file_name(key, name);
    /* A new open file description: the client's descriptor shares no
     * offset or flags with the cache's, and cannot write. */
    int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int rc = S_ISREG(st.st_mode) ? -errno : -EINVAL;
        close(fd);
        return rc;
    }
    return fd;
}

void datafile_stop(void)
{
    atomic_store(&stopped, true);
    drop_all();
}

/* ---- holes ---------------------------------------------------------------- */

void datafile_truncated(struct datafile *f)
{
    struct set *s = set_of(f->key);
    pthread_mutex_lock(&s->lock);
    f->data_lo = f->data_hi = 0;
    pthread_mutex_unlock(&s->lock);
}

bool datafile_all_data(struct datafile *f, const struct stat *st, uint64_t pos, size_t len)
{
    if (pos + len > (uint64_t)st->st_size)
        return false;
    /* As many blocks as the size needs: no hole anywhere. */
    if ((uint64_t)st->st_blocks * 512 >= ((uint64_t)st->st_size + 4095) / 4096 * 4096)
        return true;
    struct set *s = set_of(f->key);
    pthread_mutex_lock(&s->lock);
    uint64_t lo = f->data_lo, hi = f->data_hi;
    pthread_mutex_unlock(&s->lock);
    if (lo <= pos && pos + len <= hi)
        return true;
    /* SEEK_HOLE walks the data from where it starts (tmpfs: page by page),
     * so a walk goes on from where the last one ended. */
    bool extend = lo <= pos && pos <= hi && lo < hi;
    off_t hole = lseek(f->fd, (off_t)(extend ? hi : pos), SEEK_HOLE);
    if (hole < 0)
        return false;
    pthread_mutex_lock(&s->lock);
    f->data_lo = extend ? lo : pos;
    f->data_hi = (uint64_t)hole;
    pthread_mutex_unlock(&s->lock);
    return (uint64_t)hole >= pos + len;
}
