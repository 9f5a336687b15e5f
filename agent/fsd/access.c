/* access: who may use a server several users share (adafsd --owner UID
 * [--access-group GID], a persistent instance's server). The instance's
 * secret is not enough there, every user of the instance holds it: the
 * gate also learns each client's uid at connect (the kernel's SO_PEERCRED
 * on the node's Unix socket, a munge credential over TCP: identity.h) and
 * lets in only the owner and the members of the access group, as the NSS
 * of this node knows them. Without --owner nothing here runs. */
#include "server.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "identity.h"

int access_identify(struct server *srv, int fd, int local, const struct handshake *hs,
                    const char *cred, uid_t *uid, gid_t *gid, char *err, size_t errlen)
{
    if (!local)
        return identity_decode(hs, srv->munge_socket[0] ? srv->munge_socket : NULL, cred,
                               uid, gid, err, errlen);
    struct ucred peer;
    socklen_t len = sizeof(peer);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
        snprintf(err, errlen, "SO_PEERCRED: %s", strerror(errno));
        return -EACCES;
    }
    *uid = peer.uid;
    *gid = peer.gid;
    return 0;
}

/* Is uid a member of group: its primary group (gid, as munge or the
 * kernel gave it, or its passwd entry's) or a supplementary one (NSS). */
static int member(uid_t uid, gid_t gid, gid_t group, char *name, size_t namelen)
{
    snprintf(name, namelen, "?");
    if (gid == group)
        return 1;
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
        return 0;
    snprintf(name, namelen, "%s", pw.pw_name);
    if (pw.pw_gid == group)
        return 1;
    int n = 64;
    for (int attempt = 0; attempt < 4; attempt++) {
        gid_t *groups = malloc((size_t)n * sizeof(*groups));
        if (!groups)
            return 0;
        int want = n;
        int rc = getgrouplist(pw.pw_name, pw.pw_gid, groups, &want);
        int is = 0;
        for (int i = 0; rc >= 0 && i < want; i++)
            is |= groups[i] == group;
        free(groups);
        if (rc >= 0)
            return is;
        n = want > n ? want : n * 4;
    }
    return 0;
}

int access_admit(const struct server *srv, uid_t uid, gid_t gid, char *err, size_t errlen)
{
    if (uid == srv->owner)
        return 0;
    char name[64];
    if (srv->has_access_group && member(uid, gid, srv->access_group, name, sizeof(name)))
        return 0;
    if (!srv->has_access_group)
        member(uid, gid, (gid_t)-1, name, sizeof(name));
    if (srv->has_access_group)
        snprintf(err, errlen, "uid %u (%s) is neither this instance's owner (uid %u) nor a "
                 "member of its access group (gid %u)", (unsigned)uid, name,
                 (unsigned)srv->owner, (unsigned)srv->access_group);
    else
        snprintf(err, errlen, "uid %u (%s) is not this instance's owner (uid %u)",
                 (unsigned)uid, name, (unsigned)srv->owner);
    return -EACCES;
}
