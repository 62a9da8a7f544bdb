/*
 * gateway/plan.c: the serving planner's memory model (see plan.h).
 *
 * Model, per GPU of a tensor-parallel group (vLLM's determine_available_memory, V1):
 *
 *     requested   = gpu_memory x gpu_memory_utilization         (a fraction of CUDA's total)
 *     weights     = ((params - embedding params) x bytes per weight + embedding params x 2) / tp
 *     activations = peak of the profiling run: max(forward over max_num_batched_tokens tokens,
 *                   sampler over max_num_seqs rows of fp32 logits and probabilities)
 *     overhead    = non-torch memory (cuBLAS workspaces, allocator slack), + NCCL buffers if tp > 1
 *     kv cache    = requested - weights - activations - overhead
 *     kv tokens   = floor(kv cache / kv bytes per token per GPU / 16) x 16   (whole blocks)
 *
 * Embeddings and the LM head stay in bf16 in quantized checkpoints (AWQ, GPTQ, FP8 dynamic keep
 * them), so only the other parameters shrink. KV heads are split across the tp group, and
 * replicated when tp exceeds them (each GPU then holds one). The CUDA context (~520 MiB per
 * process on the H200, measured) and CUDA graphs live in the (1 - utilization) headroom, as in
 * vLLM; the planner checks that the headroom holds the context.
 *
 * Flags: --max-num-batched-tokens and the ceiling of --max-num-seqs follow vLLM's defaults for
 * the device's memory class (>= 70 GiB: 8192 tokens / 1024 sequences; smaller: 2048 / 256; a MIG
 * slice is its own device to vLLM). --max-num-seqs is lowered to the largest power of two of
 * sequences of FATIA_PLAN_SEQ_TOKENS tokens that fit in the cache together, so that a full batch
 * does not preempt. --max-model-len is the context asked for (--context), or the model's maximum
 * reduced to what one sequence can hold (a multiple of 1024), never below FATIA_PLAN_MIN_CONTEXT.
 *
 * The activation and overhead terms are estimates (a vLLM startup log on the target is the
 * authority); the golden tests pin the arithmetic, docs/serving.md works one case by hand.
 *
 * Rejected: asking for a utilization that fills the slice exactly (vLLM fails at start when CUDA
 * graphs or the context do not fit the headroom), and modelling fragmentation per block (vLLM
 * preallocates one contiguous pool, so there is none to model).
 */
#include "base/compat.h"

#include "gateway/plan.h"

#include <math.h>

#include "base/error.h"

int fatia_dtype_parse(const char *s, enum fatia_dtype *ret)
{
    static const struct {
        const char *name;
        enum fatia_dtype d;
    } names[] = {{"bf16", FATIA_DTYPE_BF16}, {"bfloat16", FATIA_DTYPE_BF16},
                 {"fp16", FATIA_DTYPE_BF16}, {"float16", FATIA_DTYPE_BF16},
                 {"fp8", FATIA_DTYPE_FP8},   {"int8", FATIA_DTYPE_INT8},
                 {"int4", FATIA_DTYPE_INT4}};

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++)
        if (!strcmp(s, names[i].name)) {
            *ret = names[i].d;
            return 0;
        }
    return -EINVAL;
}

const char *fatia_dtype_name(enum fatia_dtype d)
{
    switch (d) {
    case FATIA_DTYPE_BF16:
        return "bf16";
    case FATIA_DTYPE_FP8:
        return "fp8";
    case FATIA_DTYPE_INT8:
        return "int8";
    case FATIA_DTYPE_INT4:
        return "int4";
    }
    return "?";
}

double fatia_dtype_weight_bytes(enum fatia_dtype d)
{
    switch (d) {
    case FATIA_DTYPE_BF16:
        return 2.0;
    case FATIA_DTYPE_FP8:
    case FATIA_DTYPE_INT8:
        return 1.0;
    case FATIA_DTYPE_INT4:
        return 0.5 + 4.0 / 128.0;
    }
    return 2.0;
}

static uint32_t pow2_floor(uint64_t x)
{
    uint32_t p = 1;
    while ((uint64_t)p * 2 <= x && p < (1u << 30))
        p *= 2;
    return p;
}

static uint64_t weights_bytes(const struct fatia_model_spec *m, enum fatia_dtype d)
{
    uint64_t embed = (uint64_t)m->vocab * m->hidden * (m->tied_embeddings ? 1 : 2);
    double w;

    if (embed > m->params)
        embed = 0;
    w = (double)(m->params - embed) * fatia_dtype_weight_bytes(d) + (double)embed * 2.0;
    return (uint64_t)ceil(w);
}

/* Peak bytes of the profiling forward and sampler runs, per GPU. */
static uint64_t activation_bytes(const struct fatia_model_spec *m, uint32_t tp, uint32_t tokens,
                                 uint32_t seqs)
{
    double h = m->hidden, inter = m->intermediate, qkv;
    double fwd, sampler;

    if (!h) /* no config: a dense transformer has params ~ 12 x layers x hidden^2 */
        h = sqrt((double)m->params / (12.0 * m->layers));
    if (!inter)
        inter = 3.5 * h;
    qkv = (double)((m->heads ? m->heads : m->kv_heads) + 2 * m->kv_heads) * m->head_dim;
    /* residual and normed hidden states (4 x hidden), the qkv projection, and the MLP's gate+up
     * output with its activation (3 x intermediate), in bf16, the sharded ones divided by tp */
    fwd = (double)tokens * 2.0 * (4.0 * h + (qkv + 3.0 * inter) / tp);
    /* fp32 logits and probabilities of max_num_seqs rows, gathered on every rank */
    sampler = (double)seqs * (m->vocab ? m->vocab : 32000) * 4.0 * 2.0;
    return (uint64_t)ceil(fwd > sampler ? fwd : sampler);
}

/* The memory terms of p for its current max_num_seqs and max_num_batched_tokens. */
static void size_memory(const struct fatia_plan_input *in, struct fatia_plan *p)
{
    int64_t kv;

    p->activation_bytes =
        activation_bytes(&in->model, p->tp, p->max_num_batched_tokens, p->max_num_seqs);
    kv = (int64_t)p->requested_bytes - (int64_t)p->weights_bytes_per_gpu -
         (int64_t)p->activation_bytes - (int64_t)p->overhead_bytes;
    p->kv_cache_bytes = kv;
    p->kv_cache_blocks =
        kv > 0 ? (uint64_t)kv / p->kv_bytes_per_token_per_gpu / FATIA_PLAN_BLOCK_TOKENS : 0;
    p->kv_cache_tokens = p->kv_cache_blocks * FATIA_PLAN_BLOCK_TOKENS;
}

int fatia_serving_plan_compute(const struct fatia_plan_input *in, struct fatia_plan *ret)
{
    const struct fatia_model_spec *m = &in->model;
    struct fatia_plan p = {0};
    uint32_t kvh_gpu, context, min_ctx;
    bool large, explicit_ctx = in->context > 0;
    double kv_elem;

    if (!m->layers || !m->kv_heads || !m->head_dim || !m->params || !in->gpu_memory_bytes ||
        !in->gpus || (in->kv_dtype != FATIA_DTYPE_BF16 && in->kv_dtype != FATIA_DTYPE_FP8))
        return -EINVAL;
    p.tp = in->gpus;
    p.gpu_memory_utilization =
        in->gpu_memory_utilization > 0 ? in->gpu_memory_utilization : FATIA_PLAN_DEFAULT_UTIL;
    large = in->gpu_memory_bytes >= FATIA_PLAN_LARGE_GPU_BYTES;
    p.max_num_batched_tokens =
        in->max_num_batched_tokens ? in->max_num_batched_tokens : (large ? 8192 : 2048);
    p.max_num_seqs = in->max_num_seqs ? in->max_num_seqs : (large ? 1024 : 256);

    kv_elem = in->kv_dtype == FATIA_DTYPE_FP8 ? 1.0 : 2.0;
    kvh_gpu = (m->kv_heads + p.tp - 1) / p.tp;
    p.kv_bytes_per_token = fatia_modelspec_kv_bytes_per_token(m, kv_elem);
    p.kv_bytes_per_token_per_gpu = (uint64_t)(2.0 * m->layers * kvh_gpu * m->head_dim * kv_elem);
    p.weights_bytes = weights_bytes(m, in->weight_dtype);
    p.weights_bytes_per_gpu = (p.weights_bytes + p.tp - 1) / p.tp;
    p.overhead_bytes = FATIA_PLAN_NON_TORCH + (p.tp > 1 ? FATIA_PLAN_NCCL : 0);
    p.requested_bytes = (uint64_t)floor((double)in->gpu_memory_bytes * p.gpu_memory_utilization);
    size_memory(in, &p);
    if (!in->max_num_seqs && p.kv_cache_tokens) {
        /* a full batch of FATIA_PLAN_SEQ_TOKENS-token sequences must fit; vLLM profiles the
         * sampler with the final max_num_seqs, so size the memory again */
        uint64_t by_cache = p.kv_cache_tokens / FATIA_PLAN_SEQ_TOKENS;
        uint32_t cap = pow2_floor(by_cache ? by_cache : 1);
        if (cap < p.max_num_seqs) {
            p.max_num_seqs = cap;
            size_memory(in, &p);
        }
    }
    if (!in->max_num_batched_tokens && p.max_num_batched_tokens < p.max_num_seqs)
        p.max_num_batched_tokens = p.max_num_seqs;

    context = explicit_ctx ? in->context : (m->max_context ? m->max_context : 8192);
    min_ctx = explicit_ctx ? context : FATIA_MIN(context, FATIA_PLAN_MIN_CONTEXT);
    p.max_model_len = context;
    if (!explicit_ctx && p.kv_cache_tokens < context && p.kv_cache_tokens >= min_ctx) {
        p.max_model_len = (uint32_t)(p.kv_cache_tokens / 1024 * 1024);
        if (p.max_model_len < min_ctx)
            p.max_model_len = min_ctx;
        snprintf(p.reason, sizeof(p.reason),
                 "max-model-len lowered from the model's %u to %u tokens: one sequence of the "
                 "full context does not fit the KV cache",
                 context, p.max_model_len);
    }

    p.fits = false;
    if (m->heads && m->heads % p.tp) {
        snprintf(p.reason, sizeof(p.reason),
                 "tensor-parallel size %u does not divide the %u attention heads", p.tp, m->heads);
    } else if (p.tp > m->kv_heads && p.tp % m->kv_heads) {
        snprintf(p.reason, sizeof(p.reason),
                 "tensor-parallel size %u is neither a divisor nor a multiple of the %u KV heads",
                 p.tp, m->kv_heads);
    } else if ((double)in->gpu_memory_bytes * (1.0 - p.gpu_memory_utilization) <
               (double)FATIA_PLAN_CUDA_CONTEXT) {
        snprintf(p.reason, sizeof(p.reason),
                 "the %.0f%% left outside gpu-memory-utilization is less than the CUDA context "
                 "(%" PRIu64 " MiB)",
                 (1.0 - p.gpu_memory_utilization) * 100, FATIA_PLAN_CUDA_CONTEXT >> 20);
    } else if (p.kv_cache_bytes <= 0) {
        snprintf(p.reason, sizeof(p.reason),
                 "weights (%.2f GiB per GPU), activations and overheads exceed the %.2f GiB "
                 "available per GPU at utilization %.2f",
                 (double)p.weights_bytes_per_gpu / (1 << 30), (double)p.requested_bytes / (1 << 30),
                 p.gpu_memory_utilization);
    } else if (p.kv_cache_tokens < min_ctx) {
        snprintf(p.reason, sizeof(p.reason),
                 "the KV cache holds %" PRIu64 " tokens, less than one sequence of %u tokens",
                 p.kv_cache_tokens, min_ctx);
    } else {
        p.fits = true;
        p.max_concurrent_seqs = (uint32_t)(p.kv_cache_tokens / p.max_model_len);
    }
    *ret = p;
    return 0;
}

int fatia_serving_plan_vllm_args(const struct fatia_plan_input *in, const struct fatia_plan *p,
                                 char *buf, size_t n)
{
    return snprintf(buf, n,
                    "--tensor-parallel-size=%u --gpu-memory-utilization=%.2f --max-model-len=%u "
                    "--max-num-seqs=%u --max-num-batched-tokens=%u%s",
                    p->tp, p->gpu_memory_utilization, p->max_model_len, p->max_num_seqs,
                    p->max_num_batched_tokens,
                    in->kv_dtype == FATIA_DTYPE_FP8 ? " --kv-cache-dtype=fp8" : "");
}
