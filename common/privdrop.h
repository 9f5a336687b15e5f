/* privdrop: becoming a job's user for good before touching any user path.
 *
 * The node agent runs as root and starts a job's servers and stagers; each
 * becomes the job user (supplementary groups, gid, uid) before it opens
 * anything, so the kernel refuses what the user may not read or write.
 * adafs-stage --user does the same. The drop is checked: afterwards no way
 * back to root may work. */
#ifndef ADAFS_PRIVDROP_H
#define ADAFS_PRIVDROP_H

#include "linknames.h"

#include <stddef.h>
#include <sys/types.h>

/* Looks the user up by name or numeric uid; fills uid, gid (primary group)
 * and the canonical name. Returns 0 or -errno (-ENOENT: no such user). */
int privdrop_lookup(const char *user, uid_t *uid, gid_t *gid, char *name, size_t namelen);

/* Sets the supplementary groups of `name` (none if NULL), then gid, then
 * uid (real, effective and saved), sets no_new_privs, and verifies that
 * setuid(0)/setgid(0) now fail. Returns 0, or -errno with a message in err
 * naming the step that failed. Dropping to uid 0 is refused (-EPERM). */
int privdrop_to(uid_t uid, gid_t gid, const char *name, char *err, size_t errlen);

#endif
