/* The saved table as a journal (bb_store): what is appended loads back,
 * later records of an instance win, removals stick, a torn last append is
 * left out without costing a job, compaction keeps the file in proportion
 * to the live records while puts go on, and a slurmctld killed with -9
 * mid-stream loses no change it had been told was written; a full disk
 * fails puts with its cause and loses nothing once there is room. */
#include "bb_store.h"
#include "tap.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/test_bb_store.XXXXXX";
static char path[256];

static struct bb_job *job(uint32_t id, enum bb_phase phase, size_t nodes)
{
    struct bb_job *j = bb_job_new(id);
    j->phase = phase;
    j->user = strdup("u");
    j->nnodes = nodes;
    j->nodes = calloc(nodes ? nodes : 1, sizeof(*j->nodes));
    for (size_t i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node%zu", i);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup(name),
                                        .agent_port = 6830, .numa_node = -1 };
    }
    return j;
}

static void free_all(struct bb_job *j)
{
    while (j) {
        struct bb_job *next = j->next;
        bb_job_free(j);
        j = next;
    }
}

static size_t count(const struct bb_job *j)
{
    size_t n = 0;
    for (; j; j = j->next)
        n++;
    return n;
}

static struct bb_job *load(int *lost)
{
    struct bb_job *head = NULL;
    char err[512];
    *lost = bb_job_load(path, &head, err, sizeof(err));
    if (*lost)
        printf("# %s\n", err);
    return head;
}

static off_t file_size(void)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

static void test_journal(void)
{
    char err[512];
    struct bb_job *a = job(7, PHASE_DEPLOYING, 3), *b = job(8, PHASE_RUNNING, 1);
    a->next = b;
    struct bb_store *s = bb_store_open(path, a, err, sizeof(err));
    tap_ok(s != NULL, "a store opens on two records (%s)", s ? "" : err);
    struct stat st;
    tap_ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "its file is 0600");
    int lost;
    struct bb_job *l = load(&lost);
    tap_ok(lost == 0 && count(l) == 2 && bb_job_find(l, 7) && bb_job_find(l, 7)->key == a->key,
           "both load back, with their keys");
    free_all(l);

    a->phase = PHASE_STAGING_IN;
    int64_t s1 = bb_store_put(s, a);
    a->phase = PHASE_RUNNING;
    a->released = true;
    int64_t s2 = bb_store_put(s, a);
    tap_ok(s1 > 0 && s2 > s1, "each change is numbered (%lld, %lld)", (long long)s1, (long long)s2);
    l = load(&lost);
    struct bb_job *a2 = bb_job_find(l, 7);
    tap_ok(lost == 0 && count(l) == 2 && a2 && a2->phase == PHASE_RUNNING && a2->released,
           "without a sync, the last change loads (it is in the page cache: a kill -9 keeps it)");
    free_all(l);

    struct bb_job *c = job(9, PHASE_DEPLOYING, 2);
    bb_store_put(s, c);
    bb_store_drop(s, b);
    l = load(&lost);
    tap_ok(count(l) == 2 && bb_job_find(l, 9) && !bb_job_find(l, 8),
           "a new record is added and a dropped one stays gone");
    tap_ok(l && l->job_id == 9, "newest instance first, as the plugin keeps its table");
    free_all(l);

    /* Two instances of one job (an older allocation's being torn down). */
    struct bb_job *a_new = job(7, PHASE_DEPLOYING, 1);
    bb_store_put(s, a_new);
    l = load(&lost);
    tap_ok(count(l) == 3 && bb_job_find(l, 7) && bb_job_find(l, 7)->key == a_new->key,
           "two instances of a job: both kept, the newer found first");
    free_all(l);
    tap_is_int(bb_store_sync(s, bb_store_last(s)), 0, "a sync");
    struct bb_store_stats stats;
    bb_store_stats(s, &stats);
    tap_ok(stats.fsyncs >= 1 && stats.records == 3, "makes it durable (%llu fsyncs, %llu records)",
           (unsigned long long)stats.fsyncs, (unsigned long long)stats.records);

    /* A torn last append: as if slurmctld died in the middle of a write. */
    bb_store_close(s);
    off_t whole = file_size();
    FILE *f = fopen(path, "a");
    uint8_t frame[BB_JOB_FRAME_SIZE + 10] = { 'A', 'B', 'J', 'R', 7, 0, 0, 0 };
    frame[16] = 200;   /* a length of 200 bytes, of which 10 came */
    fwrite(frame, 1, sizeof(frame), f);
    fclose(f);
    l = load(&lost);
    tap_ok(lost == 0 && count(l) == 3 && file_size() > whole,
           "a torn last append is left out and costs no job");
    s = bb_store_open(path, l, err, sizeof(err));
    tap_ok(s && file_size() < whole + 10, "and the store opened on it writes it compacted");
    free_all(l);
    bb_store_close(s);
    bb_job_free(a);
    bb_job_free(b);
    bb_job_free(c);
    bb_job_free(a_new);
}

struct putter {
    struct bb_store *s;
    struct bb_job *j;
    int n;
};

static void *put_many(void *arg)
{
    struct putter *p = arg;
    for (int i = 0; i < p->n; i++) {
        p->j->stage_index = (size_t)i;
        bb_store_put(p->s, p->j);
    }
    return NULL;
}

static void test_compaction(void)
{
    char err[512];
    struct bb_job *big = job(20, PHASE_STAGING_IN, 512);
    struct bb_store *s = bb_store_open(path, big, err, sizeof(err));
    off_t one = file_size();
    struct putter p[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        p[i] = (struct putter){ s, i == 0 ? big : job(21 + (uint32_t)i, PHASE_DEPLOYING, 64), 200 };
        pthread_create(&t[i], NULL, put_many, &p[i]);
    }
    /* Syncs (and so compactions) while the puts go on. */
    for (int i = 0; i < 20; i++)
        bb_store_sync(s, bb_store_last(s));
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    bb_store_sync(s, bb_store_last(s));
    struct bb_store_stats st;
    bb_store_stats(s, &st);
    tap_ok(st.compactions >= 1, "a journal of 600 changes is compacted (%llu times)",
           (unsigned long long)st.compactions);
    tap_ok(file_size() < 4 * one + (1 << 20) + 2 * (off_t)st.live_bytes,
           "and stays in proportion to the live records (%lld bytes for %llu live)",
           (long long)file_size(), (unsigned long long)st.live_bytes);
    int lost;
    struct bb_job *l = load(&lost);
    bool last = lost == 0 && count(l) == 3;
    for (struct bb_job *j = l; j; j = j->next)
        last &= j->stage_index == 199;
    tap_ok(last, "after puts during compactions every record loads as last put");
    free_all(l);
    bb_store_close(s);
    for (int i = 0; i < 3; i++)
        bb_job_free(p[i].j);
}

/* A child puts changes and tells the parent each one it was told was
 * written; the parent kills it with -9 at some point and loads. */
static void test_kill9(void)
{
    char err[512];
    int fds[2];
    if (pipe(fds) < 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct bb_job *j = job(30, PHASE_STAGING_IN, 256);
        struct bb_store *s = bb_store_open(path, j, err, sizeof(err));
        for (uint32_t i = 1;; i++) {
            j->stage_index = i;
            if (bb_store_put(s, j) > 0 && write(fds[1], &i, sizeof(i)) != sizeof(i))
                _exit(1);
        }
    }
    close(fds[1]);
    uint32_t acked = 0, v;
    for (int i = 0; i < 3000 && read(fds[0], &v, sizeof(v)) == sizeof(v); i++)
        acked = v;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    while (read(fds[0], &v, sizeof(v)) == sizeof(v))
        acked = v;
    close(fds[0]);
    int lost;
    struct bb_job *l = load(&lost);
    tap_ok(lost == 0 && l && l->stage_index >= acked,
           "kill -9 in the middle of puts: the last change it was told was written loads "
           "(%u acknowledged, %zu loaded)", acked, l ? l->stage_index : 0);
    free_all(l);
}

static void test_keys(void)
{
    int lost;
    struct bb_job *l = load(&lost);
    uint64_t max = 0;
    for (struct bb_job *j = l; j; j = j->next)
        max = j->key > max ? j->key : max;
    struct bb_job *fresh = bb_job_new(1);
    tap_ok(fresh->key > max, "keys of new records go above those loaded");
    bb_job_free(fresh);
    free_all(l);
}

static int put_id(struct bb_store *s, uint32_t id)
{
    struct bb_job *j = job(id, PHASE_STAGING_IN, 1);
    int64_t seq = bb_store_put(s, j);
    bb_job_free(j);
    return seq < 0 ? (int)seq : 0;
}

/* StateSaveLocation full (here the file size limit, EFBIG): every put says
 * the cause, not a bare EIO after the first; once there is room again the
 * next sync writes everything, nothing lost. */
static void test_full(void)
{
    char err[512];
    struct bb_store *s = bb_store_open(path, NULL, err, sizeof(err));
    tap_ok(s && put_id(s, 30) == 0, "a store takes a record (%s)", s ? "" : err);
    if (!s)
        return;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit was;
    getrlimit(RLIMIT_FSIZE, &was);
    struct rlimit full = { (rlim_t)file_size(), was.rlim_max };
    setrlimit(RLIMIT_FSIZE, &full);
    int first = put_id(s, 31), second = put_id(s, 32);
    tap_ok(first == -EFBIG && second == -EFBIG,
           "no room: the put fails with the cause, and so does the next (%s, %s)",
           strerror(-first), strerror(-second));
    int synced = bb_store_sync(s, bb_store_last(s));
    tap_ok(synced < 0, "its sync fails too (%s)", strerror(-synced));
    setrlimit(RLIMIT_FSIZE, &was);
    synced = bb_store_sync(s, bb_store_last(s));
    tap_ok(synced == 0, "room again: the next sync writes the table whole (%d)", synced);
    bb_store_close(s);
    int lost;
    struct bb_job *l = load(&lost);
    bool all = count(l) == 3;
    for (uint32_t id = 30; id <= 32; id++)
        all &= bb_job_find(l, id) != NULL;
    tap_ok(!lost && all, "every record put meanwhile loads back (%zu)", count(l));
    free_all(l);
}

/* Thousands of records, each changed twice, every third dropped, a few
 * records sharing a chain of the reader's index: what loads is the last
 * change of each live one, newest first. */
static void test_many(void)
{
    enum { N = 6000 };
    char err[512];
    unlink(path);
    struct bb_store *s = bb_store_open(path, NULL, err, sizeof(err));
    struct bb_job **all = calloc(N, sizeof(*all));
    for (uint32_t i = 0; i < N; i++) {
        all[i] = job(1000 + i, PHASE_DEPLOYING, 1);
        bb_store_put(s, all[i]);
    }
    for (uint32_t i = 0; i < N; i++) {
        all[i]->phase = PHASE_RUNNING;
        all[i]->stage_index = i;
        if (i % 3 == 0)
            bb_store_drop(s, all[i]);
        else
            bb_store_put(s, all[i]);
    }
    bb_store_close(s);
    int lost;
    struct bb_job *l = load(&lost);
    bool right = lost == 0 && count(l) == N - N / 3;
    uint64_t last = UINT64_MAX;
    for (const struct bb_job *j = l; right && j; j = j->next) {
        uint32_t i = j->job_id - 1000;
        right = i < N && i % 3 != 0 && j->key == all[i]->key && j->key < last &&
                j->phase == PHASE_RUNNING && j->stage_index == i;
        last = j->key;
    }
    tap_ok(right, "%d records changed twice, a third dropped: the live ones load, newest first",
           N);
    free_all(l);
    for (uint32_t i = 0; i < N; i++)
        bb_job_free(all[i]);
    free(all);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/adafs_state", dir);
    test_journal();
    test_compaction();
    test_kill9();
    test_keys();
    test_full();
    test_many();
    unlink(path);
    rmdir(dir);
    return tap_done();
}
