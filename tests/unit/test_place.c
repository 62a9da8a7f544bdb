/*
 * tests/unit/test_place.c: the placement state and the fragmentation measure.
 *
 *   - the FGD measure on the worked example of demand/place_frag.c (two fraction-pool GPUs left
 *     with 600 and 300 milli-GPUs, a mix of "500 milli, 4 CPUs" and "one whole GPU, 4 CPUs"):
 *     F = 600; with too little CPU left for either type F is all that is free (900); a node with
 *     nothing free shows 0; the typical-type rule (steps of ten, 60 % coverage);
 *   - the FGD artifact's variants: CPU-only pods as types of the mix (each shows all of R_n:
 *     700 on the worked example), types that ignore memory, a frozen mix ignores later pods, and random tie-breaking
 *     spreads equal candidates over the tied nodes where the deterministic rule always takes the
 *     first (and the same seed gives the same choices);
 *   - fatia's scarcity key (FATIA_PLACE_FGD_SCARCE): with model A (6 GPUs, 40 % of the pods only
 *     run there) and model B (2 GPUs, 30 %), FGD sends a pod that runs anywhere to B (there it
 *     strands least for A's pods) while B is the scarcer model per free GPU: the key sends it to
 *     A; with no choosy type in the mix the key changes no decision;
 *   - a gang that does not fit leaves the state exactly as it was, and says why;
 *   - FATIA_PLACE_TEST answers on the empty fleet and changes nothing;
 *   - MPS: pods of another namespace never share an MPS GPU;
 *   - random place / commit / unbind over a fleet with every slice kind keeps every invariant
 *     (fatia_place_check) and ends with nothing allocated.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/error.h"
#include "base/json.h"
#include "demand/demand.h"
#include "demand/place.h"
#include "model/object.h"
#include "model/objset.h"
#include "supply/catalog.h"
#include "supply/config.h"
#include "supply/inventory.h"
#include "supply/plan.h"

struct fleet {
    struct fatia_objset set;
    struct fatia_catalog cat;
    struct fatia_supply_config cfg;
    struct fatia_inventory inv;
    struct fatia_plan *plan;
    struct fatia_place_state *st;
};

static void load_yaml(struct fatia_objset *set, const char *yaml)
{
    struct fatia_diag d;
    size_t first = set->docs.n;

    fatia_diag_init(&d);
    assert_int_equal(fatia_docset_load_buf(&set->docs, "test.yaml", yaml, strlen(yaml), &d), 0);
    for (size_t i = first; i < set->docs.n; i++) {
        const struct fatia_doc *doc = &set->docs.docs[i];
        struct fatia_decode_opts opts = {.file = doc->file, .map = set->docs.map, .pos = doc->pos};
        struct fatia_object *o;
        if (fatia_object_decode(doc->root, &opts, &fatia_demand_checks, &d, &o) < 0) {
            fatia_diag_print(&d, stderr);
            fail();
        }
        assert_int_equal(fatia_objset_add(set, o), 0);
    }
    fatia_diag_release(&d);
}

static void fleet_open(struct fleet *f, const char *yaml)
{
    struct fatia_diag d;

    memset(f, 0, sizeof(*f));
    fatia_objset_init(&f->set);
    fatia_catalog_init(&f->cat);
    fatia_inventory_init(&f->inv);
    fatia_diag_init(&d);
    load_yaml(&f->set, yaml);
    assert_int_equal(fatia_catalog_load(&f->cat, FATIA_SOURCE_DIR "/data/gpus", &d), 0);
    assert_int_equal(fatia_supply_config_load(&f->cfg, &f->set, &d), 0);
    assert_int_equal(fatia_inventory_sim(&f->inv, &f->cfg, &f->cat, &d), 0);
    if (fatia_supply_plan(&f->inv, &f->cfg, &d, &f->plan) < 0) {
        fatia_diag_print(&d, stderr);
        fail();
    }
    fatia_diag_release(&d);
    assert_int_equal(fatia_place_state_new(f->plan, &f->st), 0);
}

static void fleet_close(struct fleet *f)
{
    fatia_place_state_free(f->st);
    fatia_plan_free(f->plan);
    fatia_inventory_release(&f->inv);
    fatia_supply_config_release(&f->cfg);
    fatia_catalog_release(&f->cat);
    fatia_objset_release(&f->set);
}

/* A pod from a JSON spec text. */
static struct fatia_place_pod *pod(struct fatia_place_state *st, const char *ns, const char *spec)
{
    json_error_t e;
    json_t *j = json_loads(spec, 0, &e);
    struct fatia_place_pod *p = NULL;
    char why[256];

    assert_non_null(j);
    if (fatia_place_pod_compile(st, ns, NULL, j, NULL, 0, 0, &p, why, sizeof(why)) < 0) {
        fprintf(stderr, "compile: %s\n", why);
        fail();
    }
    json_decref(j);
    return p;
}

static struct fatia_place_pod *frac_pod(struct fatia_place_state *st, int milli, int cpu)
{
    char spec[256];
    snprintf(spec, sizeof(spec),
             "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"fatia.dev/gpu-milli\":\"%d\",\"cpu\":\"%d\"}}}]}",
             milli, cpu);
    return pod(st, "default", spec);
}

static void check(const struct fatia_place_state *st)
{
    char why[256];
    int r = fatia_place_check(st, why, sizeof(why));
    if (r < 0)
        fprintf(stderr, "invariant: %s\n", why);
    assert_int_equal(r, 0);
}

/* places and commits one pod; returns whether it was placed */
static bool place1(struct fatia_place_state *st, struct fatia_place_pod *p, const char *key,
                   const struct fatia_place_opts *o)
{
    struct fatia_place_result *r = NULL;
    bool placed;

    assert_int_equal(fatia_place_workload(st, &p, 1, o, &r), 0);
    placed = r->placed;
    if (placed)
        assert_int_equal(fatia_place_commit(st, &p, &key, r), 0);
    fatia_place_result_free(r);
    check(st);
    return placed;
}

static const char frac_fleet[] = "apiVersion: fatia.dev/v1alpha1\n"
                                 "kind: NodePool\n"
                                 "metadata: {name: pool}\n"
                                 "spec:\n"
                                 "  resources: {cpu: '16', memory: 64Gi, pods: '110'}\n"
                                 "  gpus: [{product: T4, count: 2}]\n"
                                 "---\n"
                                 "apiVersion: fatia.dev/v1alpha1\n"
                                 "kind: GPUSharingPolicy\n"
                                 "metadata: {name: frac}\n"
                                 "spec: {fractional: {}}\n";

static void test_frag_worked_example(void **state)
{
    struct fleet f;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_BINPACK};
    struct fatia_place_pod *a, *b, *x, *y, *cpu;
    struct fatia_place_mix *mix;

    (void)state;
    fleet_open(&f, frac_fleet);
    a = frac_pod(f.st, 400, 1);
    b = frac_pod(f.st, 700, 1);
    /* binpack: 400 on GPU 0, then 700 does not fit GPU 0's 600: GPU 1 */
    assert_true(place1(f.st, a, "default/a", &o));
    assert_true(place1(f.st, b, "default/b", &o));
    assert_int_equal(fatia_place_gpu_free_milli(f.st, 0), 600);
    assert_int_equal(fatia_place_gpu_free_milli(f.st, 1), 300);

    assert_int_equal(fatia_place_mix_new(f.st, 100, &mix), 0);
    x = frac_pod(f.st, 500, 4);
    y = frac_pod(f.st, 1000, 4);
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_int_equal(fatia_place_mix_add(mix, y), 0);
    assert_int_equal(fatia_place_mix_types(mix), 2);
    /* 500-milli type: GPU 0 fits, GPU 1's 300 stranded; whole type: nothing fully free: 900 */
    assert_true(fatia_place_frag_node(mix, 0) > 600 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 0) < 600 + 1e-9);
    assert_true(fatia_place_frag_total(mix) > 600 - 1e-9);

    /* CPU short for both types: everything free is fragmented */
    cpu = pod(f.st, "default",
              "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"13\"}}}]}");
    assert_true(place1(f.st, cpu, "default/cpu", &o));
    assert_true(fatia_place_frag_node(mix, 0) > 900 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 0) < 900 + 1e-9);
    assert_int_equal(fatia_place_unbind(f.st, "default/cpu"), 0);
    assert_true(fatia_place_frag_node(mix, 0) < 600 + 1e-9);

    /* the mix weighs by popularity: three 500s and one whole: 0.75 x 300 + 0.25 x 900 = 450 */
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_true(fatia_place_frag_node(mix, 0) > 450 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 0) < 450 + 1e-9);

    /* nothing free: nothing fragmented */
    assert_int_equal(fatia_place_unbind(f.st, "default/a"), 0);
    assert_int_equal(fatia_place_unbind(f.st, "default/b"), 0);
    {
        struct fatia_place_pod *w = frac_pod(f.st, 2000, 1);
        assert_true(place1(f.st, w, "default/w", &o));
        assert_true(fatia_place_frag_node(mix, 0) < 1e-9);
        fatia_place_pod_free(w);
    }
    fatia_place_mix_free(mix);
    fatia_place_pod_free(a);
    fatia_place_pod_free(b);
    fatia_place_pod_free(x);
    fatia_place_pod_free(y);
    fatia_place_pod_free(cpu);
    fleet_close(&f);
}

static void test_typical_types(void **state)
{
    struct fleet f;
    struct fatia_place_mix *mix;
    struct fatia_place_pod *p[12];

    static const struct {
        unsigned coverage;
        size_t typical;
    } cases[] = {{60, 1}, {80, 4}, {100, 12}};

    (void)state;
    fleet_open(&f, frac_fleet);
    /* 12 types: type 0 seen 30 times, the others once (41 pods): 60 % is covered by type 0 alone
     * (30), 80 % (33 pods) by the first four, 100 % by all */
    for (size_t c = 0; c < FATIA_ARRAY_SIZE(cases); c++) {
        assert_int_equal(fatia_place_mix_new(f.st, cases[c].coverage, &mix), 0);
        for (int i = 0; i < 12; i++) {
            if (!c)
                p[i] = frac_pod(f.st, 100 + 10 * i, 1);
            for (int k = 0; k < (i ? 1 : 30); k++)
                assert_int_equal(fatia_place_mix_add(mix, p[i]), 0);
        }
        assert_int_equal(fatia_place_mix_types(mix), 12);
        assert_int_equal(fatia_place_mix_typical(mix), cases[c].typical);
        fatia_place_mix_free(mix);
    }
    for (int i = 0; i < 12; i++)
        fatia_place_pod_free(p[i]);
    fleet_close(&f);
}

static void test_gang_rollback(void **state)
{
    struct fleet f;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_BINPACK};
    struct fatia_place_pod *p, *pods[3];
    struct fatia_place_result *r;
    struct fatia_place_stats s;

    (void)state;
    fleet_open(&f, "apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: pool}\n"
                   "spec: {count: 2, resources: {cpu: '8', memory: 64Gi, pods: '110'},\n"
                   "       gpus: [{product: H200, count: 1}]}\n");
    p = pod(
        f.st, "a",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}");
    pods[0] = pods[1] = pods[2] = p;
    assert_int_equal(fatia_place_workload(f.st, pods, 3, &o, &r), 0);
    assert_false(r->placed);
    assert_string_equal(r->reason,
                        "pod 3 of 3: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
    fatia_place_result_free(r);
    fatia_place_state_stats(f.st, &s);
    assert_int_equal(s.gpu_milli_allocated, 0);
    assert_int_equal(s.pods, 0);
    check(f.st);
    /* two fit, on both nodes */
    assert_int_equal(fatia_place_workload(f.st, pods, 2, &o, &r), 0);
    assert_true(r->placed);
    assert_int_equal(r->pods[0].node, 0);
    assert_int_equal(r->pods[1].node, 1);
    fatia_place_result_free(r);
    fatia_place_pod_free(p);
    fleet_close(&f);
}

static void test_test_mode(void **state)
{
    struct fleet f;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_BINPACK};
    struct fatia_place_pod *p;
    struct fatia_place_result *r;

    (void)state;
    fleet_open(&f, frac_fleet);
    p = frac_pod(f.st, 2000, 1);
    assert_true(place1(f.st, p, "default/x", &o));
    /* the fleet is full now, but on the empty fleet it would fit */
    o.flags = FATIA_PLACE_TEST;
    assert_int_equal(fatia_place_workload(f.st, &p, 1, &o, &r), 0);
    assert_true(r->placed);
    assert_string_equal(r->pods[0].devices[0].id, "gpu-0");
    fatia_place_result_free(r);
    o.flags = 0;
    assert_int_equal(fatia_place_workload(f.st, &p, 1, &o, &r), 0);
    assert_false(r->placed);
    fatia_place_result_free(r);
    check(f.st);
    fatia_place_pod_free(p);
    fleet_close(&f);
}

static void test_mps_namespaces(void **state)
{
    struct fleet f;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_BINPACK};
    struct fatia_place_pod *a1, *a2, *b1, *b2;
    static const char spec[] = "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                               "{\"nvidia.com/gpu.shared\":1}}}]}";

    (void)state;
    fleet_open(&f, "apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: pool}\n"
                   "spec: {resources: {cpu: '8', memory: 64Gi, pods: '110'},\n"
                   "       gpus: [{product: H200, count: 2}]}\n---\n"
                   "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\n"
                   "metadata: {name: mps}\n"
                   "spec: {mps: {renameByDefault: true, resources: [{name: nvidia.com/gpu, "
                   "replicas: 2}]}}\n");
    a1 = pod(f.st, "a", spec);
    a2 = pod(f.st, "a", spec);
    b1 = pod(f.st, "b", spec);
    b2 = pod(f.st, "b", spec);
    assert_true(place1(f.st, a1, "a/1", &o));
    /* namespace b may not join GPU 0: it goes to GPU 1 */
    assert_true(place1(f.st, b1, "b/1", &o));
    assert_int_equal(fatia_place_gpu_users(f.st, 0), 1);
    assert_int_equal(fatia_place_gpu_users(f.st, 1), 1);
    assert_true(place1(f.st, a2, "a/2", &o));
    assert_true(place1(f.st, b2, "b/2", &o));
    assert_int_equal(fatia_place_gpu_users(f.st, 0), 2);
    /* once namespace a has left GPU 0, b may use it */
    assert_int_equal(fatia_place_unbind(f.st, "a/1"), 0);
    assert_int_equal(fatia_place_unbind(f.st, "a/2"), 0);
    assert_true(place1(f.st, b1, "b/3", &o));
    fatia_place_pod_free(a1);
    fatia_place_pod_free(a2);
    fatia_place_pod_free(b1);
    fatia_place_pod_free(b2);
    fleet_close(&f);
}

static const char mixed_fleet[] =
    "apiVersion: fatia.dev/v1alpha1\nkind: NodePool\nmetadata: {name: box}\n"
    "spec:\n  count: 2\n  labels: {box: 'yes'}\n"
    "  resources: {cpu: '64', memory: 512Gi, pods: '110'}\n"
    "  gpus: [{product: H200, count: 8}]\n  nvlinkIslands: [[0,1,2,3],[4,5,6,7]]\n---\n"
    "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: ts}\n"
    "spec: {gpuIndices: [0], timeSlicing: {renameByDefault: true, resources: [{name: "
    "nvidia.com/gpu, replicas: 4}]}}\n---\n"
    "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: mps}\n"
    "spec: {gpuIndices: [1], mps: {resources: [{name: nvidia.com/gpu, rename: fatia.dev/mps, "
    "replicas: 4}]}}\n---\n"
    "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: mig}\n"
    "spec: {gpuIndices: [4, 5], mig: {strategy: mixed, config: all-balanced}}\n---\n"
    "apiVersion: fatia.dev/v1alpha1\nkind: GPUSharingPolicy\nmetadata: {name: frac}\n"
    "spec: {gpuIndices: [6, 7], fractional: {}}\n";

static void test_random_invariants(void **state)
{
    static const char *const specs[] = {
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu.shared\":"
        "1}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"fatia.dev/mps\":2}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/mig-1g.18gb\":"
        "1}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/mig-7g.141gb\":"
        "1}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"fatia.dev/gpu-milli\":"
        "350}}},{\"name\":\"d\",\"resources\":{\"limits\":{\"fatia.dev/gpu-milli\":250,"
        "\"fatia.dev/gpu-memory\":\"8Gi\"}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"fatia.dev/gpu-milli\":"
        "1000}}}]}",
        "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}",
    };
    struct fleet f;
    struct fatia_place_pod *p[FATIA_ARRAY_SIZE(specs) * 2];
    char keys[64][32];
    bool bound[64] = {0};
    uint64_t seed = 12345;
    struct fatia_place_mix *mix;
    struct fatia_place_stats s;

    (void)state;
    fleet_open(&f, mixed_fleet);
    assert_int_equal(fatia_place_mix_new(f.st, 0, &mix), 0);
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(specs); i++) {
        p[2 * i] = pod(f.st, "a", specs[i]);
        p[2 * i + 1] = pod(f.st, "b", specs[i]);
    }
    for (int step = 0; step < 3000; step++) {
        size_t k;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        k = (size_t)(seed >> 33) % 64;
        snprintf(keys[k], sizeof(keys[k]), "ns/p%zu", k);
        if (bound[k]) {
            assert_int_equal(fatia_place_unbind(f.st, keys[k]), 0);
            bound[k] = false;
        } else {
            struct fatia_place_pod *pp = p[(seed >> 20) % FATIA_ARRAY_SIZE(p)];
            struct fatia_place_opts o = {.policy = (enum fatia_place_policy)((seed >> 8) % 4),
                                         .mig = (enum fatia_place_mig)((seed >> 12) % 3),
                                         .mix = mix};
            const char *key = keys[k];
            struct fatia_place_result *r;
            assert_int_equal(fatia_place_mix_add(mix, pp), 0);
            assert_int_equal(fatia_place_workload(f.st, &pp, 1, &o, &r), 0);
            if (r->placed) {
                for (size_t v = 0; v < r->n_victims; v++)
                    for (size_t j = 0; j < 64; j++)
                        if (bound[j] && !strcmp(keys[j], r->victims[v]))
                            bound[j] = false;
                assert_int_equal(fatia_place_commit(f.st, &pp, &key, r), 0);
                bound[k] = true;
            }
            fatia_place_result_free(r);
        }
        check(f.st);
    }
    for (size_t k = 0; k < 64; k++)
        if (bound[k])
            assert_int_equal(fatia_place_unbind(f.st, keys[k]), 0);
    check(f.st);
    fatia_place_state_stats(f.st, &s);
    assert_int_equal(s.pods, 0);
    assert_int_equal(s.gpu_milli_allocated, 0);
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(p); i++)
        fatia_place_pod_free(p[i]);
    fatia_place_mix_free(mix);
    fleet_close(&f);
}

static const char frac_fleet4[] = "apiVersion: fatia.dev/v1alpha1\n"
                                  "kind: NodePool\n"
                                  "metadata: {name: pool}\n"
                                  "spec:\n"
                                  "  count: 4\n"
                                  "  resources: {cpu: '16', memory: 64Gi, pods: '110'}\n"
                                  "  gpus: [{product: T4, count: 2}]\n"
                                  "---\n"
                                  "apiVersion: fatia.dev/v1alpha1\n"
                                  "kind: GPUSharingPolicy\n"
                                  "metadata: {name: frac}\n"
                                  "spec: {fractional: {}}\n";

/* Places p with o, unbinds it, and returns the node it went to (-1: not placed). */
static int probe_node(struct fatia_place_state *st, struct fatia_place_pod *p,
                      const struct fatia_place_opts *o)
{
    struct fatia_place_result *r = NULL;
    int node = -1;

    assert_int_equal(fatia_place_workload(st, &p, 1, o, &r), 0);
    if (r->placed)
        node = (int)r->pods[0].node;
    fatia_place_result_free(r);
    return node;
}

static void test_fgd_artifact(void **state)
{
    struct fleet f;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_BINPACK};
    struct fatia_place_pod *a, *b, *x, *y, *c, *small;
    struct fatia_place_mix *mix, *plain;
    uint64_t rng = 7, rng2 = 7;
    int seen[4] = {0}, first = -1, distinct = 0;

    (void)state;
    fleet_open(&f, frac_fleet4);
    a = frac_pod(f.st, 400, 1);
    b = frac_pod(f.st, 700, 1);
    assert_true(place1(f.st, a, "default/a", &o));
    assert_true(place1(f.st, b, "default/b", &o));
    assert_int_equal(fatia_place_gpu_free_milli(f.st, 0), 600);
    assert_int_equal(fatia_place_gpu_free_milli(f.st, 1), 300);
    x = frac_pod(f.st, 500, 4);
    y = frac_pod(f.st, 1000, 4);
    c = pod(f.st, "default",
            "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}");

    /* without CPU types the CPU-only pod is not a type: F = 600 (the worked example) */
    assert_int_equal(fatia_place_mix_new(f.st, 100, &plain), 0);
    assert_int_equal(fatia_place_mix_add(plain, x), 0);
    assert_int_equal(fatia_place_mix_add(plain, y), 0);
    assert_int_equal(fatia_place_mix_add(plain, c), 0);
    assert_int_equal(fatia_place_mix_types(plain), 2);
    assert_true(fatia_place_frag_node(plain, 0) > 600 - 1e-9);
    assert_true(fatia_place_frag_node(plain, 0) < 600 + 1e-9);

    /* with them: 1/3 x 300 + 1/3 x 900 + 1/3 x 900 (a CPU-only type counts all that is free) */
    assert_int_equal(fatia_place_mix_new(f.st, 100, &mix), 0);
    fatia_place_mix_set_flags(mix, FATIA_PLACE_MIX_CPU);
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_int_equal(fatia_place_mix_add(mix, y), 0);
    assert_int_equal(fatia_place_mix_add(mix, c), 0);
    assert_int_equal(fatia_place_mix_types(mix), 3);
    assert_true(fatia_place_frag_node(mix, 0) > 700 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 0) < 700 + 1e-9);
    /* an empty node: every type fits; the CPU type still counts its 2000 free: 2000 / 3 */
    assert_true(fatia_place_frag_node(mix, 1) > 2000.0 / 3 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 1) < 2000.0 / 3 + 1e-9);

    /* types without memory: two pods that differ in memory only are one type */
    {
        struct fatia_place_mix *m2;
        struct fatia_place_pod *m_a = pod(f.st, "default",
                                          "{\"containers\":[{\"name\":\"c\",\"resources\":{"
                                          "\"requests\":{\"fatia.dev/gpu-milli\":\"500\","
                                          "\"cpu\":\"4\",\"memory\":\"1Gi\"}}}]}");
        struct fatia_place_pod *m_b = pod(f.st, "default",
                                          "{\"containers\":[{\"name\":\"c\",\"resources\":{"
                                          "\"requests\":{\"fatia.dev/gpu-milli\":\"500\","
                                          "\"cpu\":\"4\",\"memory\":\"2Gi\"}}}]}");
        assert_int_equal(fatia_place_mix_new(f.st, 100, &m2), 0);
        assert_int_equal(fatia_place_mix_add(m2, m_a), 0);
        assert_int_equal(fatia_place_mix_add(m2, m_b), 0);
        assert_int_equal(fatia_place_mix_types(m2), 2);
        fatia_place_mix_free(m2);
        assert_int_equal(fatia_place_mix_new(f.st, 100, &m2), 0);
        fatia_place_mix_set_flags(m2, FATIA_PLACE_MIX_TYPES | FATIA_PLACE_MIX_CPU);
        assert_int_equal(fatia_place_mix_add(m2, m_a), 0);
        assert_int_equal(fatia_place_mix_add(m2, m_b), 0);
        assert_int_equal(fatia_place_mix_add(m2, x), 0); /* x: 500 milli, 4 CPUs, no memory */
        assert_int_equal(fatia_place_mix_add(m2, c), 0);
        assert_int_equal(fatia_place_mix_types(m2), 2);
        fatia_place_mix_free(m2);
        fatia_place_pod_free(m_a);
        fatia_place_pod_free(m_b);
    }

    /* frozen: later pods change nothing */
    fatia_place_mix_freeze(mix);
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_int_equal(fatia_place_mix_add(mix, x), 0);
    assert_true(fatia_place_frag_node(mix, 0) > 700 - 1e-9);
    assert_true(fatia_place_frag_node(mix, 0) < 700 + 1e-9);

    /* a whole GPU: node 0 has none free, nodes 1-3 are empty and tie. The first listed without
     * ties... */
    small = frac_pod(f.st, 1000, 1);
    o.policy = FATIA_PLACE_FRAGMENTATION;
    o.flags = FATIA_PLACE_FGD_SCORE;
    o.mix = mix;
    for (int i = 0; i < 20; i++) {
        int n = probe_node(f.st, small, &o);
        assert_int_equal(n, 1);
        if (first < 0)
            first = n;
        assert_int_equal(n, first);
    }
    /* ... drawn among the tied nodes with them, every tied node about as often */
    o.ties = &rng;
    for (int i = 0; i < 300; i++) {
        int n = probe_node(f.st, small, &o);
        assert_true(n >= 1 && n < 4);
        seen[n]++;
    }
    for (int n = 0; n < 4; n++)
        distinct += seen[n] > 0;
    assert_int_equal(distinct, 3);
    for (int n = 1; n < 4; n++)
        assert_true(seen[n] > 70); /* 100 expected each; a skewed draw (the last tied node
                                    * winning half the time, say) fails */
    /* the same seed, the same choices */
    rng = 7;
    o.ties = &rng;
    for (int i = 0; i < 50; i++) {
        struct fatia_place_opts o2 = o;
        o2.ties = &rng2;
        assert_int_equal(probe_node(f.st, small, &o), probe_node(f.st, small, &o2));
    }
    check(f.st);

    fatia_place_mix_free(mix);
    fatia_place_mix_free(plain);
    fatia_place_pod_free(a);
    fatia_place_pod_free(b);
    fatia_place_pod_free(x);
    fatia_place_pod_free(y);
    fatia_place_pod_free(c);
    fatia_place_pod_free(small);
    fleet_close(&f);
}

static const char model_fleet[] = "apiVersion: fatia.dev/v1alpha1\n"
                                  "kind: NodePool\n"
                                  "metadata: {name: a}\n"
                                  "spec:\n"
                                  "  count: 3\n"
                                  "  labels: {model: A}\n"
                                  "  resources: {cpu: '16', memory: 64Gi, pods: '110'}\n"
                                  "  gpus: [{product: T4, count: 2}]\n"
                                  "---\n"
                                  "apiVersion: fatia.dev/v1alpha1\n"
                                  "kind: NodePool\n"
                                  "metadata: {name: b}\n"
                                  "spec:\n"
                                  "  labels: {model: B}\n"
                                  "  resources: {cpu: '16', memory: 64Gi, pods: '110'}\n"
                                  "  gpus: [{product: T4, count: 2}]\n"
                                  "---\n"
                                  "apiVersion: fatia.dev/v1alpha1\n"
                                  "kind: GPUSharingPolicy\n"
                                  "metadata: {name: frac}\n"
                                  "spec: {fractional: {}}\n";

/* one whole GPU, 1 CPU, on model `model` only (NULL: anywhere) */
static struct fatia_place_pod *gpu_pod(struct fatia_place_state *st, const char *model)
{
    char spec[512];
    if (!model)
        return frac_pod(st, 1000, 1);
    snprintf(spec, sizeof(spec),
             "{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"fatia.dev/gpu-milli\":\"1000\",\"cpu\":\"1\"}}}],\"affinity\":{\"nodeAffinity\":"
             "{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":"
             "[{\"matchExpressions\":[{\"key\":\"model\",\"operator\":\"In\",\"values\":"
             "[\"%s\"]}]}]}}}}",
             model);
    return pod(st, "default", spec);
}

static void test_fgd_scarce(void **state)
{
    struct fleet f;
    struct fatia_place_pod *any, *on_a, *on_b, *half;
    struct fatia_place_mix *mix, *plain;
    struct fatia_place_opts o = {.policy = FATIA_PLACE_FRAGMENTATION};
    const char *keys[] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"};

    (void)state;
    fleet_open(&f, model_fleet);
    any = gpu_pod(f.st, NULL);
    on_a = gpu_pod(f.st, "A");
    on_b = gpu_pod(f.st, "B");
    /* nodes 0-2 are model A, node 3 model B */
    /* the mix: 40 % on A only, 30 % on B only, 30 % anywhere */
    assert_int_equal(fatia_place_mix_new(f.st, 100, &mix), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(fatia_place_mix_add(mix, on_a), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(fatia_place_mix_add(mix, on_b), 0);
        assert_int_equal(fatia_place_mix_add(mix, any), 0);
    }
    fatia_place_mix_freeze(mix);
    o.mix = mix;
    o.flags = FATIA_PLACE_FGD_SCORE;
    assert_int_equal(probe_node(f.st, on_b, &o), 3);
    /* FGD: on B the pod takes capacity A's pods could never use (growth -400 against -300 on A:
     * the artifact's scores 59 and 57), so B, the scarcer model (2 GPUs for 30 % of the pods
     * against 6 for 40 %) */
    assert_int_equal(probe_node(f.st, any, &o), 3);
    /* the scarcity key: B's pressure per free GPU is 1.71 times the balanced one, A's 0.76;
     * x 4 outweighs the 2 points of the score */
    o.flags = FATIA_PLACE_FGD_SCORE | FATIA_PLACE_FGD_SCARCE;
    assert_int_equal(probe_node(f.st, any, &o), 0);
    /* a choosy pod keeps to its model whatever the key says */
    assert_int_equal(probe_node(f.st, on_b, &o), 3);
    /* as A fills, its pressure rises: pods that run anywhere go to A while it has enough more
     * free per unit of its choosy demand; after 2 of A's 6 GPUs (A 4000 free for 0.4, B 2000 for
     * 0.3: pressures 0.86 and 1.29, x 4 1.71 points apart against FGD's 2) B wins again */
    for (int i = 0; i < 2; i++) {
        int n = probe_node(f.st, any, &o);
        assert_int_equal(n, 0);
        assert_true(place1(f.st, any, keys[i], &o));
    }
    /* the classes' free capacity follows the state's log of changed nodes (p1's bind, made after
     * the last pressure was computed, is in it): after more changes than the log keeps it is
     * counted again from every node; then the log alone, both ways */
    {
        struct fatia_place_opts o2 = o;
        o2.flags = FATIA_PLACE_FGD_SCORE;
        for (int i = 0; i < 150; i++) {
            assert_true(place1(f.st, on_b, "churn", &o2));
            assert_int_equal(fatia_place_unbind(f.st, "churn"), 0);
        }
    }
    assert_int_equal(probe_node(f.st, any, &o), 3);
    assert_int_equal(fatia_place_unbind(f.st, keys[1]), 0);
    assert_int_equal(probe_node(f.st, any, &o), 0);
    assert_true(place1(f.st, any, keys[1], &o));
    assert_int_equal(probe_node(f.st, any, &o), 3);

    /* with no choosy type in the mix the key changes nothing: the same node as FGD, pod by pod */
    for (int i = 0; i < 2; i++)
        assert_int_equal(fatia_place_unbind(f.st, keys[i]), 0);
    half = frac_pod(f.st, 500, 1);
    assert_int_equal(fatia_place_mix_new(f.st, 100, &plain), 0);
    assert_int_equal(fatia_place_mix_add(plain, any), 0);
    assert_int_equal(fatia_place_mix_add(plain, half), 0);
    fatia_place_mix_freeze(plain);
    o.mix = plain;
    for (int i = 0; i < 8; i++) {
        struct fatia_place_opts o2 = o;
        o2.flags = FATIA_PLACE_FGD_SCORE;
        o.flags = FATIA_PLACE_FGD_SCORE | FATIA_PLACE_FGD_SCARCE;
        int n = probe_node(f.st, any, &o2);
        assert_int_equal(probe_node(f.st, any, &o), n);
        assert_true(place1(f.st, any, keys[i], &o));
    }
    check(f.st);
    fatia_place_mix_free(mix);
    fatia_place_mix_free(plain);
    fatia_place_pod_free(any);
    fatia_place_pod_free(on_a);
    fatia_place_pod_free(on_b);
    fatia_place_pod_free(half);
    fleet_close(&f);
}

static void test_compile_errors(void **state)
{
    struct fleet f;
    struct fatia_place_pod *p = NULL;
    char why[256];
    json_t *j;

    (void)state;
    fleet_open(&f, frac_fleet);
    j = json_loads("{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
                   "{\"fatia.dev/gpu-milli\":1500}}}]}",
                   0, NULL);
    assert_int_equal(fatia_place_pod_compile(f.st, "a", NULL, j, NULL, 0, 0, &p, why, sizeof(why)),
                     -EINVAL);
    assert_string_equal(why, "spec.containers[0].resources.limits[fatia.dev/gpu-milli]: 1500 is "
                             "neither below 1000 (a fraction of one GPU) nor a multiple of 1000 "
                             "(whole GPUs)");
    json_decref(j);
    fleet_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frag_worked_example), cmocka_unit_test(test_typical_types),
        cmocka_unit_test(test_gang_rollback),       cmocka_unit_test(test_test_mode),
        cmocka_unit_test(test_mps_namespaces),      cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_compile_errors),      cmocka_unit_test(test_fgd_artifact),
        cmocka_unit_test(test_fgd_scarce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
