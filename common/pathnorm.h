/* pathnorm: lexical normalisation of absolute paths, the one both path
 * checks of the interposer use: its resolution of paths into the adafs
 * mount (agent/preload/pathres.c) and the QoS check of paths on the
 * parallel file system (qos_paths.h).
 *
 * "//", "/./" and "/../" are taken away as the kernel would for a path
 * without symbolic links ("/.." is "/"); no link is followed and nothing
 * is allocated: it runs inside intercepted calls. */
#ifndef ADAFS_PATHNORM_H
#define ADAFS_PATHNORM_H

#include "linknames.h"

#include <stdbool.h>
#include <stddef.h>

/* Normalises absolute path in into out ("/" when nothing is left): the
 * length, or -ENAMETOOLONG when it does not fit in outlen. */
int path_normalise(const char *in, char *out, size_t outlen);

/* The same, and *through tells whether the walk reached prefix (itself
 * normalised, length prefix_len) or went below it on the way, as
 * "/mount/../x" does: such a path went through the mount, whatever it
 * ends as. */
int path_normalise_through(const char *in, char *out, size_t outlen, const char *prefix,
                           size_t prefix_len, bool *through);

#endif
