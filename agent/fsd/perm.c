/* perm: the checks a server several users share (adafsd --owner) makes of
 * each request, from who the caller proved to be at connect (access.c),
 * never from what the request says: the owner of what it creates, its
 * mode bits, who may change a record. A connection without a caller (one
 * job's server) passes them all: its secret is its key. */
#include "server.h"

#include <errno.h>
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

int access_owns(const struct reply *rep, const struct fs_record *rec)
{
    const struct caller *c = rep->caller;
    return !c || c->uid == 0 || c->uid == rec->uid ? 0 : -EPERM;
}
