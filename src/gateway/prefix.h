/*
 * gateway/prefix.h: prefix-block hashing and the approximate prefix-cache index (GIE's
 * approximate prefix scorer, reference/llm-routing.md §1.5).
 *
 * Hashing: the prompt is cut into blocks of FATIA_PREFIX_BLOCK_CHARS characters (64, about 16
 * tokens at GIE's 4 characters per token, one vLLM KV block); only full blocks are hashed. The
 * chain starts from a seed hash of the model name and the optional cache_salt; block i is XXH64 of
 * its bytes seeded with the hash of block i-1, so a hit on block i stands for the whole prefix up
 * to it. At most max_blocks blocks are hashed (the cost of a 100k-token prompt is capped).
 *
 * Index: block hash -> the endpoints that were sent a prompt holding it, with one LRU per endpoint
 * whose capacity is that endpoint's KV cache in blocks (vllm:cache_config_info num_gpu_blocks, or
 * a default). Inserting past capacity evicts the endpoint's least recently used block. Like GIE's,
 * the index reflects routing history, not the engines' real caches.
 *
 * Endpoints are small integers [0, FATIA_PREFIX_MAX_ENDPOINTS) assigned by the caller. Pure data
 * structure: no clock, no I/O, no locks (one loop thread owns it).
 */
#ifndef FATIA_GATEWAY_PREFIX_H
#define FATIA_GATEWAY_PREFIX_H

#include "base/compat.h"

#include "base/str.h"

#define FATIA_PREFIX_BLOCK_CHARS    64
#define FATIA_PREFIX_DEFAULT_BLOCKS 2048  /* llm-d-router's maxPrefixBlocksToMatch */
#define FATIA_PREFIX_DEFAULT_LRU    31250 /* GIE's lruCapacityPerServer */
#define FATIA_PREFIX_MAX_ENDPOINTS  4096

/* The chain's seed: XXH64(model), then XXH64(cache_salt) seeded with it when a salt is given. */
uint64_t fatia_prefix_seed(struct fatia_str model, struct fatia_str salt);

/* Hashes the full blocks of text[0..n) (block characters each; 0 = FATIA_PREFIX_BLOCK_CHARS), at
 * most max of them, into out. Returns the number written. */
size_t fatia_prefix_hash(uint64_t seed, const char *text, size_t n, size_t block, uint64_t *out,
                         size_t max);

struct fatia_prefix_index;

int fatia_prefix_index_new(struct fatia_prefix_index **ret);
void fatia_prefix_index_free(struct fatia_prefix_index *x);

/* Sets an endpoint's capacity in blocks (0 = FATIA_PREFIX_DEFAULT_LRU), evicting its least
 * recently used blocks if it now holds more. */
void fatia_prefix_index_set_capacity(struct fatia_prefix_index *x, uint32_t ep, size_t blocks);

/* Records that endpoint ep was sent the prompt of these hashes (most recent last in LRU order is
 * the prompt's first block, so a prompt's tail is evicted before its head). 0 or -ENOMEM (the
 * index then holds a prefix of the hashes: still consistent). */
int fatia_prefix_index_insert(struct fatia_prefix_index *x, uint32_t ep, const uint64_t *h,
                              size_t n);

/* For each endpoint e < n_ep: ret_match[e] = how many leading blocks of h it holds (the run from
 * block 0). Stops at the first block no endpoint holds. */
void fatia_prefix_index_match(const struct fatia_prefix_index *x, const uint64_t *h, size_t n,
                              uint32_t *ret_match, size_t n_ep);

/* Forgets everything endpoint ep holds (it left the pool). */
void fatia_prefix_index_remove_endpoint(struct fatia_prefix_index *x, uint32_t ep);

/* Entries (endpoint, block) held in all. */
size_t fatia_prefix_index_size(const struct fatia_prefix_index *x);
/* Blocks endpoint ep holds. */
size_t fatia_prefix_index_endpoint_size(const struct fatia_prefix_index *x, uint32_t ep);

#endif
