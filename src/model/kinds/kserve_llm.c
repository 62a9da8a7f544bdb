/*
 * model/kinds/kserve_llm.c: KServe's serving.kserve.io/v1alpha1 LLMInferenceService, the llm-d
 * based kind of OpenShift AI's distributed inference (kserve pkg/apis/serving/v1alpha1/
 * llm_inference_service_types.go; reference/workbenches-serving.md §3.3), in the parts fatia
 * acts on (controller/llmisvc.c):
 *
 *   spec.model        {uri (required: hf://org/model, ...), name (the served name; default
 *                     metadata.name), lora (kept)}
 *   WorkloadSpec, inline in spec (the decode workload when prefill is set) and as spec.prefill:
 *                     replicas (>= 0), scaling {minReplicas, maxReplicas, wva} (kept; exclusive
 *                     with replicas, KServe's CEL rule and message), parallelism {tensor, ...}
 *                     (>= 1), labels, annotations (to the pods: the hardware-profile
 *                     annotation of each workload goes here), template (a PodSpec), worker
 *   router, baseRefs, storageInitializer: kept as written (the gateway is fatia's; presets are
 *                     not merged).
 *
 * Printer columns are KServe's: URL, READY, REASON, AGE, URLs (wide).
 *
 * Rejected: refusing the members fatia ignores (router.gateway, router.route, scheduler
 * configs, baseRefs): upstream samples carry them and `kubectl apply` of them should work; the
 * status says what is not acted on.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static const struct fatia_schema s_nonneg = {FATIA_T_INT, .flags = FATIA_S_MIN, .min = 0};
static const struct fatia_schema s_positive = {FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1};

static const struct fatia_field model_fields[] = {
    {"uri", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_nonempty_string, 0, NULL},
    {"lora", &fatia_s_any, 0, NULL},
    {0}};

static const struct fatia_field parallelism_fields[] = {{"tensor", &s_positive, 0, NULL},
                                                        {"pipeline", &s_positive, 0, NULL},
                                                        {"data", &s_positive, 0, NULL},
                                                        {"dataLocal", &s_positive, 0, NULL},
                                                        {"dataRPCPort", &fatia_s_int, 0, NULL},
                                                        {"expert", &fatia_s_bool, 0, NULL},
                                                        {0}};

static const struct fatia_schema s_parallelism = {
    FATIA_T_OBJECT, "Tensor, pipeline, data parallelism", .fields = parallelism_fields};

#define WORKLOAD_FIELDS                                                                    \
    {"replicas", &s_nonneg, 0, NULL}, {"scaling", &fatia_s_any, 0, NULL},                  \
        {"parallelism", &s_parallelism, 0, NULL}, {"labels", &fatia_s_label_map, 0, NULL}, \
        {"annotations", &fatia_s_annotation_map, 0, NULL},                                 \
        {"template", &fatia_s_pod_spec, 0, NULL},                                          \
    {                                                                                      \
        "worker", &fatia_s_pod_spec, 0, NULL                                               \
    }

static void check_workload(struct fatia_vctx *ctx, json_t *w)
{
    if (json_object_get(w, "replicas") && json_object_get(w, "scaling"))
        fatia_verr_at(ctx, w, "scaling",
                      "replicas and scaling are mutually exclusive; use scaling for autoscaled "
                      "deployments or replicas for static deployments");
}

static const struct fatia_field prefill_fields[] = {WORKLOAD_FIELDS, {0}};

static const struct fatia_field spec_fields[] = {
    {"model",
     &(const struct fatia_schema){FATIA_T_OBJECT, "The model to serve", .fields = model_fields},
     FATIA_F_REQUIRED, NULL},
    WORKLOAD_FIELDS,
    {"prefill",
     &(const struct fatia_schema){FATIA_T_OBJECT,
                                  "The prefill workload: prefill/decode disaggregation",
                                  .fields = prefill_fields, .check = check_workload},
     0, NULL},
    {"router", &fatia_s_any, 0, NULL},
    {"baseRefs", &fatia_s_any, 0, NULL},
    {"storageInitializer", &fatia_s_any, 0, NULL},
    {0}};

static const struct fatia_field llmisvc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields, .check = check_workload},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static const struct fatia_column llmisvc_columns[] = {
    {"URL", "string", ".status.url", 0, NULL},
    {"Ready", "string", ".status.conditions[?(@.type=='Ready')].status", 0, NULL},
    {"Reason", "string", ".status.conditions[?(@.type=='Ready')].reason", 0, NULL},
    {"URLs", "string", ".status.addresses[*].url", 1, NULL},
    {NULL}};

const struct fatia_kind fatia_kind_llminferenceservice = {
    .group = "serving.kserve.io",
    .version = "v1alpha1",
    .kind = "LLMInferenceService",
    .plural = "llminferenceservices",
    .singular = "llminferenceservice",
    .short_names = (const char *const[]){"llmisvc", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_LABEL,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = llmisvc_fields},
    .columns = llmisvc_columns,
};
