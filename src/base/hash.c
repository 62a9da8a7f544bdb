/*
 * base/hash.c: xxHash wrappers (see hash.h).
 */
#include "base/compat.h"

#include "base/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

uint64_t fatia_hash64(const void *data, size_t n)
{
    return XXH3_64bits(data, n);
}

uint64_t fatia_hash_str(const char *s)
{
    return XXH3_64bits(s, strlen(s));
}

uint64_t fatia_hash_chain64(const void *data, size_t n, uint64_t seed)
{
    return XXH64(data, n, seed);
}
