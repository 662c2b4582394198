/*
 * keyhash.h - the routing hash of a key: XXH3-64 with seed 0 (docs/design.md section 4).
 * The ring point of a key is the upper 32 bits of its keyhash.
 */
#ifndef SKL_KEYHASH_H
#define SKL_KEYHASH_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

static inline uint64_t keyhash(const void *key, size_t len)
{
	return XXH3_64bits(key, len);
}

static inline uint32_t keyhash_point(uint64_t hash)
{
	return (uint32_t)(hash >> 32);
}

#endif
