/* Tests for log: file mode, and the rate limit on lines peers can cause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "tap.h"

static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!needle || strstr(line, needle))
            n++;
    if (f)
        fclose(f);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

int main(void)
{
    char dir[] = "/tmp/test_log.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256], old[256];
    snprintf(path, sizeof(path), "%s/new.log", dir);
    snprintf(old, sizeof(old), "%s/old.log", dir);
    struct stat st;

    umask(022);
    tap_is_int(log_open("test_log", LOG_LEVEL_INFO, path), 0, "a new log file opens");
    int rc = stat(path, &st);
    tap_ok(rc == 0 && (st.st_mode & 0777) == 0600, "it is created 0600 (mode %o)",
           (unsigned)(st.st_mode & 0777));
    FILE *f = fopen(old, "w");
    fclose(f);
    chmod(old, 0644);
    tap_is_int(log_open("test_log", LOG_LEVEL_INFO, old), 0, "an existing log file opens");
    rc = stat(old, &st);
    tap_ok(rc == 0 && (st.st_mode & 0777) == 0600,
           "an existing world-readable log is made 0600 (mode %o)", (unsigned)(st.st_mode & 0777));
    /* A device (a copy of /dev/null, made where it harms nobody) keeps
     * its mode: a root daemon logging to /dev/null once made it 0600. */
    char dev[256];
    snprintf(dev, sizeof(dev), "%s/null", dir);
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0 && chmod(dev, 0666) == 0) {
        tap_is_int(log_open("test_log", LOG_LEVEL_INFO, dev), 0, "a device opens as a log");
        rc = stat(dev, &st);
        tap_ok(rc == 0 && (st.st_mode & 0777) == 0666, "and keeps its mode (%o)",
               (unsigned)(st.st_mode & 0777));
        unlink(dev);
    } else {
        tap_skip(2, "mknod needs root");
    }
    tap_is_int(log_open("test_log", LOG_LEVEL_INFO, path), 0, "back to the new file");

    static struct log_limit flood = LOG_LIMIT_INIT(5, 300);
    for (int i = 0; i < 1000; i++)
        log_limited(&flood, LOG_LEVEL_WARN, "garbage from peer %d", i);
    tap_is_int(count_lines(path, "garbage from peer"), 5, "a flood writes the burst only");
    log_msg(LOG_LEVEL_INFO, "unrelated line");
    tap_is_int(count_lines(path, "unrelated line"), 1, "other lines are not limited");
    sleep_ms(350);
    log_limited(&flood, LOG_LEVEL_WARN, "garbage from peer again");
    tap_is_int(count_lines(path, "995 similar lines left out"), 1,
               "the next window starts with how many lines were left out");
    tap_is_int(count_lines(path, "garbage from peer again"), 1, "and writes the new line");
    for (int i = 0; i < 10; i++)
        log_limited(&flood, LOG_LEVEL_WARN, "second flood %d", i);
    log_limit_flush(&flood);
    tap_is_int(count_lines(path, "6 similar lines left out"), 1,
               "a flush summarises a flood that stopped");
    log_limit_flush(&flood);
    tap_is_int(count_lines(path, "similar lines left out"), 2, "a flush with nothing left out writes nothing");
    log_set_level(LOG_LEVEL_ERROR);
    log_limited(&flood, LOG_LEVEL_WARN, "below the threshold");
    tap_is_int(count_lines(path, "below the threshold"), 0, "the threshold applies first");
    log_close();
    unlink(path);
    unlink(old);
    rmdir(dir);
    return tap_done();
}
