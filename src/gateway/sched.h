/*
 * gateway/sched.h: the routing decision: filters, weighted scorers, picker (GIE's scheduling
 * framework, reference/llm-routing.md §1.3-1.4). Pure code: it reads a snapshot of the endpoints
 * and a request, and a random state the caller owns; no clock, no I/O.
 *
 * Filters: endpoints that are not ready are out; with a queue limit, endpoints whose queue
 * (waiting requests) exceeds it are out, and when that leaves none the answer is "saturated"
 * (the gateway's 429). Scorers, each in [0,1], summed with their weights (not normalised, as GIE):
 *
 *   queue       (maxQ - q) / (maxQ - minQ) over the candidates, 1 when all equal; q is the
 *               endpoint's vllm:num_requests_waiting when its metrics are fresh, else the requests
 *               the gateway has in flight to it
 *   kv-cache    1 - vllm:kv_cache_usage_perc (0.5 when the metrics are stale)
 *   prefix      matched prefix blocks / request blocks (0 for a request shorter than one block)
 *   in-flight   min-max like queue, over the requests the gateway has in flight (no scrape lag)
 *   token-load  1 - min(1, in-flight prompt tokens / token_load_threshold)
 *
 * Default weights are GIE's since v1.2: queue 2, kv-cache 2, prefix 3 (in-flight and token-load
 * 0). The picker takes the highest total; ties are broken at random.
 *
 * Policies: cache-aware (the scorers above), round-robin (over ready endpoints, in order),
 * least-request (fewest in flight, random among equals), oracle (the most cached prompt tokens as
 * reported by the engines themselves, ties to fewest in flight: a benchmark reference only).
 */
#ifndef FATIA_GATEWAY_SCHED_H
#define FATIA_GATEWAY_SCHED_H

#include "base/compat.h"

enum fatia_policy {
    FATIA_POLICY_CACHE_AWARE,
    FATIA_POLICY_ROUND_ROBIN,
    FATIA_POLICY_LEAST_REQUEST,
    FATIA_POLICY_ORACLE,
};

/* "cache-aware" | "round-robin" | "least-request" | "oracle". 0 / -EINVAL. */
int fatia_policy_parse(const char *s, enum fatia_policy *ret);
const char *fatia_policy_name(enum fatia_policy p);

enum fatia_route_reason {
    FATIA_ROUTE_PREFIX, /* the winner held the best prefix match, and it mattered */
    FATIA_ROUTE_LOAD,   /* load scorers decided */
    FATIA_ROUTE_ROUND_ROBIN,
    FATIA_ROUTE_LEAST_REQUEST,
    FATIA_ROUTE_ORACLE,
    FATIA_ROUTE_ONLY_CANDIDATE,
    FATIA_ROUTE_N,
};

const char *fatia_route_reason_name(enum fatia_route_reason r);

struct fatia_sched_weights {
    double queue, kv, prefix, inflight, token_load;
};

struct fatia_sched_config {
    enum fatia_policy policy;
    struct fatia_sched_weights w;
    uint32_t queue_limit;          /* 0 = no limit */
    uint64_t token_load_threshold; /* 0 = 4 Mi tokens (GIE's default) */
};

/* Default cache-aware config (weights 2/2/3). */
void fatia_sched_config_default(struct fatia_sched_config *c);

struct fatia_sched_endpoint {
    bool ready;
    bool fresh; /* scraped metrics younger than the staleness bound */
    double waiting, kv_usage;
    uint32_t inflight;
    uint64_t inflight_tokens;
    uint32_t prefix_match; /* blocks (cache-aware) or cached tokens (oracle) */
};

struct fatia_sched_request {
    uint32_t n_blocks;
};

struct fatia_sched_result {
    size_t index;
    enum fatia_route_reason reason;
    double score;
};

/* Picks an endpoint among ep[0..n). rng is a xorshift state (never 0), rr the round-robin
 * cursor; both belong to the caller and advance. Returns 0, -ENOENT when no endpoint is ready
 * (503), -FATIA_E_LIMIT when every ready endpoint is over the queue limit (429). */
int fatia_sched_pick(const struct fatia_sched_config *cfg, const struct fatia_sched_endpoint *ep,
                     size_t n, const struct fatia_sched_request *req, uint64_t *rng, size_t *rr,
                     struct fatia_sched_result *ret);

/* The xorshift64* step used for tie-breaks. */
uint64_t fatia_sched_rand(uint64_t *state);

#endif
