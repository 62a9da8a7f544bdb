/*
 * gateway/gateway.h: the KV-cache-aware inference gateway: an OpenAI-compatible HTTP/1.1 reverse
 * proxy that picks, for each request, the model server most likely to hold its prompt prefix and
 * with the shortest queue, and relays the answer unchanged (streamed answers chunk by chunk).
 *
 * Data path (docs/serving.md): request received whole (httpd) -> only model, prompt/messages,
 * cache_salt scanned, without copying (reqbody) -> prefix blocks hashed (prefix) -> filters,
 * weighted scorers, picker (sched) -> request head and body written to a pooled keep-alive
 * connection straight from the client's buffer (upstream) -> response head re-emitted with
 * x-gateway-destination-endpoint, body bytes relayed as read, with backpressure both ways.
 *
 * Around it, per endpoint: active health checks (GET /health), metrics scrapes (GET /metrics,
 * vLLM names, default every 50 ms, stale after 2 s), an in-flight count, and the prefix index's
 * LRU sized from the endpoint's vllm:cache_config_info. An endpoint that fails a request is taken
 * out at once and returns when a health check passes; a request that got no response byte is
 * retried once on another endpoint, one that got part of an answer is never replayed (the client
 * connection is closed so that it sees the truncation).
 *
 * Endpoint states (function):
 *   PROBING --health ok (health_done)--> READY --a failed request (ep_fail), or
 *   health_failure_threshold failed checks in a row (health_done)--> DOWN --health ok--> READY;  any --left the pool (set_endpoints)--> REMOVED,
 *   freed when its last exchange ends.
 */
#ifndef FATIA_GATEWAY_GATEWAY_H
#define FATIA_GATEWAY_GATEWAY_H

#include "base/compat.h"

#include <jansson.h>

#include "base/clock.h"
#include "gateway/pd.h"
#include "gateway/sched.h"

struct event_base;
struct fatia_gateway;

struct fatia_gateway_config {
    const char *listen;
    struct fatia_sched_config sched;
    fatia_usec_t metrics_interval;     /* 50 ms */
    fatia_usec_t metrics_staleness;    /* 2 s */
    fatia_usec_t health_interval;      /* 1 s */
    fatia_usec_t health_timeout;       /* 2 s */
    uint32_t health_failure_threshold; /* failed checks in a row that take a ready one out: 3 */
    fatia_usec_t connect_timeout;      /* 2 s */
    fatia_usec_t upstream_timeout;     /* request sent to response head: 300 s; 0 = none */
    uint32_t max_prefix_blocks;        /* 2048 */
    size_t lru_capacity;               /* per endpoint, blocks; 0 = from its metrics, else 31,250 */
    size_t max_body;                   /* 32 MiB */
    uint64_t seed;                     /* tie-break randomness; 0 = from the clock */
    const char *selector;              /* only endpoints whose labels match (label selector text) */
    struct fatia_gateway_tenants
        *tenants; /* API keys and rates (tenants.h), borrowed; NULL = none */
    /* One gateway for many pools: a request goes only to endpoints whose label
     * FATIA_GATEWAY_MODEL_LABEL equals its "model" and, with API keys, whose
     * FATIA_GATEWAY_POOL_LABEL ("namespace/name") is in the namespace named as the key's tenant
     * (tenant = namespace); a model no such endpoint serves is answered 404 naming it, so a
     * tenant cannot tell another tenant's model from one that does not exist. */
    bool route_by_model;
    /* Scale from zero: a request for a model whose pool has no ready replica (an idle pool,
     * fatia_gateway_set_idle_pools) is held up to hold_timeout (0: answered 404/503 at once, as
     * before) and the demand hook (fatia_gateway_on_demand) is called with the pool
     * ("namespace/name") each time it is retried (every 100 ms; the hook rate-limits); then
     * forwarded, or 503 after the timeout. */
    fatia_usec_t hold_timeout;
    /* Prefill/decode disaggregation (pd.h): when endpoints labelled llm-d.ai/role=prefill are
     * candidates of a request, the decode pick comes first and this decider says whether a
     * prefill pod is named in x-prefiller-host-port. */
    struct fatia_pd_config pd;
};

#define FATIA_GATEWAY_MODEL_LABEL "serving.fatia.io/model" /* the pool's name */
#define FATIA_GATEWAY_POOL_LABEL  "serving.fatia.io/pool"  /* "namespace/name" */

void fatia_gateway_config_default(struct fatia_gateway_config *c);

struct fatia_gateway_endpoint {
    const char *url;      /* http://host:port[/prefix] */
    const json_t *labels; /* object of strings, or NULL; borrowed */
};

int fatia_gateway_new(struct event_base *base, const struct fatia_gateway_config *cfg,
                      struct fatia_gateway **ret);
void fatia_gateway_free(struct fatia_gateway *g);
int fatia_gateway_port(const struct fatia_gateway *g);

/* Makes the pool exactly these endpoints (by URL): new ones start probing, missing ones leave.
 * Host names are resolved here (blocking). Returns 0, or -EINVAL with why naming the bad URL
 * (the pool is unchanged). */
/* The demand hook (above); called on the gateway's loop. */
void fatia_gateway_on_demand(struct fatia_gateway *g, void (*fn)(void *ud, const char *pool),
                             void *ud);
/* The pools without a ready replica, [{"pool": "namespace/name", "name": NAME}] (copied). */
int fatia_gateway_set_idle_pools(struct fatia_gateway *g, const json_t *pools);

int fatia_gateway_set_endpoints(struct fatia_gateway *g, const struct fatia_gateway_endpoint *v,
                                size_t n, char *why, size_t why_n);

#endif
