/*
 * model/kinds/kueue_checks.c: Kueue's AdmissionCheck, ProvisioningRequestConfig and Topology
 * (kueue.x-k8s.io v1beta2, storage, and v1beta1), stored and served so that Kueue manifests that
 * use them apply (issue 17). Schemas follow Kueue's apis/kueue/v1beta2 types:
 *   - AdmissionCheck (cluster): spec.controllerName (required, 1..253, immutable in Kueue by a
 *     CEL rule, not enforced here), spec.parameters {apiGroup, kind, name} (all required);
 *     status.conditions. v1beta1's spec.retryDelayMinutes (deprecated since Kueue 0.8, gone in
 *     v1beta2) is dropped on the way in.
 *   - ProvisioningRequestConfig (cluster): spec.provisioningClassName (required DNS subdomain),
 *     parameters (at most 100, values at most 255 characters), managedResources (at most 100
 *     resource names), retryStrategy {backoffLimitCount 3, backoffBaseSeconds 60,
 *     backoffMaxSeconds 1800}, podSetUpdates, podSetMergePolicy.
 *   - Topology (cluster): spec.levels, 1..16 entries of {nodeLabel} (a qualified name), the
 *     labels distinct.
 *
 * Not done: fatia's admission does not run Kueue's check protocol (quota reserved, then Admitted
 * once every check is Ready): a ClusterQueue that lists admission checks stays inactive
 * (docs/control.md), its workloads waiting whatever the checks say; no controller acts on
 * ProvisioningRequestConfig or Topology (stored only).
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static void ac_from_v1beta1(json_t *obj)
{
    json_object_del(json_object_get(obj, "spec"), "retryDelayMinutes");
}

static const struct fatia_kind_version checks_v1beta1[] = {
    {"v1beta1", ac_from_v1beta1, NULL,
     "kueue.x-k8s.io/v1beta1 is deprecated; use kueue.x-k8s.io/v1beta2"},
    {NULL}};
static const struct fatia_kind_version plain_v1beta1[] = {
    {"v1beta1", NULL, NULL, "kueue.x-k8s.io/v1beta1 is deprecated; use kueue.x-k8s.io/v1beta2"},
    {NULL}};

static const struct fatia_schema name253 = {FATIA_T_STRING, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                            .min = 1, .max = 253};
static const struct fatia_schema name63 = {FATIA_T_STRING, .flags = FATIA_S_MIN | FATIA_S_MAX,
                                           .min = 1, .max = 63};

/* ---- AdmissionCheck ---- */

static const struct fatia_field ac_params_fields[] = {
    {"apiGroup", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"kind", &name63, FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field ac_spec_fields[] = {
    {"controllerName", &name253, FATIA_F_REQUIRED, NULL},
    {"parameters", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ac_params_fields}, 0,
     NULL},
    {0}};
static const struct fatia_field ac_status_fields[] = {{"conditions", &fatia_s_conditions, 0, NULL},
                                                      {0}};
static const struct fatia_field ac_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ac_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {"status", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ac_status_fields}, 0, NULL},
    {0}};
const struct fatia_kind fatia_kind_admissioncheck = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "AdmissionCheck",
    .plural = "admissionchecks",
    .singular = "admissioncheck",
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ac_fields},
    .others = checks_v1beta1};

/* ---- ProvisioningRequestConfig ---- */

static const char *const merge_policies[] = {"IdenticalPodTemplates",
                                             "IdenticalWorkloadSchedulingRequirements", NULL};
static const struct fatia_field retry_fields[] = {{"backoffLimitCount", &fatia_s_int32, 0, "3"},
                                                  {"backoffBaseSeconds", &fatia_s_int32, 0, "60"},
                                                  {"backoffMaxSeconds", &fatia_s_int32, 0, "1800"},
                                                  {0}};
static const struct fatia_field prc_spec_fields[] = {
    {"provisioningClassName", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"parameters",
     &(const struct fatia_schema){
         FATIA_T_MAP, .flags = FATIA_S_MAX, .max = 100,
         .items = &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MAX, .max = 255}},
     0, NULL},
    {"managedResources",
     &(const struct fatia_schema){FATIA_T_ARRAY, .flags = FATIA_S_MAX, .max = 100,
                                  .items = &fatia_s_resource_name},
     0, NULL},
    {"retryStrategy", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = retry_fields}, 0,
     NULL},
    {"podSetUpdates", &fatia_s_any, 0, NULL},
    {"podSetMergePolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = merge_policies}, 0,
     NULL},
    {0}};
static const struct fatia_field prc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = prc_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
const struct fatia_kind fatia_kind_provisioningrequestconfig = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "ProvisioningRequestConfig",
    .plural = "provisioningrequestconfigs",
    .singular = "provisioningrequestconfig",
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = prc_fields},
    .others = plain_v1beta1};

/* ---- Topology ---- */

static void check_levels(struct fatia_vctx *ctx, json_t *levels)
{
    size_t i, j;
    json_t *l;

    json_array_foreach(levels, i, l)
    {
        const char *a = fatia_json_str(l, "nodeLabel");
        for (j = 0; a && j < i; j++) {
            const char *b = fatia_json_str(json_array_get(levels, j), "nodeLabel");
            if (b && !strcmp(a, b)) {
                char rel[48];
                snprintf(rel, sizeof(rel), "[%zu].nodeLabel", i);
                fatia_verr_at(ctx, levels, rel, "must be unique (also at index %zu)", j);
                break;
            }
        }
    }
}

static const struct fatia_field level_fields[] = {
    {"nodeLabel", &fatia_s_qualified_name, FATIA_F_REQUIRED, NULL}, {0}};
static const struct fatia_field topo_spec_fields[] = {
    {"levels",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, "The levels, from the broadest to the node",
         .flags = FATIA_S_MIN | FATIA_S_MAX, .min = 1, .max = 16,
         .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = level_fields},
         .check = check_levels},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field topo_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = topo_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
const struct fatia_kind fatia_kind_topology = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "Topology",
    .plural = "topologies",
    .singular = "topology",
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = topo_fields},
    .others = plain_v1beta1};
