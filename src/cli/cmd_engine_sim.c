/*
 * cli/cmd_engine_sim.c: `fatia engine-sim`: runs one simulated vLLM replica (gateway/enginesim.h)
 * until SIGINT or SIGTERM.
 *
 * Defaults: Llama-3.1-8B in bf16 on a whole H200, configured as `fatia serve plan` would start
 * vLLM there, with the timing terms measured on the H200 (docs/serving-calibration.json, compiled
 * in); every term can be overridden. --print-config shows the effective parameters and exits.
 */
#include "base/compat.h"

#include <sys/resource.h>

#include <event2/event.h>
#include <getopt.h>
#include <signal.h>

#include "base/error.h"
#include "base/log.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "gateway/calibration.h"
#include "gateway/enginesim.h"
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
    "  --print-config              print the effective configuration as JSON and exit\n"
    "\n"
    "Exit status: 0 stopped by a signal, 1 cannot start, 2 usage.\n";

static const struct fatia_cli_cmd *self(void);

/* One descriptor per client and per upstream connection: take the hard limit. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

/* --print-config: the effective configuration as JSON on stdout. */
static void print_config(const struct fatia_enginesim_config *cfg,
                         const struct fatia_plan_input *in, const struct fatia_serving_device *dev)
{
    const struct fatia_engine_config *e = &cfg->engine;

    printf("{\n  \"model\": \"%s\",\n  \"servedModelName\": \"%s\",\n  \"gpu\": \"%s\",\n"
           "  \"slice\": \"%s\",\n  \"memoryBytesPerGpu\": %" PRIu64
           ",\n  \"tensorParallelSize\": %u,\n"
           "  \"numGpuBlocks\": %" PRIu64 ",\n  \"blockSize\": %u,\n"
           "  \"kvCacheTokens\": %" PRIu64 ",\n  \"maxNumSeqs\": %u,\n"
           "  \"maxNumBatchedTokens\": %u,\n  \"maxModelLen\": %u,\n"
           "  \"prefixCaching\": %s,\n  \"flopsPerSecond\": %.6g,\n"
           "  \"hbmBytesPerSecond\": %.6g,\n  \"kvReadBytesPerSecond\": %.6g,\n"
           "  \"stepOverheadSeconds\": %.6g,\n  \"speed\": %g,\n"
           "  \"calibration\": \"%s on %s\",\n"
           "  \"decodeStepSeconds\": {\"batch1ctx1k\": %.6f, \"batch64ctx1k\": %.6f},\n"
           "  \"prefillSeconds\": {\"tokens2048\": %.6f, \"tokens8192\": %.6f}\n}\n",
           in->model.name, cfg->served_model, dev->product, dev->profile[0] ? dev->profile : "gpu",
           in->gpu_memory_bytes ? in->gpu_memory_bytes : dev->memory_bytes, e->tp,
           e->num_gpu_blocks, e->block_tokens, e->num_gpu_blocks * e->block_tokens, e->max_num_seqs,
           e->max_num_batched_tokens, e->max_model_len, e->prefix_caching ? "true" : "false",
           e->flops, e->hbm_bw, e->kv_bw, e->step_overhead, cfg->speed, FATIA_CALIB_MEASURED,
           FATIA_CALIB_GPU, fatia_engine_step_seconds(e, 1, 1, 0, 1024),
           fatia_engine_step_seconds(e, 64, 64, 0, 64 * 1024),
           fatia_engine_step_seconds(
               e, 2048, 1,
               4.0 * e->model.layers * e->model.heads * e->model.head_dim * 2048.0 * 1024.0, 2048),
           fatia_engine_step_seconds(
               e, 8192, 1,
               4.0 * e->model.layers * e->model.heads * e->model.head_dim * 8192.0 * 4096.0, 8192));
}

/* Listens and serves until SIGINT or SIGTERM. An exit code. */
static int serve(const struct fatia_enginesim_config *cfg, const char *port_file)
{
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL;
    struct fatia_enginesim *sim = NULL;
    int r, rc = FATIA_EXIT_FAIL;

    {
        /* timerfd-backed timers: steps of a sped-up engine last well under a millisecond */
        struct event_config *ec = event_config_new();
        if (ec)
            event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        base = ec ? event_base_new_with_config(ec) : NULL;
        if (ec)
            event_config_free(ec);
    }
    if (!base)
        return FATIA_EXIT_FAIL;
    r = fatia_enginesim_new(base, cfg, &sim);
    if (r < 0) {
        fprintf(stderr, "fatia engine-sim: cannot listen on '%s': %s\n", cfg->listen,
                fatia_strerror(r));
        goto out;
    }
    if (port_file) {
        FILE *pf_out = fopen(port_file, "we");
        if (!pf_out || fprintf(pf_out, "%d\n", fatia_enginesim_port(sim)) < 0 ||
            fclose(pf_out) != 0) {
            fprintf(stderr, "fatia engine-sim: cannot write '%s'\n", port_file);
            goto out;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    fatia_log(FATIA_LOG_INFO,
              "engine-sim: %s on port %d, %" PRIu64 " KV blocks, max %u seqs, speed %g",
              cfg->served_model, fatia_enginesim_port(sim), cfg->engine.num_gpu_blocks,
              cfg->engine.max_num_seqs, cfg->speed);
    event_base_dispatch(base);
    rc = FATIA_EXIT_OK;
out:
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    fatia_enginesim_free(sim);
    event_base_free(base);
    return rc;
}

static int run(int argc, char **argv)
{
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
    };
    static const struct option opts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct fatia_enginesim_config cfg = {0};
    struct fatia_plan_input in = {
        .weight_dtype = FATIA_DTYPE_BF16, .kv_dtype = FATIA_DTYPE_BF16, .gpus = 1};
    struct fatia_serving_device dev;
    struct fatia_plan plan;
    struct fatia_diag diag;
    const char *model = "llama-3.1-8b", *gpu = "h200", *slice = NULL, *models_file = NULL;
    double flops = 0, hbm = 0, kvbw = 0, over = -1, speed = 1;
    uint64_t blocks = 0, seqs = 0, batched = 0, mml = 0, defmax = 16;
    bool print = false, no_pc = false;
    const char *port_file = NULL;
    char why[256];
    int c, r;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:h", opts, NULL)) != -1) {
        double *dv = NULL;
        uint64_t *uv = NULL;
        switch (c) {
        case O_LISTEN:
            cfg.listen = optarg;
            break;
        case 'm':
            model = optarg;
            break;
        case O_SERVED:
            cfg.served_model = optarg;
            break;
        case O_GPU:
            gpu = optarg;
            break;
        case O_SLICE:
            slice = optarg;
            break;
        case O_MEMORY: {
            struct fatia_quantity q;
            if (fatia_quantity_parse(optarg, &q, NULL, 0) < 0 || fatia_quantity_value(&q) <= 0)
                return fatia_cli_usage_error(self(), "--memory: '%s' is not a quantity", optarg);
            in.gpu_memory_bytes = (uint64_t)fatia_quantity_value(&q);
            break;
        }
        case O_GPUS:
            if (fatia_parse_int(optarg, 1, 64, (int *)&in.gpus) < 0)
                return fatia_cli_usage_error(self(), "--gpus: expected 1..64");
            break;
        case O_DTYPE:
            if (fatia_dtype_parse(optarg, &in.weight_dtype) < 0)
                return fatia_cli_usage_error(self(), "--dtype: expected bf16, fp8, int8 or int4");
            break;
        case O_KVDTYPE:
            if (fatia_dtype_parse(optarg, &in.kv_dtype) < 0 ||
                (in.kv_dtype != FATIA_DTYPE_BF16 && in.kv_dtype != FATIA_DTYPE_FP8))
                return fatia_cli_usage_error(self(), "--kv-cache-dtype: expected bf16 or fp8");
            break;
        case O_SPEED:
            dv = &speed;
            break;
        case O_SEQS:
            uv = &seqs;
            break;
        case O_BATCHED:
            uv = &batched;
            break;
        case O_MML:
            uv = &mml;
            break;
        case O_UTIL:
            if (fatia_parse_double(optarg, &in.gpu_memory_utilization) < 0 ||
                !(in.gpu_memory_utilization > 0 && in.gpu_memory_utilization <= 1))
                return fatia_cli_usage_error(self(), "--gpu-memory-utilization: expected (0, 1]");
            break;
        case O_BLOCKS:
            uv = &blocks;
            break;
        case O_NOPC:
            no_pc = true;
            break;
        case O_FLOPS:
            dv = &flops;
            break;
        case O_HBM:
            dv = &hbm;
            break;
        case O_KVBW:
            dv = &kvbw;
            break;
        case O_OVER:
            dv = &over;
            break;
        case O_DEFMAX:
            uv = &defmax;
            break;
        case O_MODELS:
            models_file = optarg;
            break;
        case O_PRINT:
            print = true;
            break;
        case O_STAMPS:
            cfg.timestamps = true;
            break;
        case O_SINT:
            if (fatia_parse_int(optarg, 1, 1000, (int *)&cfg.stream_interval) < 0)
                return fatia_cli_usage_error(self(), "--stream-interval: expected 1..1000");
            break;
        case 'P':
            port_file = optarg;
            break;
        case 'h':
            return fatia_cli_help(self());
        default:
            return fatia_cli_usage_error(self(), "unknown option");
        }
        if (dv && (fatia_parse_double(optarg, dv) < 0 || *dv < 0 || (dv == &speed && *dv < 1e-3)))
            return fatia_cli_usage_error(self(), "%s: expected a non-negative number",
                                         argv[optind - 1]);
        if (uv && (fatia_parse_u64(optarg, uv) < 0 || !*uv || *uv > UINT32_MAX))
            return fatia_cli_usage_error(self(), "%s: expected a positive integer",
                                         argv[optind - 1]);
    }
    if (optind < argc)
        return fatia_cli_usage_error(self(), "unexpected argument '%s'", argv[optind]);
    if (!cfg.listen && !print)
        return fatia_cli_usage_error(self(), "give --listen ADDR:PORT");
    if (slice && in.gpu_memory_bytes)
        return fatia_cli_usage_error(self(), "--slice and --memory exclude each other");

    fatia_diag_init(&diag);
    r = fatia_model_spec_find(models_file, model, &diag, &in.model);
    fatia_diag_print(&diag, stderr);
    fatia_diag_release(&diag);
    if (r < 0)
        return FATIA_EXIT_FAIL;
    if (fatia_serving_device_lookup(gpu, slice, &dev, why, sizeof(why)) < 0) {
        fprintf(stderr, "fatia engine-sim: %s\n", why);
        return FATIA_EXIT_FAIL;
    }
    in.max_num_seqs = (uint32_t)seqs;
    in.max_num_batched_tokens = (uint32_t)batched;
    in.context = (uint32_t)mml;
    if (fatia_engine_config_for(&in, &dev, &cfg.engine, &plan, why, sizeof(why)) < 0) {
        fprintf(stderr, "fatia engine-sim: %s does not fit: %s\n", in.model.name, why);
        return FATIA_EXIT_FAIL;
    }
    if (strcmp(dev.product, FATIA_CALIB_GPU) && (flops <= 0 || hbm <= 0))
        fatia_warn("engine-sim: the timing model is calibrated on the %s only; %s uses its "
                   "numbers unless --flops and --hbm-bandwidth are given",
                   FATIA_CALIB_GPU, dev.product);
    if (blocks)
        cfg.engine.num_gpu_blocks = blocks;
    if (no_pc)
        cfg.engine.prefix_caching = false;
    if (flops > 0)
        cfg.engine.flops = flops;
    if (hbm > 0)
        cfg.engine.hbm_bw = hbm;
    if (kvbw > 0)
        cfg.engine.kv_bw = kvbw;
    if (over >= 0)
        cfg.engine.step_overhead = over;
    cfg.speed = speed;
    cfg.default_max_tokens = (uint32_t)defmax;
    cfg.gpu_memory_utilization = plan.gpu_memory_utilization;
    if (!cfg.served_model)
        cfg.served_model = model;

    if (print) {
        print_config(&cfg, &in, &dev);
        return FATIA_EXIT_OK;
    }
    return serve(&cfg, port_file);
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
