/*
 * tests/supply/bench_supply.c: the supply planner's benchmark (bench/supply.sh, make
 * bench-supply). A fleet of 10,000 nodes x 8 GPUs with mixed policies, planned on the simulated
 * inventory:
 *
 *     2,000 nodes  8 x H200       time-slicing x4 on GPUs 0-1, MIG all-balanced on 4-5, whole
 *     2,000 nodes  8 x H100 80GB  MIG all-balanced, its 1g.10gb devices time-sliced x2
 *     2,000 nodes  8 x A100 40GB  MPS x4
 *     2,000 nodes  8 x L4         fractions
 *     2,000 nodes  8 x T4         whole
 *
 * Prints `name: value unit` lines: fleet size, slices, the time of each phase (config, sim
 * inventory, plan: median and min of several runs, JSON rendering), and memory (peak RSS of the
 * process, what the plan allocates). The target is planning under 200 ms on one core
 * (bench/supply.sh pins it to one CPU).
 */
#include "base/compat.h"

#include <sys/resource.h>

#include "base/clock.h"
#include "model/objset.h"
#include "supply/catalog.h"
#include "supply/config.h"
#include "supply/inventory.h"
#include "supply/plan.h"

static const char fleet[] =
    "apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: h200}\n"
    "spec: {count: 2000, labels: {pool: h200}, gpus: [{product: H200, count: 8}],\n"
    "       nvlinkIslands: [[0, 1, 2, 3], [4, 5, 6, 7]], resources: {cpu: '128', memory: 2Ti}}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: h100}\n"
    "spec: {count: 2000, labels: {pool: h100}, gpus: [{product: H100-80GB, count: 8}]}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: a100}\n"
    "spec: {count: 2000, labels: {pool: a100}, gpus: [{product: A100-40GB, count: 8}]}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: l4}\n"
    "spec: {count: 2000, labels: {pool: l4}, gpus: [{product: L4, count: 8}]}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: t4}\n"
    "spec: {count: 2000, labels: {pool: t4}, gpus: [{product: T4, count: 8}]}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: h200-ts}\n"
    "spec: {nodeSelector: {matchLabels: {pool: h200}}, gpuIndices: [0, 1],\n"
    "       timeSlicing: {renameByDefault: true, resources: [{name: nvidia.com/gpu, replicas: "
    "4}]}}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: h200-mig}\n"
    "spec: {nodeSelector: {matchLabels: {pool: h200}}, gpuIndices: [4, 5],\n"
    "       mig: {config: all-balanced}}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: h100}\n"
    "spec: {nodeSelector: {matchLabels: {pool: h100}}, mig: {config: all-balanced},\n"
    "       timeSlicing: {resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]}}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: a100}\n"
    "spec: {nodeSelector: {matchLabels: {pool: a100}}, mps: {resources: [{name: "
    "nvidia.com/gpu, replicas: 4}]}}\n"
    "---\napiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: l4}\n"
    "spec: {nodeSelector: {matchLabels: {pool: l4}}, fractional: {}}\n";

static double ms(fatia_usec_t a, fatia_usec_t b)
{
    return (double)(b - a) / 1000.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    struct fatia_objset set;
    struct fatia_catalog cat;
    struct fatia_supply_config cfg;
    struct fatia_inventory inv;
    struct fatia_diag diag;
    struct fatia_plan *plan = NULL;
    struct rusage ru;
    char path[512];
    int runs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 7;
    double t_plan[64];
    fatia_usec_t t0, t1;
    size_t plan_bytes;
    long rss_before, rss_after;

    if (runs < 1 || runs > 64)
        runs = 7;
    fatia_diag_init(&diag);
    fatia_objset_init(&set);
    fatia_catalog_init(&cat);
    fatia_catalog_default_path(NULL, path, sizeof(path));
    if (fatia_catalog_load(&cat, path, &diag) < 0 ||
        fatia_docset_load_buf(&set.docs, "bench-fleet.yaml", fleet, sizeof(fleet) - 1, &diag) < 0) {
        fatia_diag_print(&diag, stderr);
        return 1;
    }
    for (size_t i = 0; i < set.docs.n; i++) {
        struct fatia_decode_opts o = {
            .file = set.docs.docs[i].file, .map = set.docs.map, .pos = set.docs.docs[i].pos};
        struct fatia_object *obj;
        if (fatia_object_decode(set.docs.docs[i].root, &o, NULL, &diag, &obj) < 0 ||
            fatia_objset_add(&set, obj) < 0) {
            fatia_diag_print(&diag, stderr);
            return 1;
        }
    }
    t0 = fatia_now_mono_usec();
    if (fatia_supply_config_load(&cfg, &set, &diag) < 0) {
        fatia_diag_print(&diag, stderr);
        return 1;
    }
    t1 = fatia_now_mono_usec();
    printf("supply_config_ms: %.2f ms\n", ms(t0, t1));
    fatia_inventory_init(&inv);
    t0 = fatia_now_mono_usec();
    if (fatia_inventory_sim(&inv, &cfg, &cat, &diag) < 0) {
        fatia_diag_print(&diag, stderr);
        return 1;
    }
    t1 = fatia_now_mono_usec();
    printf("supply_inventory_sim_ms: %.2f ms\n", ms(t0, t1));
    rss_before = rss_kib();
    for (int r = 0; r < runs; r++) {
        fatia_plan_free(plan);
        plan = NULL;
        t0 = fatia_now_mono_usec();
        if (fatia_supply_plan(&inv, &cfg, &diag, &plan) < 0) {
            fatia_diag_print(&diag, stderr);
            return 1;
        }
        t1 = fatia_now_mono_usec();
        t_plan[r] = ms(t0, t1);
    }
    rss_after = rss_kib();
    qsort(t_plan, (size_t)runs, sizeof(t_plan[0]), cmp_double);
    {
        size_t n_gpus = 0;
        for (size_t i = 0; i < inv.n_nodes; i++)
            n_gpus += inv.nodes[i].n_gpus;
        printf("supply_fleet_nodes: %zu nodes\n", inv.n_nodes);
        printf("supply_fleet_gpus: %zu gpus\n", n_gpus);
        printf("supply_slices: %zu slices\n", plan->n_slices);
        printf("supply_plan_ms: %.2f ms (median of %d)\n", t_plan[runs / 2], runs);
        printf("supply_plan_ms_min: %.2f ms\n", t_plan[0]);
        printf("supply_plan_ms_max: %.2f ms\n", t_plan[runs - 1]);
        printf("supply_plan_ns_per_gpu: %.0f ns\n", t_plan[runs / 2] * 1e6 / (double)n_gpus);
    }
    plan_bytes = plan->slices_cap * sizeof(*plan->slices) + plan->n_nodes * sizeof(*plan->nodes) +
                 plan->caps_cap * sizeof(*plan->caps);
    for (size_t i = 0; i < plan->n_nodes; i++)
        plan_bytes += plan->nodes[i].inv->n_gpus * sizeof(struct fatia_plan_gpu);
    plan_bytes += plan->n_layouts * sizeof(struct fatia_mig_layout);
    printf("supply_plan_memory: %.1f MiB\n", (double)plan_bytes / (1 << 20));
    printf("supply_rss_during_plans: %.1f MiB (RSS growth over the plan runs: %.1f MiB)\n",
           (double)rss_after / 1024, (double)(rss_after - rss_before) / 1024);
    /* rendering every slice as JSON: what `fatia plan -o json` costs (no target) */
    t0 = fatia_now_mono_usec();
    if (!getenv("BENCH_NO_RENDER")) {
        size_t n = 0;
        for (size_t i = 0; i < plan->n_slices; i++) {
            json_t *j = fatia_plan_slice_json(plan, &plan->slices[i]);
            n += j != NULL;
            json_decref(j);
        }
        t1 = fatia_now_mono_usec();
        printf("supply_render_slices_ms: %.2f ms (%zu slices as JSON)\n", ms(t0, t1), n);
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("supply_peak_rss: %.1f MiB\n", (double)ru.ru_maxrss / 1024);
    fatia_plan_free(plan);
    fatia_inventory_release(&inv);
    fatia_supply_config_release(&cfg);
    fatia_catalog_release(&cat);
    fatia_objset_release(&set);
    fatia_diag_release(&diag);
    return 0;
}
