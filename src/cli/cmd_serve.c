/*
 * cli/cmd_serve.c: `fatia serve plan` (the serving planner) and `fatia serve bench` (a load
 * generator with vLLM `bench serve` metrics, used by bench/gateway.sh).
 *
 * The work is in the gateway library: plan.c (pure memory model), catalog.c (GPU and MIG facts),
 * modelspec.c (data/models.yaml); and in the tools library: tools/loadgen.c (the benchmark
 * client). This file parses options and prints.
 */
#include "base/compat.h"

#include <getopt.h>
#include <math.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/input.h"
#include "gateway/catalog.h"
#include "gateway/modelspec.h"
#include "gateway/plan.h"
#include "model/quantity.h"
#include "tools/loadgen.h"

static const char usage[] =
    "Usage: fatia serve plan (--model NAME | --params N --layers L --kv-heads K --head-dim D)\n"
    "                        [--dtype bf16|fp8|int8|int4] [--kv-cache-dtype bf16|fp8]\n"
    "                        (--slice PROFILE [--gpu PRODUCT] | --memory BYTES [--gpus N] |\n"
    "                         [--gpus N] --gpu PRODUCT)\n"
    "                        [--context TOKENS] [-o json|table|yaml]\n"
    "       fatia serve bench --url URL --workload shared-prefix|azure-trace [options]\n"
    "\n"
    "plan: does a model fit a slice (a MIG profile, a memory cap of a time-slice or MPS share,\n"
    "or whole GPUs with tensor parallelism), how many KV-cache tokens remain, how many\n"
    "sequences of the context fit at once, and the vLLM flags to start it with. The memory\n"
    "model is in docs/serving.md; model shapes come from data/models.yaml.\n"
    "\n"
    "Model:\n"
    "  --model NAME              a shape from models.yaml (name or Hugging Face id)\n"
    "  --params N --layers L --kv-heads K --head-dim D\n"
    "                            a shape by hand; optional --heads, --hidden, --intermediate,\n"
    "                            --vocab, --max-context refine it\n"
    "  --dtype T                 weights: bf16 (default), fp8, int8, int4\n"
    "  --kv-cache-dtype T        bf16 (default) or fp8\n"
    "  --models-file PATH        another models.yaml\n"
    "Slice:\n"
    "  --slice PROFILE           a MIG profile of --gpu (default h200), e.g. 3g.71gb\n"
    "  --memory BYTES            memory per GPU as the engine sees it (a time-slice cap or an\n"
    "                            MPS share), a quantity such as 40Gi\n"
    "  --gpus N                  tensor-parallel size (default 1)\n"
    "  --gpu PRODUCT             GPU product (h200)\n"
    "Engine:\n"
    "  --context TOKENS          plan for sequences of this length (default: the model's)\n"
    "  --gpu-memory-utilization F, --max-num-seqs N, --max-num-batched-tokens N\n"
    "                            fix these instead of letting the planner choose\n"
    "  -o, --output FORMAT       table (default), json or yaml\n"
    "\n"
    "Exit status: 0 it fits, 1 it does not fit or the input is wrong, 2 usage.\n"
    "\n"
    "bench: see 'fatia serve bench --help'.\n";

static const struct fatia_cli_cmd *self(void);

static int parse_u32(const char *s, uint32_t min, uint32_t *ret)
{
    uint64_t v;
    if (fatia_parse_u64(s, &v) < 0 || v < min || v > UINT32_MAX)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

/* ---- when it does not fit: by how much, and what would ---- */

#define MAX_ALTS 4

struct alt {
    char args[96];            /* the options to change, "--gpus 2", "--dtype fp8" */
    uint64_t kv_cache_tokens; /* what that plan's cache holds */
};

/* The smallest memory per GPU (in 1/16 GiB) that fits in's model, tp and dtypes, by bisection up
 * to 16 TiB; 0 when even that does not (a shape the memory cannot fix: tp not dividing the
 * heads). */
static uint64_t memory_needed(const struct fatia_plan_input *in)
{
    struct fatia_plan_input t = *in;
    struct fatia_plan p;
    uint64_t lo = 0, hi = UINT64_C(16) << 40, step = UINT64_C(1) << 26;

    t.gpu_memory_bytes = hi;
    if (fatia_serving_plan_compute(&t, &p) < 0 || !p.fits)
        return 0;
    while (hi - lo > step) {
        t.gpu_memory_bytes = lo + (hi - lo) / 2;
        if (fatia_serving_plan_compute(&t, &p) == 0 && p.fits)
            hi = t.gpu_memory_bytes;
        else
            lo = t.gpu_memory_bytes;
    }
    return hi;
}

static bool try_alt(const struct fatia_plan_input *in, struct alt *a)
{
    struct fatia_plan p;

    if (fatia_serving_plan_compute(in, &p) < 0 || !p.fits)
        return false;
    a->kv_cache_tokens = p.kv_cache_tokens;
    return true;
}

/* Alternatives that fit, nearest first: a larger MIG profile, more whole GPUs of the product (tensor parallel, up to
 * 8), smaller weights, an fp8 KV cache. gpu is the product as the user named it. Returns how
 * many were written to alts. */
static size_t would_fit(const struct fatia_plan_input *in, const char *gpu, const char *slice_kind,
                        struct alt *alts)
{
    static const enum fatia_dtype smaller[] = {FATIA_DTYPE_FP8, FATIA_DTYPE_INT4};
    struct fatia_plan_input t;
    size_t n = 0;

    if (!strcmp(slice_kind, "mig")) {
        /* the smallest larger MIG profile of the product that fits */
        static const char *const profiles[] = {
            "1g.5gb",  "1g.10gb", "2g.10gb", "1g.12gb", "1g.18gb", "1g.20gb", "2g.20gb", "3g.20gb",
            "4g.20gb", "1g.24gb", "2g.24gb", "1g.35gb", "2g.35gb", "3g.40gb", "4g.40gb", "7g.40gb",
            "3g.47gb", "4g.47gb", "3g.71gb", "4g.71gb", "7g.80gb", "7g.94gb", "7g.141gb"};
        uint64_t best_mem = UINT64_MAX;
        for (size_t i = 0; i < FATIA_ARRAY_SIZE(profiles); i++) {
            struct fatia_serving_device mig;
            char why[256];
            if (fatia_serving_device_lookup(gpu ? gpu : "h200", profiles[i], &mig, why,
                                            sizeof(why)) < 0 ||
                mig.memory_bytes <= in->gpu_memory_bytes || mig.memory_bytes >= best_mem)
                continue;
            t = *in;
            t.gpu_memory_bytes = mig.memory_bytes;
            if (try_alt(&t, &alts[n])) {
                snprintf(alts[n].args, sizeof(alts[n].args), "--slice %s", profiles[i]);
                best_mem = mig.memory_bytes;
            }
        }
        if (best_mem != UINT64_MAX)
            n++;
    }
    if (gpu || strcmp(slice_kind, "memory-cap")) {
        struct fatia_serving_device whole;
        char why[256];
        if (fatia_serving_device_lookup(gpu ? gpu : "h200", NULL, &whole, why, sizeof(why)) == 0)
            for (uint32_t tp = 1; tp <= 8; tp *= 2) {
                if (!strcmp(slice_kind, "gpu") && tp <= in->gpus)
                    continue;
                t = *in;
                t.gpus = tp;
                t.gpu_memory_bytes = whole.memory_bytes;
                if (try_alt(&t, &alts[n])) {
                    snprintf(alts[n].args, sizeof(alts[n].args), "--gpu %s --gpus %u",
                             gpu ? gpu : "h200", tp);
                    n++;
                    break;
                }
            }
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(smaller) && n < MAX_ALTS; i++) {
        if (fatia_dtype_weight_bytes(smaller[i]) >= fatia_dtype_weight_bytes(in->weight_dtype))
            continue;
        t = *in;
        t.weight_dtype = smaller[i];
        if (try_alt(&t, &alts[n])) {
            snprintf(alts[n].args, sizeof(alts[n].args), "--dtype %s",
                     fatia_dtype_name(smaller[i]));
            n++;
            break; /* the larger of the smaller types that fits */
        }
    }
    if (in->kv_dtype != FATIA_DTYPE_FP8 && n < MAX_ALTS) {
        t = *in;
        t.kv_dtype = FATIA_DTYPE_FP8;
        if (try_alt(&t, &alts[n])) {
            snprintf(alts[n].args, sizeof(alts[n].args), "--kv-cache-dtype fp8");
            n++;
        }
    }
    return n;
}

/* The shortest sequence the planner accepts (plan.c): the context asked for, else the model's
 * up to FATIA_PLAN_MIN_CONTEXT. */
static uint32_t min_context(const struct fatia_plan_input *in)
{
    uint32_t model = in->model.max_context ? in->model.max_context : 8192;

    return in->context ? in->context : FATIA_MIN(model, (uint32_t)FATIA_PLAN_MIN_CONTEXT);
}

/* How much memory per GPU the plan lacks: 0 when it fits or memory is not what is missing. */
static uint64_t short_by(const struct fatia_plan_input *in, const struct fatia_plan *p)
{
    uint64_t need;

    if (p->fits)
        return 0;
    need = memory_needed(in);
    return need > in->gpu_memory_bytes ? need - in->gpu_memory_bytes : 0;
}

static json_t *plan_json(const struct fatia_plan_input *in, const struct fatia_plan *p,
                         const struct fatia_serving_device *dev, const char *slice_kind,
                         const char *gpu)
{
    char args[512];
    json_t *jargs = json_array(), *o;
    char *save = NULL;

    fatia_serving_plan_vllm_args(in, p, args, sizeof(args));
    for (char *t = strtok_r(args, " ", &save); t; t = strtok_r(NULL, " ", &save))
        json_array_append_new(jargs, json_string(t));
    o = json_pack("{s:s,s:s,s:s,s:{s:s,s:s?,s:s,s:I,s:i},s:b,s:s?}", "model", in->model.name,
                  "dtype", fatia_dtype_name(in->weight_dtype), "kvCacheDtype",
                  fatia_dtype_name(in->kv_dtype), "slice", "kind", slice_kind, "profile",
                  dev->profile[0] ? dev->profile : NULL, "gpu", dev->product[0] ? dev->product : "",
                  "memoryBytesPerGpu", (json_int_t)in->gpu_memory_bytes, "gpus", (int)in->gpus,
                  "fits", p->fits, "reason", p->reason[0] ? p->reason : NULL);
    json_object_set_new(o, "gpuMemoryUtilization",
                        json_real(round(p->gpu_memory_utilization * 100) / 100));
    json_object_set_new(o, "weightsBytes", json_integer((json_int_t)p->weights_bytes));
    json_object_set_new(o, "weightsBytesPerGpu",
                        json_integer((json_int_t)p->weights_bytes_per_gpu));
    json_object_set_new(o, "activationBytes", json_integer((json_int_t)p->activation_bytes));
    json_object_set_new(o, "overheadBytes", json_integer((json_int_t)p->overhead_bytes));
    json_object_set_new(o, "kvBytesPerToken", json_integer((json_int_t)p->kv_bytes_per_token));
    json_object_set_new(o, "kvBytesPerTokenPerGpu",
                        json_integer((json_int_t)p->kv_bytes_per_token_per_gpu));
    json_object_set_new(o, "kvCacheBytes", json_integer((json_int_t)p->kv_cache_bytes));
    json_object_set_new(o, "kvCacheTokens", json_integer((json_int_t)p->kv_cache_tokens));
    json_object_set_new(o, "kvCacheBlocks", json_integer((json_int_t)p->kv_cache_blocks));
    json_object_set_new(o, "maxModelLen", json_integer(p->max_model_len));
    json_object_set_new(o, "maxConcurrentSeqs", json_integer(p->max_concurrent_seqs));
    json_object_set_new(o, "tensorParallelSize", json_integer(p->tp));
    json_object_set_new(o, "maxNumSeqs", json_integer(p->max_num_seqs));
    json_object_set_new(o, "maxNumBatchedTokens", json_integer(p->max_num_batched_tokens));
    json_object_set_new(o, "vllmArgs", jargs);
    if (!p->fits) {
        struct alt alts[MAX_ALTS];
        size_t n = would_fit(in, gpu, slice_kind, alts);
        json_t *ja = json_array();
        json_object_set_new(o, "shortBytesPerGpu", json_integer((json_int_t)short_by(in, p)));
        for (size_t i = 0; i < n; i++)
            json_array_append_new(ja, json_pack("{s:s,s:I}", "args", alts[i].args, "kvCacheTokens",
                                                (json_int_t)alts[i].kv_cache_tokens));
        json_object_set_new(o, "wouldFitWith", ja);
    }
    return o;
}

static void print_table(const struct fatia_plan_input *in, const struct fatia_plan *p,
                        const struct fatia_serving_device *dev, const char *slice_kind,
                        const char *gpu)
{
    const double gib = 1024.0 * 1024 * 1024;
    char args[512];

    printf("model:                 %s (%s weights, %s KV cache)\n", in->model.name,
           fatia_dtype_name(in->weight_dtype), fatia_dtype_name(in->kv_dtype));
    printf("slice:                 %s%s%s%s, %.2f GiB per GPU x %u\n", slice_kind,
           dev->product[0] ? " " : "", dev->product, dev->profile[0] ? "" : "",
           (double)in->gpu_memory_bytes / gib, in->gpus);
    if (dev->profile[0])
        printf("mig profile:           %s\n", dev->profile);
    printf("fits:                  %s%s%s\n", p->fits ? "yes" : "no", p->reason[0] ? ": " : "",
           p->reason);
    printf("weights:               %.2f GiB (%.2f GiB per GPU)\n", (double)p->weights_bytes / gib,
           (double)p->weights_bytes_per_gpu / gib);
    printf("activations:           %.2f GiB per GPU\n", (double)p->activation_bytes / gib);
    printf("overheads:             %.2f GiB per GPU\n", (double)p->overhead_bytes / gib);
    printf("kv per token:          %" PRIu64 " bytes (%" PRIu64 " per GPU)\n",
           p->kv_bytes_per_token, p->kv_bytes_per_token_per_gpu);
    if (p->kv_cache_bytes > 0)
        printf("kv cache:              %.2f GiB per GPU, %" PRIu64 " tokens (%" PRIu64 " blocks)\n",
               (double)p->kv_cache_bytes / gib, p->kv_cache_tokens, p->kv_cache_blocks);
    else
        printf("kv cache:              none: the weights, activations and overheads alone are "
               "%.2f GiB per GPU over what is available\n",
               (double)-p->kv_cache_bytes / gib);
    if (!p->fits) {
        struct alt alts[MAX_ALTS];
        uint64_t lack = short_by(in, p);
        size_t n = would_fit(in, gpu, slice_kind, alts);
        if (lack)
            printf("does not fit by:       %.2f GiB per GPU: it needs %.2f GiB per GPU x %u for "
                   "one sequence of %u tokens at utilization %.2f\n",
                   (double)lack / gib, (double)(lack + in->gpu_memory_bytes) / gib, in->gpus,
                   min_context(in), p->gpu_memory_utilization);
        for (size_t i = 0; i < n; i++)
            printf("%s %s (KV cache of %" PRIu64 " tokens)\n",
                   i ? "                      " : "would fit with:       ", alts[i].args,
                   alts[i].kv_cache_tokens);
        if (!n)
            printf("would fit with:        nothing tried (more GPUs, smaller weights, an fp8 KV "
                   "cache)\n");
    }
    if (p->fits) {
        printf("concurrent sequences:  %u of %u tokens\n", p->max_concurrent_seqs,
               p->max_model_len);
        fatia_serving_plan_vllm_args(in, p, args, sizeof(args));
        printf("vllm flags:            %s\n", args);
    }
}

/* serve plan's options, before the model and the slice are resolved. */
struct plan_args {
    const char *model, *slice, *gpu, *memory, *models_file;
    struct fatia_model_spec hand; /* a shape by hand */
    bool gpus_set;
    uint32_t gpus;
    enum fatia_output out;
};

/* Parses serve plan's options into a and in. -1 to go on, else the exit code to return. */
static int parse_plan_args(int argc, char **argv, struct plan_args *a, struct fatia_plan_input *in)
{
    enum {
        O_PARAMS = 256,
        O_LAYERS,
        O_KVHEADS,
        O_HEADDIM,
        O_HEADS,
        O_HIDDEN,
        O_INTER,
        O_VOCAB,
        O_MAXCTX,
        O_KVDTYPE,
        O_GPUS,
        O_GPU,
        O_MEMORY,
        O_CONTEXT,
        O_UTIL,
        O_SEQS,
        O_BATCHED,
        O_MODELS,
    };
    static const struct option opts[] = {
        {"model", required_argument, NULL, 'm'},
        {"params", required_argument, NULL, O_PARAMS},
        {"layers", required_argument, NULL, O_LAYERS},
        {"kv-heads", required_argument, NULL, O_KVHEADS},
        {"head-dim", required_argument, NULL, O_HEADDIM},
        {"heads", required_argument, NULL, O_HEADS},
        {"hidden", required_argument, NULL, O_HIDDEN},
        {"intermediate", required_argument, NULL, O_INTER},
        {"vocab", required_argument, NULL, O_VOCAB},
        {"max-context", required_argument, NULL, O_MAXCTX},
        {"dtype", required_argument, NULL, 'd'},
        {"kv-cache-dtype", required_argument, NULL, O_KVDTYPE},
        {"slice", required_argument, NULL, 's'},
        {"gpus", required_argument, NULL, O_GPUS},
        {"gpu", required_argument, NULL, O_GPU},
        {"memory", required_argument, NULL, O_MEMORY},
        {"context", required_argument, NULL, O_CONTEXT},
        {"gpu-memory-utilization", required_argument, NULL, O_UTIL},
        {"max-num-seqs", required_argument, NULL, O_SEQS},
        {"max-num-batched-tokens", required_argument, NULL, O_BATCHED},
        {"models-file", required_argument, NULL, O_MODELS},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:d:s:o:h", opts, NULL)) != -1) {
        uint32_t *u32 = NULL;
        uint32_t min = 1;
        switch (c) {
        case 'm':
            a->model = optarg;
            break;
        case O_PARAMS:
            if (fatia_parse_u64(optarg, &a->hand.params) < 0 || !a->hand.params)
                return fatia_cli_usage_error(self(), "--params: expected a positive integer");
            break;
        case O_LAYERS:
            u32 = &a->hand.layers;
            break;
        case O_KVHEADS:
            u32 = &a->hand.kv_heads;
            break;
        case O_HEADDIM:
            u32 = &a->hand.head_dim;
            break;
        case O_HEADS:
            u32 = &a->hand.heads;
            break;
        case O_HIDDEN:
            u32 = &a->hand.hidden;
            break;
        case O_INTER:
            u32 = &a->hand.intermediate;
            break;
        case O_VOCAB:
            u32 = &a->hand.vocab;
            break;
        case O_MAXCTX:
            u32 = &a->hand.max_context;
            break;
        case 'd':
            if (fatia_dtype_parse(optarg, &in->weight_dtype) < 0)
                return fatia_cli_usage_error(self(), "--dtype: expected bf16, fp8, int8 or int4");
            break;
        case O_KVDTYPE:
            if (fatia_dtype_parse(optarg, &in->kv_dtype) < 0 ||
                (in->kv_dtype != FATIA_DTYPE_BF16 && in->kv_dtype != FATIA_DTYPE_FP8))
                return fatia_cli_usage_error(self(), "--kv-cache-dtype: expected bf16 or fp8");
            break;
        case 's':
            a->slice = optarg;
            break;
        case O_GPUS:
            u32 = &a->gpus;
            a->gpus_set = true;
            break;
        case O_GPU:
            a->gpu = optarg;
            break;
        case O_MEMORY:
            a->memory = optarg;
            break;
        case O_CONTEXT:
            u32 = &in->context;
            min = 16;
            break;
        case O_UTIL:
            if (fatia_parse_double(optarg, &in->gpu_memory_utilization) < 0 ||
                !(in->gpu_memory_utilization > 0 && in->gpu_memory_utilization <= 1))
                return fatia_cli_usage_error(self(), "--gpu-memory-utilization: expected (0, 1]");
            break;
        case O_SEQS:
            u32 = &in->max_num_seqs;
            break;
        case O_BATCHED:
            u32 = &in->max_num_batched_tokens;
            break;
        case O_MODELS:
            a->models_file = optarg;
            break;
        case 'o':
            if (fatia_cli_output_opt(self(), optarg, &a->out) < 0)
                return FATIA_EXIT_USAGE;
            break;
        case 'h':
            return fatia_cli_help(self());
        default:
            return fatia_cli_usage_error(self(), "unknown option");
        }
        if (u32 && parse_u32(optarg, min, u32) < 0)
            return fatia_cli_usage_error(self(), "%s: expected an integer >= %u", argv[optind - 1],
                                         min);
    }
    if (optind < argc)
        return fatia_cli_usage_error(self(), "unexpected argument '%s'", argv[optind]);
    return -1;
}

/* The model: from models.yaml (--model) or by hand. -1 to go on, else the exit code. */
static int resolve_model(const struct plan_args *a, struct fatia_plan_input *in)
{
    int r;

    if (a->model) {
        struct fatia_diag diag;
        fatia_diag_init(&diag);
        r = fatia_modelspec_find(a->models_file, a->model, &diag, &in->model);
        fatia_diag_print(&diag, stderr);
        fatia_diag_release(&diag);
        if (r < 0)
            return FATIA_EXIT_FAIL;
    } else if (a->hand.params && a->hand.layers && a->hand.kv_heads && a->hand.head_dim) {
        in->model = a->hand;
        snprintf(in->model.name, sizeof(in->model.name), "custom");
    } else {
        return fatia_cli_usage_error(self(), "give --model NAME, or --params, --layers, "
                                             "--kv-heads and --head-dim");
    }
    return -1;
}

/* The memory per GPU: a MIG profile, a memory cap, or whole GPUs. -1 to go on, else the exit
 * code. */
static int resolve_slice(const struct plan_args *a, struct fatia_plan_input *in,
                         struct fatia_serving_device *dev, const char **ret_kind)
{
    char why[256];

    if (a->slice && a->memory)
        return fatia_cli_usage_error(self(), "--slice and --memory exclude each other");
    if (a->slice && a->gpus_set && a->gpus != 1)
        return fatia_cli_usage_error(self(), "a MIG slice serves one engine: drop --gpus");
    if (a->memory) {
        struct fatia_quantity q;
        int64_t bytes;
        if (fatia_quantity_parse(a->memory, &q, why, sizeof(why)) < 0 ||
            (bytes = fatia_quantity_value(&q)) <= 0)
            return fatia_cli_usage_error(self(), "--memory: '%s' is not a positive quantity",
                                         a->memory);
        in->gpu_memory_bytes = (uint64_t)bytes;
        if (a->gpu && fatia_serving_device_lookup(a->gpu, NULL, dev, why, sizeof(why)) < 0) {
            fprintf(stderr, "fatia serve plan: %s\n", why);
            return FATIA_EXIT_FAIL;
        }
        *ret_kind = "memory-cap";
    } else {
        if (!a->slice && !a->gpu)
            return fatia_cli_usage_error(self(), "give --slice PROFILE, --memory BYTES or "
                                                 "--gpu PRODUCT");
        if (fatia_serving_device_lookup(a->gpu ? a->gpu : "h200", a->slice, dev, why, sizeof(why)) <
            0) {
            fprintf(stderr, "fatia serve plan: %s\n", why);
            return FATIA_EXIT_FAIL;
        }
        in->gpu_memory_bytes = dev->memory_bytes;
        *ret_kind = a->slice ? "mig" : "gpu";
    }
    in->gpus = a->gpus;
    return -1;
}

static int run_plan(int argc, char **argv)
{
    struct plan_args a = {.gpus = 1, .out = FATIA_OUT_TABLE};
    struct fatia_plan_input in = {.weight_dtype = FATIA_DTYPE_BF16, .kv_dtype = FATIA_DTYPE_BF16};
    struct fatia_serving_device dev = {0};
    struct fatia_plan plan;
    const char *slice_kind = NULL;
    int r;

    if ((r = parse_plan_args(argc, argv, &a, &in)) >= 0 || (r = resolve_model(&a, &in)) >= 0 ||
        (r = resolve_slice(&a, &in, &dev, &slice_kind)) >= 0)
        return r;
    if (fatia_serving_plan_compute(&in, &plan) < 0) {
        fprintf(stderr, "fatia serve plan: incomplete model shape\n");
        return FATIA_EXIT_FAIL;
    }
    if (a.out == FATIA_OUT_TABLE) {
        print_table(&in, &plan, &dev, slice_kind, a.gpu);
    } else {
        json_t *o = plan_json(&in, &plan, &dev, slice_kind, a.gpu);
        if (a.out == FATIA_OUT_JSON) {
            /* %.10g: utilization prints as 0.9, not as the nearest double's 17 digits */
            char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
            r = text ? (puts(text), FATIA_EXIT_OK) : FATIA_EXIT_FAIL;
            free(text);
        } else {
            r = fatia_cli_print(o, a.out);
        }
        json_decref(o);
        if (r != FATIA_EXIT_OK)
            return r;
    }
    return plan.fits ? FATIA_EXIT_OK : FATIA_EXIT_FAIL;
}

static const char bench_usage[] =
    "Usage: fatia serve bench --url URL [--workload shared-prefix|azure-trace] [options]\n"
    "\n"
    "Sends an open-loop workload of streamed completions to an OpenAI-compatible server (a\n"
    "gateway or one engine) and reports vLLM bench serve's metrics: TTFT, TPOT, ITL, E2EL\n"
    "(mean and percentiles), request and output-token throughput, and the engines' prefix\n"
    "cache hit ratio. Against engine-sims run --speed N times faster, give the same --speed:\n"
    "every figure is then in engine time.\n"
    "\n"
    "Options:\n"
    "  --url URL                 the server (http://host:port)\n"
    "  --model NAME              model of every request (default llama-3.1-8b)\n"
    "  --speed N                 the servers' speed-up (default 1)\n"
    "  --requests N              requests to send (default: the prompt set / trace window)\n"
    "  --max-concurrency N       cap requests in flight (default: open loop)\n"
    "  --seed N                  (default 1)\n"
    "  --engines URL,...         engines whose prefix-cache counters give the hit ratio\n"
    "  --label TEXT              prefix of the 'name: value unit' lines (default bench)\n"
    "  -o table|json|yaml\n"
    "shared-prefix (llm-d's workload):\n"
    "  --rate R                  Poisson arrivals, requests per engine second (default 10)\n"
    "  --groups N --prompts-per-group N --system-tokens N --question-tokens N\n"
    "  --output-tokens N         (defaults 150, 5, 6000, 1200, 1000)\n"
    "azure-trace (arrivals and lengths from the Azure LLM inference trace):\n"
    "  --trace PATH              AzureLLMInferenceTrace_conv.csv or _code.csv\n"
    "  --trace-offset N          skip the first N requests\n"
    "  --time-scale X            divide the trace's inter-arrival times by X (default 1)\n"
    "  --tenants N --follow P    synthesised shared prefixes (defaults 32, 0.5; docs/serving.md)\n"
    "Goodput (requests within both SLOs per second, vLLM's --goodput, DistServe's):\n"
    "  --slo-ttft MS --slo-itl MS  TTFT and TPOT (mean inter-token latency) bounds; the strict\n"
    "                            attainment holds every inter-token gap to --slo-itl\n";

static void print_dist(const char *label, const char *name, const struct fatia_dist *d)
{
    printf("%s.%s_mean: %.2f ms\n%s.%s_p50: %.2f ms\n%s.%s_p90: %.2f ms\n%s.%s_p99: %.2f ms\n",
           label, name, d->mean * 1e3, label, name, d->p50 * 1e3, label, name, d->p90 * 1e3, label,
           name, d->p99 * 1e3);
}

static json_t *dist_json(const struct fatia_dist *d)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:I}", "meanMs", d->mean * 1e3, "p50Ms", d->p50 * 1e3,
                     "p90Ms", d->p90 * 1e3, "p99Ms", d->p99 * 1e3, "maxMs", d->max * 1e3, "n",
                     (json_int_t)d->n);
}

/* The benchmark's figures: vLLM bench serve's summary and "LABEL.name: value unit" lines, or
 * JSON/YAML. An exit code. */
static int print_bench(const struct fatia_loadgen_result *res, const char *label,
                       enum fatia_output out)
{
    int r = FATIA_EXIT_OK;

    if (out == FATIA_OUT_TABLE) {
        printf("%-24s %u sent, %u completed, %u failed, at most %.0f in flight\n",
               "requests:", res->sent, res->completed, res->failed, res->max_concurrency_seen);
        printf("%-24s %.1f s (engine time), offered %.2f req/s, arrived %.2f req/s\n",
               "duration:", res->duration, res->offered_rate, res->achieved_rate);
        printf("%-24s %.2f req/s, %.0f output tok/s\n", "throughput:", res->request_throughput,
               res->output_throughput);
        if (res->prefix_hit_ratio >= 0)
            printf("%-24s %.3f\n", "prefix cache hit ratio:", res->prefix_hit_ratio);
        printf("%-8s %10s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99", "max");
        {
            const struct fatia_dist *ds[4] = {&res->ttft, &res->tpot, &res->itl, &res->e2el};
            const char *names[4] = {"TTFT", "TPOT", "ITL", "E2EL"};
            for (int i = 0; i < 4; i++)
                printf("%-8s %10.1f %10.1f %10.1f %10.1f %10.1f\n", names[i], ds[i]->mean * 1e3,
                       ds[i]->p50 * 1e3, ds[i]->p90 * 1e3, ds[i]->p99 * 1e3, ds[i]->max * 1e3);
        }
        printf("%s.completed: %u requests\n%s.failed: %u requests\n", label, res->completed, label,
               res->failed);
        printf("%s.good: %u requests\n%s.goodput: %.3f req/s\n%s.slo_attainment: %.4f ratio\n",
               label, res->good, label, res->goodput, label, res->attainment);
        printf("%s.slo_attainment_strict: %.4f ratio\n", label, res->attainment_strict);
        printf("%s.output_tokens: %" PRIu64 " tokens\n", label, res->output_tokens);
        printf("%s.request_throughput: %.3f req/s\n%s.output_throughput: %.1f tok/s\n", label,
               res->request_throughput, label, res->output_throughput);
        printf("%s.offered_rate: %.3f req/s\n%s.arrival_rate: %.3f req/s\n", label,
               res->offered_rate, label, res->achieved_rate);
        if (res->prefix_hit_ratio >= 0)
            printf("%s.prefix_hit_ratio: %.4f ratio\n", label, res->prefix_hit_ratio);
        print_dist(label, "ttft", &res->ttft);
        print_dist(label, "tpot", &res->tpot);
        print_dist(label, "itl", &res->itl);
        print_dist(label, "e2el", &res->e2el);
    } else {
        json_t *o = json_pack(
            "{s:s,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:I,s:o,s:o,s:o,s:o}", "label", label, "sent",
            (int)res->sent, "completed", (int)res->completed, "failed", (int)res->failed,
            "durationSeconds", res->duration, "offeredRate", res->offered_rate, "requestThroughput",
            res->request_throughput, "outputThroughput", res->output_throughput, "outputTokens",
            (json_int_t)res->output_tokens, "ttft", dist_json(&res->ttft), "tpot",
            dist_json(&res->tpot), "itl", dist_json(&res->itl), "e2el", dist_json(&res->e2el));
        if (res->prefix_hit_ratio >= 0)
            json_object_set_new(o, "prefixHitRatio", json_real(res->prefix_hit_ratio));
        json_object_set_new(o, "good", json_integer(res->good));
        json_object_set_new(o, "goodput", json_real(res->goodput));
        json_object_set_new(o, "sloAttainment", json_real(res->attainment));
        json_object_set_new(o, "sloAttainmentStrict", json_real(res->attainment_strict));
        r = fatia_cli_print(o, out);
        json_decref(o);
    }
    return r;
}

static int run_bench(int argc, char **argv)
{
    enum {
        O_URL = 256,
        O_MODEL,
        O_SPEED,
        O_REQUESTS,
        O_CONC,
        O_SEED,
        O_ENGINES,
        O_LABEL,
        O_WORKLOAD,
        O_RATE,
        O_GROUPS,
        O_PPG,
        O_SYS,
        O_Q,
        O_OUT,
        O_TRACE,
        O_TOFF,
        O_TSCALE,
        O_TENANTS,
        O_FOLLOW,
        O_SLOTTFT,
        O_SLOITL,
    };
    static const struct option opts[] = {{"url", required_argument, NULL, O_URL},
                                         {"model", required_argument, NULL, O_MODEL},
                                         {"speed", required_argument, NULL, O_SPEED},
                                         {"requests", required_argument, NULL, O_REQUESTS},
                                         {"max-concurrency", required_argument, NULL, O_CONC},
                                         {"seed", required_argument, NULL, O_SEED},
                                         {"engines", required_argument, NULL, O_ENGINES},
                                         {"label", required_argument, NULL, O_LABEL},
                                         {"workload", required_argument, NULL, O_WORKLOAD},
                                         {"rate", required_argument, NULL, O_RATE},
                                         {"groups", required_argument, NULL, O_GROUPS},
                                         {"prompts-per-group", required_argument, NULL, O_PPG},
                                         {"system-tokens", required_argument, NULL, O_SYS},
                                         {"question-tokens", required_argument, NULL, O_Q},
                                         {"output-tokens", required_argument, NULL, O_OUT},
                                         {"trace", required_argument, NULL, O_TRACE},
                                         {"trace-offset", required_argument, NULL, O_TOFF},
                                         {"time-scale", required_argument, NULL, O_TSCALE},
                                         {"tenants", required_argument, NULL, O_TENANTS},
                                         {"follow", required_argument, NULL, O_FOLLOW},
                                         {"slo-ttft", required_argument, NULL, O_SLOTTFT},
                                         {"slo-itl", required_argument, NULL, O_SLOITL},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const struct fatia_cli_cmd bench_cmd = {"serve bench", NULL, bench_usage, NULL};
    struct fatia_loadgen_config c;
    struct fatia_loadgen_result res;
    enum fatia_output out = FATIA_OUT_TABLE;
    const char *label = "bench";
    char *engines_buf = NULL, *save = NULL;
    const char *engines[256];
    char why[512] = "";
    int ch, r;

    fatia_loadgen_config_default(&c);
    optind = 1;
    while ((ch = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        uint64_t u = 0;
        double d = 0;
        bool is_u = ch == O_REQUESTS || ch == O_CONC || ch == O_SEED || ch == O_GROUPS ||
                    ch == O_PPG || ch == O_SYS || ch == O_Q || ch == O_OUT || ch == O_TOFF ||
                    ch == O_TENANTS;
        bool is_d = ch == O_SPEED || ch == O_RATE || ch == O_TSCALE || ch == O_FOLLOW ||
                    ch == O_SLOTTFT || ch == O_SLOITL;
        if (is_u && (fatia_parse_u64(optarg, &u) < 0 || u > UINT32_MAX))
            return fatia_cli_usage_error(&bench_cmd, "%s: expected an integer", argv[optind - 1]);
        if (is_d && (fatia_parse_double(optarg, &d) < 0 || d < 0))
            return fatia_cli_usage_error(&bench_cmd, "%s: expected a number", argv[optind - 1]);
        switch (ch) {
        case O_URL:
            c.url = optarg;
            break;
        case O_MODEL:
            c.model = optarg;
            break;
        case O_SPEED:
            c.speed = d;
            break;
        case O_REQUESTS:
            c.requests = (uint32_t)u;
            break;
        case O_CONC:
            c.max_concurrency = (uint32_t)u;
            break;
        case O_SEED:
            c.seed = u;
            break;
        case O_ENGINES:
            engines_buf = optarg;
            break;
        case O_LABEL:
            label = optarg;
            break;
        case O_WORKLOAD:
            if (!strcmp(optarg, "shared-prefix"))
                c.workload = FATIA_WORKLOAD_SHARED_PREFIX;
            else if (!strcmp(optarg, "azure-trace"))
                c.workload = FATIA_WORKLOAD_AZURE_TRACE;
            else
                return fatia_cli_usage_error(&bench_cmd,
                                             "--workload: expected shared-prefix or azure-trace");
            break;
        case O_RATE:
            c.rate = d;
            break;
        case O_GROUPS:
            c.groups = (uint32_t)u;
            break;
        case O_PPG:
            c.prompts_per_group = (uint32_t)u;
            break;
        case O_SYS:
            c.system_tokens = (uint32_t)u;
            break;
        case O_Q:
            c.question_tokens = (uint32_t)u;
            break;
        case O_OUT:
            c.output_tokens = (uint32_t)u;
            break;
        case O_TRACE:
            c.trace = optarg;
            break;
        case O_TOFF:
            c.trace_offset = (uint32_t)u;
            break;
        case O_TSCALE:
            c.time_scale = d;
            break;
        case O_TENANTS:
            c.tenants = (uint32_t)u;
            break;
        case O_FOLLOW:
            c.follow = d;
            break;
        case O_SLOTTFT:
            c.slo_ttft = d / 1e3;
            break;
        case O_SLOITL:
            c.slo_itl = d / 1e3;
            break;
        case 'o':
            if (fatia_cli_output_opt(&bench_cmd, optarg, &out) < 0)
                return FATIA_EXIT_USAGE;
            break;
        case 'h':
            return fatia_cli_help(&bench_cmd);
        default:
            return fatia_cli_usage_error(&bench_cmd, "unknown option");
        }
    }
    if (!c.url)
        return fatia_cli_usage_error(&bench_cmd, "give --url URL");
    if (c.speed <= 0 || c.time_scale <= 0 || c.tenants == 0 || c.follow > 1)
        return fatia_cli_usage_error(&bench_cmd, "--speed and --time-scale must be positive, "
                                                 "--tenants at least 1, --follow at most 1");
    if (c.workload == FATIA_WORKLOAD_AZURE_TRACE && !c.trace)
        return fatia_cli_usage_error(&bench_cmd, "azure-trace needs --trace PATH");
    if (engines_buf) {
        engines_buf = fatia_strdup(engines_buf);
        for (char *t = strtok_r(engines_buf, ",", &save); t && c.n_engines < 256;
             t = strtok_r(NULL, ",", &save))
            engines[c.n_engines++] = t;
        c.engines = engines;
    }
    r = fatia_loadgen_run(&c, &res, why, sizeof(why));
    if (r < 0) {
        fprintf(stderr, "fatia serve bench: %s\n", why);
        fatia_free(engines_buf);
        return FATIA_EXIT_FAIL;
    }
    r = print_bench(&res, label, out);
    fatia_free(engines_buf);
    if (r != FATIA_EXIT_OK)
        return r;
    return res.failed ? FATIA_EXIT_FAIL : FATIA_EXIT_OK;
}

static int run(int argc, char **argv)
{
    const char *near;

    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return argc < 2 ? fatia_cli_usage_error(self(), "give a subcommand: plan or bench")
                        : fatia_cli_help(self());
    if (!strcmp(argv[1], "plan"))
        return run_plan(argc - 1, argv + 1);
    if (!strcmp(argv[1], "bench"))
        return run_bench(argc - 1, argv + 1);
    near = fatia_cli_nearest(argv[1], (const char *const[]){"plan", "bench"}, 2);
    if (near)
        return fatia_cli_usage_error(self(), "unknown subcommand '%s': did you mean '%s'?", argv[1],
                                     near);
    return fatia_cli_usage_error(self(), "unknown subcommand '%s': expected plan or bench",
                                 argv[1]);
}

const struct fatia_cli_cmd fatia_cmd_serve = {
    .name = "serve",
    .summary = "plan model servers for a slice (serve plan), benchmark a serving endpoint",
    .usage = usage,
    .run = run,
};

static const struct fatia_cli_cmd *self(void)
{
    return &fatia_cmd_serve;
}
