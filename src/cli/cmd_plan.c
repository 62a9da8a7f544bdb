/*
 * cli/cmd_plan.c: `fatia plan`: read the fleet and the sharing policies, take the inventory,
 * print nodes (capacity, allocatable, labels) and the slices each GPU is cut into.
 *
 * The table view is what a person reads first: one block per node (its capacity, then one line
 * per GPU: island, product, memory, how it is cut, with a MIG layout drawn as its memory slices,
 * the state, and the slices it yields). -o json is the supply layer's document (docs/supply.md);
 * --resourceslices prints the resource.k8s.io/v1 ResourceSlices instead. --apply (nvml inventory
 * only) makes the GPUs match the plan's MIG layouts, then plans again and prints the result.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/supply_cli.h"
#include "supply/nvml.h"

static const char usage[] =
    "Usage: fatia plan [-f PATH]... [--inventory auto|nvml|sim] [-o table|json|yaml]\n"
    "\n"
    "Read the fleet (NodePools) and the sharing policies (GPUSharingPolicies), take the GPU\n"
    "inventory, and print every node's capacity, allocatable and labels, and the slices each\n"
    "GPU is cut into (whole GPUs, time-slice replicas, MPS shares, MIG instances, fractions).\n"
    "A box with no NVIDIA driver plans its simulated fleet and says so; without -f that is\n"
    "data/fleets/default.yaml (one node, 8 x H200). A policy asking for MIG on a GPU whose MIG\n"
    "mode is off is printed as planned, not applied.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH          file, directory or '-' (repeatable)\n"
    "  -R, --recursive              descend into subdirectories\n"
    "      --inventory MODE         auto (default: NVML when it finds a GPU, else sim), nvml, sim\n"
    "  -o, --output FORMAT          table (default), json or yaml\n"
    "      --resourceslices         print resource.k8s.io/v1 ResourceSlices (json or yaml)\n"
    "      --catalog PATH           GPU catalog (default $FATIA_DATA_DIR/gpus or data/gpus)\n"
    "      --nvml-lib PATH          the NVML library to load (default libnvidia-ml.so.1)\n"
    "      --node-name NAME         the node name of the nvml inventory (default: host name)\n"
    "      --pool NAME              the NodePool whose labels the nvml node takes\n"
    "      --device-plugin-config FILE   import a k8s-device-plugin config (ConfigMap or file)\n"
    "      --device-plugin-default KEY   its config for nodes without the selection label\n"
    "      --mig-parted-config FILE      import a mig-parted config (ConfigMap or file)\n"
    "      --apply                  make the GPUs match the planned MIG layouts (nvml only;\n"
    "                               refuses a real driver unless FATIA_ALLOW_MIG_APPLY=1)\n"
    "\n"
    "Exit status: 0 planned, 1 invalid input or failure (errors on stderr), 2 usage.\n";

static void human_gib(uint64_t b, char *buf, size_t n)
{
    snprintf(buf, n, "%.1f GiB", (double)b / (double)(UINT64_C(1) << 30));
}

/* A MIG layout drawn as its memory slices: [2g.35gb    |1g.18|1g.18|3g.71gb                ] */
static void draw_layout(const struct fatia_plan_gpu *g, char *buf, size_t n)
{
    const struct fatia_mig_geom *geom = g->inv->model->mig;
    size_t o = 0;
    unsigned s = 0;

    buf[0] = '\0';
    if (!geom)
        return;
    o += (size_t)snprintf(buf + o, n - o, "[");
    while (s < geom->memory_slices && o < n) {
        const struct fatia_mig_placement *pl = NULL;
        unsigned width;
        for (unsigned i = 0; i < g->layout->n; i++)
            if (g->layout->v[i].start == s)
                pl = &g->layout->v[i];
        width = pl ? pl->profile->memory_slices * 6u - 1 : 5;
        if (pl)
            o += (size_t)snprintf(buf + o, n - o, "%-*.*s", (int)width, (int)width,
                                  pl->profile->name);
        else
            o += (size_t)snprintf(buf + o, n - o, ".....");
        s += pl ? pl->profile->memory_slices : 1;
        if (o < n)
            o += (size_t)snprintf(buf + o, n - o, "%s", s < geom->memory_slices ? "|" : "]");
    }
}

static void cut_text(const struct fatia_plan *plan, const struct fatia_plan_gpu *g, char *buf,
                     size_t n)
{
    char lay[256], mem[32];
    const struct fatia_slice *s = g->n_slices ? &plan->slices[g->first_slice] : NULL;

    if (g->mig_enabled) {
        draw_layout(g, lay, sizeof(lay));
        snprintf(buf, n, "MIG %s %s%s", fatia_mig_strategy_name(g->strategy), lay,
                 g->replicas > 1 ? " time-sliced" : "");
        return;
    }
    if (!s) {
        snprintf(buf, n, "-");
        return;
    }
    human_gib(s->memory_bytes, mem, sizeof(mem));
    switch (s->kind) {
    case FATIA_SLICE_TIMESLICE:
        snprintf(buf, n, "time-slicing x%u, %s each", g->replicas, mem);
        break;
    case FATIA_SLICE_MPS:
        snprintf(buf, n, "MPS x%u, %u%% SMs, %s each", g->replicas, s->thread_percentage, mem);
        break;
    case FATIA_SLICE_FRACTION:
        snprintf(buf, n, "fractions (gpu-milli, gpu-memory)");
        break;
    default:
        snprintf(buf, n, "whole");
    }
}

static void slices_text(const struct fatia_plan *plan, const struct fatia_plan_gpu *g, char *buf,
                        size_t n)
{
    size_t o = 0;

    buf[0] = '\0';
    /* count per resource, in order of appearance */
    for (uint32_t i = 0; i < g->n_slices && o < n; i++) {
        const struct fatia_slice *s = &plan->slices[g->first_slice + i];
        uint32_t count = 0;
        bool seen = false;
        for (uint32_t j = 0; j < i; j++)
            seen |= plan->slices[g->first_slice + j].resource == s->resource;
        if (seen)
            continue;
        for (uint32_t j = i; j < g->n_slices; j++)
            count += plan->slices[g->first_slice + j].resource == s->resource;
        o += (size_t)snprintf(buf + o, n - o, "%s%u %s", o ? ", " : "", count,
                              plan->resources[s->resource]);
    }
}

static void print_caps(const char *what, json_t *caps)
{
    const char *k;
    json_t *v;
    bool first = true;

    printf("  %-12s", what);
    json_object_foreach(caps, k, v)
    {
        printf("%s%s=%s", first ? "" : ", ", k, json_string_value(v));
        first = false;
    }
    printf("%s\n", first ? "-" : "");
}

static int print_table(const struct fatia_plan *plan)
{
    static const char *const headers[] = {"GPU", "ISLAND", "PRODUCT", "MEMORY",
                                          "CUT", "STATE",  "SLICES"};
    size_t n_gpus = 0;

    for (size_t i = 0; i < plan->n_nodes; i++)
        n_gpus += plan->nodes[i].inv->n_gpus;
    printf("INVENTORY %s: %zu node%s, %zu GPU%s, %zu slices%s%s\n",
           plan->inv->source == FATIA_INV_SIM ? "sim (simulated fleet)" : "nvml", plan->n_nodes,
           plan->n_nodes == 1 ? "" : "s", n_gpus, n_gpus == 1 ? "" : "s", plan->n_slices,
           plan->inv->note[0] ? "; " : "", plan->inv->note);
    for (size_t i = 0; i < plan->n_nodes; i++) {
        const struct fatia_plan_node *pn = &plan->nodes[i];
        json_t *nj = fatia_plan_node_json(plan, i);
        struct fatia_table *t = fatia_table_new(FATIA_ARRAY_SIZE(headers), headers);
        if (!nj || !t) {
            json_decref(nj);
            fatia_table_free(t);
            return FATIA_EXIT_FAIL;
        }
        printf("\nNODE %s%s%s  sharing=%s\n", pn->inv->name, pn->inv->pool ? "  pool=" : "",
               pn->inv->pool ? pn->inv->pool->name : "",
               fatia_json_str(json_object_get(nj, "labels"), "fatia.dev/sharing-strategy")
                   ? fatia_json_str(json_object_get(nj, "labels"), "fatia.dev/sharing-strategy")
                   : "none");
        print_caps("capacity", json_object_get(nj, "capacity"));
        if (!fatia_json_equal(json_object_get(nj, "capacity"), json_object_get(nj, "allocatable")))
            print_caps("allocatable", json_object_get(nj, "allocatable"));
        for (uint32_t g = 0; g < pn->inv->n_gpus; g++) {
            const struct fatia_plan_gpu *pg = &pn->gpus[g];
            char mem[32], cut[320], sl[320];
            human_gib(pg->inv->model->memory_bytes, mem, sizeof(mem));
            cut_text(plan, pg, cut, sizeof(cut));
            slices_text(plan, pg, sl, sizeof(sl));
            fatia_table_addf(t, "%" PRIu32 "\t%d\t%s\t%s\t%s\t%s\t%s", pg->inv->index,
                             pg->inv->island, pg->inv->model->product, mem, cut,
                             fatia_slice_state_name(pg->state), sl);
        }
        if (pn->inv->n_gpus) {
            printf("\n");
            fatia_table_print(t, stdout);
        }
        fatia_table_free(t);
        json_decref(nj);
    }
    return FATIA_EXIT_OK;
}

static int print_output(const struct fatia_plan *plan, enum fatia_output out, bool rs)
{
    json_t *doc;
    int rc;

    if (rs) {
        json_t *items = json_array();
        for (size_t i = 0; items && i < plan->n_nodes; i++) {
            json_t *a = fatia_plan_resourceslices(plan, i);
            if (!a || json_array_extend(items, a) < 0) {
                json_decref(a);
                json_decref(items);
                items = NULL;
                break;
            }
            json_decref(a);
        }
        doc = items ? json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", items)
                    : NULL;
    } else if (out == FATIA_OUT_TABLE) {
        return print_table(plan);
    } else {
        doc = fatia_plan_to_json(plan);
    }
    if (!doc) {
        fprintf(stderr, "fatia plan: out of memory\n");
        return FATIA_EXIT_FAIL;
    }
    rc = fatia_cli_print(doc, out == FATIA_OUT_TABLE ? FATIA_OUT_JSON : out);
    json_decref(doc);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {SUPPLY_LONG_OPTIONS,
                                         {"resourceslices", no_argument, NULL, 1100},
                                         {"apply", no_argument, NULL, 1101},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct supply_opts o = {0};
    struct supply_session s;
    bool rs = false, apply = false;
    int c, r, rc;

    optind = 1;
    fatia_cli_input_init(&o.in, &fatia_cmd_plan, FATIA_OUT_TABLE);
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        r = fatia_cli_supply_opt(&o, c, optarg, "plan");
        if (r < 0) {
            fatia_cli_supply_opts_release(&o);
            return FATIA_EXIT_USAGE;
        }
        if (r > 0)
            continue;
        switch (c) {
        case 1100:
            rs = true;
            break;
        case 1101:
            apply = true;
            break;
        case 'h':
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_help(&fatia_cmd_plan);
        default:
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_usage_error(&fatia_cmd_plan, "unknown option");
        }
    }
    if ((r = fatia_cli_input_args(&o.in, optind, argc, argv, false)) < 0) {
        rc = fatia_cli_input_exit(&o.in, r);
        fatia_cli_supply_opts_release(&o);
        return rc;
    }
    if (apply && o.inventory != SUPPLY_INV_NVML) {
        fatia_cli_supply_opts_release(&o);
        return fatia_cli_usage_error(&fatia_cmd_plan, "--apply needs --inventory nvml");
    }
    rc = fatia_cli_supply_session_open(&s, &o, "plan");
    if (rc == FATIA_EXIT_OK && apply) {
        struct fatia_apply_report rep = {0};
        struct fatia_diag d;
        const char *allow = getenv("FATIA_ALLOW_MIG_APPLY");
        fatia_diag_init(&d);
        if (fatia_nvml_apply(s.plan, o.nvml_lib, allow && !strcmp(allow, "1"), &rep, &d) < 0)
            rc = FATIA_EXIT_FAIL;
        for (size_t i = 0; i < rep.n; i++)
            fprintf(stderr, "apply: %s\n", rep.lines[i]);
        fatia_diag_print(&d, stderr);
        fprintf(stderr, "apply: %zu GPU%s changed, %zu failed\n", rep.n_changed,
                rep.n_changed == 1 ? "" : "s", rep.n_failed);
        fatia_apply_report_release(&rep);
        fatia_diag_release(&d);
        if (fatia_cli_supply_session_replan(&s, &o, "plan") != FATIA_EXIT_OK)
            rc = FATIA_EXIT_FAIL;
    }
    if (s.plan) {
        int prc = print_output(s.plan, o.in.out, rs);
        if (prc != FATIA_EXIT_OK)
            rc = prc;
    }
    fatia_cli_supply_session_close(&s);
    fatia_cli_supply_opts_release(&o);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_plan = {
    .name = "plan",
    .summary = "cut GPUs into slices: fleet + sharing policies -> nodes and slices",
    .usage = usage,
    .run = run,
};
