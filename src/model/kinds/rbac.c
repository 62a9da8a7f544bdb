/*
 * model/kinds/rbac.c: rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and
 * ClusterRoleBinding (k8s.io/api/rbac/v1).
 *
 * Rules taken from upstream (pkg/apis/rbac/validation): a PolicyRule has verbs, and either
 * apiGroups + resources (resource rules) or nonResourceURLs (ClusterRole only), not both;
 * roleRef names apiGroup rbac.authorization.k8s.io (defaulted when absent, as upstream's
 * SetDefaults_RoleBinding does), kind Role or ClusterRole (a
 * ClusterRoleBinding only ClusterRole) and a name, and is immutable (checked by the write path:
 * not here); subjects are User, Group (apiGroup rbac.authorization.k8s.io) or ServiceAccount (a
 * namespace, given or the binding's own).
 *
 * The objects are stored and served; how fatiad evaluates them is in docs/apiserver.md.
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"

static const struct fatia_field rule_fields[] = {
    {"verbs",
     &(const struct fatia_schema){FATIA_T_ARRAY, .flags = FATIA_S_MIN, .min = 1,
                                  .items = &fatia_s_nonempty_string},
     FATIA_F_REQUIRED, NULL},
    {"apiGroups", &fatia_s_string_list, 0, NULL},
    {"resources", &fatia_s_string_list, 0, NULL},
    {"resourceNames", &fatia_s_string_list, 0, NULL},
    {"nonResourceURLs", &fatia_s_string_list, 0, NULL},
    {0}};

static void check_rule(struct fatia_vctx *ctx, json_t *r, bool namespaced)
{
    bool res = json_array_size(json_object_get(r, "resources")) > 0;
    bool urls = json_array_size(json_object_get(r, "nonResourceURLs")) > 0;

    if (urls && namespaced)
        fatia_verr_at(ctx, r, "nonResourceURLs",
                      "namespaced rules cannot apply to non-resource URLs");
    else if (urls && res)
        fatia_verr_at(ctx, r, "nonResourceURLs",
                      "rules cannot apply to both regular resources and non-resource URLs");
    else if (!urls && !res)
        fatia_verr_at(ctx, r, "resources",
                      "resource rules must supply at least one resource (or nonResourceURLs)");
    else if (res && !json_object_get(r, "apiGroups"))
        fatia_verr_at(ctx, r, "apiGroups",
                      "resource rules must supply at least one api group (\"\" is the core "
                      "group)");
}

static void check_role_rule(struct fatia_vctx *ctx, json_t *r)
{
    check_rule(ctx, r, true);
}

static void check_cluster_role_rule(struct fatia_vctx *ctx, json_t *r)
{
    check_rule(ctx, r, false);
}

static const struct fatia_field role_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"rules",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = rule_fields,
                                                              .check = check_role_rule}},
     0, NULL},
    {0}};
static const struct fatia_column created_at_columns[] = {
    {"Created At", "string", ".metadata.creationTimestamp", 0, "When the object was created"},
    {NULL}};
const struct fatia_kind fatia_kind_role = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "Role",
    .plural = "roles",
    .singular = "role",
    .namespaced = true,
    .name_rule = FATIA_NAME_PATH_SEGMENT,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = role_fields},
    .columns = created_at_columns};

static const struct fatia_field aggregation_fields[] = {
    {"clusterRoleSelectors",
     &(const struct fatia_schema){FATIA_T_ARRAY, .items = &fatia_s_label_selector}, 0, NULL},
    {0}};
static const struct fatia_field cluster_role_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"rules",
     &(const struct fatia_schema){
         FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = rule_fields,
                                                              .check = check_cluster_role_rule}},
     0, NULL},
    {"aggregationRule", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = aggregation_fields},
     0, NULL},
    {0}};
const struct fatia_kind fatia_kind_clusterrole = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "ClusterRole",
    .plural = "clusterroles",
    .singular = "clusterrole",
    .namespaced = false,
    .name_rule = FATIA_NAME_PATH_SEGMENT,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cluster_role_fields},
    .columns = created_at_columns};

/* ---- bindings ---- */

static const char *const subject_kinds[] = {"User", "Group", "ServiceAccount", NULL};
static const struct fatia_field subject_fields[] = {
    {"kind", &(const struct fatia_schema){FATIA_T_STRING, .enums = subject_kinds}, FATIA_F_REQUIRED,
     NULL},
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"apiGroup", &fatia_s_string, 0, NULL},
    {"namespace", &fatia_s_string, 0, NULL},
    {0}};

static void check_subject(struct fatia_vctx *ctx, json_t *s)
{
    const char *kind = fatia_json_str(s, "kind"), *group = fatia_json_str(s, "apiGroup");

    if (!kind)
        return;
    if (!strcmp(kind, "ServiceAccount")) {
        if (group && *group)
            fatia_verr_at(ctx, s, "apiGroup", "unsupported value \"%s\": supported values: \"\"",
                          group);
    } else if (!group || strcmp(group, "rbac.authorization.k8s.io")) {
        if (!group)
            json_object_set_new(s, "apiGroup", json_string("rbac.authorization.k8s.io"));
        else
            fatia_verr_at(ctx, s, "apiGroup",
                          "unsupported value \"%s\": supported values: "
                          "\"rbac.authorization.k8s.io\"",
                          group);
    }
}

static const struct fatia_schema subjects = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = subject_fields,
                                                         .check = check_subject}};
static const char *const role_kinds[] = {"Role", "ClusterRole", NULL};
static const char *const cluster_role_kinds[] = {"ClusterRole", NULL};
static const char *const rbac_group[] = {"rbac.authorization.k8s.io", NULL};
static const struct fatia_field role_ref_fields[] = {
    {"apiGroup", &(const struct fatia_schema){FATIA_T_STRING, .enums = rbac_group}, 0,
     "\"rbac.authorization.k8s.io\""},
    {"kind", &(const struct fatia_schema){FATIA_T_STRING, .enums = role_kinds}, FATIA_F_REQUIRED,
     NULL},
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field cluster_role_ref_fields[] = {
    {"apiGroup", &(const struct fatia_schema){FATIA_T_STRING, .enums = rbac_group}, 0,
     "\"rbac.authorization.k8s.io\""},
    {"kind", &(const struct fatia_schema){FATIA_T_STRING, .enums = cluster_role_kinds},
     FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field role_binding_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"subjects", &subjects, 0, NULL},
    {"roleRef", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = role_ref_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_field cluster_role_binding_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"subjects", &subjects, 0, NULL},
    {"roleRef", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cluster_role_ref_fields},
     FATIA_F_REQUIRED, NULL},
    {0}};
static const struct fatia_column binding_columns[] = {
    {"Role", "string", NULL, 0, "The bound role", fatia_print_binding_role},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"Users", "string", NULL, 1, "Users bound", fatia_print_binding_users},
    {"Groups", "string", NULL, 1, "Groups bound", fatia_print_binding_groups},
    {"ServiceAccounts", "string", NULL, 1, "Service accounts bound", fatia_print_binding_sas},
    {NULL}};
const struct fatia_kind fatia_kind_rolebinding = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "RoleBinding",
    .plural = "rolebindings",
    .singular = "rolebinding",
    .namespaced = true,
    .name_rule = FATIA_NAME_PATH_SEGMENT,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = role_binding_fields},
    .columns = binding_columns};
const struct fatia_kind fatia_kind_clusterrolebinding = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "ClusterRoleBinding",
    .plural = "clusterrolebindings",
    .singular = "clusterrolebinding",
    .namespaced = false,
    .name_rule = FATIA_NAME_PATH_SEGMENT,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = cluster_role_binding_fields},
    .columns = binding_columns};
