/* log: one line per event, with the program name, level and context.
 *
 * Daemons log to a file or syslog-style stderr; command-line tools log to
 * stderr. Callers pass the context (path, peer, errno) in the message so a
 * single line explains what went wrong. */
#ifndef ADAFS_LOG_H
#define ADAFS_LOG_H

#include <stdarg.h>

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the program name and the threshold. path NULL means stderr. Returns
 * -errno if the file cannot be opened (stderr stays in use). */
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

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
