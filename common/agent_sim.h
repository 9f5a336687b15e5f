/* agent_sim: many node agents simulated in one process, for the tests of
 * agent_link and the lifecycle benchmarks (bench/lifecycle), where a
 * cluster of thousands of nodes cannot run.
 *
 * Each simulated node listens on a port of its own on one address and
 * speaks the agent's protocol as adafs-agentd does: a session per
 * connection (agent_session.h, with the auth given: munge, or session_fake
 * in unit tests), requests answered by id: those that may wait (a WATCH
 * held, a START delayed) in a thread of their own, the rest at once. It
 * starts no servers and copies nothing: START answers a port at once (or
 * after start_ms), STAGE starts a stand-in stage that ends after stage_ms
 * with a report, WATCH and STATUS see it, TEARDOWN forgets the job. A node
 * can also misbehave: refuse connections, accept and stay silent, answer
 * the handshake as a squatter, say nothing after the handshake, close a
 * session after some requests, answer at its session limit, or prove a
 * node fault on START. Never linked into anything installed. */
#ifndef ADAFS_AGENT_SIM_H
#define ADAFS_AGENT_SIM_H

#include <stdint.h>
#include <sys/types.h>

#include "agent_session.h"

enum agent_sim_mode {
    SIM_OK,            /* an agent that works */
    SIM_DOWN,          /* nothing listens: connections refused */
    SIM_SILENT,        /* accepts, never answers the hello (a node that hangs) */
    SIM_SQUATTER,      /* answers the hello in plain, refusing it, and claims a node fault */
    SIM_GARBAGE,       /* answers the hello with bytes that are no frame */
    SIM_MUTE,          /* proves itself, then answers no request */
    SIM_BUSY,          /* proves itself, then says it serves too many sessions */
    SIM_NODE_FAULT,    /* refuses START with a node fault it proves */
    SIM_JOB_FAULT,     /* refuses START with a job fault */
    SIM_EXITING,       /* refuses START with a transient fault (a server that exited) */
    SIM_STAGE_FAILS,   /* every stage ends with exit status 1 and a failure in its report */
};

struct agent_sim_node {
    enum agent_sim_mode mode;
    int start_ms;      /* START answers after this long */
    int stage_ms;      /* a stage runs this long */
    int drop_after;    /* > 0: a session is closed at its n-th request, which and any
                        * after it go unanswered (those before are answered) */
};

struct agent_sim;

/* nnodes nodes named prefix and their index (n0, n1...), listening on
 * host at consecutive free ports, all with the settings of `all`. Proves
 * itself with auth as uid 0 and takes sessions of `trusted` or root. */
struct agent_sim *agent_sim_start(const struct session_auth *auth, uid_t trusted,
                                  const char *host, int nnodes, const char *prefix,
                                  const struct agent_sim_node *all, char *err, size_t errlen);
void agent_sim_stop(struct agent_sim *sim);

const char *agent_sim_name(const struct agent_sim *sim, int node);
int agent_sim_port(const struct agent_sim *sim, int node);
/* Changes one node's behaviour from now on (SIM_DOWN closes its port;
 * another mode opens it again). */
void agent_sim_set(struct agent_sim *sim, int node, const struct agent_sim_node *settings);

/* What the simulated agents saw. */
struct agent_sim_stats {
    uint64_t connections, sessions, requests, answers;
    uint64_t by_op[16];
};
void agent_sim_stats(struct agent_sim *sim, struct agent_sim_stats *out);

#endif
