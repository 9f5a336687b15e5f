#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

int auth_read_token(const char *path, char *token, size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "token file %s: %s", path, strerror(errno));
        return -errno;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077)) {
        snprintf(err, errlen, "token file %s: mode %04o lets others read it; chmod 600 it",
                 path, (unsigned)(st.st_mode & 07777));
        close(fd);
        return -EPERM;
    }
    ssize_t n = read(fd, token, len - 1);
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "token file %s: %s", path, strerror(saved));
        return -saved;
    }
    token[n] = '\0';
    token[strcspn(token, "\r\n")] = '\0';
    if (strlen(token) < AUTH_TOKEN_MIN) {
        snprintf(err, errlen, "token file %s: token shorter than %d characters", path,
                 AUTH_TOKEN_MIN);
        return -EINVAL;
    }
    return 0;
}

int auth_token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

static void payload_for(char *buf, size_t len, const char *host, const char *body, size_t blen)
{
    snprintf(buf, len, "sysmap-upload v1 host=%s xxh64=%016" PRIx64 " len=%zu", host,
             (uint64_t)XXH64(body, blen, 0), blen);
}

static munge_ctx_t context(const char *socket, char *err, size_t errlen)
{
    munge_ctx_t ctx = munge_ctx_create();
    if (!ctx) {
        snprintf(err, errlen, "munge: cannot create a context");
        return NULL;
    }
    if (socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge: cannot use socket %s: %s", socket, munge_ctx_strerror(ctx));
        munge_ctx_destroy(ctx);
        return NULL;
    }
    return ctx;
}

int auth_munge_encode(const char *socket, const char *host, const char *body, size_t len,
                      char **cred, char *err, size_t errlen)
{
    char payload[256];
    payload_for(payload, sizeof(payload), host, body, len);
    munge_ctx_t ctx = context(socket, err, errlen);
    if (!ctx)
        return -EINVAL;
    munge_err_t e = munge_encode(cred, ctx, payload, (int)strlen(payload) + 1);
    if (e != EMUNGE_SUCCESS)
        snprintf(err, errlen, "munge: cannot encode a credential: %s", munge_ctx_strerror(ctx));
    munge_ctx_destroy(ctx);
    return e == EMUNGE_SUCCESS ? 0 : -EACCES;
}

int auth_munge_open(const char *socket, const char *cred, uid_t want_uid,
                    struct auth_munge_claim *claim, char *err, size_t errlen)
{
    memset(claim, 0, sizeof(*claim));
    munge_ctx_t ctx = context(socket, err, errlen);
    if (!ctx)
        return -EINVAL;
    void *payload = NULL;
    int plen = 0;
    uid_t uid;
    gid_t gid;
    munge_err_t e = munge_decode(cred, ctx, &payload, &plen, &uid, &gid);
    int rc = 0;
    if (e != EMUNGE_SUCCESS) {
        snprintf(err, errlen, "munge credential rejected: %s", munge_ctx_strerror(ctx));
        rc = -EACCES;
    } else if (uid != want_uid) {
        snprintf(err, errlen, "munge credential is for uid %u, uploads must come from uid %u",
                 (unsigned)uid, (unsigned)want_uid);
        rc = -EACCES;
    } else {
        /* Our encoder sends the terminating NUL, munge(1) does not. */
        size_t n = payload && plen > 0 ? (size_t)plen : 0;
        if (n && ((char *)payload)[n - 1] == '\0')
            n--;
        if (n < sizeof(claim->payload))
            memcpy(claim->payload, payload, n);
        unsigned long long len;
        char digest[17];
        if (sscanf(claim->payload, "sysmap-upload v1 host=%127s xxh64=%16s len=%llu", claim->host,
                   digest, &len) != 3) {
            snprintf(err, errlen, "munge credential payload is not a sysmap upload");
            rc = -EACCES;
        } else {
            claim->len = (long long)len;
        }
    }
    free(payload);
    munge_ctx_destroy(ctx);
    return rc;
}

int auth_munge_matches(const struct auth_munge_claim *claim, const char *body, size_t len,
                       char *err, size_t errlen)
{
    char expect[sizeof(claim->payload)];
    payload_for(expect, sizeof(expect), claim->host, body, len);
    if (strcmp(expect, claim->payload) != 0) {
        snprintf(err, errlen, "munge credential does not match the body"
                 " (digest or length differs)");
        return -EACCES;
    }
    return 0;
}
