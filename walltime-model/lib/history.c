#include "history.h"

#include <stdlib.h>
#include <string.h>

void history_init(struct history *h)
{
    memset(h, 0, sizeof(*h));
}

void history_free(struct history *h)
{
    for (size_t i = 0; i < h->cap; i++)
        if (h->slots[i].uid != -1)
            free(h->slots[i].pending);
    free(h->slots);
    history_init(h);
}

static size_t uid_hash(int64_t uid)
{
    uint64_t x = (uint64_t)uid * 0x9E3779B97F4A7C15ull;
    return (size_t)(x ^ (x >> 29));
}

static struct user_hist *probe(struct user_hist *slots, size_t cap, int64_t uid)
{
    for (size_t i = uid_hash(uid) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (slots[i].uid == uid || slots[i].uid == -1)
            return &slots[i];
}

const struct user_hist *history_find(const struct history *h, int64_t uid)
{
    if (!h->cap || uid < 0)
        return NULL;
    const struct user_hist *u = probe(h->slots, h->cap, uid);
    return u->uid == uid ? u : NULL;
}

struct user_hist *history_find_mut(struct history *h, int64_t uid)
{
    if (!h->cap || uid < 0)
        return NULL;
    struct user_hist *u = probe(h->slots, h->cap, uid);
    return u->uid == uid ? u : NULL;
}

static int grow(struct history *h)
{
    size_t cap = h->cap ? h->cap * 2 : 64;
    struct user_hist *slots = malloc(cap * sizeof(*slots));
    if (!slots)
        return -1;
    for (size_t i = 0; i < cap; i++)
        slots[i].uid = -1;
    for (size_t i = 0; i < h->cap; i++)
        if (h->slots[i].uid != -1)
            *probe(slots, cap, h->slots[i].uid) = h->slots[i];
    free(h->slots);
    h->slots = slots;
    h->cap = cap;
    return 0;
}

struct user_hist *history_get(struct history *h, int64_t uid)
{
    if (uid < 0)
        return NULL;
    /* Half full at most, so probing stays short and always ends. */
    if ((h->used + 1) * 2 > h->cap && grow(h) < 0)
        return NULL;
    struct user_hist *u = probe(h->slots, h->cap, uid);
    if (u->uid == -1) {
        memset(u, 0, sizeof(*u));
        u->uid = uid;
        h->used++;
    }
    return u;
}

void user_hist_add(struct user_hist *u, const struct hist_entry *e)
{
    u->e[u->head] = *e;
    u->head = (u->head + 1) % HIST_LEN;
    if (u->count < HIST_LEN)
        u->count++;
}

const struct hist_entry *user_hist_at(const struct user_hist *u, int k)
{
    return &u->e[(u->head - 1 - k + 2 * HIST_LEN) % HIST_LEN];
}

int user_hist_as_of(const struct user_hist *u, int64_t t,
                    const struct hist_entry **out, int max)
{
    int n = 0;
    for (int k = 0; u && k < u->count && n < max; k++) {
        const struct hist_entry *e = user_hist_at(u, k);
        if (e->end <= t)
            out[n++] = e;
    }
    return n;
}

struct pending_job *user_pending_find(struct user_hist *u, int64_t job_id)
{
    for (int i = u ? u->npending - 1 : -1; i >= 0; i--)
        if (u->pending[i].job_id == job_id)
            return &u->pending[i];
    return NULL;
}

void user_pending_remove(struct user_hist *u, struct pending_job *p)
{
    size_t i = (size_t)(p - u->pending);
    memmove(p, p + 1, (size_t)(u->npending - 1 - (int)i) * sizeof(*p));
    u->npending--;
}

int user_pending_add(struct user_hist *u, const struct pending_job *p)
{
    struct pending_job *old = user_pending_find(u, p->job_id);
    if (old)
        user_pending_remove(u, old);
    if (u->npending == PENDING_MAX)
        user_pending_remove(u, &u->pending[0]);
    if (u->npending == u->pending_cap) {
        int cap = u->pending_cap ? u->pending_cap * 2 : 8;
        struct pending_job *grown = realloc(u->pending, (size_t)cap * sizeof(*grown));
        if (!grown)
            return -1;
        u->pending = grown;
        u->pending_cap = cap;
    }
    u->pending[u->npending++] = *p;
    return 0;
}
