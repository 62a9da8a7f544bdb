/*
 * gateway/engine.h: a model of one vLLM replica (V1 engine) for engine-sim: PagedAttention KV
 * blocks, automatic prefix caching, continuous batching with chunked prefill, and a roofline
 * timing model. Pure code: the caller owns the clock and calls step_begin / step_end.
 *
 * Requests arrive as token counts plus the chained hashes of their prompt's full blocks (engine-
 * sim hashes the prompt text in 64-character blocks, one 16-token block at 4 characters per
 * token, with the gateway's seed: model and cache_salt). The block manager is vLLM's: a pool of
 * num_gpu_blocks blocks, a queue of free blocks (head evicted first), a hash -> block map of
 * cached blocks; a hit takes a cached block out of the free queue; a finished sequence gives its
 * blocks back tail first. Blocks of generated tokens are not cached (the workloads here never send
 * an answer back as the next prompt).
 *
 * A step (fatia_engine_step_begin): running requests first (one decode token each, or the next
 * prefill chunk), then waiting requests in arrival order while there are sequence slots
 * (max_num_seqs), tokens left in the step budget (max_num_batched_tokens) and free blocks; a long
 * prompt is cut into chunks that fit the budget. When a running request needs a block and none is
 * free, the most recently admitted running request is preempted (its blocks freed, back to the
 * head of the queue, recomputed later), as vLLM does. Waiting requests are not admitted in a step
 * that preempted.
 *
 * Duration of a step (seconds):
 *     overhead + max(compute, memory)
 *     compute = (2 x linear params x tokens + 2 x vocab x hidden x sampled sequences
 *                + sum over sequences of 4 x layers x heads x head_dim x chunk x (context + chunk/2))
 *               / (flops x tp)
 *     memory  = weights per GPU / hbm_bw + KV bytes read per GPU / kv_bw
 * with flops, hbm_bw, kv_bw and overhead from the H200 calibration (docs/serving-calibration.json).
 * Tensor-parallel communication is not modelled.
 *
 * Prefill/decode disaggregation: a decode server queues a request whose prompt KV was
 * transferred from a prefill server with fatia_engine_add_loaded (the transfer's time is the
 * caller's, kvxfer.h); a prefill server runs ordinary requests with max_tokens 1.
 *
 * Request states: WAITING --admitted (step_begin)--> RUNNING --last token (step_end)--> freed
 *                 RUNNING --preempted (step_begin)--> WAITING;  any --abort--> freed at once
 */
#ifndef FATIA_GATEWAY_ENGINE_H
#define FATIA_GATEWAY_ENGINE_H

#include "base/compat.h"

#include "base/clock.h"
#include "gateway/modelspec.h"

struct fatia_engine_config {
    struct fatia_model_spec model;
    uint32_t tp;
    uint64_t weights_bytes_per_gpu;
    uint64_t kv_bytes_per_token_per_gpu;
    uint32_t block_tokens; /* 16 */
    uint64_t num_gpu_blocks;
    uint32_t max_num_seqs;
    uint32_t max_num_batched_tokens;
    uint32_t max_model_len;
    bool prefix_caching;
    double flops;         /* effective FLOP/s per GPU at prefill shapes */
    double hbm_bw;        /* effective bytes/s streaming weights */
    double kv_bw;         /* effective bytes/s reading the KV cache */
    double step_overhead; /* seconds per step */
};

struct fatia_engine;
struct fatia_engine_req;

struct fatia_engine_stats {
    uint32_t waiting, running;
    uint64_t num_gpu_blocks, free_blocks, cached_blocks;
    double kv_usage;                      /* 1 - free / total */
    uint64_t prefix_queries, prefix_hits; /* tokens */
    uint64_t preemptions;
    uint64_t prompt_tokens, generation_tokens; /* computed prompt tokens, emitted tokens */
    uint64_t remote_tokens; /* prompt tokens whose KV was loaded from a prefill server */
    uint64_t steps;
    uint64_t last_step_tokens;
};

int fatia_engine_new(const struct fatia_engine_config *cfg, struct fatia_engine **ret);
void fatia_engine_free(struct fatia_engine *e);
const struct fatia_engine_config *fatia_engine_config(const struct fatia_engine *e);

/* Queues a request: prompt_tokens > 0; max_tokens = tokens to generate (0 for a prefill-only
 * request such as an embedding); hashes of the prompt's full blocks (copied). ud is returned in
 * emit. -FATIA_E_LIMIT when prompt + max_tokens exceeds max_model_len; -ENOMEM. */
int fatia_engine_add(struct fatia_engine *e, uint32_t prompt_tokens, uint32_t max_tokens,
                     const uint64_t *hashes, size_t n_hashes, void *ud,
                     struct fatia_engine_req **ret);
/* Queues a request whose prompt KV was computed by another engine and has been transferred here
 * (a decode server of prefill/decode disaggregation): at admission the prompt's locally cached
 * blocks are hits as usual, every other prompt token but the last counts as computed (its blocks
 * are allocated and cached), and the last one is recomputed in the first step, which samples the
 * first token (vLLM's NixlConnector does the same). If the request is preempted its KV is gone
 * and it is recomputed here in full. Same errors as fatia_engine_add. */
int fatia_engine_add_loaded(struct fatia_engine *e, uint32_t prompt_tokens, uint32_t max_tokens,
                            const uint64_t *hashes, size_t n_hashes, void *ud,
                            struct fatia_engine_req **ret);
/* Drops a request now (client went away); its blocks return to the free queue. */
void fatia_engine_abort(struct fatia_engine *e, struct fatia_engine_req *r);

/* Plans the next step; returns its duration in microseconds, 0 when there is nothing to do. */
fatia_usec_t fatia_engine_step_begin(struct fatia_engine *e);

/* Called by step_end for each request that produced a token in the step: generated = tokens so
 * far (0 for a finished prefill-only request), finished = it was the last (the request is freed
 * after the call). */
typedef void (*fatia_engine_emit_fn)(void *cbud, void *req_ud, uint32_t generated, bool finished);
/* Applies the planned step. */
void fatia_engine_step_end(struct fatia_engine *e, fatia_engine_emit_fn emit, void *cbud);

void fatia_engine_get_stats(const struct fatia_engine *e, struct fatia_engine_stats *ret);
/* Leading prompt tokens of these hashes held in the cache; with pending, also the prompt blocks of
 * requests queued or running here, which a request sent now finds cached when it is scheduled
 * (the benchmark oracle's probe). */
uint32_t fatia_engine_cached_tokens(const struct fatia_engine *e, const uint64_t *hashes, size_t n,
                                    bool pending);

/* The duration model alone (seconds), for one step of the given shape: tokens computed,
 * sequences sampled, attention work and KV bytes read. Exposed for tests and `--print-config`. */
double fatia_engine_step_seconds(const struct fatia_engine_config *cfg, uint64_t tokens,
                                 uint32_t sampled, double attn_flops, double kv_read_tokens);

#endif
