/*
 * model/kinds/apps.c: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet and batch/v1 CronJob
 * (k8s.io/api/apps/v1, k8s.io/api/batch/v1).
 *
 * Rules taken from upstream (pkg/apis/apps/validation, pkg/apis/batch/validation ValidateCronJob,
 * and the defaults of pkg/apis/apps/v1/defaults.go, pkg/apis/batch/v1/defaults.go):
 *   - spec.selector is required and not empty, and matches the template's labels ("`selector`
 *     does not match template `labels`");
 *   - the template's pods restart Always (defaulted so when absent);
 *   - Deployment: replicas 1, strategy RollingUpdate with maxSurge and maxUnavailable 25%,
 *     revisionHistoryLimit 10, progressDeadlineSeconds 600; maxSurge and maxUnavailable are not
 *     both zero; a Recreate strategy has no rollingUpdate;
 *   - StatefulSet: podManagementPolicy OrderedReady, updateStrategy RollingUpdate (partition 0),
 *     revisionHistoryLimit 10; volumeClaimTemplates are claims (name + spec);
 *   - DaemonSet: updateStrategy RollingUpdate with maxUnavailable 1, maxSurge 0;
 *   - CronJob: schedule parses (model/cron.h), concurrencyPolicy Allow, suspend false,
 *     successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1; timeZone only UTC here (no tz
 *     database is read: said in docs/apiserver.md).
 * Percentages (IntOrString "25%") must be an integer followed by "%".
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/cron.h"
#include "model/kinds/kinds.h"
#include "model/selector.h"

#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

/* The value of "25%" (-1 when s is not digits followed by '%'). */
static int64_t percent_value(const char *s)
{
    size_t n = strlen(s);
    int64_t v = 0;

    if (n < 2 || n > 12 || s[n - 1] != '%' || strspn(s, "0123456789") != n - 1)
        return -1;
    for (size_t i = 0; i + 1 < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

void fatia_check_int_or_percent(struct fatia_vctx *ctx, json_t *obj, const char *member)
{
    json_t *v = json_object_get(obj, member);
    int64_t p;

    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            fatia_verr_at(ctx, obj, member, "must be greater than or equal to 0");
        return;
    }
    if (!json_is_string(v))
        return;
    p = percent_value(json_string_value(v));
    if (p < 0)
        fatia_verr_at(ctx, obj, member,
                      "invalid value \"%s\": must be an integer or percentage (e.g. '5%%')",
                      json_string_value(v));
    else if (p > 100)
        fatia_verr_at(ctx, obj, member, "must not be greater than 100%%");
}

static bool is_zero(const json_t *v)
{
    return (json_is_integer(v) && json_integer_value(v) == 0) ||
           (json_is_string(v) && percent_value(json_string_value(v)) == 0);
}

/* selector required, non-empty, matching the template's labels; template pods restart Always */
static void check_workload_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *sel = json_object_get(spec, "selector");
    json_t *tspec = fatia_json_path(spec, "template.spec");
    json_t *labels = fatia_json_path(spec, "template.metadata.labels");
    struct fatia_selector *cs = NULL;
    const char *rp;
    char why[256];

    if (json_is_object(tspec)) {
        rp = fatia_json_str(tspec, "restartPolicy");
        if (!json_object_get(tspec, "restartPolicy"))
            json_object_set_new(tspec, "restartPolicy", json_string("Always"));
        else if (rp && strcmp(rp, "Always"))
            fatia_verr_at(ctx, spec, "template.spec.restartPolicy",
                          "unsupported value \"%s\": supported values: \"Always\"", rp);
    }
    if (!json_is_object(sel))
        return; /* the schema reported it */
    if (fatia_selector_from_json(sel, &cs, why, sizeof(why)) < 0)
        return; /* the selector schema reported it */
    if (fatia_selector_is_empty(cs))
        fatia_verr_at(ctx, spec, "selector", "empty selector is invalid for deployment");
    else if (!fatia_selector_matches(cs, labels))
        fatia_verr_at(ctx, spec, "template.metadata.labels",
                      "invalid value: `selector` does not match template `labels`");
    fatia_selector_free(cs);
}

/* ---- Deployment ---- */

static void check_rolling_deployment(struct fatia_vctx *ctx, json_t *ru)
{
    fatia_check_int_or_percent(ctx, ru, "maxSurge");
    fatia_check_int_or_percent(ctx, ru, "maxUnavailable");
    if (is_zero(json_object_get(ru, "maxSurge")) && is_zero(json_object_get(ru, "maxUnavailable")))
        fatia_verr_at(ctx, ru, "maxUnavailable", "may not be 0 when `maxSurge` is 0");
}

static const struct fatia_field rolling_deployment_fields[] = {
    {"maxSurge", &fatia_s_int_or_string, 0, "\"25%\""},
    {"maxUnavailable", &fatia_s_int_or_string, 0, "\"25%\""},
    {0}};
static const char *const deployment_strategies[] = {"RollingUpdate", "Recreate", NULL};

static void check_deployment_strategy(struct fatia_vctx *ctx, json_t *st)
{
    const char *type = fatia_json_str(st, "type");

    if (type && !strcmp(type, "Recreate") && json_object_get(st, "rollingUpdate"))
        fatia_verr_at(ctx, st, "rollingUpdate",
                      "may not be specified when strategy `type` is "
                      "'Recreate'");
    else if (type && !strcmp(type, "RollingUpdate") && !json_object_get(st, "rollingUpdate"))
        json_object_set_new(st, "rollingUpdate",
                            json_pack("{s:s,s:s}", "maxSurge", "25%", "maxUnavailable", "25%"));
}

static const struct fatia_field deployment_strategy_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = deployment_strategies}, 0,
     "\"RollingUpdate\""},
    {"rollingUpdate",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = rolling_deployment_fields,
                                  .check = check_rolling_deployment},
     0, NULL},
    {0}};
static const struct fatia_field deployment_spec_fields[] = {
    {"replicas", &fatia_s_int_nonneg, 0, "1"},
    {"selector", &fatia_s_label_selector, FATIA_F_REQUIRED, NULL},
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL},
    {"strategy",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = deployment_strategy_fields,
                                  .check = check_deployment_strategy},
     0, "{}"},
    {"minReadySeconds", &fatia_s_int_nonneg, 0, NULL},
    {"revisionHistoryLimit", &fatia_s_int_nonneg, 0, "10"},
    {"paused", &fatia_s_bool, 0, NULL},
    {"progressDeadlineSeconds", &fatia_s_int_nonneg, 0, "600"},
    {0}};
static const struct fatia_field deployment_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = deployment_spec_fields,
                                  .check = check_workload_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column deployment_columns[] = {
    {"Ready", "string", NULL, 0, "Ready replicas / desired", fatia_print_ready_of_replicas},
    {"Up-to-date", "integer", NULL, 0, "Replicas of the newest template",
     fatia_print_st_updated_replicas},
    {"Available", "integer", NULL, 0, "Replicas available to users",
     fatia_print_st_available_replicas},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Containers", "string", NULL, 1, "Container names", fatia_print_template_containers},
    {"Images", "string", NULL, 1, "Container images", fatia_print_template_images},
    {"Selector", "string", NULL, 1, "Label selector of the pods", fatia_print_selector},
    {NULL}};
const struct fatia_kind fatia_kind_deployment = {
    .group = "apps",
    .version = "v1",
    .kind = "Deployment",
    .plural = "deployments",
    .singular = "deployment",
    .short_names = (const char *const[]){"deploy", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = deployment_fields},
    .columns = deployment_columns};

/* ---- ReplicaSet ---- */

static const struct fatia_field replicaset_spec_fields[] = {
    {"replicas", &fatia_s_int_nonneg, 0, "1"},
    {"selector", &fatia_s_label_selector, FATIA_F_REQUIRED, NULL},
    {"template", &fatia_s_pod_template_spec, 0, NULL},
    {"minReadySeconds", &fatia_s_int_nonneg, 0, NULL},
    {0}};
static const struct fatia_field replicaset_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = replicaset_spec_fields,
                                  .check = check_workload_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column replicaset_columns[] = {
    {"Desired", "integer", ".spec.replicas", 0, "Desired replicas"},
    {"Current", "integer", NULL, 0, "Current replicas", fatia_print_st_replicas},
    {"Ready", "integer", NULL, 0, "Ready replicas", fatia_print_st_ready_replicas},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Containers", "string", NULL, 1, "Container names", fatia_print_template_containers},
    {"Images", "string", NULL, 1, "Container images", fatia_print_template_images},
    {"Selector", "string", NULL, 1, "Label selector of the pods", fatia_print_selector},
    {NULL}};
const struct fatia_kind fatia_kind_replicaset = {
    .group = "apps",
    .version = "v1",
    .kind = "ReplicaSet",
    .plural = "replicasets",
    .singular = "replicaset",
    .short_names = (const char *const[]){"rs", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = replicaset_fields},
    .columns = replicaset_columns};

/* ---- StatefulSet ---- */

static const char *const pod_policies[] = {"OrderedReady", "Parallel", NULL};
static const char *const sts_strategies[] = {"RollingUpdate", "OnDelete", NULL};
static const char *const retention[] = {"Retain", "Delete", NULL};
static const struct fatia_field sts_rolling_fields[] = {
    {"partition", &fatia_s_int_nonneg, 0, "0"},
    {"maxUnavailable", &fatia_s_int_or_string, 0, NULL},
    {0}};
static const struct fatia_field sts_strategy_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = sts_strategies}, 0,
     "\"RollingUpdate\""},
    {"rollingUpdate", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sts_rolling_fields}, 0,
     NULL},
    {0}};
static const struct fatia_schema retention_policy = {FATIA_T_STRING, .enums = retention};
static const struct fatia_field sts_retention_fields[] = {
    {"whenDeleted", &retention_policy, 0, "\"Retain\""},
    {"whenScaled", &retention_policy, 0, "\"Retain\""},
    {0}};
static const struct fatia_field claim_template_fields[] = {
    {"apiVersion", &fatia_s_string, 0, NULL},
    {"kind", &fatia_s_string, 0, NULL},
    {"metadata", &fatia_s_object_meta, 0, NULL},
    {"spec", &fatia_s_pvc_spec, FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

static void check_claim_template(struct fatia_vctx *ctx, json_t *t)
{
    const char *name = fatia_json_str(json_object_get(t, "metadata"), "name");

    if (!name || !*name)
        fatia_verr_at(ctx, t, "metadata.name", "required field is missing");
}

static const struct fatia_schema claim_templates = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = claim_template_fields,
                                          .check = check_claim_template}};
static const struct fatia_field ordinals_fields[] = {{"start", &fatia_s_int_nonneg, 0, "0"}, {0}};
static const struct fatia_field sts_spec_fields[] = {
    {"replicas", &fatia_s_int_nonneg, 0, "1"},
    {"selector", &fatia_s_label_selector, FATIA_F_REQUIRED, NULL},
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL},
    {"serviceName", &fatia_s_string, 0, NULL},
    {"podManagementPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = pod_policies}, 0,
     "\"OrderedReady\""},
    {"updateStrategy", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sts_strategy_fields},
     0, "{}"},
    {"volumeClaimTemplates", &claim_templates, 0, NULL},
    {"revisionHistoryLimit", &fatia_s_int_nonneg, 0, "10"},
    {"minReadySeconds", &fatia_s_int_nonneg, 0, NULL},
    {"persistentVolumeClaimRetentionPolicy",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sts_retention_fields}, 0, NULL},
    {"ordinals", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ordinals_fields}, 0, NULL},
    {0}};
static const struct fatia_field sts_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sts_spec_fields,
                                  .check = check_workload_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column sts_columns[] = {
    {"Ready", "string", NULL, 0, "Ready replicas / desired", fatia_print_ready_of_replicas},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Containers", "string", NULL, 1, "Container names", fatia_print_template_containers},
    {"Images", "string", NULL, 1, "Container images", fatia_print_template_images},
    {NULL}};
const struct fatia_kind fatia_kind_statefulset = {
    .group = "apps",
    .version = "v1",
    .kind = "StatefulSet",
    .plural = "statefulsets",
    .singular = "statefulset",
    .short_names = (const char *const[]){"sts", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sts_fields},
    .columns = sts_columns};

/* ---- DaemonSet ---- */

static const struct fatia_field ds_rolling_fields[] = {
    {"maxUnavailable", &fatia_s_int_or_string, 0, "1"},
    {"maxSurge", &fatia_s_int_or_string, 0, "0"},
    {0}};

static void check_ds_rolling(struct fatia_vctx *ctx, json_t *ru)
{
    fatia_check_int_or_percent(ctx, ru, "maxSurge");
    fatia_check_int_or_percent(ctx, ru, "maxUnavailable");
    if (is_zero(json_object_get(ru, "maxSurge")) && is_zero(json_object_get(ru, "maxUnavailable")))
        fatia_verr_at(ctx, ru, "maxUnavailable", "may not be 0 when `maxSurge` is 0");
}

static const struct fatia_field ds_strategy_fields[] = {
    {"type", &(const struct fatia_schema){FATIA_T_STRING, .enums = sts_strategies}, 0,
     "\"RollingUpdate\""},
    {"rollingUpdate",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ds_rolling_fields,
                                  .check = check_ds_rolling},
     0, NULL},
    {0}};
static const struct fatia_field ds_spec_fields[] = {
    {"selector", &fatia_s_label_selector, FATIA_F_REQUIRED, NULL},
    {"template", &fatia_s_pod_template_spec, FATIA_F_REQUIRED, NULL},
    {"updateStrategy", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ds_strategy_fields},
     0, "{}"},
    {"minReadySeconds", &fatia_s_int_nonneg, 0, NULL},
    {"revisionHistoryLimit", &fatia_s_int_nonneg, 0, "10"},
    {0}};
static const struct fatia_field ds_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ds_spec_fields,
                                  .check = check_workload_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};

/* NODE SELECTOR "gpu=true" of the template, "<none>" when empty (printDaemonSet) */
static json_t *print_node_selector(const json_t *ds, int64_t now)
{
    json_t *ns = fatia_json_path(ds, "spec.template.spec.nodeSelector"), *v;
    char buf[1024] = "";
    size_t n = 0;
    const char *key;

    (void)now;
    json_object_foreach(ns, key, v)
    {
        if (json_is_string(v) && n < sizeof(buf))
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s=%s", n ? "," : "", key,
                                  json_string_value(v));
    }
    return json_string(n ? buf : "<none>");
}

static const struct fatia_column ds_columns[] = {
    {"Desired", "integer", NULL, 0, "Nodes that should run a pod",
     fatia_print_st_desired_scheduled},
    {"Current", "integer", NULL, 0, "Nodes running a pod", fatia_print_st_current_scheduled},
    {"Ready", "integer", NULL, 0, "Nodes with a ready pod", fatia_print_st_number_ready},
    {"Up-to-date", "integer", NULL, 0, "Pods of the newest template",
     fatia_print_st_updated_scheduled},
    {"Available", "integer", NULL, 0, "Nodes with an available pod",
     fatia_print_st_number_available},
    {"Node Selector", "string", NULL, 0, "Node selector of the pods", print_node_selector},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Containers", "string", NULL, 1, "Container names", fatia_print_template_containers},
    {"Images", "string", NULL, 1, "Container images", fatia_print_template_images},
    {"Selector", "string", NULL, 1, "Label selector of the pods", fatia_print_selector},
    {NULL}};
const struct fatia_kind fatia_kind_daemonset = {
    .group = "apps",
    .version = "v1",
    .kind = "DaemonSet",
    .plural = "daemonsets",
    .singular = "daemonset",
    .short_names = (const char *const[]){"ds", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = ds_fields},
    .columns = ds_columns};

/* ---- batch/v1 CronJob ---- */

static void check_cronjob_spec(struct fatia_vctx *ctx, json_t *spec)
{
    const char *sched = fatia_json_str(spec, "schedule"), *tz = fatia_json_str(spec, "timeZone");
    struct fatia_cron c;
    char why[200];

    if (sched && fatia_cron_parse(sched, &c, why, sizeof(why)) < 0)
        fatia_verr_at(ctx, spec, "schedule", "invalid value \"%s\": %s", sched, why);
    if (tz && strcmp(tz, "UTC") && strcmp(tz, "Etc/UTC"))
        fatia_verr_at(ctx, spec, "timeZone",
                      "unsupported value \"%s\": fatia reads no time zone database; supported "
                      "values: \"UTC\", \"Etc/UTC\"",
                      tz);
}

static const char *const concurrency[] = {"Allow", "Forbid", "Replace", NULL};
static const struct fatia_field job_template_meta_fields[] = {
    {"name", &fatia_s_string, 0, NULL},
    {"labels", &fatia_s_label_map, 0, NULL},
    {"annotations", &fatia_s_annotation_map, 0, NULL},
    {"creationTimestamp", &fatia_s_time, 0, NULL},
    {0}};
static const struct fatia_field job_template_fields[] = {
    {"metadata", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = job_template_meta_fields},
     0, NULL},
    {"spec", &fatia_s_job_spec, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field cronjob_spec_fields[] = {
    {"schedule", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"timeZone", &fatia_s_string, 0, NULL},
    {"startingDeadlineSeconds", &fatia_s_int_nonneg, 0, NULL},
    {"concurrencyPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = concurrency}, 0,
     "\"Allow\""},
    {"suspend", &fatia_s_bool, 0, "false"},
    {"jobTemplate", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = job_template_fields},
     FATIA_F_REQUIRED, NULL},
    {"successfulJobsHistoryLimit", &fatia_s_int_nonneg, 0, "3"},
    {"failedJobsHistoryLimit", &fatia_s_int_nonneg, 0, "1"},
    {0}};
static const struct fatia_field cronjob_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cronjob_spec_fields,
                                  .check = check_cronjob_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column cronjob_columns[] = {
    {"Schedule", "string", ".spec.schedule", 0, "The cron schedule"},
    {"Timezone", "string", NULL, 0, "Time zone of the schedule", fatia_print_cronjob_timezone},
    {"Suspend", "boolean", ".spec.suspend", 0, "Whether new runs are suspended"},
    {"Active", "integer", NULL, 0, "Active jobs", fatia_print_cronjob_active},
    {"Last Schedule", "date", ".status.lastScheduleTime", 0, "When a job was last scheduled"},
    {NULL}};
const struct fatia_kind fatia_kind_cronjob = {
    .group = "batch",
    .version = "v1",
    .kind = "CronJob",
    .plural = "cronjobs",
    .singular = "cronjob",
    .short_names = (const char *const[]){"cj", NULL},
    .categories = (const char *const[]){"all", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cronjob_fields},
    .columns = cronjob_columns};
