/*
 * cli/cmd_sim.c: `fatia sim`: replay a trace on a fleet in virtual time (sim/sim.h).
 *
 * The command reads the manifests (-f: NodePools, GPUSharingPolicies, and Kueue objects when
 * admission should run), the trace (--trace, in --trace-format), and for the Alibaba trace
 * optionally its node list (--nodes), which becomes the fleet; plans the fleet (simulated
 * inventory); runs the simulation; prints the report (docs/sim.md) and, on stderr, how long the
 * simulation took (wall clock, measured here: the simulator reads no clock).
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/input.h"
#include "cli/supply_cli.h"
#include "demand/demand.h"
#include "model/object.h"
#include "sim/sim.h"

static const char usage[] =
    "Usage: fatia sim [-f PATH]... --trace FILE [--trace-format alibaba2023|fatia]\n"
    "                 [--nodes FILE] [--placement POLICY] [-o table|json|yaml]\n"
    "\n"
    "Simulate a trace of submissions on a fleet in virtual time: arrivals, admission (Kueue's\n"
    "engine, when the input has ClusterQueues; else everything is admitted on arrival),\n"
    "placement on nodes and GPU slices, completion, preemption, dynamic MIG. Reports GPU\n"
    "allocation over time, unallocated and fragmented GPUs, wait percentiles, admissions,\n"
    "preemptions and share of entitlement per queue, and pods per busy GPU per sharing strategy.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH        fleet and Kueue manifests (repeatable)\n"
    "      --trace FILE           the trace (required)\n"
    "      --trace-format F       fatia (default; docs/sim.md) or alibaba2023\n"
    "      --nodes FILE           alibaba2023: the node list (openb_node_list_gpu_node.csv) as\n"
    "                             the fleet: one NodePool per node shape, GPUs fractional\n"
    "      --placement POLICY     binpack (default), bestfit, spread, fragmentation, fgd (the\n"
    "                             FGD artifact's scheduler: fragmentation with --fgd all; its\n"
    "                             typical-pod cut is --typical-coverage 95), fgdpack (fgd,\n"
    "                             ties packed: --fgd all,pack) or fgdscarce (fgd, CPU-only\n"
    "                             pods' ties packed, GPU pods kept off the GPU models that\n"
    "                             choosy pods are short of, their ties to the best-fitting\n"
    "                             GPU: --fgd all,packcpu,scarce,fit)\n"
    "      --fgd LIST             the FGD artifact's choices one by one (docs/sim.md,\n"
    "                             the ablation), comma-separated: score (its integer\n"
    "                             sigmoid score), ties (random among equal nodes), cpu\n"
    "                             (CPU-only pods in the mix), upfront (the mix of the\n"
    "                             whole draw), types (types without memory), pack\n"
    "                             (fatia's: ties to the fullest node), packcpu (the same for\n"
    "                             CPU-only pods only), scarce (GPU pods: the scarcity of\n"
    "                             the node's class for choosy types), fit (GPU pods' ties:\n"
    "                             the best-fitting GPU), all, none\n"
    "      --dynamic-mig MODE     off (default), free or evict\n"
    "      --fill PCT             the FGD experiment: draw pods at random with replacement, no\n"
    "                             departures, until the GPUs asked for reach PCT% of the fleet's\n"
    "      --seed N               random seed of --fill (default 42)\n"
    "      --checkpoints LIST     requested loads to report at, in % (default\n"
    "                             80,90,100,110,120,130)\n"
    "      --typical-coverage PCT the fragmentation measure's typical request types cover this\n"
    "                             share of pods (default 100: every type; the FGD artifact's\n"
    "                             experiments use 95)\n"
    "      --until DURATION       stop at this virtual time (e.g. 24h)\n"
    "      --sample-every DURATION  time between samples of the series (default: 200 samples)\n"
    "      --max-wait SECONDS     a user waiting longer is not served (slowdown model)\n"
    "      --max-slowdown X       a user slowed more is not served (slowdown model)\n"
    "      --catalog PATH         GPU catalog (default $FATIA_DATA_DIR/gpus or data/gpus)\n"
    "  -o, --output FORMAT        table (default), json or yaml\n"
    "\n"
    "Exit status: 0 done, 1 invalid input, 2 usage.\n";

/* --fgd LIST: score, ties, cpu, upfront, all, none (comma-separated). */
static int parse_fgd(const char *arg, unsigned *ret)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {{"score", FATIA_SIM_FGD_SCORE},
                 {"ties", FATIA_SIM_FGD_TIES},
                 {"cpu", FATIA_SIM_FGD_CPU},
                 {"upfront", FATIA_SIM_FGD_UPFRONT},
                 {"types", FATIA_SIM_FGD_TYPES},
                 {"all", FATIA_SIM_FGD_ALL},
                 {"pack", FATIA_SIM_FGD_PACK},
                 {"packcpu", FATIA_SIM_FGD_PACK_CPU},
                 {"scarce", FATIA_SIM_FGD_SCARCE},
                 {"fit", FATIA_SIM_FGD_FIT},
                 {"none", 0}};

    unsigned bits = 0;

    while (*arg) {
        size_t n = strcspn(arg, ","), i;
        for (i = 0; i < FATIA_ARRAY_SIZE(names); i++)
            if (strlen(names[i].name) == n && !strncmp(arg, names[i].name, n))
                break;
        if (i == FATIA_ARRAY_SIZE(names)) {
            fatia_cli_usage_error(&fatia_cmd_sim,
                                  "--fgd: unknown choice '%.*s': expected score, ties, cpu, "
                                  "upfront, types, pack, packcpu, scarce, fit, all or none",
                                  (int)n, arg);
            return -EINVAL;
        }
        bits |= names[i].bits;
        arg += n + (arg[n] == ',');
    }
    *ret = bits;
    return 0;
}

/* CPU time of this process, usec: the simulation's cost on a machine others share too. */
static int64_t cpu_usec(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
        return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int add_objects(struct fatia_objset *set, json_t *objs, const char *file,
                       struct fatia_diag *d)
{
    size_t i;
    json_t *o;

    json_array_foreach(objs, i, o)
    {
        struct fatia_decode_opts dopts = {.file = file};
        struct fatia_object *fo = NULL;
        int r = fatia_object_decode(o, &dopts, &fatia_demand_checks, d, &fo);
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            continue;
        if ((r = fatia_objset_add(set, fo)) == -ENOMEM)
            return r;
        if (r < 0)
            fatia_diag_add(d, FATIA_DIAG_ERROR, file, 0, 0, NULL, NULL,
                           "generated %s collides with an object of the input", fo ? "" : "object");
    }
    return 0;
}

static void print_fill(const json_t *rep)
{
    static const char *const h[] = {"LOAD",      "REQUESTED",  "ALLOCATED", "UNALLOCATED",
                                    "UNALLOC %", "FRAGMENTED", "PLACED",    "UNPLACED"};
    struct fatia_table *t = fatia_table_new(FATIA_ARRAY_SIZE(h), h);
    size_t i;
    const json_t *c;

    json_array_foreach(json_object_get(rep, "checkpoints"), i, c)
        fatia_table_addf(t, "%lld%%\t%.1f\t%.1f\t%.1f\t%.2f%%\t%.1f\t%lld\t%lld",
                         (long long)json_integer_value(json_object_get(c, "loadPct")),
                         json_real_value(json_object_get(c, "requestedGpus")),
                         json_real_value(json_object_get(c, "allocatedGpus")),
                         json_real_value(json_object_get(c, "unallocatedGpus")),
                         100 * json_real_value(json_object_get(c, "unallocatedShare")),
                         json_real_value(json_object_get(c, "fragmentedGpus")),
                         (long long)json_integer_value(json_object_get(c, "placedPods")),
                         (long long)json_integer_value(json_object_get(c, "unplacedPods")));
    printf("policy %s, %lld GPUs, %lld pods drawn (seed %lld), %lld request types (%lld "
           "typical)\n\n",
           fatia_json_str(rep, "policy"),
           (long long)json_integer_value(json_object_get(rep, "totalGpus")),
           (long long)json_integer_value(json_object_get(rep, "drawnPods")),
           (long long)json_integer_value(json_object_get(rep, "seed")),
           (long long)json_integer_value(json_object_get(rep, "requestTypes")),
           (long long)json_integer_value(json_object_get(rep, "typicalTypes")));
    fatia_table_print(t, stdout);
    fatia_table_free(t);
}

static void print_replay(const json_t *rep)
{
    static const char *const qh[] = {
        "QUEUE",    "ADMITTED", "PREEMPTED", "WAIT P50", "P90", "P99", "SHARE OF ENTITLEMENT",
        "UNPLACED", "SERVED"};
    static const char *const ch[] = {"STRATEGY", "GPUS", "PODS/BUSY GPU", "PODS/GPU", "MAX"};
    struct fatia_table *t = fatia_table_new(FATIA_ARRAY_SIZE(qh), qh);
    const char *k;
    json_t *q;
    const json_t *users = json_object_get(rep, "users");

    printf("policy %s, %lld GPUs, %.0f s simulated: %lld pods placed, %lld never placed, "
           "%lld preemptions\n",
           fatia_json_str(rep, "policy"),
           (long long)json_integer_value(json_object_get(rep, "totalGpus")),
           json_real_value(json_object_get(rep, "endSeconds")),
           (long long)json_integer_value(json_object_get(rep, "placedPods")),
           (long long)json_integer_value(json_object_get(rep, "unplacedPods")),
           (long long)json_integer_value(json_object_get(rep, "preemptions")));
    printf("at the end: %.1f%% of GPUs allocated, %.1f unallocated, %.1f fragmented; mean "
           "allocated %.1f GPUs\n",
           100 * json_real_value(json_object_get(rep, "gpuAllocationRate")),
           json_real_value(json_object_get(rep, "unallocatedGpus")),
           json_real_value(json_object_get(rep, "fragmentedGpus")),
           json_real_value(json_object_get(rep, "meanAllocatedGpus")));
    if (users)
        printf("users: %lld of %lld served (%.1f%%), %.1f concurrent on average\n",
               (long long)json_integer_value(json_object_get(users, "served")),
               (long long)json_integer_value(json_object_get(users, "total")),
               100 * json_real_value(json_object_get(users, "servedShare")),
               json_real_value(json_object_get(users, "meanConcurrent")));
    printf("\n");
    json_object_foreach(json_object_get(rep, "queues"), k, q)
    {
        const json_t *w = json_object_get(q, "waitSeconds"), *sh;
        const json_t *u = json_object_get(q, "users");
        char share[32] = "-", served[48] = "-";
        sh = json_object_get(q, "shareOfEntitlement");
        if (json_is_number(sh))
            snprintf(share, sizeof(share), "%.2f", json_number_value(sh));
        if (u)
            snprintf(served, sizeof(served), "%lld/%lld",
                     (long long)json_integer_value(json_object_get(u, "served")),
                     (long long)json_integer_value(json_object_get(u, "total")));
        fatia_table_addf(t, "%s\t%lld\t%lld\t%.0fs\t%.0fs\t%.0fs\t%s\t%lld\t%s", k,
                         (long long)json_integer_value(json_object_get(q, "admitted")),
                         (long long)json_integer_value(json_object_get(q, "preempted")),
                         json_real_value(json_object_get(w, "p50")),
                         json_real_value(json_object_get(w, "p90")),
                         json_real_value(json_object_get(w, "p99")), share,
                         (long long)json_integer_value(json_object_get(q, "unplacedPods")), served);
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);
    t = fatia_table_new(FATIA_ARRAY_SIZE(ch), ch);
    json_object_foreach(json_object_get(rep, "concurrency"), k, q)
        fatia_table_addf(t, "%s\t%lld\t%.2f\t%.2f\t%lld", k,
                         (long long)json_integer_value(json_object_get(q, "gpus")),
                         json_real_value(json_object_get(q, "podsPerBusyGpu")),
                         json_real_value(json_object_get(q, "podsPerGpu")),
                         (long long)json_integer_value(json_object_get(q, "maxPods")));
    printf("\n");
    fatia_table_print(t, stdout);
    fatia_table_free(t);
}

static int parse_checkpoints(const char *s, unsigned *v, size_t max, size_t *ret_n)
{
    char buf[256], *save = NULL, *tok;
    size_t n = 0;

    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int x;
        if (n == max || fatia_parse_int(tok, 1, 1000, &x) < 0 || (n && (unsigned)x <= v[n - 1]))
            return -EINVAL;
        v[n++] = (unsigned)x;
    }
    *ret_n = n;
    return n ? 0 : -EINVAL;
}

/* What the options ask for. */
struct sim_args {
    struct fatia_cli_input in;
    const char *trace_path, *nodes_path, *catalog;
    bool alibaba;
    struct fatia_sim_opts so;
    unsigned cps[16];
};

/* What the simulation runs on: the objects, the fleet planned from them, the trace. */
struct sim_world {
    struct fatia_objset set;
    struct fatia_catalog cat;
    struct fatia_supply_config cfg;
    bool have_cfg;
    struct fatia_inventory inv;
    struct fatia_plan *plan;
    struct fatia_sim_trace tr;
};

/* One option with a value: 0, or -EINVAL (after a usage error naming it for --trace-format and
 * --placement). */
static int sim_value(struct sim_args *a, int c, const char *arg)
{
    struct fatia_sim_opts *so = &a->so;
    double x;
    int v;

    switch (c) {
    case 1301:
        if (!strcmp(arg, "alibaba2023"))
            a->alibaba = true;
        else if (!strcmp(arg, "fatia"))
            a->alibaba = false;
        else {
            fatia_cli_usage_error(&fatia_cmd_sim,
                                  "unknown trace format '%s': expected alibaba2023 or fatia", arg);
            return -EINVAL;
        }
        return 0;
    case 1303:
        if (!strcmp(arg, "fgd") || !strcmp(arg, "fgdpack") || !strcmp(arg, "fgdscarce")) {
            so->policy = FATIA_PLACE_FRAGMENTATION;
            so->fgd = FATIA_SIM_FGD_ALL | (!strcmp(arg, "fgdpack") ? FATIA_SIM_FGD_PACK : 0) |
                      (!strcmp(arg, "fgdscarce")
                           ? FATIA_SIM_FGD_PACK_CPU | FATIA_SIM_FGD_SCARCE | FATIA_SIM_FGD_FIT
                           : 0);
            return 0;
        }
        if (fatia_place_policy_parse(arg, &so->policy) < 0) {
            fatia_cli_usage_error(&fatia_cmd_sim,
                                  "unknown placement policy '%s': expected binpack, bestfit, "
                                  "spread or fragmentation",
                                  arg);
            return -EINVAL;
        }
        return 0;
    case 1304:
        if (!strcmp(arg, "off"))
            so->mig = FATIA_PLACE_MIG_OFF;
        else if (!strcmp(arg, "free"))
            so->mig = FATIA_PLACE_MIG_FREE;
        else if (!strcmp(arg, "evict"))
            so->mig = FATIA_PLACE_MIG_EVICT;
        else
            return -EINVAL;
        return 0;
    case 1305:
        if (fatia_parse_int(arg, 1, 1000, &v) < 0)
            return -EINVAL;
        so->fill_pct = (unsigned)v;
        return 0;
    case 1306:
        return fatia_parse_u64(arg, &so->seed) < 0 ? -EINVAL : 0;
    case 1307:
        return parse_checkpoints(arg, a->cps, FATIA_ARRAY_SIZE(a->cps), &so->n_checkpoints);
    case 1308:
        if (fatia_parse_int(arg, 1, 100, &v) < 0)
            return -EINVAL;
        so->mix_coverage = (unsigned)v;
        return 0;
    case 1314:
        return parse_fgd(arg, &so->fgd);
    case 1309:
        return fatia_parse_duration_usec(arg, &so->until) < 0 || so->until <= 0 ? -EINVAL : 0;
    case 1310:
        return fatia_parse_duration_usec(arg, &so->sample_every) < 0 || so->sample_every <= 0
                   ? -EINVAL
                   : 0;
    case 1311:
        if (fatia_parse_double(arg, &x) < 0 || x <= 0)
            return -EINVAL;
        so->max_wait_s = x;
        return 0;
    case 1312:
        if (fatia_parse_double(arg, &x) < 0 || x < 1)
            return -EINVAL;
        so->max_slowdown = x;
        return 0;
    }
    return -EINVAL;
}

/* Parses argv into a. Returns -1 to go on, else the exit code to return (help, usage error). */
static int parse_args(int argc, char **argv, struct sim_args *a)
{
    static const struct option opts[] = {FATIA_CLI_INPUT_OPTIONS,
                                         {"trace", required_argument, NULL, 1300},
                                         {"trace-format", required_argument, NULL, 1301},
                                         {"nodes", required_argument, NULL, 1302},
                                         {"placement", required_argument, NULL, 1303},
                                         {"dynamic-mig", required_argument, NULL, 1304},
                                         {"fill", required_argument, NULL, 1305},
                                         {"seed", required_argument, NULL, 1306},
                                         {"checkpoints", required_argument, NULL, 1307},
                                         {"typical-coverage", required_argument, NULL, 1308},
                                         {"until", required_argument, NULL, 1309},
                                         {"sample-every", required_argument, NULL, 1310},
                                         {"max-wait", required_argument, NULL, 1311},
                                         {"max-slowdown", required_argument, NULL, 1312},
                                         {"catalog", required_argument, NULL, 1313},
                                         {"fgd", required_argument, NULL, 1314},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c, r;

    optind = 1;
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        r = fatia_cli_input_opt(&a->in, c, optarg);
        if (r < 0)
            return fatia_cli_input_exit(&a->in, r);
        if (r > 0)
            continue;
        switch (c) {
        case 1300:
            a->trace_path = optarg;
            break;
        case 1302:
            a->nodes_path = optarg;
            break;
        case 1313:
            a->catalog = optarg;
            break;
        case 'h':
            return fatia_cli_help(&fatia_cmd_sim);
        case 1301:
        case 1303:
            if (sim_value(a, c, optarg) < 0)
                return FATIA_EXIT_USAGE; /* named by sim_value */
            break;
        default:
            if (c < 1300 || sim_value(a, c, optarg) < 0)
                return fatia_cli_usage_error(&fatia_cmd_sim, "invalid option or value");
            break;
        }
    }
    if (!a->trace_path)
        return fatia_cli_usage_error(&fatia_cmd_sim, "--trace FILE is required");
    if (a->nodes_path && !a->alibaba)
        return fatia_cli_usage_error(&fatia_cmd_sim,
                                     "--nodes goes with --trace-format alibaba2023");
    return -1;
}

/* The Alibaba node list as NodePools added to the objects. 0 or -ENOMEM; problems in d. */
static int read_nodes(const char *path, struct sim_world *w, struct fatia_diag *d)
{
    json_t *objs = NULL;
    size_t n = 0;
    char *buf = fatia_cli_supply_read_file(path, &n);
    int r = 0;

    if (!buf) {
        fatia_diag_add(d, FATIA_DIAG_ERROR, path, 0, 0, NULL, NULL, "cannot read: %s",
                       fatia_strerror(-errno));
        return 0;
    }
    r = fatia_sim_alibaba_fleet(path, buf, n, &objs, d);
    if (r == 0) {
        r = add_objects(&w->set, objs, path, d);
        json_decref(objs);
    }
    fatia_free(buf);
    return r == -ENOMEM ? r : 0;
}

/* The trace, and for fatia traces the hardware profiles its lines name. 0 or -ENOMEM. */
static int read_trace(const struct sim_args *a, struct sim_world *w, struct fatia_diag *d)
{
    size_t n = 0;
    char *buf = fatia_cli_supply_read_file(a->trace_path, &n);
    int r;

    if (!buf) {
        fatia_diag_add(d, FATIA_DIAG_ERROR, a->trace_path, 0, 0, NULL, NULL, "cannot read: %s",
                       fatia_strerror(-errno));
        return 0;
    }
    r = a->alibaba ? fatia_sim_trace_alibaba(&w->tr, a->trace_path, buf, n, d)
                   : fatia_sim_trace_fatia(&w->tr, a->trace_path, buf, n, d);
    if (r == 0 && !a->alibaba)
        r = fatia_sim_trace_profiles(&w->tr, &w->set, d);
    fatia_free(buf);
    return r == -ENOMEM ? r : 0;
}

/* Loads the objects, the node list, the trace, the catalog; plans the fleet. Each step runs only
 * when the ones before found no error. 0 or -ENOMEM; problems in d. */
static int load_world(const struct sim_args *a, struct sim_world *w, struct fatia_diag *d)
{
    char cpath[512];
    int r;

    if (a->in.paths.n && fatia_objset_load(&w->set, a->in.paths.v, a->in.paths.n, a->in.recursive,
                                           &fatia_demand_checks, d) == -ENOMEM)
        return -ENOMEM;
    if (a->nodes_path && read_nodes(a->nodes_path, w, d) == -ENOMEM)
        return -ENOMEM;
    if (read_trace(a, w, d) == -ENOMEM)
        return -ENOMEM;
    fatia_catalog_default_path(a->catalog, cpath, sizeof(cpath));
    if (!fatia_diag_has_errors(d) && fatia_catalog_load(&w->cat, cpath, d) == -ENOMEM)
        return -ENOMEM;
    if (!fatia_diag_has_errors(d)) {
        r = fatia_supply_config_load(&w->cfg, &w->set, d);
        if (r == -ENOMEM)
            return r;
        w->have_cfg = r == 0;
    }
    if (!fatia_diag_has_errors(d) && fatia_inventory_sim(&w->inv, &w->cfg, &w->cat, d) == -ENOMEM)
        return -ENOMEM;
    if (!fatia_diag_has_errors(d) && fatia_supply_plan(&w->inv, &w->cfg, d, &w->plan) == -ENOMEM)
        return -ENOMEM;
    if (!fatia_diag_has_errors(d) && !w->inv.n_nodes)
        fatia_diag_add(d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                       "no fleet: give NodePools with -f, or --nodes for the Alibaba trace");
    return 0;
}

static void world_release(struct sim_world *w)
{
    fatia_plan_free(w->plan);
    fatia_inventory_release(&w->inv);
    if (w->have_cfg)
        fatia_supply_config_release(&w->cfg);
    fatia_catalog_release(&w->cat);
    fatia_sim_trace_release(&w->tr);
    fatia_objset_release(&w->set);
}

/* Runs the simulation, says on stderr how long it took, prints the report. An exit code. */
static int simulate(const struct sim_args *a, struct sim_world *w, struct fatia_diag *d)
{
    json_t *rep = NULL;
    int64_t t0, t1, c0, c1;
    int r, rc;

    t0 = fatia_now_mono_usec();
    c0 = cpu_usec();
    r = fatia_sim_run(w->plan, &w->set, &w->tr, &a->so, &rep, d);
    c1 = cpu_usec();
    t1 = fatia_now_mono_usec();
    if (r == -ENOMEM)
        fprintf(stderr, "fatia sim: out of memory\n");
    if (r < 0)
        return FATIA_EXIT_FAIL;
    fprintf(stderr,
            "fatia sim: %zu submissions, %lld GPUs, policy %s: simulated in %.3f s (%.3f s of "
            "CPU)\n",
            w->tr.n, (long long)json_integer_value(json_object_get(rep, "totalGpus")),
            fatia_place_policy_name(a->so.policy), (double)(t1 - t0) / 1e6,
            (double)(c1 - c0) / 1e6);
    if (a->in.out == FATIA_OUT_TABLE) {
        if (a->so.fill_pct)
            print_fill(rep);
        else
            print_replay(rep);
        rc = FATIA_EXIT_OK;
    } else {
        rc = fatia_cli_print(rep, a->in.out);
    }
    json_decref(rep);
    return rc;
}

static int run(int argc, char **argv)
{
    struct sim_args a = {.so = {.seed = 42, .n_checkpoints = 6},
                         .cps = {80, 90, 100, 110, 120, 130}};
    struct sim_world w;
    struct fatia_diag d;
    int rc;

    a.so.checkpoints = a.cps;
    fatia_cli_input_init(&a.in, &fatia_cmd_sim, FATIA_OUT_TABLE);
    rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        fatia_cli_input_release(&a.in);
        return rc;
    }
    memset(&w, 0, sizeof(w));
    fatia_objset_init(&w.set);
    fatia_catalog_init(&w.cat);
    fatia_inventory_init(&w.inv);
    fatia_sim_trace_init(&w.tr);
    fatia_diag_init(&d);
    if (load_world(&a, &w, &d) == -ENOMEM) {
        fprintf(stderr, "fatia sim: out of memory\n");
        rc = FATIA_EXIT_FAIL;
    } else if (fatia_diag_has_errors(&d)) {
        rc = FATIA_EXIT_FAIL;
    } else {
        rc = simulate(&a, &w, &d);
    }
    fatia_diag_print(&d, stderr);
    fatia_diag_release(&d);
    world_release(&w);
    fatia_cli_input_release(&a.in);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_sim = {
    .name = "sim",
    .summary = "simulate a trace on a fleet: admission, placement, sharing",
    .usage = usage,
    .run = run,
};
