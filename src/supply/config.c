/*
 * supply/config.c: compiling NodePools and GPUSharingPolicies into the planner's input (see
 * config.h). Pure: reads decoded objects, writes structs, reports into a diag.
 *
 * The schemas already checked types, ranges and the one-of rules; what is left here is what a
 * schema cannot say: selectors are compiled (and a selector on kubernetes.io/hostname is noted,
 * since it splits a pool's otherwise identical nodes), resource names get the device plugin's
 * "nvidia.com/" prefix and rename rule, and deviceFilter ids are parsed.
 */
#include "base/compat.h"

#include "supply/config.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"

void fatia_supply_error_at(struct fatia_diag *diag, const struct fatia_srcmap *map,
                           const struct fatia_object *obj, const json_t *parent, const char *key,
                           size_t index, const char *path, const char *fmt, ...)
{
    struct fatia_srcpos pos = obj ? obj->pos : (struct fatia_srcpos){0, 0};
    va_list ap;

    if (parent && map)
        fatia_srcmap_member(map, parent, key, index, &pos);
    va_start(ap, fmt);
    fatia_diag_vadd(diag, FATIA_DIAG_ERROR, obj ? obj->file : NULL, pos.line, pos.col,
                    obj ? obj->id : NULL, path, fmt, ap);
    va_end(ap);
}

static uint64_t qbytes(const json_t *v)
{
    struct fatia_quantity q;

    if (!v || fatia_quantity_parse_json(v, &q, NULL, 0) < 0)
        return 0;
    return (uint64_t)fatia_quantity_value(&q);
}

static int load_pool(struct fatia_pool *p, const struct fatia_object *o)
{
    json_t *spec = json_object_get(o->obj, "spec"), *g, *isl, *idx;
    int64_t v;
    size_t i, j;

    memset(p, 0, sizeof(*p));
    p->obj = o;
    p->name = o->name;
    p->prefix = fatia_json_str(spec, "namePrefix") ? fatia_json_str(spec, "namePrefix") : o->name;
    p->count = fatia_json_int(spec, "count", &v) ? (uint32_t)v : 1;
    p->labels = json_object_get(spec, "labels");
    p->taints = json_object_get(spec, "taints");
    p->resources = json_object_get(spec, "resources");
    p->driver_version = fatia_json_str(spec, "driverVersion");
    p->cuda_driver_version = fatia_json_str(spec, "cudaDriverVersion");
    p->n_gpus = json_array_size(json_object_get(spec, "gpus"));
    if (p->n_gpus) {
        p->gpus = fatia_calloc(p->n_gpus, sizeof(*p->gpus));
        if (!p->gpus)
            return -ENOMEM;
    }
    json_array_foreach(json_object_get(spec, "gpus"), i, g)
    {
        p->gpus[i].product = fatia_json_str(g, "product");
        p->gpus[i].count = fatia_json_int(g, "count", &v) ? (uint32_t)v : 1;
        p->gpus[i].memory = qbytes(json_object_get(g, "memory"));
        p->gpus[i].multiprocessors = fatia_json_int(g, "multiprocessors", &v) ? (uint32_t)v : 0;
        p->total_gpus += p->gpus[i].count;
    }
    memset(p->island_of, -1, sizeof(p->island_of));
    json_array_foreach(json_object_get(spec, "nvlinkIslands"), i, isl)
    {
        p->has_islands = true;
        json_array_foreach(isl, j, idx)
        {
            int64_t k = json_integer_value(idx);
            if (k >= 0 && k < FATIA_NODE_MAX_GPUS)
                p->island_of[k] = (int8_t)i;
        }
    }
    return 0;
}

static char *resource_name(const char *name)
{
    char *s;

    if (strchr(name, '/'))
        return fatia_strdup(name);
    if (asprintf(&s, "nvidia.com/%s", name) < 0)
        return NULL;
    return s;
}

static int parse_hex32(const char *s, uint32_t *ret)
{
    char *end;
    unsigned long long v;

    if (strncmp(s, "0x", 2) && strncmp(s, "0X", 2))
        return -EINVAL;
    errno = 0;
    v = strtoull(s + 2, &end, 16);
    if (errno || *end || end == s + 2 || v > UINT32_MAX)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

static int load_share(struct fatia_policy *p, json_t *sh, const struct fatia_object *o,
                      const struct fatia_srcmap *map, struct fatia_diag *diag, const char *field)
{
    json_t *res = json_object_get(sh, "resources"), *r;
    int64_t v;
    size_t i;

    p->rename_by_default = fatia_json_bool(sh, "renameByDefault", false);
    /* the device plugin's defaults: false for time-slicing, true for MPS */
    p->fail_requests_gt_one =
        fatia_json_bool(sh, "failRequestsGreaterThanOne", p->share == FATIA_SHARE_MPS);
    p->n_res = json_array_size(res);
    p->res = fatia_calloc(p->n_res + 1, sizeof(*p->res));
    if (!p->res)
        return -ENOMEM;
    json_array_foreach(res, i, r)
    {
        const char *rename = fatia_json_str(r, "rename");
        json_t *devices = json_object_get(r, "devices");
        p->res[i].name = resource_name(fatia_json_str(r, "name"));
        if (!p->res[i].name)
            return -ENOMEM;
        p->res[i].replicas = fatia_json_int(r, "replicas", &v) ? (uint32_t)v : 2;
        if (rename)
            p->res[i].rename = resource_name(rename);
        else if (p->rename_by_default &&
                 asprintf(&p->res[i].rename, "%s.shared", p->res[i].name) < 0)
            p->res[i].rename = NULL;
        if ((rename || p->rename_by_default) && !p->res[i].rename)
            return -ENOMEM;
        if (devices && !(json_is_string(devices) && !strcmp(json_string_value(devices), "all"))) {
            char path[96];
            struct fatia_srcpos pos = o->pos;
            snprintf(path, sizeof(path), "spec.%s.resources[%zu].devices", field, i);
            if (map)
                fatia_srcmap_member(map, r, "devices", 0, &pos);
            fatia_diag_add(diag, FATIA_DIAG_WARNING, o->file, pos.line, pos.col, o->id, path,
                           "ignored, as the device plugin ignores it: select GPUs with "
                           "spec.gpuIndices");
        }
    }
    return 0;
}

static int load_policy(struct fatia_policy *p, const struct fatia_object *o,
                       const struct fatia_srcmap *map, struct fatia_diag *diag)
{
    json_t *spec = json_object_get(o->obj, "spec"), *sel, *idx, *f, *sh;
    size_t i;
    char why[256];
    int r;

    memset(p, 0, sizeof(*p));
    p->obj = o;
    p->name = o->name;
    sel = json_object_get(spec, "nodeSelector");
    if (sel) {
        r = fatia_selector_from_json(sel, &p->sel, why, sizeof(why));
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            fatia_supply_error_at(diag, map, o, spec, "nodeSelector", 0, "spec.nodeSelector", "%s",
                                  why);
            return -FATIA_E_INVALID;
        }
        for (i = 0; i < p->sel->n_reqs; i++)
            p->sel_hostname |= !strcmp(p->sel->reqs[i].key, "kubernetes.io/hostname");
    }
    p->gpu_mask = UINT64_MAX;
    if (json_object_get(spec, "gpuIndices")) {
        p->has_gpu_indices = true;
        p->gpu_mask = 0;
        json_array_foreach(json_object_get(spec, "gpuIndices"), i, idx) p->gpu_mask |=
            UINT64_C(1) << (json_integer_value(idx) & 63);
    }
    f = json_object_get(spec, "deviceFilter");
    if (json_array_size(f)) {
        p->device_filter = fatia_calloc(json_array_size(f), sizeof(uint32_t));
        if (!p->device_filter)
            return -ENOMEM;
        json_array_foreach(f, i, idx)
        {
            char path[48];
            if (parse_hex32(json_string_value(idx), &p->device_filter[i]) < 0) {
                snprintf(path, sizeof(path), "spec.deviceFilter[%zu]", i);
                fatia_supply_error_at(diag, map, o, f, NULL, i, path,
                                      "expected a PCI device id such as 0x233510DE");
                return -FATIA_E_INVALID;
            }
        }
        p->n_device_filter = json_array_size(f);
    }
    if ((sh = json_object_get(spec, "mig"))) {
        const char *strategy = fatia_json_str(sh, "strategy");
        p->mig_strategy = strategy && !strcmp(strategy, "single") ? FATIA_MIG_STRATEGY_SINGLE
                                                                  : FATIA_MIG_STRATEGY_MIXED;
        p->mig_config = fatia_json_str(sh, "config");
        p->mig_devices = json_object_get(sh, "mig-devices");
    }
    if ((sh = json_object_get(spec, "timeSlicing"))) {
        p->share = FATIA_SHARE_TIMESLICE;
        r = load_share(p, sh, o, map, diag, "timeSlicing");
        if (r < 0)
            return r;
        p->memory_per_replica = qbytes(json_object_get(sh, "memoryPerReplica"));
        p->has_context_reserve = json_object_get(sh, "contextReserve") != NULL;
        p->context_reserve = qbytes(json_object_get(sh, "contextReserve"));
    } else if ((sh = json_object_get(spec, "mps"))) {
        int64_t v;
        p->share = FATIA_SHARE_MPS;
        r = load_share(p, sh, o, map, diag, "mps");
        if (r < 0)
            return r;
        p->thread_percentage = fatia_json_int(sh, "activeThreadPercentage", &v) ? (uint32_t)v : 0;
        p->pinned_memory = qbytes(json_object_get(sh, "pinnedMemoryLimit"));
    } else if ((sh = json_object_get(spec, "fractional"))) {
        int64_t v;
        p->share = FATIA_SHARE_FRACTIONAL;
        p->has_context_reserve = json_object_get(sh, "contextReserve") != NULL;
        p->context_reserve = qbytes(json_object_get(sh, "contextReserve"));
        p->max_shares = fatia_json_int(sh, "maxShares", &v) ? (uint32_t)v : 0;
    }
    return 0;
}

static void release_policy(struct fatia_policy *p)
{
    fatia_selector_free(p->sel);
    fatia_free(p->device_filter);
    for (size_t i = 0; p->res && i < p->n_res; i++) {
        fatia_free(p->res[i].name);
        fatia_free(p->res[i].rename);
    }
    fatia_free(p->res);
}

void fatia_supply_config_release(struct fatia_supply_config *cfg)
{
    for (size_t i = 0; i < cfg->n_pools; i++)
        fatia_free(cfg->pools[i].gpus);
    fatia_free(cfg->pools);
    for (size_t i = 0; i < cfg->n_policies; i++)
        release_policy(&cfg->policies[i]);
    fatia_free(cfg->policies);
    memset(cfg, 0, sizeof(*cfg));
}

int fatia_supply_config_load(struct fatia_supply_config *cfg, const struct fatia_objset *set,
                             struct fatia_diag *diag)
{
    struct fatia_object *o;
    size_t it, n_pools = 0, n_policies = 0, errors = diag->n_errors;
    int r = 0;

    memset(cfg, 0, sizeof(*cfg));
    cfg->map = set->docs.map;
    for (it = 0; fatia_objset_next(set, "NodePool", &it);)
        n_pools++;
    for (it = 0; fatia_objset_next(set, "GPUSharingPolicy", &it);)
        n_policies++;
    cfg->pools = fatia_calloc(n_pools + 1, sizeof(*cfg->pools));
    cfg->policies = fatia_calloc(n_policies + 1, sizeof(*cfg->policies));
    if (!cfg->pools || !cfg->policies) {
        r = -ENOMEM;
        goto fail;
    }
    for (it = 0; (o = fatia_objset_next(set, "NodePool", &it));) {
        r = load_pool(&cfg->pools[cfg->n_pools], o);
        cfg->n_pools++;
        if (r < 0)
            goto fail;
    }
    for (it = 0; (o = fatia_objset_next(set, "GPUSharingPolicy", &it));) {
        r = load_policy(&cfg->policies[cfg->n_policies], o, cfg->map, diag);
        cfg->n_policies++;
        if (r == -ENOMEM)
            goto fail;
    }
    if (diag->n_errors > errors) {
        r = -FATIA_E_INVALID;
        goto fail;
    }
    return 0;
fail:
    fatia_supply_config_release(cfg);
    return r < 0 ? r : -FATIA_E_INVALID;
}
