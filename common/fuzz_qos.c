/* libFuzzer target for everything of QoS a peer or a user can hand over:
 * the control plane's messages (qos_proto.h: what qosd sends the root
 * agent, what an agent and qosd's socket answer), the attach request the
 * root agent reads from any local user, the limit text of directives and
 * the environment, the PFS path check, and the relays' group messages
 * (the second byte the size of the group the receiver knows). The first
 * byte picks which.
 * Whatever decodes must encode back to the same bytes. With
 * FUZZ_QOS_SEEDS=DIR it writes seeds there instead (fuzz_qos.sh). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qos_attach.h"
#include "qos_limits.h"
#include "qos_paths.h"
#include "qos_proto.h"

static void roundtrip(const uint8_t *data, size_t len, int kind)
{
    struct rpc_reader r;
    struct rpc_writer w;
    rpc_reader_init(&r, data, len);
    rpc_writer_init(&w, NULL, 0);
    int rc;
    if (kind == 0) {
        struct qos_cycle c;
        if ((rc = qos_cycle_get(&r, &c)) == 0)
            qos_cycle_put(&w, &c);
        free(c.jobs);
    } else if (kind == 1) {
        struct qos_report rep;
        if ((rc = qos_report_get(&r, &rep)) == 0)
            qos_report_put(&w, &rep);
        /* Decoded into a buffer kept from input to input (as adafs-qosd
         * keeps one per agent): the same outcome and the same report. */
        static struct qos_report kept;
        static uint32_t cap;
        struct rpc_reader again;
        rpc_reader_init(&again, data, len);
        int rc_kept = qos_report_get_into(&again, &kept, &cap);
        assert(rc_kept == rc && kept.njobs <= cap && (rc < 0 ? kept.njobs == 0 : kept.njobs == rep.njobs));
        if (rc == 0) {
            assert(kept.cycle == rep.cycle);
            assert(!rep.njobs || memcmp(kept.jobs, rep.jobs, rep.njobs * sizeof(*rep.jobs)) == 0);
        }
        free(rep.jobs);
    } else {
        struct qos_status s;
        if ((rc = qos_status_get(&r, &s)) == 0)
            qos_status_put(&w, &s);
        free(s.jobs);
    }
    if (rc == 0)
        assert(rpc_writer_ok(&w) && w.len == len && memcmp(w.data, data, len) == 0);
    rpc_writer_free(&w);
}

/* A seed: the kind byte, the extra byte (group messages: the group size
 * the receiver knows), the message. */
static int write_seed(const char *dir, const char *name, int kind, int known,
                      const struct rpc_writer *w)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fputc(kind, f) != EOF && (known < 0 || fputc(known, f) != EOF) &&
             fwrite(w->data, w->len, 1, f) == 1;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* With FUZZ_QOS_SEEDS=DIR: writes one valid message of each kind a peer
 * sends (a cycle's limits, a report, a group request with its members and
 * parts, a group report holding a member's report) and exits: without
 * them the fuzzer spends its bounded run finding the version number and
 * the nesting before it reaches the group decoders' checks. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("FUZZ_QOS_SEEDS");
    if (!dir)
        return 0;
    struct qos_job_limits jl[2] = { { .job_id = 7, .uid = 1000 }, { .job_id = 8, .uid = 1001 } };
    char err[256];
    qos_limits_parse("stat=1000,write=100M", &jl[0].limit, err, sizeof(err));
    qos_limits_parse("open=20", &jl[1].limit, err, sizeof(err));
    struct qos_cycle c = { .cycle = 42, .answer_in_ms = 400, .njobs = 2, .jobs = jl };
    struct qos_job_usage ju = { .job_id = 7, .procs = 4 };
    ju.used[0] = 123;
    ju.waited_ns[1] = 456;
    struct qos_report rep = { .cycle = 42, .njobs = 1, .jobs = &ju };
    struct rpc_writer wc, wr, wg, wgr;
    rpc_writer_init(&wc, NULL, 0);
    rpc_writer_init(&wr, NULL, 0);
    rpc_writer_init(&wg, NULL, 0);
    rpc_writer_init(&wgr, NULL, 0);
    qos_cycle_put(&wc, &c);
    qos_report_put(&wr, &rep);
    static struct qos_group_request g = {
        .cycle = 42, .answer_in_ms = 800, .epoch = 3, .self = 0, .nmembers = 3,
        .members = { { "n1", "10.0.0.1", 6818 }, { "n2", "n2.cluster", 6819 },
                     { "n3", "10.0.0.3", 6820 } },
        .nparts = 2 };
    g.parts[0] = (struct qos_group_part){ 0, wc.data, (uint32_t)wc.len };
    g.parts[1] = (struct qos_group_part){ 2, wc.data, (uint32_t)wc.len };
    qos_group_request_put(&wg, &g);
    static struct qos_group_report gr = { .cycle = 42, .n = 2 };
    gr.e[0] = (struct qos_group_entry){ 2, QOS_MEMBER_REPORTED, "", wr.data, (uint32_t)wr.len };
    gr.e[1] = (struct qos_group_entry){ 0, QOS_MEMBER_NO_ANSWER, "no answer to its relay", NULL, 0 };
    qos_group_report_put(&wgr, &gr);
    int rc = write_seed(dir, "cycle", 0, -1, &wc) | write_seed(dir, "report", 1, -1, &wr) |
             write_seed(dir, "group_request", 6, 3, &wg) |
             write_seed(dir, "group_report", 7, 3, &wgr);
    exit(rc == 0 ? 0 : 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int kind = data[0] % 8;
    data++;
    size--;
    if (kind >= 6 && size >= 1) {
        uint32_t known = data[0];
        struct rpc_reader r;
        rpc_reader_init(&r, data + 1, size - 1);
        struct rpc_writer w;
        rpc_writer_init(&w, NULL, 0);
        static struct qos_group_request g;
        static struct qos_group_report rep;
        int rc;
        if (kind == 6) {
            if ((rc = qos_group_request_get(&r, &g, known)) == 0) {
                assert(g.nparts <= (g.nmembers ? g.nmembers : known) && g.self < QOS_GROUP_MAX);
                qos_group_request_put(&w, &g);
                /* Each part, as its member takes it (the AGENT_QOS body). */
                for (uint32_t k = 0; k < g.nparts; k++)
                    roundtrip(g.parts[k].body, g.parts[k].len, 0);
            }
        } else if ((rc = qos_group_report_get(&r, &rep, known)) == 0) {
            assert(rep.n <= known);
            qos_group_report_put(&w, &rep);
            /* Each member's report, as qosd takes it (qos/relays.c). */
            for (uint32_t k = 0; k < rep.n; k++) {
                if (rep.e[k].status != QOS_MEMBER_REPORTED)
                    continue;
                roundtrip(rep.e[k].report, rep.e[k].len, 1);
            }
        }
        if (rc == 0)
            assert(rpc_writer_ok(&w) && w.len == size - 1 && memcmp(w.data, data + 1, size - 1) == 0);
        rpc_writer_free(&w);
        return 0;
    }
    if (kind <= 2) {
        roundtrip(data, size, kind);
        return 0;
    }
    if (kind == 3) {
        uint32_t job;
        int32_t status;
        uint8_t back[QOS_ATTACH_LEN];
        if (qos_attach_req_decode(data, size, &job) == 0) {
            qos_attach_req_encode(job, back);
            assert(memcmp(back, data, QOS_ATTACH_LEN) == 0);
        }
        if (qos_attach_rep_decode(data, size, &status) == 0) {
            assert(status <= 0);
            qos_attach_rep_encode(status, back);
            assert(memcmp(back, data, QOS_ATTACH_LEN) == 0);
        }
        return 0;
    }
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[512], canon[2048];
    if (kind == 4) {
        struct qos_limits l, back;
        if (qos_limits_parse(text, &l, err, sizeof(err)) == 0) {
            /* The canonical text parses to the same set. */
            int n = qos_limits_format(&l, canon, sizeof(canon));
            assert(n >= 0 && (size_t)n < sizeof(canon));
            assert(qos_limits_parse(canon, &back, err, sizeof(err)) == 0);
            assert(memcmp(&l, &back, sizeof(l)) == 0);
        } else {
            assert(err[0]);
        }
    } else {
        /* Paths: the vector shortcut agrees with normalising first. */
        static struct qos_paths p;
        if (!p.n)
            qos_paths_parse("/pfs,/home/proj,/a-very-long-mount-point-name-over-32-bytes", &p, err,
                            sizeof(err));
        char norm[8192];
        if (text[0] == '/' && path_normalise(text, norm, sizeof(norm)) >= 0)
            assert(qos_paths_match(&p, text) == qos_paths_under(&p, norm));
        struct qos_paths q;
        qos_paths_parse(text, &q, err, sizeof(err));
    }
    free(text);
    return 0;
}
