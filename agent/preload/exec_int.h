/* exec_int: what exec.c (running programs, adafs ones from a memfd) and
 * exec_handover.c (what crosses the exec: environment and descriptors)
 * share. */
#ifndef ADAFS_PRELOAD_EXEC_INT_H
#define ADAFS_PRELOAD_EXEC_INT_H

#include <stddef.h>

#define FDS_ENV "ADAFS_PRELOAD_FDS"
/* The adafs path of a program run from a memfd, for its own interposer. */
#define EXE_ENV "ADAFS_PRELOAD_EXE"
#define EXE_MEMFD "adafs-exec:"

/* The environment for the new program: envp plus what adafs needs. The
 * strings added are malloc'ed into *added (freed if the exec fails). */
char **exec_env(char *const envp[], char **added, int *nadded, size_t *count);
void free_env(char **env, char **added, int nadded);

#endif
