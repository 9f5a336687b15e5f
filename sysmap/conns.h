/* conns: the connections sysmap-server serves at once, each on a thread of
 * its own, and what peers may cost.
 *
 * At most max connections at once and per_host from one IPv4 address. A
 * connection is untrusted until its handler says it showed valid
 * credentials (conns_trust); when a newcomer finds the table, or its
 * address's share, full, the oldest untrusted connection is shut down
 * (its handler then finds its peer gone). Idle or slow peers only push
 * each other out; trusted connections are never evicted, and while they
 * fill every slot the accept loop waits (newcomers wait in the kernel's
 * backlog). */
#ifndef SYSMAP_CONNS_H
#define SYSMAP_CONNS_H

#include <netinet/in.h>
#include <signal.h>

struct conns;
struct conn_slot;

/* One connection, as its handler sees it. */
struct conn {
    int fd;
    char peer[64];                     /* "address:port" */
    long long deadline;                /* the handler's to use */
    void *arg;                         /* given to conns_new */
    struct conns *owner;
    struct conn_slot *slot;
};

typedef void (*conn_serve_fn)(struct conn *c);

/* NULL when out of memory. */
struct conns *conns_new(long long max, long long per_host, conn_serve_fn serve, void *arg);
/* Blocks until a newcomer may be accepted, evicting the oldest untrusted
 * connection if the table is full; 0 once *stopping is set. */
int conns_make_room(struct conns *cs, volatile sig_atomic_t *stopping);
/* Serves an accepted connection from sa on a thread of its own, or, when
 * its address's share is all trusted, answers 503 and closes it. */
void conns_admit(struct conns *cs, int fd, const struct sockaddr_in *sa);
/* The handler's connection showed valid credentials: never evicted. */
void conns_trust(struct conn *c);
int conns_trusted(struct conn *c);
/* Shuts down the untrusted connections, waits for every handler to end,
 * and frees the table. */
void conns_finish(struct conns *cs);
/* For a periodic timer: summarises the eviction lines left out. */
void conns_flush_log(void);

#endif
