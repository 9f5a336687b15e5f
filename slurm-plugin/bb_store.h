/* bb_store: the plugin's saved table as a journal, so that saving a
 * record under slurmctld's job lock costs one write(2) of that record,
 * never an fsync or a rewrite of the whole table.
 *
 * Each change of a record is appended (bb_store_put, bb_store_drop) to
 * <StateSaveLocation>/adafs_state (format in bb_job.c): once write(2)
 * returns, the kernel holds it, and it survives slurmctld's death, kill -9
 * included. bb_store_sync makes the journal durable up to a change
 * (fdatasync, one for all who wait at once) and is called without any
 * lock held, before the plugin lets Slurm act on that change (a job
 * released, held or requeued): after a machine crash, the journal holds
 * every change Slurm acted upon. A change not yet synced when the machine
 * failed is one Slurm had not acted upon either (see doc/lifecycle.md,
 * Restarts); a frame cut short at the end of the file is left out when it
 * is read.
 *
 * The journal is compacted within bb_store_sync once it holds more than
 * twice the live records and 1 MiB: the live records, kept encoded in
 * memory, are written to a fresh file (0600, O_EXCL), fsync'd, with any
 * change since appended, renamed into place, and the directory fsync'd. So
 * the file stays in proportion to the live table, and a put never waits
 * for a compaction's writing or fsync.
 *
 * Thread-safe. No Slurm types. */
#ifndef ADAFS_BB_STORE_H
#define ADAFS_BB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bb_job.h"

struct bb_store;

/* Takes over path with the records of `jobs` (what was loaded from it, or
 * from an older format): writes them as a compacted journal (fsync'd,
 * renamed into place) and opens it for appending. NULL with err filled. */
struct bb_store *bb_store_open(const char *path, const struct bb_job *jobs, char *err,
                               size_t errlen);
/* Syncs and closes. */
void bb_store_close(struct bb_store *s);

/* The record of job (by its key) is now this: appended. Returns the
 * change's sequence number (> 0) for bb_store_sync, or -errno (the
 * change is kept in memory and written whole by the next compaction,
 * which the next sync does). */
int64_t bb_store_put(struct bb_store *s, const struct bb_job *job);
/* The record of job is gone. As bb_store_put. */
int64_t bb_store_drop(struct bb_store *s, const struct bb_job *job);

/* Returns once every change up to seq is on stable storage (0), or
 * -errno. Never call with a lock that slurmctld's threads may wait for. */
int bb_store_sync(struct bb_store *s, int64_t seq);
/* The journal's path, for messages. */
const char *bb_store_path(const struct bb_store *s);
/* The last change appended. */
int64_t bb_store_last(struct bb_store *s);

/* For tests and bbstat: the journal's size and the live records' size. */
struct bb_store_stats {
    uint64_t file_bytes, live_bytes, records, puts, syncs, fsyncs, compactions;
};
void bb_store_stats(struct bb_store *s, struct bb_store_stats *out);

#endif
