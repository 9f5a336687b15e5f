/* daemon: see daemon.h. */
#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int daemon_start(bool foreground, const char *pidfile, char *err, size_t errlen)
{
    if (!foreground && daemon(0, 0) < 0) {
        int e = errno;
        snprintf(err, errlen, "daemon: %s", strerror(e));
        return -e;
    }
    if (!pidfile)
        return 0;
    FILE *f = fopen(pidfile, "we");
    bool written = f && fprintf(f, "%d\n", (int)getpid()) > 0;
    int e = errno;
    if (f && fclose(f) != 0 && written) {
        written = false;
        e = errno;
    }
    if (!written) {
        e = e ? e : EIO;
        snprintf(err, errlen, "--pidfile %s: %s", pidfile, strerror(e));
        return -e;
    }
    return 0;
}

int daemon_signals(const int *signals)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    for (const int *s = signals; *s; s++)
        sigaddset(&set, *s);
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0)
        return -rc;
    int fd = signalfd(-1, &set, SFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}
