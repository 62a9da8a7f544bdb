/*
 * model/kinds/core.c: core v1 Namespace, Node, Pod, Event and batch/v1 Job.
 *
 * Only the fields fatia interprets are typed; the other PodSpec and Container fields that real
 * manifests carry (volumes, probes, securityContext, ...) are listed as "any" so they are kept and
 * not warned about, but not checked either: fatia runs no container runtime (docs/agent.md).
 *
 * Rules taken from upstream (pkg/apis/core/validation, pkg/apis/batch/validation): container names
 * are unique DNS labels; requests never exceed limits; extended resources are whole numbers and
 * not overcommitted (requests == limits when both are set); a Job's pods restart Never or
 * OnFailure.
 */
#include "base/compat.h"

#include "base/json.h"
#include "base/str.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

/* ---- resources ---- */

static bool is_extended_resource(const char *name)
{
    return strchr(name, '/') && !fatia_str_has_prefix(name, "kubernetes.io/") &&
           !fatia_str_has_prefix(name, "requests.");
}

void fatia_check_resource_requirements(struct fatia_vctx *ctx, json_t *v)
{
    json_t *req = json_object_get(v, "requests"), *lim = json_object_get(v, "limits");
    const char *name;
    json_t *q;
    char path[300];

    json_object_foreach(req, name, q)
    {
        struct fatia_quantity rq, lq;
        json_t *l = json_object_get(lim, name);
        if (fatia_quantity_parse_json(q, &rq, NULL, 0) < 0)
            continue;
        snprintf(path, sizeof(path), "requests[%s]", name);
        if (is_extended_resource(name) && rq.nano % FATIA_NANO != 0) {
            fatia_verr_at(ctx, v, path, "must be a whole number for extended resource %s", name);
            continue;
        }
        if (!l || fatia_quantity_parse_json(l, &lq, NULL, 0) < 0)
            continue;
        if (is_extended_resource(name) && fatia_quantity_cmp(&rq, &lq) != 0)
            fatia_verr_at(ctx, v, path, "must be equal to the limit for extended resource %s",
                          name);
        else if (fatia_quantity_cmp(&rq, &lq) > 0)
            fatia_verr_at(ctx, v, path, "must be less than or equal to the %s limit", name);
    }
    json_object_foreach(lim, name, q)
    {
        struct fatia_quantity lq;
        if (fatia_quantity_parse_json(q, &lq, NULL, 0) < 0)
            continue;
        snprintf(path, sizeof(path), "limits[%s]", name);
        if (is_extended_resource(name) && lq.nano % FATIA_NANO != 0)
            fatia_verr_at(ctx, v, path, "must be a whole number for extended resource %s", name);
    }
}

static const struct fatia_field claim_ref_fields[] = {
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"request", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_schema claim_refs = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_ref_fields},
    .list_key = "name"};
static const struct fatia_field resources_fields[] = {{"requests", &fatia_s_resource_list, 0, NULL},
                                                      {"limits", &fatia_s_resource_list, 0, NULL},
                                                      {"claims", &claim_refs, 0, NULL},
                                                      {0}};
static const struct fatia_schema resource_requirements = {
    FATIA_T_OBJECT, "Compute resources required by this container", .fields = resources_fields,
    .check = fatia_check_resource_requirements};

/* ---- Container ---- */

static const struct fatia_field env_fields[] = {
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"value", &fatia_s_string, 0, NULL},
    ANY("valueFrom"),
    {0}};
static const struct fatia_schema env_list = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = env_fields}};
static const char *const pull_policies[] = {"Always", "IfNotPresent", "Never", NULL};

static const struct fatia_field container_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"image", &fatia_s_string, 0, NULL},
    {"command", &fatia_s_string_list, 0, NULL},
    {"args", &fatia_s_string_list, 0, NULL},
    {"env", &env_list, 0, NULL},
    {"workingDir", &fatia_s_string, 0, NULL},
    {"resources", &resource_requirements, 0, NULL},
    {"imagePullPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = pull_policies}, 0,
     NULL},
    ANY("envFrom"),
    ANY("lifecycle"),
    ANY("livenessProbe"),
    ANY("ports"),
    ANY("readinessProbe"),
    ANY("resizePolicy"),
    ANY("restartPolicy"),
    ANY("securityContext"),
    ANY("startupProbe"),
    ANY("stdin"),
    ANY("stdinOnce"),
    ANY("terminationMessagePath"),
    ANY("terminationMessagePolicy"),
    ANY("tty"),
    ANY("volumeDevices"),
    ANY("volumeMounts"),
    {0}};
const struct fatia_schema fatia_s_container = {FATIA_T_OBJECT, "A container (run as a process)",
                                               .fields = container_fields};
static const struct fatia_schema containers = {FATIA_T_ARRAY, .flags = FATIA_S_MIN, .min = 1,
                                               .items = &fatia_s_container, .list_key = "name"};
static const struct fatia_schema init_containers = {FATIA_T_ARRAY, .items = &fatia_s_container,
                                                    .list_key = "name"};

/* ---- PodSpec ---- */

static const char *const restart_policies[] = {"Always", "OnFailure", "Never", NULL};
static const struct fatia_field gate_fields[] = {
    {"name", &fatia_s_qualified_name, FATIA_F_REQUIRED, NULL}, {0}};
static const struct fatia_schema scheduling_gates = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = gate_fields},
    .list_key = "name"};

static void check_pod_claim(struct fatia_vctx *ctx, json_t *c)
{
    bool a = json_object_get(c, "resourceClaimName") != NULL;
    bool b = json_object_get(c, "resourceClaimTemplateName") != NULL;

    if (a == b)
        fatia_verr_at(ctx, c, "",
                      "exactly one of resourceClaimName and resourceClaimTemplateName is required");
}

static const struct fatia_field pod_claim_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"resourceClaimName", &fatia_s_dns_subdomain, 0, NULL},
    {"resourceClaimTemplateName", &fatia_s_dns_subdomain, 0, NULL},
    {0}};
static const struct fatia_schema pod_claims = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pod_claim_fields,
                                          .check = check_pod_claim},
    .list_key = "name"};

/* Every claim a container names must be one of the pod's resourceClaims. */
static void check_pod_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *pod_claims_v = json_object_get(spec, "resourceClaims");
    json_t *ctrs = json_object_get(spec, "containers");
    size_t i, j;
    json_t *c, *ref;
    char path[128];

    json_array_foreach(ctrs, i, c)
    {
        json_array_foreach(json_object_get(json_object_get(c, "resources"), "claims"), j, ref)
        {
            const char *name = fatia_json_str(ref, "name");
            bool found = false;
            if (!name)
                continue;
            size_t k;
            json_t *pc;
            json_array_foreach(pod_claims_v, k, pc)
            {
                const char *pn = fatia_json_str(pc, "name");
                found |= pn && name && !strcmp(pn, name);
            }
            if (!found) {
                snprintf(path, sizeof(path), "containers[%zu].resources.claims[%zu].name", i, j);
                fatia_verr_at(ctx, spec, path, "\"%s\" is not one of the pod's spec.resourceClaims",
                              name);
            }
        }
    }
}

static const struct fatia_field pod_spec_fields[] = {
    {"containers", &containers, FATIA_F_REQUIRED, NULL},
    {"initContainers", &init_containers, 0, NULL},
    {"restartPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = restart_policies}, 0,
     NULL},
    {"nodeSelector", &fatia_s_string_map, 0, NULL},
    {"nodeName", &fatia_s_string, 0, NULL},
    {"tolerations", &fatia_s_tolerations, 0, NULL},
    {"schedulingGates", &scheduling_gates, 0, NULL},
    {"resourceClaims", &pod_claims, 0, NULL},
    {"priorityClassName", &fatia_s_string, 0, NULL},
    {"priority", &fatia_s_int32, 0, NULL},
    {"activeDeadlineSeconds",
     &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1}, 0, NULL},
    {"terminationGracePeriodSeconds", &fatia_s_int_nonneg, 0, NULL},
    {"overhead", &fatia_s_resource_list, 0, NULL},
    {"runtimeClassName", &fatia_s_string, 0, NULL},
    {"schedulerName", &fatia_s_string, 0, NULL},
    {"serviceAccountName", &fatia_s_string, 0, NULL},
    {"serviceAccount", &fatia_s_string, 0, NULL},
    {"hostname", &fatia_s_string, 0, NULL},
    {"subdomain", &fatia_s_string, 0, NULL},
    ANY("affinity"),
    ANY("automountServiceAccountToken"),
    ANY("dnsConfig"),
    ANY("dnsPolicy"),
    ANY("enableServiceLinks"),
    ANY("ephemeralContainers"),
    ANY("hostAliases"),
    ANY("hostIPC"),
    ANY("hostNetwork"),
    ANY("hostPID"),
    ANY("hostUsers"),
    ANY("imagePullSecrets"),
    ANY("os"),
    ANY("preemptionPolicy"),
    ANY("readinessGates"),
    ANY("resources"),
    ANY("securityContext"),
    ANY("setHostnameAsFQDN"),
    ANY("shareProcessNamespace"),
    ANY("topologySpreadConstraints"),
    ANY("volumes"),
    {0}};
const struct fatia_schema fatia_s_pod_spec = {FATIA_T_OBJECT, "Specification of a pod",
                                              .fields = pod_spec_fields, .check = check_pod_spec};

static const struct fatia_field template_meta_fields[] = {
    {"name", &fatia_s_string, 0, NULL},
    {"namespace", &fatia_s_string, 0, NULL},
    {"labels", &fatia_s_label_map, 0, NULL},
    {"annotations", &fatia_s_annotation_map, 0, NULL},
    {"creationTimestamp", &fatia_s_time, 0, NULL},
    {0}};
static const struct fatia_field pod_template_fields[] = {
    {"metadata", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = template_meta_fields}, 0,
     NULL},
    {"spec", &fatia_s_pod_spec, FATIA_F_REQUIRED, NULL},
    {0}};
const struct fatia_schema fatia_s_pod_template_spec = {
    FATIA_T_OBJECT, "Describes the pods that will be created", .fields = pod_template_fields};

/* ---- kinds ---- */

static const struct fatia_field namespace_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){
         FATIA_T_OBJECT,
         .fields =
             (const struct fatia_field[]){{"finalizers", &fatia_s_string_list, 0, NULL}, {0}}},
     0, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column namespace_columns[] = {
    {"Status", "string", ".status.phase", 0, "The phase of the namespace"}, {NULL}};
const struct fatia_kind fatia_kind_namespace = {
    .group = "",
    .version = "v1",
    .kind = "Namespace",
    .plural = "namespaces",
    .singular = "namespace",
    .short_names = (const char *const[]){"ns", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_LABEL,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = namespace_fields},
    .columns = namespace_columns};

static const struct fatia_field node_spec_fields[] = {
    {"podCIDR", &fatia_s_string, 0, NULL},     {"podCIDRs", &fatia_s_string_list, 0, NULL},
    {"providerID", &fatia_s_string, 0, NULL},  {"taints", &fatia_s_taints, 0, NULL},
    {"unschedulable", &fatia_s_bool, 0, NULL}, {0}};
static const struct fatia_field node_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = node_spec_fields}, 0, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column node_columns[] = {
    {"Status", "string", NULL, 0, "Ready or NotReady, SchedulingDisabled when cordoned",
     fatia_print_node_status},
    {"GPU", "string", ".metadata.labels.nvidia\\.com/gpu\\.product", 0, "GPU product"},
    {"Sharing", "string", ".metadata.labels.nvidia\\.com/gpu\\.sharing-strategy", 1,
     "GPU sharing strategy"},
    {NULL}};
const struct fatia_kind fatia_kind_node = {
    .group = "",
    .version = "v1",
    .kind = "Node",
    .plural = "nodes",
    .singular = "node",
    .short_names = (const char *const[]){"no", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = node_fields},
    .columns = node_columns};

static const struct fatia_field pod_fields[] = {FATIA_OBJECT_FIELDS,
                                                {"spec", &fatia_s_pod_spec, FATIA_F_REQUIRED, NULL},
                                                {"status", &fatia_s_status_any, 0, NULL},
                                                {0}};
static const struct fatia_column pod_columns[] = {
    {"Ready", "string", NULL, 0, "Ready containers / containers", fatia_print_pod_ready},
    {"Status", "string", NULL, 0, "Phase, or why a container waits or ended",
     fatia_print_pod_status},
    {"Restarts", "integer", NULL, 0, "Container restarts", fatia_print_pod_restarts},
    {"Node", "string", ".spec.nodeName", 1, "Node the pod is bound to"},
    {"Slices", "string", ".metadata.annotations.fatia\\.dev/slices", 1, "GPU slices held"},
    {NULL}};
const struct fatia_kind fatia_kind_pod = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .plural = "pods",
    .singular = "pod",
    .short_names = (const char *const[]){"po", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pod_fields},
    .columns = pod_columns};

static const struct fatia_field event_fields[] = {FATIA_OBJECT_FIELDS,
                                                  {"involvedObject", &fatia_s_any, 0, NULL},
                                                  {"reason", &fatia_s_string, 0, NULL},
                                                  {"message", &fatia_s_string, 0, NULL},
                                                  {"type", &fatia_s_string, 0, NULL},
                                                  {"count", &fatia_s_int, 0, NULL},
                                                  {"firstTimestamp", &fatia_s_time, 0, NULL},
                                                  {"lastTimestamp", &fatia_s_time, 0, NULL},
                                                  {"eventTime", &fatia_s_any, 0, NULL},
                                                  {"source", &fatia_s_any, 0, NULL},
                                                  {"reportingComponent", &fatia_s_string, 0, NULL},
                                                  {"reportingInstance", &fatia_s_string, 0, NULL},
                                                  {"action", &fatia_s_string, 0, NULL},
                                                  {"related", &fatia_s_any, 0, NULL},
                                                  {"series", &fatia_s_any, 0, NULL},
                                                  {0}};
const struct fatia_kind fatia_kind_event = {
    .group = "",
    .version = "v1",
    .kind = "Event",
    .plural = "events",
    .singular = "event",
    .short_names = (const char *const[]){"ev", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_PATH_SEGMENT,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = event_fields},
    .columns = fatia_kind_event_columns,
    .columns_whole = true};

/* ---- batch/v1 Job ---- */

static void check_job_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *rp = fatia_json_str(fatia_json_path(spec, "template.spec"), "restartPolicy");

    if (!rp || (strcmp(rp, "Never") && strcmp(rp, "OnFailure")))
        fatia_verr_at(ctx, spec, "template.spec.restartPolicy",
                      "%s%s%s: a Job's pods must restart Never or OnFailure",
                      rp ? "unsupported value \"" : "required field is missing", rp ? rp : "",
                      rp ? "\"" : "");
}

static const char *const completion_modes[] = {"NonIndexed", "Indexed", NULL};
static const struct fatia_field job_spec_fields[] = {
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL},
    {"parallelism", &fatia_s_int_nonneg, 0, "1"},
    {"completions", &fatia_s_int_nonneg, 0, NULL},
    {"backoffLimit", &fatia_s_int_nonneg, 0, "6"},
    {"activeDeadlineSeconds",
     &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1}, 0, NULL},
    {"ttlSecondsAfterFinished", &fatia_s_int_nonneg, 0, NULL},
    {"suspend", &fatia_s_bool, 0, "false"},
    {"completionMode", &(const struct fatia_schema){FATIA_T_STRING, .enums = completion_modes}, 0,
     "\"NonIndexed\""},
    {"selector", &fatia_s_label_selector, 0, NULL},
    {"manualSelector", &fatia_s_bool, 0, NULL},
    ANY("podFailurePolicy"),
    ANY("successPolicy"),
    ANY("backoffLimitPerIndex"),
    ANY("maxFailedIndexes"),
    ANY("podReplacementPolicy"),
    ANY("managedBy"),
    {0}};
const struct fatia_schema fatia_s_job_spec = {FATIA_T_OBJECT, "Specification of a job",
                                              .fields = job_spec_fields, .check = check_job_spec};
static const struct fatia_field job_fields[] = {FATIA_OBJECT_FIELDS,
                                                {"spec", &fatia_s_job_spec, FATIA_F_REQUIRED, NULL},
                                                {"status", &fatia_s_status_any, 0, NULL},
                                                {0}};
static const struct fatia_column job_columns[] = {
    {"Status", "string", NULL, 0, "Running, Complete, Failed or Suspended", fatia_print_job_status},
    {"Completions", "string", NULL, 0, "Succeeded pods / completions", fatia_print_job_completions},
    {"Duration", "string", NULL, 0, "Time from start to completion (or now)",
     fatia_print_job_duration},
    {"Queue", "string", ".metadata.labels.kueue\\.x-k8s\\.io/queue-name", 0, "Kueue LocalQueue"},
    {NULL}};
const struct fatia_kind fatia_kind_job = {
    .group = "batch",
    .version = "v1",
    .kind = "Job",
    .plural = "jobs",
    .singular = "job",
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN63,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = job_fields},
    .columns = job_columns};
