#include "log.h"
#include "log_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_progname = "adafs";
static _Atomic enum log_level log_threshold = LOG_LEVEL_INFO;
static FILE *log_file;           /* NULL: stderr */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*log_sink)(int, const char *);

static const char *level_names[] = { "error", "warn", "info", "debug" };

int log_open(const char *progname, enum log_level threshold, const char *path)
{
    log_progname = progname;
    log_threshold = threshold;
    if (!path)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0)
        return -errno;
    /* A log an older version created 0644 is tightened; a device named
     * instead of a file (/dev/null, a tty) is not ours to change: as root,
     * fchmod made /dev/null 0600 for the whole machine. */
    struct stat st;
    if (fstat(fd, &st) < 0 || (S_ISREG(st.st_mode) && fchmod(fd, 0600) < 0)) {
        int e = errno;
        close(fd);
        return -e;
    }
    FILE *f = fdopen(fd, "a");
    if (!f) {
        int e = errno;
        close(fd);
        return -e;
    }
    setvbuf(f, NULL, _IOLBF, 0);
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = f;
    pthread_mutex_unlock(&log_lock);
    return 0;
}

void log_close(void)
{
    pthread_mutex_lock(&log_lock);
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    pthread_mutex_unlock(&log_lock);
}

void log_set_level(enum log_level threshold)
{
    log_threshold = threshold;
}

void log_set_sink(void (*sink)(int level, const char *line))
{
    log_sink = sink;
}

int log_level_parse(const char *name)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcmp(name, level_names[i]) == 0)
            return (int)i;
    return -1;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
    if (level > log_threshold)
        return;
    int saved_errno = errno;
    char line[2048];
    if (log_sink) {
        vsnprintf(line, sizeof(line), fmt, ap);
        log_sink((int)level, line);
        errno = saved_errno;
        return;
    }
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ld %s[%d]: %s: ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_progname,
                     (int)getpid(), level_names[level]);
    if (n < 0)
        n = 0;
    if ((size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    pthread_mutex_lock(&log_lock);
    FILE *out = log_file ? log_file : stderr;
    fprintf(out, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
    errno = saved_errno;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, fmt, ap);
    va_end(ap);
}

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Called with limit->lock held: closes the window, returning what it left out. */
static unsigned limit_roll(struct log_limit *limit, int64_t now)
{
    unsigned left_out = limit->suppressed;
    limit->window_start_ms = now;
    limit->written = 0;
    limit->suppressed = 0;
    return left_out;
}

static void report_left_out(unsigned left_out, int interval_ms)
{
    if (left_out)
        log_msg(LOG_LEVEL_WARN, "%u similar lines left out in the last %d s (rate limit)",
                left_out, (interval_ms + 999) / 1000);
}

void log_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
{
    if (level > log_threshold)
        return;
    int64_t now = monotonic_ms();
    unsigned left_out = 0;
    pthread_mutex_lock(&limit->lock);
    if (limit->window_start_ms == 0 || now - limit->window_start_ms >= limit->interval_ms)
        left_out = limit_roll(limit, now);
    bool write = limit->written < limit->burst;
    if (write)
        limit->written++;
    else
        limit->suppressed++;
    pthread_mutex_unlock(&limit->lock);
    report_left_out(left_out, limit->interval_ms);
    if (write) {
        va_list ap;
        va_start(ap, fmt);
        log_vmsg(level, fmt, ap);
        va_end(ap);
    }
}

void log_limit_flush(struct log_limit *limit)
{
    pthread_mutex_lock(&limit->lock);
    unsigned left_out = limit->suppressed ? limit_roll(limit, monotonic_ms()) : 0;
    pthread_mutex_unlock(&limit->lock);
    report_left_out(left_out, limit->interval_ms);
}
