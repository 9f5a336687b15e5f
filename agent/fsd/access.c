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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "identity.h"
#include "net.h"

/* Authenticated connections per uid (access_hold): few distinct users
 * share a server, so a short array searched in full does. */
struct user_clients {
    uid_t uid;
    unsigned count;
    uint64_t buffered;     /* access_buffer_take's, not yet given back */
};
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t buffers_freed = PTHREAD_COND_INITIALIZER;
static struct user_clients *users;
static size_t nusers, users_cap;

int access_hold(struct server *srv, uid_t uid, unsigned *held)
{
    int rc = 0;
    pthread_mutex_lock(&users_lock);
    size_t i = 0;
    while (i < nusers && users[i].uid != uid)
        i++;
    if (i == nusers) {
        if (nusers == users_cap) {
            size_t cap = users_cap ? 2 * users_cap : 16;
            struct user_clients *grown = realloc(users, cap * sizeof(*users));
            if (!grown) {
                pthread_mutex_unlock(&users_lock);
                *held = 0;
                return -ENOMEM;
            }
            users = grown;
            users_cap = cap;
        }
        users[nusers++] = (struct user_clients){ .uid = uid };
    }
    *held = users[i].count;
    if (users[i].count >= srv->max_clients_per_user)
        rc = -EUSERS;
    else
        users[i].count++;
    pthread_mutex_unlock(&users_lock);
    return rc;
}

/* uid's entry (the caller holds users_lock and a connection of uid, so
 * there is one). */
static struct user_clients *user_of(uid_t uid)
{
    for (size_t i = 0; i < nusers; i++)
        if (users[i].uid == uid)
            return &users[i];
    return NULL;
}

int access_buffer_take(struct server *srv, uid_t uid, uint64_t bytes, int64_t deadline_ms)
{
    int rc = 0;
    pthread_mutex_lock(&users_lock);
    struct user_clients *u;
    while ((u = user_of(uid)) && u->buffered + bytes > srv->max_buffered_per_user &&
           u->buffered > 0) {
        int64_t left = deadline_ms - net_now_ms();
        if (left <= 0) {
            rc = -ENOBUFS;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&buffers_freed, &users_lock, &ts);
    }
    if (rc == 0 && u)
        u->buffered += bytes;
    pthread_mutex_unlock(&users_lock);
    return rc;
}

void access_buffer_give(struct server *srv, uid_t uid, uint64_t bytes)
{
    (void)srv;
    if (!bytes)
        return;
    pthread_mutex_lock(&users_lock);
    struct user_clients *u = user_of(uid);
    if (u)
        u->buffered -= bytes < u->buffered ? bytes : u->buffered;
    pthread_cond_broadcast(&buffers_freed);
    pthread_mutex_unlock(&users_lock);
}

void access_release(struct server *srv, uid_t uid)
{
    (void)srv;
    pthread_mutex_lock(&users_lock);
    for (size_t i = 0; i < nusers; i++) {
        if (users[i].uid != uid)
            continue;
        /* A user with none left gives its place up: the array stays as
         * short as the users connected now. */
        if (--users[i].count == 0)
            users[i] = users[--nusers];
        break;
    }
    pthread_mutex_unlock(&users_lock);
}

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

/* Fills c with uid, gid and the uid's groups: gid (as munge or the kernel
 * gave it), its passwd entry's primary group, its supplementary groups
 * (this node's NSS), as many as fit. name: the user's, "?" if unknown. */
static void learn_groups(struct caller *c, uid_t uid, gid_t gid, char *name, size_t namelen)
{
    *c = (struct caller){ .uid = uid, .gid = gid, .ngroups = 1, .groups = { gid } };
    snprintf(name, namelen, "?");
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || !found)
        return;
    snprintf(name, namelen, "%s", pw.pw_name);
    gid_t groups[256];
    int n = 256;
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
        n = 256;   /* more than that: the first 256 */
    for (int i = 0; i < n && c->ngroups < ACCESS_GROUPS_MAX; i++)
        if (groups[i] != gid)
            c->groups[c->ngroups++] = groups[i];
}

int access_admit(const struct server *srv, uid_t uid, gid_t gid, struct caller *c,
                 char *err, size_t errlen)
{
    char name[64];
    learn_groups(c, uid, gid, name, sizeof(name));
    if (uid == srv->owner || (srv->has_access_group && access_in_groups(c, srv->access_group)))
        return 0;
    if (srv->has_access_group)
        snprintf(err, errlen, "uid %u (%s) is neither this instance's owner (uid %u) nor a "
                 "member of its access group (gid %u)", (unsigned)uid, name,
                 (unsigned)srv->owner, (unsigned)srv->access_group);
    else
        snprintf(err, errlen, "uid %u (%s) is not this instance's owner (uid %u)",
                 (unsigned)uid, name, (unsigned)srv->owner);
    return -EACCES;
}
