/* privdrop: after the drop the process is the user for good: ids, groups,
 * no way back to root, and the kernel refuses root's files. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "privdrop.h"
#include "tap.h"

/* Runs the checks in a child (a drop cannot be undone) and returns a bit
 * mask of the checks that passed. */
static int child_checks(uid_t uid, gid_t gid, const char *name, char *err, size_t errlen)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        int mask = 0;
        char msg[256] = "";
        if (privdrop_to(uid, gid, name, msg, sizeof(msg)) == 0)
            mask |= 1;
        if (getuid() == uid && geteuid() == uid && getgid() == gid && getegid() == gid)
            mask |= 2;
        if (setuid(0) < 0 && errno == EPERM && seteuid(0) < 0)
            mask |= 4;
        if (getgroups(0, NULL) <= 1)
            mask |= 8;
        int fd = open("/etc/shadow", O_RDONLY);
        if (fd < 0 && errno == EACCES)
            mask |= 16;
        (void)!write(fds[1], &mask, sizeof(mask));
        (void)!write(fds[1], msg, sizeof(msg));
        _exit(0);
    }
    close(fds[1]);
    int mask = -1;
    if (read(fds[0], &mask, sizeof(mask)) != sizeof(mask))
        mask = -1;
    if (read(fds[0], err, errlen) < 0)
        err[0] = '\0';
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return mask;
}

int main(void)
{
    uid_t uid;
    gid_t gid;
    char name[64], err[256];
    tap_is_int(privdrop_lookup("no-such-user-xyz", &uid, &gid, name, sizeof(name)), -ENOENT,
               "unknown user: -ENOENT");
    tap_ok(privdrop_lookup("0", &uid, &gid, name, sizeof(name)) == 0 && uid == 0 &&
           !strcmp(name, "root"), "numeric uid 0 is root");
    if (getuid() != 0) {
        printf("# not root: the drop itself is tested only as root\n");
        return tap_done();
    }
    tap_is_int(privdrop_to(0, 0, "root", err, sizeof(err)), -EPERM, "dropping to root refused");
    tap_is_str(err, "dropping privileges: refusing to become uid or gid 0: "
               "Operation not permitted", "... with the reason");
    if (privdrop_lookup("nobody", &uid, &gid, name, sizeof(name)) < 0) {
        printf("# no user nobody\n");
        return tap_done();
    }
    int mask = child_checks(uid, gid, name, err, sizeof(err));
    tap_ok(mask >= 0 && (mask & 1), "drop to %s succeeds (%s)", name, err);
    tap_ok(mask >= 0 && (mask & 2), "real and effective uid and gid are the user's");
    tap_ok(mask >= 0 && (mask & 4), "setuid(0) and seteuid(0) fail afterwards");
    tap_ok(mask >= 0 && (mask & 8), "only the user's groups remain");
    tap_ok(mask >= 0 && (mask & 16), "root-only /etc/shadow cannot be opened");
    return tap_done();
}
