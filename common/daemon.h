/* daemon: how adafs' daemons start: into the background with a pid file,
 * and their stop/reload signals taken as events on a descriptor (the
 * daemons' loops poll it with their sockets), never in handlers. */
#ifndef ADAFS_DAEMON_H
#define ADAFS_DAEMON_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>

/* Detaches into the background unless foreground, then writes this
 * process's id into pidfile (when not NULL). 0, or -errno with what
 * failed in err. */
int daemon_start(bool foreground, const char *pidfile, char *err, size_t errlen);

/* Ignores SIGPIPE (a peer gone shows as EPIPE), blocks the signals of the
 * 0-terminated list in the calling thread (threads started afterwards
 * inherit the mask) and returns a close-on-exec signalfd for them, or
 * -errno. */
int daemon_signals(const int *signals);

#endif
