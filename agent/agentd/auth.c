#include "auth.h"

#include <errno.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

static munge_ctx_t ctx;
static uid_t trusted;

int auth_init(const char *munge_socket, uid_t trusted_uid)
{
    trusted = trusted_uid;
    ctx = munge_ctx_create();
    if (!ctx)
        return -ENOMEM;
    if (munge_socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket) != EMUNGE_SUCCESS)
        return -EINVAL;
    return 0;
}

int auth_unseal(const char *cred, void **body, size_t *len, char *err, size_t errlen)
{
    uid_t uid;
    gid_t gid;
    int n = 0;
    *body = NULL;
    munge_err_t e = munge_decode(cred, ctx, body, &n, &uid, &gid);
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge credential refused: %s", munge_ctx_strerror(ctx));
        free(*body);
        *body = NULL;
        return -EACCES;
    }
    if (uid != trusted && uid != 0) {
        snprintf(err, errlen, "uid %u may not use the agent (only uid %u, slurmctld's user)",
                 (unsigned)uid, (unsigned)trusted);
        free(*body);
        *body = NULL;
        return -EACCES;
    }
    *len = (size_t)n;
    return 0;
}

int auth_check_peer(int fd, char *err, size_t errlen)
{
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
        snprintf(err, errlen, "SO_PEERCRED: cannot identify the local peer");
        return -EACCES;
    }
    if (cred.uid != 0) {
        snprintf(err, errlen, "local uid %u may not use the agent (only root)", (unsigned)cred.uid);
        return -EACCES;
    }
    return 0;
}
