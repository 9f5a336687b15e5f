/* qos: I/O quality of service toward the parallel file system, in the
 * interposer (doc/qos.md).
 *
 * The door: every call the interposer passes to the kernel goes through the
 * `real` table (real.h); calls into adafs go through route.h and never
 * reach the parallel file system. So with ADAFS_QOS_PATHS set, pl_qos_init
 * puts a classifying wrapper in front of the table's entries for the calls
 * QoS knows: a call on a path under one of the parallel file system's
 * mount points (absolute, or relative to the working directory or to a
 * descriptor opened there), or on a descriptor opened there, is charged to
 * its class (qos_limits.h) in the job's budget (qos_client.h) and so
 * delayed as the budget demands; every other call is passed on after a
 * prefix compare or one bit test. Without ADAFS_QOS_PATHS nothing is
 * wrapped: QoS off costs nothing.
 *
 * What cannot be seen: calls that bypass the C library (static binaries,
 * raw system calls), reads and writes of mmap'd files and of stdio streams
 * (glibc's internal calls; fopen itself is counted), and paths that reach
 * the parallel file system through a symbolic link from elsewhere. QoS by
 * LD_PRELOAD is cooperative traffic shaping, not a security boundary. */
#ifndef ADAFS_PRELOAD_QOS_H
#define ADAFS_PRELOAD_QOS_H

#include "real.h"

/* Reads the QoS environment and, if QoS is on, wraps entries of r (the
 * table just resolved). Logs once and leaves r alone on a bad setting. */
void pl_qos_init(struct real_functions *r);

#endif
