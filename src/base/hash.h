/*
 * base/hash.h: hashing (xxHash, from the system libxxhash).
 *
 * fatia_hash64 is for hash tables (XXH3, fast, not stable across xxhash major versions).
 * fatia_hash_chain64 is XXH64 with a seed, stable by specification: the gateway's prefix-block
 * chain (block i is hashed with the hash of block i-1 as its seed) and anything persisted use it.
 */
#ifndef FATIA_BASE_HASH_H
#define FATIA_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t fatia_hash64(const void *data, size_t n);
uint64_t fatia_hash_str(const char *s);
uint64_t fatia_hash_chain64(const void *data, size_t n, uint64_t seed);

#endif
