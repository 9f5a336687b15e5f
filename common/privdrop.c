#include "privdrop.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int privdrop_lookup(const char *user, uid_t *uid, gid_t *gid, char *name, size_t namelen)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    char *end;
    unsigned long num = strtoul(user, &end, 10);
    int rc = *user && !*end ? getpwuid_r((uid_t)num, &pw, buf, sizeof(buf), &res)
                            : getpwnam_r(user, &pw, buf, sizeof(buf), &res);
    if (rc)
        return -rc;
    if (!res)
        return -ENOENT;
    *uid = pw.pw_uid;
    *gid = pw.pw_gid;
    if (name && namelen)
        snprintf(name, namelen, "%s", pw.pw_name);
    return 0;
}

static int fail(char *err, size_t errlen, const char *step, int e)
{
    if (errlen)
        snprintf(err, errlen, "dropping privileges: %s: %s", step, strerror(e));
    return -e;
}

int privdrop_to(uid_t uid, gid_t gid, const char *name, char *err, size_t errlen)
{
    if (uid == 0 || gid == 0)
        return fail(err, errlen, "refusing to become uid or gid 0", EPERM);
    /* Groups first: after setuid we could no longer change them. */
    if (name ? initgroups(name, gid) < 0 : setgroups(0, NULL) < 0)
        return fail(err, errlen, "setting supplementary groups", errno);
    if (setresgid(gid, gid, gid) < 0)
        return fail(err, errlen, "setresgid", errno);
    if (setresuid(uid, uid, uid) < 0)
        return fail(err, errlen, "setresuid", errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return fail(err, errlen, "PR_SET_NO_NEW_PRIVS", errno);

    uid_t r, e, s;
    gid_t rg, eg, sg;
    if (getresuid(&r, &e, &s) < 0 || r != uid || e != uid || s != uid)
        return fail(err, errlen, "uid not fully changed", EPERM);
    if (getresgid(&rg, &eg, &sg) < 0 || rg != gid || eg != gid || sg != gid)
        return fail(err, errlen, "gid not fully changed", EPERM);
    if (setuid(0) == 0 || seteuid(0) == 0)
        return fail(err, errlen, "root could be regained after setuid", EPERM);
    if (setgid(0) == 0 || setegid(0) == 0)
        return fail(err, errlen, "group root could be regained", EPERM);
    gid_t groups[256];
    int ng = getgroups(256, groups);
    for (int i = 0; i < ng; i++)
        if (groups[i] == 0)
            return fail(err, errlen, "still in group root (user is a member of group 0?)", EPERM);
    return 0;
}
