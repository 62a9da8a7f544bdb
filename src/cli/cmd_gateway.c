/*
 * cli/cmd_gateway.c: `fatia gateway`: runs the KV-cache-aware inference gateway
 * (gateway/gateway.h) until SIGINT or SIGTERM.
 *
 * The pool comes from --endpoints (URLs, optional labels after '#': URL#zone=a&role=decode), from
 * a pool file (-f: a static pool or a GIE InferencePool), or from --inference-pool NS/NAME read
 * from the Kubernetes API (gateway/kubepool.h). Flags given on the command line win over the
 * pool file's settings.
 *
 * One function per step: parse_opts (the command line), load_pool (file or --endpoints, then the
 * command line over the file), start_pool (static endpoints or the InferencePool watcher), and
 * serve_loop.c's announce-and-run, which engine-sim shares.
 */
#include "base/compat.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <getopt.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/serve_loop.h"
#include "gateway/gateway.h"
#include "gateway/kubepool.h"
#include "gateway/poolfile.h"
#include "gateway/tenants.h"

static const char usage[] =
    "Usage: fatia gateway --listen ADDR:PORT (--endpoints URL,... | -f POOL.yaml |\n"
    "                     --inference-pool NAMESPACE/NAME | --all-inference-pools)\n"
    "                     [--policy POLICY] [options]\n"
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
    "  --all-inference-pools       every InferencePool of the cluster under one listener,\n"
    "                              routed by the request's \"model\" (the pool's name); with\n"
    "                              --api-keys a tenant reaches the pools of the namespace of\n"
    "                              its name only; an unknown model is 404\n"
    "  --hold-timeout D            with --all-inference-pools: hold a request for an\n"
    "                              InferenceService scaled to zero up to D while it asks for a\n"
    "                              replica (the annotation serving.fatia.io/demand), then 503\n"
    "                              (default 0: no holding)\n"
    "  --selector SELECTOR         only endpoints whose labels match (static pools)\n"
    "  --pd-decider D              prefill/decode disaggregation, when endpoints labelled\n"
    "                              llm-d.ai/role=prefill are in the pool: prefix-based\n"
    "                              (default), always or never (llm-d's deciders)\n"
    "  --pd-non-cached-tokens N    prefix-based: a prompt goes through a prefill pod when at\n"
    "                              least N of its tokens are not cached on the decode pod\n"
    "                              (default 256; 0 never)\n"
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
    "  --connect-timeout D         connecting to a model server (default 2s; then 504)\n"
    "  --upstream-timeout D        request sent to response head (default 5m; then 504)\n"
    "  --max-body BYTES            largest request body (default 32 MiB)\n"
    "Tenants:\n"
    "  --api-keys FILE             require Authorization: Bearer KEY on every path but /health,\n"
    "                              keys from FILE (KEY TENANT per line); tenants in /metrics\n"
    "  --tenant-rate N             requests per second per tenant (burst: one second's); 429\n"
    "  --port-file PATH            write the port listened on (for --listen ADDR:0)\n"
    "\n"
    "Exit status: 0 stopped by a signal, 1 cannot start, 2 usage.\n";

static const struct fatia_cli_cmd *self(void);

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

enum {
    O_LISTEN = 256,
    O_ENDPOINTS,
    O_IPOOL,
    O_ALLPOOLS,
    O_HOLD,
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
    O_KEYS,
    O_TRATE,
    O_PDDEC,
    O_PDNC,
};
static const struct option opts[] = {{"listen", required_argument, NULL, O_LISTEN},
                                     {"endpoints", required_argument, NULL, O_ENDPOINTS},
                                     {"filename", required_argument, NULL, 'f'},
                                     {"inference-pool", required_argument, NULL, O_IPOOL},
                                     {"all-inference-pools", no_argument, NULL, O_ALLPOOLS},
                                     {"hold-timeout", required_argument, NULL, O_HOLD},
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
                                     {"api-keys", required_argument, NULL, O_KEYS},
                                     {"tenant-rate", required_argument, NULL, O_TRATE},
                                     {"pd-decider", required_argument, NULL, O_PDDEC},
                                     {"pd-non-cached-tokens", required_argument, NULL, O_PDNC},
                                     {"port-file", required_argument, NULL, 'P'},
                                     {"help", no_argument, NULL, 'h'},
                                     {NULL, 0, NULL, 0}};

/* The command line; `over` holds what it sets that a pool file may also set (the command line
 * wins), with set_* saying which. */
struct gw_opts {
    struct fatia_gateway_config cfg, over;
    struct fatia_kube_config kc;
    const char *endpoints, *file, *ipool, *policy, *weights, *port_file, *keys_file;
    double tenant_rate;
    bool set_mint, set_mstale, set_hint, set_q, set_blocks, set_lru, set_pd;
};

#define GO_ON (-1) /* parse_opts: no exit status yet, go on */

/* Parses argv into *o. GO_ON, or the exit status (help, usage error). */
static int parse_opts(int argc, char **argv, struct gw_opts *o)
{
    uint64_t u;
    int c;

    memset(o, 0, sizeof(*o));
    fatia_gateway_config_default(&o->cfg);
    o->over = o->cfg;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
        switch (c) {
        case O_LISTEN:
            o->cfg.listen = optarg;
            break;
        case O_ENDPOINTS:
            o->endpoints = optarg;
            break;
        case 'f':
            o->file = optarg;
            break;
        case O_IPOOL:
            o->ipool = optarg;
            break;
        case O_ALLPOOLS:
            o->ipool = "*";
            break;
        case O_SELECTOR:
            o->over.selector = optarg;
            break;
        case O_SERVER:
            o->kc.server = optarg;
            break;
        case O_KUBECONFIG:
            o->kc.kubeconfig = optarg;
            break;
        case O_TOKEN:
            o->kc.token = optarg;
            break;
        case O_TOKENFILE:
            o->kc.token_file = optarg;
            break;
        case O_CA:
            o->kc.ca_file = optarg;
            break;
        case O_INSECURE:
            o->kc.insecure = true;
            break;
        case O_POLICY:
            o->policy = optarg;
            if (fatia_policy_parse(optarg, &o->over.sched.policy) < 0)
                return fatia_cli_usage_error(self(), "--policy: expected cache-aware, "
                                                     "round-robin, least-request or oracle");
            break;
        case O_WEIGHTS:
            o->weights = optarg;
            if (fatia_weights_parse(optarg, &o->over.sched.w) < 0)
                return fatia_cli_usage_error(self(), "--weights: expected "
                                                     "queue=N,kv=N,prefix=N,inflight=N,tokens=N");
            break;
        case O_HFAIL:
            if (fatia_parse_u64(optarg, &u) < 0 || !u || u > 1000)
                return fatia_cli_usage_error(self(), "--health-failures: expected 1..1000");
            o->cfg.health_failure_threshold = (uint32_t)u;
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
                o->over.sched.queue_limit = (uint32_t)u, o->set_q = true;
            else if (c == O_MAXBLOCKS)
                o->over.max_prefix_blocks = (uint32_t)u, o->set_blocks = true;
            else if (c == O_LRU)
                o->over.lru_capacity = (size_t)u, o->set_lru = true;
            else if (c == O_SEED)
                o->cfg.seed = u;
            else
                o->cfg.max_body = (size_t)u;
            break;
        case O_PDDEC:
            if (fatia_pd_decider_parse(optarg, &o->over.pd.decider) < 0)
                return fatia_cli_usage_error(self(), "--pd-decider: expected prefix-based, "
                                                     "always or never");
            o->set_pd = true;
            break;
        case O_PDNC: {
            int n;
            if (fatia_parse_int(optarg, 0, 1 << 30, &n) < 0)
                return fatia_cli_usage_error(self(), "--pd-non-cached-tokens: expected a count");
            o->over.pd.non_cached_tokens = (uint32_t)n;
            o->set_pd = true;
            break;
        }
        case O_MINT:
        case O_MSTALE:
        case O_HINT:
        case O_HTO:
        case O_CTO:
        case O_HOLD:
        case O_UTO: {
            fatia_usec_t d;
            if (duration_opt(optarg, &d) < 0)
                return fatia_cli_usage_error(self(), "%s: expected a duration such as 50ms",
                                             argv[optind - 1]);
            if (c == O_MINT)
                o->over.metrics_interval = d, o->set_mint = true;
            else if (c == O_MSTALE)
                o->over.metrics_staleness = d, o->set_mstale = true;
            else if (c == O_HINT)
                o->over.health_interval = d, o->set_hint = true;
            else if (c == O_HTO)
                o->cfg.health_timeout = d;
            else if (c == O_CTO)
                o->cfg.connect_timeout = d;
            else if (c == O_HOLD)
                o->cfg.hold_timeout = d;
            else
                o->cfg.upstream_timeout = d;
            break;
        }
        case 'P':
            o->port_file = optarg;
            break;
        case O_KEYS:
            o->keys_file = optarg;
            break;
        case O_TRATE:
            if (fatia_parse_double(optarg, &o->tenant_rate) < 0 || !(o->tenant_rate > 0))
                return fatia_cli_usage_error(self(), "--tenant-rate: expected a positive number");
            break;
        case 'h':
            return fatia_cli_help(self());
        default:
            return fatia_cli_usage_error(self(), "unknown option");
        }
    }
    if (optind < argc)
        return fatia_cli_usage_error(self(), "unexpected argument '%s'", argv[optind]);
    if (!o->cfg.listen)
        return fatia_cli_usage_error(self(), "give --listen ADDR:PORT");
    if (!!o->endpoints + !!o->file + !!o->ipool != 1)
        return fatia_cli_usage_error(self(), "give one of --endpoints, -f POOL.yaml, "
                                             "--inference-pool NAMESPACE/NAME or "
                                             "--all-inference-pools");
    if (o->ipool && !strcmp(o->ipool, "*"))
        o->cfg.route_by_model = true; /* one gateway for every pool routes by model */
    if (o->tenant_rate > 0 && !o->keys_file)
        return fatia_cli_usage_error(self(), "--tenant-rate needs --api-keys (tenants come from "
                                             "their keys)");
    return GO_ON;
}

/* The pool's definition: a pool file (into *pf) or --endpoints (into *ret_eps, NULL for an
 * InferencePool), then the command line's settings over the file's. GO_ON or the exit status. */
static int load_pool(struct gw_opts *o, struct fatia_pool_file *pf, json_t **ret_eps)
{
    struct fatia_gateway_config *cfg = &o->cfg;
    const struct fatia_gateway_config *over = &o->over;

    *ret_eps = NULL;
    if (o->file) {
        struct fatia_diag diag;
        int r;
        fatia_diag_init(&diag);
        r = fatia_pool_file_load(o->file, cfg, pf, &diag);
        fatia_diag_print(&diag, stderr);
        fatia_diag_release(&diag);
        if (r < 0)
            return FATIA_EXIT_FAIL;
        *ret_eps = pf->endpoints ? json_incref(pf->endpoints) : NULL;
        if (pf->selector)
            cfg->selector = pf->selector;
    } else if (o->endpoints) {
        if (parse_endpoints(o->endpoints, ret_eps) < 0)
            return fatia_cli_usage_error(self(), "--endpoints: labels go as URL#key=value&k=v");
    }
    if (o->policy)
        cfg->sched.policy = over->sched.policy;
    if (o->weights)
        cfg->sched.w = over->sched.w;
    if (o->set_q)
        cfg->sched.queue_limit = over->sched.queue_limit;
    if (o->set_pd)
        cfg->pd = over->pd;
    if (o->set_blocks)
        cfg->max_prefix_blocks = over->max_prefix_blocks;
    if (o->set_lru)
        cfg->lru_capacity = over->lru_capacity;
    if (o->set_mint)
        cfg->metrics_interval = over->metrics_interval;
    if (o->set_mstale)
        cfg->metrics_staleness = over->metrics_staleness;
    if (o->set_hint)
        cfg->health_interval = over->health_interval;
    if (over->selector)
        cfg->selector = over->selector;
    return GO_ON;
}

/* Fills the pool: the static endpoints, or the InferencePool's watcher (*ret_kp). 0 or -errno
 * (said why). */
static int start_pool(struct event_base *base, struct fatia_gateway *g, struct gw_opts *o,
                      const struct fatia_pool_file *pf, const json_t *eps,
                      struct fatia_kubepool **ret_kp)
{
    char why[512];
    int r;

    if (eps) {
        size_t n = json_array_size(eps);
        struct fatia_gateway_endpoint *v = fatia_calloc(n ? n : 1, sizeof(*v));
        if (!v)
            return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
            v[i].url = fatia_json_str(json_array_get(eps, i), "url");
            v[i].labels = json_object_get(json_array_get(eps, i), "labels");
        }
        r = fatia_gateway_set_endpoints(g, v, n, why, sizeof(why));
        fatia_free(v);
    } else {
        /* an InferencePool: from the file, or named on the command line */
        r = fatia_kubepool_start(base, g, &o->kc, pf->inference_pool, o->ipool, ret_kp, why,
                                 sizeof(why));
    }
    if (r < 0)
        fprintf(stderr, "fatia gateway: %s\n", why);
    return r;
}

static int run(int argc, char **argv)
{
    struct gw_opts o;
    struct fatia_pool_file pf = {0};
    json_t *eps = NULL;
    struct fatia_gateway *g = NULL;
    struct fatia_kubepool *kp = NULL;
    struct event_base *base = NULL;
    struct fatia_gateway_tenants *tenants = NULL;
    char detail[128], why[512];
    int r, rc = parse_opts(argc, argv, &o);

    if (rc != GO_ON)
        return rc;
    if (o.keys_file) {
        if (fatia_gateway_tenants_load(o.keys_file, o.tenant_rate, &tenants, why, sizeof(why)) <
            0) {
            fprintf(stderr, "fatia gateway: --api-keys: %s\n", why);
            return FATIA_EXIT_FAIL;
        }
    }
    rc = load_pool(&o, &pf, &eps);
    if (rc != GO_ON)
        goto out;
    o.cfg.tenants = tenants;
    rc = FATIA_EXIT_FAIL;
    /* only an InferencePool pool has a second thread (its API client): locking otherwise costs
     * every event for nothing */
    if (!eps && evthread_use_pthreads() < 0)
        goto out;
    base = event_base_new();
    if (!base)
        goto out;
    r = fatia_gateway_new(base, &o.cfg, &g);
    if (r < 0) {
        fprintf(stderr, "fatia gateway: cannot listen on '%s': %s\n", o.cfg.listen,
                fatia_strerror(r));
        goto out;
    }
    if (start_pool(base, g, &o, &pf, eps, &kp) < 0)
        goto out;
    snprintf(detail, sizeof(detail), "policy %s, %s", fatia_policy_name(o.cfg.sched.policy),
             tenants ? "API keys required" : "no API keys");
    rc = fatia_cli_serve_loop(base, "gateway", o.cfg.listen, fatia_gateway_port(g), o.port_file,
                              detail);
out:
    fatia_kubepool_stop(kp);
    fatia_gateway_free(g);
    if (base)
        event_base_free(base);
    json_decref(eps);
    fatia_pool_file_release(&pf);
    fatia_gateway_tenants_free(tenants);
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
