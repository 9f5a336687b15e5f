/* tbf_loop: the agent's AdapTBF period (see tbf_loop.h). A node runs a
 * handful of servers: an array under one lock is enough. */
#include "tbf_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adaptbf.h"
#include "log.h"

#define USAGE_FILE TBF_RATES_FILE ".usage"
#define USAGE_MAX 65536

struct tbf_server {
    int dirfd;
    int64_t usage_mtime_ns;          /* of the usage file last read */
    double bytes, waited;            /* its totals then */
    struct adaptbf_job a;
    int held;
};

struct tbf_loop {
    pthread_mutex_t lock;
    double capacity;                 /* bytes per period */
    struct tbf_server *s;
    struct adaptbf_job *scratch;
    size_t n, cap;
    pthread_t thread;
    int running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cv;
    int stop;
};

static struct log_limit usage_log = LOG_LIMIT_INIT(5, 60000);

struct tbf_loop *tbf_loop_new(double bandwidth)
{
    if (!(bandwidth > 0))
        return NULL;
    struct tbf_loop *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->capacity = bandwidth * TBF_PERIOD_MS / 1000.0;
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->stop_lock, NULL);
    pthread_cond_init(&t->stop_cv, NULL);
    return t;
}

void tbf_loop_free(struct tbf_loop *t)
{
    if (!t)
        return;
    if (t->running) {
        pthread_mutex_lock(&t->stop_lock);
        t->stop = 1;
        pthread_cond_signal(&t->stop_cv);
        pthread_mutex_unlock(&t->stop_lock);
        pthread_join(t->thread, NULL);
    }
    for (size_t i = 0; i < t->n; i++)
        close(t->s[i].dirfd);
    free(t->s);
    free(t->scratch);
    pthread_cond_destroy(&t->stop_cv);
    pthread_mutex_destroy(&t->stop_lock);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

static struct tbf_server *find_locked(struct tbf_loop *t, uint64_t job)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->s[i].a.id == job)
            return &t->s[i];
    return NULL;
}

int tbf_loop_add(struct tbf_loop *t, uint64_t job, double weight, const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    pthread_mutex_lock(&t->lock);
    struct tbf_server *s = find_locked(t, job);
    if (!s && t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct tbf_server *ns = realloc(t->s, cap * sizeof(*ns));
        if (ns)
            t->s = ns;
        struct adaptbf_job *na = ns ? realloc(t->scratch, cap * sizeof(*na)) : NULL;
        if (na)
            t->scratch = na;
        if (!ns || !na) {
            pthread_mutex_unlock(&t->lock);
            close(fd);
            return -ENOMEM;
        }
        t->cap = cap;
    }
    if (s)
        close(s->dirfd);
    else
        s = &t->s[t->n++];
    *s = (struct tbf_server){ .dirfd = fd, .a = { .id = job, .weight = weight > 0 ? weight : 1 } };
    pthread_mutex_unlock(&t->lock);
    return 0;
}

void tbf_loop_remove(struct tbf_loop *t, uint64_t job)
{
    pthread_mutex_lock(&t->lock);
    struct tbf_server *s = find_locked(t, job);
    if (s) {
        close(s->dirfd);
        /* What it lent or owes goes with it: the others' balances keep the
         * sum at zero once its share is spread back over them. */
        double left = s->a.balance;
        *s = t->s[--t->n];
        for (size_t i = 0; i < t->n; i++)
            t->s[i].a.balance += left / (double)t->n;
    }
    pthread_mutex_unlock(&t->lock);
}

/* What s's server moved since the last read, and whether its bucket held
 * requests back: from the totals of the usage file if the server rewrote
 * it (twice a period while it has requests), else nothing. */
static void read_usage(struct tbf_server *s)
{
    s->a.want = 0;
    s->held = 0;
    int fd = openat(s->dirfd, USAGE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    char buf[USAGE_MAX + 1];
    ssize_t len = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= USAGE_MAX) {
        int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        if (mtime != s->usage_mtime_ns) {
            s->usage_mtime_ns = mtime;
            len = read(fd, buf, USAGE_MAX);
        }
    }
    close(fd);
    if (len <= 0)
        return;
    buf[len] = '\0';
    double bytes = 0, waited = 0;
    for (char *line = buf, *next; *line; line = next) {
        next = strchr(line, '\n');
        if (!next) {
            log_limited(&usage_log, LOG_LEVEL_WARN, "job %" PRIu64 ": %s: a line is cut",
                        s->a.id, USAGE_FILE);
            return;
        }
        *next++ = '\0';
        uint64_t job, jbytes;
        long long jwaited;
        int end = 0;
        if (sscanf(line, "%" SCNu64 " %" SCNu64 " %lld%n", &job, &jbytes, &jwaited, &end) != 3 ||
            line[end] || jwaited < 0) {
            log_limited(&usage_log, LOG_LEVEL_WARN,
                        "job %" PRIu64 ": %s: '%.40s' is not JOB BYTES WAITED_NS", s->a.id,
                        USAGE_FILE, line);
            return;
        }
        bytes += (double)jbytes;
        waited += (double)jwaited;
    }
    /* Totals since the server started: what changed is this period's. A
     * server restarted (totals went down) counts from zero. */
    int restarted = bytes < s->bytes || waited < s->waited;
    s->a.want = restarted ? bytes : bytes - s->bytes;
    s->held = restarted ? waited > 0 : waited > s->waited;
    s->bytes = bytes;
    s->waited = waited;
}

/* The server's rate: "* RATE", replaced whole (a new file renamed over it,
 * so the server never reads half of one). */
static void write_rate(struct tbf_server *s, double rate)
{
    static const char tmp[] = TBF_RATES_FILE ".new";
    unlinkat(s->dirfd, tmp, 0);
    int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_limited(&usage_log, LOG_LEVEL_WARN, "job %" PRIu64 ": %s: %s", s->a.id, tmp,
                    strerror(errno));
        return;
    }
    char line[64];
    int len = snprintf(line, sizeof(line), "* %.0f\n", rate);
    if (write(fd, line, (size_t)len) != len || close(fd) != 0 ||
        renameat(s->dirfd, tmp, s->dirfd, TBF_RATES_FILE) != 0) {
        log_limited(&usage_log, LOG_LEVEL_WARN, "job %" PRIu64 ": %s: %s", s->a.id,
                    TBF_RATES_FILE, strerror(errno));
        unlinkat(s->dirfd, tmp, 0);
    }
}

size_t tbf_loop_period(struct tbf_loop *t, struct tbf_loop_job *out, size_t max)
{
    pthread_mutex_lock(&t->lock);
    size_t n = t->n;
    double moved[n ? n : 1];
    for (size_t i = 0; i < n; i++) {
        struct tbf_server *s = &t->s[i];
        read_usage(s);
        moved[i] = s->a.want;
        if (s->held)
            s->a.want = t->capacity;   /* it would take the whole node */
        t->scratch[i] = s->a;
    }
    adaptbf_period(t->capacity, t->scratch, n);
    for (size_t i = 0; i < n; i++) {
        struct tbf_server *s = &t->s[i];
        struct adaptbf_job *a = &t->scratch[i];
        s->a = *a;
        /* A lender (it wants less than its due) keeps its due as its rate;
         * anyone else gets what the allocator gave it (a debtor paying
         * back: less than its due). */
        double per_period = a->want < a->due && a->alloc < a->due ? a->due : a->alloc;
        write_rate(s, per_period * 1000.0 / TBF_PERIOD_MS);
        if (i < max)
            out[i] = (struct tbf_loop_job){ .job = a->id, .weight = a->weight,
                                            .moved = moved[i], .held = s->held,
                                            .alloc = a->alloc, .lent = a->lent,
                                            .balance = a->balance };
    }
    pthread_mutex_unlock(&t->lock);
    return n;
}

static void *loop_main(void *arg)
{
    struct tbf_loop *t = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&t->stop_lock);
    while (!t->stop) {
        next.tv_nsec += TBF_PERIOD_MS * 1000000L;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        while (!t->stop && pthread_cond_timedwait(&t->stop_cv, &t->stop_lock, &next) != ETIMEDOUT)
            ;
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->stop_lock);
        tbf_loop_period(t, NULL, 0);
        pthread_mutex_lock(&t->stop_lock);
    }
    pthread_mutex_unlock(&t->stop_lock);
    return NULL;
}

int tbf_loop_start(struct tbf_loop *t)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&t->stop_cv);
    pthread_cond_init(&t->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&t->thread, NULL, loop_main, t);
    if (rc != 0)
        return -rc;
    t->running = 1;
    return 0;
}
