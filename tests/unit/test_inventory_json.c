/*
 * tests/unit/test_inventory_json.c: the published GPU inventory (supply/inventory_json.c): a
 * round trip keeps every field the planner reads, the host's memory wins over the catalog's, the
 * host's cpu, memory and pods replace the pool's (its other resources stay), and each malformed
 * or absurd field is refused with its name while the node keeps its GPUs and resources.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "supply/catalog.h"
#include "supply/inventory.h"

static struct fatia_catalog cat;

static int setup(void **state)
{
    struct fatia_diag d;

    (void)state;
    fatia_diag_init(&d);
    fatia_catalog_init(&cat);
    if (fatia_catalog_load(&cat, FATIA_SOURCE_DIR "/data/gpus", &d) < 0) {
        fatia_diag_print(&d, stderr);
        return -1;
    }
    fatia_diag_release(&d);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fatia_catalog_release(&cat);
    return 0;
}

/* A simulated snapshot of one node "box-0" with one GPU of its own. */
static void sim_inv(struct fatia_inventory *inv)
{
    fatia_inventory_init(inv);
    inv->source = FATIA_INV_SIM;
    inv->catalog = &cat;
    inv->gpu_store = fatia_calloc(2, sizeof(*inv->gpu_store));
    inv->nodes = fatia_calloc(1, sizeof(*inv->nodes));
    assert_non_null(inv->gpu_store);
    assert_non_null(inv->nodes);
    inv->n_nodes = 1;
    inv->nodes[0].name = (char *)fatia_inventory_strdup(inv, "box-0");
    inv->nodes[0].gpus = inv->gpu_store;
    inv->nodes[0].n_gpus = 1;
    snprintf(inv->gpu_store[0].uuid, sizeof(inv->gpu_store[0].uuid), "GPU-sim");
    inv->gpu_store[0].model = fatia_catalog_find(&cat, "NVIDIA H200");
    /* its pool's resources (owned by the snapshot through host_resources, for the test) */
    inv->host_resources = json_pack("{s:s,s:s,s:s,s:s}", "cpu", "128", "memory", "2Ti", "pods",
                                    "110", "example.com/fpga", "2");
    assert_non_null(inv->host_resources);
    inv->nodes[0].resources = inv->host_resources;
}

#define GOOD                                                                                       \
    "{\"version\":1,\"driverVersion\":\"580.159.04\",\"cudaDriverVersion\":\"13.0\","              \
    "\"host\":{\"cpu\":\"16\",\"memory\":\"131811716Ki\",\"pods\":\"250\"},\"gpus\":["             \
    "{\"index\":0,\"minor\":0,\"uuid\":\"GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1\","              \
    "\"product\":\"NVIDIA H200\",\"memoryMiB\":143771,\"pciBusID\":\"0000:18:00.0\","              \
    "\"nvlinkIsland\":0,\"mig\":\"disabled\",\"migPending\":\"disabled\","                         \
    "\"pcieRoot\":\"pci0000:00\",\"pciDeviceID\":\"0x233510DE\"},"                                 \
    "{\"index\":1,\"minor\":1,\"uuid\":\"GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc\","              \
    "\"product\":\"NVIDIA H200\",\"memoryMiB\":143000,\"pciBusID\":\"0000:2a:00.0\","              \
    "\"nvlinkIsland\":0,\"mig\":\"enabled\",\"migPending\":\"enabled\",\"migInstances\":["         \
    "{\"profile\":\"1g.18gb\",\"start\":0,\"uuid\":\"MIG-0a1b2c3d-0000-1111-2222-333344445555\"}," \
    "{\"profile\":\"3g.71gb\",\"start\":4,\"uuid\":\"MIG-0a1b2c3d-0000-1111-2222-333344445556\"}]" \
    "}"                                                                                            \
    "]}"

static void test_round_trip(void **state)
{
    struct fatia_inventory inv;
    struct fatia_inv_node *n;
    json_t *in, *out;
    char why[300];

    (void)state;
    sim_inv(&inv);
    n = &inv.nodes[0];
    in = json_loads(GOOD, 0, NULL);
    assert_non_null(in);
    assert_int_equal(fatia_inventory_node_from_json(&inv, n, in, why, sizeof(why)), 0);
    assert_int_equal(n->n_gpus, 2);
    assert_string_equal(n->gpus[0].uuid, "GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1");
    assert_ptr_equal(n->gpus[0].model, fatia_catalog_find(&cat, "NVIDIA H200"));
    /* the host's memory wins: a copy of the catalog's model, owned by the snapshot */
    assert_ptr_not_equal(n->gpus[1].model, n->gpus[0].model);
    assert_int_equal(n->gpus[1].model->memory_bytes, 143000ull << 20);
    assert_non_null(n->gpus[1].model->mig);
    assert_int_equal(n->gpus[1].mig_mode, FATIA_MIG_MODE_ENABLED);
    assert_int_equal(n->gpus[1].n_instances, 2);
    assert_int_equal(n->gpus[1].instances[1].start, 4);
    assert_string_equal(n->gpus[1].instances[1].profile->name, "3g.71gb");
    assert_int_equal(n->gpus[0].pci_device_id, 0x233510DE);
    assert_string_equal(n->driver_version, "580.159.04");
    assert_true(n->published);
    /* the host's capacity over the pool's; the pool's other resources stay */
    assert_string_equal(fatia_json_str(n->resources, "cpu"), "16");
    assert_string_equal(fatia_json_str(n->resources, "memory"), "131811716Ki");
    assert_string_equal(fatia_json_str(n->resources, "pods"), "250");
    assert_string_equal(fatia_json_str(n->resources, "example.com/fpga"), "2");
    assert_string_equal(fatia_json_str(inv.host_resources, "cpu"), "128");
    out = fatia_inventory_node_json(n);
    assert_non_null(out);
    assert_true(json_equal(in, out));
    json_decref(in);
    json_decref(out);
    fatia_inventory_release(&inv);
}

struct bad_case {
    const char *find, *replace; /* a textual edit of GOOD */
    const char *field;          /* the start of why */
};

static const struct bad_case bad_cases[] = {
    {"\"version\":1", "\"version\":2", "(top).version:"},
    {"\"version\":1,", "", "(top).version: missing"},
    {"\"gpus\":[", "\"gpu\":0,\"gpus\":[", "gpu: unknown field"},
    {"\"minor\":0,", "\"minor\":0,\"extra\":1,", "gpus[0].extra: unknown field"},
    {"GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1", "GPU-31c2b5b9", "gpus[0].uuid:"},
    {"GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1", "GPU-zzc2b5b9-3c28-8f92-9f66-01497d3ccaa1",
     "gpus[0].uuid:"},
    {"GPU-eb06f796-70a5-0789-36c5-f9d5a56bcecc", "GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1",
     "gpus[1].uuid: GPU-31c2b5b9-3c28-8f92-9f66-01497d3ccaa1 is also gpus[0]'s"},
    {"\"index\":1,", "\"index\":0,", "gpus[1].index:"},
    {"\"minor\":1,", "\"minor\":0,", "gpus[1].minor:"},
    {"\"minor\":1,", "\"minor\":-1,", "gpus[1].minor: -1 is out of range"},
    {"\"minor\":1,", "\"minor\":\"1\",", "gpus[1].minor: not an integer"},
    {"\"product\":\"NVIDIA H200\",\"memoryMiB\":143771",
     "\"product\":\"NVIDIA Z9000\",\"memoryMiB\":143771",
     "gpus[0].product: 'NVIDIA Z9000' is not in the GPU catalog"},
    {"\"memoryMiB\":143771", "\"memoryMiB\":0", "gpus[0].memoryMiB:"},
    {"\"memoryMiB\":143771", "\"memoryMiB\":99999999999", "gpus[0].memoryMiB:"},
    {"\"pciBusID\":\"0000:18:00.0\"", "\"pciBusID\":\"18:00.0\"", "gpus[0].pciBusID:"},
    {"\"pciDeviceID\":\"0x233510DE\"", "\"pciDeviceID\":\"233510DE\"", "gpus[0].pciDeviceID:"},
    {"\"nvlinkIsland\":0,\"mig\":\"disabled\"", "\"nvlinkIsland\":1000,\"mig\":\"disabled\"",
     "gpus[0].nvlinkIsland:"},
    {"\"mig\":\"disabled\"", "\"mig\":\"maybe\"", "gpus[0].mig:"},
    {"\"profile\":\"1g.18gb\"", "\"profile\":\"1g.99gb\"", "gpus[1].migInstances[0].profile:"},
    {"\"start\":4", "\"start\":3", "gpus[1].migInstances[1].start: 3 is not a placement"},
    {"MIG-0a1b2c3d-0000-1111-2222-333344445555", "GPU-0a1b2c3d-0000-1111-2222-333344445555",
     "gpus[1].migInstances[0].uuid:"},
    {"\"mig\":\"enabled\",\"migPending\":\"enabled\"",
     "\"mig\":\"disabled\",\"migPending\":\"disabled\"",
     "gpus[1].migInstances: instances on a GPU whose MIG mode is not enabled"},
    {"\"driverVersion\":\"580.159.04\"", "\"driverVersion\":\"580; rm\"", "driverVersion:"},
    {"\"cpu\":\"16\"", "\"cpu\":\"0\"", "host.cpu: '0' is out of range"},
    {"\"cpu\":\"16\"", "\"cpu\":\"lots\"", "host.cpu: 'lots' is not a quantity"},
    {"\"cpu\":\"16\"", "\"cpu\":16", "host.cpu: not a string"},
    {"\"cpu\":\"16\",", "", "host.cpu: missing"},
    {"\"memory\":\"131811716Ki\"", "\"memory\":\"1Ki\"", "host.memory: '1Ki' is out of range"},
    {"\"memory\":\"131811716Ki\"", "\"memory\":\"9Ei\"", "host.memory:"},
    {"\"pods\":\"250\"", "\"pods\":\"-1\"", "host.pods: '-1' is out of range"},
    {"\"pods\":\"250\"", "\"pods\":\"250\",\"nvidia.com/gpu\":\"64\"",
     "host.nvidia.com/gpu: unknown field"},
    {"\"host\":{\"cpu\":\"16\",\"memory\":\"131811716Ki\",\"pods\":\"250\"}", "\"host\":[]",
     "host: not an object"},
};

static void test_bad(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(bad_cases) / sizeof(bad_cases[0]); c++) {
        const struct bad_case *b = &bad_cases[c];
        const char *at = strstr(GOOD, b->find);
        char text[4096], why[300];
        struct fatia_inventory inv;
        json_t *j;

        assert_non_null(at);
        snprintf(text, sizeof(text), "%.*s%s%s", (int)(at - GOOD), GOOD, b->replace,
                 at + strlen(b->find));
        j = json_loads(text, 0, NULL);
        assert_non_null(j);
        sim_inv(&inv);
        assert_int_equal(fatia_inventory_node_from_json(&inv, &inv.nodes[0], j, why, sizeof(why)),
                         -FATIA_E_INVALID);
        if (strncmp(why, b->field, strlen(b->field)))
            fail_msg("case %zu: why '%s', want '%s...'", c, why, b->field);
        /* the node keeps its GPUs */
        assert_int_equal(inv.nodes[0].n_gpus, 1);
        assert_string_equal(inv.nodes[0].gpus[0].uuid, "GPU-sim");
        assert_string_equal(fatia_json_str(inv.nodes[0].resources, "cpu"), "128");
        json_decref(j);
        fatia_inventory_release(&inv);
    }
}

static void test_absurd_sizes(void **state)
{
    struct fatia_inventory inv;
    json_t *j = json_pack("{s:i,s:[]}", "version", 1, "gpus"), *g;
    char why[300];

    (void)state;
    g = json_loads(strstr(GOOD, "{\"index\":0"), JSON_DISABLE_EOF_CHECK, NULL);
    assert_non_null(g);
    for (int i = 0; i < FATIA_INV_JSON_MAX_GPUS + 1; i++)
        json_array_append(json_object_get(j, "gpus"), g);
    sim_inv(&inv);
    assert_int_equal(fatia_inventory_node_from_json(&inv, &inv.nodes[0], j, why, sizeof(why)),
                     -FATIA_E_INVALID);
    assert_non_null(strstr(why, "gpus: 65 GPUs: more than 64"));
    fatia_inventory_release(&inv);
    json_decref(j);
    /* not an object; an empty list is a host without GPUs */
    j = json_pack("[]");
    sim_inv(&inv);
    assert_int_equal(fatia_inventory_node_from_json(&inv, &inv.nodes[0], j, why, sizeof(why)),
                     -FATIA_E_INVALID);
    json_decref(j);
    j = json_pack("{s:i,s:[]}", "version", 1, "gpus");
    assert_int_equal(fatia_inventory_node_from_json(&inv, &inv.nodes[0], j, why, sizeof(why)), 0);
    assert_int_equal(inv.nodes[0].n_gpus, 0);
    fatia_inventory_release(&inv);
    json_decref(j);
    json_decref(g);
    /* only a simulated snapshot's GPUs are replaced */
    fatia_inventory_init(&inv);
    inv.source = FATIA_INV_NVML;
    j = json_loads(GOOD, 0, NULL);
    struct fatia_inv_node n = {0};
    assert_int_equal(fatia_inventory_node_from_json(&inv, &n, j, why, sizeof(why)),
                     -FATIA_E_INVALID);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_absurd_sizes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
