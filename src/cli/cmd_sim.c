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
    "      --placement POLICY     binpack (default), bestfit, spread or fragmentation\n"
    "      --dynamic-mig MODE     off (default), free or evict\n"
    "      --fill PCT             the FGD experiment: draw pods at random with replacement, no\n"
    "                             departures, until the GPUs asked for reach PCT% of the fleet's\n"
    "      --seed N               random seed of --fill (default 42)\n"
    "      --checkpoints LIST     requested loads to report at, in % (default\n"
    "                             80,90,100,110,120,130)\n"
    "      --typical-coverage PCT the fragmentation measure's typical request types cover this\n"
    "                             share of pods (default 60, the FGD artifact's; 100: all)\n"
    "      --until DURATION       stop at this virtual time (e.g. 24h)\n"
    "      --sample-every DURATION  time between samples of the series (default: 200 samples)\n"
    "      --max-wait SECONDS     a user waiting longer is not served (slowdown model)\n"
    "      --max-slowdown X       a user slowed more is not served (slowdown model)\n"
    "      --catalog PATH         GPU catalog (default $FATIA_DATA_DIR/gpus or data/gpus)\n"
    "  -o, --output FORMAT        table (default), json or yaml\n"
    "\n"
    "Exit status: 0 done, 1 invalid input, 2 usage.\n";

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

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"filename", required_argument, NULL, 'f'},
                                         {"recursive", no_argument, NULL, 'R'},
                                         {"output", required_argument, NULL, 'o'},
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
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static unsigned cps[16] = {80, 90, 100, 110, 120, 130};
    struct fatia_sim_opts so = {.seed = 42, .checkpoints = cps, .n_checkpoints = 6};
    FATIA_VEC(char *) paths = {0};
    const char *trace_path = NULL, *nodes_path = NULL, *catalog = NULL;
    bool recursive = false, alibaba = false;
    enum fatia_output out = FATIA_OUT_TABLE;
    struct fatia_objset set;
    struct fatia_catalog cat;
    struct fatia_supply_config cfg;
    struct fatia_inventory inv;
    struct fatia_plan *plan = NULL;
    struct fatia_sim_trace tr;
    struct fatia_diag d;
    bool have_cfg = false;
    char *buf = NULL, cpath[512];
    size_t n = 0;
    json_t *rep = NULL;
    int c, rc = FATIA_EXIT_FAIL, r;
    int64_t t0, t1, c0, c1;
    double x;

    optind = 1;
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (FATIA_VEC_PUSH(&paths, optarg) < 0)
                return FATIA_EXIT_FAIL;
            break;
        case 'R':
            recursive = true;
            break;
        case 'o':
            if (fatia_cli_parse_output(optarg, &out) < 0)
                goto usage_out;
            break;
        case 1300:
            trace_path = optarg;
            break;
        case 1301:
            if (!strcmp(optarg, "alibaba2023"))
                alibaba = true;
            else if (!strcmp(optarg, "fatia"))
                alibaba = false;
            else {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_sim,
                                             "unknown trace format '%s': expected alibaba2023 "
                                             "or fatia",
                                             optarg);
            }
            break;
        case 1302:
            nodes_path = optarg;
            break;
        case 1303:
            if (fatia_place_policy_parse(optarg, &so.policy) < 0) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_sim,
                                             "unknown placement policy '%s': expected binpack, "
                                             "bestfit, spread or fragmentation",
                                             optarg);
            }
            break;
        case 1304:
            if (!strcmp(optarg, "off"))
                so.mig = FATIA_PLACE_MIG_OFF;
            else if (!strcmp(optarg, "free"))
                so.mig = FATIA_PLACE_MIG_FREE;
            else if (!strcmp(optarg, "evict"))
                so.mig = FATIA_PLACE_MIG_EVICT;
            else
                goto usage_out;
            break;
        case 1305: {
            int v;
            if (fatia_parse_int(optarg, 1, 1000, &v) < 0)
                goto usage_out;
            so.fill_pct = (unsigned)v;
            break;
        }
        case 1306:
            if (fatia_parse_u64(optarg, &so.seed) < 0)
                goto usage_out;
            break;
        case 1307:
            if (parse_checkpoints(optarg, cps, FATIA_ARRAY_SIZE(cps), &so.n_checkpoints) < 0)
                goto usage_out;
            break;
        case 1308: {
            int v;
            if (fatia_parse_int(optarg, 1, 100, &v) < 0)
                goto usage_out;
            so.mix_coverage = (unsigned)v;
            break;
        }
        case 1309:
            if (fatia_parse_duration_usec(optarg, &so.until) < 0 || so.until <= 0)
                goto usage_out;
            break;
        case 1310:
            if (fatia_parse_duration_usec(optarg, &so.sample_every) < 0 || so.sample_every <= 0)
                goto usage_out;
            break;
        case 1311:
            if (fatia_parse_double(optarg, &x) < 0 || x <= 0)
                goto usage_out;
            so.max_wait_s = x;
            break;
        case 1312:
            if (fatia_parse_double(optarg, &x) < 0 || x < 1)
                goto usage_out;
            so.max_slowdown = x;
            break;
        case 1313:
            catalog = optarg;
            break;
        case 'h':
            FATIA_VEC_RELEASE(&paths);
            return fatia_cli_help(&fatia_cmd_sim);
        default:
            goto usage_out;
        }
    }
    if (!trace_path) {
        FATIA_VEC_RELEASE(&paths);
        return fatia_cli_usage_error(&fatia_cmd_sim, "--trace FILE is required");
    }
    if (nodes_path && !alibaba) {
        FATIA_VEC_RELEASE(&paths);
        return fatia_cli_usage_error(&fatia_cmd_sim,
                                     "--nodes goes with --trace-format alibaba2023");
    }
    fatia_objset_init(&set);
    fatia_catalog_init(&cat);
    fatia_inventory_init(&inv);
    fatia_sim_trace_init(&tr);
    fatia_diag_init(&d);
    if (paths.n &&
        fatia_objset_load(&set, paths.v, paths.n, recursive, &fatia_demand_checks, &d) == -ENOMEM)
        goto oom;
    if (nodes_path) {
        json_t *objs = NULL;
        if (!(buf = supply_read_file(nodes_path, &n))) {
            fatia_diag_add(&d, FATIA_DIAG_ERROR, nodes_path, 0, 0, NULL, NULL, "cannot read: %s",
                           fatia_strerror(-errno));
        } else if ((r = fatia_sim_alibaba_fleet(nodes_path, buf, n, &objs, &d)) == -ENOMEM) {
            goto oom;
        } else if (r == 0) {
            r = add_objects(&set, objs, nodes_path, &d);
            json_decref(objs);
            if (r == -ENOMEM)
                goto oom;
        }
        fatia_free(buf);
        buf = NULL;
    }
    if (!(buf = supply_read_file(trace_path, &n))) {
        fatia_diag_add(&d, FATIA_DIAG_ERROR, trace_path, 0, 0, NULL, NULL, "cannot read: %s",
                       fatia_strerror(-errno));
    } else {
        r = alibaba ? fatia_sim_trace_alibaba(&tr, trace_path, buf, n, &d)
                    : fatia_sim_trace_fatia(&tr, trace_path, buf, n, &d);
        if (r == -ENOMEM)
            goto oom;
        if (r == 0 && !alibaba && fatia_sim_trace_profiles(&tr, &set, &d) == -ENOMEM)
            goto oom;
    }
    fatia_free(buf);
    buf = NULL;
    fatia_catalog_default_path(catalog, cpath, sizeof(cpath));
    if (!fatia_diag_has_errors(&d) && fatia_catalog_load(&cat, cpath, &d) == -ENOMEM)
        goto oom;
    if (!fatia_diag_has_errors(&d)) {
        r = fatia_supply_config_load(&cfg, &set, &d);
        if (r == -ENOMEM)
            goto oom;
        have_cfg = r == 0;
    }
    if (!fatia_diag_has_errors(&d) && fatia_inventory_sim(&inv, &cfg, &cat, &d) == -ENOMEM)
        goto oom;
    if (!fatia_diag_has_errors(&d) && fatia_supply_plan(&inv, &cfg, &d, &plan) == -ENOMEM)
        goto oom;
    if (!fatia_diag_has_errors(&d) && !inv.n_nodes)
        fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, NULL,
                       "no fleet: give NodePools with -f, or --nodes for the Alibaba trace");
    if (fatia_diag_has_errors(&d))
        goto done;
    t0 = fatia_now_mono_usec();
    c0 = cpu_usec();
    r = fatia_sim_run(plan, &set, &tr, &so, &rep, &d);
    c1 = cpu_usec();
    t1 = fatia_now_mono_usec();
    if (r == -ENOMEM)
        goto oom;
    if (r < 0)
        goto done;
    fprintf(stderr,
            "fatia sim: %zu submissions, %lld GPUs, policy %s: simulated in %.3f s (%.3f s of "
            "CPU)\n",
            tr.n, (long long)json_integer_value(json_object_get(rep, "totalGpus")),
            fatia_place_policy_name(so.policy), (double)(t1 - t0) / 1e6, (double)(c1 - c0) / 1e6);
    if (out == FATIA_OUT_TABLE) {
        if (so.fill_pct)
            print_fill(rep);
        else
            print_replay(rep);
        rc = FATIA_EXIT_OK;
    } else {
        rc = fatia_cli_print(rep, out);
    }
    goto done;
oom:
    fprintf(stderr, "fatia sim: out of memory\n");
    rc = FATIA_EXIT_FAIL;
done:
    fatia_diag_print(&d, stderr);
    fatia_diag_release(&d);
    json_decref(rep);
    fatia_free(buf);
    fatia_plan_free(plan);
    fatia_inventory_release(&inv);
    if (have_cfg)
        fatia_supply_config_release(&cfg);
    fatia_catalog_release(&cat);
    fatia_sim_trace_release(&tr);
    fatia_objset_release(&set);
    FATIA_VEC_RELEASE(&paths);
    return rc;
usage_out:
    FATIA_VEC_RELEASE(&paths);
    return fatia_cli_usage_error(&fatia_cmd_sim, "invalid option or value");
}

const struct fatia_cli_cmd fatia_cmd_sim = {
    .name = "sim",
    .summary = "simulate a trace on a fleet: admission, placement, sharing",
    .usage = usage,
    .run = run,
};
