/* Unit tests of the agent's record of a persistent instance (agentd/
 * persistent.h): what START said comes back after an agent restart, the
 * servers' fair-share policy included, and a record written before a field
 * existed still loads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "persistent.h"
#include "tap.h"

static char dir[64], err[512];

static int load_text(const char *text, struct persistent_rec *r)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/x.record", dir);
    err[0] = '\0';
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    fclose(f);
    return persistent_record_load(path, r, err, sizeof(err));
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/adafs-precord.XXXXXX");
    if (!mkdtemp(dir))
        return tap_ok(0, "mkdtemp: %m"), tap_done();

    char secret[INSTANCE_SECRET_HEX], key[INSTANCE_SECRET_HEX];
    snprintf(secret, sizeof(secret), "%064d", 5);
    snprintf(key, sizeof(key), "%064d", 6);
    struct agent_start m = { .job_id = AGENT_PERSIST_ID_BASE + 4, .uid = 1001, .gid = 1001,
                             .index = 1, .nservers = 2, .chunk_size = 1 << 19, .quota = 1 << 30,
                             .listen_host = "n3", .storage = "/s", .secret_hex = secret,
                             .numa_node = -1, .flags = AGENT_START_PERSISTENT,
                             .persist_name = "proj", .access_gid = 2000, .server_key_hex = key,
                             .fair_policy = "user-then-size" };
    struct persistent_rec r, back;
    tap_is_int(persistent_rec_from_start(&r, &m), 0, "a persistent START makes a record");
    tap_is_str(r.fair_policy, "user-then-size", "with its servers' fair-share policy");
    r.port = 40123;
    char base[128], path[160];
    snprintf(base, sizeof(base), "%s/proj", dir);
    snprintf(path, sizeof(path), "%s.record", base);
    tap_is_int(persistent_record_save(base, &r), 0, "the record saves");
    tap_ok(persistent_record_load(path, &back, err, sizeof(err)) == 0 &&
           strcmp(back.fair_policy, "user-then-size") == 0 && back.port == 40123 &&
           back.access_gid == 2000 && strcmp(back.server_key_hex, key) == 0,
           "and loads back, policy, port, group and key (%s)", err);
    struct agent_start again;
    persistent_rec_to_start(&back, &again);
    tap_ok(strcmp(again.fair_policy, "user-then-size") == 0 && again.flags == AGENT_START_PERSISTENT,
           "the START that restarts its server names the policy again");

    m.fair_policy = NULL;
    tap_ok(persistent_rec_from_start(&r, &m) == 0 && r.fair_policy[0] == '\0',
           "a START without one: none (the agent's --fair-policy)");
    r.port = 40123;
    persistent_record_save(base, &r);
    tap_ok(persistent_record_load(path, &back, err, sizeof(err)) == 0 && back.fair_policy[0] == '\0',
           "saved and loaded as none (%s)", err);

    /* Written by an agent of before server_key= and fair_policy=. */
    const char *old = "id=2147483652\nname=proj\nuid=1001\ngid=1001\naccess_gid=0\nindex=0\n"
                      "nservers=1\nchunk_size=524288\nquota=1073741824\nnuma_node=-1\n"
                      "listen_host=n3\nstorage=/s\nsecret=ab\nport=40100\n";
    tap_ok(load_text(old, &back) == 0 && back.fair_policy[0] == '\0' && back.server_key_hex[0] == '\0' &&
           back.port == 40100, "a record of before the policy loads with none (%s)", err);
    char text[1024];
    snprintf(text, sizeof(text), "%sserver_key=%s\nfair_policy=off\n", old, key);
    tap_ok(load_text(text, &back) == 0 && strcmp(back.fair_policy, "off") == 0,
           "off is kept as said (%s)", err);
    snprintf(text, sizeof(text), "%sfair_policy=fifo\n", old);
    tap_ok(load_text(text, &back) < 0 && strstr(err, ":15: not a persistent instance's record"),
           "a policy that is none is refused, naming the line (%s)", err);

    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    tap_is_int(system(cmd), 0, "cleaned up");
    return tap_done();
}
