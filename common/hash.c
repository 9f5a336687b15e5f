#include "hash.h"

#include <string.h>
#include <xxhash.h>

uint64_t hash_bytes(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

unsigned hash_place_path(const char *path, unsigned nservers)
{
    return (unsigned)(hash_bytes(path, strlen(path)) % nservers);
}

unsigned hash_place_chunk(uint64_t key, uint64_t index, unsigned nservers)
{
    /* Serialise little-endian so the answer does not depend on the host. */
    unsigned char buf[16];
    for (int i = 0; i < 8; i++) {
        buf[i] = (unsigned char)(key >> (8 * i));
        buf[8 + i] = (unsigned char)(index >> (8 * i));
    }
    return (unsigned)(XXH3_64bits(buf, sizeof(buf)) % nservers);
}
