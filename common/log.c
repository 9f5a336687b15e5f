#include "log.h"
#include "log_sink.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_progname = "adafs";
static enum log_level log_threshold = LOG_LEVEL_INFO;
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
    FILE *f = fopen(path, "ae");
    if (!f)
        return -errno;
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
