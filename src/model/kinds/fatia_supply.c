/*
 * model/kinds/fatia_supply.c: fatia.dev/v1alpha1 NodePool (a simulated fleet) and
 * GPUSharingPolicy (how the GPUs of selected nodes are cut), the supply layer's two kinds
 * (DESIGN §7, docs/supply.md).
 *
 * NodePool: `count` nodes named `<namePrefix>-<i>` (i from 0; namePrefix defaults to the pool's
 * name), each with `labels`, `taints`, the CPU/memory capacity in `resources`, and GPUs listed in
 * `gpus[{product, count, memory?, multiprocessors?}]` (indices assigned in list order).
 * `nvlinkIslands` groups GPU indices that share an NVLink fabric. A product missing from the GPU
 * catalog is valid here when its memory is declared, so that any trace replays; whether a product
 * is known is decided by the planner, which has the catalog (errors then name
 * spec.gpus[i].product).
 *
 * GPUSharingPolicy: `nodeSelector` (omitted = every node), optional `gpuIndices` and mig-parted's
 * `deviceFilter` (PCI device ids), and the strategy. The strategies reuse upstream field names so
 * that configs can be pasted: `timeSlicing` and `mps` are the NVIDIA device plugin's
 * ReplicatedResources (renameByDefault, failRequestsGreaterThanOne, resources[{name, replicas,
 * rename, devices}]) plus fatia's extensions (memoryPerReplica, contextReserve; MPS
 * activeThreadPercentage, pinnedMemoryLimit); `mig` carries the device plugin's MIG strategy and
 * either a mig-parted `mig-devices` map or a named config (`all-balanced`, `all-1g.18gb`, ...);
 * `fractional` shares a GPU in arbitrary fractions (fatia.dev/gpu-milli, fatia.dev/gpu-memory).
 *
 * Layers: a policy sets a partitioning (`mig`) and/or a sharing strategy (`timeSlicing`, `mps`,
 * `fractional`), as upstream splits the work between mig-parted and the device plugin; `mig`
 * may be combined with `timeSlicing` (time-sliced MIG devices), never with `mps` (the device
 * plugin rejects MPS on MIG) or `fractional`. Rules that need the catalog or the whole fleet
 * (profile names, overlapping selectors) are the planner's.
 *
 * Rejected: one `strategy: X` enum with a generic parameter map: it would lose the upstream field
 * names, which are the point.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

#define LIM(n) .flags = (FATIA_S_MIN | FATIA_S_MAX), .min = (n), .max

/* ---- NodePool ---- */

static const struct fatia_schema count_pos = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                              .min = 1, .max = 1000000};
static const struct fatia_schema gpu_count = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                              .min = 1, .max = 64};
static const struct fatia_schema positive_bytes = {FATIA_T_QUANTITY, .flags = FATIA_S_POSITIVE};
static const struct fatia_schema gpu_index = {FATIA_T_INT, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                              .min = 0, .max = 63};

static const struct fatia_field pool_gpu_fields[] = {
    {"product", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"count", &gpu_count, 0, "1"},
    {"memory", &positive_bytes, 0, NULL},
    {"multiprocessors", &count_pos, 0, NULL},
    {0}};
static const struct fatia_schema pool_gpus = {
    FATIA_T_ARRAY, LIM(0) = 16,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pool_gpu_fields}};
static const struct fatia_schema island = {FATIA_T_ARRAY, LIM(1) = 64, .items = &gpu_index};
static const struct fatia_schema islands = {FATIA_T_ARRAY, LIM(0) = 64, .items = &island};

static void check_pool_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *gpus = json_object_get(spec, "gpus"), *isl, *g, *idx;
    int64_t total = 0, n, seen_in[64];
    size_t i, j;
    char path[64];

    json_array_foreach(gpus, i, g)
    {
        if (!fatia_json_int(g, "count", &n))
            n = 1;
        total += n;
    }
    if (total > 64) {
        fatia_verr_at(ctx, spec, "gpus",
                      "a node has at most 64 GPUs (this pool gives it %" PRId64 ")", total);
        return;
    }
    for (i = 0; i < 64; i++)
        seen_in[i] = -1;
    json_array_foreach(json_object_get(spec, "nvlinkIslands"), i, isl)
    {
        json_array_foreach(isl, j, idx)
        {
            int64_t k;
            if (!json_is_integer(idx))
                continue;
            k = json_integer_value(idx);
            snprintf(path, sizeof(path), "nvlinkIslands[%zu][%zu]", i, j);
            if (k < 0 || k >= total)
                fatia_verr_at(ctx, spec, path,
                              "GPU index %" PRId64 " does not exist (the pool's nodes have %" PRId64
                              " GPUs)",
                              k, total);
            else if (seen_in[k] >= 0)
                fatia_verr_at(ctx, spec, path,
                              "GPU %" PRId64 " is already in nvlinkIslands[%" PRId64 "]", k,
                              seen_in[k]);
            else
                seen_in[k] = (int64_t)i;
        }
    }
}

static const struct fatia_field pool_spec_fields[] = {
    {"count", &count_pos, 0, "1"},
    {"namePrefix", &fatia_s_dns_label, 0, NULL},
    {"labels", &fatia_s_label_map, 0, NULL},
    {"taints", &fatia_s_taints, 0, NULL},
    {"resources", &fatia_s_resource_list, 0, NULL},
    {"gpus", &pool_gpus, 0, NULL},
    {"nvlinkIslands", &islands, 0, NULL},
    {"driverVersion", &fatia_s_nonempty_string, 0, NULL},
    {"cudaDriverVersion", &fatia_s_nonempty_string, 0, NULL},
    {0}};
static const struct fatia_field pool_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pool_spec_fields,
                                  .check = check_pool_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column pool_columns[] = {
    {"Count", "integer", ".spec.count", 0, "Number of nodes"},
    {"Prefix", "string", ".spec.namePrefix", 1, "Node name prefix"},
    {NULL}};

const struct fatia_kind fatia_kind_nodepool = {
    .group = "fatia.dev",
    .version = "v1alpha1",
    .kind = "NodePool",
    .plural = "nodepools",
    .singular = "nodepool",
    .short_names = (const char *const[]){"np", NULL},
    .categories = (const char *const[]){"fatia", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_LABEL,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pool_fields},
    .columns = pool_columns};

/* ---- GPUSharingPolicy ---- */

/* The device plugin's rule and message ("number of replicas must be >= 2"). */
static void check_replicated_resource(struct fatia_vctx *ctx, json_t *r)
{
    int64_t n;

    if (fatia_json_int(r, "replicas", &n) && n < 2)
        fatia_verr_at(ctx, r, "replicas", "number of replicas must be >= 2 (is %" PRId64 ")", n);
}

static const struct fatia_field replicated_fields[] = {
    {"name", &fatia_s_resource_name, FATIA_F_REQUIRED, NULL},
    {"replicas", &(const struct fatia_schema){FATIA_T_INT, LIM(0) = 1024}, FATIA_F_REQUIRED, NULL},
    {"rename", &fatia_s_resource_name, 0, NULL},
    {"devices", &fatia_s_any, 0, NULL},
    {0}};
static const struct fatia_schema replicated_list = {
    FATIA_T_ARRAY, LIM(1) = 32,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = replicated_fields,
                                          .check = check_replicated_resource},
    .list_key = "name"};

static const struct fatia_schema percent = {FATIA_T_INT, LIM(1) = 100};

static const struct fatia_field ts_fields[] = {
    {"renameByDefault", &fatia_s_bool, 0, NULL},
    {"failRequestsGreaterThanOne", &fatia_s_bool, 0, NULL},
    {"resources", &replicated_list, FATIA_F_REQUIRED, NULL},
    {"memoryPerReplica", &positive_bytes, 0, NULL},
    {"contextReserve", &fatia_s_quantity_nonneg, 0, NULL},
    {0}};
static const struct fatia_field mps_fields[] = {
    {"renameByDefault", &fatia_s_bool, 0, NULL},
    {"failRequestsGreaterThanOne", &fatia_s_bool, 0, NULL},
    {"resources", &replicated_list, FATIA_F_REQUIRED, NULL},
    {"activeThreadPercentage", &percent, 0, NULL},
    {"pinnedMemoryLimit", &positive_bytes, 0, NULL},
    {0}};

static const char *const mig_strategies[] = {"single", "mixed", NULL};
static const struct fatia_schema mig_devices = {
    FATIA_T_MAP, LIM(0) = 32, .items = &(const struct fatia_schema){FATIA_T_INT, LIM(0) = 64}};

static void check_mig(struct fatia_vctx *ctx, json_t *mig)
{
    bool cfg = json_object_get(mig, "config") != NULL;
    bool dev = json_object_get(mig, "mig-devices") != NULL;

    if (cfg == dev)
        fatia_verr_at(ctx, mig, "",
                      "set exactly one of config (a named layout such as "
                      "all-balanced) and mig-devices (a profile -> count map)");
}

static const struct fatia_field mig_fields[] = {
    {"strategy", &(const struct fatia_schema){FATIA_T_STRING, .enums = mig_strategies}, 0,
     "\"mixed\""},
    {"config", &fatia_s_nonempty_string, 0, NULL},
    {"mig-devices", &mig_devices, 0, NULL},
    {0}};
static const struct fatia_field fractional_fields[] = {
    {"contextReserve", &fatia_s_quantity_nonneg, 0, NULL},
    {"maxShares", &(const struct fatia_schema){FATIA_T_INT, LIM(1) = 1024}, 0, NULL},
    {0}};

static const struct fatia_schema device_filter = {
    FATIA_T_ARRAY, LIM(1) = 32,
    .items = &(const struct fatia_schema){FATIA_T_STRING, LIM(10) = 21}};

static void check_gpu_indices(struct fatia_vctx *ctx, json_t *arr)
{
    size_t i, j;
    json_t *a, *b;
    char path[32];

    json_array_foreach(arr, i, a)
    {
        for (j = 0; j < i; j++) {
            b = json_array_get(arr, j);
            if (json_is_integer(a) && json_is_integer(b) &&
                json_integer_value(a) == json_integer_value(b)) {
                snprintf(path, sizeof(path), "[%zu]", i);
                fatia_verr_at(ctx, arr, path, "duplicate GPU index %" JSON_INTEGER_FORMAT,
                              json_integer_value(a));
                break;
            }
        }
    }
}

static const struct fatia_schema gpu_indices = {FATIA_T_ARRAY, LIM(1) = 64, .items = &gpu_index,
                                                .check = check_gpu_indices};

static void check_policy_spec(struct fatia_vctx *ctx, json_t *spec)
{
    bool ts = json_object_get(spec, "timeSlicing") != NULL;
    bool mps = json_object_get(spec, "mps") != NULL;
    bool mig = json_object_get(spec, "mig") != NULL;
    bool frac = json_object_get(spec, "fractional") != NULL;

    if (!ts && !mps && !mig && !frac) {
        fatia_verr_at(ctx, spec, "",
                      "set one of timeSlicing, mps, mig and fractional (mig may be combined with "
                      "timeSlicing)");
        return;
    }
    if (ts + mps + frac > 1)
        fatia_verr_at(ctx, spec, mps ? "mps" : "fractional",
                      "timeSlicing, mps and fractional exclude each other");
    else if (mig && mps)
        fatia_verr_at(ctx, spec, "mps",
                      "MPS on MIG is not supported (the device plugin rejects it): use "
                      "timeSlicing to share MIG devices");
    else if (mig && frac)
        fatia_verr_at(ctx, spec, "fractional",
                      "fractional sharing applies to whole GPUs and cannot be combined with mig");
}

static const struct fatia_field policy_spec_fields[] = {
    {"nodeSelector", &fatia_s_label_selector, 0, NULL},
    {"gpuIndices", &gpu_indices, 0, NULL},
    {"deviceFilter", &device_filter, 0, NULL},
    {"timeSlicing", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ts_fields}, 0, NULL},
    {"mps", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = mps_fields}, 0, NULL},
    {"mig", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = mig_fields, .check = check_mig},
     0, NULL},
    {"fractional", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fractional_fields}, 0,
     NULL},
    {0}};
static const struct fatia_field policy_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = policy_spec_fields,
                                  .check = check_policy_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column policy_columns[] = {
    {"MIG", "string", ".spec.mig.config", 0, "Named MIG layout"},
    {"MIG Strategy", "string", ".spec.mig.strategy", 1, "single or mixed"},
    {NULL}};

const struct fatia_kind fatia_kind_gpusharingpolicy = {
    .group = "fatia.dev",
    .version = "v1alpha1",
    .kind = "GPUSharingPolicy",
    .plural = "gpusharingpolicies",
    .singular = "gpusharingpolicy",
    .short_names = (const char *const[]){"gsp", NULL},
    .categories = (const char *const[]){"fatia", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = policy_fields},
    .columns = policy_columns};
