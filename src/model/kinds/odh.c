/*
 * model/kinds/odh.c: infrastructure.opendatahub.io HardwareProfile (v1 storage, v1alpha1 served
 * with a deprecation warning; the two schemas are the same, reference/gpuaas-landscape.md §1.2).
 *
 * Upstream checks only the CEL rules on scheduling (Queue needs kueue and no node, Node needs node
 * and no kueue); the dashboard checks the rest in the browser. fatia checks them server-side:
 * identifiers unique, counts are quantities, minCount <= defaultCount <= maxCount, and the
 * dashboard annotations are well formed. A profile with neither a CPU nor a memory identifier is
 * valid but gets the dashboard's warning.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

static const char *const resource_types[] = {"CPU", "Memory", "Accelerator", NULL};
static const struct fatia_schema count_quantity = {FATIA_T_QUANTITY, "A count (int or string)",
                                                   .flags = FATIA_S_NONNEG};

static void check_identifier(struct fatia_vctx *ctx, json_t *id)
{
    struct fatia_quantity min, def, max;
    json_t *maxv = json_object_get(id, "maxCount");

    if (fatia_quantity_parse_json(json_object_get(id, "minCount"), &min, NULL, 0) < 0 ||
        fatia_quantity_parse_json(json_object_get(id, "defaultCount"), &def, NULL, 0) < 0)
        return;
    if (fatia_quantity_cmp(&min, &def) > 0)
        fatia_verr_at(ctx, id, "defaultCount", "must be greater than or equal to minCount");
    if (maxv && fatia_quantity_parse_json(maxv, &max, NULL, 0) == 0) {
        if (fatia_quantity_cmp(&def, &max) > 0)
            fatia_verr_at(ctx, id, "defaultCount", "must be less than or equal to maxCount");
        if (fatia_quantity_cmp(&min, &max) > 0)
            fatia_verr_at(ctx, id, "maxCount", "must be greater than or equal to minCount");
    }
}

static const struct fatia_field identifier_fields[] = {
    {"displayName", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"identifier", &fatia_s_resource_name, FATIA_F_REQUIRED, NULL},
    {"minCount", &count_quantity, FATIA_F_REQUIRED, NULL},
    {"maxCount", &count_quantity, 0, NULL},
    {"defaultCount", &count_quantity, FATIA_F_REQUIRED, NULL},
    {"resourceType", &(const struct fatia_schema){FATIA_T_STRING, .enums = resource_types}, 0,
     NULL},
    {0}};
static const struct fatia_schema identifiers = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = identifier_fields,
                                          .check = check_identifier},
    .list_key = "identifier"};

static const char *const scheduling_types[] = {"Queue", "Node", NULL};
static const struct fatia_field kueue_fields[] = {
    {"localQueueName",
     &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1,
                                  .max = 253, .format = FATIA_FMT_DNS1123_SUBDOMAIN},
     FATIA_F_REQUIRED, NULL},
    {"priorityClass", &fatia_s_dns_subdomain, 0, NULL},
    {0}};
static const struct fatia_field node_fields[] = {{"nodeSelector", &fatia_s_string_map, 0, NULL},
                                                 {"tolerations", &fatia_s_tolerations, 0, NULL},
                                                 {0}};

static void check_scheduling(struct fatia_vctx *ctx, json_t *s)
{
    const char *type = fatia_json_str(s, "type");
    bool has_kueue = json_object_get(s, "kueue") != NULL;
    bool has_node = json_object_get(s, "node") != NULL;

    if (!type)
        return;
    if (!strcmp(type, "Queue")) {
        if (!has_kueue)
            fatia_verr_at(ctx, s, "kueue", "required when type is Queue");
        if (has_node)
            fatia_verr_at(ctx, s, "node", "must not be set when type is Queue");
    } else {
        if (!has_node)
            fatia_verr_at(ctx, s, "node", "required when type is Node");
        if (has_kueue)
            fatia_verr_at(ctx, s, "kueue", "must not be set when type is Node");
    }
}

static const struct fatia_field scheduling_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = scheduling_types},
     FATIA_F_REQUIRED, NULL},
    {"kueue", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = kueue_fields}, 0, NULL},
    {"node", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = node_fields}, 0, NULL},
    {0}};

static void check_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *ids = json_object_get(spec, "identifiers"), *id;
    bool cpu_or_mem = false;
    size_t i;

    json_array_foreach(ids, i, id)
    {
        const char *name = fatia_json_str(id, "identifier");
        cpu_or_mem |= name && (!strcmp(name, "cpu") || !strcmp(name, "memory"));
    }
    if (!cpu_or_mem)
        fatia_vwarn_at(ctx, spec, "identifiers",
                       "has neither a cpu nor a memory identifier: workloads using this profile "
                       "get no CPU or memory requests from it");
}

static const struct fatia_field spec_fields[] = {
    {"identifiers", &identifiers, 0, NULL},
    {"scheduling",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = scheduling_fields,
                                  .check = check_scheduling},
     0, NULL},
    {0}};

/* The dashboard annotations: disabled is "true" or "false"; visibility is a JSON array. */
static void check_profile(struct fatia_vctx *ctx, json_t *obj)
{
    json_t *ann = fatia_json_path(obj, "metadata.annotations");
    const char *disabled = fatia_json_str(ann, "opendatahub.io/disabled");
    const char *vis = fatia_json_str(ann, "opendatahub.io/dashboard-feature-visibility");

    if (disabled && strcmp(disabled, "true") && strcmp(disabled, "false"))
        fatia_verr_at(ctx, obj, "metadata.annotations[opendatahub.io/disabled]",
                      "must be \"true\" or \"false\" (is \"%s\")", disabled);
    if (vis) {
        json_t *arr = json_loads(vis, JSON_DECODE_ANY, NULL);
        size_t i;
        json_t *v;
        bool ok = json_is_array(arr);
        json_array_foreach(arr, i, v) ok = ok && json_is_string(v);
        if (!ok)
            fatia_verr_at(ctx, obj,
                          "metadata.annotations[opendatahub.io/dashboard-feature-visibility]",
                          "must be a JSON array of strings such as [\"workbench\", "
                          "\"model-serving\"] (is '%s')",
                          vis);
        json_decref(arr);
    }
}

static const struct fatia_field fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields, .check = check_spec}, 0,
     "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_kind_version versions[] = {
    {"v1alpha1", NULL, NULL,
     "infrastructure.opendatahub.io/v1alpha1 HardwareProfile is deprecated; please use "
     "infrastructure.opendatahub.io/v1 HardwareProfile"},
    {NULL}};

static const struct fatia_column columns[] = {
    {"Display Name", "string", ".metadata.annotations.opendatahub\\.io/display-name", 0, NULL},
    {"Scheduling", "string", ".spec.scheduling.type", 0, NULL},
    {"Queue", "string", ".spec.scheduling.kueue.localQueueName", 0, NULL},
    {"Disabled", "string", ".metadata.annotations.opendatahub\\.io/disabled", 1, NULL},
    {NULL}};

const struct fatia_kind fatia_kind_hardwareprofile = {
    .group = "infrastructure.opendatahub.io",
    .version = "v1",
    .kind = "HardwareProfile",
    .plural = "hardwareprofiles",
    .singular = "hardwareprofile",
    .short_names = (const char *const[]){"hwp", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema =
        &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fields, .check = check_profile},
    .columns = columns,
    .others = versions};
