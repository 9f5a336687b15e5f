/* exchange: the servers of an instance tell each other, every period
 * (lambda), what each entity (job, user or group) was served, so each
 * corrects its local shares and fairness holds across servers
 * (fairshare.h's fair_usage_take and fair_usage_apply do the arithmetic).
 *
 * One UDP datagram per part of a server's report, to every other server
 * of the instance (its address from the instance's host:port list, the
 * same port as its TCP listener):
 *
 *   u32 magic "ADFX", u16 version (1), u16 part, u16 nparts, u16 count,
 *   u32 sender index, u32 nservers, u64 stamp (the sender's CLOCK_REALTIME
 *   in ns at its period), count x (u64 entity key, f64 share, u64 used),
 *   MAC = HMAC-SHA256(server key, "adafs fair usage v1" || all the above)
 *
 * Little-endian. The server key is not the instance's secret: every client
 * holds the secret, and a client that could speak for a server would
 * report that its rivals used much elsewhere (so they weigh less here) or
 * that it used nothing. The deployer makes the server key beside the
 * secret and gives it to the servers only (adafsd --server-key), never to
 * a client (doc/fairshare.md has the argument).
 *
 * A receiver takes a datagram only if its MAC holds, its sender is another
 * server of this instance (same nservers), its stamp is within
 * EXCHANGE_FRESH_MS of the receiver's clock, and it is news: a stamp above
 * the last one taken from that sender, or a part of that stamp not yet
 * taken. So a recorded datagram replayed, or one from an earlier run of
 * the instance, changes nothing. Each period a server takes its own use,
 * adds each peer's last whole report (if not older than 2 lambda: a dead
 * peer stops counting) and applies the sum; then it sends its own.
 *
 * The codec and the bookkeeping are pure (exchange_receive,
 * exchange_period: the unit test runs two servers in one process); the
 * sockets are exchange_start's thread. */
#ifndef ADAFSD_EXCHANGE_H
#define ADAFSD_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "fairshare.h"

#define EXCHANGE_KEY_SIZE 32
#define EXCHANGE_MAGIC 0x58464441u   /* "ADFX" read as little-endian */
#define EXCHANGE_VERSION 1
#define EXCHANGE_LABEL "adafs fair usage v1"
#define EXCHANGE_HEADER_SIZE 28
#define EXCHANGE_ENTRY_SIZE 24
#define EXCHANGE_MAC_SIZE 32
/* A datagram fits any path's MTU without fragments. */
#define EXCHANGE_DGRAM_MAX 1400
#define EXCHANGE_PER_DGRAM \
    ((EXCHANGE_DGRAM_MAX - EXCHANGE_HEADER_SIZE - EXCHANGE_MAC_SIZE) / EXCHANGE_ENTRY_SIZE)
/* Parts of one report at most: entities beyond a period's 64 x 55 are
 * left out of the report (their use still counts here). */
#define EXCHANGE_PARTS_MAX 64
#define EXCHANGE_ENTRIES_MAX (EXCHANGE_PARTS_MAX * EXCHANGE_PER_DGRAM)
/* How far a sender's clock may be from the receiver's. */
#define EXCHANGE_FRESH_MS 10000
#define EXCHANGE_DEFAULT_LAMBDA_MS 500

struct exchange;

/* The exchange of server index of nservers, for fair f, with the key every
 * server of the instance holds; lambda_ms: the period. NULL: no memory. */
struct exchange *exchange_new(struct fair *f, const uint8_t key[EXCHANGE_KEY_SIZE],
                              unsigned index, unsigned nservers, unsigned lambda_ms);
void exchange_free(struct exchange *x);

/* A datagram that came: 0 when taken; -EBADMSG (not a report of this
 * format, or its sender is not another server of this instance), -EACCES
 * (its MAC does not hold: not made with the server key), -ESTALE (old,
 * replayed or from a clock too far away). why says which. now_ns:
 * CLOCK_REALTIME. */
int exchange_receive(struct exchange *x, const uint8_t *msg, size_t len, uint64_t now_ns,
                     char *why, size_t whylen);

/* The period's work at now_ns: takes this server's use, applies it with
 * every peer's last fresh report, and encodes this server's report into
 * out (room for EXCHANGE_PARTS_MAX datagrams of EXCHANGE_DGRAM_MAX bytes,
 * lens[i] the size of datagram i). Returns how many datagrams (at least 1:
 * an empty report says the server is alive). peers_used: how many peers'
 * reports were applied (NULL: not wanted). */
size_t exchange_period(struct exchange *x, uint64_t now_ns,
                       uint8_t out[][EXCHANGE_DGRAM_MAX], size_t *lens, unsigned *peers_used);

/* Runs the exchange of x on a thread of its own: a UDP socket bound to
 * the address of the TCP listener lfd, peers' addresses from hosts (the
 * comma-separated host:port list, used if every port is set) or else the
 * instance file instance_path (looked at each period until it lists
 * nservers servers and holds secret: the deployer may write it after the
 * servers are ready; read again whenever it is replaced, so a file read
 * before the deployer's own cannot pin another run's ports). 0, or -errno
 * (with err) if it cannot start. */
struct server;
int exchange_start(struct exchange *x, int lfd, const char *hosts, const char *instance_path,
                   const uint8_t *secret, char *err, size_t errlen);

#endif
