/* hash: where things live in a distributed per-job file system.
 *
 * Every client computes placement itself (no central server), so these
 * functions must give the same answer in every process of every node: they
 * are built on XXH3_64bits, which is defined byte for byte and does not
 * depend on the machine. */
#ifndef ADAFS_HASH_H
#define ADAFS_HASH_H

#include "linknames.h"

#include <stddef.h>
#include <stdint.h>

/* 64-bit hash of a byte string. */
uint64_t hash_bytes(const void *data, size_t len);

/* The server (0..nservers-1) holding the metadata of an absolute path. */
unsigned hash_place_path(const char *path, unsigned nservers);

/* The server holding chunk `index` of the file whose data key is `key`. */
unsigned hash_place_chunk(uint64_t key, uint64_t index, unsigned nservers);

#endif
