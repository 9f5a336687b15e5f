/* adafs-persist's words into the --bb request the plugin reads back. */
#include "agent_proto.h"
#include "directive.h"
#include "persist_admin.h"
#include "tap.h"

#include <string.h>

static char bb[512], name[64], err[512];

static int request(bool create, const char *a, const char *b, const char *c, const char *d)
{
    char *words[] = { (char *)a, (char *)b, (char *)c, (char *)d };
    size_t n = !a ? 0 : !b ? 1 : !c ? 2 : !d ? 3 : 4;
    return persist_admin_request(create, n, words, bb, sizeof(bb), name, sizeof(name), err,
                                 sizeof(err));
}

int main(void)
{
    tap_ok(request(true, "name=proj", "capacity=2G", "nodes=2", "access=group:proj") == 0 &&
           strcmp(bb, "create_persistent name=proj capacity=2G nodes=2 access=group:proj") == 0 &&
           strcmp(name, "proj") == 0, "create: the line in the directive's order (%s)", bb);
    struct bb_request req = { 0 };
    tap_ok(directive_parse("BB_ADAFS", NULL, bb, &req, err, sizeof(err)) == 1 &&
           req.npersist == 1 && req.persist[0].op == PERSIST_CREATE &&
           strcmp(req.persist[0].name, "proj") == 0 && req.persist[0].capacity == 2ULL << 30 &&
           req.persist[0].nodes == 2 && req.persist[0].group &&
           strcmp(req.persist[0].group, "proj") == 0, "which the plugin reads as that request, "
           "from --bb (%s)", err);
    bb_request_free(&req);
    tap_ok(request(true, "fair_share=size-fair", "name=f", "capacity=1G", NULL) == 0 &&
           strcmp(bb, "create_persistent name=f capacity=1G fair_share=size-fair") == 0,
           "create takes fair_share= (%s)", bb);
    memset(&req, 0, sizeof(req));
    tap_ok(directive_parse("BB_ADAFS", NULL, bb, &req, err, sizeof(err)) == 1 &&
           strcmp(req.persist[0].fair_share, "size-fair") == 0, "which the plugin reads as the "
           "instance's policy (%s)", err);
    bb_request_free(&req);
    tap_ok(request(true, "name=f", "capacity=1G", "fair_share=fifo", NULL) == 0, "a policy is "
           "checked by the plugin at submit (naming the token), as every value");
    memset(&req, 0, sizeof(req));
    tap_ok(directive_parse("BB_ADAFS", NULL, bb, &req, err, sizeof(err)) == -1 &&
           strstr(err, "fair_share=fifo: expected off, job-fair"), "(%s)", err);
    bb_request_free(&req);
    tap_ok(request(false, "name=f", "fair_share=off", NULL, NULL) < 0 &&
           strstr(err, "destroy takes name= only"), "destroy takes no policy (%s)", err);
    tap_ok(request(true, "capacity=1T", "name=a_1", NULL, NULL) == 0 &&
           strcmp(bb, "create_persistent name=a_1 capacity=1T") == 0, "in any order, options left out");
    tap_ok(request(false, "name=proj", NULL, NULL, NULL) == 0 &&
           strcmp(bb, "destroy_persistent name=proj") == 0, "destroy: name= only");
    memset(&req, 0, sizeof(req));
    tap_ok(directive_parse("BB_ADAFS", NULL, bb, &req, err, sizeof(err)) == 1 &&
           req.npersist == 1 && req.persist[0].op == PERSIST_DESTROY, "and is read as one");
    bb_request_free(&req);

    tap_ok(request(true, "name=proj", "capacity=1G\ncapacity=9T", NULL, NULL) < 0 &&
           strstr(err, "one word"), "a newline (another line of the request) is refused (%s)", err);
    tap_ok(request(true, "name=proj", "capacity=1G stage_in", NULL, NULL) < 0,
           "as is a blank (another word)");
    tap_ok(request(true, "name=proj", "capacity=\"1G\"", NULL, NULL) < 0 &&
           request(true, "name=proj", "capacity=1G#x", NULL, NULL) < 0 &&
           request(true, "name=proj", "capacity=1G\\", NULL, NULL) < 0,
           "and quotes, '#' and '\\'");
    tap_ok(request(true, "name=proj", "capacity=", NULL, NULL) < 0, "an empty value is refused");
    tap_ok(request(true, "name=proj", "capacity=1G", "stage_in=x", NULL) < 0 &&
           strstr(err, "'stage_in=x': create takes name=, capacity=, nodes=, access= and fair_share="),
           "a key create does not take (%s)", err);
    tap_ok(request(false, "name=proj", "capacity=1G", NULL, NULL) < 0 &&
           strstr(err, "destroy takes name= only"), "destroy takes only the name (%s)", err);
    tap_ok(request(true, "name=proj", "name=other", "capacity=1G", NULL) < 0 &&
           strstr(err, "name= given twice"), "a key twice (%s)", err);
    tap_ok(request(true, "name=proj", NULL, NULL, NULL) < 0 &&
           strstr(err, "create needs name= and capacity="), "create without capacity= (%s)", err);
    tap_ok(request(false, NULL, NULL, NULL, NULL) < 0 && strstr(err, "destroy needs name="),
           "destroy without a name (%s)", err);
    tap_ok(request(true, "name=../x", "capacity=1G", NULL, NULL) < 0 && strstr(err, "a letter"),
           "a name that is no instance name (%s)", err);
    /* The name becomes paths under the storage and mount roots (NAME,
     * N.NAME, .job.N.NAME.instance) and a line of the list: a '/', '..',
     * an escape sequence or a name beyond the limit never gets there. */
    static const char *const bad[] = { "name=a/b", "name=a/../../etc", "name=a..b", "name=a.b",
                                       "name=a\x1b[2Jb", "name=a\nb", "name=a b", "name=a\tb" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        tap_ok(request(true, bad[i], "capacity=1G", NULL, NULL) < 0, "name %zu refused", i);
    char longest[8 + AGENT_PERSIST_NAME_MAX + 2] = "name=";
    memset(longest + 5, 'a', AGENT_PERSIST_NAME_MAX);
    tap_ok(request(false, longest, NULL, NULL, NULL) == 0, "a name of %d letters is one",
           AGENT_PERSIST_NAME_MAX);
    strcat(longest, "a");
    tap_ok(request(false, longest, NULL, NULL, NULL) < 0 && strstr(err, "a letter"),
           "one of %d is refused", AGENT_PERSIST_NAME_MAX + 1);
    tap_ok(request(true, "proj", "capacity=1G", NULL, NULL) < 0, "a word without '='");
    return tap_done();
}
