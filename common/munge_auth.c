#include "munge_auth.h"

#include <errno.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a credential lives: a hello is sent the moment it is sealed, or
 * the fan-out is retired (agent_link.c); well under
 * SESSION_HELLO_MEMORY_S. */
#define MUNGE_TTL_S 120

/* The context's message, or the code's if it has none. */
static const char *why(munge_ctx_t ctx, munge_err_t e)
{
    const char *text = munge_ctx_strerror(ctx);
    return text ? text : munge_strerror(e);
}

static munge_ctx_t context(const struct session_auth *a, char *err, size_t errlen)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx) {
        snprintf(err, errlen, "munge: out of memory");
        return NULL;
    }
    munge_err_t e = a->data ? munge_ctx_set(ctx, MUNGE_OPT_SOCKET, (const char *)a->data)
                            : EMUNGE_SUCCESS;
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge: socket %s: %s", (const char *)a->data, why(ctx, e));
        munge_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

static int seal(const struct session_auth *a, const void *payload, size_t len, uid_t reader,
                char **cred, char *err, size_t errlen)
{
    *cred = NULL;
    munge_ctx_t ctx = context(a, err, errlen);
    if (!ctx)
        return -ENOMEM;
    munge_err_t e = munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, reader);
    if (e == EMUNGE_SUCCESS)
        e = munge_ctx_set(ctx, MUNGE_OPT_TTL, MUNGE_TTL_S);
    if (e == EMUNGE_SUCCESS)
        e = munge_encode(cred, ctx, payload, (int)len);
    if (e != EMUNGE_SUCCESS)
        snprintf(err, errlen, "munge: %s", why(ctx, e));
    munge_ctx_destroy(ctx);
    return e == EMUNGE_SUCCESS ? 0 : -EACCES;
}

static int open_cred(const struct session_auth *a, const char *cred, void **payload, size_t *len,
                     uid_t *uid, char *err, size_t errlen)
{
    *payload = NULL;
    *len = 0;
    munge_ctx_t ctx = context(a, err, errlen);
    if (!ctx)
        return -ENOMEM;
    int n = 0;
    gid_t gid;
    munge_err_t e = munge_decode(cred, ctx, payload, &n, uid, &gid);
    if (e == EMUNGE_CRED_REPLAYED && *payload) {
        /* Valid, and munge still hands over its payload and uid. */
        snprintf(err, errlen, "munge credential replayed");
        *len = (size_t)n;
        munge_ctx_destroy(ctx);
        return -EALREADY;
    }
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge credential refused: %s", why(ctx, e));
        free(*payload);
        *payload = NULL;
    } else {
        *len = (size_t)n;
    }
    munge_ctx_destroy(ctx);
    return e == EMUNGE_SUCCESS ? 0 : -EACCES;
}

void munge_auth_init(struct session_auth *a, const char *socket)
{
    *a = (struct session_auth){ .seal = seal, .open = open_cred, .data = socket };
}
