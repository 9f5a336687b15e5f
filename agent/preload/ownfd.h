/* ownfd: keeps libadafs's own descriptors (its server connections) out of
 * the program's way.
 *
 * Programs, and shells above all, use fixed descriptor numbers: `exec 3>f`,
 * `cat <&7`, dup2(fd, 5), or close every descriptor from 3 up before they
 * go on. If a library socket sat at such a number it would be replaced or
 * closed under the library, which would then go on sending to (and later
 * close) whatever the program put there. So every socket or pipe libadafs
 * creates is moved to a high number (at or above the "own base", 1024
 * below the descriptor limit, at most 64 Ki), and calls that would close
 * or replace one of those (close, dup2, dup3, close_range, closefrom) leave
 * it alone. */
#ifndef ADAFS_PRELOAD_OWNFD_H
#define ADAFS_PRELOAD_OWNFD_H

#include <stdbool.h>

/* Also the descriptors libadafs receives over its sockets (SCM_RIGHTS:
 * the read-only data files of short-circuit reads, lib/direct.c) are moved
 * there; those are regular files, which the program's own could be, so
 * they count as the library's only from their arrival until the library
 * closes them. */

/* Computes the own base from RLIMIT_NOFILE. */
void ownfd_init(void);

/* Whether fd is, by every sign we have, one of libadafs's descriptors: a
 * number handed to the library (at or above the own base) and not closed
 * by it since, still holding the very socket, pipe or received file it
 * was handed (same device and inode), and not an adafs file of the
 * program. */
bool ownfd_is_library(int fd);

/* The lowest number close_range/closefrom may skip from (INT_MAX if the
 * library has none yet), and the number just past the highest. */
int ownfd_base(void);
/* libadafs closes fd through close() (a data file it received): the
 * number is no longer the library's, whatever is put there next. */
void ownfd_closed(int fd);
int ownfd_top(void);

#endif
