#include "persist.h"

#include "size.h"
#include "strbuf.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PERSIST_RECORD 0x50455253u   /* "PERS": a persistent instance's record */

const char *persist_state_name(enum persist_state state)
{
    switch (state) {
    case PERSIST_STATE_CREATING: return "creating";
    case PERSIST_STATE_READY: return "ready";
    case PERSIST_STATE_DESTROYING: return "destroying";
    }
    return "?";
}

struct persist_instance *persist_find(const struct persist_table *t, const char *name)
{
    for (struct persist_instance *p = t->head; p; p = p->next)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

void persist_totals(const struct persist_table *t, uint64_t *capacity, uint64_t *used)
{
    *capacity = *used = 0;
    for (const struct persist_instance *p = t->head; p; p = p->next) {
        *capacity += p->capacity;
        *used += p->used;
    }
}

struct persist_instance *persist_create(struct persist_table *t, const struct persist_spec *spec,
                                        uint32_t job_id, uint32_t uid, uint32_t gid,
                                        const char *user, uint32_t access_gid, time_t now,
                                        char *err, size_t errlen)
{
    const struct persist_instance *same = persist_find(t, spec->name);
    if (same) {
        snprintf(err, errlen, "create_persistent name=%s: an instance of that name exists "
                 "(owner %s, created by job %u)", spec->name, same->owner ? same->owner : "?",
                 same->creator_job);
        return NULL;
    }
    uint64_t taken, used;
    persist_totals(t, &taken, &used);
    if (t->pool_capacity && (spec->capacity > t->pool_capacity ||
                             taken > t->pool_capacity - spec->capacity)) {
        char want[32], left[32];
        size_format(spec->capacity, want, sizeof(want));
        size_format(t->pool_capacity > taken ? t->pool_capacity - taken : 0, left, sizeof(left));
        snprintf(err, errlen, "create_persistent name=%s capacity=%s: the persistent nodes have "
                 "%s left", spec->name, want, left);
        return NULL;
    }
    struct persist_instance *p = calloc(1, sizeof(*p));
    if (!p || !(p->owner = strdup(user ? user : "")) ||
        (spec->group && !(p->group = strdup(spec->group)))) {
        persist_instance_free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(p->name, sizeof(p->name), "%s", spec->name);
    p->owner_uid = uid;
    p->owner_gid = gid;
    p->access_gid = spec->group ? access_gid : 0;
    memcpy(p->fair_share, spec->fair_share, sizeof(p->fair_share));
    p->capacity = spec->capacity;
    p->nodes = spec->nodes;
    p->creator_job = job_id;
    p->created = now;
    p->state = PERSIST_STATE_CREATING;
    struct persist_instance **tail = &t->head;   /* in creation order */
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    return p;
}

/* "no such persistent instance", naming one whose name differs only in
 * case (names are case-sensitive; every user may list them anyway). */
static void no_such(const struct persist_table *t, const char *op, const char *name, char *err,
                    size_t errlen)
{
    const struct persist_instance *like = t->head;
    while (like && strcasecmp(like->name, name) != 0)
        like = like->next;
    snprintf(err, errlen, "%s name=%s: no such persistent instance%s%s%s", op, name,
             like ? " (names are case-sensitive: there is '" : "", like ? like->name : "",
             like ? "')" : "");
}

int persist_check_use(const struct persist_table *t, const char *name, uint32_t uid,
                      const uint32_t *groups, size_t ngroups, char *err, size_t errlen)
{
    const struct persist_instance *p = persist_find(t, name);
    if (!p) {
        no_such(t, "use_persistent", name, err, errlen);
        return -1;
    }
    bool member = false;
    for (size_t i = 0; p->access_gid && i < ngroups; i++)
        member |= groups[i] == p->access_gid;
    if (uid != p->owner_uid && !member) {
        snprintf(err, errlen, "use_persistent name=%s: owned by %s%s%s: not shared with uid %u",
                 name, p->owner ? p->owner : "?", p->group ? ", shared with group " : "",
                 p->group ? p->group : "", (unsigned)uid);
        return -1;
    }
    if (p->state == PERSIST_STATE_DESTROYING) {
        snprintf(err, errlen, "use_persistent name=%s: being destroyed", name);
        return -1;
    }
    return 0;
}

int persist_check_destroy(const struct persist_table *t, const char *name, uint32_t uid,
                          const uint32_t *users, size_t nusers, char *err, size_t errlen)
{
    const struct persist_instance *p = persist_find(t, name);
    if (!p) {
        no_such(t, "destroy_persistent", name, err, errlen);
        return -1;
    }
    if (uid != p->owner_uid && uid != 0) {
        snprintf(err, errlen, "destroy_persistent name=%s: only its owner %s may destroy it",
                 name, p->owner ? p->owner : "?");
        return -1;
    }
    if (nusers) {
        struct strbuf b = { 0 };
        for (size_t i = 0; i < nusers && i < 8; i++)
            strbuf_printf(&b, "%s%u", i ? "," : "", users[i]);
        char *list = strbuf_take(&b);
        snprintf(err, errlen, "destroy_persistent name=%s: in use by job(s) %s%s", name,
                 list ? list : "?", nusers > 8 ? ",..." : "");
        free(list);
        return -1;
    }
    return 0;
}

void persist_instance_free(struct persist_instance *p)
{
    if (!p)
        return;
    free(p->owner);
    free(p->group);
    free(p);
}

void persist_remove(struct persist_table *t, const char *name)
{
    for (struct persist_instance **at = &t->head; *at; at = &(*at)->next)
        if (strcmp((*at)->name, name) == 0) {
            struct persist_instance *gone = *at;
            *at = gone->next;
            persist_instance_free(gone);
            return;
        }
}

void persist_link(struct persist_table *t, struct persist_instance *p)
{
    struct persist_instance **tail = &t->head;
    while (*tail && *tail != p)
        tail = &(*tail)->next;
    if (!*tail) {
        p->next = NULL;
        *tail = p;
    }
}

void persist_unlink(struct persist_table *t, struct persist_instance *p)
{
    for (struct persist_instance **at = &t->head; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            p->next = NULL;
            return;
        }
}

void persist_table_free(struct persist_table *t)
{
    while (t->head) {
        struct persist_instance *next = t->head->next;
        persist_instance_free(t->head);
        t->head = next;
    }
}

void persist_env_name(const char *name, char out[PERSIST_ENV_MAX])
{
    snprintf(out, PERSIST_ENV_MAX, "ADAFS_PERSISTENT_%s", name);
}

char *persist_status_text(const struct persist_table *t)
{
    struct strbuf b = { 0 };
    strbuf_printf(&b, "%s", "");
    for (const struct persist_instance *p = t->head; p; p = p->next) {
        char cap[32], used[32];
        size_format(p->capacity, cap, sizeof(cap));
        size_format(p->used, used, sizeof(used));
        /* FairShare=default: each node agent's --fair-policy (not known here).
         * Nodes=all: no nodes= given, every AdafsPersistentNodes node (0 read
         * as none). */
        char nodes[16];
        snprintf(nodes, sizeof(nodes), p->nodes ? "%u" : "all", (unsigned)p->nodes);
        strbuf_printf(&b, "    Name=%s Owner=%s(%u) Access=%s%s FairShare=%s Capacity=%s Used=%s "
                      "Nodes=%s State=%s CreatedBy=%u\n", p->name, p->owner ? p->owner : "?",
                      (unsigned)p->owner_uid, p->group ? "group:" : "user",
                      p->group ? p->group : "", p->fair_share[0] ? p->fair_share : "default",
                      cap, used, nodes,
                      persist_state_name(p->state), (unsigned)p->creator_job);
    }
    return strbuf_take(&b);
}

void persist_encode(struct rpc_writer *w, const struct persist_instance *p)
{
    rpc_put_u32(w, PERSIST_RECORD);
    rpc_put_str(w, p->name);
    rpc_put_u32(w, p->owner_uid);
    rpc_put_u32(w, p->owner_gid);
    rpc_put_str(w, p->owner ? p->owner : "");
    rpc_put_u32(w, p->access_gid);
    rpc_put_str(w, p->group ? p->group : "");
    rpc_put_u64(w, p->capacity);
    rpc_put_u64(w, p->used);
    rpc_put_u32(w, p->nodes);
    rpc_put_u32(w, p->creator_job);
    rpc_put_i64(w, (int64_t)p->created);
    /* Above the state's byte, flags of what follows it (a record of before
     * has none): bit 8, the fair-share policy. */
    rpc_put_u32(w, (uint32_t)p->state | (uint32_t)(p->fair_share[0] != '\0') << 8);
    if (p->fair_share[0])
        rpc_put_str(w, p->fair_share);
}

struct persist_instance *persist_decode(struct rpc_reader *r, char *err, size_t errlen)
{
    if (rpc_get_u32(r) != PERSIST_RECORD) {
        snprintf(err, errlen, "not a persistent instance's record");
        return NULL;
    }
    const char *name = rpc_get_str(r);
    struct persist_instance *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->owner_uid = rpc_get_u32(r);
    p->owner_gid = rpc_get_u32(r);
    const char *owner = rpc_get_str(r);
    p->access_gid = rpc_get_u32(r);
    const char *group = rpc_get_str(r);
    p->capacity = rpc_get_u64(r);
    p->used = rpc_get_u64(r);
    p->nodes = rpc_get_u32(r);
    p->creator_job = rpc_get_u32(r);
    p->created = (time_t)rpc_get_i64(r);
    uint32_t word = rpc_get_u32(r), state = word & 0xff;
    const char *fair = word & 1u << 8 ? rpc_get_str(r) : "";
    if (!rpc_reader_done(r) || !persist_name_valid(name) || state > PERSIST_STATE_DESTROYING ||
        (word & ~(0xffu | 1u << 8)) || (group[0] != '\0') != (p->access_gid != 0) ||
        (word & 1u << 8 && fair_policy_parse(fair) < 0)) {
        snprintf(err, errlen, "persistent instance %s: its record does not decode (%s)",
                 persist_name_valid(name) ? name : "?",
                 rpc_reader_ok(r) ? "bad value or extra bytes" : "truncated or malformed");
        free(p);
        return NULL;
    }
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->fair_share, sizeof(p->fair_share), "%s", fair);
    p->state = (enum persist_state)state;
    p->owner = strdup(owner);
    p->group = group[0] ? strdup(group) : NULL;
    if (!p->owner || (group[0] && !p->group)) {
        persist_instance_free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return p;
}
