/*
 * model/kinds/kserve.c: KServe's serving.kserve.io/v1beta1 InferenceService and v1alpha1
 * ServingRuntime / ClusterServingRuntime, as KServe's CRDs (config/crd/full) and its webhook
 * (pkg/apis/serving/v1beta1/inference_service_validation.go) define the parts fatia acts on.
 *
 * InferenceService: spec.predictor is required and must carry spec.predictor.model (the
 * "new schema" RHOAI's single-model serving writes: model.modelFormat.name required, an optional
 * model.runtime naming a ServingRuntime, model.resources, model.args); minReplicas and
 * maxReplicas >= 0 with maxReplicas >= minReplicas when set ("MaxReplicas cannot be less than
 * MinReplicas", KServe's message); scaleMetric one of cpu, memory, concurrency, rps (KServe's
 * ScaleMetric enum); scaleTarget >= 1. The rest of a predictor (containers, serviceAccountName,
 * tolerations, the framework shortcuts such as sklearn: ...) is kept as written: the objects are
 * open, because KServe's own schema is a full PodSpec and a strict subset here would refuse
 * manifests KServe accepts. The legacy framework shortcuts (predictor.sklearn, ...) without
 * predictor.model are refused with an error that says to use predictor.model: the controller
 * (controller/inferenceservice.c) only understands model.
 *
 * ServingRuntime (namespaced) and ClusterServingRuntime (cluster-scoped) share one spec:
 * supportedModelFormats (name required), containers (pod containers), disabled, multiModel,
 * protocolVersions; the remaining ServingRuntimePodSpec members are kept.
 *
 * Printer columns are KServe's: InferenceService URL, READY, PREV, LATEST,
 * PREVROLLEDOUTREVISION, LATESTREADYREVISION (Knative traffic columns, empty here: fatia serves
 * raw deployments), AGE; ServingRuntime DISABLED, MODELTYPE, CONTAINERS, AGE.
 *
 * Rejected: a strict transcription of KServe's 20k-line CRD (every framework spec): refusing an
 * unknown member KServe accepts would break `kubectl apply` of upstream examples for no gain.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static const char *const scale_metrics[] = {"cpu", "memory", "concurrency", "rps", NULL};

static const struct fatia_schema s_nonneg = {FATIA_T_INT, .flags = FATIA_S_MIN, .min = 0};
static const struct fatia_schema s_positive = {FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1};

static const struct fatia_field resources_fields[] = {{"limits", &fatia_s_resource_list, 0, NULL},
                                                      {"requests", &fatia_s_resource_list, 0, NULL},
                                                      {"claims", &fatia_s_any, 0, NULL},
                                                      {0}};
static const struct fatia_schema s_resources = {
    FATIA_T_OBJECT, "Compute resources of the model server", .fields = resources_fields,
    .check = fatia_check_resource_requirements};

static const struct fatia_field model_format_fields[] = {
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"version", &fatia_s_string, 0, NULL},
    {0}};

static const struct fatia_field model_fields[] = {
    {"modelFormat",
     &(const struct fatia_schema){FATIA_T_OBJECT, "The model's format (vLLM, huggingface, ...)",
                                  .fields = model_format_fields},
     FATIA_F_REQUIRED, NULL},
    {"runtime", &fatia_s_dns_subdomain, 0, NULL},
    {"storageUri", &fatia_s_string, 0, NULL},
    {"resources", &s_resources, 0, NULL},
    {"args", &fatia_s_string_list, 0, NULL},
    {"name", &fatia_s_string, 0, NULL},
    {0}};

static const struct fatia_field predictor_fields[] = {
    {"model",
     &(const struct fatia_schema){FATIA_T_OBJECT, "The model and its serving runtime",
                                  .flags = FATIA_S_OPEN, .fields = model_fields},
     0, NULL},
    {"minReplicas", &s_nonneg, 0, NULL},
    {"maxReplicas", &s_nonneg, 0, NULL},
    {"scaleMetric", &(const struct fatia_schema){FATIA_T_STRING, .enums = scale_metrics}, 0, NULL},
    {"scaleTarget", &s_positive, 0, NULL},
    {0}};

static const char *const frameworks[] = {"sklearn", "xgboost",     "tensorflow", "pytorch",
                                         "triton",  "onnx",        "pmml",       "lightgbm",
                                         "paddle",  "huggingface", NULL};

static void check_predictor(struct fatia_vctx *ctx, json_t *p)
{
    int64_t min = 0, max = 0;
    bool has_min = fatia_json_int(p, "minReplicas", &min);

    if (fatia_json_int(p, "maxReplicas", &max) && max && has_min && max < min)
        fatia_verr_at(ctx, p, "maxReplicas",
                      "MaxReplicas cannot be less than MinReplicas (%" PRId64 " < %" PRId64 ")",
                      max, min);
    if (json_object_get(p, "model"))
        return;
    for (const char *const *f = frameworks; *f; f++)
        if (json_object_get(p, *f)) {
            fatia_verr_at(ctx, p, *f,
                          "the framework shortcut '%s' is not served: use predictor.model with "
                          "modelFormat.name: %s",
                          *f, *f);
            return;
        }
    fatia_verr_at(ctx, p, "model", "required: the model to serve (model.modelFormat.name)");
}

static const struct fatia_field isvc_spec_fields[] = {
    {"predictor",
     &(const struct fatia_schema){FATIA_T_OBJECT, "The model server", .flags = FATIA_S_OPEN,
                                  .fields = predictor_fields, .check = check_predictor},
     FATIA_F_REQUIRED, NULL},
    {"transformer", &fatia_s_any, 0, NULL},
    {"explainer", &fatia_s_any, 0, NULL},
    {0}};

static const struct fatia_field isvc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = isvc_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column isvc_columns[] = {
    {"URL", "string", ".status.url", 0, NULL},
    {"Ready", "string", ".status.conditions[?(@.type=='Ready')].status", 0, NULL},
    {"Prev", "integer", ".status.components.predictor.traffic[?(@.tag=='prev')].percent", 0, NULL},
    {"Latest", "integer", ".status.components.predictor.traffic[?(@.latestRevision==true)].percent",
     0, NULL},
    {"PrevRolledoutRevision", "string",
     ".status.components.predictor.traffic[?(@.tag=='prev')].revisionName", 1, NULL},
    {"LatestReadyRevision", "string",
     ".status.components.predictor.traffic[?(@.latestRevision==true)].revisionName", 1, NULL},
    {NULL}};

const struct fatia_kind fatia_kind_inferenceservice = {
    .group = "serving.kserve.io",
    .version = "v1beta1",
    .kind = "InferenceService",
    .plural = "inferenceservices",
    .singular = "inferenceservice",
    .short_names = (const char *const[]){"isvc", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_LABEL,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = isvc_fields},
    .columns = isvc_columns,
};

static const struct fatia_field format_fields[] = {
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"version", &fatia_s_string, 0, NULL},
    {"autoSelect", &fatia_s_bool, 0, NULL},
    {"priority", &s_positive, 0, NULL},
    {0}};

static const struct fatia_field sr_spec_fields[] = {
    {"supportedModelFormats",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, "Model formats this runtime serves",
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = format_fields}},
     0, NULL},
    {"containers",
     &(const struct fatia_schema){FATIA_T_ARRAY, "The model server's containers",
                                  .items = &fatia_s_container, .list_key = "name"},
     0, NULL},
    {"disabled", &fatia_s_bool, 0, NULL},
    {"multiModel", &fatia_s_bool, 0, NULL},
    {"protocolVersions", &fatia_s_string_list, 0, NULL},
    {0}};

static const struct fatia_field sr_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .flags = FATIA_S_OPEN, .fields = sr_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column sr_columns[] = {
    {"Disabled", "boolean", ".spec.disabled", 0, NULL},
    {"ModelType", "string", ".spec.supportedModelFormats[*].name", 0, NULL},
    {"Containers", "string", ".spec.containers[*].name", 0, NULL},
    {NULL}};

const struct fatia_kind fatia_kind_servingruntime = {
    .group = "serving.kserve.io",
    .version = "v1alpha1",
    .kind = "ServingRuntime",
    .plural = "servingruntimes",
    .singular = "servingruntime",
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sr_fields},
    .columns = sr_columns,
};

const struct fatia_kind fatia_kind_clusterservingruntime = {
    .group = "serving.kserve.io",
    .version = "v1alpha1",
    .kind = "ClusterServingRuntime",
    .plural = "clusterservingruntimes",
    .singular = "clusterservingruntime",
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sr_fields},
    .columns = sr_columns,
};
