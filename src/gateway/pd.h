/*
 * gateway/pd.h: the prefill/decode (P/D) choice of the gateway's picker, as llm-d's scheduler
 * makes it (reference/llm-routing.md §2.4, llm-d-router docs/disaggregation.md). Pure code.
 *
 * Roles come from the pod label llm-d.ai/role: "prefill" pods serve the prefill profile only;
 * "decode", "prefill-decode", "both" and unlabeled pods serve the decode profile (an unlabeled
 * pod counts as decode, as llm-d's by-label filter has it). The decode profile runs first, over
 * the decode pods, with the load-aware scorers; then the decider looks at the chosen decode pod:
 *
 *   prefix-based  (llm-d's prefix-based-pd-decider) nonCached = input tokens - prefix blocks the
 *                 decode pod already holds x block tokens; disaggregate iff nonCached >=
 *                 non_cached_tokens. 0 never disaggregates, as llm-d's (its inverted zero).
 *                 Short prompts, and prompts the decode pod mostly holds, skip the prefill pool.
 *   always        (always-disagg-pd-decider, what KServe's LLMInferenceService generates when
 *                 spec.prefill is set)
 *   never         P/D off: prefill pods get no traffic
 *
 * When it disaggregates, the prefill profile picks among the prefill pods with the prefix-aware
 * scorers (the prefill pod that holds the longest prefix computes least), and the request goes
 * to the decode pod with the header x-prefiller-host-port: HOST:PORT naming the prefill pod
 * (llm-d's pkg/common/routing/common.go); the decode pod's sidecar (engine-sim --role decode)
 * runs the prefill there and pulls the KV. The prefix index records both pods.
 */
#ifndef FATIA_GATEWAY_PD_H
#define FATIA_GATEWAY_PD_H

#include "base/compat.h"

#define FATIA_PD_ROLE_LABEL       "llm-d.ai/role"
#define FATIA_PD_PREFILLER_HEADER "x-prefiller-host-port"
/* A pool's own decider (its annotation, copied to its endpoints' labels by kubepool.c): what
 * KServe generates per LLMInferenceService ("always" with spec.prefill) */
#define FATIA_PD_DECIDER_LABEL "serving.fatia.io/pd-decider"

enum fatia_pd_role {
    FATIA_PD_ROLE_DECODE, /* decode, prefill-decode, both, unlabeled */
    FATIA_PD_ROLE_PREFILL,
};

enum fatia_pd_decider {
    FATIA_PD_DECIDER_PREFIX,
    FATIA_PD_DECIDER_ALWAYS,
    FATIA_PD_DECIDER_NEVER,
};

struct fatia_pd_config {
    enum fatia_pd_decider decider;
    uint32_t non_cached_tokens; /* prefix-based: the threshold (default 256) */
    uint32_t block_tokens;      /* tokens per prefix block (16: 64 characters / 4) */
};

void fatia_pd_config_default(struct fatia_pd_config *c);
/* "prefix-based" | "always" | "never". 0 / -EINVAL. */
int fatia_pd_decider_parse(const char *s, enum fatia_pd_decider *ret);
const char *fatia_pd_decider_name(enum fatia_pd_decider d);

/* The role of a pod from its llm-d.ai/role label value (NULL: unlabeled). */
enum fatia_pd_role fatia_pd_role_of(const char *label);

/* Whether a request of input_tokens, of which the chosen decode pod holds cached_blocks prefix
 * blocks, goes through a prefill pod. */
bool fatia_pd_disaggregate(const struct fatia_pd_config *c, uint64_t input_tokens,
                           uint32_t cached_blocks);

#endif
