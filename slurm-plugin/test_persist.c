#include "persist.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static char err[512];

static struct persist_spec spec(const char *name, uint64_t capacity, const char *group)
{
    struct persist_spec s = { .op = PERSIST_CREATE, .capacity = capacity,
                              .group = (char *)group,
                              .access = group ? PERSIST_ACCESS_GROUP : PERSIST_ACCESS_USER };
    snprintf(s.name, sizeof(s.name), "%s", name);
    return s;
}

int main(void)
{
    struct persist_table t = { .pool_capacity = 10ULL << 30 };
    struct persist_spec a = spec("proj", 4ULL << 30, "proj"), b = spec("mine", 4ULL << 30, NULL);
    snprintf(a.fair_share, sizeof(a.fair_share), "user-then-size");

    struct persist_instance *p = persist_create(&t, &a, 12, 1001, 1001, "alice", 2000, 100, err,
                                                sizeof(err));
    tap_ok(p && p->state == PERSIST_STATE_CREATING && p->access_gid == 2000 &&
           strcmp(p->group, "proj") == 0 && p->creator_job == 12, "job 12 creates proj, shared with group proj");
    tap_ok(persist_create(&t, &b, 13, 1002, 1002, "bob", 0, 100, err, sizeof(err)) != NULL,
           "job 13 creates mine, its owner's only");
    tap_ok(!persist_create(&t, &a, 14, 1003, 1003, "carol", 0, 100, err, sizeof(err)) &&
           strstr(err, "name=proj: an instance of that name exists (owner alice, created by job 12)"),
           "a taken name is refused, naming its owner (%s)", err);
    struct persist_spec big = spec("big", 3ULL << 30, NULL);
    tap_ok(!persist_create(&t, &big, 15, 1001, 1001, "alice", 0, 100, err, sizeof(err)) &&
           strstr(err, "capacity=3G: the persistent nodes have 2G left"),
           "more than the pool has left is refused (%s)", err);
    uint64_t cap, used;
    p->used = 1ULL << 20;
    persist_totals(&t, &cap, &used);
    tap_ok(cap == 8ULL << 30 && used == 1ULL << 20, "totals: 8G taken, 1M used");

    uint32_t bob_groups[] = { 1002, 2000 }, carol_groups[] = { 1003, 2001 };
    tap_is_int(persist_check_use(&t, "proj", 1001, NULL, 0, err, sizeof(err)), 0, "the owner may use it");
    tap_is_int(persist_check_use(&t, "proj", 1002, bob_groups, 2, err, sizeof(err)), 0,
               "a member of its group may");
    tap_ok(persist_check_use(&t, "proj", 1003, carol_groups, 2, err, sizeof(err)) == -1 &&
           strstr(err, "owned by alice, shared with group proj: not shared with uid 1003"),
           "another user may not (%s)", err);
    tap_ok(persist_check_use(&t, "mine", 1001, bob_groups, 2, err, sizeof(err)) == -1,
           "an owner-only instance refuses even a user of a shared group");
    tap_ok(persist_check_use(&t, "nope", 1001, NULL, 0, err, sizeof(err)) == -1 &&
           strstr(err, "use_persistent name=nope: no such persistent instance"), "an unknown name (%s)", err);
    tap_ok(persist_check_destroy(&t, "Proj", 1001, NULL, 0, err, sizeof(err)) == -1 &&
           strstr(err, "no such persistent instance (names are case-sensitive: there is 'proj')"),
           "a name in the wrong case is pointed to the right one (%s)", err);

    uint32_t users[] = { 20, 21 };
    tap_ok(persist_check_destroy(&t, "proj", 1001, users, 2, err, sizeof(err)) == -1 &&
           strstr(err, "destroy_persistent name=proj: in use by job(s) 20,21"),
           "destroy while jobs use it is refused, naming them (%s)", err);
    tap_ok(persist_check_destroy(&t, "proj", 1002, NULL, 0, err, sizeof(err)) == -1 &&
           strstr(err, "only its owner alice may destroy it"), "a group member may not destroy it (%s)", err);
    tap_is_int(persist_check_destroy(&t, "proj", 1001, NULL, 0, err, sizeof(err)), 0,
               "its owner may once nobody uses it");
    tap_is_int(persist_check_destroy(&t, "proj", 0, NULL, 0, err, sizeof(err)), 0, "and root may");

    char env[PERSIST_ENV_MAX];
    persist_env_name("proj", env);
    tap_is_str(env, "ADAFS_PERSISTENT_proj", "the job's variable");
    char *text = persist_status_text(&t);
    tap_ok(text && strstr(text, "Name=proj Owner=alice(1001) Access=group:proj FairShare=user-then-size "
                          "Capacity=4G Used=1M Nodes=all State=creating CreatedBy=12") &&
           strstr(text, "Name=mine Owner=bob(1002) Access=user FairShare=default "),
           "show burst lines, each with its policy (default: the agents'):\n%s", text);
    free(text);

    /* The saved form round-trips; a damaged one is refused, never half read. */
    struct rpc_writer w;
    rpc_writer_init(&w, NULL, 0);
    p->state = PERSIST_STATE_READY;
    persist_encode(&w, p);
    struct rpc_reader r;
    rpc_reader_init(&r, w.data, w.len);
    struct persist_instance *q = persist_decode(&r, err, sizeof(err));
    tap_ok(q && strcmp(q->name, "proj") == 0 && q->owner_uid == 1001 && q->access_gid == 2000 &&
           strcmp(q->group, "proj") == 0 && strcmp(q->owner, "alice") == 0 &&
           q->capacity == 4ULL << 30 && q->used == 1ULL << 20 && q->creator_job == 12 &&
           q->created == 100 && q->state == PERSIST_STATE_READY &&
           strcmp(q->fair_share, "user-then-size") == 0, "a record round-trips, its policy too");
    persist_instance_free(q);

    /* A record saved before fair_share= (the state word alone ends it)
     * loads with none: the agents' policy. */
    struct rpc_writer old;
    rpc_writer_init(&old, NULL, 0);
    rpc_reader_init(&r, w.data, w.len);
    rpc_put_u32(&old, rpc_get_u32(&r));   /* the record's magic, as persist.c writes it */
    rpc_put_str(&old, "old");
    rpc_put_u32(&old, 1001);
    rpc_put_u32(&old, 1001);
    rpc_put_str(&old, "alice");
    rpc_put_u32(&old, 0);
    rpc_put_str(&old, "");
    rpc_put_u64(&old, 1ULL << 30);
    rpc_put_u64(&old, 0);
    rpc_put_u32(&old, 2);
    rpc_put_u32(&old, 9);
    rpc_put_i64(&old, 50);
    rpc_put_u32(&old, PERSIST_STATE_READY);
    rpc_reader_init(&r, old.data, old.len);
    q = persist_decode(&r, err, sizeof(err));
    tap_ok(q && strcmp(q->name, "old") == 0 && q->fair_share[0] == '\0' && q->nodes == 2 &&
           q->state == PERSIST_STATE_READY, "a record of before fair_share= loads, with none (%s)",
           q ? "" : err);
    persist_instance_free(q);
    rpc_writer_free(&old);
    rpc_writer_init(&old, NULL, 0);
    snprintf(p->fair_share, sizeof(p->fair_share), "fifo");
    persist_encode(&old, p);
    rpc_reader_init(&r, old.data, old.len);
    q = persist_decode(&r, err, sizeof(err));
    tap_ok(!q, "a saved policy that is none is refused (%s)", err);
    persist_instance_free(q);
    rpc_writer_free(&old);
    snprintf(p->fair_share, sizeof(p->fair_share), "user-then-size");
    size_t bad = 0;
    for (size_t cut = 0; cut < w.len; cut++) {
        rpc_reader_init(&r, w.data, cut);
        struct persist_instance *x = persist_decode(&r, err, sizeof(err));
        bad += x == NULL;
        persist_instance_free(x);
    }
    tap_is_int(bad, w.len, "every truncation is refused");
    rpc_writer_free(&w);

    persist_remove(&t, "proj");
    tap_ok(!persist_find(&t, "proj") && persist_find(&t, "mine"), "removed, the other kept");
    persist_table_free(&t);
    return tap_done();
}
