/* persist_admin: the part of adafs-persist(8), the administrators' command
 * that creates and destroys persistent instances, that needs no Slurm.
 *
 * Slurm 22.05 gives a burst buffer plugin no administrative request of its
 * own (scontrol show bbstat only reads; bb_p_run_script serves the lua
 * plugin's scripts), and the adafs plugin serves instances only through
 * jobs (DataWarp's zero-node jobs it does not take). So adafs-persist does
 * what a user would: it submits, as the instance's owner (root may submit
 * for another user), a one-node job whose --bb request is the
 * create_persistent or destroy_persistent line, and waits for it. The
 * plugin applies every rule it applies to a user's job (name free, pool
 * capacity, owner or group, destroy refused while jobs use it), and its
 * refusals reach the administrator as they would reach the user.
 *
 * This module turns the command's words into that request, refusing what
 * could become another line or word of it. */
#ifndef ADAFS_PERSIST_ADMIN_H
#define ADAFS_PERSIST_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

/* words[0..nwords): key=value words after "create" (name= and capacity=
 * required, nodes=, access= and fair_share= optional) or "destroy" (name= only). Writes
 * the --bb text ("create_persistent name=N capacity=S ...") into bb and the
 * instance's name into name. A key not allowed, one given twice, an empty
 * value, or a value with a blank, a quote, a '#', a '\' or a control
 * character is refused; the plugin checks the values themselves at submit,
 * naming the token. 0, or -1 with the reason in err. */
int persist_admin_request(bool create, size_t nwords, char *const *words, char *bb, size_t bblen,
                          char *name, size_t namelen, char *err, size_t errlen);

#endif
