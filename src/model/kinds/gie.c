/*
 * model/kinds/gie.c: inference.networking.k8s.io/v1 InferencePool, the Gateway API Inference
 * Extension's pool of model-server Pods (reference/llm-routing.md §1.2), as the GA CRD defines it
 * (api/v1/inferencepool_types.go): spec.selector.matchLabels (required, at most 64 labels, the
 * pool's namespace only), spec.targetPorts (1 to 8 ports, numbers unique), spec.appProtocol (http
 * or kubernetes.io/h2c, default http), spec.endpointPickerRef (optional since v1.5: group default
 * "", kind default Service, name, port, failureMode FailOpen|FailClose default FailClose; port is
 * required when kind is Service, the CRD's CEL rule).
 *
 * fatia's gateway reads pools of this kind (gateway/kubepool.c): it is the endpoint picker and
 * the proxy at once, so endpointPickerRef is accepted and kept but not followed.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static const struct fatia_schema port_number = {
    FATIA_T_INT, "A port number", .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1, .max = 65535};
static const struct fatia_field port_fields[] = {{"number", &port_number, FATIA_F_REQUIRED, NULL},
                                                 {0}};
static const struct fatia_schema port = {FATIA_T_OBJECT, .fields = port_fields};

static void check_ports(struct fatia_vctx *ctx, json_t *ports)
{
    size_t i, j;
    json_t *p;

    json_array_foreach(ports, i, p)
    {
        int64_t a, b;
        if (!fatia_json_int(p, "number", &a))
            continue;
        for (j = 0; j < i; j++) {
            if (fatia_json_int(json_array_get(ports, j), "number", &b) && a == b) {
                char rel[32];
                snprintf(rel, sizeof(rel), "[%zu].number", i);
                fatia_verr_at(ctx, ports, rel, "port number must be unique (also at index %zu)", j);
                break;
            }
        }
    }
}

static const struct fatia_schema target_ports = {
    FATIA_T_ARRAY,
    "Ports of the selected Pods; each is a distinct endpoint podIP:port",
    .flags = FATIA_S_MIN | FATIA_S_MAX,
    .min = 1,
    .max = 8,
    .items = &port,
    .check = check_ports};

static const struct fatia_schema match_labels = {
    FATIA_T_MAP,
    "Labels a Pod must all carry to be a member of the pool",
    .flags = FATIA_S_MAX,
    .max = 64,
    .key_format = FATIA_FMT_QUALIFIED_NAME,
    .items = &(const struct fatia_schema){FATIA_T_STRING, .format = FATIA_FMT_LABEL_VALUE}};
static const struct fatia_field selector_fields[] = {
    {"matchLabels", &match_labels, FATIA_F_REQUIRED, NULL}, {0}};

static const char *const protocols[] = {"http", "kubernetes.io/h2c", NULL};
static const char *const failure_modes[] = {"FailOpen", "FailClose", NULL};

static void check_picker(struct fatia_vctx *ctx, json_t *ref)
{
    const char *kind = fatia_json_str(ref, "kind");

    if ((!kind || !strcmp(kind, "Service")) && !json_object_get(ref, "port"))
        fatia_verr_at(ctx, ref, "port",
                      "port is required when kind is 'Service' or unspecified (defaults to "
                      "'Service')");
}

static const struct fatia_field picker_fields[] = {
    {"group", &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MAX, .max = 253}, 0,
     "\"\""},
    {"kind",
     &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1,
                                  .max = 63},
     0, "\"Service\""},
    {"name",
     &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1,
                                  .max = 253},
     FATIA_F_REQUIRED, NULL},
    {"port", &port, 0, NULL},
    {"failureMode", &(const struct fatia_schema){FATIA_T_STRING, .enums = failure_modes}, 0,
     "\"FailClose\""},
    {0}};

static const struct fatia_field spec_fields[] = {
    {"selector", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = selector_fields},
     FATIA_F_REQUIRED, NULL},
    {"targetPorts", &target_ports, FATIA_F_REQUIRED, NULL},
    {"appProtocol", &(const struct fatia_schema){FATIA_T_STRING, .enums = protocols}, 0,
     "\"http\""},
    {"endpointPickerRef",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = picker_fields, .check = check_picker},
     0, NULL},
    {0}};

static const struct fatia_field fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = spec_fields}, FATIA_F_REQUIRED,
     NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

const struct fatia_kind fatia_kind_inferencepool = {
    .group = "inference.networking.k8s.io",
    .version = "v1",
    .kind = "InferencePool",
    .plural = "inferencepools",
    .singular = "inferencepool",
    .short_names = (const char *const[]){"infpool", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fields},
    .columns = NULL,
};
