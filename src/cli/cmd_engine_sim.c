/*
 * cli/cmd_engine_sim.c: `fatia engine-sim`: runs one simulated vLLM replica (gateway/enginesim.h)
 * until SIGINT or SIGTERM.
 *
 * Defaults: Llama-3.1-8B in bf16 on a whole H200, configured as `fatia serve plan` would start
 * vLLM there, with the timing terms measured on the H200 (docs/serving-calibration.json, compiled
 * in); every term can be overridden. --print-config shows the effective parameters and exits.
 *
 * One function per step: parse_opts (the command line), configure (model, device, sizing, then
 * the overrides), print_config or serve (which ends in serve_loop.c's announce-and-run, shared
 * with the gateway).
 */
#include "base/compat.h"

#include <event2/event.h>
#include <getopt.h>

#include "base/error.h"
#include "base/log.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/serve_loop.h"
#include "gateway/calibration.h"
#include "gateway/enginesim.h"
#include "gateway/tenants.h"
#include "model/quantity.h"

static const char usage[] =
    "Usage: fatia engine-sim --listen ADDR:PORT [--model NAME] [--gpu PRODUCT] [--speed N]\n"
    "                        [options]\n"
    "\n"
    "An OpenAI-compatible server that behaves like one vLLM replica on a slice: paged KV\n"
    "blocks of 16 tokens, automatic prefix caching with LRU eviction, continuous batching with\n"
    "chunked prefill, a roofline timing model calibrated on an H200, streamed answers with\n"
    "real timing, and vLLM's /metrics. Tokens are 4 characters of prompt text.\n"
    "\n"
    "Options:\n"
    "  --listen ADDR:PORT          where to listen (required)\n"
    "  --model NAME                model shape from models.yaml (default llama-3.1-8b)\n"
    "  --served-model-name NAME    the name clients use (default: --model)\n"
    "  --gpu PRODUCT               GPU product (default h200)\n"
    "  --slice PROFILE             run on a MIG profile of the GPU (memory and speed scale)\n"
    "  --memory BYTES              memory the engine sees instead (time-slice or MPS share)\n"
    "  --gpus N                    tensor-parallel size (default 1)\n"
    "  --dtype T, --kv-cache-dtype T   bf16 (default), fp8, int8, int4 / bf16, fp8\n"
    "  --speed N                   run the clock N times faster (default 1)\n"
    "  --max-num-seqs N, --max-num-batched-tokens N, --max-model-len N,\n"
    "  --gpu-memory-utilization F  scheduler and memory settings (default: the planner's)\n"
    "  --num-gpu-blocks N          KV cache size in 16-token blocks (default: the planner's)\n"
    "  --no-prefix-caching         disable automatic prefix caching\n"
    "  --flops F, --hbm-bandwidth B, --kv-bandwidth B, --step-overhead SECONDS\n"
    "                              timing terms (default: the calibration, scaled to the slice)\n"
    "  --default-max-tokens N      output length when a request gives none (default 16)\n"
    "  --stream-interval N         send streamed tokens N at a time after the first (vLLM's\n"
    "                              --stream-interval; default 1)\n"
    "  --engine-timestamps         add the engine's virtual times to streamed chunks\n"
    "                              (\"engine_arrival\", \"engine_time\"; for benchmarks)\n"
    "  --models-file PATH          another models.yaml\n"
    "  --port-file PATH            write the port listened on (for --listen ADDR:0)\n"
    "  --reuse-port                share the port with other replicas (SO_REUSEPORT: model\n"
    "                              servers of one InferenceService on the host's network)\n"
    "  --api-keys FILE             require Authorization: Bearer KEY on /v1/ (KEY TENANT per\n"
    "                              line); without it, listening beyond loopback warns\n"
    "  --role both|prefill|decode  prefill/decode disaggregation (default both: aggregated);\n"
    "                              a decode server honours x-prefiller-host-port (llm-d's\n"
    "                              sidecar flow: prefill there, KV pulled over the link)\n"
    "  --kv-link nvlink|rdma       the decode server's inbound KV link (default nvlink:\n"
    "                              328 GB/s, 0.5 ms; rdma: 45 GB/s, 0.5 ms)\n"
    "  --kv-link-bandwidth B, --kv-link-latency SECONDS   the link's terms by hand\n"
    "  --drain-timeout D           on SIGTERM, stop taking connections and answer the\n"
    "                              requests held, up to D (default 30s; a second signal stops\n"
    "                              at once)\n"
    "  --print-config              print the effective configuration as JSON and exit\n"
    "\n"
    "Exit status: 0 stopped by a signal, 1 cannot start, 2 usage.\n";

static const struct fatia_cli_cmd *self(void);

/* The command line. */
struct es_opts {
    struct fatia_enginesim_config cfg;
    struct fatia_plan_input in;
    const char *model, *gpu, *slice, *models_file, *port_file, *keys_file;
    double flops, hbm, kvbw, over, speed, link_bw, link_lat;
    uint64_t blocks, seqs, batched, mml, defmax;
    bool print, no_pc;
    int64_t drain_usec;
};

#define GO_ON (-1) /* parse_opts: no exit status yet, go on */

/* Parses argv into *o. GO_ON, or the exit status (help, usage error). */
enum {
    O_LISTEN = 256,
    O_SERVED,
    O_GPU,
    O_SLICE,
    O_MEMORY,
    O_GPUS,
    O_DTYPE,
    O_KVDTYPE,
    O_SPEED,
    O_SEQS,
    O_BATCHED,
    O_MML,
    O_UTIL,
    O_BLOCKS,
    O_NOPC,
    O_FLOPS,
    O_HBM,
    O_KVBW,
    O_OVER,
    O_DEFMAX,
    O_MODELS,
    O_PRINT,
    O_STAMPS,
    O_SINT,
    O_KEYS,
    O_REUSE,
    O_ROLE,
    O_LINK,
    O_LINKBW,
    O_LINKLAT,
    O_DRAIN,
};
static const struct option opts[] = {{"listen", required_argument, NULL, O_LISTEN},
                                     {"model", required_argument, NULL, 'm'},
                                     {"served-model-name", required_argument, NULL, O_SERVED},
                                     {"gpu", required_argument, NULL, O_GPU},
                                     {"slice", required_argument, NULL, O_SLICE},
                                     {"memory", required_argument, NULL, O_MEMORY},
                                     {"gpus", required_argument, NULL, O_GPUS},
                                     {"dtype", required_argument, NULL, O_DTYPE},
                                     {"kv-cache-dtype", required_argument, NULL, O_KVDTYPE},
                                     {"speed", required_argument, NULL, O_SPEED},
                                     {"max-num-seqs", required_argument, NULL, O_SEQS},
                                     {"max-num-batched-tokens", required_argument, NULL, O_BATCHED},
                                     {"max-model-len", required_argument, NULL, O_MML},
                                     {"gpu-memory-utilization", required_argument, NULL, O_UTIL},
                                     {"num-gpu-blocks", required_argument, NULL, O_BLOCKS},
                                     {"no-prefix-caching", no_argument, NULL, O_NOPC},
                                     {"flops", required_argument, NULL, O_FLOPS},
                                     {"hbm-bandwidth", required_argument, NULL, O_HBM},
                                     {"kv-bandwidth", required_argument, NULL, O_KVBW},
                                     {"step-overhead", required_argument, NULL, O_OVER},
                                     {"default-max-tokens", required_argument, NULL, O_DEFMAX},
                                     {"models-file", required_argument, NULL, O_MODELS},
                                     {"print-config", no_argument, NULL, O_PRINT},
                                     {"engine-timestamps", no_argument, NULL, O_STAMPS},
                                     {"stream-interval", required_argument, NULL, O_SINT},
                                     {"port-file", required_argument, NULL, 'P'},
                                     {"api-keys", required_argument, NULL, O_KEYS},
                                     {"reuse-port", no_argument, NULL, O_REUSE},
                                     {"role", required_argument, NULL, O_ROLE},
                                     {"kv-link", required_argument, NULL, O_LINK},
                                     {"kv-link-bandwidth", required_argument, NULL, O_LINKBW},
                                     {"kv-link-latency", required_argument, NULL, O_LINKLAT},
                                     {"drain-timeout", required_argument, NULL, O_DRAIN},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};

static int parse_opts(int argc, char **argv, struct es_opts *o)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->in = (struct fatia_plan_input){
        .weight_dtype = FATIA_DTYPE_BF16, .kv_dtype = FATIA_DTYPE_BF16, .gpus = 1};
    o->model = "llama-3.1-8b";
    o->gpu = "h200";
    o->over = -1;
    o->speed = 1;
    o->defmax = 16;
    o->link_lat = -1;
    o->drain_usec = 30 * FATIA_USEC_PER_SEC;
    fatia_kvxfer_preset("nvlink", &o->cfg.kv_link);
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        double *dv = NULL;
        uint64_t *uv = NULL;
        switch (c) {
        case O_LISTEN:
            o->cfg.listen = optarg;
            break;
        case 'm':
            o->model = optarg;
            break;
        case O_SERVED:
            o->cfg.served_model = optarg;
            break;
        case O_GPU:
            o->gpu = optarg;
            break;
        case O_SLICE:
            o->slice = optarg;
            break;
        case O_MEMORY: {
            struct fatia_quantity q;
            if (fatia_quantity_parse(optarg, &q, NULL, 0) < 0 || fatia_quantity_value(&q) <= 0)
                return fatia_cli_usage_error(self(), "--memory: '%s' is not a quantity", optarg);
            o->in.gpu_memory_bytes = (uint64_t)fatia_quantity_value(&q);
            break;
        }
        case O_GPUS:
            if (fatia_parse_int(optarg, 1, 64, (int *)&o->in.gpus) < 0)
                return fatia_cli_usage_error(self(), "--gpus: expected 1..64");
            break;
        case O_DTYPE:
            if (fatia_dtype_parse(optarg, &o->in.weight_dtype) < 0)
                return fatia_cli_usage_error(self(), "--dtype: expected bf16, fp8, int8 or int4");
            break;
        case O_KVDTYPE:
            if (fatia_dtype_parse(optarg, &o->in.kv_dtype) < 0 ||
                (o->in.kv_dtype != FATIA_DTYPE_BF16 && o->in.kv_dtype != FATIA_DTYPE_FP8))
                return fatia_cli_usage_error(self(), "--kv-cache-dtype: expected bf16 or fp8");
            break;
        case O_SPEED:
            dv = &o->speed;
            break;
        case O_SEQS:
            uv = &o->seqs;
            break;
        case O_BATCHED:
            uv = &o->batched;
            break;
        case O_MML:
            uv = &o->mml;
            break;
        case O_UTIL:
            if (fatia_parse_double(optarg, &o->in.gpu_memory_utilization) < 0 ||
                !(o->in.gpu_memory_utilization > 0 && o->in.gpu_memory_utilization <= 1))
                return fatia_cli_usage_error(self(), "--gpu-memory-utilization: expected (0, 1]");
            break;
        case O_BLOCKS:
            uv = &o->blocks;
            break;
        case O_NOPC:
            o->no_pc = true;
            break;
        case O_FLOPS:
            dv = &o->flops;
            break;
        case O_HBM:
            dv = &o->hbm;
            break;
        case O_KVBW:
            dv = &o->kvbw;
            break;
        case O_OVER:
            dv = &o->over;
            break;
        case O_DEFMAX:
            uv = &o->defmax;
            break;
        case O_MODELS:
            o->models_file = optarg;
            break;
        case O_PRINT:
            o->print = true;
            break;
        case O_STAMPS:
            o->cfg.timestamps = true;
            break;
        case O_SINT:
            if (fatia_parse_int(optarg, 1, 1000, (int *)&o->cfg.stream_interval) < 0)
                return fatia_cli_usage_error(self(), "--stream-interval: expected 1..1000");
            break;
        case 'P':
            o->port_file = optarg;
            break;
        case O_KEYS:
            o->keys_file = optarg;
            break;
        case O_REUSE:
            o->cfg.reuse_port = true;
            break;
        case O_ROLE:
            if (fatia_engine_role_parse(optarg, &o->cfg.role) < 0)
                return fatia_cli_usage_error(self(), "--role: expected both, prefill or decode");
            break;
        case O_LINK:
            if (fatia_kvxfer_preset(optarg, &o->cfg.kv_link) < 0)
                return fatia_cli_usage_error(self(), "--kv-link: expected nvlink or rdma");
            break;
        case O_LINKBW:
            dv = &o->link_bw;
            break;
        case O_LINKLAT:
            dv = &o->link_lat;
            break;
        case O_DRAIN:
            if (fatia_parse_duration_usec(optarg, &o->drain_usec) < 0 || o->drain_usec < 0)
                return fatia_cli_usage_error(self(), "--drain-timeout: expected a duration");
            break;
        case 'h':
            return fatia_cli_help(self());
        default:
            return fatia_cli_usage_error(self(), "unknown option");
        }
        if (dv &&
            (fatia_parse_double(optarg, dv) < 0 || *dv < 0 || (dv == &o->speed && *dv < 1e-3)))
            return fatia_cli_usage_error(self(), "%s: expected a non-negative number",
                                         argv[optind - 1]);
        if (uv && (fatia_parse_u64(optarg, uv) < 0 || !*uv || *uv > UINT32_MAX))
            return fatia_cli_usage_error(self(), "%s: expected a positive integer",
                                         argv[optind - 1]);
    }
    if (optind < argc)
        return fatia_cli_usage_error(self(), "unexpected argument '%s'", argv[optind]);
    if (!o->cfg.listen && !o->print)
        return fatia_cli_usage_error(self(), "give --listen ADDR:PORT");
    if (o->slice && o->in.gpu_memory_bytes)
        return fatia_cli_usage_error(self(), "--slice and --memory exclude each other");
    return GO_ON;
}

/* The engine's configuration: the model and device looked up, sized as `fatia serve plan` would
 * start vLLM there, then the command line's overrides. 0, or FATIA_EXIT_FAIL (said why). */
static int configure(struct es_opts *o, struct fatia_serving_device *dev, struct fatia_plan *plan)
{
    struct fatia_enginesim_config *cfg = &o->cfg;
    struct fatia_diag diag;
    char why[256];
    int r;

    fatia_diag_init(&diag);
    r = fatia_modelspec_find(o->models_file, o->model, &diag, &o->in.model);
    fatia_diag_print(&diag, stderr);
    fatia_diag_release(&diag);
    if (r < 0)
        return FATIA_EXIT_FAIL;
    if (fatia_serving_device_lookup(o->gpu, o->slice, dev, why, sizeof(why)) < 0) {
        fprintf(stderr, "fatia engine-sim: %s\n", why);
        return FATIA_EXIT_FAIL;
    }
    o->in.max_num_seqs = (uint32_t)o->seqs;
    o->in.max_num_batched_tokens = (uint32_t)o->batched;
    o->in.context = (uint32_t)o->mml;
    if (fatia_engine_config_for(&o->in, dev, &cfg->engine, plan, why, sizeof(why)) < 0) {
        fprintf(stderr, "fatia engine-sim: %s does not fit: %s\n", o->in.model.name, why);
        return FATIA_EXIT_FAIL;
    }
    if (strcmp(dev->product, FATIA_CALIB_GPU) && (o->flops <= 0 || o->hbm <= 0))
        fatia_warn("engine-sim: the timing model is calibrated on the %s only; %s uses its "
                   "numbers unless --flops and --hbm-bandwidth are given",
                   FATIA_CALIB_GPU, dev->product);
    if (o->blocks)
        cfg->engine.num_gpu_blocks = o->blocks;
    if (o->no_pc)
        cfg->engine.prefix_caching = false;
    if (o->flops > 0)
        cfg->engine.flops = o->flops;
    if (o->hbm > 0)
        cfg->engine.hbm_bw = o->hbm;
    if (o->kvbw > 0)
        cfg->engine.kv_bw = o->kvbw;
    if (o->over >= 0)
        cfg->engine.step_overhead = o->over;
    if (o->link_bw > 0)
        cfg->kv_link.bandwidth = o->link_bw;
    if (o->link_lat >= 0)
        cfg->kv_link.latency = o->link_lat;
    cfg->speed = o->speed;
    cfg->default_max_tokens = (uint32_t)o->defmax;
    cfg->gpu_memory_utilization = plan->gpu_memory_utilization;
    if (!cfg->served_model)
        cfg->served_model = o->model;
    return 0;
}

/* --print-config: the effective parameters as JSON. */
static void print_config(const struct es_opts *o, const struct fatia_serving_device *dev)
{
    const struct fatia_engine_config *e = &o->cfg.engine;
    printf("{\n  \"model\": \"%s\",\n  \"servedModelName\": \"%s\",\n  \"gpu\": \"%s\",\n"
           "  \"slice\": \"%s\",\n  \"memoryBytesPerGpu\": %" PRIu64
           ",\n  \"tensorParallelSize\": %u,\n"
           "  \"numGpuBlocks\": %" PRIu64 ",\n  \"blockSize\": %u,\n"
           "  \"kvCacheTokens\": %" PRIu64 ",\n  \"maxNumSeqs\": %u,\n"
           "  \"maxNumBatchedTokens\": %u,\n  \"maxModelLen\": %u,\n"
           "  \"prefixCaching\": %s,\n  \"flopsPerSecond\": %.6g,\n"
           "  \"hbmBytesPerSecond\": %.6g,\n  \"kvReadBytesPerSecond\": %.6g,\n"
           "  \"stepOverheadSeconds\": %.6g,\n  \"speed\": %g,\n"
           "  \"role\": \"%s\",\n  \"kvLink\": {\"bandwidthBytesPerSecond\": %.6g, "
           "\"latencySeconds\": %.6g},\n"
           "  \"calibration\": \"%s on %s\",\n"
           "  \"decodeStepSeconds\": {\"batch1ctx1k\": %.6f, \"batch64ctx1k\": %.6f},\n"
           "  \"prefillSeconds\": {\"tokens2048\": %.6f, \"tokens8192\": %.6f}\n}\n",
           o->in.model.name, o->cfg.served_model, dev->product,
           dev->profile[0] ? dev->profile : "gpu",
           o->in.gpu_memory_bytes ? o->in.gpu_memory_bytes : dev->memory_bytes, e->tp,
           e->num_gpu_blocks, e->block_tokens, e->num_gpu_blocks * e->block_tokens, e->max_num_seqs,
           e->max_num_batched_tokens, e->max_model_len, e->prefix_caching ? "true" : "false",
           e->flops, e->hbm_bw, e->kv_bw, e->step_overhead, o->cfg.speed,
           fatia_engine_role_name(o->cfg.role), o->cfg.kv_link.bandwidth, o->cfg.kv_link.latency,
           FATIA_CALIB_MEASURED, FATIA_CALIB_GPU, fatia_engine_step_seconds(e, 1, 1, 0, 1024),
           fatia_engine_step_seconds(e, 64, 64, 0, 64 * 1024),
           fatia_engine_step_seconds(
               e, 2048, 1,
               4.0 * e->model.layers * e->model.heads * e->model.head_dim * 2048.0 * 1024.0, 2048),
           fatia_engine_step_seconds(
               e, 8192, 1,
               4.0 * e->model.layers * e->model.heads * e->model.head_dim * 8192.0 * 4096.0, 8192));
}

/* Whether a --listen address is reachable from this host only. */
static bool loopback_only(const char *listen)
{
    return fatia_str_has_prefix(listen, "127.") || fatia_str_has_prefix(listen, "localhost:") ||
           fatia_str_has_prefix(listen, "[::1]:");
}

static void drain_start(void *ud)
{
    fatia_enginesim_drain(ud);
}

static size_t drain_busy(void *ud)
{
    return fatia_enginesim_inflight(ud);
}

/* Builds the server and runs it until a signal (SIGTERM: drained first). */
static int serve(struct es_opts *o)
{
    struct event_config *ec = event_config_new();
    struct event_base *base = NULL;
    struct fatia_enginesim *sim = NULL;
    char detail[256];
    int r, rc = FATIA_EXIT_FAIL;

    /* timerfd-backed timers: steps of a sped-up engine last well under a millisecond */
    if (ec)
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    base = ec ? event_base_new_with_config(ec) : NULL;
    if (ec)
        event_config_free(ec);
    if (!base)
        return FATIA_EXIT_FAIL;
    if (o->keys_file) {
        char why[512];
        if (fatia_gateway_tenants_load(o->keys_file, 0, &o->cfg.tenants, why, sizeof(why)) < 0) {
            fprintf(stderr, "fatia engine-sim: --api-keys: %s\n", why);
            goto out;
        }
    } else if (!loopback_only(o->cfg.listen)) {
        fatia_warn("engine-sim: listening on %s without --api-keys: anyone who reaches it may "
                   "use it",
                   o->cfg.listen);
    }
    r = fatia_enginesim_new(base, &o->cfg, &sim);
    if (r < 0) {
        fprintf(stderr, "fatia engine-sim: cannot listen on '%s': %s\n", o->cfg.listen,
                fatia_strerror(r));
        goto out;
    }
    snprintf(detail, sizeof(detail), "model %s, %" PRIu64 " KV blocks, max %u seqs, speed %g%s%s%s",
             o->cfg.served_model, o->cfg.engine.num_gpu_blocks, o->cfg.engine.max_num_seqs,
             o->cfg.speed, o->cfg.role != FATIA_ROLE_BOTH ? ", role " : "",
             o->cfg.role != FATIA_ROLE_BOTH ? fatia_engine_role_name(o->cfg.role) : "",
             o->cfg.tenants ? ", API keys required" : "");
    {
        struct fatia_cli_drain drain = {drain_start, drain_busy, sim, o->drain_usec};
        rc = fatia_cli_serve_loop_drain(base, "engine-sim", o->cfg.listen,
                                        fatia_enginesim_port(sim), o->port_file, detail, &drain);
    }
out:
    fatia_enginesim_free(sim);
    event_base_free(base);
    fatia_gateway_tenants_free(o->cfg.tenants);
    return rc;
}

static int run(int argc, char **argv)
{
    struct es_opts o;
    struct fatia_serving_device dev;
    struct fatia_plan plan;
    int rc = parse_opts(argc, argv, &o);

    if (rc != GO_ON)
        return rc;
    if ((rc = configure(&o, &dev, &plan)) != 0)
        return rc;
    if (o.print) {
        print_config(&o, &dev);
        return FATIA_EXIT_OK;
    }
    return serve(&o);
}

const struct fatia_cli_cmd fatia_cmd_engine_sim = {
    .name = "engine-sim",
    .summary = "simulate one vLLM replica (OpenAI API, prefix cache, batching, H200 timing)",
    .usage = usage,
    .run = run,
};

static const struct fatia_cli_cmd *self(void)
{
    return &fatia_cmd_engine_sim;
}
