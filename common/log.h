/* log: one line per event, with the program name, level and context.
 *
 * Daemons log to a file or syslog-style stderr; command-line tools log to
 * stderr. Callers pass the context (path, peer, errno) in the message so a
 * single line explains what went wrong. */
#ifndef ADAFS_LOG_H
#define ADAFS_LOG_H

#include "linknames.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the program name and the threshold. path NULL means stderr. A log
 * file is created 0600 and an existing one is made so: logs name users,
 * jobs and paths. Returns -errno if the file cannot be opened or its mode
 * not set (stderr stays in use). */
int log_open(const char *progname, enum log_level threshold, const char *path);
void log_close(void);
void log_set_level(enum log_level threshold);
/* log_set_sink() is in log_sink.h. */
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int log_level_parse(const char *name);

void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Lines an untrusted peer can cause (a refused credential, a garbage
 * header) go through a budget, so a flood cannot grow a root-owned log
 * without bound: at most `burst` lines per `interval_ms`; the rest are
 * counted, and the next line written after the window says how many were
 * left out. One budget per kind of event, shared by all threads. */
struct log_limit {
    pthread_mutex_t lock;
    unsigned burst;
    int interval_ms;
    int64_t window_start_ms;
    unsigned written, suppressed;
};
#define LOG_LIMIT_INIT(burst, interval_ms) \
    { PTHREAD_MUTEX_INITIALIZER, (burst), (interval_ms), 0, 0, 0 }

void log_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes the count of lines left out, if any, and starts a new window: for
 * a daemon's periodic timer, so a flood that stopped is still summarised. */
void log_limit_flush(struct log_limit *limit);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
