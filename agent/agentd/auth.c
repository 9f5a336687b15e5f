#include "auth.h"

#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>

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
