/*
 * tools/loadgen.h: the benchmark client behind `fatia serve bench`: open-loop arrivals,
 * streamed completions, and vLLM `bench serve` metrics (reference/llm-routing.md §3.6), in engine
 * time when the servers run sped up.
 *
 * Workloads:
 *   shared-prefix  llm-d's / inference-perf's: G groups x P prompts, each prompt a group's system
 *                  prompt of S tokens plus its own question of Q tokens, O output tokens (the
 *                  server ignores EOS); prompts are sent in random order with Poisson arrivals.
 *   azure-trace    arrivals, prompt and output lengths from the Azure LLM inference trace
 *                  (../shared/data/azure-llm-2023/), its timestamps divided by time_scale. The
 *                  trace has no text, so shared prefixes are synthesised (docs/serving.md):
 *                  each request belongs to one of T tenants (Zipf popularity, s = 1.1) with a
 *                  system prompt of 256 to 2,048 tokens; with probability follow it continues
 *                  the tenant's most recent conversation that its context can extend (its
 *                  prompt = that conversation's last prompt + a new turn), otherwise it opens a
 *                  conversation (the tenant's system prompt, then the user's text).
 * Text is 4-character tokens (" abc"), the 4 characters per token engine-sim and GIE assume.
 *
 * Metrics (definitions of `vllm bench serve`): TTFT = send to first streamed token; ITL = every
 * gap between streamed tokens; TPOT = (E2EL - TTFT) / (tokens - 1) per request; E2EL = send to
 * last byte; request and output-token throughput over the run. The prefix hit ratio is the
 * engines' own (delta of vllm:prefix_cache_hits / vllm:prefix_cache_queries over the run).
 * When the engines stamp their chunks with virtual times (engine-sim --engine-timestamps), the
 * per-request latencies are taken from the stamps (engine arrival to the step that produced each
 * token), so that a loaded benchmark machine delays delivery without distorting the figures;
 * otherwise wall time x speed.
 */
#ifndef FATIA_TOOLS_LOADGEN_H
#define FATIA_TOOLS_LOADGEN_H

#include "base/compat.h"

#include "base/clock.h"

enum fatia_workload {
    FATIA_WORKLOAD_SHARED_PREFIX,
    FATIA_WORKLOAD_AZURE_TRACE,
};

struct fatia_loadgen_config {
    const char *url;   /* the server: http://host:port */
    const char *model; /* "model" of every request */
    enum fatia_workload workload;
    double speed; /* the servers' clock speed-up: wall durations are multiplied by it */
    uint64_t seed;
    uint32_t requests;        /* how many to send (0 = the whole prompt set / trace window) */
    uint32_t max_concurrency; /* 0 = unbounded (open loop) */
    fatia_usec_t timeout;     /* per request, wall; 0 = 10 min */
    /* shared-prefix */
    double rate; /* requests per second of engine time */
    uint32_t groups, prompts_per_group, system_tokens, question_tokens, output_tokens;
    /* azure-trace */
    const char *trace;
    uint32_t trace_offset;
    double time_scale;
    uint32_t tenants;
    double follow;
    /* SLO of goodput (engine seconds, 0 = none): a completed request counts when its TTFT and its
     * TPOT (mean inter-token latency) are within them, vLLM bench serve's --goodput ttft:T
     * tpot:I and DistServe's definition */
    double slo_ttft, slo_itl;
    /* engines whose prefix-cache counters give the hit ratio (may be 0) */
    const char *const *engines;
    size_t n_engines;
};

void fatia_loadgen_config_default(struct fatia_loadgen_config *c);

struct fatia_dist {
    double mean, p50, p90, p99, max;
    size_t n;
};

struct fatia_loadgen_result {
    uint32_t sent, completed, failed;
    double duration;      /* engine seconds, first send to last completion */
    double offered_rate;  /* requests per engine second, as scheduled */
    double achieved_rate; /* as the engines saw them arrive (stamped runs), 0 if unknown */
    double request_throughput, output_throughput; /* per engine second */
    uint64_t output_tokens, input_tokens;
    struct fatia_dist ttft, tpot, itl, e2el; /* engine seconds */
    double prefix_hit_ratio;                 /* -1 when no engines were given */
    uint32_t good;     /* completed within both SLOs (all completed when none is set) */
    double goodput;    /* good requests per engine second */
    double attainment; /* good / sent */
    /* the same with every inter-token gap of a request within slo_itl (not only their mean):
     * what a reader of a stream sees as a stall */
    uint32_t good_strict;
    double attainment_strict;
    double max_concurrency_seen;
};

/* Runs the workload against cfg->url on a loop of its own. Returns 0 (the result is filled even
 * when some requests failed), or < 0 with why (unreadable trace, unreachable server). */
int fatia_loadgen_run(const struct fatia_loadgen_config *cfg, struct fatia_loadgen_result *ret,
                      char *why, size_t why_n);

/* Percentiles of v[0..n) (sorted in place). */
void fatia_dist_of(double *v, size_t n, struct fatia_dist *ret);

#endif
