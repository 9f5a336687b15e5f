/* dist_bell: the doorbell of a distributed stage's mailboxes (dist.h).
 *
 * The workers' messages are files (dist_msg.h); a reader that polls for
 * the next one finds it up to a poll interval late, and a worker's threads
 * wait that long for the items it brings. The doorbell wakes the reader
 * instead: after writing a message the writer sends one UDP datagram to
 * the reader's bell, and the reader, which sleeps in poll(2) on its bell
 * (and on its own threads' wake-ups), looks at that mailbox at once.
 *
 * A ring carries no data, only "look in your mailbox now": what is read
 * still comes from the mailbox files, in the job's own file system, under
 * the job user's permissions, so a forged or lost ring changes nothing but
 * when a reader looks. Rings are still refused unless they carry the run's
 * token: 16 random bytes worker 0 puts in the run's epoch file, which only
 * the job user can read (dist_run.c), so only the job's own workers can
 * make another one look. Worker 0 learns each worker's bell from the
 * source address of its rings (no name service on its path); a worker
 * finds worker 0's by the host name and port in the epoch. Readers keep a
 * slow poll as well (a datagram can be lost on a network), and one that
 * cannot use a bell says why once and polls as before. */
#ifndef ADAFS_STAGE_DIST_BELL_H
#define ADAFS_STAGE_DIST_BELL_H

#include <netinet/in.h>
#include <stdint.h>

#define BELL_TOKEN 16

struct dist_bell {
    int fd;                      /* the UDP socket: rings in and out; -1 if none */
    int wake_fd;                 /* eventfd: this process's threads wake its reader */
    uint16_t port;               /* the bell's port (host order) */
    uint8_t token[BELL_TOKEN];   /* the run's; rings without it are dropped */
    int said_error;              /* a failed ring is logged once */
};

/* Opens the bell (a UDP socket on every address, a free port) and the
 * local wake-up: 0, or -errno with why in err (the wake-up alone failing
 * is an error; the socket failing leaves fd -1 and says why in err, rc 0). */
int bell_open(struct dist_bell *b, char *err, size_t errlen);
void bell_close(struct dist_bell *b);
/* Where worker 0's bell is: host's IPv4 address and port into *to (0), or
 * -errno with why in err. */
int bell_resolve(const char *host, uint16_t port, struct sockaddr_in *to, char *err,
                 size_t errlen);
/* Rings the bell at to on behalf of worker `from` (never blocks; a failure
 * is logged once: the reader's slow poll still finds the message). */
void bell_ring(struct dist_bell *b, const struct sockaddr_in *to, uint32_t from);
/* Wakes this process's reader (from its copy threads). */
void bell_wake_local(struct dist_bell *b);
/* Sleeps up to `seconds` or until a ring or a local wake-up comes. Calls
 * rung(arg, from, addr) for each ring with the token (the worker it names
 * and where it came from); returns 1 if woken locally, else 0. Datagrams
 * without the token (anyone can send to the port) are dropped, at most 64
 * per look, and do not end the wait: a flood costs the reader the reading,
 * never its sleep or its looks at the mailboxes. */
int bell_wait(struct dist_bell *b, double seconds,
              void (*rung)(void *arg, uint32_t from, const struct sockaddr_in *addr),
              void *arg);

#endif
