/* jobnodes: the node counts of the jobs this agent deployed, in a file
 * every server of this node is given (adafsd --fair-jobs), so size-fair
 * and user-then-size weigh a job by what the agent (root) knows of it,
 * never by what a client says. One "JOB NODES" line per job, rewritten
 * whole (a new file renamed over it) whenever a job comes or goes; the
 * file is root's, mode 0644, in a directory only root may change. */
#ifndef ADAFS_JOBNODES_H
#define ADAFS_JOBNODES_H

#include <stdint.h>

/* path: the file (NULL or "": off). */
void jobnodes_init(const char *path);
const char *jobnodes_path(void);   /* NULL when off */
void jobnodes_set(uint32_t job, uint32_t nodes);
void jobnodes_remove(uint32_t job);

#endif
