/*
 * model/kinds/fatia_config.c: fatia.dev/v1alpha1 SchedulerConfig, the global switches of the
 * admission engine (src/control, docs/control.md).
 *
 * The fields are Kueue's Configuration fields that change admission semantics
 * (reference/kueue.md §1.7, apis/config/v1beta2/configuration_types.go), under the same names so a
 * platform team can copy them from its Kueue config:
 *
 *     spec:
 *       fairSharing:                  # present = on (Kueue v1beta2); enable: false turns it off
 *         enable: true                #   (Kueue v1beta1 spelling)
 *         preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
 *       admissionFairSharing:
 *         usageHalfLifeTime: 168h     # required; 0s disables the ordering, as upstream
 *         usageSamplingInterval: 5m   # default 5m
 *         resourceWeights: {nvidia.com/gpu: 1}
 *       partialAdmission: true        # Kueue's PartialAdmission gate (beta, on)
 *       resources:
 *         quotaCheckStrategy: BlockUndeclared   # or IgnoreUndeclared
 *         excludeResourcePrefixes: [example.com/]
 *         transformations:           # input -> outputs per unit of input
 *         - {input: nvidia.com/mig-1g.18gb, strategy: Replace, outputs: {fatia.dev/gpu-equivalent: 143m}}
 *         deviceClassMappings:       # DRA device class -> resource name (filled by the demand layer)
 *         - {name: fatia.dev/gpu, deviceClassNames: [gpu.nvidia.com]}
 *       manageJobsWithoutQueueName: true      # the quota door (controller/tenancy.c): a tenant's
 *       managedJobsNamespaceSelector: {...}   #   GPU pod or Job without a queue label, in these
 *       localQueueDefaulting: true            #   namespaces (absent: all), gets the LocalQueue
 *                                             #   "default" there, else is refused; all three
 *                                             #   absent = true, every namespace, true
 *
 * Rules from upstream's config validation (pkg/config/validation.go): only the three strategy
 * lists [S2-a], [S2-b] and [S2-a, S2-b] are accepted; a transformation input appears once and
 * never as an output of itself; durations parse as Go durations and are not negative; a device
 * class is mapped to one resource only. Cluster-scoped; fatia reads the one named "default"
 * (any name is accepted, and a second object is an error for the engine's loader, not here).
 */
#include "base/compat.h"

#include "base/json.h"
#include "base/str.h"
#include "model/kinds/kinds.h"

#define LIM(n) .flags = (FATIA_S_MIN | FATIA_S_MAX), .min = (n), .max

static void check_duration(struct fatia_vctx *ctx, json_t *v)
{
    const char *s = json_string_value(v);
    int64_t usec;

    if (!s)
        return;
    if (s[0] == '-' && fatia_parse_duration_usec(s + 1, &usec) == 0)
        fatia_verr_at(ctx, v, "", "must not be negative");
    else if (fatia_parse_duration_usec(s, &usec) < 0)
        fatia_verr_at(ctx, v, "", "invalid duration \"%s\": expected e.g. 5m, 1h30m, 168h", s);
}

static const struct fatia_schema duration = {FATIA_T_STRING, "A Go duration (5m, 1h30m)",
                                             .check = check_duration};

/* ---- fairSharing ---- */

static const char *const strategies[] = {"LessThanOrEqualToFinalShare", "LessThanInitialShare",
                                         NULL};

static void check_strategies(struct fatia_vctx *ctx, json_t *list)
{
    const char *a = json_string_value(json_array_get(list, 0));
    const char *b = json_string_value(json_array_get(list, 1));

    if (json_array_size(list) == 2 && a && b &&
        !(strcmp(a, "LessThanOrEqualToFinalShare") == 0 && strcmp(b, "LessThanInitialShare") == 0))
        fatia_verr_at(ctx, list, "",
                      "must be [LessThanOrEqualToFinalShare], [LessThanInitialShare] or "
                      "[LessThanOrEqualToFinalShare, LessThanInitialShare]");
}

static const struct fatia_field fair_sharing_fields[] = {
    {"enable", &fatia_s_bool, 0, "true"},
    {"preemptionStrategies",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(1) = 2,
         .items = &(const struct fatia_schema){FATIA_T_STRING, .enums = strategies},
         .check = check_strategies},
     0, NULL},
    {0}};

/* ---- admissionFairSharing ---- */

static const struct fatia_field afs_fields[] = {
    {"usageHalfLifeTime", &duration, FATIA_F_REQUIRED, NULL},
    {"usageSamplingInterval", &duration, 0, "\"5m\""},
    {"resourceWeights",
     &(const struct fatia_schema){FATIA_T_MAP, .key_format = FATIA_FMT_RESOURCE_NAME,
                                  .items = &fatia_s_number},
     0, NULL},
    {0}};

static void check_afs(struct fatia_vctx *ctx, json_t *afs)
{
    const char *name;
    json_t *w;
    char path[320];

    json_object_foreach(json_object_get(afs, "resourceWeights"), name, w)
    {
        if (json_is_number(w) && json_number_value(w) < 0) {
            snprintf(path, sizeof(path), "resourceWeights[%s]", name);
            fatia_verr_at(ctx, afs, path, "must not be negative");
        }
    }
}

/* ---- resources ---- */

static const char *const transformation_strategies[] = {"Retain", "Replace", NULL};
static const struct fatia_field transformation_fields[] = {
    {"input", &fatia_s_resource_name, FATIA_F_REQUIRED, NULL},
    {"strategy", &(const struct fatia_schema){FATIA_T_STRING, .enums = transformation_strategies},
     0, "\"Retain\""},
    {"outputs", &fatia_s_resource_list, 0, NULL},
    {0}};

static void check_transformation(struct fatia_vctx *ctx, json_t *t)
{
    const char *input = fatia_json_str(t, "input");

    if (input && json_object_get(json_object_get(t, "outputs"), input)) {
        char path[320];
        snprintf(path, sizeof(path), "outputs[%s]", input);
        fatia_verr_at(ctx, t, path, "must not name the input resource itself");
    }
}

static const struct fatia_field device_class_mapping_fields[] = {
    {"name", &fatia_s_resource_name, FATIA_F_REQUIRED, NULL},
    {"deviceClassNames",
     &(const struct fatia_schema){FATIA_T_ARRAY, LIM(1) = 8, .items = &fatia_s_dns_subdomain},
     FATIA_F_REQUIRED, NULL},
    {0}};

static void check_device_class_mappings(struct fatia_vctx *ctx, json_t *list)
{
    size_t i, j, k, l;
    json_t *m, *n, *c, *d;
    char path[96];

    json_array_foreach(list, i, m)
    {
        json_array_foreach(json_object_get(m, "deviceClassNames"), j, c)
        {
            for (k = 0; k <= i; k++) {
                n = json_array_get(list, k);
                json_array_foreach(json_object_get(n, "deviceClassNames"), l, d)
                {
                    if ((k < i || l < j) && json_equal(c, d)) {
                        snprintf(path, sizeof(path), "[%zu].deviceClassNames[%zu]", i, j);
                        fatia_verr_at(ctx, list, path,
                                      "device class \"%s\" is already mapped by [%zu]",
                                      json_string_value(c), k);
                        goto next;
                    }
                }
            }
next:;
        }
    }
}

static const char *const quota_check_strategies[] = {"BlockUndeclared", "IgnoreUndeclared", NULL};
static const struct fatia_field resources_fields[] = {
    {"quotaCheckStrategy",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = quota_check_strategies}, 0,
     "\"BlockUndeclared\""},
    {"excludeResourcePrefixes", &fatia_s_string_list, 0, NULL},
    {"transformations",
     &(const struct fatia_schema){
         FATIA_T_ARRAY,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = transformation_fields,
                                               .check = check_transformation},
         .list_key = "input"},
     0, NULL},
    {"deviceClassMappings",
     &(const struct fatia_schema){
         FATIA_T_ARRAY,
         .items =
             &(const struct fatia_schema){FATIA_T_OBJECT, .fields = device_class_mapping_fields},
         .list_key = "name", .check = check_device_class_mappings},
     0, NULL},
    {0}};

static const struct fatia_field spec_fields[] = {
    {"fairSharing", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fair_sharing_fields}, 0,
     NULL},
    {"admissionFairSharing",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = afs_fields, .check = check_afs}, 0,
     NULL},
    {"partialAdmission", &fatia_s_bool, 0, "true"},
    {"resources", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = resources_fields}, 0,
     "{}"},
    /* the quota door (controller/tenancy.c); absent = true, every namespace, true */
    {"manageJobsWithoutQueueName", &fatia_s_bool, 0, NULL},
    {"managedJobsNamespaceSelector", &fatia_s_label_selector, 0, NULL},
    {"localQueueDefaulting", &fatia_s_bool, 0, NULL},
    {0}};

static const struct fatia_field fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields}, 0, "{}"},
    {0}};

static const struct fatia_column columns[] = {
    {"Fair Sharing", "boolean", ".spec.fairSharing.enable", 0, "Fair sharing between queues"},
    {"Partial Admission", "boolean", ".spec.partialAdmission", 1, "Partial admission"},
    {NULL}};

const struct fatia_kind fatia_kind_schedulerconfig = {
    .group = "fatia.dev",
    .version = "v1alpha1",
    .kind = "SchedulerConfig",
    .plural = "schedulerconfigs",
    .singular = "schedulerconfig",
    .short_names = (const char *const[]){"schedconf", NULL},
    .categories = (const char *const[]){"fatia", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fields},
    .columns = columns};
