/*
 * model/kinds/kueue.c: kueue.x-k8s.io ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
 * WorkloadPriorityClass and Workload; v1beta2 is the storage version, v1beta1 is read and
 * converted (reference/kueue.md §1.0).
 *
 * Defaults are upstream's (kueue.md §1.2): queueingStrategy BestEffortFIFO, whenCanBorrow
 * MayStopSearch, whenCanPreempt TryNextFlavor, every preemption policy Never, stopPolicy None,
 * podSet name "main" and count 1. namespaceSelector gets no default: omitted means "no namespace",
 * {} means "every namespace", and the two must stay distinguishable.
 *
 * Cross-field rules are the CRDs' CEL rules and Kueue's webhooks: each flavor lists exactly the
 * covered resources in order; a resource and a flavor belong to one resource group; limits need a
 * cohort (for a Cohort: a parent); lendingLimit <= nominalQuota; reclaimWithinCohort Never forbids
 * borrowWithinCohort; preference needs both fungibility policies at TryNextFlavor; minCount <=
 * count and at most one podSet with minCount.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

#define LIM(n) .flags = (FATIA_S_MIN | FATIA_S_MAX), .min = (n), .max

/* ---- resource groups (ClusterQueue and Cohort) ---- */

static const struct fatia_field quota_fields[] = {
    {"name", &fatia_s_resource_name, FATIA_F_REQUIRED, NULL},
    {"nominalQuota", &fatia_s_quantity_nonneg, FATIA_F_REQUIRED, NULL},
    {"borrowingLimit", &fatia_s_quantity_nonneg, 0, NULL},
    {"lendingLimit", &fatia_s_quantity_nonneg, 0, NULL},
    {0}};

static void check_quota(struct fatia_vctx *ctx, json_t *q)
{
    struct fatia_quantity nominal, lending;
    json_t *l = json_object_get(q, "lendingLimit");

    if (l &&
        fatia_quantity_parse_json(json_object_get(q, "nominalQuota"), &nominal, NULL, 0) == 0 &&
        fatia_quantity_parse_json(l, &lending, NULL, 0) == 0 &&
        fatia_quantity_cmp(&lending, &nominal) > 0)
        fatia_verr_at(ctx, q, "lendingLimit", "must be less than or equal to nominalQuota");
}

static const struct fatia_schema quota = {FATIA_T_OBJECT, .fields = quota_fields,
                                          .check = check_quota};
static const struct fatia_schema quotas = {FATIA_T_ARRAY, LIM(1) = 64, .items = &quota,
                                           .list_key = "name"};
static const struct fatia_field flavor_quotas_fields[] = {
    {"name", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"resources", &quotas, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_schema flavor_quotas = {FATIA_T_OBJECT, .fields = flavor_quotas_fields};
static const struct fatia_schema flavor_quotas_list = {FATIA_T_ARRAY, LIM(1) = 64,
                                                       .items = &flavor_quotas, .list_key = "name"};
static const struct fatia_schema covered = {FATIA_T_ARRAY, LIM(1) = 64,
                                            .items = &fatia_s_resource_name};

static void check_resource_group(struct fatia_vctx *ctx, json_t *rg)
{
    json_t *cov = json_object_get(rg, "coveredResources");
    json_t *flavors = json_object_get(rg, "flavors");
    size_t i, j;
    json_t *f, *r;
    char path[96];

    json_array_foreach(flavors, i, f)
    {
        json_t *res = json_object_get(f, "resources");
        if (json_array_size(res) != json_array_size(cov)) {
            snprintf(path, sizeof(path), "flavors[%zu].resources", i);
            fatia_verr_at(ctx, rg, path,
                          "must list the %zu coveredResources of its group, in the same order "
                          "(lists %zu)",
                          json_array_size(cov), json_array_size(res));
            continue;
        }
        json_array_foreach(res, j, r)
        {
            const char *name = fatia_json_str(r, "name");
            const char *want = json_string_value(json_array_get(cov, j));
            if (name && want && strcmp(name, want)) {
                snprintf(path, sizeof(path), "flavors[%zu].resources[%zu].name", i, j);
                fatia_verr_at(ctx, rg, path,
                              "must be \"%s\", the coveredResources entry at the same index", want);
            }
        }
    }
}

static const struct fatia_field resource_group_fields[] = {
    {"coveredResources", &covered, FATIA_F_REQUIRED, NULL},
    {"flavors", &flavor_quotas_list, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_schema resource_group = {FATIA_T_OBJECT, .fields = resource_group_fields,
                                                   .check = check_resource_group};
static const struct fatia_schema resource_groups = {FATIA_T_ARRAY, LIM(0) = 16,
                                                    .items = &resource_group};

/* Across groups: a resource and a flavor appear in one group only; limits need a parent. */
static void check_groups(struct fatia_vctx *ctx, json_t *spec, bool has_parent,
                         const char *parent_field)
{
    json_t *groups = json_object_get(spec, "resourceGroups");
    size_t gi, gj, i, j, fi;
    json_t *g, *h, *f, *q;
    char path[128];

    json_array_foreach(groups, gi, g)
    {
        json_array_foreach(json_object_get(g, "coveredResources"), i, q)
        {
            for (gj = 0; gj < gi; gj++) {
                h = json_array_get(groups, gj);
                json_array_foreach(json_object_get(h, "coveredResources"), j, f)
                {
                    if (json_equal(q, f)) {
                        snprintf(path, sizeof(path), "resourceGroups[%zu].coveredResources[%zu]",
                                 gi, i);
                        fatia_verr_at(ctx, spec, path,
                                      "resource \"%s\" is already covered by resourceGroups[%zu]",
                                      json_string_value(q), gj);
                    }
                }
            }
        }
        json_array_foreach(json_object_get(g, "flavors"), fi, f)
        {
            const char *name = fatia_json_str(f, "name");
            for (gj = 0; name && gj < gi; gj++) {
                h = json_array_get(groups, gj);
                json_array_foreach(json_object_get(h, "flavors"), j, q)
                {
                    const char *other = fatia_json_str(q, "name");
                    if (other && !strcmp(other, name)) {
                        snprintf(path, sizeof(path), "resourceGroups[%zu].flavors[%zu].name", gi,
                                 fi);
                        fatia_verr_at(ctx, spec, path,
                                      "flavor \"%s\" is already used by resourceGroups[%zu]", name,
                                      gj);
                    }
                }
            }
            if (has_parent)
                continue;
            json_array_foreach(json_object_get(f, "resources"), j, q)
            {
                static const char *const limits[] = {"borrowingLimit", "lendingLimit"};
                for (i = 0; i < 2; i++) {
                    if (!json_object_get(q, limits[i]))
                        continue;
                    snprintf(path, sizeof(path),
                             "resourceGroups[%zu].flavors[%zu].resources[%zu].%s", gi, fi, j,
                             limits[i]);
                    fatia_verr_at(ctx, spec, path, "must not be set when %s is empty",
                                  parent_field);
                }
            }
        }
    }
}

static const struct fatia_field fair_sharing_fields[] = {
    {"weight", &fatia_s_quantity_nonneg, 0, NULL}, {0}};
static const struct fatia_schema fair_sharing = {FATIA_T_OBJECT, .fields = fair_sharing_fields};

static const char *const stop_policies[] = {"None", "Hold", "HoldAndDrain", NULL};
static const struct fatia_schema stop_policy = {FATIA_T_STRING, .enums = stop_policies};

/* ---- ResourceFlavor ---- */

static const struct fatia_schema rf_taints = {FATIA_T_ARRAY, LIM(0) = 8, .items = &fatia_s_taint};
static const struct fatia_schema rf_tolerations = {FATIA_T_ARRAY, LIM(0) = 8,
                                                   .items = &fatia_s_toleration};
static const struct fatia_schema rf_labels = {
    FATIA_T_MAP, LIM(0) = 8, .key_format = FATIA_FMT_QUALIFIED_NAME,
    .items = &(const struct fatia_schema){FATIA_T_STRING, .format = FATIA_FMT_LABEL_VALUE}};

static void check_rf_spec(struct fatia_vctx *ctx, json_t *spec)
{
    if (json_object_get(spec, "topologyName") &&
        !json_object_size(json_object_get(spec, "nodeLabels")))
        fatia_verr_at(ctx, spec, "nodeLabels",
                      "must have at least one entry when topologyName is set");
}

static const struct fatia_field rf_spec_fields[] = {
    {"nodeLabels", &rf_labels, 0, NULL},
    {"nodeTaints", &rf_taints, 0, NULL},
    {"tolerations", &rf_tolerations, 0, NULL},
    {"topologyName", &fatia_s_dns_subdomain, 0, NULL},
    {0}};
static const struct fatia_field rf_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = rf_spec_fields, .check = check_rf_spec},
     0, "{}"},
    {0}};

static const struct fatia_kind_version kueue_v1beta1_plain[] = {
    {"v1beta1", NULL, NULL, "kueue.x-k8s.io/v1beta1 is deprecated; use kueue.x-k8s.io/v1beta2"},
    {NULL}};

static const struct fatia_column rf_columns[] = {
    {"Node Labels", "string", ".spec.nodeLabels", 1, NULL}, {NULL}};
const struct fatia_kind fatia_kind_resourceflavor = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "ResourceFlavor",
    .plural = "resourceflavors",
    .singular = "resourceflavor",
    .short_names = (const char *const[]){"flavor", "flavors", "rf", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = rf_fields},
    .columns = rf_columns,
    .others = kueue_v1beta1_plain};

/* ---- ClusterQueue ---- */

static const char *const queueing_strategies[] = {"BestEffortFIFO", "StrictFIFO", NULL};
static const char *const fungibility_values[] = {"MayStopSearch", "TryNextFlavor", NULL};
static const char *const fungibility_preferences[] = {"BorrowingOverPreemption",
                                                      "PreemptionOverBorrowing", NULL};
static const struct fatia_schema fungibility_value = {FATIA_T_STRING, .enums = fungibility_values};

static void check_fungibility(struct fatia_vctx *ctx, json_t *f)
{
    const char *b = fatia_json_str(f, "whenCanBorrow"), *p = fatia_json_str(f, "whenCanPreempt");

    if (json_object_get(f, "preference") &&
        !(b && p && !strcmp(b, "TryNextFlavor") && !strcmp(p, "TryNextFlavor")))
        fatia_verr_at(ctx, f, "preference",
                      "may only be set when whenCanBorrow and whenCanPreempt are both "
                      "TryNextFlavor");
}

static const struct fatia_field fungibility_fields[] = {
    {"whenCanBorrow", &fungibility_value, 0, "\"MayStopSearch\""},
    {"whenCanPreempt", &fungibility_value, 0, "\"TryNextFlavor\""},
    {"preference", &(const struct fatia_schema){FATIA_T_STRING, .enums = fungibility_preferences},
     0, NULL},
    {0}};

static const char *const within_cq_policies[] = {"Never", "LowerPriority",
                                                 "LowerOrNewerEqualPriority", NULL};
static const char *const reclaim_policies[] = {"Never", "LowerPriority", "Any", NULL};
static const char *const borrow_policies[] = {"Never", "LowerPriority", NULL};
static const struct fatia_field borrow_within_fields[] = {
    {"policy", &(const struct fatia_schema){FATIA_T_STRING, .enums = borrow_policies}, 0,
     "\"Never\""},
    {"maxPriorityThreshold", &fatia_s_int32, 0, NULL},
    {0}};

static void check_preemption(struct fatia_vctx *ctx, json_t *p)
{
    const char *reclaim = fatia_json_str(p, "reclaimWithinCohort");
    const char *borrow = fatia_json_str(json_object_get(p, "borrowWithinCohort"), "policy");

    if (reclaim && !strcmp(reclaim, "Never") && borrow && strcmp(borrow, "Never"))
        fatia_verr_at(ctx, p, "borrowWithinCohort.policy",
                      "must be Never when reclaimWithinCohort is Never");
}

static const struct fatia_field preemption_fields[] = {
    {"withinClusterQueue",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = within_cq_policies}, 0, "\"Never\""},
    {"reclaimWithinCohort", &(const struct fatia_schema){FATIA_T_STRING, .enums = reclaim_policies},
     0, "\"Never\""},
    {"borrowWithinCohort",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = borrow_within_fields}, 0, "{}"},
    {0}};

static const struct fatia_field admission_check_rule_fields[] = {
    {"name", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"onFlavors", &fatia_s_string_list, 0, NULL},
    {0}};
static const struct fatia_field admission_checks_strategy_fields[] = {
    {"admissionChecks",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, LIM(1) = 64,
         .items =
             &(const struct fatia_schema){FATIA_T_OBJECT, .fields = admission_check_rule_fields},
         .list_key = "name"},
     0, NULL},
    {0}};
static const char *const admission_modes[] = {"UsageBasedAdmissionFairSharing",
                                              "NoAdmissionFairSharing", NULL};
static const struct fatia_field admission_scope_fields[] = {
    {"admissionMode", &(const struct fatia_schema){FATIA_T_STRING, .enums = admission_modes},
     FATIA_F_REQUIRED, NULL},
    {0}};

static void check_cq_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *cohort = fatia_json_str(spec, "cohortName");

    check_groups(ctx, spec, cohort && *cohort, "cohortName");
}

static const struct fatia_field cq_spec_fields[] = {
    {"resourceGroups", &resource_groups, 0, NULL},
    {"cohortName", &fatia_s_dns_subdomain, 0, NULL},
    {"queueingStrategy", &(const struct fatia_schema){FATIA_T_STRING, .enums = queueing_strategies},
     0, "\"BestEffortFIFO\""},
    {"namespaceSelector", &fatia_s_label_selector, 0, NULL},
    {"flavorFungibility",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = fungibility_fields,
                                  .check = check_fungibility},
     0, "{}"},
    {"preemption",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = preemption_fields,
                                  .check = check_preemption},
     0, "{}"},
    {"admissionChecksStrategy",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = admission_checks_strategy_fields}, 0,
     NULL},
    {"stopPolicy", &stop_policy, 0, "\"None\""},
    {"fairSharing", &fair_sharing, 0, NULL},
    {"admissionScope",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = admission_scope_fields}, 0, NULL},
    {"concurrentAdmissionPolicy", &fatia_s_any, 0, NULL},
    {0}};
static const struct fatia_field cq_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cq_spec_fields, .check = check_cq_spec},
     0, "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

/* v1beta1: spec.cohort -> spec.cohortName; spec.admissionChecks [names] ->
 * spec.admissionChecksStrategy.admissionChecks [{name, onFlavors: []}]; fungibility values
 * Borrow and Preempt -> MayStopSearch. */
static void rename_member(json_t *obj, const char *from, const char *to)
{
    json_t *v = json_object_get(obj, from);

    if (!v || json_object_get(obj, to))
        return;
    json_object_set(obj, to, v);
    json_object_del(obj, from);
}

static void cq_v1beta1_to_v1beta2(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec"), *checks, *fung;
    size_t i;
    json_t *c;

    if (!json_is_object(spec))
        return;
    rename_member(spec, "cohort", "cohortName");
    checks = json_object_get(spec, "admissionChecks");
    if (json_is_array(checks) && !json_object_get(spec, "admissionChecksStrategy")) {
        json_t *rules = json_array();
        json_array_foreach(checks, i, c)
            json_array_append_new(rules, json_pack("{s:O,s:[]}", "name", c, "onFlavors"));
        json_object_set_new(spec, "admissionChecksStrategy",
                            json_pack("{s:o}", "admissionChecks", rules));
        json_object_del(spec, "admissionChecks");
    }
    fung = json_object_get(spec, "flavorFungibility");
    if (json_is_object(fung)) {
        const char *b = fatia_json_str(fung, "whenCanBorrow");
        const char *p = fatia_json_str(fung, "whenCanPreempt");
        if (b && !strcmp(b, "Borrow"))
            json_object_set_new(fung, "whenCanBorrow", json_string("MayStopSearch"));
        if (p && !strcmp(p, "Preempt"))
            json_object_set_new(fung, "whenCanPreempt", json_string("MayStopSearch"));
    }
}

static void cq_v1beta2_to_v1beta1(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    json_t *rules = fatia_json_path(spec, "admissionChecksStrategy.admissionChecks");

    if (!json_is_object(spec))
        return;
    rename_member(spec, "cohortName", "cohort");
    (void)rules; /* v1beta1 also has admissionChecksStrategy: serve it unchanged */
}

static const struct fatia_kind_version cq_versions[] = {
    {"v1beta1", cq_v1beta1_to_v1beta2, cq_v1beta2_to_v1beta1,
     "kueue.x-k8s.io/v1beta1 is deprecated; use kueue.x-k8s.io/v1beta2"},
    {NULL}};

static const struct fatia_column cq_columns[] = {
    {"Cohort", "string", ".spec.cohortName", 0, "Cohort that this ClusterQueue belongs to"},
    {"Strategy", "string", ".spec.queueingStrategy", 1,
     "The queueing strategy used to prioritize workloads"},
    {"Pending Workloads", "integer", ".status.pendingWorkloads", 0, "Number of pending workloads"},
    {"Admitted Workloads", "integer", ".status.admittedWorkloads", 0,
     "Number of admitted workloads that haven't finished yet."},
    {NULL}};
const struct fatia_kind fatia_kind_clusterqueue = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "ClusterQueue",
    .plural = "clusterqueues",
    .singular = "clusterqueue",
    .short_names = (const char *const[]){"cq", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cq_fields},
    .columns = cq_columns,
    .others = cq_versions};

/* ---- Cohort ---- */

static void check_cohort_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *parent = fatia_json_str(spec, "parentName");

    check_groups(ctx, spec, parent && *parent, "parentName");
}

static const struct fatia_field cohort_spec_fields[] = {
    {"parentName", &fatia_s_dns_subdomain, 0, NULL},
    {"resourceGroups", &resource_groups, 0, NULL},
    {"fairSharing", &fair_sharing, 0, NULL},
    {0}};
static const struct fatia_field cohort_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cohort_spec_fields,
                                  .check = check_cohort_spec},
     0, "{}"},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column cohort_columns[] = {
    {"Parent", "string", ".spec.parentName", 0, "Parent cohort"}, {NULL}};
const struct fatia_kind fatia_kind_cohort = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "Cohort",
    .plural = "cohorts",
    .singular = "cohort",
    .short_names = (const char *const[]){"co", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cohort_fields},
    .columns = cohort_columns,
    .others = kueue_v1beta1_plain};

/* ---- LocalQueue ---- */

static const struct fatia_field lq_spec_fields[] = {
    {"clusterQueue", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"stopPolicy", &stop_policy, 0, "\"None\""},
    {"fairSharing", &fair_sharing, 0, NULL},
    {0}};
static const struct fatia_field lq_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = lq_spec_fields},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column lq_columns[] = {
    {"ClusterQueue", "string", ".spec.clusterQueue", 0, "Backing ClusterQueue"},
    {"Pending Workloads", "integer", ".status.pendingWorkloads", 0, "Number of pending workloads"},
    {"Admitted Workloads", "integer", ".status.admittedWorkloads", 0,
     "Number of admitted workloads that haven't finished yet."},
    {NULL}};
const struct fatia_kind fatia_kind_localqueue = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "LocalQueue",
    .plural = "localqueues",
    .singular = "localqueue",
    .short_names = (const char *const[]){"queue", "queues", "lq", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = lq_fields},
    .columns = lq_columns,
    .others = kueue_v1beta1_plain};

/* ---- WorkloadPriorityClass ---- */

static const struct fatia_field wpc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"value", &fatia_s_int32, FATIA_F_REQUIRED, NULL},
    {"description", &(const struct fatia_schema){FATIA_T_STRING, .flags = FATIA_S_MAX, .max = 2048},
     0, NULL},
    {0}};
static const struct fatia_column wpc_columns[] = {
    {"Value", "integer", ".value", 0, "Value of workloadPriorityClass's Priority"}, {NULL}};
const struct fatia_kind fatia_kind_workloadpriorityclass = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "WorkloadPriorityClass",
    .plural = "workloadpriorityclasses",
    .singular = "workloadpriorityclass",
    .short_names = (const char *const[]){"wpc", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = wpc_fields},
    .columns = wpc_columns,
    .others = kueue_v1beta1_plain};

/* ---- Workload ---- */

static void check_podset(struct fatia_vctx *ctx, json_t *ps)
{
    int64_t count = 1, min;

    fatia_json_int(ps, "count", &count);
    if (fatia_json_int(ps, "minCount", &min) && min > count)
        fatia_verr_at(ctx, ps, "minCount", "must be less than or equal to count (%" PRId64 ")",
                      count);
}

static const struct fatia_field podset_fields[] = {
    {"name", &fatia_s_dns_label, 0, "\"main\""},
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL},
    {"count", &fatia_s_int_nonneg, 0, "1"},
    {"minCount", &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1}, 0,
     NULL},
    {"topologyRequest", &fatia_s_any, 0, NULL},
    {0}};
static const struct fatia_schema podsets = {
    FATIA_T_ARRAY, LIM(1) = 18,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = podset_fields,
                                          .check = check_podset},
    .list_key = "name"};

static const char *const priority_class_groups[] = {"kueue.x-k8s.io", "scheduling.k8s.io", NULL};
static const char *const priority_class_kinds[] = {"WorkloadPriorityClass", "PriorityClass", NULL};
static const struct fatia_field pcref_fields[] = {
    {"group", &(const struct fatia_schema){FATIA_T_STRING, .enums = priority_class_groups},
     FATIA_F_REQUIRED, NULL},
    {"kind", &(const struct fatia_schema){FATIA_T_STRING, .enums = priority_class_kinds},
     FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {0}};

static void check_wl_spec(struct fatia_vctx *ctx, json_t *spec)
{
    size_t i, with_min = 0;
    json_t *ps;

    json_array_foreach(json_object_get(spec, "podSets"), i, ps)
    {
        if (json_object_get(ps, "minCount") && ++with_min == 2) {
            char path[64];
            snprintf(path, sizeof(path), "podSets[%zu].minCount", i);
            fatia_verr_at(ctx, spec, path, "at most one podSet may use minCount");
        }
    }
}

static const struct fatia_field wl_spec_fields[] = {
    {"podSets", &podsets, FATIA_F_REQUIRED, NULL},
    {"queueName", &fatia_s_dns_subdomain, 0, NULL},
    {"priorityClassRef", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pcref_fields}, 0,
     NULL},
    {"priority", &fatia_s_int32, 0, NULL},
    {"active", &fatia_s_bool, 0, "true"},
    {"maximumExecutionTimeSeconds",
     &(const struct fatia_schema){FATIA_T_INT, .flags = FATIA_S_MIN, .min = 1}, 0, NULL},
    {"preemptionGates", &fatia_s_any, 0, NULL},
    {0}};

static const struct fatia_field psa_fields[] = {
    {"name", &fatia_s_dns_label, FATIA_F_REQUIRED, NULL},
    {"flavors",
     &(const struct fatia_schema){FATIA_T_MAP, .key_format = FATIA_FMT_RESOURCE_NAME,
                                  .items = &fatia_s_dns_subdomain},
     0, NULL},
    {"resourceUsage", &fatia_s_resource_list, 0, NULL},
    {"count", &fatia_s_int_nonneg, 0, NULL},
    {"topologyAssignment", &fatia_s_any, 0, NULL},
    {"delayedTopologyRequest", &fatia_s_any, 0, NULL},
    {0}};
static const struct fatia_field admission_fields[] = {
    {"clusterQueue", &fatia_s_dns_subdomain, FATIA_F_REQUIRED, NULL},
    {"podSetAssignments",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = psa_fields},
         .list_key = "name"},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field requeue_fields[] = {
    {"count", &fatia_s_int_nonneg, 0, NULL}, {"requeueAt", &fatia_s_time, 0, NULL}, {0}};
static const struct fatia_field wl_status_fields[] = {
    {"conditions", &fatia_s_conditions, 0, NULL},
    {"admission", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = admission_fields}, 0,
     NULL},
    {"requeueState", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = requeue_fields}, 0,
     NULL},
    {0}};
static const struct fatia_field wl_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = wl_spec_fields, .check = check_wl_spec},
     FATIA_F_REQUIRED, NULL},
    {"status",
     &(const struct fatia_schema){FATIA_T_OBJECT, .flags = FATIA_S_OPEN,
                                  .fields = wl_status_fields},
     0, NULL},
    {0}};

/* v1beta1: spec.priorityClassName + spec.priorityClassSource -> spec.priorityClassRef. */
static void wl_v1beta1_to_v1beta2(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    const char *name = fatia_json_str(spec, "priorityClassName");
    const char *source = fatia_json_str(spec, "priorityClassSource");

    if (!json_is_object(spec))
        return;
    if (name && *name && !json_object_get(spec, "priorityClassRef")) {
        bool pod = source && !strcmp(source, "scheduling.k8s.io/priorityclass");
        json_object_set_new(
            spec, "priorityClassRef",
            json_pack("{s:s,s:s,s:s}", "group", pod ? "scheduling.k8s.io" : "kueue.x-k8s.io",
                      "kind", pod ? "PriorityClass" : "WorkloadPriorityClass", "name", name));
    }
    json_object_del(spec, "priorityClassName");
    json_object_del(spec, "priorityClassSource");
}

static void wl_v1beta2_to_v1beta1(json_t *obj)
{
    json_t *spec = json_object_get(obj, "spec");
    json_t *ref = json_object_get(spec, "priorityClassRef");
    const char *group = fatia_json_str(ref, "group");

    if (!ref)
        return;
    json_object_set(spec, "priorityClassName", json_object_get(ref, "name"));
    json_object_set_new(spec, "priorityClassSource",
                        json_string(group && !strcmp(group, "scheduling.k8s.io")
                                        ? "scheduling.k8s.io/priorityclass"
                                        : "kueue.x-k8s.io/workloadpriorityclass"));
    json_object_del(spec, "priorityClassRef");
}

static const struct fatia_kind_version wl_versions[] = {
    {"v1beta1", wl_v1beta1_to_v1beta2, wl_v1beta2_to_v1beta1,
     "kueue.x-k8s.io/v1beta1 is deprecated; use kueue.x-k8s.io/v1beta2"},
    {NULL}};

static const struct fatia_column wl_columns[] = {
    {"Queue", "string", ".spec.queueName", 0, "Name of the queue this workload was submitted to"},
    {"Reserved in", "string", ".status.admission.clusterQueue", 0,
     "Name of the ClusterQueue where the workload is reserving quota"},
    {"Admitted", "string", ".status.conditions[?(@.type=='Admitted')].status", 0,
     "Admission status"},
    {"Finished", "string", ".status.conditions[?(@.type=='Finished')].status", 0,
     "Workload finished"},
    {NULL}};
const struct fatia_kind fatia_kind_workload = {
    .group = "kueue.x-k8s.io",
    .version = "v1beta2",
    .kind = "Workload",
    .plural = "workloads",
    .singular = "workload",
    .short_names = (const char *const[]){"wl", NULL},
    .categories = (const char *const[]){"kueue", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = wl_fields},
    .columns = wl_columns,
    .others = wl_versions};
