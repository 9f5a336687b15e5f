#include "identity.h"

#include <errno.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *why(munge_ctx_t ctx, munge_err_t e)
{
    const char *text = munge_ctx_strerror(ctx);
    return text ? text : munge_strerror(e);
}

static munge_ctx_t context(const char *socket, char *err, size_t errlen)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx) {
        snprintf(err, errlen, "munge: out of memory");
        return NULL;
    }
    munge_err_t e = socket && *socket ? munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket)
                                      : EMUNGE_SUCCESS;
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge: socket %s: %s", socket, why(ctx, e));
        munge_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

int identity_encode(const struct handshake *hs, const char *socket, char **cred,
                    char *err, size_t errlen)
{
    uint8_t payload[HANDSHAKE_IDENTITY_PAYLOAD_SIZE];
    *cred = NULL;
    handshake_identity_payload(hs, payload);
    munge_ctx_t ctx = context(socket, err, errlen);
    if (!ctx)
        return -EACCES;
    munge_err_t e = munge_encode(cred, ctx, payload, (int)sizeof(payload));
    if (e != EMUNGE_SUCCESS)
        snprintf(err, errlen, "munge gave no credential of our uid: %s", why(ctx, e));
    munge_ctx_destroy(ctx);
    return e == EMUNGE_SUCCESS ? 0 : -EACCES;
}

int identity_decode(const struct handshake *hs, const char *socket, const char *cred,
                    uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
    munge_ctx_t ctx = context(socket, err, errlen);
    if (!ctx)
        return -EACCES;
    void *got = NULL;
    int len = 0;
    munge_err_t e = munge_decode(cred, ctx, &got, &len, uid, gid);
    int rc = 0;
    if (e == EMUNGE_CRED_EXPIRED || e == EMUNGE_CRED_REWOUND || e == EMUNGE_CRED_REPLAYED) {
        /* munge still names who made it */
        snprintf(err, errlen, "munge credential of uid %u refused: %s", (unsigned)*uid,
                 why(ctx, e));
        rc = -EACCES;
    } else if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge credential refused: %s", why(ctx, e));
        rc = -EACCES;
    } else {
        uint8_t want[HANDSHAKE_IDENTITY_PAYLOAD_SIZE];
        handshake_identity_payload(hs, want);
        size_t label = sizeof(HANDSHAKE_IDENTITY_LABEL) - 1;
        if ((size_t)len != sizeof(want) || memcmp(got, want, label) != 0) {
            snprintf(err, errlen, "munge credential of uid %u made for another purpose "
                     "(not an adafs identity)", (unsigned)*uid);
            rc = -EACCES;
        } else if (memcmp(got, want, sizeof(want)) != 0) {
            snprintf(err, errlen, "munge credential of uid %u made for another connection "
                     "or server (its nonces are not this handshake's)", (unsigned)*uid);
            rc = -EACCES;
        }
    }
    free(got);
    munge_ctx_destroy(ctx);
    return rc;
}
