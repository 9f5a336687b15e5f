/* agent_link_int: what the pieces of agent_link share, for them alone.
 *
 * agent_link.c is the API (agent_link.h); the work behind it is split by
 * concern: agent_link_io.c is the I/O thread (peers, the queue of
 * submitted requests, deadlines), agent_link_conn.c a peer's connection
 * (connect, hello, back-off, the bytes waiting to be written),
 * agent_link_msgs.c the requests on a session (sealing, frames read,
 * answers), agent_link_helpers.c the helper threads and the fan-out their
 * hellos share. A peer is the I/O thread's alone; the queues between the
 * threads are under agent_link.lock, the fan-out under fanout_lock. */
#ifndef ADAFS_AGENT_LINK_INT_H
#define ADAFS_AGENT_LINK_INT_H

#include "agent_link.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

/* Where a session to one agent stands. */
enum peer_state {
    P_IDLE,          /* no connection */
    P_PREPARING,     /* a helper resolves the host and makes the hello */
    P_BACKOFF,       /* refused or cut before anything was asked: tried again at retry_at */
    P_CONNECTING,
    P_HELLO,         /* hello sent, the agent's reply awaited */
    P_VERIFYING,     /* a helper opens the agent's reply */
    P_READY,
};

/* Bytes to write, in order. */
struct outbuf {
    struct outbuf *next;
    size_t len, off;
    uint8_t data[];
};

struct peer {
    char *node, *host;
    int port;
    enum peer_state state;
    int fd;
    unsigned tries;                    /* connection attempts refused in a row */
    unsigned cuts;                     /* accepted and cut before a request, in a row */
    int64_t retry_at, state_deadline, last_used;
    struct session_keys keys;
    struct session_handshake hs;       /* while P_HELLO .. P_VERIFYING */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    struct outbuf *out, *out_tail;
    /* The frame being read. */
    uint8_t head[RPC_HEADER_SIZE];
    size_t head_got;
    struct rpc_header h;
    uint8_t *payload;
    size_t payload_got;
    bool reading_payload;
    /* Requests: waiting to be sent, and sent (answered by id). */
    struct agent_call *queued, *queued_tail, *inflight;
    unsigned ninflight;
    uint32_t next_id;
    bool helper_busy;
    struct peer *hnext, *next;
};

enum helper_kind { H_HELLO, H_VERIFY };

/* Blocking work for a helper thread, and its result. */
struct helper_job {
    enum helper_kind kind;
    struct peer *peer;
    struct helper_job *next;
    int rc;
    char err[512];
    struct session_handshake hs;
    char *cred;                        /* in: the reply (verify); out: the hello */
    struct session_keys keys;
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct agent_link {
    struct agent_link_config cfg;
    int epfd, evfd;
    pthread_t io;
    pthread_t helpers[AGENT_LINK_HELPERS];
    unsigned nhelpers;
    bool io_started;
    pthread_mutex_t lock;              /* the three queues and stopping */
    pthread_cond_t work_ready;
    struct agent_call *submitted, *submitted_tail;
    struct helper_job *work, *work_tail, *results;
    bool stopping;
    /* The fan-out the helpers' hellos share (agent_session.h). */
    pthread_mutex_t fanout_lock;
    struct session_fanout fanout;
    bool fanout_live;
    int64_t fanout_made;
    /* The nodes greeted with it (hashes of their names; 0 empty): an
     * agent refuses the same (nonce, node) twice, even a restarted one on
     * another port sharing a process with it (simulated agents). */
    uint64_t *fanout_nodes;
    size_t fanout_cap, fanout_count;
    /* The I/O thread's own. */
    struct peer **buckets;
    size_t nbuckets, npeers;
    struct peer *peers;
    unsigned open_sessions;
    struct agent_link_stats stats;     /* updated with __atomic */
};

static inline void link_count(uint64_t *counter)
{
    __atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

static inline void link_wake(struct agent_link *l)
{
    uint64_t one = 1;
    ssize_t n = write(l->evfd, &one, sizeof(one));
    (void)n;   /* a full counter is a pending wake-up already */
}

/* Linked as adafs_link_* (linknames.h). */
#pragma redefine_extname link_finish adafs_link_finish
#pragma redefine_extname link_fail_all adafs_link_fail_all
#pragma redefine_extname link_enqueue adafs_link_enqueue
#pragma redefine_extname link_pump adafs_link_pump
#pragma redefine_extname link_read_in adafs_link_read_in
#pragma redefine_extname link_on_event adafs_link_on_event
#pragma redefine_extname link_close_peer adafs_link_close_peer
#pragma redefine_extname link_watch_fd adafs_link_watch_fd
#pragma redefine_extname link_start_connecting adafs_link_start_connecting
#pragma redefine_extname link_connect_failed adafs_link_connect_failed
#pragma redefine_extname link_queue_frame adafs_link_queue_frame
#pragma redefine_extname link_write_out adafs_link_write_out
#pragma redefine_extname link_hello_ready adafs_link_hello_ready
#pragma redefine_extname link_verified adafs_link_verified
#pragma redefine_extname link_give_helper adafs_link_give_helper
#pragma redefine_extname link_helper_main adafs_link_helper_main
#pragma redefine_extname link_retire_old_fanout adafs_link_retire_old_fanout
#pragma redefine_extname link_fanout_retire adafs_link_fanout_retire
#pragma redefine_extname link_io_main adafs_link_io_main

/* agent_link_msgs.c: a peer's requests. */
void link_finish(struct agent_call *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void link_fail_all(struct peer *p, int rc, const char *why);
void link_enqueue(struct peer *p, struct agent_call *c, bool front);
void link_pump(struct agent_link *l, struct peer *p);
void link_read_in(struct agent_link *l, struct peer *p);
void link_on_event(struct agent_link *l, struct peer *p, uint32_t events);

/* agent_link_conn.c: a peer's connection. */
void link_close_peer(struct agent_link *l, struct peer *p);
void link_watch_fd(struct agent_link *l, struct peer *p, uint32_t events);
void link_start_connecting(struct agent_link *l, struct peer *p);
void link_connect_failed(struct agent_link *l, struct peer *p, int rc, const char *why);
int link_queue_frame(struct peer *p, uint16_t opcode, int32_t status, const void *payload,
                     size_t len);
int link_write_out(struct peer *p);
void link_hello_ready(struct agent_link *l, struct peer *p, struct helper_job *job);
void link_verified(struct agent_link *l, struct peer *p, struct helper_job *job);

/* agent_link_helpers.c: the helper threads. */
void link_give_helper(struct agent_link *l, struct peer *p, enum helper_kind kind, char *cred);
void *link_helper_main(void *arg);
void link_retire_old_fanout(struct agent_link *l);
void link_fanout_retire(struct agent_link *l);

/* agent_link_io.c: the I/O thread. */
void *link_io_main(void *arg);

#endif
