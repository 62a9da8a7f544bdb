/*
 * gateway/plan.h: the serving planner: does a model fit a slice, how much KV cache remains, and
 * which vLLM flags to start it with.
 *
 * Pure code: no I/O, no clock. `fatia serve plan`, engine-sim (its KV capacity) and the demand
 * and e2e layers (sizing model servers for a slice) call the same function. The memory model and
 * every constant are documented in plan.c and docs/serving.md.
 */
#ifndef FATIA_GATEWAY_PLAN_H
#define FATIA_GATEWAY_PLAN_H

#include "base/compat.h"

#include "gateway/modelspec.h"

enum fatia_dtype {
    FATIA_DTYPE_BF16,
    FATIA_DTYPE_FP8,
    FATIA_DTYPE_INT8,
    FATIA_DTYPE_INT4,
};

/* "bf16" (also "bfloat16", "fp16", "float16": the same size), "fp8", "int8", "int4". 0/-EINVAL. */
int fatia_dtype_parse(const char *s, enum fatia_dtype *ret);
const char *fatia_dtype_name(enum fatia_dtype d);
/* Bytes per weight, quantization scales included (int4: groups of 128 with a 16-bit scale and
 * zero point each, 0.53125 bytes). */
double fatia_dtype_weight_bytes(enum fatia_dtype d);

#define FATIA_PLAN_BLOCK_TOKENS    16   /* vLLM's default KV block size */
#define FATIA_PLAN_MIN_CONTEXT     2048 /* smallest max-model-len the planner proposes */
#define FATIA_PLAN_DEFAULT_UTIL    0.90 /* vLLM's default --gpu-memory-utilization */
#define FATIA_PLAN_SEQ_TOKENS      1024 /* tokens per sequence assumed when sizing max-num-seqs */
#define FATIA_PLAN_LARGE_GPU_BYTES (UINT64_C(70) << 30)
#define FATIA_PLAN_CUDA_CONTEXT    (UINT64_C(512) << 20) /* per process; measured ~520 MiB */
#define FATIA_PLAN_NON_TORCH       (UINT64_C(256) << 20) /* cuBLAS workspaces, allocator slack */
/* NCCL and custom all-reduce buffers when TP > 1: fitted to two KV capacities vLLM reported
 * (llm-d benchmarks: Llama-3.1-70B TP4 on H100-80GB 461,376 tokens, Qwen3-32B TP2 307,328). */
#define FATIA_PLAN_NCCL (UINT64_C(1946) << 20)

struct fatia_plan_input {
    struct fatia_model_spec model;
    enum fatia_dtype weight_dtype;
    enum fatia_dtype kv_dtype; /* bf16 or fp8 */
    uint64_t gpu_memory_bytes; /* per GPU or slice, as CUDA reports it to the engine */
    uint32_t gpus;             /* tensor-parallel size, >= 1 */
    /* 0 = defaults: */
    double gpu_memory_utilization;   /* 0.90 */
    uint32_t context;                /* plan for this many tokens per sequence; 0 = model max */
    uint32_t max_num_seqs;           /* planner's rule */
    uint32_t max_num_batched_tokens; /* vLLM's default for the memory class */
};

struct fatia_plan {
    bool fits;
    char reason[256]; /* why it does not fit, or a note about what was reduced; "" if none */
    uint32_t tp;
    double gpu_memory_utilization;
    uint64_t requested_bytes;       /* gpu memory x utilization, per GPU */
    uint64_t weights_bytes;         /* whole model */
    uint64_t weights_bytes_per_gpu; /* weights / tp */
    uint64_t activation_bytes;      /* peak of vLLM's profiling forward, per GPU */
    uint64_t overhead_bytes;        /* non-torch memory per GPU */
    uint64_t kv_bytes_per_token;    /* whole model */
    uint64_t kv_bytes_per_token_per_gpu;
    int64_t kv_cache_bytes; /* per GPU; negative when weights and overheads already overflow */
    uint64_t kv_cache_tokens;
    uint64_t kv_cache_blocks;
    uint32_t max_model_len;
    uint32_t max_concurrent_seqs; /* sequences of max_model_len tokens the cache holds at once */
    uint32_t max_num_seqs;
    uint32_t max_num_batched_tokens;
};

/* Plans in into *ret. Returns 0 (fits or not: see ret->fits and ret->reason), or -EINVAL when the
 * input is incomplete (no layers, no KV heads, zero memory, zero GPUs). */
int fatia_serving_plan_compute(const struct fatia_plan_input *in, struct fatia_plan *ret);

/* The vLLM command-line flags of a plan ("--tensor-parallel-size=1", ...) as a space-separated
 * string into buf. Returns the length (snprintf semantics). */
int fatia_serving_plan_vllm_args(const struct fatia_plan_input *in, const struct fatia_plan *p,
                                 char *buf, size_t n);

#endif
