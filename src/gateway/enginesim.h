/*
 * gateway/enginesim.h: `fatia engine-sim`, an OpenAI-compatible server that behaves like one vLLM
 * replica on a slice, for tests and benchmarks where no GPU or model is at hand.
 *
 * The engine model (engine.h) decides what each step computes and how long it takes; this server
 * runs it against the wall clock sped up `speed` times: a step of d engine microseconds ends d /
 * speed microseconds after it began, and every latency it reports (metrics) is in engine time
 * (wall x speed). Requests are "tokenized" at 4 characters per token (GIE's approximation, so the
 * gateway's 64-character prefix blocks are exactly the engine's 16-token KV blocks); chat messages
 * are rendered as "<|role|>\ncontent\n" per message plus "<|assistant|>\n", like a chat template.
 * Each generated token is one 4-character word.
 *
 * Endpoints: POST /v1/completions, /v1/chat/completions (streamed as SSE when "stream": true),
 * /v1/embeddings; GET /v1/models, /health, /metrics (vLLM's metric names); and POST
 * /fatia/cache-lookup (the body of an inference request; answers how many of its prompt tokens
 * the prefix cache holds: the benchmark oracle's probe, not a vLLM endpoint).
 *
 * Prefill/decode disaggregation (llm-d's flow, reference/workbenches-serving.md §5): a request
 * whose body has kv_transfer_params.do_remote_decode (what llm-d's decode sidecar sends a
 * prefill server) is run with max_tokens 1 and answered with kv_transfer_params
 * {do_remote_prefill: true, remote_engine_id, remote_block_ids, remote_host, remote_port,
 * tp_size} as vLLM's NixlConnector does, plus "engine_time", fatia's addition: the virtual time
 * the prefill ended. A decode server (role decode) is its own routing sidecar: a request with the
 * header x-prefiller-host-port: HOST:PORT (IP literals: nothing is resolved on the loop) is first
 * sent to that prefill server (stream false, max_tokens 1, kv_transfer_params as llm-d's
 * connector_nixlv2 writes them), then its prompt KV is "pulled" over the modelled link
 * (kvxfer.h) and it is queued with fatia_engine_add_loaded; a failed prefill leg (connect error,
 * non-200) is run here in full (counted in fatia_engine_sim_pd_fallbacks_total). A body that
 * already carries kv_transfer_params.do_remote_prefill (an outside sidecar's second leg) is
 * pulled from its remote_host:remote_port the same way without a prefill leg.
 */
#ifndef FATIA_GATEWAY_ENGINESIM_H
#define FATIA_GATEWAY_ENGINESIM_H

#include "base/compat.h"

#include "gateway/catalog.h"
#include "gateway/engine.h"
#include "gateway/kvxfer.h"
#include "gateway/plan.h"

struct event_base;
struct fatia_enginesim;

enum fatia_engine_role {
    FATIA_ROLE_BOTH, /* aggregated: prefill and decode in one server (the default) */
    FATIA_ROLE_PREFILL,
    FATIA_ROLE_DECODE,
};

/* "both" | "prefill" | "decode". 0 / -EINVAL. */
int fatia_engine_role_parse(const char *s, enum fatia_engine_role *ret);
const char *fatia_engine_role_name(enum fatia_engine_role r);

struct fatia_enginesim_config {
    const char *listen;
    const char *served_model; /* the model name clients send and /v1/models lists */
    struct fatia_engine_config engine;
    double speed;                  /* >= 1e-3; 1 = real time */
    uint32_t default_max_tokens;   /* when a request gives none (16) */
    double gpu_memory_utilization; /* reported in cache_config_info */
    bool timestamps;          /* add "engine_arrival", "engine_time" and "engine_times" to chunks */
    uint32_t stream_interval; /* tokens per streamed chunk after the first (vLLM's option) */
    bool reuse_port;          /* SO_REUSEPORT: replicas sharing the host's network share a port */
    /* API keys (gateway/tenants.h), borrowed; NULL = none. With keys, the /v1/ paths need
     * Authorization: Bearer KEY (401); /health and /metrics stay open for the gateway's probes. */
    struct fatia_gateway_tenants *tenants;
    enum fatia_engine_role role;
    struct fatia_kvxfer_link kv_link; /* inbound KV link of a decode server; bandwidth 0 = nvlink */
};

/* The engine a replica would run on a device: KV capacity and scheduler limits from the serving
 * planner (as fatia would start vLLM there), timing from the H200 calibration scaled to the
 * slice (compute by its share of multiprocessors, bandwidth by its share of memory slices).
 * in->gpu_memory_bytes may be left 0 to take dev's. Returns 0, or -FATIA_E_NOFIT with the
 * planner's reason in why. */
int fatia_engine_config_for(const struct fatia_plan_input *in,
                            const struct fatia_serving_device *dev, struct fatia_engine_config *ret,
                            struct fatia_plan *ret_plan, char *why, size_t why_n);

int fatia_enginesim_new(struct event_base *base, const struct fatia_enginesim_config *cfg,
                        struct fatia_enginesim **ret);
void fatia_enginesim_free(struct fatia_enginesim *s);
int fatia_enginesim_port(const struct fatia_enginesim *s);
/* Graceful stop (SIGTERM of a replica scaled down or preempted): no new connections (the port's
 * other replicas get them), idle keep-alive connections closed, /health answers 503; the
 * requests it holds are answered as usual. */
void fatia_enginesim_drain(struct fatia_enginesim *s);
/* Requests received and not yet answered (queued, running, or waiting for their prefill). */
size_t fatia_enginesim_inflight(const struct fatia_enginesim *s);

#endif
