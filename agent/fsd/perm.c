/* perm: the checks a server several users share (adafsd --owner) makes of
 * each request, from who the caller proved to be at connect (access.c),
 * never from what the request says: the owner of what it creates, its
 * mode bits, who may change a record. A connection without a caller (one
 * job's server) passes them all: its secret is its key. */
#include "server.h"

#include <errno.h>
#include <sodium.h>
#include <unistd.h>

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
