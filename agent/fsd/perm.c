/* perm: the checks a server several users share (adafsd --owner) makes of
 * each request, from who the caller proved to be at connect (access.c),
 * never from what the request says: the owner of what it creates, its
 * mode bits, who may change a record. A connection without a caller (one
 * job's server) passes them all: its secret is its key. */
#include "server.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"

int access_in_groups(const struct caller *c, gid_t group)
{
    for (unsigned i = 0; i < c->ngroups; i++)
        if (c->groups[i] == group)
            return 1;
    return 0;
}

void access_stamp(const struct server *srv, const struct reply *rep, struct fs_record *rec)
{
    rec->uid = rep->caller ? rep->caller->uid : srv->self_uid;
    rec->gid = rep->caller ? rep->caller->gid : srv->self_gid;
}

int access_may(const struct reply *rep, const struct fs_record *rec, unsigned want)
{
    const struct caller *c = rep->caller;
    if (!c || c->uid == 0)
        return 0;
    unsigned bits = c->uid == rec->uid ? rec->mode >> 6
                    : access_in_groups(c, rec->gid) ? rec->mode >> 3 : rec->mode;
    return (bits & want & 7) == (want & 7) ? 0 : -EACCES;
}

uint64_t access_key(const struct server *srv, const struct reply *rep,
                    const struct fs_record *rec)
{
    if (!rep->caller || access_may(rep, rec, R_OK) == 0 || access_may(rep, rec, W_OK) == 0)
        return rec->key;
    /* A keyed PRF (SipHash), not a mix an attacker could invert from its
     * own files' keys made unreadable to itself. */
    uint8_t in[8], out[crypto_shorthash_BYTES];
    for (int i = 0; i < 8; i++)
        in[i] = (uint8_t)(rec->key >> (8 * i));
    crypto_shorthash(out, in, sizeof(in), srv->key_mask);
    uint64_t masked = 0;
    for (int i = 0; i < 8; i++)
        masked |= (uint64_t)out[i] << (8 * i);
    return masked;
}

void access_answer(const struct server *srv, const struct reply *rep, struct fs_record *rec)
{
    rec->key = access_key(srv, rep, rec);
}

int access_owns(const struct reply *rep, const struct fs_record *rec)
{
    const struct caller *c = rep->caller;
    return !c || c->uid == 0 || c->uid == rec->uid ? 0 : -EPERM;
}

/* ---- Capabilities (common/fs_cap.h) ---- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void cap_mac(const struct server *srv, uint32_t rights, uint64_t expires_ms, uint32_t uid,
                    uint64_t key, const char *dir, uint64_t mac[2])
{
    static const char label[] = "adafs cap v1";
    uint8_t in[sizeof(label) - 1 + 4 + 8 + 4 + 8], out[crypto_auth_hmacsha256_BYTES];
    memcpy(in, label, sizeof(label) - 1);
    uint8_t *p = in + sizeof(label) - 1;
    put_le(p, rights, 4);
    put_le(p + 4, expires_ms, 8);
    put_le(p + 12, uid, 4);
    put_le(p + 16, key, 8);
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, srv->cap_key, sizeof(srv->cap_key));
    crypto_auth_hmacsha256_update(&st, in, sizeof(in));
    if (dir)   /* a directory's: rights has FS_CAP_DIR, key is 0 */
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)dir, strlen(dir));
    crypto_auth_hmacsha256_final(&st, out);
    for (int i = 0; i < 2; i++) {   /* little-endian, as on the wire */
        mac[i] = 0;
        for (int j = 0; j < 8; j++)
            mac[i] |= (uint64_t)out[8 * i + j] << (8 * j);
    }
}

static void cap_make(const struct server *srv, const struct reply *rep, uint64_t key,
                     const char *dir, uint32_t rights, struct fs_cap *cap)
{
    *cap = (struct fs_cap){ 0 };
    if (!srv->caps || !rep->caller || !(rights & ~FS_CAP_DIR))
        return;
    cap->rights = rights;
    cap->expires_ms = (uint64_t)(wall_ms() + FS_CAP_LIFETIME_MS);
    cap_mac(srv, rights, cap->expires_ms, rep->caller->uid, key, dir, cap->mac);
}

void access_cap_for(const struct server *srv, const struct reply *rep, const char *path,
                    const struct fs_record *rec, struct fs_cap *cap)
{
    uint32_t rights = 0;
    int dir = S_ISDIR(rec->mode) && path;
    if (srv->caps && rep->caller && S_ISREG(rec->mode))
        rights = (access_may(rep, rec, R_OK) == 0 ? FS_CAP_READ : 0) |
                 (access_may(rep, rec, W_OK) == 0 ? FS_CAP_WRITE : 0) |
                 (access_owns(rep, rec) == 0 ? FS_CAP_OWN : 0);
    else if (srv->caps && rep->caller && dir)   /* listing; making entries in it */
        rights = FS_CAP_DIR | (access_may(rep, rec, R_OK) == 0 ? FS_CAP_READ : 0) |
                 (access_may(rep, rec, W_OK | X_OK) == 0 ? FS_CAP_WRITE : 0);
    cap_make(srv, rep, dir ? 0 : rec->key, dir ? path : NULL, rights, cap);
}

void access_cap_drop(const struct server *srv, const struct reply *rep, uint64_t key,
                     struct fs_cap *cap)
{
    cap_make(srv, rep, key, NULL, key ? FS_CAP_DROP : 0, cap);
}

static int cap_verify(const struct server *srv, const struct reply *rep, uint64_t key,
                      const char *dir, const struct fs_cap *cap, unsigned want)
{
    if (!cap->rights || cap->expires_ms < (uint64_t)wall_ms())
        return -EKEYEXPIRED;
    uint64_t mac[2];
    cap_mac(srv, cap->rights, cap->expires_ms, rep->caller->uid, key, dir, mac);
    /* Both halves compared without an early exit. */
    if (sodium_memcmp(mac, cap->mac, sizeof(mac)) != 0 || !(cap->rights & want) ||
        !(cap->rights & FS_CAP_DIR) != !dir)
        return -EACCES;
    return 0;
}

int access_cap_check(const struct server *srv, const struct reply *rep, uint64_t key,
                     const struct fs_cap *cap, unsigned want)
{
    if (!srv->caps || !rep->caller)
        return 0;
    return cap_verify(srv, rep, key, NULL, cap, want);
}

int access_dir_check(const struct server *srv, const struct reply *rep, const char *dir,
                     size_t dirlen, const struct fs_cap *cap, unsigned want)
{
    if (!srv->caps || !rep->caller || rep->caller->uid == 0 || dirlen <= 1)
        return 0;   /* the root: open to every user the server admits */
    char d[FS_PATH_MAX];
    if (dirlen >= sizeof(d))
        return -EINVAL;
    memcpy(d, dir, dirlen);
    d[dirlen] = '\0';
    return cap_verify(srv, rep, 0, d, cap, want);
}

int access_parent_check(const struct server *srv, const struct reply *rep, const char *path,
                        const struct fs_cap *cap)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? access_dir_check(srv, rep, path, (size_t)(slash - path), cap, FS_CAP_WRITE) : 0;
}

uint64_t access_new_key(const struct server *srv, const struct reply *rep, uint64_t asked)
{
    if (!srv->caps || !rep->caller)
        return asked;
    unsigned where = hash_place_chunk(asked, 0, srv->nservers);
    uint64_t key;
    do
        randombytes_buf(&key, sizeof(key));
    while (key == 0 || hash_place_chunk(key, 0, srv->nservers) != where);
    return key;
}
