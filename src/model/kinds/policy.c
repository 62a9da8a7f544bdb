/*
 * model/kinds/policy.c: policy/v1 PodDisruptionBudget, core v1 ResourceQuota and LimitRange,
 * scheduling.k8s.io/v1 PriorityClass (k8s.io/api/policy/v1, core/v1, scheduling/v1).
 *
 * Rules taken from upstream (pkg/apis/policy/validation ValidatePodDisruptionBudgetSpec,
 * pkg/apis/core/validation ValidateResourceQuota and ValidateLimitRange, pkg/apis/scheduling/
 * validation): a budget sets minAvailable or maxUnavailable, not both, each an integer >= 0 or a
 * percentage; quota values are non-negative quantities; a LimitRange item's type is Pod, Container
 * or PersistentVolumeClaim and its min <= default request <= default <= max per resource; a
 * PriorityClass's value is at most 1000000000 unless its name starts "system-", and
 * preemptionPolicy defaults to PreemptLowerPriority.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

/* ---- PodDisruptionBudget ---- */

static void check_pdb_spec(struct fatia_vctx *ctx, json_t *spec)
{
    if (json_object_get(spec, "minAvailable") && json_object_get(spec, "maxUnavailable"))
        fatia_verr_at(ctx, spec, "", "minAvailable and maxUnavailable cannot be both set");
    fatia_check_int_or_percent(ctx, spec, "minAvailable");
    fatia_check_int_or_percent(ctx, spec, "maxUnavailable");
}

static const char *const eviction_policies[] = {"IfHealthyBudget", "AlwaysAllow", NULL};
static const struct fatia_field pdb_spec_fields[] = {
    {"minAvailable", &fatia_s_int_or_string, 0, NULL},
    {"maxUnavailable", &fatia_s_int_or_string, 0, NULL},
    {"selector", &fatia_s_label_selector, 0, NULL},
    {"unhealthyPodEvictionPolicy",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = eviction_policies}, 0, NULL},
    {0}};
static const struct fatia_field pdb_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pdb_spec_fields,
                                  .check = check_pdb_spec},
     0, "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

/* kubectl's printer: the value as written, "N/A" when the budget does not set it */
static json_t *int_or_na(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(json_object_get(obj, "spec"), key);
    char b[32];

    if (json_is_integer(v)) {
        snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return json_string(b);
    }
    return json_string(json_is_string(v) ? json_string_value(v) : "N/A");
}

static json_t *pdb_min(const json_t *obj, int64_t now)
{
    (void)now;
    return int_or_na(obj, "minAvailable");
}

static json_t *pdb_max(const json_t *obj, int64_t now)
{
    (void)now;
    return int_or_na(obj, "maxUnavailable");
}

static const struct fatia_column pdb_columns[] = {
    {"Min Available", "string", NULL, 0, "Pods that must stay available", pdb_min},
    {"Max Unavailable", "string", NULL, 0, "Pods that may be unavailable", pdb_max},
    {"Allowed Disruptions", "integer", NULL, 0, "Evictions allowed now",
     fatia_print_st_disruptions_allowed},
    {NULL}};
const struct fatia_kind fatia_kind_poddisruptionbudget = {
    .group = "policy",
    .version = "v1",
    .kind = "PodDisruptionBudget",
    .plural = "poddisruptionbudgets",
    .singular = "poddisruptionbudget",
    .short_names = (const char *const[]){"pdb", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pdb_fields},
    .columns = pdb_columns};

/* ---- ResourceQuota ---- */

static const char *const quota_scopes[] = {"Terminating",
                                           "NotTerminating",
                                           "BestEffort",
                                           "NotBestEffort",
                                           "PriorityClass",
                                           "CrossNamespacePodAffinity",
                                           "VolumeAttributesClass",
                                           NULL};
static const struct fatia_schema scope_name = {FATIA_T_STRING, .enums = quota_scopes};
static const char *const scope_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
static const struct fatia_field scope_req_fields[] = {
    {"scopeName", &scope_name, FATIA_F_REQUIRED, NULL},
    {"operator", &(const struct fatia_schema){FATIA_T_STRING, .enums = scope_ops}, FATIA_F_REQUIRED,
     NULL},
    {"values", &fatia_s_string_list, 0, NULL},
    {0}};
static const struct fatia_field scope_selector_fields[] = {
    {"matchExpressions",
     &(const struct fatia_schema){
         FATIA_T_ARRAY,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = scope_req_fields}},
     0, NULL},
    {0}};
static const struct fatia_field quota_spec_fields[] = {
    {"hard", &fatia_s_resource_list, 0, NULL},
    {"scopes", &(const struct fatia_schema){FATIA_T_ARRAY, .items = &scope_name}, 0, NULL},
    {"scopeSelector", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = scope_selector_fields},
     0, NULL},
    {0}};
static const struct fatia_field quota_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = quota_spec_fields}, 0, "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column quota_columns[] = {
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Request", "string", NULL, 0, "Used / hard of the request resources",
     fatia_print_quota_request},
    {"Limit", "string", NULL, 0, "Used / hard of the limits.* resources", fatia_print_quota_limit},
    {NULL}};
const struct fatia_kind fatia_kind_resourcequota = {
    .group = "",
    .version = "v1",
    .kind = "ResourceQuota",
    .plural = "resourcequotas",
    .singular = "resourcequota",
    .short_names = (const char *const[]){"quota", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = quota_fields},
    .columns = quota_columns};

/* ---- LimitRange ---- */

static const char *const limit_types[] = {"Pod", "Container", "PersistentVolumeClaim", NULL};

/* min <= defaultRequest <= default <= max, per resource */
static void check_limit_item(struct fatia_vctx *ctx, json_t *item)
{
    static const char *const order[] = {"min", "defaultRequest", "default", "max"};
    const char *type = fatia_json_str(item, "type");
    char path[300];

    if (type && !strcmp(type, "Pod") &&
        (json_object_get(item, "default") || json_object_get(item, "defaultRequest")))
        fatia_verr_at(ctx, item, json_object_get(item, "default") ? "default" : "defaultRequest",
                      "may not be specified when `type` is 'Pod'");
    for (int a = 0; a < 4; a++) {
        json_t *ma = json_object_get(item, order[a]), *qa;
        const char *res;
        json_object_foreach(ma, res, qa)
        {
            struct fatia_quantity x, y;
            if (fatia_quantity_parse_json(qa, &x, NULL, 0) < 0)
                continue;
            for (int b = a + 1; b < 4; b++) {
                json_t *qb = json_object_get(json_object_get(item, order[b]), res);
                if (!qb || fatia_quantity_parse_json(qb, &y, NULL, 0) < 0)
                    continue;
                if (fatia_quantity_cmp(&x, &y) > 0) {
                    snprintf(path, sizeof(path), "%s[%s]", order[a], res);
                    fatia_verr_at(ctx, item, path, "must be less than or equal to %s value",
                                  order[b]);
                }
            }
        }
    }
}

static const struct fatia_field limit_item_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = limit_types}, FATIA_F_REQUIRED,
     NULL},
    {"max", &fatia_s_resource_list, 0, NULL},
    {"min", &fatia_s_resource_list, 0, NULL},
    {"default", &fatia_s_resource_list, 0, NULL},
    {"defaultRequest", &fatia_s_resource_list, 0, NULL},
    {"maxLimitRequestRatio", &fatia_s_resource_list, 0, NULL},
    {0}};
static const struct fatia_field limitrange_spec_fields[] = {
    {"limits",
     &(const struct fatia_schema){FATIA_T_ARRAY,
                                  .items = &(const struct fatia_schema){FATIA_T_OBJECT,
                                                                        .fields = limit_item_fields,
                                                                        .check = check_limit_item}},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field limitrange_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = limitrange_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_column limitrange_columns[] = {
    {"Created At", "string", ".metadata.creationTimestamp", 0, "When the object was created"},
    {NULL}};
const struct fatia_kind fatia_kind_limitrange = {
    .group = "",
    .version = "v1",
    .kind = "LimitRange",
    .plural = "limitranges",
    .singular = "limitrange",
    .short_names = (const char *const[]){"limits", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = limitrange_fields},
    .columns = limitrange_columns};

/* ---- PriorityClass ---- */

#define HIGHEST_USER_PRIORITY 1000000000

static void check_priority_class(struct fatia_vctx *ctx, json_t *pc)
{
    const char *name = fatia_json_str(json_object_get(pc, "metadata"), "name");
    int64_t v;

    if (fatia_json_int(pc, "value", &v) && v > HIGHEST_USER_PRIORITY &&
        !(name && !strncmp(name, "system-", 7)))
        fatia_verr_at(ctx, pc, "value", "maximum allowed value of a user defined priority is %d",
                      HIGHEST_USER_PRIORITY);
    if (name && !strncmp(name, "system-", 7) && strcmp(name, "system-cluster-critical") &&
        strcmp(name, "system-node-critical"))
        fatia_verr_at(ctx, pc, "metadata.name",
                      "priority class names with 'system-' prefix are reserved");
}

static const char *const preemption_policies[] = {"PreemptLowerPriority", "Never", NULL};
static const struct fatia_field pc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"value", &fatia_s_int32, FATIA_F_REQUIRED, NULL},
    {"globalDefault", &fatia_s_bool, 0, NULL},
    {"description", &fatia_s_string, 0, NULL},
    {"preemptionPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = preemption_policies},
     0, "\"PreemptLowerPriority\""},
    {0}};
static const struct fatia_column pc_columns[] = {
    {"Value", "integer", ".value", 0, "The priority"},
    {"Global-Default", "boolean", ".globalDefault", 0, "Whether pods without a class get it"},
    {"PreemptionPolicy", "string", ".preemptionPolicy", 0, "Whether the pods preempt"},
    {NULL}};
const struct fatia_kind fatia_kind_priorityclass = {
    .group = "scheduling.k8s.io",
    .version = "v1",
    .kind = "PriorityClass",
    .plural = "priorityclasses",
    .singular = "priorityclass",
    .short_names = (const char *const[]){"pc", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pc_fields,
                                           .check = check_priority_class},
    .columns = pc_columns};
