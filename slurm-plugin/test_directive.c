#include "directive.h"
#include "tap.h"

#include <stdlib.h>

static char err[512];

static int parse(const char *script, const char *bb, struct bb_request *req)
{
    *req = (struct bb_request){ 0 };
    return directive_parse("BB_ADAFS", script, bb, req, err, sizeof(err));
}

/* Replaces req by the parse of its canonical form (as the plugin does at
 * job start); returns that parse's result. */
static int reparse(struct bb_request *req)
{
    char *canon = bb_request_format("BB_ADAFS", req);
    bb_request_free(req);
    int rc = parse(NULL, canon, req);
    free(canon);
    return rc;
}

/* A malformed directive must be rejected with a message naming the token. */
static void rejected(const char *script, const char *want_in_message)
{
    struct bb_request req;
    int rc = parse(script, NULL, &req);
    tap_ok(rc == -1 && strstr(err, want_in_message) != NULL,
           "rejects, naming '%s' (got rc %d: %s)", want_in_message, rc, err);
    bb_request_free(&req);
}

int main(void)
{
    struct bb_request req;
    const char *script =
        "#!/bin/bash\n"
        "#SBATCH -N 4 -t 30\n"
        "\n"
        "#BB_ADAFS capacity=200G chunk=512K\n"
        "#BB_ADAFS stage_in  source=/pfs/proj/input   destination=input  type=directory\n"
        "#BB_ADAFS stage_in  source=/pfs/proj/list.txt destination=.     type=list\n"
        "#BB_ADAFS stage_out source=results destination=/pfs/proj/out/%j type=directory\n"
        "srun ./app\n"
        "#BB_ADAFS capacity=1QB\n";   /* after the first command: not a directive */

    tap_is_int(parse(script, NULL, &req), 1, "the issue's example parses");
    tap_ok(req.capacity == 200ULL << 30, "capacity 200G");
    tap_ok(req.chunk_size == 512 << 10, "chunk 512K");
    tap_is_int(req.nstages, 3, "three stage lines");
    tap_ok(req.stages[0].direction == STAGE_IN && req.stages[0].type == STAGE_DIRECTORY,
           "first is a directory stage_in");
    tap_is_str(req.stages[0].source, "/pfs/proj/input", "stage_in source");
    tap_is_str(req.stages[1].destination, ".", "list destination is the root");
    tap_is_int(req.stages[2].line, 7, "line numbers count from the script's first line");
    tap_is_str(req.stages[2].destination, "/pfs/proj/out/%j", "%j kept until job start");

    char *canon = bb_request_format("BB_ADAFS", &req);
    struct bb_request again;
    tap_is_int(parse(NULL, canon, &again), 1, "canonical form parses again");
    char *canon2 = bb_request_format("BB_ADAFS", &again);
    tap_is_str(canon2, canon, "canonical form is a fixed point");
    free(canon);
    free(canon2);
    bb_request_free(&again);
    bb_request_free(&req);

    tap_is_int(parse("#!/bin/sh\n#SBATCH -N1\nhostname\n", NULL, &req), 0,
               "no directive: no burst buffer");
    tap_is_int(parse("#!/bin/sh\n#BB_ADAFSX capacity=1G\n", NULL, &req), 0,
               "#BB_ADAFSX is not our directive");

    tap_is_int(parse(NULL, "capacity=10G", &req), 1, "--bb without prefix");
    tap_ok(req.capacity == 10ULL << 30, "--bb capacity");
    bb_request_free(&req);

    tap_is_int(parse("#!/bin/sh\n#BB_ADAFS capacity=1G\n", "#BB_ADAFS stage_in source=/a destination=b type=file", &req),
               1, "script and --bb combine");
    tap_is_int(req.nstages, 1, "stage from --bb");
    bb_request_free(&req);

    tap_is_int(parse("#BB_ADAFS stage_in source=\"/pfs/my dir\" destination=\"in put\" type=directory\n", NULL, &req),
               1, "quoted values with blanks");
    tap_is_str(req.nstages ? req.stages[0].source : NULL, "/pfs/my dir", "quoted source");
    tap_is_int(reparse(&req), 1, "quoted values survive formatting");
    tap_is_str(req.nstages ? req.stages[0].destination : NULL, "in put", "quoted destination");
    bb_request_free(&req);

    /* A carriage return inside quotes is part of the value; the canonical
     * form must quote it too (found by the directive fuzzer). */
    tap_is_int(parse(NULL, "stage_in source=\"/x/a\rb\" destination=b type=file", &req), 1,
               "a quoted value holding a carriage return");
    tap_is_int(reparse(&req), 1, "it survives formatting");
    tap_is_str(req.nstages ? req.stages[0].source : NULL, "/x/a\rb", "with the same value");
    bb_request_free(&req);

    /* The job's own stager limits and verification survive formatting. */
    tap_is_int(parse("#BB_ADAFS capacity=1G max_bw=200M max_mdops=1500\n"
                     "#BB_ADAFS stage_out source=r destination=/o type=directory verify=yes\n"
                     "#BB_ADAFS stage_in source=/i destination=i type=file verify=no\n",
                     NULL, &req), 1, "max_bw, max_mdops and verify parse");
    tap_ok(req.max_bw == 200ULL << 20 && req.max_mdops == 1500, "limits 200M and 1500");
    tap_ok(req.nstages == 2 && req.stages[0].verify && !req.stages[1].verify,
           "verify=yes on stage_out, verify=no on stage_in");
    tap_is_int(reparse(&req), 1, "they survive formatting");
    tap_ok(req.max_bw == 200ULL << 20 && req.max_mdops == 1500 && req.nstages == 2 &&
           req.stages[0].verify && !req.stages[1].verify, "with the same values");
    bb_request_free(&req);
    rejected("#BB_ADAFS max_mdops=12k\n", "invalid number '12k' for max_mdops");
    rejected("#BB_ADAFS max_mdops=0\n", "max_mdops=0 must be greater than zero");
    rejected("#BB_ADAFS max_mdops=99999999999999999999999\n", "too large");
    rejected("#BB_ADAFS max_bw=fast\n", "invalid size 'fast' for max_bw");
    rejected("#BB_ADAFS max_bw\n", "'max_bw' needs a value");
    rejected("#BB_ADAFS stage_out source=a destination=/b type=file verify=maybe\n",
             "verify=maybe: expected yes or no");

    tap_is_int(parse("#BB_ADAFS capacity=1G access=fuse\n", NULL, &req), 1, "access=fuse parses");
    tap_is_int(req.access, BB_ACCESS_FUSE, "as fuse");
    tap_is_int(reparse(&req), 1, "and survives formatting");
    tap_is_int(req.access, BB_ACCESS_FUSE, "still fuse");
    bb_request_free(&req);
    tap_is_int(parse(NULL, "access=both", &req), 1, "access=both alone, with --bb");
    tap_is_int(req.access, BB_ACCESS_BOTH, "as both");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS access=preload\n", NULL, &req), 1, "access=preload parses");
    tap_is_int(req.access, BB_ACCESS_PRELOAD, "as preload");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS capacity=1G\n", NULL, &req), 1, "no access=");
    tap_is_int(req.access, BB_ACCESS_UNSET, "leaves the site's default");
    bb_request_free(&req);
    rejected("#BB_ADAFS access=kernel\n", "access=kernel: expected preload, fuse or both");
    rejected("#BB_ADAFS access=fuse access=both\n", "access given twice");
    rejected("#BB_ADAFS access\n", "'access' needs a value, as in access=both");

    /* The three malformed directives of the acceptance tests. */
    rejected("#BB_ADAFS capacty=10G\n", "'capacty'");
    rejected("#BB_ADAFS capacity=12QB\n", "'12QB'");
    rejected("#BB_ADAFS capacity 10G\n", "'capacity' needs a value");
    rejected("#BB_ADAFS stage_in source /pfs/a destination=b type=file\n", "'source' needs a value");
    rejected("#BB_ADAFS frobnicate\n", "'frobnicate'");
    /* A user who writes two lines as one (sbatch --bb "capacity=1G stage_in ...") is told
     * that a line keyword begins a line, not that it needs a value. */
    rejected("#BB_ADAFS capacity=1G stage_in source=/pfs/a destination=b type=file\n",
             "'stage_in' must begin a line of its own");
    rejected("#BB_ADAFS capcity=1G\n", "lines of their own: stage_in");
    /* A QoS limit written as an option is told where it goes. */
    rejected("#BB_ADAFS capacity=1G stat=100\n", "'stat=100' is a QoS limit: it goes on a qos "
             "line of its own (#BB_ADAFS qos stat=100)");
    rejected("#BB_ADAFS mdops=2000\n", "(#BB_ADAFS qos mdops=2000)");
    rejected("#BB_ADAFS create_persistent name=p capacity=1G qos stat=100\n",
             "'qos' must begin a line of its own");
    rejected("#BB_ADAFS create_persistent name=p capacity=1G stat=100\n", "is a QoS limit");
    rejected("#BB_ADAFS stage_in source=/a destination=b type=file write=1G\n", "is a QoS limit");
    rejected("#BB_ADAFS\n", "empty directive");
    rejected("#BB_ADAFS chunk=3K\n", "power of two");
    rejected("#BB_ADAFS chunk=1G\n", "between 4K and 64M");
    rejected("#BB_ADAFS capacity=0\n", "greater than zero");
    rejected("#BB_ADAFS stage_in source=rel destination=b type=file\n", "source=rel must be an absolute");
    rejected("#BB_ADAFS stage_in source=/a destination=/b type=file\n", "destination=/b must be relative");
    rejected("#BB_ADAFS stage_in source=/a destination=$ADAFS_PERSISTENT_/b type=file\n",
             "$ADAFS_PERSISTENT_ must be followed by an instance's name");
    rejected("#BB_ADAFS stage_out source=$ADAFS_PERSISTENT_p/../x destination=/o type=file\n",
             "must not contain '..'");
    {
        struct bb_request in_instance = { 0 };
        char name[PERSIST_NAME_MAX + 1];
        tap_ok(parse("#BB_ADAFS stage_in source=/a destination=$ADAFS_PERSISTENT_proj/in/x "
                     "type=file\n", NULL, &in_instance) > 0 &&
               strcmp(directive_inside_instance(in_instance.stages[0].destination, name),
                      "in/x") == 0 && strcmp(name, "proj") == 0,
               "a stage line into $ADAFS_PERSISTENT_proj/in/x: instance proj, path in/x (%s)", err);
        bb_request_free(&in_instance);
        tap_ok(strcmp(directive_inside_instance("$ADAFS_PERSISTENT_proj", name), ".") == 0 &&
               strcmp(name, "proj") == 0 &&
               strcmp(directive_inside_instance("plain/x", name), "plain/x") == 0 && !name[0],
               "the instance's root, and a path without the prefix");
    }
    rejected("#BB_ADAFS stage_in source=/a destination=../b type=file\n", "must not contain '..'");
    rejected("#BB_ADAFS stage_out source=a destination=/b type=blob\n", "unknown type 'blob'");
    rejected("#BB_ADAFS stage_out source=a destination=/b\n", "needs type=");
    rejected("#BB_ADAFS stage_out destination=/b type=file\n", "needs source=");
    rejected("#BB_ADAFS stage_out source=a destination=/out/%q type=file\n", "'%q'");
    rejected("#BB_ADAFS stage_out source=a source=b destination=/b type=file\n", "source given twice");
    rejected("#BB_ADAFS stage_in source=\"/a destination=b type=file\n", "unterminated quote");
    rejected("#BB_ADAFS capacity=1G\n#BB_ADAFS capacity=2G\n", "line 2): capacity given twice");
    rejected("#BB_ADAFS max_bw=1M chunk=1M max_bw=2M\n", "max_bw given twice");
    tap_is_int(parse("#BB_ADAFS capacity=1G\n#BB_ADAFS max_mdops=10\n", NULL, &req), 1,
               "options may take several lines");
    tap_ok(req.capacity == 1ULL << 30 && req.max_mdops == 10, "and all count");
    bb_request_free(&req);
    rejected("#!/bin/sh\n\n#BB_ADAFS capacity=1G\n#BB_ADAFS bogus=1\n", "line 4");

    /* The job's own I/O demand toward the parallel file system. */
    tap_is_int(parse("#!/bin/sh\n#BB_ADAFS capacity=1G\n#BB_ADAFS qos mdops=2000 bw=500M\n", NULL,
                     &req), 1, "qos parses");
    tap_ok(req.qos.v[QOS_STAT] == 2000 && req.qos.v[QOS_WRITE] == 500ULL << 20 && req.qos_line == 3,
           "mdops for every metadata class, bw for read and write, its line kept");
    tap_ok(!bb_request_qos_only(&req), "with a capacity it is not QoS only");
    tap_is_int(reparse(&req), 1, "it survives formatting");
    tap_ok(req.qos.v[QOS_OPEN] == 2000 && req.qos.v[QOS_READ] == 500ULL << 20, "with the same values");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS qos stat=1000,write=100M\n", NULL, &req), 1, "a QoS-only request");
    tap_ok(bb_request_qos_only(&req) && req.qos.v[QOS_OPEN] == 0, "is QoS only, classes not given stay so");
    bb_request_free(&req);
    rejected("#BB_ADAFS qos stat=lots\n", "invalid rate 'lots' for stat");
    rejected("#BB_ADAFS qos stats=5\n", "unknown class 'stats'");
    rejected("#BB_ADAFS qos\n", "qos needs CLASS=RATE");
    rejected("#BB_ADAFS qos \"\"\n", "qos needs CLASS=RATE");   /* found by fuzz_directive */
    rejected("#BB_ADAFS qos ,\n", "qos needs CLASS=RATE");
    rejected("#BB_ADAFS capacity=1G\n#BB_ADAFS qos write=12QB\n", "line 2): qos: invalid rate '12QB'");
    rejected("#BB_ADAFS qos stat=100 stat=200\n", "qos: stat given twice");
    rejected("#BB_ADAFS qos mdops=100\n#BB_ADAFS qos stat=300\n",
             "line 2): qos: stat is given again (batch script line 1 set it already)");
    tap_is_int(parse("#BB_ADAFS qos stat=100\n#BB_ADAFS qos write=1G\n", NULL, &req), 1,
               "qos lines of different classes add up");
    bb_request_free(&req);

    /* Persistent instances: create, use, destroy. */
    tap_is_int(parse("#!/bin/sh\n#BB_ADAFS create_persistent name=proj_a capacity=10G nodes=2 "
                     "access=group:root\n#BB_ADAFS use_persistent name=shared1\n", NULL, &req),
               1, "create_persistent and use_persistent parse");
    tap_ok(req.npersist == 2 && req.persist[0].op == PERSIST_CREATE &&
           req.persist[0].capacity == 10ULL << 30 && req.persist[0].nodes == 2 &&
           req.persist[0].access == PERSIST_ACCESS_GROUP && req.persist[0].line == 2 &&
           strcmp(req.persist[0].group, "root") == 0, "create: name, capacity, nodes, group, line");
    tap_ok(req.persist[1].op == PERSIST_USE && strcmp(req.persist[1].name, "shared1") == 0,
           "use: its name");
    tap_ok(!bb_request_wants_job_fs(&req) && !bb_request_qos_only(&req),
           "persistent lines alone ask no job file system, and are not QoS only");
    char perr[512];
    tap_is_int(directive_check_persistent("BB_ADAFS", &req, 1, perr, sizeof(perr)), -1,
               "nodes=2 with one persistent node is refused");
    tap_ok(strstr(perr, "line 2") && strstr(perr, "nodes=2") && strstr(perr, "AdafsPersistentNodes"),
           "naming the line, the token and the key (%s)", perr);
    tap_is_int(directive_check_persistent("BB_ADAFS", &req, 0, perr, sizeof(perr)), -1,
               "no persistent nodes at all: refused");
    tap_ok(strstr(perr, "AdafsPersistentNodes is not set") != NULL, "saying so (%s)", perr);
    tap_is_int(directive_check_persistent("BB_ADAFS", &req, 4, perr, sizeof(perr)), -1,
               "group root may not share one");
    tap_is_int(reparse(&req), 1, "persistent lines survive formatting");
    tap_ok(req.npersist == 2 && req.persist[0].nodes == 2 && req.persist[0].capacity == 10ULL << 30 &&
           req.persist[0].group && strcmp(req.persist[0].group, "root") == 0 &&
           req.persist[1].op == PERSIST_USE, "with the same values");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS create_persistent name=x capacity=1G access=user\n", NULL, &req), 1,
               "access=user parses");
    tap_ok(req.persist[0].access == PERSIST_ACCESS_USER && !req.persist[0].group &&
           !req.persist[0].nodes, "as the owner only, every persistent node");
    tap_is_int(directive_check_persistent("BB_ADAFS", &req, 3, perr, sizeof(perr)), 0,
               "it passes the submit-time checks");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS create_persistent name=x capacity=1G access=group:nosuchgroup_adafs\n",
                     NULL, &req), 1, "a well-formed group name parses");
    tap_is_int(directive_check_persistent("BB_ADAFS", &req, 3, perr, sizeof(perr)), -1,
               "an unknown group is refused at submit");
    tap_ok(strstr(perr, "line 1") && strstr(perr, "group:nosuchgroup_adafs: no such group"),
           "naming the group and line (%s)", perr);
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS capacity=1G\n#BB_ADAFS destroy_persistent name=old\n", NULL, &req), 1,
               "a job file system and a destroy in one job");
    tap_ok(bb_request_wants_job_fs(&req) && req.npersist == 1 && req.persist[0].op == PERSIST_DESTROY,
           "both kept");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS create_persistent name=f capacity=1G fair_share=user-then-size\n",
                     NULL, &req), 1, "fair_share= parses");
    tap_is_str(req.persist[0].fair_share, "user-then-size", "the instance's fair-share policy is kept");
    tap_is_int(reparse(&req), 1, "fair_share= survives formatting");
    tap_is_str(req.persist[0].fair_share, "user-then-size", "with the same policy");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS create_persistent name=f capacity=1G fair_share=off\n", NULL, &req), 1,
                     "fair_share=off parses (the instance says: no sharing, whatever the agents')");
    tap_ok(strcmp(req.persist[0].fair_share, "off") == 0, "off is kept as said");
    bb_request_free(&req);
    tap_is_int(parse("#BB_ADAFS create_persistent name=f capacity=1G\n", NULL, &req), 1,
               "without fair_share=");
    tap_is_str(req.persist[0].fair_share, "", "none: the agents' --fair-policy holds");
    bb_request_free(&req);
    rejected("#BB_ADAFS capacity=1G\n#BB_ADAFS create_persistent name=a capacity=1G fair_share=fifo\n",
             "line 2): fair_share=fifo: expected off, job-fair, user-fair, group-fair, size-fair or "
             "user-then-size");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G fair_share=job-fair fair_share=off\n",
             "fair_share given twice");
    rejected("#BB_ADAFS use_persistent name=a fair_share=job-fair\n",
             "not by the jobs that use it");
    rejected("#BB_ADAFS capacity=1G fair_share=job-fair\n", "fair_share= is an option of "
             "create_persistent: a job's own file system serves that job alone");
    rejected("#BB_ADAFS create_persistent capacity=1G\n", "create_persistent needs name=NAME");
    rejected("#BB_ADAFS create_persistent name=a\n", "create_persistent needs capacity=SIZE");
    rejected("#BB_ADAFS create_persistent name=a capacity=lots\n", "invalid size 'lots' for capacity");
    rejected("#BB_ADAFS create_persistent name=a capacity=0\n", "capacity=0 must be greater than zero");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G nodes=0\n", "nodes=0 must be greater");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G nodes=two\n", "invalid number 'two' for nodes");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G nodes=99999\n", "nodes=99999 is more than");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G access=world\n",
             "access=world: expected user or group:GROUP");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G access=group:\n", "needs a group name");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G access=group:a/b\n",
             "group:a/b is not a valid group name");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G chunk=1M\n",
             "unknown create_persistent option 'chunk'");
    rejected("#BB_ADAFS use_persistent name=a capacity=1G\n", "unknown use_persistent option 'capacity'");
    rejected("#BB_ADAFS use_persistent\n", "use_persistent needs name=NAME");
    rejected("#BB_ADAFS use_persistent name\n", "'name' needs a value");
    rejected("#BB_ADAFS destroy_persistent name=\n", "name= is empty");
    rejected("#BB_ADAFS use_persistent name=1abc\n", "name=1abc must start with a letter");
    rejected("#BB_ADAFS use_persistent name=a-b\n", "'-' is not allowed");
    rejected("#BB_ADAFS use_persistent name=_a\n", "name=_a must start with a letter");
    rejected("#BB_ADAFS use_persistent name=caf\xc3\xa9\n", "is not allowed");
    rejected("#BB_ADAFS use_persistent name=../etc\n", "must start with a letter");
    rejected("#BB_ADAFS use_persistent name=abcdefghijabcdefghijabcdefghijabc\n",
             "longer than 32 characters");
    rejected("#BB_ADAFS use_persistent name=a name=b\n", "name given twice");
    rejected("#BB_ADAFS create_persistent name=a capacity=1G\n#BB_ADAFS destroy_persistent name=a\n",
             "line 2): name=a: one job can not both create and destroy");
    rejected("#BB_ADAFS destroy_persistent name=a\n#BB_ADAFS create_persistent name=a capacity=1G\n",
             "one job can not both create and destroy");
    rejected("#BB_ADAFS use_persistent name=a\n#BB_ADAFS use_persistent name=a\n",
             "name=a: already named by use_persistent on line 1");
    rejected("#BB_ADAFS use_persistent name=a\n#BB_ADAFS use_persistent name=b\n"
             "#BB_ADAFS use_persistent name=c\n#BB_ADAFS use_persistent name=d\n"
             "#BB_ADAFS use_persistent name=e\n#BB_ADAFS use_persistent name=f\n"
             "#BB_ADAFS use_persistent name=g\n#BB_ADAFS use_persistent name=h\n"
             "#BB_ADAFS use_persistent name=i\n", "line 9): too many persistent-instance lines");

    struct symbol_values v = { .job_id = 42, .user = "alice", .job_name = "sim",
                               .first_node = "n1" };
    char *x = directive_expand("/pfs/%u/%x/%j/%A_%a/%N/100%%", &v);
    tap_is_str(x, "/pfs/alice/sim/42/42_0/n1/100%", "symbols replaced");
    free(x);
    x = directive_expand("%jabc%", &v);
    tap_is_str(x, "42abc%", "a symbol first, a '%' last (kept)");
    free(x);
    x = directive_expand("%q/%%%j", &v);
    tap_is_str(x, "%q/%42", "an unknown symbol kept, %% then a symbol");
    free(x);

    /* Quoted values written out with their quotes and backslashes
     * escaped, read back the same. */
    tap_is_int(parse("#BB_ADAFS stage_out source=\"a \\\"b\\\\c\\\" \" "
                     "destination=\"/\\\"x y\" type=file\n", NULL, &req), 1,
               "values with quotes and backslashes");
    canon = bb_request_format("BB_ADAFS", &req);
    tap_is_str(canon, "#BB_ADAFS stage_out source=\"a \\\"b\\\\c\\\" \" "
               "destination=\"/\\\"x y\" type=file\n", "written out escaped");
    tap_is_int(reparse(&req), 1, "and read back");
    tap_ok(req.nstages == 1 && strcmp(req.stages[0].source, "a \"b\\c\" ") == 0 &&
           strcmp(req.stages[0].destination, "/\"x y") == 0, "the same values (%s, %s)",
           req.nstages ? req.stages[0].source : "", req.nstages ? req.stages[0].destination : "");
    free(canon);
    bb_request_free(&req);
    return tap_done();
}
