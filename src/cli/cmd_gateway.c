/*
 * cli/cmd_gateway.c: `fatia gateway`: runs the KV-cache-aware inference gateway
 * (gateway/gateway.h) until SIGINT or SIGTERM.
 *
 * The pool comes from --endpoints (URLs, optional labels after '#': URL#zone=a&role=decode), from
 * a pool file (-f: a static pool or a GIE InferencePool), or from --inference-pool NS/NAME read
 * from the Kubernetes API (gateway/kubepool.h). Flags given on the command line win over the
 * pool file's settings.
 */
#include "base/compat.h"

#include <sys/resource.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <getopt.h>
#include <signal.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "gateway/gateway.h"
#include "gateway/kubepool.h"
#include "gateway/poolfile.h"

static const char usage[] =
    "Usage: fatia gateway --listen ADDR:PORT (--endpoints URL,... | -f POOL.yaml |\n"
    "                     --inference-pool NAMESPACE/NAME) [--policy POLICY] [options]\n"
    "\n"
    "An OpenAI-compatible HTTP/1.1 reverse proxy for /v1/completions, /v1/chat/completions,\n"
    "/v1/embeddings and /v1/models (merged over the pool), that sends each request to the model\n"
    "server most likely to hold its prompt prefix and with the shortest queue, and relays the\n"
    "answer unchanged (streams chunk by chunk). /health and /metrics are its own.\n"
    "\n"
    "Pool:\n"
    "  --endpoints URL,...         static endpoints; labels after '#': http://h:8000#zone=a&x=y\n"
    "  -f, --filename POOL.yaml    a static pool file or an InferencePool manifest\n"
    "  --inference-pool NS/NAME    an InferencePool read from the Kubernetes API\n"
    "  --selector SELECTOR         only endpoints whose labels match (static pools)\n"
    "Kubernetes API (InferencePool pools; fatiad or a kube-apiserver):\n"
    "  --server URL                API server (default: the kubeconfig's)\n"
    "  --kubeconfig PATH           kubeconfig (default $KUBECONFIG, ~/.kube/config)\n"
    "  --token TOKEN, --token-file PATH   bearer token\n"
    "  --certificate-authority PATH, --insecure-skip-tls-verify\n"
    "Scheduling:\n"
    "  --policy POLICY             cache-aware (default), round-robin, least-request, oracle\n"
    "  --weights LIST              queue=2,kv=2,prefix=3,inflight=0,tokens=0 (GIE's defaults)\n"
    "  --queue-limit N             answer 429 when every endpoint queues more (default: none)\n"
    "  --max-prefix-blocks N       64-character blocks hashed per prompt (default 2048)\n"
    "  --lru-capacity N            prefix index blocks per endpoint (default: its KV cache)\n"
    "  --seed N                    tie-break randomness (default: from the clock)\n"
    "Timing:\n"
    "  --metrics-interval D        scrape each endpoint's /metrics this often (default 50ms)\n"
    "  --metrics-staleness D       ignore metrics older than this (default 2s)\n"
    "  --health-interval D         health check period (default 1s)\n"
    "  --health-timeout D          a check slower than this fails (default 2s)\n"
    "  --health-failures N         failed checks in a row that take an endpoint out (default 3)\n"
    "  --connect-timeout D         (default 2s)\n"
    "  --upstream-timeout D        time to the response head (default: none)\n"
    "  --max-body BYTES            largest request body (default 32 MiB)\n"
    "  --port-file PATH            write the port listened on (for --listen ADDR:0)\n"
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

/* "URL#k=v&k2=v2,URL2" -> endpoints with labels (json objects) */
static int parse_endpoints(const char *s, json_t **ret)
{
    json_t *arr = json_array();
    char *dup = fatia_strdup(s), *save = NULL;

    if (!arr || !dup) {
        json_decref(arr);
        fatia_free(dup);
        return -ENOMEM;
    }
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *hash = strchr(t, '#'), *lsave = NULL;
        json_t *labels = json_object();
        if (hash) {
            *hash = 0;
            for (char *kv = strtok_r(hash + 1, "&", &lsave); kv; kv = strtok_r(NULL, "&", &lsave)) {
                char *eq = strchr(kv, '=');
                if (!eq) {
                    json_decref(labels);
                    json_decref(arr);
                    fatia_free(dup);
                    return -EINVAL;
                }
                *eq = 0;
                json_object_set_new(labels, kv, json_string(eq + 1));
            }
        }
        json_array_append_new(arr, json_pack("{s:s,s:o}", "url", t, "labels", labels));
    }
    fatia_free(dup);
    *ret = arr;
    return 0;
}

static int duration_opt(const char *arg, fatia_usec_t *ret)
{
    int64_t us;
    if (fatia_parse_duration_usec(arg, &us) < 0 || us <= 0)
        return -EINVAL;
    *ret = us;
    return 0;
}

/* Listens and serves the pool (eps, else the InferencePool of pool_obj or named by ipool) until
 * SIGINT or SIGTERM. An exit code. */
static int serve(const struct fatia_gateway_config *cfg, const json_t *eps,
                 const struct fatia_kube_config *kc, const json_t *pool_obj, const char *ipool,
                 const char *port_file)
{
    struct fatia_gateway *g = NULL;
    struct fatia_kubepool *kp = NULL;
    struct event_base *base = NULL;
    struct event *sigint = NULL, *sigterm = NULL;
    char why[512];
    int r, rc = FATIA_EXIT_FAIL;

    /* only an InferencePool pool has a second thread (its API client): locking otherwise costs
     * every event for nothing */
    if (!eps && evthread_use_pthreads() < 0)
        goto out;
    base = event_base_new();
    if (!base)
        goto out;
    r = fatia_gateway_new(base, cfg, &g);
    if (r < 0) {
        fprintf(stderr, "fatia gateway: cannot listen on '%s': %s\n", cfg->listen,
                fatia_strerror(r));
        goto out;
    }
    if (eps) {
        size_t n = json_array_size(eps);
        struct fatia_gateway_endpoint *v = fatia_calloc(n ? n : 1, sizeof(*v));
        if (!v)
            goto out;
        for (size_t i = 0; i < n; i++) {
            v[i].url = fatia_json_str(json_array_get(eps, i), "url");
            v[i].labels = json_object_get(json_array_get(eps, i), "labels");
        }
        r = fatia_gateway_set_endpoints(g, v, n, why, sizeof(why));
        fatia_free(v);
        if (r < 0) {
            fprintf(stderr, "fatia gateway: %s\n", why);
            goto out;
        }
    } else {
        /* an InferencePool: from the file, or named on the command line */
        r = fatia_kubepool_start(base, g, kc, pool_obj, ipool, &kp, why, sizeof(why));
        if (r < 0) {
            fprintf(stderr, "fatia gateway: %s\n", why);
            goto out;
        }
    }
    if (port_file) {
        FILE *pf_out = fopen(port_file, "we");
        if (!pf_out || fprintf(pf_out, "%d\n", fatia_gateway_port(g)) < 0 || fclose(pf_out) != 0) {
            fprintf(stderr, "fatia gateway: cannot write '%s'\n", port_file);
            goto out;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    evsignal_add(sigint, NULL);
    evsignal_add(sigterm, NULL);
    fatia_log(FATIA_LOG_INFO, "gateway: listening on port %d, policy %s", fatia_gateway_port(g),
              fatia_policy_name(cfg->sched.policy));
    event_base_dispatch(base);
    rc = FATIA_EXIT_OK;
out:
    fatia_kubepool_stop(kp);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    fatia_gateway_free(g);
    if (base)
        event_base_free(base);
    return rc;
}

static int run(int argc, char **argv)
{
    enum {
        O_LISTEN = 256,
        O_ENDPOINTS,
        O_IPOOL,
        O_SELECTOR,
        O_SERVER,
        O_KUBECONFIG,
        O_TOKEN,
        O_TOKENFILE,
        O_CA,
        O_INSECURE,
        O_POLICY,
        O_WEIGHTS,
        O_QLIMIT,
        O_MAXBLOCKS,
        O_LRU,
        O_SEED,
        O_MINT,
        O_MSTALE,
        O_HINT,
        O_HTO,
        O_HFAIL,
        O_CTO,
        O_UTO,
        O_MAXBODY,
    };
    static const struct option opts[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"endpoints", required_argument, NULL, O_ENDPOINTS},
        {"filename", required_argument, NULL, 'f'},
        {"inference-pool", required_argument, NULL, O_IPOOL},
        {"selector", required_argument, NULL, O_SELECTOR},
        {"server", required_argument, NULL, O_SERVER},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"token", required_argument, NULL, O_TOKEN},
        {"token-file", required_argument, NULL, O_TOKENFILE},
        {"certificate-authority", required_argument, NULL, O_CA},
        {"insecure-skip-tls-verify", no_argument, NULL, O_INSECURE},
        {"policy", required_argument, NULL, O_POLICY},
        {"weights", required_argument, NULL, O_WEIGHTS},
        {"queue-limit", required_argument, NULL, O_QLIMIT},
        {"max-prefix-blocks", required_argument, NULL, O_MAXBLOCKS},
        {"lru-capacity", required_argument, NULL, O_LRU},
        {"seed", required_argument, NULL, O_SEED},
        {"metrics-interval", required_argument, NULL, O_MINT},
        {"metrics-staleness", required_argument, NULL, O_MSTALE},
        {"health-interval", required_argument, NULL, O_HINT},
        {"health-timeout", required_argument, NULL, O_HTO},
        {"health-failures", required_argument, NULL, O_HFAIL},
        {"connect-timeout", required_argument, NULL, O_CTO},
        {"upstream-timeout", required_argument, NULL, O_UTO},
        {"max-body", required_argument, NULL, O_MAXBODY},
        {"port-file", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct fatia_gateway_config cfg, over;
    struct fatia_kube_config kc = {0};
    struct fatia_pool_file pf = {0};
    const char *endpoints = NULL, *file = NULL, *ipool = NULL, *policy = NULL, *weights = NULL;
    json_t *eps = NULL;
    bool set_mint = false, set_mstale = false, set_hint = false, set_q = false, set_blocks = false,
         set_lru = false;
    uint64_t u;
    const char *port_file = NULL;
    int c, r, rc = FATIA_EXIT_FAIL;

    fatia_gateway_config_default(&cfg);
    over = cfg;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
        switch (c) {
        case O_LISTEN:
            cfg.listen = optarg;
            break;
        case O_ENDPOINTS:
            endpoints = optarg;
            break;
        case 'f':
            file = optarg;
            break;
        case O_IPOOL:
            ipool = optarg;
            break;
        case O_SELECTOR:
            over.selector = optarg;
            break;
        case O_SERVER:
            kc.server = optarg;
            break;
        case O_KUBECONFIG:
            kc.kubeconfig = optarg;
            break;
        case O_TOKEN:
            kc.token = optarg;
            break;
        case O_TOKENFILE:
            kc.token_file = optarg;
            break;
        case O_CA:
            kc.ca_file = optarg;
            break;
        case O_INSECURE:
            kc.insecure = true;
            break;
        case O_POLICY:
            policy = optarg;
            if (fatia_policy_parse(optarg, &over.sched.policy) < 0)
                return fatia_cli_usage_error(self(), "--policy: expected cache-aware, "
                                                     "round-robin, least-request or oracle");
            break;
        case O_WEIGHTS:
            weights = optarg;
            if (fatia_weights_parse(optarg, &over.sched.w) < 0)
                return fatia_cli_usage_error(self(), "--weights: expected "
                                                     "queue=N,kv=N,prefix=N,inflight=N,tokens=N");
            break;
        case O_HFAIL:
            if (fatia_parse_u64(optarg, &u) < 0 || !u || u > 1000)
                return fatia_cli_usage_error(self(), "--health-failures: expected 1..1000");
            cfg.health_failure_threshold = (uint32_t)u;
            break;
        case O_QLIMIT:
        case O_MAXBLOCKS:
        case O_LRU:
        case O_SEED:
        case O_MAXBODY:
            if (fatia_parse_u64(optarg, &u) < 0 || (c == O_MAXBLOCKS && (!u || u > (1u << 20))) ||
                (c == O_QLIMIT && u > UINT32_MAX))
                return fatia_cli_usage_error(self(), "%s: expected a number", argv[optind - 1]);
            if (c == O_QLIMIT)
                over.sched.queue_limit = (uint32_t)u, set_q = true;
            else if (c == O_MAXBLOCKS)
                over.max_prefix_blocks = (uint32_t)u, set_blocks = true;
            else if (c == O_LRU)
                over.lru_capacity = (size_t)u, set_lru = true;
            else if (c == O_SEED)
                cfg.seed = u;
            else
                cfg.max_body = (size_t)u;
            break;
        case O_MINT:
        case O_MSTALE:
        case O_HINT:
        case O_HTO:
        case O_CTO:
        case O_UTO: {
            fatia_usec_t d;
            if (duration_opt(optarg, &d) < 0)
                return fatia_cli_usage_error(self(), "%s: expected a duration such as 50ms",
                                             argv[optind - 1]);
            if (c == O_MINT)
                over.metrics_interval = d, set_mint = true;
            else if (c == O_MSTALE)
                over.metrics_staleness = d, set_mstale = true;
            else if (c == O_HINT)
                over.health_interval = d, set_hint = true;
            else if (c == O_HTO)
                cfg.health_timeout = d;
            else if (c == O_CTO)
                cfg.connect_timeout = d;
            else
                cfg.upstream_timeout = d;
            break;
        }
        case 'P':
            port_file = optarg;
            break;
        case 'h':
            return fatia_cli_help(self());
        default:
            return fatia_cli_usage_error(self(), "unknown option");
        }
    }
    if (optind < argc)
        return fatia_cli_usage_error(self(), "unexpected argument '%s'", argv[optind]);
    if (!cfg.listen)
        return fatia_cli_usage_error(self(), "give --listen ADDR:PORT");
    if (!!endpoints + !!file + !!ipool != 1)
        return fatia_cli_usage_error(self(), "give one of --endpoints, -f POOL.yaml or "
                                             "--inference-pool NAMESPACE/NAME");

    if (file) {
        struct fatia_diag diag;
        fatia_diag_init(&diag);
        r = fatia_pool_file_load(file, &cfg, &pf, &diag);
        fatia_diag_print(&diag, stderr);
        fatia_diag_release(&diag);
        if (r < 0)
            return FATIA_EXIT_FAIL;
        eps = pf.endpoints ? json_incref(pf.endpoints) : NULL;
        if (pf.selector)
            cfg.selector = pf.selector;
    } else if (endpoints) {
        if (parse_endpoints(endpoints, &eps) < 0)
            return fatia_cli_usage_error(self(), "--endpoints: labels go as URL#key=value&k=v");
    }
    /* the command line wins over the pool file */
    if (policy)
        cfg.sched.policy = over.sched.policy;
    if (weights)
        cfg.sched.w = over.sched.w;
    if (set_q)
        cfg.sched.queue_limit = over.sched.queue_limit;
    if (set_blocks)
        cfg.max_prefix_blocks = over.max_prefix_blocks;
    if (set_lru)
        cfg.lru_capacity = over.lru_capacity;
    if (set_mint)
        cfg.metrics_interval = over.metrics_interval;
    if (set_mstale)
        cfg.metrics_staleness = over.metrics_staleness;
    if (set_hint)
        cfg.health_interval = over.health_interval;
    if (over.selector)
        cfg.selector = over.selector;

    rc = serve(&cfg, eps, &kc, pf.inference_pool, ipool, port_file);
    json_decref(eps);
    fatia_pool_file_release(&pf);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_gateway = {
    .name = "gateway",
    .summary = "KV-cache-aware inference gateway (OpenAI API reverse proxy)",
    .usage = usage,
    .run = run,
};

static const struct fatia_cli_cmd *self(void)
{
    return &fatia_cmd_gateway;
}
