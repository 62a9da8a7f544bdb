/*
 * gateway/prom.h: reading the few vLLM metrics routing needs out of a Prometheus text exposition
 * (the body of a model server's /metrics), without allocating.
 *
 *   vllm:num_requests_waiting                 queue depth (summed over series)
 *   vllm:num_requests_running                 running requests (summed)
 *   vllm:kv_cache_usage_perc                  KV cache use in [0,1] (max over series); the
 *   vllm:gpu_cache_usage_perc                 deprecated name is the fallback
 *   vllm:cache_config_info{block_size, num_gpu_blocks}   cache geometry (labels)
 *   vllm:prefix_cache_queries[_total], vllm:prefix_cache_hits[_total]   counters (tokens)
 *
 * Lines that are not samples of these metrics are skipped; malformed lines are skipped too (a
 * model server's exposition is outside input, and one bad line must not blind the router).
 */
#ifndef FATIA_GATEWAY_PROM_H
#define FATIA_GATEWAY_PROM_H

#include "base/compat.h"

#define FATIA_PROM_WAITING  (1u << 0)
#define FATIA_PROM_RUNNING  (1u << 1)
#define FATIA_PROM_KV       (1u << 2)
#define FATIA_PROM_CACHECFG (1u << 3)
#define FATIA_PROM_PREFIX   (1u << 4)

struct fatia_engine_metrics {
    unsigned have; /* FATIA_PROM_* of what was found */
    double waiting;
    double running;
    double kv_usage;
    uint64_t num_gpu_blocks;
    uint32_t block_size;
    double prefix_queries;
    double prefix_hits;
};

/* Scans text[0..n). Never fails: what is missing is absent from ret->have. Returns the number of
 * sample lines used. */
int fatia_prom_scan_vllm(const char *text, size_t n, struct fatia_engine_metrics *ret);

#endif
