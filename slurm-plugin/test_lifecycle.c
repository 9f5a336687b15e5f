/* What a job's end and scancel do to its instance, phase by phase, and
 * what a failed call to an agent does to it (drain, hold or try again).
 * These decisions are tested without agents: a stand-in transport
 * answers as each node's agent is scripted to. */
#include "agent_client.h"
#include "agent_proto.h"
#include "lifecycle.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct bb_job *job_in(enum bb_phase phase)
{
    struct bb_job *j = bb_job_new(1);
    j->phase = phase;
    j->nnodes = 2;
    j->nodes = calloc(2, sizeof(*j->nodes));
    j->nodes[0].stage_sent = j->nodes[1].stage_sent = true;
    j->stage_index = 3;
    return j;
}

static void ended(enum bb_phase from, bool hurry, enum bb_phase want, const char *what)
{
    struct bb_job *j = job_in(from);
    lifecycle_job_ended(j, hurry);
    tap_is_int(j->phase, want, what);
    bb_job_free(j);
}

static void cancelled(enum bb_phase from, bool hurry, enum bb_phase want,
                      enum bb_failure failure, const char *what)
{
    struct bb_job *j = job_in(from);
    lifecycle_cancel(j, hurry);
    tap_ok(j->phase == want && j->failure == failure, "%s (phase %s, failure %d)", what,
           bb_phase_name(j->phase), (int)j->failure);
    bb_job_free(j);
}

/* How each node's agent answers: */
enum script { OK, UNREACHABLE, NODE_FAULT, JOB_FAULT, TRANSIENT_FAULT };
static enum script script[2];
static int calls[2][8];   /* per node, per op */

static void fake_call_all(struct agent_request *reqs, size_t n, int timeout_ms)
{
    (void)timeout_ms;
    for (size_t k = 0; k < n; k++) {
        struct agent_request *q = &reqs[k];
        int node = q->target.node[1] - '1';
        calls[node][q->op]++;
        q->reply = (struct agent_reply){ 0 };
        q->rc = 0;
        switch (script[node]) {
        case UNREACHABLE:
            q->rc = -ECONNREFUSED;
            snprintf(q->err, sizeof(q->err), "node %s: agent %s:%d: start: Connection refused",
                     q->target.node, q->target.host, q->target.port);
            continue;
        case NODE_FAULT:
        case JOB_FAULT:
        case TRANSIENT_FAULT:
            q->reply.status = -EIO;
            q->reply.message = script[node] == NODE_FAULT ? "node n2: storage unusable"
                             : script[node] == JOB_FAULT ? "node n2: bad request"
                                                         : "node n2: server did not start: it exited";
            q->reply.fault = script[node] == NODE_FAULT ? AGENT_FAULT_NODE
                           : script[node] == JOB_FAULT ? AGENT_FAULT_JOB : AGENT_FAULT_TRANSIENT;
            q->reply.body = malloc(1);
            continue;
        case OK:
            break;
        }
        q->reply.body = malloc(8);
        uint32_t port = 4000 + (uint32_t)node, pid = 99;
        memcpy(q->reply.body, &port, 4);   /* little-endian, as rpc.h */
        memcpy(q->reply.body + 4, &pid, 4);
        q->reply.len = 8;
        rpc_reader_init(&q->reply.reader, q->reply.body, q->reply.len);
    }
}

static struct bb_job *deploying(void)
{
    struct bb_job *j = bb_job_new(7);
    j->phase = PHASE_DEPLOYING;
    j->nnodes = 2;
    j->nodes = calloc(2, sizeof(*j->nodes));
    for (int i = 0; i < 2; i++) {
        char name[8];
        snprintf(name, sizeof(name), "n%d", i + 1);
        j->nodes[i] = (struct bb_node){ .name = strdup(name), .agent_host = strdup("127.0.0.1"),
                                        .agent_port = 6830 + i, .numa_node = -1 };
    }
    j->mount = strdup("/adafs/7");
    j->storage = strdup("/var/lib/adafs");
    memset(j->secret_hex, 'a', 64);
    memset(calls, 0, sizeof(calls));
    return j;
}

static void test_classify(void)
{
    tap_is_int(lifecycle_classify(-ECONNREFUSED, 0, 0), FAIL_TRANSIENT,
               "no authenticated answer (refused, reset, timed out, squatter) is transient");
    tap_is_int(lifecycle_classify(0, 0, 0), FAIL_NONE, "an answer of status 0 is no failure");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_NODE), FAIL_NODE,
               "a node fault the agent states is the node's");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_JOB), FAIL_USER, "a job fault the job's");
    tap_is_int(lifecycle_classify(0, -EIO, AGENT_FAULT_TRANSIENT), FAIL_TRANSIENT,
               "a transient one (a server that exited while it started) is transient");
    tap_is_int(lifecycle_classify(0, -EIO, 7), FAIL_TRANSIENT, "an unknown fault is not a node's");
}

static void test_deploy_retries(void)
{
    struct bb_config cfg = { 0 };
    lifecycle_set_transport(fake_call_all);

    struct bb_job *j = deploying();
    script[0] = OK;
    script[1] = UNREACHABLE;
    time_t before = time(NULL);
    lifecycle_step(j, &cfg);
    tap_ok(j->phase == PHASE_DEPLOYING && j->failure == FAIL_NONE && j->attempts == 1,
           "n2's agent unreachable: the deploy waits to try again, nothing blamed (phase %s)",
           bb_phase_name(j->phase));
    tap_ok(j->retry_at >= before + LC_RETRY_S && j->retry_at <= time(NULL) + LC_RETRY_S,
           "%d s later", LC_RETRY_S);
    tap_ok(j->nodes[0].started && !j->nodes[1].started, "n1 keeps its server meanwhile");
    lifecycle_step(j, &cfg);
    tap_is_int(calls[1][AGENT_START], 1, "before then no call is made");
    script[1] = OK;
    j->retry_at = time(NULL) - 1;
    lifecycle_step(j, &cfg);
    tap_ok(j->phase == PHASE_STAGING_IN && j->failure == FAIL_NONE,
           "then n2 answers: deployed (phase %s)", bb_phase_name(j->phase));
    tap_ok(calls[0][AGENT_START] == 1 && calls[1][AGENT_START] == 2,
           "only n2 was asked to start again");
    tap_ok(calls[0][AGENT_CONFIGURE] == 1 && calls[1][AGENT_CONFIGURE] == 1,
           "and both were configured once");
    tap_is_int(j->attempts, 0, "the count starts again after a success");
    bb_job_free(j);

    j = deploying();
    script[0] = OK;
    script[1] = TRANSIENT_FAULT;
    for (int i = 0; i < LC_ATTEMPTS && j->phase == PHASE_DEPLOYING; i++) {
        j->retry_at = 0;
        lifecycle_step(j, &cfg);
    }
    tap_ok(j->phase == PHASE_TEARDOWN && j->failure == FAIL_TRANSIENT,
           "a server that keeps exiting while it starts: given up after %d attempts, torn down",
           LC_ATTEMPTS);
    tap_ok(j->error && strstr(j->error, "node n2: server did not start: it exited") &&
           strstr(j->error, "held after 4 attempts; no node drained"),
           "the reason names the node and why (%s)", j->error ? j->error : "");
    tap_is_int(calls[1][AGENT_START], LC_ATTEMPTS, "n2 was asked that many times");
    bb_job_free(j);

    j = deploying();
    script[0] = UNREACHABLE;
    script[1] = NODE_FAULT;
    lifecycle_step(j, &cfg);
    tap_ok(j->phase == PHASE_TEARDOWN && j->failure == FAIL_NODE && j->error &&
           strncmp(j->error, "node n2: storage unusable", 25) == 0,
           "n2's agent proves a node fault: at once the node's failure, naming n2 (%s)",
           j->error ? j->error : "");
    bb_job_free(j);

    j = deploying();
    script[0] = OK;
    script[1] = JOB_FAULT;
    lifecycle_step(j, &cfg);
    tap_ok(j->phase == PHASE_TEARDOWN && j->failure == FAIL_USER,
           "a job fault: the job's failure at once (held), no retry");
    bb_job_free(j);

    /* All started, CONFIGURE failing: the empty START set of each retry
     * is no progress, so the count still ends. */
    j = deploying();
    script[0] = OK;
    script[1] = OK;
    j->nodes[0].started = j->nodes[1].started = true;
    script[1] = TRANSIENT_FAULT;
    for (int i = 0; i < 2 * LC_ATTEMPTS && j->phase == PHASE_DEPLOYING; i++) {
        j->retry_at = 0;
        lifecycle_step(j, &cfg);
    }
    tap_ok(j->phase == PHASE_TEARDOWN && calls[1][AGENT_CONFIGURE] == LC_ATTEMPTS,
           "a CONFIGURE that keeps failing is given up after %d attempts too (%d)", LC_ATTEMPTS,
           calls[1][AGENT_CONFIGURE]);
    bb_job_free(j);

    /* Staging: a poll that gets no answer is tried again, not a failure. */
    j = deploying();
    script[0] = script[1] = OK;
    lifecycle_step(j, &cfg);
    j->req.nstages = 1;
    j->req.stages = calloc(1, sizeof(*j->req.stages));
    j->req.stages[0] = (struct stage_spec){ .direction = STAGE_IN, .type = STAGE_FILE,
                                            .source = strdup("/pfs/in"), .destination = strdup("in") };
    lifecycle_step(j, &cfg);
    tap_ok(j->nodes[0].stage_sent && j->nodes[1].stage_sent, "stage-in started on both nodes");
    script[1] = UNREACHABLE;
    lifecycle_step(j, &cfg);
    tap_ok(j->phase == PHASE_STAGING_IN && j->failure == FAIL_NONE && j->attempts == 1,
           "n2 does not answer a status poll: polled again later, nothing blamed");
    bb_job_free(j);
    lifecycle_set_transport(NULL);
}

int main(void)
{
    test_classify();
    test_deploy_retries();

    struct bb_job *j = job_in(PHASE_RUNNING);
    lifecycle_job_ended(j, false);
    tap_is_int(j->phase, PHASE_STAGING_OUT, "a finished job stages out");
    tap_ok(j->stage_index == 0 && !j->nodes[0].stage_sent && !j->nodes[1].stage_sent,
           "from its first stage_out line, on every node");
    tap_ok(j->t_ended != 0, "its end time is recorded");
    bb_job_free(j);

    ended(PHASE_RUNNING, true, PHASE_TEARDOWN, "with --hurry it skips stage-out");
    ended(PHASE_STAGING_OUT, false, PHASE_STAGING_OUT, "a second end does not restart stage-out");
    ended(PHASE_DEPLOYING, false, PHASE_TEARDOWN, "a job that never ran is torn down");
    ended(PHASE_COMPLETE, false, PHASE_COMPLETE, "a finished instance stays finished");

    cancelled(PHASE_STAGING_IN, false, PHASE_TEARDOWN, FAIL_CANCELLED,
              "scancel during stage-in tears down and says why");
    cancelled(PHASE_RUNNING, false, PHASE_STAGING_OUT, FAIL_NONE,
              "scancel of a running job still stages its results out");
    cancelled(PHASE_STAGING_OUT, false, PHASE_STAGING_OUT, FAIL_NONE,
              "plain scancel during stage-out lets the copy finish");
    cancelled(PHASE_STAGING_OUT, true, PHASE_TEARDOWN, FAIL_NONE,
              "scancel --hurry during stage-out stops it");
    cancelled(PHASE_TEARDOWN, true, PHASE_TEARDOWN, FAIL_NONE, "teardown is not started twice");
    return tap_done();
}
