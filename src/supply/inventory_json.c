/*
 * supply/inventory_json.c: one node's GPUs as JSON, the form a node role publishes in its Node's
 * annotation fatia.dev/gpu-inventory (docs/fleet.md, "A node role's own GPUs"), and its strict
 * reader, with which the control plane's device controller plans that node from what the host's
 * NVML says instead of the NodePool's simulated GPUs.
 *
 *     {"version": 1, "driverVersion": "580.159.04", "cudaDriverVersion": "13.0",
 *      "host": {"cpu": "16", "memory": "131811716Ki", "pods": "110"},
 *      "gpus": [{"index": 0, "minor": 0, "uuid": "GPU-...", "product": "NVIDIA H200",
 *                "memoryMiB": 143771, "pciBusID": "0000:18:00.0", "pcieRoot": "pci0000:00",
 *                "pciDeviceID": "0x233510DE", "nvlinkIsland": 0, "mig": "disabled",
 *                "migPending": "disabled",
 *                "migInstances": [{"profile": "1g.18gb", "start": 0, "uuid": "MIG-..."}]}]}
 *
 * What is published is what the planner reads of a GPU (struct fatia_inv_gpu), nothing more, and
 * the host's own capacity as the kubelet reports it ("host": online CPUs, physical memory, pods;
 * the nvml backend's host_resources): the node is planned with it in place of its NodePool's
 * cpu, memory and pods (its other resources stay the pool's), so that placement does not put a
 * pod on a node role for CPU or memory its host lacks. "host" is optional (a node role before it
 * published none; the pool's values stay). The
 * reader trusts the node for its own hardware, and for nothing else: every field is checked for
 * type and range (at most FATIA_INV_JSON_MAX_GPUS GPUs; UUIDs GPU-/MIG- and hex; indexes, minors
 * and UUIDs unique; memory 1 MiB .. 4 TiB; a PCI bus id of go-nvlib's form; MIG only on a product
 * the catalog says is MIG capable, instances of its profiles at its placements), an unknown key
 * is an error (a misspelt field is not silently ignored), and the first error names its field
 * (gpus[1].uuid). The product must be in the catalog: its MIG geometry, SM count and architecture
 * are the catalog's (a published geometry would be a second, unverifiable copy); the memory is
 * the host's (NVML wins, as in the nvml backend): a GPU whose memory differs from the catalog's
 * gets a copy of the model with that memory, owned by the snapshot. Pure: no I/O.
 */
#include "base/compat.h"

#include <ctype.h>
#include <inttypes.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"
#include "supply/inventory.h"

#define MAX_MEMORY_MIB (4ull << 20) /* 4 TiB */

static const char *const mig_names[] = {"unsupported", "disabled", "enabled"};

static json_t *gpu_json(const struct fatia_inv_gpu *g)
{
    json_t *j, *inst;
    char id[16];

    j = json_pack("{s:I,s:I,s:s,s:s,s:I,s:s,s:i,s:s,s:s}", "index", (json_int_t)g->index, "minor",
                  (json_int_t)g->minor, "uuid", g->uuid, "product", g->model->product, "memoryMiB",
                  (json_int_t)(g->model->memory_bytes >> 20), "pciBusID", g->pci_bus_id,
                  "nvlinkIsland", g->island, "mig", mig_names[g->mig_mode % 3], "migPending",
                  mig_names[g->mig_pending % 3]);
    if (!j)
        return NULL;
    if (g->pcie_root[0])
        json_object_set_new(j, "pcieRoot", json_string(g->pcie_root));
    if (g->pci_device_id) {
        snprintf(id, sizeof(id), "0x%08" PRIX32, g->pci_device_id);
        json_object_set_new(j, "pciDeviceID", json_string(id));
    }
    if (!g->n_instances)
        return j;
    inst = json_array();
    for (unsigned i = 0; inst && i < g->n_instances; i++)
        json_array_append_new(
            inst, json_pack("{s:s,s:i,s:s}", "profile", g->instances[i].profile->name, "start",
                            (int)g->instances[i].start, "uuid", g->instances[i].uuid));
    json_object_set_new(j, "migInstances", inst);
    return j;
}

json_t *fatia_inventory_node_json(const struct fatia_inv_node *n)
{
    json_t *j = json_pack("{s:i,s:[]}", "version", 1, "gpus"), *gpus;

    if (!j)
        return NULL;
    if (n->driver_version)
        json_object_set_new(j, "driverVersion", json_string(n->driver_version));
    if (n->cuda_driver_version)
        json_object_set_new(j, "cudaDriverVersion", json_string(n->cuda_driver_version));
    if (n->resources && !n->pool) {
        /* a host's own node (the nvml backend without a pool): its capacity */
        static const char *const keys[] = {"cpu", "memory", "pods"};
        json_t *host = json_object();
        for (size_t i = 0; host && i < 3; i++) {
            const char *v = fatia_json_str(n->resources, keys[i]);
            if (v)
                json_object_set_new(host, keys[i], json_string(v));
        }
        if (!host || json_object_set_new(j, "host", host) < 0) {
            json_decref(j);
            return NULL;
        }
    }
    gpus = json_object_get(j, "gpus");
    for (uint32_t i = 0; i < n->n_gpus; i++) {
        json_t *g = gpu_json(&n->gpus[i]);
        if (!g || json_array_append_new(gpus, g) < 0) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

/* ---- reading ---- */

struct rd {
    char *why;
    size_t why_n;
};

static int bad(struct rd *r, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct rd *r, const char *field, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(r->why, r->why_n, "%s: %s", field, msg);
    return -FATIA_E_INVALID;
}

static int only_keys(struct rd *r, const json_t *obj, const char *at, const char *const *keys)
{
    const char *k;
    json_t *v;
    char f[200];

    json_object_foreach((json_t *)obj, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i]) {
            snprintf(f, sizeof(f), "%s%s%.40s", at, *at ? "." : "", k);
            return bad(r, f, "unknown field");
        }
    }
    (void)v;
    return 0;
}

/* An integer field in [lo, hi]; absent is an error unless opt. */
static int get_int(struct rd *r, const json_t *obj, const char *at, const char *key, int64_t lo,
                   int64_t hi, bool opt, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    char f[200];

    snprintf(f, sizeof(f), "%s.%s", at, key);
    if (!v && opt)
        return 0;
    if (!json_is_integer(v))
        return bad(r, f, v ? "not an integer" : "missing");
    *out = json_integer_value(v);
    if (*out < lo || *out > hi)
        return bad(r, f, "%" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", *out, lo, hi);
    return 0;
}

/* A string field shorter than max; absent is an error unless opt (then *out is NULL). */
static int get_str(struct rd *r, const json_t *obj, const char *at, const char *key, size_t max,
                   bool opt, const char **out)
{
    const json_t *v = json_object_get(obj, key);
    char f[200];

    snprintf(f, sizeof(f), "%s%s%s", at, *at ? "." : "", key);
    *out = NULL;
    if (!v && opt)
        return 0;
    if (!json_is_string(v))
        return bad(r, f, v ? "not a string" : "missing");
    if (json_string_length(v) >= max || strlen(json_string_value(v)) != json_string_length(v))
        return bad(r, f, "longer than %zu characters", max - 1);
    *out = json_string_value(v);
    return 0;
}

/* prefix + 8-4-4-4-12 hex (NVML's GPU-/MIG- UUIDs, and the simulated ones). */
static bool uuid_ok(const char *s, const char *prefix)
{
    size_t p = strlen(prefix);

    if (strncmp(s, prefix, p) || strlen(s) != p + 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        char c = s[p + i];
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? c != '-' : !isxdigit((unsigned char)c))
            return false;
    }
    return true;
}

/* DOMAIN:BUS:DEVICE.FUNCTION, hex, the domain 4 or 8 digits: "0000:18:00.0". */
static bool pci_ok(const char *s)
{
    size_t d = strspn(s, "0123456789abcdefABCDEF");

    if ((d != 4 && d != 8) || s[d] != ':')
        return false;
    s += d + 1;
    return strspn(s, "0123456789abcdefABCDEF") == 2 && s[2] == ':' &&
           strspn(s + 3, "0123456789abcdefABCDEF") == 2 && s[5] == '.' && s[6] >= '0' &&
           s[6] <= '7' && !s[7];
}

static int mig_mode(struct rd *r, const json_t *g, const char *at, const char *key, uint8_t *out)
{
    const char *s;
    char f[200];
    int rc = get_str(r, g, at, key, 16, true, &s);

    *out = FATIA_MIG_MODE_UNSUPPORTED;
    if (rc < 0 || !s)
        return rc;
    for (uint8_t i = 0; i < 3; i++)
        if (!strcmp(s, mig_names[i])) {
            *out = i;
            return 0;
        }
    snprintf(f, sizeof(f), "%s.%s", at, key);
    return bad(r, f, "'%.20s' is not unsupported, disabled or enabled", s);
}

/* The catalog's model of product, or the snapshot's copy of it with the host's memory. */
static int model_of(struct fatia_inventory *inv, struct rd *r, const char *at, const char *product,
                    uint64_t memory, const struct fatia_gpu_model **ret)
{
    const struct fatia_gpu_model *known = fatia_catalog_find(inv->catalog, product);
    struct fatia_gpu_model *m;
    char f[200];

    snprintf(f, sizeof(f), "%s.product", at);
    if (!known)
        return bad(r, f, "'%.96s' is not in the GPU catalog", product);
    if (known->memory_bytes == memory) {
        *ret = known;
        return 0;
    }
    for (size_t i = 0; i < inv->n_models; i++)
        if (!strcmp(inv->models[i]->product, known->product) &&
            inv->models[i]->memory_bytes == memory) {
            *ret = inv->models[i];
            return 0;
        }
    if (!(m = fatia_gpu_model_dup(known)))
        return -ENOMEM;
    m->memory_bytes = memory;
    if (fatia_inventory_own_model(inv, m) < 0)
        return -ENOMEM;
    *ret = m;
    return 0;
}

static int read_instances(struct fatia_inventory *inv, struct rd *r, const json_t *arr,
                          const char *at, struct fatia_inv_gpu *g)
{
    static const char *const keys[] = {"profile", "start", "uuid", NULL};
    char f[200];
    const json_t *e;
    size_t i;
    int rc;

    snprintf(f, sizeof(f), "%s.migInstances", at);
    if (!json_is_array(arr))
        return bad(r, f, "not an array");
    if (!json_array_size(arr))
        return 0;
    if (g->mig_mode != FATIA_MIG_MODE_ENABLED || !g->model->mig)
        return bad(r, f, "instances on a GPU whose MIG mode is not enabled");
    if (json_array_size(arr) > FATIA_MIG_MAX_INSTANCES)
        return bad(r, f, "more than %d instances", FATIA_MIG_MAX_INSTANCES);
    g->instances = fatia_calloc(json_array_size(arr), sizeof(*g->instances));
    if (!g->instances || fatia_inventory_own_block(inv, g->instances) < 0)
        return -ENOMEM;
    json_array_foreach(arr, i, e)
    {
        struct fatia_inv_mig_instance *mi = &g->instances[i];
        const char *name, *uuid;
        int64_t start = 0;
        char ia[96];
        bool placed = false;
        snprintf(ia, sizeof(ia), "%s.migInstances[%zu]", at, i);
        if (!json_is_object(e))
            return bad(r, ia, "not an object");
        if ((rc = only_keys(r, e, ia, keys)) < 0 ||
            (rc = get_str(r, e, ia, "profile", 32, false, &name)) < 0 ||
            (rc = get_int(r, e, ia, "start", 0, FATIA_MIG_MAX_SLICES - 1, false, &start)) < 0 ||
            (rc = get_str(r, e, ia, "uuid", sizeof(mi->uuid), false, &uuid)) < 0)
            return rc;
        if (!(mi->profile = fatia_mig_geom_find(g->model->mig, name))) {
            snprintf(f, sizeof(f), "%s.profile", ia);
            return bad(r, f, "'%s' is not a MIG profile of %s", name, g->model->product);
        }
        for (uint8_t s = 0; s < mi->profile->n_starts; s++)
            placed |= mi->profile->starts[s] == start;
        if (!placed) {
            snprintf(f, sizeof(f), "%s.start", ia);
            return bad(r, f, "%" PRId64 " is not a placement of %s", start, name);
        }
        if (!uuid_ok(uuid, "MIG-")) {
            snprintf(f, sizeof(f), "%s.uuid", ia);
            return bad(r, f, "not a MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx UUID");
        }
        mi->start = (uint8_t)start;
        snprintf(mi->uuid, sizeof(mi->uuid), "%s", uuid);
        g->n_instances++;
    }
    return 0;
}

static int read_gpu(struct fatia_inventory *inv, struct rd *r, const json_t *e, size_t i,
                    struct fatia_inv_gpu *gpus)
{
    static const char *const keys[] = {
        "index",       "minor",        "uuid", "product",    "memoryMiB",    "pciBusID", "pcieRoot",
        "pciDeviceID", "nvlinkIsland", "mig",  "migPending", "migInstances", NULL};
    struct fatia_inv_gpu *g = &gpus[i];
    const char *uuid, *product, *pci, *root, *devid;
    int64_t index, minor, mem, island = 0;
    char at[32], f[96];
    int rc;

    snprintf(at, sizeof(at), "gpus[%zu]", i);
    if (!json_is_object(e))
        return bad(r, at, "not an object");
    if ((rc = only_keys(r, e, at, keys)) < 0 ||
        (rc = get_int(r, e, at, "index", 0, FATIA_INV_JSON_MAX_GPUS - 1, false, &index)) < 0 ||
        (rc = get_int(r, e, at, "minor", 0, 255, false, &minor)) < 0 ||
        (rc = get_str(r, e, at, "uuid", sizeof(g->uuid), false, &uuid)) < 0 ||
        (rc = get_str(r, e, at, "product", FATIA_GPU_NAME_MAX, false, &product)) < 0 ||
        (rc = get_int(r, e, at, "memoryMiB", 1, (int64_t)MAX_MEMORY_MIB, false, &mem)) < 0 ||
        (rc = get_str(r, e, at, "pciBusID", sizeof(g->pci_bus_id), false, &pci)) < 0 ||
        (rc = get_str(r, e, at, "pcieRoot", sizeof(g->pcie_root), true, &root)) < 0 ||
        (rc = get_str(r, e, at, "pciDeviceID", 11, true, &devid)) < 0 ||
        (rc = get_int(r, e, at, "nvlinkIsland", 0, FATIA_INV_JSON_MAX_GPUS - 1, true, &island)) <
            0 ||
        (rc = mig_mode(r, e, at, "mig", &g->mig_mode)) < 0 ||
        (rc = mig_mode(r, e, at, "migPending", &g->mig_pending)) < 0)
        return rc;
    snprintf(f, sizeof(f), "%s.uuid", at);
    if (!uuid_ok(uuid, "GPU-"))
        return bad(r, f, "not a GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx UUID");
    for (size_t j = 0; j < i; j++) {
        if (!strcasecmp(gpus[j].uuid, uuid))
            return bad(r, f, "%s is also gpus[%zu]'s", uuid, j);
        if (gpus[j].index == index) {
            snprintf(f, sizeof(f), "%s.index", at);
            return bad(r, f, "%" PRId64 " is also gpus[%zu]'s", index, j);
        }
        if (gpus[j].minor == minor) {
            snprintf(f, sizeof(f), "%s.minor", at);
            return bad(r, f, "%" PRId64 " is also gpus[%zu]'s", minor, j);
        }
    }
    if (!pci_ok(pci)) {
        snprintf(f, sizeof(f), "%s.pciBusID", at);
        return bad(r, f, "'%s' is not DOMAIN:BUS:DEVICE.FUNCTION", pci);
    }
    if (devid) {
        char *end;
        unsigned long v = strtoul(devid, &end, 16);
        if (strncmp(devid, "0x", 2) || strlen(devid) != 10 || *end || v > UINT32_MAX) {
            snprintf(f, sizeof(f), "%s.pciDeviceID", at);
            return bad(r, f, "'%s' is not 0x and 8 hex digits", devid);
        }
        g->pci_device_id = (uint32_t)v;
    }
    if ((rc = model_of(inv, r, at, product, (uint64_t)mem << 20, &g->model)) < 0)
        return rc;
    if (!g->model->mig && (g->mig_mode != FATIA_MIG_MODE_UNSUPPORTED ||
                           g->mig_pending != FATIA_MIG_MODE_UNSUPPORTED)) {
        snprintf(f, sizeof(f), "%s.mig", at);
        return bad(r, f, "%s is not MIG capable (the catalog)", g->model->product);
    }
    g->index = (uint32_t)index;
    g->minor = (uint32_t)minor;
    g->island = (int)island;
    snprintf(g->uuid, sizeof(g->uuid), "%s", uuid);
    snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", pci);
    if (root)
        snprintf(g->pcie_root, sizeof(g->pcie_root), "%s", root);
    if (json_object_get(e, "migInstances"))
        return read_instances(inv, r, json_object_get(e, "migInstances"), at, g);
    return 0;
}

/* A version string: digits and dots, or NULL. */
static int version(struct fatia_inventory *inv, struct rd *r, const json_t *j, const char *key,
                   const char **out)
{
    const char *s;
    int rc = get_str(r, j, "", key, 32, true, &s);

    if (rc < 0 || !s)
        return rc;
    if (!*s || strspn(s, "0123456789.") != strlen(s))
        return bad(r, key, "'%s' is not a version (digits and dots)", s);
    return (*out = fatia_inventory_strdup(inv, s)) ? 0 : -ENOMEM;
}

/* One quantity of "host": a Kubernetes quantity (the kubelet's form) in [lo, hi] of its unit
 * (cores, bytes, pods), written into res. Absent is an error unless opt. */
static int host_quantity(struct rd *r, const json_t *host, const char *key, double lo, double hi,
                         bool opt, json_t *res)
{
    const char *s;
    struct fatia_quantity q;
    char f[40], buf[64];
    double v;
    int rc = get_str(r, host, "host", key, 40, opt, &s);

    if (rc < 0 || !s)
        return rc;
    snprintf(f, sizeof(f), "host.%s", key);
    if (fatia_quantity_parse(s, &q, NULL, 0) < 0)
        return bad(r, f, "'%s' is not a quantity", s);
    v = (double)q.nano / (double)FATIA_NANO;
    if (v < lo || v > hi)
        return bad(r, f, "'%s' is out of range [%.0f, %.0f]", s, lo, hi);
    fatia_quantity_format(&q, buf, sizeof(buf));
    return json_object_set_new(res, key, json_string(buf)) < 0 ? -ENOMEM : 0;
}

/* "host": the host's cpu, memory and pods over a copy of the node's (its pool's) resources, the
 * copy owned by inv. *out stays NULL when "host" is absent. */
static int read_host(struct fatia_inventory *inv, struct rd *r, const struct fatia_inv_node *n,
                     const json_t *j, json_t **out)
{
    static const char *const keys[] = {"cpu", "memory", "pods", NULL};
    const json_t *host = json_object_get(j, "host");
    json_t *res;
    int rc;

    *out = NULL;
    if (!host)
        return 0;
    if (!json_is_object(host))
        return bad(r, "host", "not an object");
    if ((rc = only_keys(r, host, "host", keys)) < 0)
        return rc;
    if (!inv->published_resources && !(inv->published_resources = json_array()))
        return -ENOMEM;
    res = n->resources ? json_deep_copy(n->resources) : json_object();
    if (!res || json_array_append_new(inv->published_resources, res) < 0)
        return -ENOMEM;
    if ((rc = host_quantity(r, host, "cpu", 1, 65536, false, res)) < 0 ||
        (rc = host_quantity(r, host, "memory", 1 << 20, 1ull << 50, false, res)) < 0 ||
        (rc = host_quantity(r, host, "pods", 1, 100000, true, res)) < 0)
        return rc;
    *out = res;
    return 0;
}

int fatia_inventory_node_from_json(struct fatia_inventory *inv, struct fatia_inv_node *n,
                                   const json_t *j, char *why, size_t why_n)
{
    static const char *const keys[] = {"version", "driverVersion", "cudaDriverVersion",
                                       "host",    "gpus",          NULL};
    json_t *host_res = NULL;
    struct rd r = {why, why_n};
    const char *drv = NULL, *cuda = NULL;
    const json_t *arr = json_object_get(j, "gpus"), *e;
    struct fatia_inv_gpu *gpus;
    int64_t v = 0;
    size_t i;
    int rc;

    why[0] = '\0';
    if (inv->source != FATIA_INV_SIM || !inv->gpu_store)
        return bad(&r, "(top)", "a published inventory replaces simulated GPUs only");
    if (!json_is_object(j))
        return bad(&r, "(top)", "not a JSON object");
    if ((rc = only_keys(&r, j, "", keys)) < 0 ||
        (rc = get_int(&r, j, "(top)", "version", 1, 1, false, &v)) < 0 ||
        (rc = version(inv, &r, j, "driverVersion", &drv)) < 0 ||
        (rc = version(inv, &r, j, "cudaDriverVersion", &cuda)) < 0 ||
        (rc = read_host(inv, &r, n, j, &host_res)) < 0)
        return rc;
    if (!json_is_array(arr))
        return bad(&r, "gpus", arr ? "not an array" : "missing");
    if (json_array_size(arr) > FATIA_INV_JSON_MAX_GPUS)
        return bad(&r, "gpus", "%zu GPUs: more than %d", json_array_size(arr),
                   FATIA_INV_JSON_MAX_GPUS);
    gpus = fatia_calloc(json_array_size(arr) + 1, sizeof(*gpus));
    if (!gpus || fatia_inventory_own_block(inv, gpus) < 0)
        return -ENOMEM;
    json_array_foreach(arr, i, e)
    {
        if ((rc = read_gpu(inv, &r, e, i, gpus)) < 0)
            return rc;
    }
    n->gpus = gpus;
    n->n_gpus = (uint32_t)json_array_size(arr);
    n->driver_version = drv;
    n->cuda_driver_version = cuda;
    if (host_res)
        n->resources = host_res;
    n->published = true;
    return 0;
}
