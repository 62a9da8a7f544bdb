/*
 * model/kinds/meta.c: schemas of the metav1 / core structures that many kinds embed:
 * ObjectMeta, LabelSelector, Toleration, Taint, Condition.
 *
 * The cross-field rules are upstream's (k8s.io/kubernetes pkg/apis/core/validation and
 * apimachinery metav1 validation): a toleration with operator Exists has no value, an empty key
 * needs operator Exists, tolerationSeconds only with NoExecute; In/NotIn selector requirements
 * have values and Exists/DoesNotExist have none.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/labels.h"

/* ---- ObjectMeta ---- */

static const struct fatia_field owner_ref_fields[] = {
    {"apiVersion", &fatia_s_string, FATIA_F_REQUIRED, NULL},
    {"kind", &fatia_s_string, FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_string, FATIA_F_REQUIRED, NULL},
    {"uid", &fatia_s_string, FATIA_F_REQUIRED, NULL},
    {"controller", &fatia_s_bool, 0, NULL},
    {"blockOwnerDeletion", &fatia_s_bool, 0, NULL},
    {0}};
static const struct fatia_schema owner_ref = {FATIA_T_OBJECT, .fields = owner_ref_fields};
static const struct fatia_schema owner_refs = {FATIA_T_ARRAY, .items = &owner_ref};
static const struct fatia_schema finalizers = {FATIA_T_ARRAY, .items = &fatia_s_qualified_name};

static void check_annotations_size(struct fatia_vctx *ctx, json_t *meta)
{
    json_t *ann = json_object_get(meta, "annotations");
    const char *k;
    json_t *v;
    size_t total = 0;

    json_object_foreach(ann, k, v) total += strlen(k) + json_string_length(v);
    if (total > 256 * 1024)
        fatia_verr_at(ctx, meta, "annotations",
                      "total size %zu bytes exceeds the limit of 262144 bytes", total);
}

static const struct fatia_field object_meta_fields[] = {
    {"name", &fatia_s_string, 0, NULL},
    {"generateName", &fatia_s_string, 0, NULL},
    {"namespace", &fatia_s_dns_label, 0, NULL},
    {"uid", &fatia_s_string, 0, NULL},
    {"resourceVersion", &fatia_s_string, 0, NULL},
    {"generation", &fatia_s_int, 0, NULL},
    {"creationTimestamp", &fatia_s_time, 0, NULL},
    {"deletionTimestamp", &fatia_s_time, 0, NULL},
    {"deletionGracePeriodSeconds", &fatia_s_int, 0, NULL},
    {"labels", &fatia_s_label_map, 0, NULL},
    {"annotations", &fatia_s_annotation_map, 0, NULL},
    {"ownerReferences", &owner_refs, 0, NULL},
    {"finalizers", &finalizers, 0, NULL},
    {"managedFields", &fatia_s_any, 0, NULL},
    {"selfLink", &fatia_s_string, 0, NULL},
    {0}};
const struct fatia_schema fatia_s_object_meta = {FATIA_T_OBJECT, "Standard object metadata",
                                                 .fields = object_meta_fields,
                                                 .check = check_annotations_size};

/* ---- LabelSelector ---- */

static const char *const selector_ops[] = {"In", "NotIn", "Exists", "DoesNotExist", NULL};
static const struct fatia_schema selector_op = {FATIA_T_STRING, .enums = selector_ops};
static const struct fatia_schema label_values = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_STRING, .format = FATIA_FMT_LABEL_VALUE}};

static void check_requirement(struct fatia_vctx *ctx, json_t *req)
{
    const char *op = fatia_json_str(req, "operator");
    size_t n = json_array_size(json_object_get(req, "values"));

    if (!op)
        return;
    if ((!strcmp(op, "In") || !strcmp(op, "NotIn")) && n == 0)
        fatia_verr_at(ctx, req, "values", "must be specified when operator is %s", op);
    else if ((!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) && n > 0)
        fatia_verr_at(ctx, req, "values", "may not be specified when operator is %s", op);
}

static const struct fatia_field requirement_fields[] = {
    {"key", &fatia_s_qualified_name, FATIA_F_REQUIRED, NULL},
    {"operator", &selector_op, FATIA_F_REQUIRED, NULL},
    {"values", &label_values, 0, NULL},
    {0}};
static const struct fatia_schema requirement = {FATIA_T_OBJECT, .fields = requirement_fields,
                                                .check = check_requirement};
static const struct fatia_schema requirements = {FATIA_T_ARRAY, .items = &requirement};
static const struct fatia_field selector_fields[] = {{"matchLabels", &fatia_s_label_map, 0, NULL},
                                                     {"matchExpressions", &requirements, 0, NULL},
                                                     {0}};
const struct fatia_schema fatia_s_label_selector = {
    FATIA_T_OBJECT, "A label query over a set of resources", .fields = selector_fields};

/* ---- Toleration, Taint ---- */

static const char *const toleration_ops[] = {"Exists", "Equal", NULL};
static const char *const taint_effects_any[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", "",
                                                NULL};
static const char *const taint_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
static const struct fatia_schema toleration_op = {FATIA_T_STRING, .enums = toleration_ops};
static const struct fatia_schema toleration_effect = {FATIA_T_STRING, .enums = taint_effects_any};
static const struct fatia_schema taint_effect = {FATIA_T_STRING, .enums = taint_effects};
static const struct fatia_schema optional_qualified_name = {FATIA_T_STRING};

static void check_toleration(struct fatia_vctx *ctx, json_t *t)
{
    const char *key = fatia_json_str(t, "key");
    const char *op = fatia_json_str(t, "operator");
    const char *value = fatia_json_str(t, "value");
    const char *effect = fatia_json_str(t, "effect");
    char why[256];

    if (!op)
        op = "Equal";
    if (key && *key && !fatia_is_qualified_name(key, why, sizeof(why)))
        fatia_verr_at(ctx, t, "key", "invalid value \"%s\": %s", key, why);
    if ((!key || !*key) && strcmp(op, "Exists") != 0)
        fatia_verr_at(ctx, t, "operator", "must be Exists when key is empty");
    if (!strcmp(op, "Exists") && value && *value)
        fatia_verr_at(ctx, t, "value", "must be empty when operator is Exists");
    if (json_object_get(t, "tolerationSeconds") && (!effect || strcmp(effect, "NoExecute")))
        fatia_verr_at(ctx, t, "tolerationSeconds", "may only be set when effect is NoExecute");
}

static const struct fatia_field toleration_fields[] = {
    {"key", &optional_qualified_name, 0, NULL},   {"operator", &toleration_op, 0, NULL},
    {"value", &fatia_s_string, 0, NULL},          {"effect", &toleration_effect, 0, NULL},
    {"tolerationSeconds", &fatia_s_int, 0, NULL}, {0}};
const struct fatia_schema fatia_s_toleration = {
    FATIA_T_OBJECT, "Tolerates a taint with matching key, value and effect",
    .fields = toleration_fields, .check = check_toleration};
const struct fatia_schema fatia_s_tolerations = {FATIA_T_ARRAY, .items = &fatia_s_toleration};

static const struct fatia_field taint_fields[] = {
    {"key", &fatia_s_qualified_name, FATIA_F_REQUIRED, NULL},
    {"value", &(const struct fatia_schema){FATIA_T_STRING, .format = FATIA_FMT_LABEL_VALUE}, 0,
     NULL},
    {"effect", &taint_effect, FATIA_F_REQUIRED, NULL},
    {"timeAdded", &fatia_s_time, 0, NULL},
    {0}};
const struct fatia_schema fatia_s_taint = {FATIA_T_OBJECT, "A node taint", .fields = taint_fields};
const struct fatia_schema fatia_s_taints = {FATIA_T_ARRAY, .items = &fatia_s_taint};

/* ---- Condition ---- */

static const char *const condition_statuses[] = {"True", "False", "Unknown", NULL};
static const struct fatia_field condition_fields[] = {
    {"type", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"status", &(const struct fatia_schema){FATIA_T_STRING, .enums = condition_statuses},
     FATIA_F_REQUIRED, NULL},
    {"reason", &fatia_s_string, 0, NULL},
    {"message", &fatia_s_string, 0, NULL},
    {"lastTransitionTime", &fatia_s_time, 0, NULL},
    {"lastProbeTime", &fatia_s_time, 0, NULL},
    {"lastHeartbeatTime", &fatia_s_time, 0, NULL},
    {"observedGeneration", &fatia_s_int, 0, NULL},
    {0}};
const struct fatia_schema fatia_s_condition = {FATIA_T_OBJECT, .fields = condition_fields};
const struct fatia_schema fatia_s_conditions = {FATIA_T_ARRAY, .items = &fatia_s_condition,
                                                .list_key = "type"};

const struct fatia_schema fatia_s_status_any = {FATIA_T_ANY, "Status, written by fatia"};
