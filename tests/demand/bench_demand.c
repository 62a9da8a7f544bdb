/*
 * tests/demand/bench_demand.c: the demand layer's benchmark (bench/demand.sh, make
 * bench-demand).
 *
 *   - cel_eval_ns: NVIDIA's gpu.nvidia.com DeviceClass selector on one device, and a selector
 *     with a regex and a quantity comparison;
 *   - alloc_firstfit_us: claims for two GPUs of one NVLink island, allocated first-fit over a
 *     fleet of 1,000 nodes x 8 GPUs until it is full (4,000 claims), per claim;
 *   - alloc_node_us: the same claims each restricted to a named node (what placement asks);
 *   - profile_inject_us: a Queue hardware profile injected into a Pod.
 * Prints `name: value unit` lines, medians of the runs given as the first argument (default 5).
 */
#include "base/compat.h"

#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "cel/cel.h"
#include "demand/dra.h"
#include "demand/profile.h"
#include "model/kind.h"

#define NODES 1000
#define GPUS  8

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_demand: %s: %s\n", what, why);
    exit(1);
}

static double bench_cel(const char *expr, const struct fatia_cel_device *dev, int iters)
{
    struct fatia_cel_program *p;
    char why[256];
    fatia_usec_t t0;
    bool m = false;

    if (fatia_cel_compile(expr, strlen(expr), &p, why, sizeof(why)) < 0)
        die("compile", why);
    t0 = fatia_now_mono_usec();
    for (int i = 0; i < iters; i++)
        if (fatia_cel_eval_device(p, dev, 0, &m, NULL, why, sizeof(why)) < 0)
            die("eval", why);
    fatia_cel_program_free(p);
    return (double)(fatia_now_mono_usec() - t0) * 1000.0 / iters;
}

static void build_fleet(struct fatia_dra_inventory *inv, struct fatia_dra_classes *cls)
{
    char why[256];
    json_t *dc;

    fatia_dra_inventory_init(inv);
    fatia_dra_classes_init(cls);
    for (int n = 0; n < NODES; n++) {
        json_t *devs = json_array(), *slice;
        char node[32];
        for (int g = 0; g < GPUS; g++) {
            char name[32];
            snprintf(name, sizeof(name), "gpu-%d", g);
            json_array_append_new(devs, json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:i}},s:{s:{s:s}}}",
                                                  "name", name, "attributes", "type", "string",
                                                  "gpu", "productName", "string", "NVIDIA H200",
                                                  "fatia.dev/nvlinkIsland", "int", g / 4,
                                                  "capacity", "memory", "value", "141Gi"));
        }
        snprintf(node, sizeof(node), "node-%d", n);
        slice = json_pack("{s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:o}}", "metadata", "name", node,
                          "spec", "driver", "gpu.nvidia.com", "nodeName", node, "pool", "name",
                          node, "generation", 1, "resourceSliceCount", 1, "devices", devs);
        if (fatia_dra_inventory_add_slice(inv, slice, why, sizeof(why)) < 0)
            die("slice", why);
        json_decref(slice);
    }
    if (fatia_dra_inventory_finish(inv) < 0)
        die("finish", "out of memory");
    dc = json_loads("{\"metadata\": {\"name\": \"gpu.nvidia.com\"}, \"spec\": {\"selectors\": "
                    "[{\"cel\": {\"expression\": \"device.driver == 'gpu.nvidia.com' && "
                    "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}]}}",
                    0, NULL);
    if (fatia_dra_classes_add(cls, dc, why, sizeof(why)) < 0)
        die("class", why);
    json_decref(dc);
}

/* Allocates claims until the fleet is full; returns microseconds per claim. */
static double bench_alloc(const struct fatia_dra_inventory *inv,
                          const struct fatia_dra_classes *cls, bool per_node, int *ret_ok)
{
    json_t *spec = json_loads("{\"devices\": {\"requests\": [{\"name\": \"g\", \"exactly\": "
                              "{\"deviceClassName\": \"gpu.nvidia.com\", \"count\": 2}}], "
                              "\"constraints\": [{\"matchAttribute\": "
                              "\"fatia.dev/nvlinkIsland\"}]}}",
                              0, NULL);
    struct fatia_dra_state st;
    fatia_usec_t t0;
    int ok = 0, claims = NODES * GPUS / 2;

    fatia_dra_state_init(&st, inv);
    t0 = fatia_now_mono_usec();
    for (int i = 0; i < claims; i++) {
        struct fatia_dra_allocation *a;
        char node[32];
        struct fatia_dra_alloc_opts o = {0};
        snprintf(node, sizeof(node), "node-%d", i % NODES);
        if (per_node)
            o.node = node;
        if (fatia_dra_allocate(inv, cls, &st, spec, &o, &a, NULL) == 0) {
            fatia_dra_state_commit(&st, a);
            fatia_dra_allocation_free(a);
            ok++;
        }
    }
    *ret_ok = ok;
    fatia_dra_state_release(&st);
    json_decref(spec);
    return (double)(fatia_now_mono_usec() - t0) / claims;
}

static const json_t *lookup(void *ud, const char *ns, const char *name)
{
    (void)ns;
    (void)name;
    return ud;
}

static double bench_profile(int iters)
{
    json_t *hwp = json_loads(
        "{\"apiVersion\": \"infrastructure.opendatahub.io/v1\", \"kind\": \"HardwareProfile\", "
        "\"metadata\": {\"name\": \"nb\", \"namespace\": \"cat\"}, \"spec\": {\"identifiers\": ["
        "{\"displayName\": \"CPU\", \"identifier\": \"cpu\", \"minCount\": 1, \"defaultCount\": 2, "
        "\"maxCount\": 4}, {\"displayName\": \"Memory\", \"identifier\": \"memory\", \"minCount\": "
        "\"4Gi\", \"defaultCount\": \"16Gi\"}, {\"displayName\": \"GPU\", \"identifier\": "
        "\"nvidia.com/gpu\", \"minCount\": 1, \"defaultCount\": 1}], \"scheduling\": {\"type\": "
        "\"Queue\", \"kueue\": {\"localQueueName\": \"gpu\", \"priorityClass\": \"high\"}}}}",
        0, NULL);
    json_t *pod = json_loads("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
                             "\"p\", \"namespace\": \"a\", \"annotations\": "
                             "{\"opendatahub.io/hardware-profile-name\": \"nb\", "
                             "\"opendatahub.io/hardware-profile-namespace\": \"cat\"}}, "
                             "\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"x\"}]}}",
                             0, NULL);
    const struct fatia_kind *k = fatia_kind_by_name("Pod");
    fatia_usec_t t0 = fatia_now_mono_usec();

    for (int i = 0; i < iters; i++) {
        json_t *obj = json_deep_copy(pod);
        struct fatia_diag diag;
        fatia_diag_init(&diag);
        if (fatia_profile_admit(k, NULL, obj, lookup, hwp, &diag) < 0)
            die("profile", diag.n ? diag.v[0].msg : "?");
        fatia_diag_release(&diag);
        json_decref(obj);
    }
    json_decref(pod);
    json_decref(hwp);
    return (double)(fatia_now_mono_usec() - t0) / iters;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5, ok_ff = 0, ok_node = 0;
    static struct fatia_semver ver;
    struct fatia_cel_attr attrs[] = {
        {"type", FATIA_CEL_ATTR_STRING, 0, false, "gpu", NULL},
        {"productName", FATIA_CEL_ATTR_STRING, 0, false, "NVIDIA H200", NULL},
        {"driverVersion", FATIA_CEL_ATTR_VERSION, 0, false, "580.159.4", &ver},
        {"fatia.dev/nvlinkIsland", FATIA_CEL_ATTR_INT, 0, false, NULL, NULL},
    };
    struct fatia_cel_capacity caps[1] = {{"memory", {0}}};
    struct fatia_cel_device dev = {"gpu.nvidia.com", attrs, 4, caps, 1, false};
    struct fatia_dra_inventory inv;
    struct fatia_dra_classes cls;
    double cel1[32], cel2[32], ff[32], node[32], prof[32];

    if (runs < 1 || runs > 32)
        runs = 5;
    fatia_semver_parse("580.159.4", false, &ver, NULL, 0);
    fatia_quantity_parse("141Gi", &caps[0].value, NULL, 0);
    build_fleet(&inv, &cls);
    for (int r = 0; r < runs; r++) {
        cel1[r] = bench_cel("device.driver == 'gpu.nvidia.com' && "
                            "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                            &dev, 200000);
        cel2[r] = bench_cel("device.attributes['gpu.nvidia.com'].productName.lowerAscii()."
                            "matches('^nvidia h[12]00$') && device.capacity['gpu.nvidia.com']."
                            "memory.compareTo(quantity('80Gi')) >= 0",
                            &dev, 100000);
        ff[r] = bench_alloc(&inv, &cls, false, &ok_ff);
        node[r] = bench_alloc(&inv, &cls, true, &ok_node);
        prof[r] = bench_profile(20000);
    }
    printf("fleet: %d nodes x %d GPUs\n", NODES, GPUS);
    printf("cel_eval_nvidia_class_ns: %.0f ns\n", median(cel1, runs));
    printf("cel_eval_regex_quantity_ns: %.0f ns\n", median(cel2, runs));
    printf("alloc_firstfit_us: %.1f us per claim (%d claims fitted)\n", median(ff, runs), ok_ff);
    printf("alloc_node_us: %.1f us per claim (%d claims fitted)\n", median(node, runs), ok_node);
    printf("profile_inject_us: %.1f us per pod\n", median(prof, runs));
    fatia_dra_classes_release(&cls);
    fatia_dra_inventory_release(&inv);
    return 0;
}
