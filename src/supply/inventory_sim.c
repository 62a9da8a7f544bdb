/*
 * supply/inventory_sim.c: the snapshot type's helpers and the simulated backend (see
 * inventory.h). Pure: the fleet comes from NodePool objects, nothing is read from the machine.
 *
 * Determinism is the point of a simulated fleet: node <prefix>-<i>; GPU i has minor i, PCI bus
 * 0x18 + i (0000:18:00.0, 0000:19:00.0, ...), and a UUID made from XXH64 (stable across
 * versions and machines) of "fatia-sim/<node>/<i>", formatted like NVML's. NVLink islands are the
 * pool's nvlinkIslands; GPUs the pool does not place in an island get one of their own, except
 * that when a pool declares no islands at all, the NVLink-capable GPUs of a node share island 0
 * (an HGX board's NVSwitch) and the others get one each.
 *
 * One allocation holds every GPU of the fleet (gpu_store) so that 80,000 simulated GPUs cost one
 * malloc; a pool's GPU models are resolved once per pool, not per node.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/map.h"
#include "base/vec.h"
#include "supply/inventory.h"

void fatia_inventory_init(struct fatia_inventory *inv)
{
    memset(inv, 0, sizeof(*inv));
}

void fatia_inventory_release(struct fatia_inventory *inv)
{
    for (size_t i = 0; i < inv->n_nodes; i++) {
        if (!inv->gpu_store) {
            for (uint32_t g = 0; g < inv->nodes[i].n_gpus; g++)
                fatia_free(inv->nodes[i].gpus[g].instances);
            fatia_free(inv->nodes[i].gpus);
        }
    }
    fatia_free(inv->nodes);
    fatia_free(inv->gpu_store);
    for (size_t i = 0; i < inv->n_models; i++)
        fatia_gpu_model_free(inv->models[i]);
    fatia_free(inv->models);
    for (size_t i = 0; i < inv->n_owned; i++)
        fatia_free(inv->owned[i]);
    fatia_free(inv->owned);
    for (size_t i = 0; i < inv->n_blocks; i++)
        fatia_free(inv->blocks[i]);
    fatia_free(inv->blocks);
    fatia_free(inv->strings);
    json_decref(inv->host_resources);
    json_decref(inv->published_resources);
    fatia_inventory_init(inv);
}

const char *fatia_inventory_strdup(struct fatia_inventory *inv, const char *s)
{
    char *d;

    if (fatia_vec_reserve_raw((void **)&inv->owned, &inv->owned_cap, inv->n_owned + 1,
                              sizeof(*inv->owned)) < 0)
        return NULL;
    d = fatia_strdup(s);
    if (d)
        inv->owned[inv->n_owned++] = d;
    return d;
}

int fatia_inventory_own_block(struct fatia_inventory *inv, void *p)
{
    if (fatia_vec_reserve_raw((void **)&inv->blocks, &inv->blocks_cap, inv->n_blocks + 1,
                              sizeof(*inv->blocks)) < 0) {
        fatia_free(p);
        return -ENOMEM;
    }
    inv->blocks[inv->n_blocks++] = p;
    return 0;
}

int fatia_inventory_own_model(struct fatia_inventory *inv, struct fatia_gpu_model *m)
{
    if (fatia_vec_reserve_raw((void **)&inv->models, &inv->models_cap, inv->n_models + 1,
                              sizeof(*inv->models)) < 0) {
        fatia_gpu_model_free(m);
        return -ENOMEM;
    }
    inv->models[inv->n_models++] = m;
    return 0;
}

/* Writes the low `digits` hex digits of v, most significant first. */
static char *hex(char *p, uint64_t v, int digits)
{
    static const char x[] = "0123456789abcdef";

    for (int i = digits - 1; i >= 0; i--)
        p[i] = x[v & 15], v >>= 4;
    return p + digits;
}

void fatia_inventory_sim_uuid(const char *prefix, const char *key, char *buf, size_t n)
{
    size_t len = strlen(key), plen = strlen(prefix);
    uint64_t a = fatia_hash_chain64(key, len, 0x66617469612d3031ull);
    uint64_t b = fatia_hash_chain64(key, len, a ^ 0x9e3779b97f4a7c15ull);
    char tmp[64], *p = tmp;

    /* PREFIX-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as NVML prints UUIDs (the same text as
     * "%08x-%04x-%04x-%04x-%012x" of a>>32, a>>16, a, b>>48, b; written by hand: 80,000
     * simulated GPUs make snprintf show in the profile) */
    if (plen > 16)
        plen = 16;
    memcpy(p, prefix, plen);
    p += plen;
    *p++ = '-';
    p = hex(p, a >> 32, 8);
    *p++ = '-';
    p = hex(p, a >> 16, 4);
    *p++ = '-';
    p = hex(p, a, 4);
    *p++ = '-';
    p = hex(p, b >> 48, 4);
    *p++ = '-';
    p = hex(p, b, 12);
    *p = '\0';
    snprintf(buf, n, "%s", tmp);
}

/* The model of a pool's gpus[i]: the catalog's, or a copy with the declared overrides, or a new
 * declared product. */
static int resolve_model(struct fatia_inventory *inv, const struct fatia_catalog *cat,
                         const struct fatia_pool *p, size_t i, const struct fatia_srcmap *map,
                         struct fatia_diag *diag, const struct fatia_gpu_model **ret)
{
    const struct fatia_pool_gpus *pg = &p->gpus[i];
    const struct fatia_gpu_model *known = fatia_catalog_find(cat, pg->product);
    json_t *gpus = json_object_get(json_object_get(p->obj->obj, "spec"), "gpus");
    struct fatia_gpu_model *m;
    char path[48];

    if (known && !pg->memory && !pg->multiprocessors) {
        *ret = known;
        return 0;
    }
    if (!known && !pg->memory) {
        snprintf(path, sizeof(path), "spec.gpus[%zu].product", i);
        fatia_supply_error_at(diag, map, p->obj, json_array_get(gpus, i), "product", 0, path,
                              "unknown GPU product \"%s\": it is not in the GPU catalog; declare "
                              "its memory (spec.gpus[%zu].memory) to simulate it",
                              pg->product, i);
        return -FATIA_E_INVALID;
    }
    if (known) {
        m = fatia_gpu_model_dup(known);
    } else {
        m = fatia_gpu_model_new();
        if (m) {
            m->product = fatia_strdup(pg->product);
            m->architecture = fatia_strdup("Unknown");
            m->brand = fatia_strdup("Unknown");
            m->source = fatia_strdup("declared by the fleet");
            if (!m->product || !m->architecture || !m->brand || !m->source) {
                fatia_gpu_model_free(m);
                m = NULL;
            }
        }
    }
    if (!m)
        return -ENOMEM;
    fatia_free(m->verified);
    m->verified = fatia_strdup("declared");
    if (!m->verified) {
        fatia_gpu_model_free(m);
        return -ENOMEM;
    }
    if (pg->memory)
        m->memory_bytes = pg->memory;
    if (pg->multiprocessors)
        m->multiprocessors = pg->multiprocessors;
    if (fatia_inventory_own_model(inv, m) < 0)
        return -ENOMEM;
    *ret = m;
    return 0;
}

/* Island numbers for one pool's node layout. */
static void pool_islands(const struct fatia_pool *p, const struct fatia_gpu_model **models,
                         int *island)
{
    int next = 0;

    if (p->has_islands) {
        for (uint32_t g = 0; g < p->total_gpus; g++)
            if (p->island_of[g] >= 0)
                next = FATIA_MAX(next, p->island_of[g] + 1);
        for (uint32_t g = 0; g < p->total_gpus; g++)
            island[g] = p->island_of[g] >= 0 ? p->island_of[g] : next++;
        return;
    }
    for (uint32_t g = 0; g < p->total_gpus; g++)
        if (models[g]->nvlink) {
            next = 1;
            island[g] = 0;
        } else {
            island[g] = -1;
        }
    for (uint32_t g = 0; g < p->total_gpus; g++)
        if (island[g] < 0)
            island[g] = next++;
}

int fatia_inventory_sim(struct fatia_inventory *inv, const struct fatia_supply_config *cfg,
                        const struct fatia_catalog *cat, struct fatia_diag *diag)
{
    const struct fatia_gpu_model *models[FATIA_NODE_MAX_GPUS];
    int island[FATIA_NODE_MAX_GPUS];
    char key[320];
    size_t key_len;
    struct fatia_strmap names;
    size_t n_nodes = 0, n_gpus = 0, name_bytes = 0, errors = diag->n_errors, ni = 0, gi = 0;
    char *sp;
    int r = 0;

    fatia_inventory_release(inv);
    inv->source = FATIA_INV_SIM;
    inv->catalog = cat;
    fatia_strmap_init(&names);
    for (size_t p = 0; p < cfg->n_pools; p++) {
        const struct fatia_pool *pool = &cfg->pools[p];
        n_nodes += pool->count;
        n_gpus += (size_t)pool->count * pool->total_gpus;
        name_bytes += (size_t)pool->count * (strlen(pool->prefix) + 12);
    }
    inv->nodes = fatia_calloc(n_nodes + 1, sizeof(*inv->nodes));
    inv->gpu_store = fatia_calloc(n_gpus + 1, sizeof(*inv->gpu_store));
    inv->strings = fatia_malloc(name_bytes + 1);
    if (!inv->nodes || !inv->gpu_store || !inv->strings) {
        r = -ENOMEM;
        goto fail;
    }
    sp = inv->strings;
    for (size_t p = 0; p < cfg->n_pools; p++) {
        const struct fatia_pool *pool = &cfg->pools[p];
        uint32_t g = 0;
        bool bad = false;
        for (size_t i = 0; i < pool->n_gpus; i++) {
            const struct fatia_gpu_model *m = NULL;
            r = resolve_model(inv, cat, pool, i, cfg->map, diag, &m);
            if (r == -ENOMEM)
                goto fail;
            if (r < 0) {
                bad = true;
                continue;
            }
            for (uint32_t c = 0; c < pool->gpus[i].count; c++)
                models[g++] = m;
        }
        if (bad)
            continue;
        pool_islands(pool, models, island);
        for (uint32_t k = 0; k < pool->count; k++) {
            struct fatia_inv_node *node = &inv->nodes[ni++];
            int len = snprintf(sp, strlen(pool->prefix) + 12, "%s-%" PRIu32, pool->prefix, k);
            node->name = sp;
            sp += len + 1;
            if (fatia_strmap_has(&names, node->name)) {
                const struct fatia_pool *other = fatia_strmap_get(&names, node->name);
                json_t *spec = json_object_get(pool->obj->obj, "spec");
                fatia_supply_error_at(
                    diag, cfg->map, pool->obj,
                    json_object_get(spec, "namePrefix") ? spec : pool->obj->obj,
                    json_object_get(spec, "namePrefix") ? "namePrefix" : "metadata", 0,
                    json_object_get(spec, "namePrefix") ? "spec.namePrefix" : "metadata.name",
                    "node %s is also a node of %s: node names must be unique", node->name,
                    other->obj->id);
                break;
            }
            if (fatia_strmap_put(&names, node->name, (void *)pool) < 0) {
                r = -ENOMEM;
                goto fail;
            }
            node->pool = pool;
            node->pool_index = k;
            node->labels = pool->labels;
            node->taints = pool->taints;
            node->resources = pool->resources;
            node->driver_version = pool->driver_version;
            node->cuda_driver_version = pool->cuda_driver_version;
            node->gpus = &inv->gpu_store[gi];
            node->n_gpus = pool->total_gpus;
            gi += pool->total_gpus;
            key_len = (size_t)snprintf(key, sizeof(key) - 24, "fatia-sim/%s/", node->name);
            if (key_len > sizeof(key) - 24)
                key_len = sizeof(key) - 24;
            for (uint32_t x = 0; x < pool->total_gpus; x++) {
                struct fatia_inv_gpu *gpu = &node->gpus[x];
                gpu->index = gpu->minor = x;
                gpu->model = models[x];
                gpu->island = island[x];
                gpu->pci_device_id = models[x]->n_pci_device_ids ? models[x]->pci_device_ids[0] : 0;
                snprintf(gpu->pci_bus_id, sizeof(gpu->pci_bus_id), "0000:%02x:00.0", 0x18 + x);
                snprintf(key, sizeof(key), "fatia-sim/%s/%" PRIu32, node->name, x);
                fatia_inventory_sim_uuid("GPU", key, gpu->uuid, sizeof(gpu->uuid));
                gpu->mig_mode =
                    models[x]->mig ? FATIA_MIG_MODE_DISABLED : FATIA_MIG_MODE_UNSUPPORTED;
                gpu->mig_pending = gpu->mig_mode;
            }
        }
    }
    inv->n_nodes = ni;
    if (diag->n_errors > errors) {
        r = -FATIA_E_INVALID;
        goto fail;
    }
    fatia_strmap_release(&names);
    return 0;
fail:
    fatia_strmap_release(&names);
    fatia_inventory_release(inv);
    return r < 0 ? r : -FATIA_E_INVALID;
}
